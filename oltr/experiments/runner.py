"""Run one learner setting on one environment for a batch of repetitions.

:func:`run_set` is the online protocol as code, with a leading run axis ``B``
(the repetitions of one run set)::

    for t in 1..T:
        context = env.observe(t)                         # same for all B runs
        orders  = learner.rank(context)                  # (B, m); (B, 2, m) for duels
        fb      = env.feedback(orders, feedback_rngs)    # what the model reveals
        values  = env.evaluate(orders, measures)         # full information, for the trace
        learner.update(context, orders, fb.restrict(learner.requires))

The learner is built from names only and never receives the environment, so
the relevance it does not see is out of its reach; it receives the feedback
object cut down to exactly what it declared (``learner.requires``). Every round
is evaluated (cumulative values need every round), but only checkpoints are
recorded, into preallocated arrays: the loop holds no pandas.

Randomness (common random numbers, STYLE §5.5): the environment's stream is
``child_rng(seed, "env", env)``, shared by all repetitions and learners; run
``rep`` draws its learner noise from ``child_rng(seed, "learner", learner, rep)``
and its feedback noise from ``child_rng(seed, "feedback", rep)``. A repetition's
trace therefore does not depend on which repetitions share its batch: a batch
``(0, …, 9)`` and ten batches ``(r,)`` give identical rankings, and identical
traces bit for bit as long as the learner and the measures compute each run's
row independently of the others (every component in this package does; sums
run over items or rounds, never across runs). The runner itself accumulates
each run's values separately, in round order.

Held-out evaluation (``spec.heldout``): besides the quality of the lists
*shown*, online learning-to-rank papers report the quality of the *current*
ranker on test queries it never sees (Chaudhuri & Tewari 2016 §6; Yue &
Joachims 2009 §5.2, Table 3). The runner loads the test file once, before
round 1, and at every checkpoint scores the learner's read-only weights
``learner.weights_`` (B, d) on it with :class:`oltr.experiments.heldout.HeldoutSet`,
recording column ``heldout:ndcg@k``. The learner never receives the test data
(it gets nothing new at all: the runner reads its weights), and the evaluation
draws no random numbers, so the rest of the trace is the same with or without
it. Learners without weights (e.g. ``random``) get NaN.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from oltr.build import check_compatible, make_env, make_feedback, make_learner
from oltr.data.letor import load_letor
from oltr.experiments.heldout import HeldoutSet
from oltr.learners.base import FeatureScorer
from oltr.metrics import resolve_measures
from oltr.random import child_rng
from oltr.types import RunGenerators
from oltr.validation import check_orders, check_scalar

__all__ = [
    "HELDOUT_DEFAULTS",
    "RunSetSpec",
    "check_heldout",
    "heldout_column",
    "run_set",
    "trace_columns",
]

#: Keys of a held-out table and their defaults: the keyword arguments of
#: :func:`oltr.data.letor.load_letor` (``path`` is required), the NDCG cutoff
#: ``k`` and the value ``no_relevant`` of a query without a relevant document.
HELDOUT_DEFAULTS: dict[str, Any] = {
    "path": None,
    "group_file": None,
    "n_features": None,
    "normalize": False,
    "drop_no_relevant": False,
    "k": 10,
    "no_relevant": 1.0,
}


def _int(value: Any, name: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    if value < low:
        raise ValueError(f"{name} must be >= {low}, got {value}")
    return int(value)


def check_heldout(heldout: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Validate a held-out table; return it with every default filled in (None stays None).

    Filling the defaults makes equal settings equal specs (and equal run-set
    ids), however they were written. Files are not opened here.

    >>> check_heldout({"path": "test.txt", "k": 5})["no_relevant"]
    1.0
    >>> check_heldout({"path": "test.txt", "K": 5})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: heldout: unknown key 'K'; valid: path, group_file, n_features, ...
    """
    if heldout is None:
        return None
    if not isinstance(heldout, Mapping):
        raise TypeError(f"heldout must be a dict or None, got {type(heldout).__name__}")
    unknown = [key for key in heldout if key not in HELDOUT_DEFAULTS]
    if unknown:
        raise ValueError(
            f"heldout: unknown key {unknown[0]!r}; valid: {', '.join(HELDOUT_DEFAULTS)}"
        )
    out = {**HELDOUT_DEFAULTS, **heldout}
    for key in ("path", "group_file"):
        value = out[key]
        if (value is not None or key == "path") and (not isinstance(value, str) or not value):
            raise TypeError(f"heldout.{key} must be a file path (a non-empty str), got {value!r}")
    for key in ("normalize", "drop_no_relevant"):
        if not isinstance(out[key], bool):
            raise TypeError(f"heldout.{key} must be a bool, got {out[key]!r}")
    if out["n_features"] is not None:
        out["n_features"] = int(
            check_scalar(out["n_features"], "heldout.n_features", low=1, integer=True)
        )
    out["k"] = int(check_scalar(out["k"], "heldout.k", low=1, integer=True))
    out["no_relevant"] = float(check_scalar(out["no_relevant"], "heldout.no_relevant"))
    return out


def heldout_column(k: int) -> str:
    """Name of the held-out trace column: ``heldout:ndcg@k``.

    >>> heldout_column(10)
    'heldout:ndcg@10'
    """
    return f"heldout:ndcg@{k}"


@dataclass(frozen=True)
class RunSetSpec:
    """One learner setting × one environment × a batch of repetitions.

    Parameters
    ----------
    env, env_params
        Registry name of the environment and its parameters.
    feedback, feedback_params
        Registry name of the feedback model and its parameters.
    learner, learner_params
        Registry name of the learner and ONE parameter setting.
    reps
        Repetition (seed) indices run together as a batch; distinct, >= 0.
    seed
        Root seed of the experiment, >= 0.
    horizon
        Number of rounds T >= 1.
    measures
        Measure strings, e.g. ``("ndcg@10", "sumloss")``.
    checkpoints
        Rounds to record (1-based, strictly increasing, last = horizon).
    heldout
        Optional held-out evaluation (:data:`HELDOUT_DEFAULTS`): a test file
        ``path`` read with :func:`oltr.data.letor.load_letor` (``group_file``,
        ``n_features``, ``normalize``, ``drop_no_relevant`` as there), the cutoff
        ``k`` (default 10) and ``no_relevant`` (default 1.0). Stored with every
        default filled in. None (the default): no held-out column.
    """

    env: str
    env_params: dict[str, Any]
    feedback: str
    feedback_params: dict[str, Any]
    learner: str
    learner_params: dict[str, Any]
    reps: tuple[int, ...]
    seed: int
    horizon: int
    measures: tuple[str, ...]
    checkpoints: tuple[int, ...]
    heldout: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        for name in ("env", "feedback", "learner"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                raise TypeError(f"{name} must be a registry name (a non-empty str), got {value!r}")
        for name in ("env_params", "feedback_params", "learner_params"):
            if not isinstance(getattr(self, name), Mapping):
                raise TypeError(f"{name} must be a dict, got {type(getattr(self, name)).__name__}")
        reps = tuple(_int(r, "reps[]", 0) for r in self.reps)
        if not reps or len(set(reps)) != len(reps):
            raise ValueError(f"reps must be non-empty and distinct, got {reps}")
        _int(self.seed, "seed", 0)
        horizon = _int(self.horizon, "horizon", 1)
        if isinstance(self.measures, str) or not self.measures:
            raise ValueError(
                f"measures must be a non-empty sequence of strings, got {self.measures!r}"
            )
        measures = tuple(self.measures)
        if len(set(measures)) != len(measures):
            raise ValueError(f"measures must be distinct, got {measures}")
        cps = tuple(_int(c, "checkpoints[]", 1) for c in self.checkpoints)
        if not cps or any(b <= a for a, b in zip(cps, cps[1:], strict=False)) or cps[-1] != horizon:
            raise ValueError(
                "checkpoints must increase strictly and end at the horizon "
                f"{horizon}, got {cps[:4]}{'...' if len(cps) > 4 else ''}"
            )
        object.__setattr__(self, "reps", reps)
        object.__setattr__(self, "measures", measures)
        object.__setattr__(self, "checkpoints", cps)
        object.__setattr__(self, "heldout", check_heldout(self.heldout))


def trace_columns(
    measures: tuple[str, ...] | list[str], *, heldout_k: int | None = None
) -> list[str]:
    """The columns of a trace: ``rep``, ``t``, then per measure M: M, M:cum, M:avg, M:regret.

    With ``heldout_k``, a last column :func:`heldout_column` ``(heldout_k)``.
    """
    cols = ["rep", "t"]
    for m in measures:
        cols += [m, f"{m}:cum", f"{m}:avg", f"{m}:regret"]
    if heldout_k is not None:
        cols.append(heldout_column(heldout_k))
    return cols


def _load_heldout(spec: RunSetSpec, env: Any) -> HeldoutSet | None:
    """The held-out evaluator of ``spec`` (None without one); checked against the stream."""
    if spec.heldout is None:
        return None
    if env.context_kind != "features":
        raise ValueError(
            f"heldout: evaluating weights needs feature lists, but environment "
            f"{spec.env!r} produces {env.context_kind!r} contexts"
        )
    opts = spec.heldout
    path = opts["path"]
    for key in ("path", "group_file"):
        if opts[key] is not None and not Path(opts[key]).is_file():
            raise ValueError(f"heldout.{key}: no such file: {opts[key]}")
    dataset = load_letor(
        path,
        group_file=opts["group_file"],
        n_features=opts["n_features"],
        normalize=opts["normalize"],
        drop_no_relevant=opts["drop_no_relevant"],
    )
    evaluator = HeldoutSet(dataset, k=opts["k"], no_relevant=opts["no_relevant"])
    # A stream that exposes its data set is checked now; any other at its first context.
    data = getattr(env, "data", None)
    if callable(data):
        _check_heldout_width(evaluator, int(data().n_features), path)
    return evaluator


def _check_heldout_width(evaluator: HeldoutSet, n_features: int, path: str) -> None:
    d = evaluator.dataset.n_features
    if d != n_features:
        raise ValueError(
            f"heldout.path: the held-out data {path} has {d} features but the "
            f"stream has {n_features}; they must match (a file that leaves out "
            f"trailing features can be widened with heldout.n_features)"
        )


def _heldout_weights(learner: Any, n_runs: int) -> Any:
    """The weights the learner reports (its averaged iterate, if it keeps one), one row per run."""
    weights = getattr(learner, "reported_weights_", None)
    weights = learner.weights_ if weights is None else weights
    if weights.shape[0] != n_runs:
        raise ValueError(
            f"{type(learner).__name__}.weights_ has {weights.shape[0]} rows, "
            f"expected one per run ({n_runs})"
        )
    return weights


def run_set(
    spec: RunSetSpec, *, progress: Callable[[int], Any] | None = None, validate: bool = True
) -> pd.DataFrame:
    """Run ``spec`` and return its trace: one row per checkpoint per repetition.

    Parameters
    ----------
    spec
        What to run.
    progress
        Called now and then with the number of rounds done since its last call
        (they add up to the horizon).
    validate
        Check every round that the learner's orders are permutations of the
        list (O(B m log m) per round). Components are always checked before
        the first round.

    Returns
    -------
    DataFrame with columns :func:`trace_columns` — ``rep``, ``t`` (1-based), and
    per measure string ``M``: ``M`` (value at round t), ``M:cum`` (sum over
    rounds 1..t), ``M:avg`` (``M:cum / t``) and ``M:regret`` (cumulative regret
    against the best fixed action in hindsight over rounds 1..t, comparator
    minus learner for gains and learner minus comparator for losses; NaN when
    the environment has no comparator). Rows are sorted by rep, then t. With
    ``spec.heldout``, a last column ``heldout:ndcg@k``: the mean NDCG@k over the
    held-out queries of the learner's weights after round t (NaN for a learner
    without ``weights_``).

    Raises
    ------
    ValueError, TypeError
        Before any round, for unknown names, bad parameters, a learner needing
        more feedback than the model gives, a horizon beyond the data, or a
        held-out file that is missing, malformed or of another width than the
        stream.

    Examples
    --------
    >>> spec = RunSetSpec(env="fixed-items-v1", env_params={"relevance": [[1, 0], [0, 1]]},
    ...                   feedback="full", feedback_params={}, learner="fixed", learner_params={},
    ...                   reps=(0,), seed=1, horizon=2, measures=("precision@1",),
    ...                   checkpoints=(1, 2))
    >>> run_set(spec)[["t", "precision@1", "precision@1:cum", "precision@1:regret"]]
       t  precision@1  precision@1:cum  precision@1:regret
    0  1          1.0              1.0                 0.0
    1  2          0.0              1.0                 0.0
    """
    reps, horizon, checkpoints = spec.reps, spec.horizon, np.asarray(spec.checkpoints)
    n_runs = len(reps)

    # -- build and check everything before the first round ------------------------
    model = make_feedback(spec.feedback, spec.feedback_params)
    env = make_env(spec.env, spec.env_params, feedback=model)
    learner = make_learner(
        spec.learner,
        spec.learner_params,
        n_runs=n_runs,
        rngs=RunGenerators.from_keys(spec.seed, "learner", spec.learner, reps=reps),
        horizon=horizon,
    )
    check_compatible(learner, model, env=env)
    limit = env.horizon_limit
    if limit is not None and horizon > limit:
        raise ValueError(
            f"horizon {horizon} exceeds the {limit} rounds environment {spec.env!r} can serve"
        )
    measures = resolve_measures(spec.measures)
    names = list(measures)
    required = learner.requires
    n_lists = required.n_lists
    feedback_rngs = RunGenerators.from_keys(spec.seed, "feedback", reps=reps)
    evaluator = _load_heldout(spec, env)
    # Decided once: a learner class either exposes weights or it does not (its
    # weights_ may only exist from the first rank() on).
    has_weights = evaluator is not None and hasattr(type(learner), "weights_")
    env.reset(rng=child_rng(spec.seed, "env", spec.env))

    # -- the rounds -----------------------------------------------------------------
    n_meas, n_cp = len(names), checkpoints.size
    cum = np.zeros((n_meas, n_runs))
    rec_value = np.empty((n_meas, n_cp, n_runs))
    rec_cum = np.empty((n_meas, n_cp, n_runs))
    rec_heldout = np.full((n_cp, n_runs), np.nan)
    every = max(1, horizon // 100)
    reported, ci, next_cp = 0, 0, int(checkpoints[0])
    for t in range(1, horizon + 1):
        context = env.observe(t)
        if t == 1 and evaluator is not None and context.features is not None:
            _check_heldout_width(
                evaluator,
                int(context.features.shape[1]),
                str(evaluator.dataset.source or "(data set)"),
            )
        orders = learner.rank(context)
        if validate:
            orders = check_orders(orders, context.n_items, n_runs, n_lists)
        feedback = env.feedback(orders, feedback_rngs)
        values = env.evaluate(orders, measures, validate=False)
        learner.update(context, orders, feedback.restrict(required))
        for j, name in enumerate(names):
            cum[j] += values[name]
        if t == next_cp:
            for j, name in enumerate(names):
                rec_value[j, ci] = values[name]
            rec_cum[:, ci] = cum
            if evaluator is not None and isinstance(learner, FeatureScorer):
                rec_heldout[ci] = evaluator.evaluate_scorer(learner.score_features)
            elif has_weights:
                assert evaluator is not None
                rec_heldout[ci] = evaluator.evaluate(_heldout_weights(learner, n_runs))
            ci += 1
            next_cp = int(checkpoints[ci]) if ci < n_cp else -1
        if progress is not None and t % every == 0:
            progress(t - reported)
            reported = t
    if progress is not None and reported < horizon:
        progress(horizon - reported)

    # -- regret and the trace ---------------------------------------------------------
    best = env.comparator(measures, spec.checkpoints)
    columns: dict[str, Any] = {
        "rep": np.repeat(np.asarray(reps, dtype=np.int64), n_cp),
        "t": np.tile(checkpoints.astype(np.int64), n_runs),
    }
    for j, name in enumerate(names):
        comp = best.get(name)
        if comp is None:
            regret = np.full((n_cp, n_runs), np.nan)
        elif measures[name].kind == "gain":
            regret = comp[:, None] - rec_cum[j]
        else:
            regret = rec_cum[j] - comp[:, None]
        columns[name] = rec_value[j].T.reshape(-1)
        columns[f"{name}:cum"] = rec_cum[j].T.reshape(-1)
        columns[f"{name}:avg"] = (rec_cum[j] / checkpoints[:, None]).T.reshape(-1)
        columns[f"{name}:regret"] = regret.T.reshape(-1)
    heldout_k = None if evaluator is None else evaluator.k
    if heldout_k is not None:
        columns[heldout_column(heldout_k)] = rec_heldout.T.reshape(-1)
    return pd.DataFrame(columns, columns=trace_columns(names, heldout_k=heldout_k))
