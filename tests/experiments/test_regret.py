"""Regret helpers, growth exponents, checkpoints, and the best fixed order in hindsight."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from oltr.envs.base import hindsight_comparator
from oltr.experiments.regret import (
    average,
    cumulative,
    cumulative_regret,
    log_checkpoints,
    regret_exponent,
)
from oltr.metrics import get_measure

# ---------------------------------------------------------------------------
# cumulative values


def test_cumulative_and_average_by_hand() -> None:
    values = np.array([[1.0, 0.0, 2.0, 1.0], [0.5, 0.5, 0.5, 0.5]])
    assert cumulative(values).tolist() == [[1.0, 1.0, 3.0, 4.0], [0.5, 1.0, 1.5, 2.0]]
    assert average(values).tolist() == [[1.0, 0.5, 1.0, 1.0], [0.5, 0.5, 0.5, 0.5]]


def test_cumulative_regret_sign_convention() -> None:
    # positive = worse than the comparator, for gains and losses alike
    assert cumulative_regret([3.0], [5.0], kind="gain").tolist() == [2.0]
    assert cumulative_regret([7.0], [5.0], kind="loss").tolist() == [2.0]
    with pytest.raises(ValueError, match="kind must be 'gain' or 'loss'"):
        cumulative_regret([1.0], [1.0], kind="reward")  # type: ignore[arg-type]


# ---------------------------------------------------------------------------
# growth exponents


@pytest.mark.parametrize("alpha", [0.5, 2 / 3, 1.0])
def test_exponent_is_exact_on_a_pure_power_law(alpha: float) -> None:
    t = np.asarray(log_checkpoints(10_000, 30), dtype=float)
    slope, stderr = regret_exponent(t, 4.2 * t**alpha)
    assert slope == pytest.approx(alpha, abs=1e-12)
    assert stderr < 1e-8  # zero up to rounding


@pytest.mark.parametrize(("alpha", "seed"), [(0.5, 1), (2 / 3, 2), (0.5, 3), (2 / 3, 4)])
def test_exponent_recovered_from_noisy_power_law(alpha: float, seed: int) -> None:
    """Multiplicative log-normal noise (sd 0.2): the slope lies within 3 stderr of alpha.

    Under the fitted model the slope is normal with that stderr, so each case fails with
    probability about 0.3 % (fixed seeds make the outcome repeatable).
    """
    rng = np.random.default_rng(seed)
    t = np.asarray(log_checkpoints(100_000, 40), dtype=float)
    regret = 3.0 * t**alpha * np.exp(0.2 * rng.standard_normal(t.size))
    slope, stderr = regret_exponent(t, regret)
    assert abs(slope - alpha) <= 3 * stderr
    assert 0 < stderr < 0.05


def test_exponent_fits_only_the_chosen_range() -> None:
    t = np.arange(1.0, 1001.0)
    regret = np.where(t <= 100, t, 10.0 * np.sqrt(t))  # linear, then square-root
    slope, _ = regret_exponent(t, regret, t_min=100)
    assert slope == pytest.approx(0.5, abs=1e-12)
    slope, _ = regret_exponent(t, regret, t_max=100)
    assert slope == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize(
    ("t", "r", "kw", "match"),
    [
        ([1, 2, 3], [1, 2], {}, "equal length"),
        ([1, 2, 3], [1, 2, 3], {"t_min": 2}, "at least 3 points"),
        ([1, 2, 3, 4], [1, 0, 2, 3], {}, r"must be > 0 .*\(first at t=2\)"),
        ([1, 2, 3, 4], [1, np.nan, 2, 3], {}, "must be > 0"),
    ],
)
def test_exponent_rejects_bad_input(
    t: list[float], r: list[float], kw: dict[str, float], match: str
) -> None:
    with pytest.raises(ValueError, match=match):
        regret_exponent(t, r, **kw)


# ---------------------------------------------------------------------------
# checkpoints


@pytest.mark.parametrize(
    ("horizon", "n"), [(1, 1), (1, 5), (10, 3), (100, 100), (1000, 50), (10**6, 60), (37, 12)]
)
def test_log_checkpoints_shape(horizon: int, n: int) -> None:
    cp = log_checkpoints(horizon, n)
    assert len(cp) == min(n, horizon)
    assert cp[-1] == horizon
    assert cp[0] == 1 or len(cp) == 1
    assert all(b > a for a, b in zip(cp, cp[1:], strict=False))


def test_log_checkpoints_are_geometric_where_there_is_room() -> None:
    assert log_checkpoints(10**4, 5) == (1, 10, 100, 1000, 10**4)
    cp = np.asarray(log_checkpoints(10**6, 61), dtype=float)
    ratios = cp[-20:] / cp[-21:-1]  # late checkpoints: ratio 10^(6/60) up to rounding
    assert np.allclose(ratios, 10**0.1, rtol=1e-3)


@pytest.mark.parametrize(
    ("horizon", "n", "error"), [(0, 3, ValueError), (10, 0, ValueError), (10.0, 3, TypeError)]
)
def test_log_checkpoints_rejects_bad_input(horizon: object, n: int, error: type) -> None:
    with pytest.raises(error):
        log_checkpoints(horizon, n)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------
# best fixed order in hindsight, against brute force over all m! orders


def brute_force(relevance: np.ndarray, measure: str, checkpoints: list[int]) -> np.ndarray:
    """max (min for losses) over every order of the cumulative measure, one order at a time."""
    meas = get_measure(measure)
    m = relevance.shape[1]
    per_order = []
    for order in itertools.permutations(range(m)):
        per_round = meas(relevance, np.array(order))  # (T,)
        per_order.append(np.cumsum(per_round)[np.asarray(checkpoints) - 1])
    table = np.array(per_order)
    return table.max(axis=0) if meas.kind == "gain" else table.min(axis=0)


MEASURES = [
    "dcg",
    "dcg@2",
    "precision@2",
    "sumloss",
    "pairwise",
    "ndcg",
    "ndcg@2",
    "ap",
    "auc",
    "err",
    "position",
    "position@2",
    "spearman",
]


@pytest.mark.filterwarnings("error::RuntimeWarning")  # no fallback from the separable path
@pytest.mark.parametrize("measure", MEASURES)
@pytest.mark.parametrize(("m", "graded"), [(3, False), (4, True), (5, False), (5, True)])
def test_comparator_equals_brute_force(measure: str, m: int, graded: bool) -> None:
    rng = np.random.default_rng(m * 10 + graded)
    n_rounds = 40
    high = 3 if graded else 2
    # item-specific tendencies, so the best order is not trivial and changes over time
    p = rng.random(m)
    relevance = rng.binomial(high - 1, np.broadcast_to(p, (n_rounds, m)))
    checkpoints = [1, 2, 5, 13, 27, 40]
    got = hindsight_comparator(relevance, measure, checkpoints)
    assert got is not None
    np.testing.assert_allclose(
        got, brute_force(relevance, measure, checkpoints), rtol=1e-12, atol=1e-12
    )


def test_comparator_hand_example() -> None:
    # DCG with binary grades: discounts 1, 1/log2(3), 1/2 for positions 1..3.
    rel = np.array([[1, 0, 0], [0, 0, 1], [0, 1, 0], [0, 0, 1]])
    got = hindsight_comparator(rel, "dcg", [1, 2, 3, 4])
    d2 = 1 / math.log2(3)
    # t=1: item 0 on top; t=2: items 0 and 2 on top two; t=3: all once; t=4: item 2 twice on top
    expected = [1.0, 1 + d2, 1 + d2 + 0.5, 2 * 1 + d2 + 0.5]
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    sumloss = hindsight_comparator(rel, "sumloss", [1, 2, 3, 4])
    np.testing.assert_allclose(sumloss, [1.0, 1 + 2, 1 + 2 + 3, 2 * 1 + 2 + 3])


@pytest.mark.filterwarnings("error::RuntimeWarning")
@pytest.mark.parametrize("measure", ["dcg", "dcg@3", "precision@4", "sumloss", "pairwise"])
def test_separable_comparator_scales_past_enumeration(measure: str) -> None:
    """m = 12 (12! orders): the sorted-cumulative order, evaluated by the measure itself."""
    rng = np.random.default_rng(5)
    m, n_rounds = 12, 300
    relevance = (rng.random((n_rounds, m)) < rng.random(m)).astype(np.int64)
    checkpoints = [10, 150, 300]
    got = hindsight_comparator(relevance, measure, checkpoints)
    assert got is not None
    meas = get_measure(measure)
    for c, t in enumerate(checkpoints):
        counts = relevance[:t].sum(axis=0)  # binary: every measure here ranks by counts
        best = np.argsort(-counts, kind="stable")
        value = float(np.sum(meas(relevance[:t], best)))
        assert got[c] == pytest.approx(value, rel=1e-12)
        # and no other order does better: random orders as a spot check
        for _ in range(20):
            other = float(np.sum(meas(relevance[:t], rng.permutation(m))))
            assert meas.sign * (value - other) >= -1e-9


@pytest.mark.parametrize("measure", ["ndcg", "ap", "auc", "err"])
def test_non_separable_comparator_is_none_beyond_enumeration(measure: str) -> None:
    relevance = np.random.default_rng(0).integers(0, 2, size=(50, 9))
    assert hindsight_comparator(relevance, measure, [50]) is None


def test_graded_pairwise_is_not_separable_but_enumerated() -> None:
    relevance = np.random.default_rng(1).integers(0, 3, size=(30, 4))
    checkpoints = [30]
    got = hindsight_comparator(relevance, "pairwise", checkpoints)
    np.testing.assert_allclose(got, brute_force(relevance, "pairwise", checkpoints))
    wide = np.random.default_rng(1).integers(0, 3, size=(30, 10))
    assert hindsight_comparator(wide, "pairwise", checkpoints) is None


@pytest.mark.parametrize(
    ("relevance", "checkpoints", "match"),
    [
        ([1, 0], [1], r"shape \(T, m\)"),
        ([[1, -1]], [1], "grades >= 0"),
        ([[1, 0], [0, 1]], [3], "within 1..2"),
        ([[1, 0], [0, 1]], [2, 1], "increase strictly"),
    ],
)
def test_comparator_rejects_bad_input(relevance: list, checkpoints: list[int], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        hindsight_comparator(relevance, "dcg", checkpoints)
