"""Run one learner setting on one environment for a batch of repetitions.

:func:`run_set` is the online protocol as code, with a leading run axis ``B``
(the repetitions of one run set)::

    for t in 1..T:
        context = env.observe(t)                         # same for all B runs
        orders  = learner.rank(context)                  # (B, m); (B, 2, m) for duels
        fb      = env.feedback(orders, feedback_rngs)    # what the model reveals
        values  = env.evaluate(orders, measures)         # full information, for the trace
        learner.update(context, orders, fb.restrict(learner.requires))

The learner is built from names only and never receives the environment, so the relevance
it does not see is out of its reach; it receives the feedback object cut down to exactly what
it declared (``learner.requires``), through ``trusted_rank`` / ``trusted_update``
(:meth:`oltr.learners.base.Learner.trusted_rank`: ``rank`` / ``update`` without the checks
this loop makes redundant; it checks the orders, :func:`~oltr.permutations.checks.checked_orders`).
Every round is evaluated; only checkpoints are recorded, into preallocated arrays.

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

Per-run streams (``spec.streams = "per-run"``): some protocols draw each run's query sequence
independently (the click-based online learning-to-rank literature, e.g. Oosterhuis & de Rijke
2018's reference implementation). Then run ``rep`` gets its own environment stream
``child_rng(seed, "env", env, rep)``. Since one context is shown to a whole batch, the runner runs
the ``B`` repetitions as ``B`` single-run batches, one after the other, and concatenates their
traces: a run's trace is then the same in any batch, by construction. It costs the batching's
speed-up (``B`` passes instead of one); nothing else changes. ``streams = None`` (or ``"shared"``)
is the common stream above.

Held-out evaluation (``spec.heldout``, ``spec.heldouts``): besides the quality
of the lists *shown*, online learning-to-rank papers report the quality of the
*current* ranker on test queries it never sees (Chaudhuri & Tewari 2016 §6; Yue
& Joachims 2009 §5.2, Table 3; Schuth et al. 2016 §5 and Oosterhuis & de Rijke
2018 §6 "offline" performance). The runner loads each test file once, before
round 1, and at every checkpoint scores the learner's read-only weights
``learner.weights_`` (B, d) — or its scoring function, for a
:class:`~oltr.learners.base.FeatureScorer` such as a neural ranker — on it with
:class:`oltr.experiments.heldout.HeldoutSet`. The single table ``heldout``
records column ``heldout:ndcg@k`` (NaN for learners without weights); the named
tables ``heldouts = {name: table}`` record ``heldout:NAME:ndcg@k`` each, and
score the random ranker too, by one uniformly random permutation of every test
list per run and checkpoint drawn from ``child_rng(seed, "heldout", NAME, rep)``
(other learners without weights get NaN). The learner never receives the test
data (it gets nothing new at all: the runner reads its weights), and held-out
evaluation draws from no stream the rest uses, so the rest of the trace is the
same with or without it.

Online (discounted) measure (``spec.online_discount = γ``): per measure ``M``,
column ``online:M`` = Σ_{s ≤ t} γ^{s−1} M_s, the discounted cumulative measure
of the lists shown (Hofmann, Whiteson & de Rijke 2013 §5; Oosterhuis & de Rijke
2018 §6 with γ = 0.9995). ``spec.no_relevant`` sets the value the trace's
normalised measures give a list without a relevant item (default: the
measure's own, 1 for NDCG; the click literature's reference code uses 0).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from oltr.build import check_compatible, make_env, make_feedback, make_learner
from oltr.experiments.heldout import (
    HELDOUT_DEFAULTS,
    HeldoutSet,
    check_heldout,
    check_heldouts,
    evaluate_learner,
    heldout_column,
    load_heldout,
)
from oltr.learners.baselines import RandomRanker
from oltr.metrics import Measure, resolve_measures
from oltr.permutations.checks import checked_orders
from oltr.random import child_rng
from oltr.types import RunGenerators
from oltr.validation import check_scalar

__all__ = [
    "HELDOUT_DEFAULTS",
    "STREAMS",
    "RunSetSpec",
    "check_heldout",
    "heldout_column",
    "online_column",
    "run_set",
    "trace_columns",
]

#: Environment streams of a run set: one shared by the batch, or one per repetition.
STREAMS = ("shared", "per-run")


def _int(value: Any, name: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    if value < low:
        raise ValueError(f"{name} must be >= {low}, got {value}")
    return int(value)


def online_column(measure: str) -> str:
    """Name of the discounted online column of ``measure``: ``online:M``.

    >>> online_column("ndcg@10")
    'online:ndcg@10'
    """
    return f"online:{measure}"


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
    heldouts
        Optional named held-out tables, ``{name: table}`` (each as ``heldout``),
        one column ``heldout:NAME:ndcg@k`` each; the random ranker is scored by
        random permutations (module docstring).
    online_discount
        γ in (0, 1]: adds ``online:M`` = Σ_{s ≤ t} γ^{s−1} M_s per measure.
    no_relevant
        Value of the trace's normalised measures (NDCG, AP, AUC, ...) for a list
        without a relevant item; None: each measure's default.
    streams
        ``"shared"`` (None, the default) or ``"per-run"`` (module docstring).

    Notes
    -----
    The optional fields (default None) are left out of the run-set id while
    unset (:func:`oltr.experiments.storage.run_set_id`), so specs that do not
    use them keep their ids.
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
    heldouts: Mapping[str, Mapping[str, Any]] | None = None
    online_discount: float | None = None
    no_relevant: float | None = None
    streams: str | None = None

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
        if self.online_discount is not None:
            gamma = float(check_scalar(self.online_discount, "online_discount", low=0.0))
            if not 0.0 < gamma <= 1.0:
                raise ValueError(f"online_discount must lie in (0, 1], got {gamma}")
            object.__setattr__(self, "online_discount", gamma)
        if self.no_relevant is not None:
            value = float(check_scalar(self.no_relevant, "no_relevant"))
            object.__setattr__(self, "no_relevant", value)
        if self.streams is not None and self.streams not in STREAMS:
            raise ValueError(f"streams must be one of {', '.join(STREAMS)}, got {self.streams!r}")
        object.__setattr__(self, "reps", reps)
        object.__setattr__(self, "measures", measures)
        object.__setattr__(self, "checkpoints", cps)
        object.__setattr__(self, "heldout", check_heldout(self.heldout))
        object.__setattr__(self, "heldouts", check_heldouts(self.heldouts))


def trace_columns(
    measures: tuple[str, ...] | list[str],
    *,
    heldout_k: int | None = None,
    heldouts: Mapping[str, int] | None = None,
    online: bool = False,
) -> list[str]:
    """The columns of a trace: ``rep``, ``t``, then per measure M: M, M:cum, M:avg, M:regret.

    With ``online``, then ``online:M`` per measure; with ``heldout_k``, the column
    :func:`heldout_column` ``(heldout_k)``; with ``heldouts`` (name -> k), one
    column ``heldout:NAME:ndcg@k`` per name, in that order.
    """
    cols = ["rep", "t"]
    for m in measures:
        cols += [m, f"{m}:cum", f"{m}:avg", f"{m}:regret"]
    if online:
        cols += [online_column(m) for m in measures]
    if heldout_k is not None:
        cols.append(heldout_column(heldout_k))
    for name, k in (heldouts or {}).items():
        cols.append(heldout_column(k, name))
    return cols


def _load_heldouts(spec: RunSetSpec, env: Any) -> dict[str | None, HeldoutSet]:
    """The held-out evaluators of ``spec`` (None names the single ``heldout`` table)."""
    tables: dict[str | None, tuple[str, Mapping[str, Any]]] = {}
    if spec.heldout is not None:
        tables[None] = ("heldout", spec.heldout)
    for name, table in (spec.heldouts or {}).items():
        tables[name] = (f"heldouts.{name}", table)
    if tables and env.context_kind != "features":
        first = next(iter(tables.values()))[0]
        raise ValueError(
            f"{first}: evaluating weights needs feature lists, but environment "
            f"{spec.env!r} produces {env.context_kind!r} contexts"
        )
    out = {key: load_heldout(table, where=where) for key, (where, table) in tables.items()}
    # A stream that exposes its data set is checked now; any other at its first context.
    data = getattr(env, "data", None)
    if callable(data):
        for key, evaluator in out.items():
            _check_heldout_width(evaluator, int(data().n_features), key)
    return out


def _check_heldout_width(evaluator: HeldoutSet, n_features: int, name: str | None) -> None:
    d = evaluator.dataset.n_features
    if d != n_features:
        path = str(evaluator.dataset.source or "(data set)")
        where = "heldout" if name is None else f"heldouts.{name}"
        raise ValueError(
            f"{where}.path: the held-out data {path} has {d} features but the "
            f"stream has {n_features}; they must match (a file that leaves out "
            f"trailing features can be widened with {where}.n_features)"
        )


def _with_no_relevant(measures: dict[str, Measure], value: float | None) -> dict[str, Measure]:
    """``measures`` with ``no_relevant = value`` bound where the measure takes it."""
    if value is None:
        return measures
    return {
        name: replace(m, kwargs={**m.kwargs, "no_relevant": value})
        if "no_relevant" in inspect.signature(m.fn).parameters
        else m
        for name, m in measures.items()
    }


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
    ``spec.online_discount``, ``online:M`` per measure; with ``spec.heldout``, a
    column ``heldout:ndcg@k``: the mean NDCG@k over the held-out queries of the
    learner's weights after round t (NaN for a learner without ``weights_``);
    with ``spec.heldouts``, ``heldout:NAME:ndcg@k`` per table.

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
    from threadpoolctl import threadpool_limits

    # One BLAS thread, as in a sweep's workers: a multi-threaded matrix product sums in an
    # order that depends on the thread count, and traces must be equal bit for bit.
    with threadpool_limits(1, user_api="blas"):
        return _run_set(spec, progress, validate)


def _run_set(
    spec: RunSetSpec, progress: Callable[[int], Any] | None, validate: bool
) -> pd.DataFrame:
    if spec.streams != "per-run":
        return _run_batch(
            spec, spec.reps, child_rng(spec.seed, "env", spec.env), progress, validate
        )
    # B single-run batches, each on its own stream; progress in rounds of the whole set.
    n_runs, done, reported = len(spec.reps), 0, 0

    def advance(n: int) -> None:
        nonlocal done, reported
        done += n
        if progress is not None and done // n_runs > reported:
            progress(done // n_runs - reported)
            reported = done // n_runs

    traces = [
        _run_batch(spec, (rep,), child_rng(spec.seed, "env", spec.env, rep), advance, validate)
        for rep in spec.reps
    ]
    return pd.concat(traces, ignore_index=True)


def _run_batch(
    spec: RunSetSpec,
    reps: tuple[int, ...],
    env_rng: np.random.Generator,
    progress: Callable[[int], Any] | None,
    validate: bool,
) -> pd.DataFrame:
    """The rounds of ``spec`` for the runs ``reps``, on the environment stream ``env_rng``."""
    horizon, checkpoints = spec.horizon, np.asarray(spec.checkpoints)
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
    measures = _with_no_relevant(resolve_measures(spec.measures), spec.no_relevant)
    names = list(measures)
    required = learner.requires
    n_lists = required.n_lists
    feedback_rngs = RunGenerators.from_keys(spec.seed, "feedback", reps=reps)
    evaluators = _load_heldouts(spec, env)
    random_rngs: dict[str | None, RunGenerators] = {
        name: RunGenerators.from_keys(spec.seed, "heldout", name, reps=reps)
        for name in evaluators
        if name is not None and isinstance(learner, RandomRanker)
    }
    # Decided once: a learner class either exposes weights or it does not (its
    # weights_ may only exist from the first rank() on).
    has_weights = hasattr(type(learner), "weights_")
    env.reset(rng=env_rng)
    rank, update = learner.trusted_rank, learner.trusted_update  # this loop keeps their terms

    # -- the rounds -----------------------------------------------------------------
    n_meas, n_cp = len(names), checkpoints.size
    gamma = spec.online_discount
    cum = np.zeros((n_meas, n_runs))
    online = np.zeros((n_meas, n_runs))
    weight = 1.0
    rec_value = np.empty((n_meas, n_cp, n_runs))
    rec_cum = np.empty((n_meas, n_cp, n_runs))
    rec_online = np.empty((n_meas, n_cp, n_runs))
    rec_heldout = {name: np.full((n_cp, n_runs), np.nan) for name in evaluators}
    every = max(1, horizon // 100)
    reported, ci, next_cp = 0, 0, int(checkpoints[0])
    for t in range(1, horizon + 1):
        context = env.observe(t)
        if t == 1 and context.features is not None:
            for key, evaluator in evaluators.items():
                _check_heldout_width(evaluator, int(context.features.shape[1]), key)
        orders = rank(context)
        if validate:
            orders = checked_orders(orders, context.n_items, n_runs, n_lists)
        feedback = env.feedback(orders, feedback_rngs)
        values = env.evaluate(orders, measures, validate=False)
        update(context, orders, feedback.restrict(required))
        for j, name in enumerate(names):
            cum[j] += values[name]
        if gamma is not None:
            for j, name in enumerate(names):
                online[j] += weight * values[name]
            weight *= gamma
        if t == next_cp:
            for j, name in enumerate(names):
                rec_value[j, ci] = values[name]
            rec_cum[:, ci] = cum
            rec_online[:, ci] = online
            for key, evaluator in evaluators.items():
                rec_heldout[key][ci] = evaluate_learner(
                    evaluator, learner, n_runs, weights=has_weights, rngs=random_rngs.get(key)
                )
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
        if gamma is not None:
            columns[online_column(name)] = rec_online[j].T.reshape(-1)
    heldout_k = evaluators[None].k if None in evaluators else None
    named = {name: ev.k for name, ev in evaluators.items() if name is not None}
    for key, evaluator in evaluators.items():
        columns[heldout_column(evaluator.k, key)] = rec_heldout[key].T.reshape(-1)
    order = trace_columns(names, heldout_k=heldout_k, heldouts=named, online=gamma is not None)
    return pd.DataFrame(columns, columns=order)
