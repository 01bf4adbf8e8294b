"""Noisy QuickSort for many rows in one compiled call, each row drawing from its generator.

:func:`noisy_quicksort_runs` sorts row ``b`` of ``w`` exactly as
``noisy_quicksort(w[b], rngs[b])`` does — the same draws from the same
generator, the same order — but in one compiled call for all rows. A compiled
function that takes a :class:`numpy.random.Generator` unboxes it on every call
(about 5 µs, more than sorting ten items), so calling
:func:`~oltr.permutations.sorts.noisy_quicksort` once per run costs B such
unboxings per round. Here every bit generator is reached through the C
interface numpy publishes for it (``bit_generator.ctypes``: its state pointer
and its ``next_uint32`` and ``next_double`` functions, the very functions
numba's own Generator support calls), collected once per set of generators.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any

import numpy as np
from llvmlite import ir  # type: ignore[import-untyped]
from numba import types
from numba.extending import intrinsic
from numpy.typing import NDArray

from oltr.kernels import njit
from oltr.types import RunGenerators

__all__ = ["noisy_quicksort_runs", "permutation_rows"]

#: Sets of generators whose C interfaces are remembered (the sets are kept alive with them,
#: so a remembered state pointer always belongs to a live bit generator).
_MAX_REMEMBERED = 64
_remembered: dict[int, tuple[RunGenerators, NDArray[np.uintp]]] = {}
_lock = threading.Lock()


def _interface(rng: np.random.Generator) -> NDArray[np.uintp]:
    """Addresses of ``rng``'s ``next_uint32``, ``next_double`` and state, shape (3,)."""
    c = rng.bit_generator.ctypes
    return np.array(
        [
            ctypes.cast(c.next_uint32, ctypes.c_void_p).value or 0,
            ctypes.cast(c.next_double, ctypes.c_void_p).value or 0,
            c.state_address,
        ],
        dtype=np.uintp,
    )


def _interfaces(rngs: RunGenerators) -> NDArray[np.uintp]:
    """Per run: addresses of ``next_uint32``, ``next_double`` and the state, shape (B, 3)."""
    key = id(rngs)
    hit = _remembered.get(key)
    if hit is not None and hit[0] is rngs:
        return hit[1]
    table = np.stack([_interface(g) for g in rngs]) if len(rngs) else np.empty((0, 3), np.uintp)
    with _lock:
        if len(_remembered) >= _MAX_REMEMBERED:
            _remembered.clear()
        _remembered[key] = (rngs, table)
    return table


def _uint32_call(typingctx: Any, fn: Any, state: Any) -> Any:  # pragma: no cover
    """``fn(state)`` for the C function ``uint32_t fn(void *)`` at address ``fn``."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        fnty = ir.FunctionType(ir.IntType(32), [ir.IntType(8).as_pointer()])
        f = builder.inttoptr(args[0], fnty.as_pointer())
        return builder.call(f, [builder.inttoptr(args[1], ir.IntType(8).as_pointer())])

    return types.uint32(types.uintp, types.uintp), codegen


def _double_call(typingctx: Any, fn: Any, state: Any) -> Any:  # pragma: no cover
    """``fn(state)`` for the C function ``double fn(void *)`` at address ``fn``."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        fnty = ir.FunctionType(ir.DoubleType(), [ir.IntType(8).as_pointer()])
        f = builder.inttoptr(args[0], fnty.as_pointer())
        return builder.call(f, [builder.inttoptr(args[1], ir.IntType(8).as_pointer())])

    return types.double(types.uintp, types.uintp), codegen


# Typed as Any: mypy sees the typing functions' signatures, not the compiled calls.
_next_uint32: Any = intrinsic(_uint32_call)
_next_double: Any = intrinsic(_double_call)


@njit
def _bounded(fn: np.uintp, state: np.uintp, rng: np.uint32) -> np.uint64:  # pragma: no cover
    """An integer uniform on ``0..rng`` (``rng < 2^32 − 1``), as ``Generator.integers`` draws it.

    Lemire's rejection on 32-bit draws, step for step numba's
    ``buffered_bounded_lemire_uint32`` (and numpy's), so it consumes the same
    numbers and returns the same value.
    """
    rng_excl = np.uint64(rng) + np.uint64(1)
    m = np.uint64(_next_uint32(fn, state)) * rng_excl
    leftover = m & np.uint64(0xFFFFFFFF)
    if leftover < rng_excl:
        threshold = (np.uint64(0xFFFFFFFF) - np.uint64(rng)) % rng_excl
        while leftover < threshold:
            m = np.uint64(_next_uint32(fn, state)) * rng_excl
            leftover = m & np.uint64(0xFFFFFFFF)
    return m >> np.uint64(32)


@njit
def _quicksort_runs(
    w: NDArray[np.float64], table: NDArray[np.uintp], out: NDArray[np.intp]
) -> None:  # pragma: no cover
    """Algorithm 2 on row ``b`` of ``w`` with run ``b``'s bit generator, into ``out``.

    The loop of :func:`oltr.permutations.sorts.noisy_quicksort` line for line,
    with ``rng.integers(0, n)`` and ``rng.random()`` replaced by the same draws
    made through the bit generator's C functions.
    """
    n_rows, m = w.shape
    right = np.empty(m, dtype=np.intp)
    stack_lo = np.empty(m // 2 + 1, dtype=np.intp)
    stack_hi = np.empty(m // 2 + 1, dtype=np.intp)
    for r in range(n_rows):
        next_u32, next_dbl, state = table[r, 0], table[r, 1], table[r, 2]
        order = out[r]
        for i in range(m):
            order[i] = i
        top = 0
        if m >= 2:
            stack_lo[0], stack_hi[0], top = 0, m, 1
        while top > 0:
            top -= 1
            lo, hi = stack_lo[top], stack_hi[top]
            span = hi - lo - 1  # integers(0, hi - lo) draws on 0..span; span 0 draws nothing
            k = lo
            if span > 0:
                k = lo + np.intp(_bounded(next_u32, state, np.uint32(span)))
            pivot = order[k]
            n_left = 0
            n_right = 0
            for i in range(lo, hi):
                if i == k:
                    continue
                v = order[i]
                if _next_double(next_dbl, state) < 1.0 / (1.0 + np.exp(w[r, pivot] - w[r, v])):
                    order[lo + n_left] = v
                    n_left += 1
                else:
                    right[n_right] = v
                    n_right += 1
            mid = lo + n_left
            order[mid] = pivot
            order[mid + 1 : hi] = right[:n_right]
            if n_right >= 2:
                stack_lo[top], stack_hi[top], top = mid + 1, hi, top + 1
            if n_left >= 2:
                stack_lo[top], stack_hi[top], top = lo, mid, top + 1


def noisy_quicksort_one_rng(w: NDArray[np.float64], rng: np.random.Generator) -> NDArray[np.intp]:
    """Algorithm 2 on each row of the 2-D finite ``w``, the rows drawing in turn from ``rng``.

    The compiled loop behind :func:`oltr.permutations.sorts.noisy_quicksort`:
    every row reaches the same bit generator, so row r + 1 continues its stream
    where row r stopped.
    """
    out = np.empty(w.shape, dtype=np.intp)
    table = np.tile(_interface(rng), (w.shape[0], 1))
    _quicksort_runs(w, table, out)
    return out


def noisy_quicksort_runs(w: NDArray[np.float64], rngs: RunGenerators) -> NDArray[np.intp]:
    """Ailon's noisy QuickSort of every row of ``w`` (B, n), row ``b`` drawing from ``rngs[b]``.

    The same orders, and the same generator states afterwards, as
    ``np.stack([noisy_quicksort(w[b], rngs[b]) for b in range(B)])``, in one
    compiled call. ``w`` must be finite (the caller's trusted weights; the
    public :func:`~oltr.permutations.sorts.noisy_quicksort` validates).

    >>> from oltr.permutations import noisy_quicksort
    >>> w = np.array([[0.0, 100.0, 50.0], [1.0, 0.0, 2.0]])
    >>> fast = noisy_quicksort_runs(w, RunGenerators.from_rng(1, 2))
    >>> slow = [noisy_quicksort(w[b], g) for b, g in enumerate(RunGenerators.from_rng(1, 2))]
    >>> bool((fast == np.stack(slow)).all())
    True
    """
    rows = np.ascontiguousarray(w, dtype=np.float64)
    if rows.ndim != 2 or rows.shape[0] != len(rngs):
        raise ValueError(f"w must have shape (B, n) with B = {len(rngs)}, got {rows.shape}")
    out = np.empty(rows.shape, dtype=np.intp)
    _quicksort_runs(rows, _interfaces(rngs), out)
    return out


@njit
def _interval(fn: np.uintp, state: np.uintp, top: np.uint32) -> np.uint32:  # pragma: no cover
    """An integer uniform on ``0..top`` (``top < 2^32``), as numpy's ``random_interval``.

    The smallest all-ones mask covering ``top``, and 32-bit draws masked by it
    until one is at most ``top`` (the draws ``Generator.shuffle`` makes).
    """
    if top == 0:
        return np.uint32(0)
    mask = top
    mask |= mask >> np.uint32(1)
    mask |= mask >> np.uint32(2)
    mask |= mask >> np.uint32(4)
    mask |= mask >> np.uint32(8)
    mask |= mask >> np.uint32(16)
    value = _next_uint32(fn, state) & mask
    while value > top:
        value = _next_uint32(fn, state) & mask
    return np.uint32(value)


@njit
def _shuffled_rows(
    table: NDArray[np.uintp], rows: NDArray[np.intp], out: NDArray[np.intp]
) -> None:  # pragma: no cover
    """``out[b] = rngs[b].permutation(n)`` for every ``b`` in ``rows``: numpy's Fisher–Yates.

    ``Generator.permutation(n)`` shuffles ``arange(n)`` from the back, swapping
    position i with one drawn uniformly on 0..i by numpy's ``random_interval``
    (masked rejection on 32-bit draws): the same draws, in the same order, here.
    """
    n = out.shape[1]
    for r in range(rows.shape[0]):
        b = rows[r]
        next_u32, state = table[b, 0], table[b, 2]
        order = out[b]
        for i in range(n):
            order[i] = i
        for i in range(n - 1, 0, -1):
            j = np.intp(_interval(next_u32, state, np.uint32(i)))
            order[i], order[j] = order[j], order[i]


def permutation_rows(rngs: RunGenerators, rows: NDArray[np.intp], out: NDArray[np.intp]) -> None:
    """``out[b] = rngs[b].permutation(n)`` for each run ``b`` in ``rows``, in one compiled call.

    The same orders, and the same generator states afterwards, as the loop over
    ``rows`` (``n = out.shape[1]``; rows not listed are left as they are).

    Examples
    --------
    >>> gens = RunGenerators.from_rng(3, 4)
    >>> out = np.zeros((4, 6), dtype=np.intp)
    >>> permutation_rows(gens, np.array([1, 3]), out)
    >>> again = RunGenerators.from_rng(3, 4)
    >>> [bool((out[b] == again[b].permutation(6)).all()) for b in (1, 3)]
    [True, True]
    """
    if out.shape[1] >= 2**32:
        raise ValueError(f"permutations of at most 2**32 - 1 items, got {out.shape[1]}")
    _shuffled_rows(_interfaces(rngs), np.ascontiguousarray(rows, dtype=np.intp), out)
