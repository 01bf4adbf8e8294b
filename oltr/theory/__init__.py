"""Partial monitoring for ranking: loss, feedback and signal matrices, observability."""
