"""Tests of full-information FTPL and RTop-1F (Chaudhuri & Tewari 2015, Algorithm 1)."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from oltr.experiments.runner import RunSetSpec, run_set
from oltr.feedback import FullFeedback, TopKFeedback
from oltr.learners.ftpl import FullInformationFTPL, ftpl_epsilon, kv_constants
from oltr.learners.rtop1f import RTop1F, draw_exploration, exploration_estimate, rtop1f_schedule
from oltr.permutations import all_orders
from oltr.types import Context, RunGenerators

ALPHA = 1e-3  # per statistical test; fixed seeds make every test deterministic


# ---------------------------------------------------------------------------
# schedules: hand-computed values of Theorems 7, 9, 10


def test_kv_constants_by_hand() -> None:
    assert kv_constants("sumloss", 10) == (100.0, 100.0, 10.0)
    assert kv_constants("pairwise", 3) == (9.0, 9.0, 3.0)
    assert kv_constants("dcg", 10, max_grade=3) == (10.0, 70.0, 70.0)  # 2^3 - 1 = 7
    assert kv_constants("precision@3", 10) == (3.0, 3.0, 10.0)


@pytest.mark.parametrize(
    ("measure", "max_grade", "eps2_inv"),
    [
        ("sumloss", 1, 10 * 215),  # Thm 7: ε = sqrt(1/(mK))
        ("pairwise", 1, 10 * 215),
        ("dcg", 1, 10 * 215),  # Thm 9, binary: (2^1 - 1)^2 = 1
        ("dcg", 2, 9 * 10 * 215),  # Thm 9: ε = sqrt(1/((2^n - 1)^2 m K)), n = 2
        ("precision@3", 1, 10 * 215),  # Thm 10: ε = sqrt(1/(mK))
    ],
)
def test_rtop1f_schedule_m10_t10000(measure: str, max_grade: int, eps2_inv: int) -> None:
    # K = m^(-1/3) T^(2/3) = 10^(-1/3) * 10^(8/3) = 10^(7/3) = 215.44 -> 215
    k_blocks, eps = rtop1f_schedule(measure, 10, 10_000, max_grade)
    assert k_blocks == 215
    assert eps == pytest.approx(1 / math.sqrt(eps2_inv), rel=1e-12)


def test_rtop1f_schedule_exact_cube() -> None:
    assert rtop1f_schedule("dcg", 8, 8000) == (200, pytest.approx(0.025))  # 0.5 * 400
    assert rtop1f_schedule("sumloss", 27, 27_000) == (300, pytest.approx((27 * 300) ** -0.5))


def test_topk_schedule_uses_fewer_exploration_rounds() -> None:
    # e = ceil(10/3) = 4; K = (DA/R)^(1/3) (T/e)^(2/3) = (10 * 2000^2)^(1/3) = (4e7)^(1/3);
    # 341^3 = 39 651 821 < 4e7 < 342^3 = 40 001 688
    assert rtop1f_schedule("sumloss", 10, 8000, top_k=3)[0] == 341


def test_ftpl_epsilon_by_hand() -> None:
    assert ftpl_epsilon("sumloss", 10, 1000) == pytest.approx(0.01)
    assert ftpl_epsilon("dcg", 5, 100, max_grade=3) == pytest.approx((49 * 5 * 100) ** -0.5)
    assert ftpl_epsilon("precision@2", 4, 25) == pytest.approx(0.1)


# ---------------------------------------------------------------------------
# FTPL: argmin by sorting against all m! orders, and the perturbation law


def _full(orders: np.ndarray, rel: np.ndarray) -> FullFeedback:
    return FullFeedback(orders, np.broadcast_to(rel, orders.shape).copy())


@pytest.mark.parametrize("measure", ["sumloss", "dcg", "precision@2"])
def test_ftpl_sort_is_the_brute_force_optimum(measure: str) -> None:
    rng = np.random.default_rng(11)
    orders_all = all_orders(5)
    ranks_all = np.argsort(orders_all, axis=1)  # σ(i): position (0-based) of item i
    for _ in range(20):
        lrn = FullInformationFTPL(measure=measure, epsilon=1e12, rng=1)  # p <= 1e-12
        ctx = Context(t=1, n_items=5)
        rel = rng.integers(0, 4, size=5)
        orders = lrn.rank(ctx)
        lrn.update(ctx, orders, _full(orders, rel))
        y = lrn.scores_[0]
        chosen = lrn.rank(Context(t=2, n_items=5))[0]
        rank_of = np.argsort(chosen)
        if measure == "sumloss":  # argmin σ·y with σ(i) in 1..m
            values = (ranks_all + 1) @ y
            assert (rank_of + 1) @ y == pytest.approx(values.min())
            assert np.allclose(y, rel)  # g = identity
        elif measure == "dcg":  # argmax Σ y_i / log2(1 + σ(i))
            values = (1 / np.log2(ranks_all + 2)) @ y
            assert (1 / np.log2(rank_of + 2)) @ y == pytest.approx(values.max())
            assert np.allclose(y, 2.0**rel - 1)  # g(r) = 2^r - 1 (§14.1.2)
        else:  # argmax Σ 1(σ(i) <= 2) y_i
            values = (ranks_all < 2) @ y
            assert (rank_of < 2) @ y == pytest.approx(values.max())


def test_ftpl_perturbation_is_uniform_on_0_to_inverse_epsilon() -> None:
    # S = (1, 0, 0), p ~ U[0, 1/ε]^3 with ε = 1/4: item 0 beats item 1 iff
    # 1 + p0 > p1, i.e. P = 1 - (1 - εd)^2 / 2 with d = 1: 1 - 0.75^2/2 = 0.71875.
    n = 3000
    lrn = FullInformationFTPL(measure="sumloss", epsilon=0.25, n_runs=n, rng=5)
    ctx = Context(t=1, n_items=3)
    orders = lrn.rank(ctx)
    lrn.update(ctx, orders, _full(orders, np.array([1, 0, 0])))
    ranks = np.argsort(lrn.rank(Context(t=2, n_items=3)), axis=1)
    wins01 = int((ranks[:, 0] < ranks[:, 1]).sum())
    assert stats.binomtest(wins01, n, 0.71875).pvalue > ALPHA
    # a misread scale is rejected: U[0, 1/(2ε)] gives 1 - 0.5^2/2 = 0.875,
    # U[0, 2/ε] gives 1 - (7/8)^2/2 = 0.6171875
    assert stats.binomtest(wins01, n, 0.875).pvalue < ALPHA
    assert stats.binomtest(wins01, n, 0.6171875).pvalue < ALPHA
    wins12 = int((ranks[:, 1] < ranks[:, 2]).sum())  # equal scores: a fair coin
    assert stats.binomtest(wins12, n, 0.5).pvalue > ALPHA


def test_ftpl_with_zero_scores_is_uniform_over_orders() -> None:
    n = 6000
    orders = FullInformationFTPL(measure="dcg", horizon=10, n_runs=n, rng=2).rank(
        Context(t=1, n_items=3)
    )
    codes = orders[:, 0] * 9 + orders[:, 1] * 3 + orders[:, 2]
    _, counts = np.unique(codes, return_counts=True)
    assert counts.size == 6
    assert stats.chisquare(counts).pvalue > ALPHA


# ---------------------------------------------------------------------------
# Lemma 8: the exploration estimate is unbiased for the block average


def _exact_mean(block: np.ndarray, top_k: int, g: object = None) -> list[Fraction]:
    """E[r̂] by enumerating every (ordered times, object order) draw, all equally likely."""
    n_rounds, m = block.shape
    e = -(-m // top_k)
    total = [Fraction(0)] * m
    count = 0
    for times in itertools.permutations(range(n_rounds), e):
        for perm in itertools.permutations(range(m)):
            groups = np.full(e * top_k, -1)
            groups[:m] = perm
            est = exploration_estimate(block, list(times), groups.reshape(e, top_k), g)
            total = [
                a + Fraction(float(x)).limit_denominator(10**9)
                for a, x in zip(total, est, strict=True)
            ]
            count += 1
    return [t / count for t in total]


@pytest.mark.parametrize("top_k", [1, 2])
def test_lemma8_exact_enumeration(top_k: int) -> None:
    block = np.array([[1, 0, 2], [0, 0, 1], [1, 1, 0], [0, 1, 2]])
    mean = _exact_mean(block, top_k)
    assert mean == [Fraction(2, 4), Fraction(2, 4), Fraction(5, 4)]  # column sums / 4


def test_lemma8_exact_with_dcg_gain() -> None:
    block = np.array([[2, 0], [0, 1], [1, 3]])
    mean = _exact_mean(block, 1, lambda r: 2.0 ** np.asarray(r) - 1)
    assert mean == [Fraction(3 + 0 + 1, 3), Fraction(0 + 1 + 7, 3)]


def test_draw_exploration_is_uniform_over_assignments() -> None:
    # L = 4, m = 2, top_k = 1: the pair (time of object 0, time of object 1) is uniform
    # over the 12 ordered pairs of distinct offsets.
    rng = np.random.default_rng(3)
    counts: dict[tuple[int, int], int] = {}
    for _ in range(6000):
        times, groups = draw_exploration(rng, 4, 2)
        when = {int(groups[g, 0]): int(times[g]) for g in range(2)}
        key = (when[0], when[1])
        counts[key] = counts.get(key, 0) + 1
    assert len(counts) == 12 and all(a != b for a, b in counts)
    assert stats.chisquare(list(counts.values())).pvalue > ALPHA


def _play_block(lrn: RTop1F, block: np.ndarray, k: int = 1, start: int = 1) -> list[np.ndarray]:
    shown = []
    for t, rel in enumerate(block, start=start):
        ctx = Context(t=t, n_items=block.shape[1])
        orders = lrn.rank(ctx)
        shown.append(orders.copy())
        lrn.update(ctx, orders, TopKFeedback(orders, rel[orders[:, :k]]))
    return shown


@pytest.mark.parametrize(("explore", "top_k"), [("front", 1), ("random", 1), ("front", 2)])
def test_learner_estimate_is_lemma8_on_its_own_draws(explore: str, top_k: int) -> None:
    rng = np.random.default_rng(0)
    block = rng.integers(0, 3, size=(10, 5))
    lrn = RTop1F(
        measure="dcg",
        horizon=40,
        n_blocks=4,
        max_grade=2,
        explore=explore,
        top_k=top_k,
        n_runs=3,
        rng=7,
    )
    _play_block(lrn, block, k=top_k)
    twins = RunGenerators.from_rng(7, 3)  # the learner's first draws are the block's draws
    for b in range(3):
        times, groups = draw_exploration(twins[b], 10, 5, top_k)
        want = exploration_estimate(block, times, groups, lambda r: 2.0**r - 1)
        assert np.array_equal(lrn.scores_[b], want)


def test_learner_estimate_is_unbiased_statistically() -> None:
    # 3000 runs play one block of 8 rounds on the same sequence; the mean estimate must
    # match the block average of g(r) (z-test per item, Bonferroni over 4 items).
    rng = np.random.default_rng(1)
    block = rng.integers(0, 2, size=(8, 4))
    n = 3000
    lrn = RTop1F(measure="sumloss", horizon=16, n_blocks=2, n_runs=n, rng=9)
    _play_block(lrn, block)
    est = lrn.scores_
    truth = block.mean(axis=0)
    z = (est.mean(axis=0) - truth) / np.sqrt(truth * (1 - truth) / n)
    assert (2 * stats.norm.sf(np.abs(z)) > ALPHA / 4).all()


def test_exploration_rounds_put_each_object_on_top_once_per_block() -> None:
    lrn = RTop1F(
        measure="sumloss", horizon=30, n_blocks=3, explore="front", epsilon=1e9, n_runs=2, rng=4
    )
    block = np.array([[3, 0, 2, 1]] * 10)
    _play_block(lrn, block)  # block 1: S becomes (3, 0, 2, 1); perturbations <= 1e-9
    shown = _play_block(lrn, block, start=11)
    base = [0, 2, 3, 1]  # decreasing S
    for b in range(2):
        tops = []
        for orders in shown:
            row = orders[b].tolist()
            if row[0] != 0 or row != base:
                tops.append(row[0])
                # line 11, "front": the FTPL ranking with the explored object moved to the top
                assert row[1:] == [i for i in base if i != row[0]]
        # every object explored once; exploring object 0 shows the base ranking itself
        assert sorted(tops) in ([1, 2, 3], [0, 1, 2, 3])


# ---------------------------------------------------------------------------
# learning on the §10 simulation


def _avg_regret(learner: str, feedback: str, horizon: int) -> tuple[float, float]:
    spec = RunSetSpec(
        env="ct15-sim-v1",
        env_params={"n_items": 8},
        feedback=feedback,
        feedback_params={"k": 1} if feedback == "top-k" else {},
        learner=learner,
        learner_params={},
        reps=(0, 1, 2),
        seed=2015,
        horizon=horizon,
        measures=("dcg",),
        checkpoints=(horizon // 10, horizon),
    )
    df = run_set(spec)
    mean = df.groupby("t")["dcg:regret"].mean()
    return mean[horizon // 10] / (horizon // 10), mean[horizon] / horizon


def test_learning_sanity_on_ct15_simulation() -> None:
    top1_early, top1_late = _avg_regret("rtop1f", "top-k", 3000)
    full_early, full_late = _avg_regret("ftpl", "full", 3000)
    rand_early, rand_late = _avg_regret("random", "top-k", 3000)
    assert top1_late < 0.7 * top1_early  # RTop-1F's average regret falls
    assert full_late < 0.5 * full_early  # full information falls faster ...
    assert full_late / full_early < top1_late / top1_early
    assert full_late < 0.5 * top1_late  # ... and lower
    assert top1_late < 0.5 * rand_late  # and both learn something


# ---------------------------------------------------------------------------
# invalid input


@pytest.mark.parametrize(
    ("cls", "kwargs", "match"),
    [
        (RTop1F, {"measure": "ndcg"}, "no sublinear regret"),
        (RTop1F, {"measure": "precision@0"}, "measure must be"),
        (RTop1F, {"explore": "sideways"}, "explore must be one of"),
        (RTop1F, {"top_k": 0}, "top_k must be >= 1"),
        (RTop1F, {"horizon": 10, "n_blocks": 11}, "n_blocks must be <= horizon"),
        (RTop1F, {"epsilon": 0.0}, "epsilon must be > 0"),
        (FullInformationFTPL, {"max_grade": 0}, "max_grade must be >= 1"),
        (FullInformationFTPL, {"horizon": 0}, "horizon must be >= 1"),
    ],
)
def test_invalid_parameters(cls: type, kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        cls(**kwargs)


def test_rtop1f_needs_room_for_exploration_and_a_horizon_for_n_blocks() -> None:
    with pytest.raises(ValueError, match="n_blocks=K splits a known horizon"):
        RTop1F(n_blocks=3)
    with pytest.raises(ValueError, match="cannot hold the 10 exploration rounds"):
        RTop1F(horizon=50).rank(Context(t=1, n_items=10))  # T < m^2: L = 5 < m
    lrn = RTop1F(horizon=100)
    lrn.rank(Context(t=1, n_items=4))
    with pytest.raises(ValueError, match="has 4 items"):
        lrn.rank(Context(t=2, n_items=5))


def test_rtop1f_declares_top_k_feedback() -> None:
    assert RTop1F(top_k=3).requires.k == 3
    assert FullInformationFTPL().requires.kind == "full"


# ---------------------------------------------------------------------------
# reproductions (small sizes) and the across-horizon study


def test_ct15_fig1_small_one_sequence_and_falling_regret() -> None:
    from oltr.reproductions.reproduce import load_reproduction

    exp = load_reproduction("ct15-fig1", size="small")
    (planned,) = exp.run_sets
    assert planned.spec.learner == "rtop1f" and planned.spec.env == "ct15-sim-v1"
    df = run_set(planned.spec)
    # one relevance sequence for all runs: the comparator (cum + regret) is the same per t
    comparator = (df["dcg:cum"] + df["dcg:regret"]).to_numpy().reshape(len(planned.spec.reps), -1)
    assert np.allclose(comparator, comparator[0])
    # ... while the runs themselves differ (learner seeds vary)
    cum = df["dcg:cum"].to_numpy().reshape(len(planned.spec.reps), -1)
    assert not np.allclose(cum, cum[0])
    mean = df.groupby("t")["dcg:regret"].mean()
    t = mean.index.to_numpy()
    early = mean[t[t >= 150][0]] / t[t >= 150][0]
    assert mean.iloc[-1] / t[-1] < 0.7 * early


def test_ct15_fig2_small_full_information_is_better() -> None:
    from oltr.reproductions.horizons import tail_exponent
    from oltr.reproductions.reproduce import load_reproduction

    exp = load_reproduction("ct15-fig2", size="small")
    traces = {p.spec.learner: run_set(p.spec) for p in exp.run_sets}
    assert set(traces) == {"rtop1f", "ftpl"}
    final = {k: v.groupby("t")["dcg:regret"].mean().iloc[-1] for k, v in traces.items()}
    assert final["ftpl"] < 0.5 * final["rtop1f"]
    slope_top1, _ = tail_exponent(traces["rtop1f"], t_min=200)
    slope_full, _ = tail_exponent(traces["ftpl"], t_min=200)
    assert slope_full < slope_top1 < 1.0


def test_horizon_exponents_recover_a_power_law() -> None:
    import pandas as pd

    from oltr.reproductions.horizons import horizon_exponents

    rows = [
        {"label": lab, "T": t, "rep": r, "regret": c * t**a * (1 + 0.01 * (r - 1))}
        for lab, c, a in (("a", 3.0, 2 / 3), ("b", 0.5, 0.5))
        for t in (1000, 10_000, 100_000)
        for r in range(3)
    ]
    fits = horizon_exponents(pd.DataFrame(rows))
    assert fits.loc["a", "exponent"] == pytest.approx(2 / 3)
    assert fits.loc["b", "exponent"] == pytest.approx(0.5)


def test_final_regrets_runs_each_horizon_with_its_own_schedule() -> None:
    from oltr.reproductions.horizons import Setting, final_regrets

    df = final_regrets(
        {"r": Setting("rtop1f", "top-k", {"k": 1})},
        [200, 400],
        env_params={"n_items": 4},
        reps=2,
        seed=1,
    )
    assert df.shape == (4, 4) and sorted(df["T"].unique()) == [200, 400]
    assert (df["regret"] > 0).all()


def _play(lrn: RTop1F, relevance: np.ndarray, rounds: int) -> np.ndarray:
    """Orders of ``rounds`` rounds of ``lrn`` against fixed relevance, top-k labels revealed."""
    shown = []
    for t in range(1, rounds + 1):
        ctx = Context(t=t, n_items=relevance.size)
        orders = lrn.rank(ctx)
        k = int(lrn.top_k)
        lrn.update(ctx, orders, TopKFeedback(orders, relevance[orders[:, :k]]))
        shown.append(orders.copy())
    return np.stack(shown)


def test_rtop1f_without_horizon_is_algorithm_1_restarted_on_doubling_epochs() -> None:
    # Anytime by the doubling trick: the first epoch is the shortest power of two whose
    # blocks hold the m explorations, and every epoch is a fresh Algorithm 1 for its length.
    # So over its first epoch the anytime learner plays exactly what a learner told that
    # horizon plays (same generator draws), and each epoch's (K, ε) is the theorems'.
    m, relevance = 5, np.array([1.0, 0.0, 1.0, 0.0, 0.0])
    anytime = RTop1F(n_runs=2, rng=3)
    anytime.rank(Context(t=1, n_items=m))
    first_epoch = anytime._epoch[1]
    k_first, _ = rtop1f_schedule("dcg", m, first_epoch)
    assert (
        first_epoch // k_first >= m
        and (first_epoch // 2) // rtop1f_schedule("dcg", m, first_epoch // 2)[0] < m
    )  # the shortest such power of two
    known = _play(RTop1F(horizon=first_epoch, n_runs=2, rng=3), relevance, first_epoch)
    fresh = _play(RTop1F(n_runs=2, rng=3), relevance, first_epoch)
    np.testing.assert_array_equal(fresh, known)
    lrn = RTop1F(n_runs=2, rng=3)
    _play(lrn, relevance, 7 * first_epoch + 1)  # into the fourth epoch (T0, 2T0, 4T0, 8T0)
    assert lrn._epoch == (7 * first_epoch + 1, 15 * first_epoch)
    k_blocks, length, eps = lrn.schedule_
    assert (k_blocks, eps) == rtop1f_schedule("dcg", m, 8 * first_epoch)
    assert length == 8 * first_epoch // k_blocks


def test_rtop1f_without_horizon_learns() -> None:
    # Two relevant objects of six; after 20,000 rounds the anytime learner must put a
    # relevant object on top far more often than 1/3 (random). Over the last 2,000 rounds
    # of 8 runs, a binomial test against 1/3 at alpha = 1e-6.
    relevance = np.array([0.0, 1.0, 0.0, 0.0, 1.0, 0.0])
    shown = _play(RTop1F(n_runs=8, rng=11), relevance, 20_000)
    hits = relevance[shown[-2000:, :, 0]].sum()
    assert stats.binomtest(int(hits), 16_000, 1 / 3, alternative="greater").pvalue < 1e-6
    assert hits / 16_000 > 0.8


@pytest.mark.parametrize("m", [1, 2, 10, 16, 17, 40, 256])
@pytest.mark.parametrize("divide", [False, True])
def test_fused_orders_are_the_stable_sort_of_the_array_keys(m: int, divide: bool) -> None:
    """The compiled round (keys, explored item on top, sort) equals the array form bit for bit.

    Keys are drawn from a coarse grid so that ties occur: a stable sort has one
    result, which the fused kernel must give too, whichever sort it uses.
    """
    from oltr.learners.ftpl import _ascending, _perturbed_orders

    gen = np.random.default_rng(m)
    n_runs = 7
    u = gen.integers(0, 4, (n_runs, m)) / 4.0
    scores = gen.integers(0, 3, (n_runs, m)).astype(float)
    rows = np.array([1, 4, 5], dtype=np.intp)
    items = gen.integers(0, m, rows.size).astype(np.intp)
    for random_rest in (False, True):
        scale = 0.3 if divide else -1 / 0.3
        keys = -(scores + u / scale) if divide else u * scale - scores
        if random_rest:
            keys[rows] = -u[rows]
        keys[rows, items] = -np.inf
        out = np.empty((n_runs, m), dtype=np.intp)
        _perturbed_orders(u, scale, scores, divide, rows, items, random_rest, out)
        np.testing.assert_array_equal(out, _ascending(keys))


def test_perturbations_restore_a_run_major_snapshot() -> None:
    """A snapshot of the earlier (B, c, m) chunk layout continues with the same draws."""
    from oltr.learners.ftpl import _Perturbations
    from oltr.types import RunGenerators

    fresh = _Perturbations(RunGenerators.from_rng(3, 4), 5)
    expected = [fresh.next() for _ in range(6)]
    old = _Perturbations(RunGenerators.from_rng(3, 4), 5)
    for _ in range(4):  # rounds 1-3 fill chunks of 1 and 2; round 4 starts a chunk of 4
        old.next()
    state = dict(vars(old))
    state["buf"] = np.ascontiguousarray(state.pop("rounds").transpose(1, 0, 2))
    restored = object.__new__(_Perturbations)
    vars(restored).update(state)
    for want in expected[4:]:
        np.testing.assert_array_equal(restored.next(), want)
