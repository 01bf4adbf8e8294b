"""Environments: data streams, adversaries, click models and comparison oracles."""
