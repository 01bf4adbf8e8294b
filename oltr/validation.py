"""Checks shared by every layer: scalars, choices, run counts and batched orders.

Each raises ``ValueError`` or ``TypeError`` with a message that names the
argument and the value it got.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from oltr.errors import InputError, MemoryLimitError

__all__ = [
    "check_choice",
    "check_feature_columns",
    "check_memory",
    "check_n_runs",
    "check_orders",
    "check_orders_shape",
    "check_scalar",
    "finite_features",
    "non_finite_features",
    "not_a_file",
    "physical_memory",
    "require_features",
]


def check_orders_shape(orders: ArrayLike, n_items: int, n_lists: int = 1) -> NDArray[np.intp]:
    """Validate the shape and dtype of batched orders; return them as an intp array.

    Shape (B, m) for ``n_lists == 1``, (B, 2, m) for duels. Only shapes are
    checked here (O(1)); see :func:`check_orders` for the
    permutation check.
    """
    arr = np.asarray(orders)
    want = "(B, m)" if n_lists == 1 else "(B, 2, m)"
    ndim = 2 if n_lists == 1 else 3
    if arr.ndim != ndim or arr.shape[-1] != n_items or (n_lists == 2 and arr.shape[1] != 2):
        raise ValueError(f"orders must have shape {want} with m = {n_items}, got {arr.shape}")
    if arr.shape[0] < 1:
        raise ValueError("orders must hold at least one run (B >= 1)")
    if not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"orders must be an integer array of item indices, got dtype {arr.dtype}")
    return arr.astype(np.intp, copy=False)


def check_n_runs(n_runs: int) -> int:
    if isinstance(n_runs, bool) or not isinstance(n_runs, int | np.integer):
        raise TypeError(f"n_runs must be an int >= 1, got {type(n_runs).__name__}")
    if n_runs < 1:
        raise ValueError(f"n_runs must be >= 1, got {n_runs}")
    return int(n_runs)


def check_scalar(
    value: Any,
    name: str,
    *,
    low: float | None = None,
    high: float | None = None,
    include_low: bool = True,
    include_high: bool = True,
    integer: bool = False,
) -> Any:
    """Check that ``value`` is a finite number in range; return it unchanged.

    Raises TypeError for a non-number (or a non-integer when ``integer``) and
    ValueError for NaN/inf or a value out of range, naming ``name``.

    >>> check_scalar(0.5, "eta", low=0, include_low=False)
    0.5
    >>> check_scalar(0, "eta", low=0, include_low=False)
    Traceback (most recent call last):
    ...
    ValueError: eta must be > 0, got 0
    """
    kinds = (int, np.integer) if integer else (int, float, np.integer, np.floating)
    if isinstance(value, bool) or not isinstance(value, kinds):
        want = "an int" if integer else "a number"
        raise TypeError(f"{name} must be {want}, got {type(value).__name__} {value!r}")
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    if low is not None and (value < low if include_low else value <= low):
        raise ValueError(f"{name} must be {'>=' if include_low else '>'} {low}, got {value}")
    if high is not None and (value > high if include_high else value >= high):
        raise ValueError(f"{name} must be {'<=' if include_high else '<'} {high}, got {value}")
    return value


def check_choice(value: Any, name: str, choices: Iterable[Any]) -> Any:
    """Check that ``value`` is one of ``choices``; return it unchanged."""
    options = tuple(choices)
    if value not in options:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, options))}; got {value!r}")
    return value


def check_orders(
    orders: ArrayLike, n_items: int, n_runs: int | None = None, n_lists: int = 1
) -> NDArray[np.intp]:
    """Validate batched orders: shape, integer dtype, a permutation of ``0..m-1`` per row.

    Returns the orders as an intp array. Costs O(B m log m).

    >>> check_orders([[1, 0, 2]], 3)
    array([[1, 0, 2]])
    >>> check_orders([[1, 1, 2]], 3)
    Traceback (most recent call last):
    ...
    ValueError: orders must be permutations of 0..2 along the last axis; run 0 is [1, 1, 2]
    """
    arr = check_orders_shape(orders, n_items, n_lists)
    if n_runs is not None and arr.shape[0] != n_runs:
        raise ValueError(f"orders must have {n_runs} rows (one per run), got {arr.shape[0]}")
    bad = (np.sort(arr, axis=-1) != np.arange(n_items)).any(axis=-1)
    if bad.any():
        b = int(np.argwhere(bad)[0][0])
        raise ValueError(
            f"orders must be permutations of 0..{n_items - 1} along the last axis; "
            f"run {b} is {arr[b].tolist()}"
        )
    return arr


# ------------------------------------------------------------- a learner's features


def require_features(
    features: NDArray[Any] | None, owner: str, t: int, n_items: int | None = None
) -> NDArray[Any]:
    """``features`` of round ``t``: a real numpy array of shape (n_items, d).

    None raises the ValueError saying that ``owner`` ranks feature lists;
    anything else that is not a 2-D array of real numbers (booleans, integers
    or floats) with ``n_items`` rows (when given) raises an InputError naming
    the shape expected.
    """
    if features is None:
        raise ValueError(f"{owner} ranks feature lists: the context of round {t} has no features")
    if (
        not isinstance(features, np.ndarray)
        or features.ndim != 2
        or features.dtype.kind not in "biuf"
        or (n_items is not None and features.shape[0] != n_items)
    ):
        raise _misshapen_features(features, owner, t, n_items)
    return features


def _misshapen_features(features: Any, owner: str, t: int, n_items: int | None) -> InputError:
    rows = "n_items" if n_items is None else str(n_items)
    if not isinstance(features, np.ndarray):
        got = f"a {type(features).__name__}"
    elif features.ndim != 2 or features.dtype.kind in "biuf":
        got = f"shape {features.shape}"
    else:
        got = f"dtype {features.dtype}"
    return InputError(
        f"{owner}: the features of round {t} must be a numpy array of real numbers of shape "
        f"({rows}, n_features), one row per item; got {got}"
    )


def check_feature_columns(features: NDArray[Any], expected: int, t: int) -> None:
    """Refuse a round whose feature count differs from the first round's."""
    if features.shape[1] != expected:
        raise ValueError(
            f"features must have {expected} columns (as in the first round), "
            f"got {features.shape[1]} in round {t}"
        )


def non_finite_features(
    owner: str, t: int, features: NDArray[Any], row: int, col: int, note: str = ""
) -> InputError:
    """The InputError naming the first non-finite feature (document ``row``, feature ``col``)."""
    return InputError(
        f"{owner}: the features of round {t} are not finite (document {row}, feature {col} "
        f"is {features[row, col]}{note}); clean or drop them first"
    )


def finite_features(
    features: NDArray[Any] | None, owner: str, t: int, n_items: int | None = None
) -> NDArray[Any]:
    """``features`` of round ``t``, present, of shape (n_items, d) and finite (else the errors
    above)."""
    x = require_features(features, owner, t, n_items)
    if not np.isfinite(x).all():
        row, col = (int(v) for v in np.argwhere(~np.isfinite(x))[0])
        raise non_finite_features(owner, t, x, row, col)
    return x


def physical_memory() -> int | None:
    """Bytes of physical memory of this machine, or None where the system does not say."""
    try:
        pages, page_size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):  # not a POSIX system
        return None
    return pages * page_size if pages > 0 and page_size > 0 else None


def _size(n_bytes: int) -> str:
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20)):
        if n_bytes >= scale:
            return f"{n_bytes / scale:,.1f} {unit}"
    return f"{n_bytes:,} bytes"


def check_memory(n_bytes: int, what: str) -> None:
    """Refuse, before allocating it, ``what`` when its ``n_bytes`` exceed the machine's memory.

    ``what`` names the setting that asks and what it asks for; the message adds
    both sizes. No check where the system does not say how much memory it has.

    >>> check_memory(8 * 2**70, "n_items=2**70: an array")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    oltr.errors.MemoryLimitError: n_items=2**70: an array asks for 8,589,934,592.0 TiB, more ...
    """
    limit = physical_memory()
    if limit is not None and n_bytes > limit:
        raise MemoryLimitError(
            f"{what} asks for {_size(n_bytes)}, more than this machine's memory "
            f"({_size(limit)}); ask for less"
        )


def not_a_file(path: str | os.PathLike[str]) -> str | None:
    """Why ``path`` cannot be read as a file, or None for a regular file.

    Found with ``stat`` alone, so a FIFO is named without being opened (opening
    one would block until something writes to it).

    >>> not_a_file(".")
    'is a folder, not a file'
    """
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return "no such file"
    except PermissionError:
        return "cannot be reached (permission denied)"
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        return f"cannot be read ({getattr(exc, 'strerror', None) or exc})"
    if stat.S_ISDIR(mode):
        return "is a folder, not a file"
    if not stat.S_ISREG(mode):
        kind = (
            "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device"
        )
        return f"is not a regular file ({kind})"
    return None
