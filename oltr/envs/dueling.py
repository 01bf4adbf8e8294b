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
  :func:`simulate_synthetic` is the same loop written over arrays for many runs
  and several δ_L at once (Table 1, Figure 2); it calls the learners' own update
  functions (:func:`oltr.learners.dbgd.explore`, :func:`~oltr.learners.dbgd.gradient_step`).
* **Query streams (§5.2).** The two linear scorers produce two rankings of the
  query's documents — ordinary orders of shape (B, 2, m) — and an ordinary
  feedback model of kind ``"duel"`` decides: the web-search oracle
  P = σ(10 · (NDCG@10(w) − NDCG@10(w'))) is :class:`oltr.feedback.DuelFeedbackModel`
  (its defaults), and interleaving + a simulated click model is
  :class:`InterleavedClickFeedback` (registered ``"interleaved-clicks"``). The
  engine's runner needs nothing special; :func:`run_letor_duels` adds what the
  runner cannot do, an *offline* evaluation of the learner's current w_t on whole
  data sets (Table 2's training NDCG, Table 3's test NDCG, NDCG vs impressions).

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

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from scipy.special import expit  # type: ignore[import-untyped]

from oltr.envs.clicks import cascade_model, position_based_model
from oltr.envs.interleaving import INTERLEAVING_METHODS, compare
from oltr.envs.valuefns import SyntheticProblem, synthetic_problem
from oltr.feedback import DuelFeedback, FeedbackModel
from oltr.learners.dbgd import (
    DirectionStream,
    explore,
    gradient_step,
    initial_weights,
    theorem2_schedule,
)
from oltr.metrics import ndcg
from oltr.random import child_rng
from oltr.registry import register_feedback
from oltr.types import FloatArray, Orders, RunGenerators, check_choice, check_scalar

__all__ = [
    "SYNTHETIC_METHODS",
    "SYNTHETIC_SIZES",
    "TABLE1",
    "TABLE1_DELTA_L",
    "CoinStream",
    "InterleavedClickFeedback",
    "ValueFunctionDuel",
    "offline_ndcg",
    "reproduce_figure2",
    "reproduce_table1",
    "run_letor_duels",
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


class CoinStream:
    """Uniform [0, 1) coins, one per run and call, drawn in blocks from each run's generator.

    Run ``b``'s sequence does not depend on the batch (cf.
    :class:`oltr.learners.dbgd.DirectionStream`).

    >>> c = CoinStream(RunGenerators.from_rng(0, 3))
    >>> c.next().shape
    (3,)
    """

    def __init__(self, rngs: RunGenerators, block: int = 256) -> None:
        self.rngs, self.block = rngs, int(block)
        self._buf = np.empty((rngs.n_runs, 0))
        self._i = 0

    def next(self) -> FloatArray:
        """The next coin of every run, shape (B,)."""
        if self._i >= self._buf.shape[1]:
            self._buf = self.rngs.random((self.block,))
            self._i = 0
        out = self._buf[:, self._i]
        self._i += 1
        return out


# ---------------------------------------------------------------------------
# the parameter-space duel (§5.1)


class ValueFunctionDuel:
    """A dueling environment over parameter vectors: noisy comparisons through a value function.

    ``P(w ≻ w') = σ(v(w) − v(w'))`` with the logistic link (§3.1); the per-round
    regret is ``ε(w*, w_t) + ε(w*, w'_t)`` (eq. 2).

    Parameters
    ----------
    problem
        A name of :func:`oltr.envs.valuefns.synthetic_problem` (``"P1"``…``"P5"``)
        or a :class:`~oltr.envs.valuefns.SyntheticProblem`.
    dim, radius
        The ball W (default 50 and 10, §5.1); ignored for a problem object.

    Examples
    --------
    >>> env = ValueFunctionDuel("P1", dim=2)
    >>> pts = np.array([[[0.0, 0.0], [1.0, 0.0]]])      # w_t = w*, w'_t one unit away
    >>> p, reg = env.assess(pts)
    >>> bool(np.isclose(p[0], 1 / (1 + np.exp(-1.0)))), bool(np.isclose(reg[0], p[0] - 0.5))
    (True, True)
    """

    def __init__(
        self, problem: str | SyntheticProblem = "P1", *, dim: int = 50, radius: float = 10.0
    ) -> None:
        if isinstance(problem, str):
            problem = synthetic_problem(problem, dim=dim, radius=radius)
        elif not isinstance(problem, SyntheticProblem):
            raise TypeError(
                f"problem must be a problem name or a SyntheticProblem, got "
                f"{type(problem).__name__}"
            )
        self.problem = problem
        self._best = problem.best_value

    @property
    def dim(self) -> int:
        """Dimension d of W."""
        return self.problem.dim

    @property
    def radius(self) -> float:
        """Radius R of W."""
        return self.problem.radius

    def _check(self, points: ArrayLike) -> FloatArray:
        pts = np.asarray(points, dtype=np.float64)
        if pts.ndim != 3 or pts.shape[1] != 2 or pts.shape[2] != self.dim:
            raise ValueError(f"points must have shape (B, 2, {self.dim}), got {pts.shape}")
        return pts

    def assess(self, points: ArrayLike) -> tuple[FloatArray, FloatArray]:
        """P(w_t ≻ w'_t) and the regret term ε(w*, w_t) + ε(w*, w'_t), each shape (B,)."""
        pts = self._check(points)
        return self._assess(pts[:, 0], pts[:, 1])

    def _assess(self, w: FloatArray, w_prime: FloatArray) -> tuple[FloatArray, FloatArray]:
        v, v_prime = self.problem.value(w), self.problem.value(w_prime)
        p_first = expit(v - v_prime)
        # σ(x) − 1/2 = tanh(x/2)/2 keeps precision near w* (valuefns.SyntheticProblem.regret).
        regret = 0.5 * (np.tanh((self._best - v) / 2.0) + np.tanh((self._best - v_prime) / 2.0))
        return p_first, regret

    @staticmethod
    def outcome(p_first: FloatArray, coins: FloatArray) -> NDArray[np.int8]:
        """The duel outcome from coins: −1 (w_t wins) when coin < P(w_t ≻ w'_t), else +1."""
        return np.where(coins < p_first, -1, 1).astype(np.int8)


def run_parameter_duels(
    env: ValueFunctionDuel,
    learner: Any,
    *,
    horizon: int,
    checkpoints: Sequence[int],
    rngs: RunGenerators,
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

    Returns
    -------
    Array of shape (B, n_checkpoints): average regret Δ_t / t (eq. 2).
    """
    check_scalar(horizon, "horizon", low=1, integer=True)
    cps = _checkpoints(checkpoints, horizon)
    kind = getattr(learner, "parameter_feedback", None)
    check_choice(kind, "learner.parameter_feedback", ("duel", "preference"))
    coins = CoinStream(rngs)
    cum = np.zeros(rngs.n_runs)
    out = np.empty((rngs.n_runs, cps.size))
    ci = 0
    for t in range(1, horizon + 1):
        p_first, regret = env.assess(learner.propose())
        cum += regret
        if kind == "duel":
            learner.learn(env.outcome(p_first, coins.next()))
        else:
            learner.learn(p_first)
        if ci < cps.size and t == cps[ci]:
            out[:, ci] = cum / t
            ci += 1
    return out


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


@register_feedback("interleaved-clicks")
class InterleavedClickFeedback(FeedbackModel):
    """A simulated user decides a duel of two rankings by clicking on their interleaving.

    The two lists (orders[:, 0] = ranker A, the current w_t; orders[:, 1] =
    ranker B, the candidate w'_t) are interleaved into one result page of
    ``k`` documents, a click model clicks on it given the hidden grades, and the
    interleaving method credits the clicks: outcome −1 (A wins), 0 (tie), +1
    (B wins) — the comparison by interleaving that Yue & Joachims (2009 §1, §3)
    have in mind.

    Parameters
    ----------
    method
        ``"team_draft"`` (Radlinski et al. 2008), ``"balanced"`` or
        ``"probabilistic"`` (:mod:`oltr.envs.interleaving`).
    click_model
        A cascade instantiation, ``"perfect"``, ``"navigational"`` or
        ``"informational"``, or ``"pbm-<name>"`` for the position-based model
        with that attractiveness (:mod:`oltr.envs.clicks`).
    n_grades
        Relevance grades 0..n_grades−1 of the data (2, 3 or 5).
    k
        Length of the result page, >= 1.

    Examples
    --------
    >>> fb = InterleavedClickFeedback(click_model="perfect", n_grades=3, k=2)
    >>> orders = np.array([[[0, 1, 2], [2, 1, 0]]])       # A puts the relevant doc 0 on top
    >>> outs = [int(fb.observe(orders, np.array([2, 0, 0]),
    ...                        rngs=RunGenerators.from_rng(s, 1)).outcome[0]) for s in range(20)]
    >>> set(outs) <= {-1, 0}, -1 in outs
    (True, True)
    """

    kind: ClassVar[str] = "duel"
    stochastic: ClassVar[bool] = True

    def __init__(
        self,
        *,
        method: str = "team_draft",
        click_model: str = "perfect",
        n_grades: int = 5,
        k: int = 10,
    ) -> None:
        check_choice(method, "method", tuple(INTERLEAVING_METHODS))
        check_scalar(n_grades, "n_grades", low=2, integer=True)
        check_scalar(k, "k", low=1, integer=True)
        if not isinstance(click_model, str):
            raise TypeError(f"click_model must be a name, got {type(click_model).__name__}")
        self.method = method
        self.click_model = click_model
        self.n_grades = n_grades
        self.k = k
        self._model = self._build()

    def _build(self) -> Any:
        name = self.click_model
        try:
            if name.startswith("pbm-"):
                return position_based_model(name[4:], n_grades=self.n_grades)
            return cascade_model(name, n_grades=self.n_grades)
        except (ValueError, KeyError) as exc:
            raise ValueError(f"click_model {name!r} with n_grades={self.n_grades}: {exc}") from exc

    @classmethod
    def _test_params(cls) -> Iterator[dict[str, Any]]:
        yield {"click_model": "navigational", "k": 3}
        yield {"method": "probabilistic", "click_model": "informational", "k": 4}

    def observe(
        self, orders: Orders, relevance: NDArray[Any], *, rngs: RunGenerators | None = None
    ) -> DuelFeedback:
        """Each run's interleaved comparison of ``orders[:, 0]`` (A) and ``orders[:, 1]`` (B)."""
        orders, rel = self._batch(orders, relevance)
        gens = self._rngs(rngs, orders.shape[0])
        grades = np.asarray(rel)
        if grades.min() < 0 or grades.max() >= self.n_grades:
            raise ValueError(
                f"relevance grades must lie in 0..{self.n_grades - 1} "
                f"(n_grades={self.n_grades}), got {grades.min()}..{grades.max()}"
            )
        out = compare(
            orders[:, 0],
            orders[:, 1],
            grades.astype(np.intp),
            self._model,
            method=self.method,
            k=int(self.k),
            rng=list(gens),
        )
        return DuelFeedback(orders, np.asarray(out, dtype=np.int8))


# ---------------------------------------------------------------------------
# offline evaluation of linear rankers, and a LETOR duel loop that uses it


def offline_ndcg(
    weights: ArrayLike, dataset: Any, *, k: int = 10, per_query: bool = False, chunk: int = 256
) -> FloatArray:
    """NDCG@k of linear rankers on every query of a data set.

    Parameters
    ----------
    weights
        Linear scorers, shape (B, d) (or (d,)).
    dataset
        A :class:`~oltr.envs.letor.LetorDataset` with d features.
    k
        Cutoff (NDCG@k as in :func:`oltr.metrics.ndcg`; a query without a
        relevant document scores 1, the package's convention).
    per_query
        Return the (B, n_queries) values instead of their mean over queries.
    chunk
        Queries scored at once (memory only).

    Returns
    -------
    Mean NDCG@k per ranker, shape (B,), or per query, (B, n_queries).
    """
    w = np.atleast_2d(np.asarray(weights, dtype=np.float64))
    if w.ndim != 2 or w.shape[1] != dataset.n_features:
        raise ValueError(f"weights must have shape (B, {dataset.n_features}), got {w.shape}")
    vals = []
    for lo in range(0, dataset.n_queries, chunk):
        x, rel, mask = dataset.padded(np.arange(lo, min(lo + chunk, dataset.n_queries)))
        scores = np.einsum("qmd,bd->bqm", x, w)
        scores = np.where(mask[None], scores, -np.inf)  # padding sorts last
        order = np.argsort(-scores, axis=-1, kind="stable")
        vals.append(np.asarray(ndcg(rel[None], order, k=k, mask=mask[None])))
    per_q = np.concatenate(vals, axis=1)
    return per_q if per_query else per_q.mean(axis=1)


def run_letor_duels(
    *,
    env: Any,
    feedback: FeedbackModel,
    learner: str = "dbgd",
    learner_params: Mapping[str, Any] | None = None,
    reps: Sequence[int] = (0,),
    seed: int = 0,
    horizon: int,
    checkpoints: Sequence[int],
    eval_sets: Mapping[str, Any] | None = None,
    k: int = 10,
    env_name: str = "letor-stream-v1",
    online: bool = True,
) -> pd.DataFrame:
    """The runner's protocol on a query stream, plus offline NDCG@k of w_t at checkpoints.

    Each round: the stream shows a query, the learner ranks it with w_t and w'_t
    (orders (B, 2, m)), ``feedback`` decides the duel, the learner learns from
    the outcome. Recorded per checkpoint and run: the online NDCG@k of the two
    shown lists (mean of both, eq. 2's "both points count"), its running
    average, and the NDCG@k of the current w_t on each evaluation set (mean
    over queries) — §5.2's "training NDCG", Table 3's test NDCG.

    Parameters
    ----------
    env
        A query-stream environment (e.g. :class:`oltr.envs.stream.LetorStreamEnv`),
        built without a feedback model; ``feedback`` is attached here.
    feedback
        A duel feedback model (web-search oracle or interleaved clicks).
    learner, learner_params
        Registry name and parameters of a learner with ``weights_`` (DBGD).
    reps, seed
        Repetitions and root seed (random streams keyed as in the runner).
    horizon, checkpoints
        Rounds (queries, i.e. impressions) and when to record.
    eval_sets
        Name -> :class:`~oltr.envs.letor.LetorDataset` to evaluate w_t on.
    k
        NDCG cutoff.
    env_name
        Key of the environment's random stream.
    online
        Also evaluate the shown lists every round (False: ``online`` and
        ``online:avg`` are NaN, and the loop runs about twice as fast).

    Returns
    -------
    DataFrame with columns ``rep``, ``t``, ``online``, ``online:avg`` and
    ``offline:<name>`` per evaluation set; ``attrs["weights"]`` holds the final
    w of every run, shape (B, d).
    """
    from oltr.registry import make_learner

    reps = tuple(int(r) for r in reps)
    cps = _checkpoints(checkpoints, horizon)
    env.feedback_model = feedback
    lrn = make_learner(
        learner,
        dict(learner_params or {}),
        n_runs=len(reps),
        rngs=RunGenerators.from_keys(seed, "learner", learner, reps=reps),
        horizon=horizon,
    )
    fb_rngs = RunGenerators.from_keys(seed, "feedback", reps=reps)
    env.reset(rng=child_rng(seed, "env", env_name))
    sets = dict(eval_sets or {})
    cum = np.zeros(len(reps))
    rows: dict[str, list[Any]] = {"rep": [], "t": [], "online": [], "online:avg": []}
    for name in sets:
        rows[f"offline:{name}"] = []
    ci = 0
    for t in range(1, horizon + 1):
        ctx = env.observe(t)
        orders = lrn.rank(ctx)
        fb = env.feedback(orders, fb_rngs)
        shown = (
            env.evaluate(orders, [f"ndcg@{k}"], validate=False)[f"ndcg@{k}"]
            if online
            else np.full(len(reps), np.nan)
        )
        lrn.update(ctx, orders, fb.restrict(lrn.requires))
        cum += shown
        if t == cps[ci]:
            offline = {
                name: offline_ndcg(lrn.weights_, ds, k=k)  # type: ignore[attr-defined]
                for name, ds in sets.items()
            }
            rows["rep"] += list(reps)
            rows["t"] += [t] * len(reps)
            rows["online"] += shown.tolist()
            rows["online:avg"] += (cum / t).tolist()
            for name, vals in offline.items():
                rows[f"offline:{name}"] += vals.tolist()
            ci += 1
            if ci == cps.size:
                break
    df = pd.DataFrame(rows).sort_values(["rep", "t"], kind="stable").reset_index(drop=True)
    df.attrs["weights"] = np.array(lrn.weights_)  # type: ignore[attr-defined]
    return df


# ---------------------------------------------------------------------------
# the synthetic reproductions (Table 1, Figure 2)

#: Sizes of the synthetic reproductions: T and the number of runs per cell.
SYNTHETIC_SIZES: Mapping[str, Mapping[str, int]] = {
    "small": {"horizon": 20_000, "reps": 3},
    "full": {"horizon": 1_000_000, "reps": 10},
}


def _size(size: str) -> Mapping[str, int]:
    check_choice(size, "size", tuple(SYNTHETIC_SIZES))
    return SYNTHETIC_SIZES[size]


def reproduce_table1(
    *, size: str = "small", seed: int = 2009, problems: Sequence[str] = tuple(TABLE1)
) -> pd.DataFrame:
    """Table 1 of Yue & Joachims (2009): DBGD's average regret Δ_T/T, P1–P5 × δ_L.

    Each problem runs its ``len(TABLE1_DELTA_L) × reps`` runs in one array loop
    (:func:`simulate_synthetic`); ``size="full"`` is the paper's scale as we
    read it — T = 10⁶ (the horizon at which the rows match), 10 runs per cell,
    d = 50, R = 10, w_1 = 1·√(5/d), "P2" the L1 reading of v2.

    Returns
    -------
    DataFrame, one row per (problem, δ_L): ``problem``, ``delta_l``, ``regret``
    (mean over runs), ``stderr``, ``paper`` (Table 1's value; NaN for problems
    outside the table).
    """
    sz = _size(size)
    rows = []
    for name in problems:
        reg = simulate_synthetic(
            name, delta_l=TABLE1_DELTA_L, reps=range(sz["reps"]), seed=seed, horizon=sz["horizon"]
        )[..., -1]
        paper = TABLE1.get(name, (np.nan,) * len(TABLE1_DELTA_L))
        for i, dl in enumerate(TABLE1_DELTA_L):
            se = reg[i].std(ddof=1) / np.sqrt(reg.shape[1]) if reg.shape[1] > 1 else np.nan
            rows.append(
                {
                    "problem": name,
                    "delta_l": dl,
                    "regret": float(reg[i].mean()),
                    "stderr": float(se),
                    "paper": float(paper[i]),
                }
            )
    return pd.DataFrame(rows)


def reproduce_figure2(
    *,
    size: str = "small",
    seed: int = 2009,
    problems: Sequence[str] = ("P1", "P5"),
    n_checkpoints: int = 30,
    delta_l: float = 1.0,
) -> pd.DataFrame:
    """Figure 2 of Yue & Joachims (2009): average regret vs t of DBGD, BGD1, BGD2 (δ_L = 1).

    Returns
    -------
    DataFrame with ``problem``, ``method``, ``t``, ``regret`` (mean Δ_t/t over
    runs) and ``stderr``, at ``n_checkpoints`` log-spaced rounds.
    """
    sz = _size(size)
    horizon = sz["horizon"]
    cps = np.unique(np.geomspace(10, horizon, n_checkpoints).astype(np.int64))
    rows = []
    for name in problems:
        for method in SYNTHETIC_METHODS:
            reg = simulate_synthetic(
                name,
                method=method,
                delta_l=[delta_l],
                reps=range(sz["reps"]),
                seed=seed,
                horizon=horizon,
                checkpoints=cps.tolist(),
            )[0]
            se = reg.std(axis=0, ddof=1) / np.sqrt(reg.shape[0])
            for j, t in enumerate(cps):
                rows.append(
                    {
                        "problem": name,
                        "method": method,
                        "t": int(t),
                        "regret": float(reg[:, j].mean()),
                        "stderr": float(se[j]),
                    }
                )
    return pd.DataFrame(rows)
