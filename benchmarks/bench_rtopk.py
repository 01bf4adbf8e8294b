"""RTop-kF, ListNet and PDGD throughput against plain numpy loops and the matmul ceiling.

For list shapes (m, d) = (24, 700), (120, 136), (40, 46) — Yahoo-, MSLR- and
MQ2008-like — and B = 1 and 64 runs, times these on one core (BLAS limited to
one thread):

* ``batched``: :class:`oltr.learners.rtopk.RTopKF` advancing all B runs per
  round through the calls :func:`oltr.experiments.runner.run_set` makes each
  round: ``trusted_rank``, the feedback model's ``observe`` (the feedback
  object a run's environment builds) and ``restrict``, ``trusted_update``;
* ``loop``: the same algorithm written as a plain numpy loop over runs inside
  each round (``s = X w_b``, argsort, coin, estimator, ``w_b -= η zᵀX``, projection);
* ``numpy``: the same algorithm as plain batched numpy (``S = W Xᵀ`` and
  ``Z X`` as BLAS products over the batch, one argsort, one projection) — what
  the learner would be without its batch-independence guarantee;
* ``ceiling``: this machine's single-core dgemm rate divided by the ``4 m d``
  flops a run-round needs (``2 m d`` for the scores, ``2 m d`` for ``zᵀX``);
* ``float32``: the batched learner with ``dtype="float32"`` (features cast once
  per round, float32 products), and its ratio to float64.

Online ListNet (full feedback, the same products plus a softmax) is timed the
same way against its own per-run loop (and, in a table of its own, against
batched numpy taking the grades' softmax once for the whole batch), and PDGD
(clicks on the top 10 of a Plackett–Luce sample) against a plain per-run numpy
PDGD (:func:`pdgd_coef`) and a batched one. ``run_set`` times the whole runner
(a stream over the same lists, one ``ndcg@10`` per round) in µs per round,
beside the learner's part.

Rounds draw from a pool of 64 random lists (features uniform in [0, 1], grades
0..4), so the data stay in cache as they would for a small query set. Rates are
per CPU second of this process, the fastest of 25 blocks of 20 ms, with the
columns of a row timed in turns (:func:`rates`), so that other work on a shared
machine neither counts nor skews a row's ratios.

Usage: ``python benchmarks/bench_rtopk.py`` (or ``python benchmarks/run.py rtopk``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
from numpy.typing import NDArray
from threadpoolctl import threadpool_limits

from oltr.clicks import StopRuleCascade, make_click_model
from oltr.data.dataset import LetorDataset
from oltr.experiments.runner import RunSetSpec, run_set
from oltr.feedback import ClickFeedbackModel, FullFeedbackModel, TopKFeedbackModel
from oltr.learners.listnet import OnlineListNet
from oltr.learners.pdgd import PDGD
from oltr.learners.rtopk import RTopKF
from oltr.types import Context, RunGenerators

SHAPES = ((24, 700), (120, 136), (40, 46))
RUNS = (1, 64)
SURROGATES = ("squared", "ranksvm", "listnet")
POOL = 64
ETA, GAMMA = 1e-3, 0.05
BLOCK_S = 0.02  # CPU seconds per timed block of rounds (after a calibration block)
BLOCKS = 25  # blocks per figure, the fastest kept
REPEATS = 3  # timings of a whole run_set, the fastest kept
#: Builds a fresh learner and returns its per-round step.
Maker = Callable[[], Callable[[int], None]]


def pool(m: int, d: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """POOL lists: read-only features (m, d) uniform in [0, 1] and grades 0..4 (as float64)."""
    rng = np.random.default_rng(0)
    feats, rels = [], []
    for _ in range(POOL):
        x = rng.random((m, d))
        x.flags.writeable = False
        feats.append(x)
        rels.append(rng.integers(0, 5, m).astype(np.float64))
    return feats, rels


def timed(step: Callable[[int], object], n_rounds: int, first: int = 0) -> float:
    """CPU seconds of this process for rounds ``first .. first + n_rounds − 1``."""
    start = time.process_time()
    for t in range(first, first + n_rounds):
        step(t)
    return time.process_time() - start


def rates(makers: list[Maker], n_runs: int) -> list[float]:
    """Run-rounds per CPU second of each maker's step: the fastest of BLOCKS blocks of BLOCK_S.

    CPU time of this process, not wall time, and the fastest block, not the mean:
    on a shared machine other work only ever slows a timing, and wall time would
    also count the time this process waits for a core. The steps take turns block
    by block, so the figures of one row (and their ratios) see the same machine.
    """
    steps = [make() for make in makers]
    sizes = []
    for step in steps:
        timed(step, 50)  # warm-up: first calls (allocator, dispatch caches) run slow
        sizes.append(max(5, int(BLOCK_S / (timed(step, 20, 50) / 20))))
    first, best = 70, [float("inf")] * len(steps)
    for _ in range(BLOCKS):
        for j, (step, n_rounds) in enumerate(zip(steps, sizes, strict=True)):
            best[j] = min(best[j], timed(step, n_rounds, first))
        first += max(sizes)
    return [n * n_runs / b for n, b in zip(sizes, best, strict=True)]


def rate(make_step: Maker, n_runs: int) -> float:
    """:func:`rates` of one step."""
    return rates([make_step], n_runs)[0]


def batched_step(surrogate: str, n_runs: int, m: int, d: int, dtype: str = "float64") -> Maker:
    """The learner as the runner drives it each round (the environment's stream aside)."""
    feats, rels = pool(m, d)

    def make() -> Callable[[int], None]:
        if surrogate == "listnet":
            lrn: RTopKF | OnlineListNet = OnlineListNet(eta=ETA, n_runs=n_runs, rng=1, dtype=dtype)
            model: FullFeedbackModel | TopKFeedbackModel = FullFeedbackModel()
        else:
            lrn = RTopKF(
                surrogate=surrogate, eta=ETA, gamma=GAMMA, n_runs=n_runs, rng=1, dtype=dtype
            )
            model = TopKFeedbackModel(k=int(lrn.requires.k or 1))
        rank, update, required = lrn.trusted_rank, lrn.trusted_update, lrn.requires
        rngs = RunGenerators.from_rng(2, n_runs)

        def step(t: int) -> None:
            i = t % POOL
            ctx = Context(t=t + 1, n_items=m, features=feats[i])
            orders = rank(ctx)
            feedback: Any = model.observe(orders, rels[i], rngs=rngs).restrict(required)
            update(ctx, orders, feedback)  # the kind the learner declared

        return step

    return make


def loop_step(surrogate: str, n_runs: int, m: int, d: int) -> Maker:
    """The same algorithm, one run at a time, in plain numpy."""
    feats, rels = pool(m, d)
    pair_floor = GAMMA / (m * (m - 1) / 2)

    def make() -> Callable[[int], None]:
        w = np.zeros((n_runs, d))
        gens = [np.random.default_rng(b) for b in range(n_runs)]

        def step(t: int) -> None:
            i = t % POOL
            x, r = feats[i], rels[i]
            for b in range(n_runs):
                s = x @ w[b]
                own = np.argsort(-s, kind="stable")
                if surrogate == "listnet":
                    p_s, p_r = np.exp(s - s.max()), np.exp(r - r.max())
                    w[b] -= ETA * ((p_s / p_s.sum() - p_r / p_r.sum()) @ x)
                    norm = np.sqrt(w[b] @ w[b])
                    if norm > 1.0:
                        w[b] /= norm
                    continue
                order = gens[b].permutation(m) if gens[b].random() < GAMMA else own
                z = np.zeros(m)
                if surrogate == "squared":
                    top = order[0]
                    p = (1 - GAMMA) * (top == own[0]) + GAMMA / m
                    z = 2.0 * s
                    z[top] -= 2.0 * r[top] / p
                else:
                    a, c = order[0], order[1]
                    own_pair = {a, c} == {own[0], own[1]}
                    p = (1 - GAMMA) * own_pair + pair_floor
                    sign = float((r[a] > r[c]) and (1 + s[c] > s[a])) - float(
                        (r[c] > r[a]) and (1 + s[a] > s[c])
                    )
                    z[c] += sign / p
                    z[a] -= sign / p
                w[b] -= ETA * (z @ x)
                norm = np.sqrt(w[b] @ w[b])
                if norm > 1.0:
                    w[b] /= norm

        return step

    return make


def numpy_step(surrogate: str, n_runs: int, m: int, d: int, shared_grades: bool = False) -> Maker:
    """The same algorithm as plain batched numpy: BLAS products over the whole batch.

    ListNet takes one grade row per run, as the learner gets them, or with
    ``shared_grades`` one softmax of the query's grades for every run (the
    learner finds rows that are all the same and does that too).
    """
    feats, rels = pool(m, d)
    pair_floor = GAMMA / (m * (m - 1) / 2)
    rows = np.arange(n_runs)

    def make() -> Callable[[int], None]:
        w = np.zeros((n_runs, d))
        gens = [np.random.default_rng(b) for b in range(n_runs)]

        def step(t: int) -> None:
            i = t % POOL
            x, r = feats[i], rels[i]
            s = w @ x.T
            own = np.argsort(-s, axis=1, kind="stable")
            if surrogate == "listnet":  # one grade row per run, as the learner gets them
                rel = r if shared_grades else np.tile(r, (n_runs, 1))
                p_s = np.exp(s - s.max(axis=1, keepdims=True))
                p_r = np.exp(rel - rel.max(axis=-1, keepdims=True))
                z = p_s / p_s.sum(axis=1, keepdims=True) - p_r / p_r.sum(axis=-1, keepdims=True)
            else:
                orders = own.copy()
                for b in np.flatnonzero(np.array([g.random() for g in gens]) < GAMMA):
                    orders[b] = gens[b].permutation(m)
                a = orders[:, 0]
                if surrogate == "squared":
                    p = (1 - GAMMA) * (a == own[:, 0]) + GAMMA / m
                    z = 2.0 * s
                    z[rows, a] -= 2.0 * r[a] / p
                else:
                    c = orders[:, 1]
                    own_pair = ((a == own[:, 0]) & (c == own[:, 1])) | (
                        (a == own[:, 1]) & (c == own[:, 0])
                    )
                    p = (1 - GAMMA) * own_pair + pair_floor
                    sa, sc = s[rows, a], s[rows, c]
                    sign = ((r[a] > r[c]) & (1 + sc > sa)).astype(float) - (
                        (r[c] > r[a]) & (1 + sa > sc)
                    )
                    z = np.zeros((n_runs, m))
                    z[rows, c] += sign / p
                    z[rows, a] -= sign / p
            w[:] -= ETA * (z @ x)
            norms = np.sqrt(np.einsum("bd,bd->b", w, w))
            w[:] /= np.maximum(norms, 1.0)[:, None]

        return step

    return make


PAGE, PDGD_ETA = 10, 0.1  # PDGD's result page and step (Oosterhuis & de Rijke 2018 §6)
PDGD_CLICKS: dict[str, Any] = {"click_model": "informational", "n_grades": 5, "k": PAGE}


def pdgd_step(n_runs: int, m: int, d: int) -> Maker:
    """PDGD as the runner drives it: trusted verbs, the click model's feedback object."""
    feats, rels = pool(m, d)
    grades = [r.astype(np.intp) for r in rels]

    def make() -> Callable[[int], None]:
        lrn = PDGD(eta=PDGD_ETA, n_runs=n_runs, rng=1)
        model = ClickFeedbackModel(**PDGD_CLICKS)
        rank, update, required = lrn.trusted_rank, lrn.trusted_update, lrn.requires
        rngs = RunGenerators.from_rng(2, n_runs)

        def step(t: int) -> None:
            i = t % POOL
            ctx = Context(t=t + 1, n_items=m, features=feats[i])
            orders = rank(ctx)
            feedback: Any = model.observe(orders, grades[i], rngs=rngs).restrict(required)
            update(ctx, orders, feedback)  # the kind the learner declared

        return step

    return make


def pdgd_coef(s: np.ndarray, order: np.ndarray, clicks: np.ndarray) -> np.ndarray:
    """PDGD's ∇f in score space (eqs. 8–10), in plain numpy over the pairs of one list."""
    n, m = clicks.size, s.size
    e = np.exp(s[order] - s.max())  # by position
    denom = np.cumsum(e[::-1])[::-1]  # the PL denominators D_t
    last = int(np.flatnonzero(clicks)[-1])
    stop = min(last + 1, n - 1)
    ci, uj = np.nonzero(clicks[:, None] & ~clicks[None, : stop + 1])
    lo, hi = np.minimum(ci, uj), np.maximum(ci, uj)
    pos = np.arange(n)
    inside = (pos > lo[:, None]) & (pos <= hi[:, None])
    with np.errstate(invalid="ignore", divide="ignore"):
        terms = np.log((denom[:n] - e[hi][:, None] + e[lo][:, None]) / denom[:n])
    rho = 1.0 / (1.0 + np.exp(np.where(inside, terms, 0.0).sum(axis=1)))
    z = np.exp(-np.abs(s[order[ci]] - s[order[uj]]))
    weight = rho * z / ((1.0 + z) * (1.0 + z))
    coef = np.zeros(m)
    np.add.at(coef, order[ci], weight)
    np.subtract.at(coef, order[uj], weight)
    return coef


def pdgd_loop_step(n_runs: int, m: int, d: int, batched: bool = False) -> Maker:
    """Plain numpy PDGD: Plackett–Luce sample, cascade clicks on the page, pairwise step.

    Per run (``batched=False``), or with the scores and the step as BLAS products
    over the batch and one sort of all runs (``batched=True``).
    """
    feats, rels = pool(m, d)
    grades = [r.astype(np.intp) for r in rels]
    clicker = make_click_model("informational", n_grades=5)
    assert isinstance(clicker, StopRuleCascade)
    click_p: NDArray[np.float64] = np.asarray(clicker.click_prob, dtype=np.float64)
    stop_p: NDArray[np.float64] = np.asarray(clicker.stop_prob, dtype=np.float64)
    n = min(PAGE, m)

    def clicks_of(
        shown: NDArray[np.intp], u: NDArray[np.float64], v: NDArray[np.float64]
    ) -> NDArray[Any]:  # bool
        click = u < click_p[shown]
        stop = (v < stop_p[shown]) & click
        return click & ~(np.cumsum(stop, axis=-1) - stop > 0)

    def make() -> Callable[[int], None]:
        w = np.zeros((n_runs, d))
        gens = [np.random.default_rng(b) for b in range(n_runs)]

        def per_run(t: int) -> None:
            x, g = feats[t % POOL], grades[t % POOL]
            for b in range(n_runs):
                s = x @ w[b]
                order = np.argsort(np.log(-np.log1p(-gens[b].random(m))) - s, kind="stable")
                clicks = clicks_of(g[order[:n]], gens[b].random(n), gens[b].random(n))
                if clicks.any():
                    w[b] += PDGD_ETA * (pdgd_coef(s, order, clicks) @ x)

        def whole_batch(t: int) -> None:
            x, g = feats[t % POOL], grades[t % POOL]
            s = w @ x.T
            u = np.stack([gen.random(m) for gen in gens])
            orders = np.argsort(np.log(-np.log1p(-u)) - s, axis=1, kind="stable")
            v = np.stack([gen.random((2, n)) for gen in gens])
            clicks = clicks_of(g[orders[:, :n]], v[:, 0], v[:, 1])
            coef = np.zeros((n_runs, m))
            for b in np.flatnonzero(clicks.any(axis=1)):
                coef[b] = pdgd_coef(s[b], orders[b], clicks[b])
            w[:] += PDGD_ETA * (coef @ x)

        return whole_batch if batched else per_run

    return make


def run_set_us(learner: str, n_runs: int, m: int, d: int, horizon: int) -> float:
    """µs per round of :func:`run_set` end to end over the pool (one ``ndcg@10`` per round)."""
    feats, rels = pool(m, d)
    data = LetorDataset(
        features=np.concatenate(feats),
        relevance=np.concatenate(rels).astype(np.int64),
        qids=np.arange(POOL, dtype=np.int64),
        offsets=np.arange(POOL + 1, dtype=np.int64) * m,
    )
    table: dict[str, tuple[str, dict[str, Any], dict[str, Any]]] = {
        "squared": ("top-k", {"k": 1}, {"surrogate": "squared", "eta": ETA, "gamma": GAMMA}),
        "listnet": ("full", {}, {"eta": ETA}),
        "pdgd": ("clicks", PDGD_CLICKS, {"eta": PDGD_ETA}),
    }
    feedback, fb_params, params = table[learner]
    spec = RunSetSpec(
        env="letor-stream-v1",
        env_params={"dataset": data},
        feedback=feedback,
        feedback_params=fb_params,
        learner="rtopk" if learner == "squared" else learner,
        learner_params=params,
        reps=tuple(range(n_runs)),
        seed=0,
        horizon=horizon,
        measures=("ndcg@10",),
        checkpoints=(horizon,),
    )
    run_set(replace(spec, horizon=20, checkpoints=(20,)))  # warm-up
    best = min(timed(lambda _: run_set(spec), 1) for _ in range(REPEATS))  # CPU seconds
    return best / horizon * 1e6


def matmul_flops() -> float:
    """Single-thread dgemm rate (flop/s), the best of ten rounds of 512×512 products."""
    a = np.random.default_rng(0).random((512, 512))
    b = a.T.copy()
    best = min(timed(lambda _: a @ b, 5) / 5 for _ in range(10))  # best of 10 (CPU time)
    return 2 * 512**3 / best


def main() -> None:
    with threadpool_limits(limits=1):
        flops = matmul_flops()
        print(
            f"one core, BLAS 1 thread: dgemm {flops / 1e9:.1f} GFLOP/s; "
            "rates in run-rounds per second (rounds x runs / s)"
        )
        print(
            f"{'learner':9} {'(m, d)':>10} {'B':>3} {'batched':>10} {'loop':>10} "
            f"{'numpy':>10} {'ceiling':>10} {'vs loop':>8} {'vs numpy':>8} {'of ceil':>8} "
            f"{'float32':>10} {'f32/f64':>8}"
        )
        for surrogate in (*SURROGATES, "pdgd"):
            for m, d in SHAPES:
                ceiling = flops / (4 * m * d)
                for n_runs in RUNS:
                    if surrogate == "pdgd":
                        fast, slow, plain = rates(
                            [
                                pdgd_step(n_runs, m, d),
                                pdgd_loop_step(n_runs, m, d),
                                pdgd_loop_step(n_runs, m, d, batched=True),
                            ],
                            n_runs,
                        )
                        single = f"{'-':>10} {'-':>8}"
                    else:
                        fast, slow, plain, f32 = rates(
                            [
                                batched_step(surrogate, n_runs, m, d),
                                loop_step(surrogate, n_runs, m, d),
                                numpy_step(surrogate, n_runs, m, d),
                                batched_step(surrogate, n_runs, m, d, "float32"),
                            ],
                            n_runs,
                        )
                        single = f"{f32:>10.0f} {f32 / fast:>7.2f}x"
                    print(
                        f"{surrogate:9} {f'({m}, {d})':>10} {n_runs:>3} {fast:>10.0f} "
                        f"{slow:>10.0f} {plain:>10.0f} {ceiling:>10.0f} {fast / slow:>7.2f}x "
                        f"{fast / plain:>7.2f}x {fast / ceiling:>7.0%} {single}",
                        flush=True,
                    )
        print("\nListNet against batched numpy taking one softmax of the grades for all runs:")
        print(f"{'(m, d)':>10} {'B':>3} {'batched':>10} {'numpy':>10} {'vs numpy':>8}")
        for m, d in SHAPES:
            n_runs = max(RUNS)
            fast, plain = rates(
                [
                    batched_step("listnet", n_runs, m, d),
                    numpy_step("listnet", n_runs, m, d, shared_grades=True),
                ],
                n_runs,
            )
            print(
                f"{f'({m}, {d})':>10} {n_runs:>3} {fast:>10.0f} {plain:>10.0f} "
                f"{fast / plain:>7.2f}x",
                flush=True,
            )
        print("\nrun_set end to end (stream over the same lists, ndcg@10 every round), µs/round:")
        print(f"{'learner':9} {'(m, d)':>10} {'B':>3} {'run_set':>9} {'learner':>9} {'rest':>9}")
        for name in ("squared", "listnet", "pdgd"):
            for m, d in SHAPES:
                for n_runs in RUNS:
                    whole = run_set_us(name, n_runs, m, d, 2000 if n_runs == 1 else 300)
                    maker = (
                        pdgd_step(n_runs, m, d)
                        if name == "pdgd"
                        else batched_step(name, n_runs, m, d)
                    )
                    part = n_runs / rate(maker, n_runs) * 1e6
                    print(
                        f"{name:9} {f'({m}, {d})':>10} {n_runs:>3} {whole:>9.1f} {part:>9.1f} "
                        f"{whole - part:>9.1f}",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
