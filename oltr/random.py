"""Explicit, reproducible randomness.

Every random choice in oltr comes from a :class:`numpy.random.Generator` that is
passed in or derived from a seed. Child streams are keyed by *stable* keys
(integers, or strings hashed with BLAKE2b — never Python's salted ``hash``), so a
run's stream depends only on its keys, not on how many other runs exist or the
order in which they were created (SPEC 7, ``SeedSequence.spawn_key``).
"""

from __future__ import annotations

import hashlib

import numpy as np

RNGLike = None | int | np.random.SeedSequence | np.random.BitGenerator | np.random.Generator

__all__ = ["RNGLike", "as_rng", "child_rng", "child_seed_sequence", "stable_key"]


def as_rng(rng: RNGLike) -> np.random.Generator:
    """Normalise ``rng`` to a Generator (``np.random.default_rng`` semantics).

    A Generator passed in is returned as is (shared, not copied), so the caller
    decides whether streams are shared.
    """
    return np.random.default_rng(rng)


def stable_key(key: int | str) -> int:
    """Map a key to a non-negative integer that is the same in every process."""
    if isinstance(key, bool):
        raise TypeError("a random-stream key must be an int or a str, got bool")
    if isinstance(key, int | np.integer):
        if key < 0:
            raise ValueError(f"a random-stream key must be >= 0, got {key}")
        return int(key)
    if isinstance(key, str):
        return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "little")
    raise TypeError(f"a random-stream key must be an int or a str, got {type(key).__name__}")


def child_seed_sequence(root: int, *keys: int | str) -> np.random.SeedSequence:
    """The SeedSequence of the stream named by ``keys`` under the root seed."""
    return np.random.SeedSequence(int(root), spawn_key=tuple(stable_key(k) for k in keys))


def child_rng(root: int, *keys: int | str) -> np.random.Generator:
    """A Generator for the stream named by ``keys`` under the root seed.

    >>> a = child_rng(7, "rtop1f", 3).random()
    >>> b = child_rng(7, "rtop1f", 3).random()
    >>> a == b
    True
    >>> a == child_rng(7, "rtop1f", 4).random()
    False
    """
    return np.random.default_rng(child_seed_sequence(root, *keys))
