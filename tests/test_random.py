"""Stable, keyed random streams."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from oltr.random import as_rng, child_rng, stable_key
from oltr.types import RunGenerators


def test_same_keys_same_stream_different_keys_different_stream():
    a = child_rng(11, "learner", 0).integers(0, 2**62, size=8)
    b = child_rng(11, "learner", 0).integers(0, 2**62, size=8)
    c = child_rng(11, "learner", 1).integers(0, 2**62, size=8)
    d = child_rng(12, "learner", 0).integers(0, 2**62, size=8)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    assert not np.array_equal(a, d)


def test_string_keys_are_stable_across_processes():
    # Python's hash() of a str is salted per process; our key must not be.
    code = "from oltr.random import stable_key; print(stable_key('rtop1f'))"
    out = {
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout.strip()
        for _ in range(2)
    }
    assert out == {str(stable_key("rtop1f"))}


@pytest.mark.parametrize("bad", [-1, 1.5, True, None])
def test_bad_keys_are_rejected(bad):
    with pytest.raises((TypeError, ValueError)):
        stable_key(bad)


def test_as_rng_passes_generators_through():
    g = np.random.default_rng(0)
    assert as_rng(g) is g


@pytest.mark.parametrize("n_runs", [1, 3])
@pytest.mark.parametrize("shape", [(), 4, (2, 5), (np.int64(3),)])
def test_stacked_uniforms_are_each_runs_own_draws(n_runs: int, shape: object) -> None:
    # Row b of rngs.random(shape) is what run b's generator alone draws for shape, and
    # leaves that generator where the single draw leaves it (the next draws agree too).
    rngs, twins = RunGenerators.from_rng(7, n_runs), RunGenerators.from_rng(7, n_runs)
    for _ in range(2):
        stacked = rngs.random(shape)  # type: ignore[arg-type]
        alone = np.stack([g.random(shape) for g in twins])  # type: ignore[call-overload]
        assert stacked.shape == alone.shape and np.array_equal(stacked, alone)
