"""Oblivious adversaries for fixed items: the C&T 2015 §10 simulation and file-backed sequences.

* ``ct15-sim-v1`` (:class:`CT15SimulationEnv`) — Chaudhuri & Tewari (2015 §10):
  "we initially fixed half of the objects to be relevant and other half
  irrelevant, as the true relevance vector. Then, binary valued relevance
  vectors for adversary were simulated by adding small Gaussian noise to the
  true relevance vector". The paper gives neither the noise level nor the
  threshold; we take a threshold ``θ = 0.5`` (midway between the two levels)
  and ``σ = 0.25`` (each grade flips with probability ``Φ(−0.5/0.25) = 2.28 %``,
  "mostly small variation among the relevance vectors"). Graded variants
  (``max_grade = n > 1``) give the relevant items true grades drawn uniformly
  from ``1..n`` and round the noisy grade: ``r_t(i) = clip(⌊v(i) + σ z + 1 − θ⌋, 0, n)``,
  which is the binary rule ``1(v(i) + σ z ≥ θ)`` for ``n = 1``.
* ``relevance-file-v1`` (:class:`RelevanceFileEnv`) — a user-supplied sequence
  of ``T`` relevance vectors of ``m`` items: a (T, m) table in CSV, NPY or
  Parquet, read on first use, with errors that name the file, the row and the
  problem.

Both are **oblivious**: the sequence is a function of the reset generator (or
of the file) alone and never of the learner's rankings, so the best fixed
ranking in hindsight exists and :meth:`comparator` computes it
(:func:`oltr.envs.base.hindsight_comparator`).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from oltr.envs.base import Environment, hindsight_comparator
from oltr.envs.fixed import BLOCK, FixedItemsEnv
from oltr.feedback import FeedbackModel
from oltr.metrics import resolve_measures
from oltr.registry import register_env
from oltr.types import Context, FloatArray
from oltr.validation import check_choice, check_scalar, not_a_file

__all__ = ["FILE_FORMATS", "FIXTURES", "CT15SimulationEnv", "RelevanceFileEnv", "read_relevance"]

#: Small relevance files shipped for the conformance suite and the examples.
FIXTURES = Path(__file__).with_name("fixtures")
#: Formats :func:`read_relevance` reads, by file suffix.
FILE_FORMATS = {".csv": "csv", ".npy": "npy", ".parquet": "parquet", ".pq": "parquet"}


@register_env("ct15-sim-v1")
class CT15SimulationEnv(FixedItemsEnv):
    """The simulation of Chaudhuri & Tewari (2015 §10): noisy copies of one true relevance vector.

    At reset a true vector ``v`` is fixed: ``round(relevant_fraction · m)``
    items, chosen uniformly at random (or given as ``true_relevance``), are
    relevant (grade 1, or uniform on ``1..max_grade``), the rest 0. Round ``t``
    shows ``r_t(i) = clip(⌊v(i) + σ z_t(i) + 1 − θ⌋, 0, max_grade)`` with i.i.d.
    standard normal ``z``: for binary grades ``r_t(i) = 1(v(i) + σ z_t(i) ≥ θ)``.
    Oblivious: the sequence depends on the reset generator only (drawn in
    blocks of 1024 rounds as the run advances; the first ``t`` rounds do not
    depend on the horizon), so a fixed environment seed gives ONE sequence for
    all learner runs, as in the paper's Fig. 1.

    Parameters
    ----------
    n_items
        Number of items ``m`` >= 2 (§10: 10).
    relevant_fraction
        Share of relevant items in ``v``, in (0, 1) (§10: one half).
    noise
        Noise standard deviation ``σ`` >= 0 (paper: "small"; default 0.25).
    threshold
        Threshold ``θ`` in (0, 1) (default 0.5, midway between 0 and 1).
    max_grade
        Largest grade ``n`` >= 1 (1: binary, as in §10).
    true_relevance
        Optional explicit ``v``: shape (m,), grades in ``0..max_grade``.
    feedback
        The feedback model.

    References
    ----------
    Chaudhuri & Tewari 2015, §10 (simulation), §2 (oblivious adversary).

    Examples
    --------
    >>> env = CT15SimulationEnv(n_items=4, true_relevance=[1, 0, 1, 0], noise=0.0)
    >>> env.reset(rng=0)
    >>> _ = env.observe(1)
    >>> env._ground_truth().tolist()
    [1, 0, 1, 0]
    """

    def __init__(
        self,
        *,
        n_items: int = 10,
        relevant_fraction: float = 0.5,
        noise: float = 0.25,
        threshold: float = 0.5,
        max_grade: int = 1,
        true_relevance: ArrayLike | None = None,
        feedback: FeedbackModel | None = None,
    ) -> None:
        check_scalar(n_items, "n_items", low=2, integer=True)
        check_scalar(
            relevant_fraction,
            "relevant_fraction",
            low=0,
            high=1,
            include_low=False,
            include_high=False,
        )
        check_scalar(noise, "noise", low=0)
        check_scalar(threshold, "threshold", low=0, high=1, include_low=False, include_high=False)
        check_scalar(max_grade, "max_grade", low=1, integer=True)
        super().__init__(n_items=n_items, feedback=feedback)
        if true_relevance is not None:
            v = np.asarray(true_relevance)
            if (
                v.shape != (n_items,)
                or not np.issubdtype(v.dtype, np.number)
                or v.dtype == np.bool_
            ):
                raise ValueError(
                    f"true_relevance must be a numeric array of shape ({n_items},), "
                    f"got shape {v.shape} dtype {v.dtype}"
                )
            bad = ~np.isin(v, np.arange(max_grade + 1))
            if bad.any():
                i = int(np.argmax(bad))
                raise ValueError(
                    f"true_relevance must hold integer grades 0..{max_grade}; item {i} is {v[i]}"
                )
        self.n_items = n_items
        self.relevant_fraction = relevant_fraction
        self.noise = noise
        self.threshold = threshold
        self.max_grade = max_grade
        self.true_relevance = true_relevance

    @classmethod
    def _test_params(cls) -> Iterator[dict[str, Any]]:
        yield {"n_items": 6}
        yield {"n_items": 5, "max_grade": 3, "noise": 0.5}
        yield {"n_items": 4, "true_relevance": [0, 1, 1, 0], "noise": 0.0}

    @property
    def true_relevance_(self) -> NDArray[np.int64]:
        """The true vector ``v`` drawn at reset (for analysis; never shown to learners)."""
        return self._v.copy()

    def _reset(self, rng: np.random.Generator) -> None:
        self._rng = rng
        self._blocks = []
        m, n = int(self._m), int(self.max_grade)
        if self.true_relevance is not None:
            self._v = np.asarray(self.true_relevance, dtype=np.int64).copy()
            return
        n_rel = min(m - 1, max(1, round(self.relevant_fraction * m)))
        v = np.zeros(m, dtype=np.int64)
        chosen = rng.choice(m, size=n_rel, replace=False)
        v[chosen] = 1 if n == 1 else rng.integers(1, n + 1, size=n_rel)
        self._v = v

    def _draw_block(self) -> NDArray[Any]:
        z = self._rng.standard_normal((BLOCK, self._m))
        noisy = self._v + float(self.noise) * z + (1.0 - float(self.threshold))
        return np.clip(np.floor(noisy), 0, int(self.max_grade)).astype(np.int64)


# ---------------------------------------------------------------------------
# file-backed sequences


def _fail(path: Path, where: str, problem: str) -> ValueError:
    return ValueError(f"{path}: {where}: {problem}")


def _check_table(path: Path, table: NDArray[Any], row_base: int, row_word: str) -> None:
    if table.ndim != 2 or table.shape[0] < 1 or table.shape[1] < 1:
        raise _fail(path, "shape", f"expected a (T, m) table with T, m >= 1, got {table.shape}")
    bad = ~np.isfinite(table) | (table < 0)
    if bad.any():
        t, i = (int(x) for x in np.argwhere(bad)[0])
        raise _fail(
            path,
            f"{row_word} {t + row_base}, column {i + 1}",
            f"relevance must be a finite grade >= 0, got {table[t, i]}",
        )


def _read_csv(path: Path) -> FloatArray:
    rows: list[list[float]] = []
    width: int | None = None
    with path.open(newline="", encoding="utf-8") as fh:
        for lineno, row in enumerate(csv.reader(fh), start=1):
            cells = [c.strip() for c in row]
            if not cells or all(c == "" for c in cells):
                continue
            try:
                values = [float(c) for c in cells]
            except ValueError:
                if not rows and width is None:  # a header line
                    width = len(cells)
                    continue
                bad = next(c for c in cells if not _is_number(c))
                raise _fail(path, f"line {lineno}", f"not a number: {bad!r}") from None
            if width is None:
                width = len(values)
            if len(values) != width:
                raise _fail(
                    path,
                    f"line {lineno}",
                    f"expected {width} values (one per item), got {len(values)}",
                )
            for j, x in enumerate(values):
                if not math.isfinite(x) or x < 0:
                    raise _fail(
                        path,
                        f"line {lineno}, column {j + 1}",
                        f"relevance must be a finite grade >= 0, got {cells[j]!r}",
                    )
            rows.append(values)
    if not rows:
        raise _fail(path, "contents", "no data rows (expected one relevance vector per line)")
    return np.asarray(rows, dtype=np.float64)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _read_npy(path: Path) -> FloatArray:
    try:
        arr = np.load(path, allow_pickle=False)
    except (ValueError, OSError) as exc:
        raise _fail(path, "contents", f"not a readable .npy array ({exc})") from None
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.number):
        raise _fail(path, "dtype", f"expected a numeric array, got {arr.dtype}")
    table: FloatArray = arr.astype(np.float64)
    _check_table(path, table, 0, "row")
    return table


def _read_parquet(path: Path) -> FloatArray:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        tab = pq.read_table(path)
    except (pa.ArrowException, OSError) as exc:
        raise _fail(path, "contents", f"not a readable Parquet file ({exc})") from None
    cols = []
    for name, col in zip(tab.column_names, tab.columns, strict=True):
        if not (pa.types.is_integer(col.type) or pa.types.is_floating(col.type)):
            raise _fail(path, f"column {name!r}", f"expected numbers, got type {col.type}")
        if col.null_count:
            nulls = np.flatnonzero(col.is_null().to_numpy(zero_copy_only=False))
            raise _fail(path, f"row {int(nulls[0])}, column {name!r}", "missing value (null)")
        cols.append(col.to_numpy().astype(np.float64))
    if not cols:
        raise _fail(path, "shape", "no columns (expected one column per item)")
    table = np.stack(cols, axis=1)
    _check_table(path, table, 0, "row")
    return table


def read_relevance(path: str | Path, *, file_format: str | None = None) -> FloatArray:
    """Read a (T, m) relevance sequence: one round per row, one item per column.

    Parameters
    ----------
    path
        A ``.csv`` (comma-separated numbers; one optional header line), ``.npy``
        (a 2-D numeric array) or ``.parquet`` file (one numeric column per item).
    file_format
        ``"csv"``, ``"npy"`` or ``"parquet"``; None infers it from the suffix.

    Returns
    -------
    Float array of shape (T, m) with finite grades >= 0.

    Raises
    ------
    ValueError
        Naming the file, the line (CSV, 1-based) or row (NPY/Parquet, 0-based)
        and the problem: ragged rows, non-numbers, NaN, negative grades, nulls.
    """
    p = Path(path)
    fmt = file_format or FILE_FORMATS.get(p.suffix.lower())
    if fmt is None:
        raise ValueError(
            f"{p}: cannot tell the format from the suffix {p.suffix!r}; use one of "
            f"{', '.join(FILE_FORMATS)} or pass file_format"
        )
    check_choice(fmt, "file_format", ("csv", "npy", "parquet"))
    why = not_a_file(p)
    if why is not None:  # a folder or a FIFO is named as such, never opened
        raise ValueError(f"{p}: {why}")
    return {"csv": _read_csv, "npy": _read_npy, "parquet": _read_parquet}[fmt](p)


@register_env("relevance-file-v1")
class RelevanceFileEnv(Environment):
    """A user-supplied relevance sequence for a fixed item set, read from CSV, NPY or Parquet.

    Row ``t`` of the file is ``r_t`` (grades >= 0 of the ``m`` items); a run can
    last at most T rounds. The file is read (and checked) on first use, not at
    construction, so configs validate cheaply. Oblivious; exact comparator.

    Parameters
    ----------
    path
        The file (see :func:`read_relevance`).
    file_format
        ``"csv"``, ``"npy"``, ``"parquet"`` or None (from the suffix).
    feedback
        The feedback model.

    References
    ----------
    Chaudhuri & Tewari 2015 §2 (an oblivious adversary's sequence ``r_1, …, r_T``).

    Examples
    --------
    >>> env = RelevanceFileEnv(path=str(FIXTURES / "relevance.csv"))
    >>> env.horizon_limit
    40
    """

    context_kind: ClassVar[str] = "items"

    def __init__(
        self, *, path: str, file_format: str | None = None, feedback: FeedbackModel | None = None
    ) -> None:
        super().__init__(feedback=feedback)
        if not isinstance(path, str | Path) or not str(path):
            raise TypeError(f"path must be a file path (str), got {path!r}")
        if file_format is not None:
            check_choice(file_format, "file_format", ("csv", "npy", "parquet"))
        elif Path(path).suffix.lower() not in FILE_FORMATS:
            raise ValueError(
                f"path {path!r}: cannot tell the format from the suffix; use one of "
                f"{', '.join(FILE_FORMATS)} or pass file_format"
            )
        self.path = path
        self.file_format = file_format
        self._table: FloatArray | None = None

    @classmethod
    def _test_params(cls) -> Iterator[dict[str, Any]]:
        # Two small files shipped with the package (40 rounds x 5 items, grades 0-2).
        yield {"path": str(FIXTURES / "relevance.csv")}
        yield {"path": str(FIXTURES / "relevance.npy")}

    def _load(self) -> FloatArray:
        if self._table is None:
            self._table = read_relevance(self.path, file_format=self.file_format)
            self._table.flags.writeable = False
        return self._table

    def __getstate__(self) -> dict[str, Any]:
        return dict(self.__dict__)

    @property
    def horizon_limit(self) -> int | None:
        """T, the number of rows in the file."""
        return int(self._load().shape[0])

    def _reset(self, rng: np.random.Generator) -> None:
        self._load()

    def _next(self, t: int) -> tuple[Context, NDArray[Any]]:
        table = self._load()
        if t > table.shape[0]:
            raise ValueError(f"{self.path} holds {table.shape[0]} rounds; round {t} was requested")
        return Context(t=t, n_items=table.shape[1]), np.array(table[t - 1])

    def comparator(
        self, measures: Mapping[str, Any] | Sequence[str], checkpoints: Sequence[int]
    ) -> dict[str, FloatArray | None]:
        """Best fixed order in hindsight over rounds 1..t (see :class:`FixedItemsEnv`)."""
        cp = list(checkpoints)
        if not cp:
            raise ValueError("checkpoints must not be empty")
        if cp[-1] > self.t:
            raise ValueError(f"checkpoint {cp[-1]} lies beyond the last observed round {self.t}")
        history = self._load()[: int(cp[-1])]
        return {
            name: hindsight_comparator(history, measure, cp)
            for name, measure in resolve_measures(measures).items()
        }
