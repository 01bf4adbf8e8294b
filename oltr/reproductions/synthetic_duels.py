"""Duels for Dueling Bandit Gradient Descent: over parameter vectors, or over rankings.

Yue & Joachims (2009) compare two points w, w' of a parameter space W. What
the comparison *sees* depends on the setting:

* **Synthetic value functions (§5.1).** v is defined on W itself and
  P(w ≻ w') = σ(v(w) − v(w')): there are no items and no rankings. The duel is
  over the two points, and :class:`ValueFunctionDuel` decides it. A
  parameter-space learner (``propose() -> (B, 2, d)``, ``learn(outcome)``; see
  :mod:`oltr.learners.dbgd`) is run against it by :func:`run_parameter_duels`,
  the same observe–act–feedback–update loop as the engine's runner with the
  pair of points in place of the pair of orders. The learner sees only the
  outcome (+1: w' won) — or, for the BGD baselines, which assume strictly more
  information (§5.1), the probability P(w_t ≻ w'_t).
  :func:`run_duel_set` makes one such run (a learner at one δ_L on one problem,
  its repetitions as a batch) a run set of the experiment engine, which is how
  the Table 1 and Figure 2 reproductions (:mod:`oltr.reproductions.yj09`) run:
  the runner of item rankings (:func:`oltr.experiments.runner.run_set`) cannot
  play it, for there are no lists to rank, check or evaluate.
  :func:`simulate_synthetic` is the same loop written over arrays for many runs
  and several δ_L at once (tests and benchmarks of the learners); it calls the
  learners' own update functions (:func:`oltr.learners.dbgd.explore`,
  :func:`~oltr.learners.dbgd.gradient_step`) and equals :func:`run_duel_set` bit for bit.
* **Query streams (§5.2).** The two linear scorers produce two rankings of the
  query's documents — ordinary orders of shape (B, 2, m) — and an ordinary
  feedback model of kind ``"duel"`` decides: the web-search oracle
  P = σ(10 · (NDCG@10(w) − NDCG@10(w'))) is :class:`oltr.feedback.DuelFeedbackModel`
  (its defaults), and interleaving + a simulated click model is
  :class:`InterleavedClickFeedback` (registered ``"interleaved-clicks"``). The
  engine's runner needs nothing special, and its held-out tables score the
  learner's current w_t on whole data sets (Table 2's training NDCG, Table 3's
  test NDCG): the ``yj09-table2`` and ``yj09-table3`` configs.

Randomness follows the runner's keys: the learner of repetition ``r`` draws from
``child_rng(seed, "learner", <name>, r)`` and the duel coins from
``child_rng(seed, "feedback", r)``. In :func:`simulate_synthetic` the runs of
different δ_L with the same repetition share these streams (common random
numbers).

References
----------
Yue & Joachims 2009, ICML: §3 (eqs. 1–2), Algorithm 1, §5.1 (P1–P5, Table 1,
Figure 2, BGD1/BGD2), §5.2 (web search, Tables 2–3).
Radlinski, Kurup & Joachims 2008, CIKM, §4 (team-draft interleaving).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from oltr.envs.duels import CoinStream, ValueFunctionDuel
from oltr.envs.valuefns import SyntheticProblem
from oltr.experiments.runner import RunSetSpec, trace_columns
from oltr.learners.dbgd import (
    DirectionStream,
    explore,
    gradient_step,
    initial_weights,
    theorem2_schedule,
)
from oltr.registry import PARAMETER_DUELERS
from oltr.types import FloatArray, RunGenerators
from oltr.validation import check_choice, check_scalar

__all__ = [
    "SYNTHETIC_METHODS",
    "TABLE1",
    "TABLE1_DELTA_L",
    "DUEL_ENV",
    "DUEL_MEASURE",
    "duel_spec",
    "run_duel_set",
    "run_parameter_duels",
    "simulate_synthetic",
]

#: Table 1 of Yue & Joachims (2009): average regret of DBGD, rows P1..P5, columns δ_L.
TABLE1_DELTA_L: tuple[float, ...] = (0.6, 0.8, 1.0, 2.0, 3.0)
TABLE1: Mapping[str, tuple[float, ...]] = {
    "P1": (0.465, 0.398, 0.334, 0.303, 0.415),
    "P2": (0.803, 0.767, 0.760, 0.780, 0.807),
    "P3": (0.687, 0.628, 0.604, 0.637, 0.663),
    "P4": (0.500, 0.378, 0.325, 0.304, 0.418),
    "P5": (0.710, 0.663, 0.674, 0.798, 0.887),
}

#: Learners of the synthetic comparison (§5.1): what each observes and how it steps.
SYNTHETIC_METHODS = ("dbgd", "bgd1", "bgd2")


# ---------------------------------------------------------------------------
# per-run coin streams


# ---------------------------------------------------------------------------
# the parameter-space duel (§5.1)


def run_parameter_duels(
    env: ValueFunctionDuel,
    learner: Any,
    *,
    horizon: int,
    checkpoints: Sequence[int],
    rngs: RunGenerators,
    progress: Callable[[int], Any] | None = None,
) -> FloatArray:
    """Run a parameter-space learner against ``env``; average regret at each checkpoint.

    The loop, per round: ``points = learner.propose()`` (B, 2, d); the
    environment draws the duel; the learner sees only the outcome
    (``learner.learn(outcome)``), or, if its ``parameter_feedback`` is
    ``"preference"`` (the BGD baselines), only P(w_t ≻ w'_t)
    (``learner.learn(p_first)``).

    Parameters
    ----------
    env
        The duel environment.
    learner
        An object with ``propose``, ``learn`` and ``parameter_feedback``
        (:class:`~oltr.learners.dbgd.DuelingBanditGradientDescent` built with
        ``dim``, or :class:`~oltr.learners.bgd.BanditGradientDescent`).
    horizon
        Rounds T >= 1.
    checkpoints
        Rounds at which to record Δ_t / t (1-based, increasing, within 1..T).
    rngs
        The duel coins' per-run generators.
    progress
        Called now and then with the number of rounds done since its last call.

    Returns
    -------
    Array of shape (B, n_checkpoints): average regret Δ_t / t (eq. 2).
    """
    cps = _checkpoints(checkpoints, horizon)
    _, cum = _duel_rounds(env, learner, horizon, cps, rngs, progress)
    return np.asarray(cum / cps, dtype=np.float64)


def _duel_rounds(
    env: ValueFunctionDuel,
    learner: Any,
    horizon: int,
    cps: NDArray[np.intp],
    rngs: RunGenerators,
    progress: Callable[[int], Any] | None,
) -> tuple[FloatArray, FloatArray]:
    """The rounds of :func:`run_parameter_duels`: the regret term and its sum at each checkpoint.

    Both arrays have shape (B, n_checkpoints).
    """
    check_scalar(horizon, "horizon", low=1, integer=True)
    kind = getattr(learner, "parameter_feedback", None)
    check_choice(kind, "learner.parameter_feedback", ("duel", "preference"))
    coins = CoinStream(rngs)
    cum = np.zeros(rngs.n_runs)
    value = np.empty((rngs.n_runs, cps.size))
    total = np.empty((rngs.n_runs, cps.size))
    every, reported = max(1, horizon // 100), 0
    ci = 0
    for t in range(1, horizon + 1):
        p_first, regret = env.assess(learner.propose())
        cum += regret
        if kind == "duel":
            learner.learn(env.outcome(p_first, coins.next()))
        else:
            learner.learn(p_first)
        if ci < cps.size and t == cps[ci]:
            value[:, ci], total[:, ci] = regret, cum
            ci += 1
        if progress is not None and t % every == 0:
            progress(t - reported)
            reported = t
    if progress is not None and reported < horizon:
        progress(horizon - reported)
    return value, total


def _checkpoints(checkpoints: Sequence[int], horizon: int) -> NDArray[np.intp]:
    cps = np.asarray(checkpoints, dtype=np.int64)
    if (
        cps.ndim != 1
        or cps.size == 0
        or cps[0] < 1
        or cps[-1] > horizon
        or (np.diff(cps) <= 0).any()
    ):
        raise ValueError(
            f"checkpoints must increase strictly within 1..{horizon}, got {cps.tolist()[:6]}"
        )
    return cps.astype(np.intp)


def simulate_synthetic(
    problem: str | SyntheticProblem,
    *,
    method: str = "dbgd",
    delta_l: Sequence[float] = TABLE1_DELTA_L,
    reps: Sequence[int] = range(10),
    seed: int = 0,
    horizon: int = 1_000_000,
    checkpoints: Sequence[int] | None = None,
    init: str = "ones",
    dim: int = 50,
    radius: float = 10.0,
) -> FloatArray:
    """DBGD, BGD1 or BGD2 on a synthetic problem for several δ_L and repetitions at once.

    All ``len(delta_l) × len(reps)`` runs advance together in one array loop,
    W of shape (n_δ · n_reps, d), with per-row δ = T^{−1/4} δ_L √(0.4 R d) and
    γ = R/√T (§5.1). Repetition ``r`` draws its directions from
    ``child_rng(seed, "learner", method, r)`` and its duel coins from
    ``child_rng(seed, "feedback", r)``, shared by all δ_L (common random
    numbers), exactly as the learner classes do under
    :func:`run_parameter_duels` — a row of this function equals that loop bit
    for bit.

    The update of each method (§5.1; :func:`oltr.learners.dbgd.gradient_step`):

    * ``"dbgd"`` — w ← P(w + γu) when w'_t wins the duel (Algorithm 1);
    * ``"bgd1"`` — w ← P(w − γ P(w_t ≻ w'_t) u) (Flaxman et al. on c_t);
    * ``"bgd2"`` — w ← P(w − γ (P(w_t ≻ w'_t) − 1/2) u) (on ε_t).

    Parameters
    ----------
    problem
        ``"P1"``…``"P5"`` (``"P2"`` is the L1 reading of v2, see
        :mod:`oltr.envs.valuefns`) or a problem object.
    method
        One of :data:`SYNTHETIC_METHODS`.
    delta_l
        The δ_L factors (each > 0).
    reps
        Repetition indices (distinct, >= 0).
    seed
        Root seed.
    horizon
        T, which also sets δ and γ.
    checkpoints
        Rounds at which to record the average regret; default ``(horizon,)``.
    init
        w_1 (see :func:`oltr.learners.dbgd.initial_weights`; default §5.1's).
    dim, radius
        The ball (used for a problem name).

    Returns
    -------
    Array of shape (n_δ, n_reps, n_checkpoints): average regret Δ_t / t.

    Examples
    --------
    >>> reg = simulate_synthetic("P1", delta_l=[1.0], reps=[0, 1], horizon=2000, dim=5)
    >>> reg.shape, bool((reg > 0).all() and (reg < 1).all())
    ((1, 2, 1), True)
    """
    check_choice(method, "method", SYNTHETIC_METHODS)
    check_scalar(horizon, "horizon", low=1, integer=True)
    env = ValueFunctionDuel(problem, dim=dim, radius=radius)
    d, big_r = env.dim, env.radius
    dls = np.asarray(
        [check_scalar(x, "delta_l", low=0, include_low=False) for x in delta_l], dtype=np.float64
    )
    reps = tuple(int(r) for r in reps)
    if not reps or len(set(reps)) != len(reps) or min(reps) < 0:
        raise ValueError(f"reps must be distinct indices >= 0, got {reps}")
    cps = _checkpoints((horizon,) if checkpoints is None else checkpoints, horizon)
    n_d, n_r = dls.size, len(reps)
    sched = [theorem2_schedule(horizon, d, big_r, float(x)) for x in dls]
    delta = np.repeat([s[0] for s in sched], n_r)[:, None]
    gamma = sched[0][1]
    learner_rngs = RunGenerators.from_keys(seed, "learner", method, reps=reps)
    w = np.tile(initial_weights(init, d, "ball", big_r, learner_rngs), (n_d, 1))
    dirs = DirectionStream(learner_rngs, d)
    coins = CoinStream(RunGenerators.from_keys(seed, "feedback", reps=reps))
    cum = np.zeros(n_d * n_r)
    out = np.empty((n_d * n_r, cps.size))
    ci = 0
    for t in range(1, horizon + 1):
        u = np.tile(dirs.next(), (n_d, 1))
        w_prime = explore(w, u, delta, "ball", big_r)
        p_first, regret = env._assess(w, w_prime)
        cum += regret
        if method == "dbgd":
            coin = np.tile(coins.next(), n_d)
            coef = (coin >= p_first).astype(np.float64)  # w'_t won (ValueFunctionDuel.outcome)
        elif method == "bgd1":
            coef = -p_first
        else:
            coef = 0.5 - p_first
        w = gradient_step(w, u, coef, gamma, "ball", big_r)
        if t == cps[ci]:
            out[:, ci] = cum / t
            ci += 1
            if ci == cps.size:
                break
    return out.reshape(n_d, n_r, cps.size)


# ---------------------------------------------------------------------------
# rankings compared by interleaving and clicks (§1, §3; Radlinski et al. 2008)


# ---------------------------------------------------------------------------
# offline evaluation of linear rankers, and a LETOR duel loop that uses it


# ---------------------------------------------------------------------------
# the synthetic reproductions (Table 1, Figure 2)


# ---------------------------------------------------------------------------
# the parameter-space duel as a run set of the experiment engine

#: Environment name of the parameter-space duel in run-set specs (not an item ranking
#: environment: :func:`oltr.experiments.runner.run_set` does not run it, :func:`run_duel_set` does).
DUEL_ENV = "value-function-duel"
#: Name of the recorded per-round loss ε(w*, w_t) + ε(w*, w'_t); its sum is Δ_t (eq. 2).
DUEL_MEASURE = "duel-loss"


def duel_spec(
    problem: str,
    method: str,
    delta_l: float,
    *,
    reps: Sequence[int],
    seed: int,
    horizon: int,
    checkpoints: Sequence[int],
    dim: int = 50,
    radius: float = 10.0,
    init: str = "ones",
) -> RunSetSpec:
    """The run set of one §5.1 learner (``method`` of :data:`SYNTHETIC_METHODS`) on one problem.

    DBGD observes duel outcomes (feedback ``"duel"``), BGD1/BGD2 the preference
    probability (``"preference"``); both on the ball of radius ``radius`` with
    §5.1's schedule for ``delta_l``.
    """
    check_choice(method, "method", SYNTHETIC_METHODS)
    if method == "dbgd":
        params: dict[str, Any] = {"delta": None, "gamma": None, "space": "ball"}
        learner, feedback = "dbgd", "duel"
    else:
        params, learner, feedback = {"variant": method}, "bgd", "preference"
    return RunSetSpec(
        env=DUEL_ENV,
        env_params={"problem": problem, "dim": int(dim), "radius": float(radius)},
        feedback=feedback,
        feedback_params={},
        learner=learner,
        learner_params={**params, "delta_l": float(delta_l), "init": init},
        reps=tuple(reps),
        seed=seed,
        horizon=horizon,
        measures=(DUEL_MEASURE,),
        checkpoints=tuple(checkpoints),
    )


def run_duel_set(spec: RunSetSpec, *, progress: Callable[[int], Any] | None = None) -> pd.DataFrame:
    """Run a parameter-space duel run set (:func:`duel_spec`); its trace, as the runner's.

    The run-set task of the YJ09 synthetic reproductions in the experiment
    engine (:func:`oltr.experiments.sweep.run_sweep`'s ``run_set_fn``): it builds
    the value-function duel and the learner (:data:`oltr.registry.PARAMETER_DUELERS`)
    from the spec and plays :func:`run_parameter_duels`. Randomness follows the
    runner's keys: learner ``child_rng(seed, "learner", name, rep)`` with the BGD
    variant's name for BGD (as :func:`simulate_synthetic`), duel coins
    ``child_rng(seed, "feedback", rep)``.

    Returns
    -------
    The columns of :func:`oltr.experiments.runner.trace_columns` for the measure
    :data:`DUEL_MEASURE`: the regret term at t, its sum Δ_t (``:cum``, and
    ``:regret``, the comparator w* having none), and Δ_t / t (``:avg``).
    """
    if spec.env != DUEL_ENV:
        raise ValueError(f"run_duel_set runs env {DUEL_ENV!r} run sets, got {spec.env!r}")
    if tuple(spec.measures) != (DUEL_MEASURE,):
        raise ValueError(f"a duel run set records {DUEL_MEASURE!r} only, got {spec.measures}")
    opts = dict(spec.env_params)
    env = ValueFunctionDuel(str(opts["problem"]), dim=int(opts["dim"]), radius=opts["radius"])
    params = dict(spec.learner_params)
    key = str(params.get("variant", spec.learner))
    learner = PARAMETER_DUELERS.lookup(spec.learner)(
        **params,
        dim=env.dim,
        radius=env.radius,
        horizon=spec.horizon,
        n_runs=len(spec.reps),
        rng=RunGenerators.from_keys(spec.seed, "learner", key, reps=spec.reps),
    )
    expected = "duel" if learner.parameter_feedback == "duel" else "preference"
    if spec.feedback != expected:
        raise ValueError(
            f"learner {spec.learner!r} observes {expected!r} feedback, spec says {spec.feedback!r}"
        )
    cps = _checkpoints(spec.checkpoints, spec.horizon)
    coins = RunGenerators.from_keys(spec.seed, "feedback", reps=spec.reps)
    value, cum = _duel_rounds(env, learner, spec.horizon, cps, coins, progress)
    n_runs, m = len(spec.reps), DUEL_MEASURE
    columns = {
        "rep": np.repeat(np.asarray(spec.reps, dtype=np.int64), cps.size),
        "t": np.tile(cps.astype(np.int64), n_runs),
        m: value.reshape(-1),
        f"{m}:cum": cum.reshape(-1),
        f"{m}:avg": (cum / cps).reshape(-1),
        f"{m}:regret": cum.reshape(-1),
    }
    return pd.DataFrame(columns, columns=trace_columns([m]))
