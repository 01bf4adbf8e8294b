"""Experiment engine: configs, the runner, sweeps, storage and reports."""
