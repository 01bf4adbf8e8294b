"""Click models: exact laws against simulation, named parameters, seeding, bad input."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import pytest
from scipy import stats

from oltr.clicks.click_models import CASCADE_PARAMETERS, CascadeClickModel, cascade_model
from oltr.clicks.position_based import PositionBasedClickModel, position_based_model

#: Family-wise error rate of each statistical test (seeds are fixed, so each test is deterministic).
ALPHA = 1e-3

NAMES = ("perfect", "navigational", "informational")
GRADES = (2, 3, 5)


# ---------------------------------------------------------------------------
# direct formulas, written independently of the library


def cascade_marginals(click: np.ndarray, stop: np.ndarray, grades: np.ndarray) -> np.ndarray:
    """P(click at i) = c_i Π_{j<i} (1 − c_j s_j), by a loop over positions."""
    out = np.zeros(grades.shape)
    examined = np.ones(grades.shape[:-1])
    for i in range(grades.shape[-1]):
        c, s = click[grades[..., i]], stop[grades[..., i]]
        out[..., i] = examined * c
        examined = examined * (1.0 - c * s)
    return out


def cascade_joint(click: np.ndarray, stop: np.ndarray, grades: list[int]) -> dict:
    """Exact law of the click vector: enumerate every latent coin and run the user."""
    m = len(grades)
    law: dict[tuple[bool, ...], float] = {}
    for coins in itertools.product([False, True], repeat=2 * m):
        would_click, would_stop = coins[:m], coins[m:]
        p = 1.0
        for i, g in enumerate(grades):
            p *= click[g] if would_click[i] else 1 - click[g]
            p *= stop[g] if would_stop[i] else 1 - stop[g]
        clicks, going = [], True
        for i in range(m):
            c = going and would_click[i]
            clicks.append(c)
            if c and would_stop[i]:
                going = False
        law[tuple(clicks)] = law.get(tuple(clicks), 0.0) + p
    return law


def chi2_pvalue(observed: dict, expected_p: dict, n: int) -> float:
    """Chi-square goodness of fit; cells expected below 5 are pooled."""
    keys = list(expected_p)
    exp = np.array([expected_p[k] * n for k in keys])
    obs = np.array([observed.get(k, 0) for k in keys], dtype=float)
    assert sum(observed.values()) == n and set(observed) <= set(keys)
    small = exp < 5
    if small.any():
        exp = np.append(exp[~small], exp[small].sum())
        obs = np.append(obs[~small], obs[small].sum())
    keep = exp > 0
    return float(stats.chisquare(obs[keep], exp[keep]).pvalue)


def z_pvalues(observed: np.ndarray, expected: np.ndarray, variance: np.ndarray) -> np.ndarray:
    """Two-sided normal p-values of count deviations (sums of independent Bernoullis)."""
    z = (observed - expected) / np.sqrt(variance)
    return 2 * stats.norm.sf(np.abs(z))


# ---------------------------------------------------------------------------
# parameters


def test_named_parameters_are_the_literature_values() -> None:
    # Oosterhuis & de Rijke 2018 (5 grades); Hofmann et al. 2013 (3 grades);
    # Hofmann et al. 2011 (binary).
    expected = {
        ("perfect", 5): ((0.0, 0.2, 0.4, 0.8, 1.0), (0.0,) * 5),
        ("navigational", 5): ((0.05, 0.3, 0.5, 0.7, 0.95), (0.2, 0.3, 0.5, 0.7, 0.9)),
        ("informational", 5): ((0.4, 0.6, 0.7, 0.8, 0.9), (0.1, 0.2, 0.3, 0.4, 0.5)),
        ("perfect", 3): ((0.0, 0.5, 1.0), (0.0,) * 3),
        ("navigational", 3): ((0.05, 0.5, 0.95), (0.2, 0.5, 0.9)),
        ("informational", 3): ((0.4, 0.7, 0.9), (0.1, 0.3, 0.5)),
        ("perfect", 2): ((0.0, 1.0), (0.0, 0.0)),
        ("navigational", 2): ((0.05, 0.95), (0.2, 0.9)),
        ("informational", 2): ((0.4, 0.9), (0.1, 0.5)),
    }
    assert dict(CASCADE_PARAMETERS) == expected
    for (name, g), (click, stop) in expected.items():
        model = cascade_model(name, n_grades=g)
        assert (model.click_prob, model.stop_prob, model.n_grades) == (click, stop, g)


# ---------------------------------------------------------------------------
# cascade


@pytest.mark.parametrize("n_grades", GRADES)
def test_perfect_model_never_clicks_grade_zero_and_always_clicks_the_top_grade(
    n_grades: int,
) -> None:
    model = cascade_model("perfect", n_grades=n_grades)
    grades = np.random.default_rng(1).integers(0, n_grades, size=(20_000, 10))
    clicks = model.simulate(grades, rng=2)
    assert not clicks[grades == 0].any()
    # Stop probability 0: every position is examined, and the top grade has click prob 1.
    assert clicks[grades == n_grades - 1].all()


@pytest.mark.parametrize(("name", "n_grades"), list(itertools.product(NAMES, GRADES)))
def test_cascade_click_rates_per_grade_and_position_match_the_exact_marginals(
    name: str, n_grades: int
) -> None:
    model = cascade_model(name, n_grades=n_grades)
    click, stop = np.array(model.click_prob), np.array(model.stop_prob)
    n, m = 40_000, 10
    grades = np.random.default_rng(10 + n_grades).integers(0, n_grades, size=(n, m))
    clicks = model.simulate(grades, rng=np.random.default_rng(20 + n_grades))
    p = cascade_marginals(click, stop, grades)
    pvals = []
    for g in range(n_grades):
        for i in range(m):
            rows = grades[:, i] == g
            exp, var = p[rows, i].sum(), (p[rows, i] * (1 - p[rows, i])).sum()
            obs = clicks[rows, i].sum()
            if var == 0:
                assert obs == exp  # probability 0 or 1: exact
            else:
                pvals.append(z_pvalues(obs, exp, var))
    # Bonferroni over the random cells (perfect-2 has none: every probability is 0 or 1).
    assert not pvals or min(pvals) > ALPHA / len(pvals)


@pytest.mark.parametrize(
    ("name", "n_grades", "grades"),
    [
        ("navigational", 5, [3, 1, 4]),
        ("informational", 5, [4, 0, 2]),
        ("informational", 3, [2, 2, 1, 0]),
    ],
)
def test_cascade_joint_click_law_matches_exact_enumeration(
    name: str, n_grades: int, grades: list[int]
) -> None:
    model = cascade_model(name, n_grades=n_grades)
    law = cascade_joint(np.array(model.click_prob), np.array(model.stop_prob), grades)
    n = 60_000
    clicks = model.simulate(np.tile(grades, (n, 1)), rng=7)
    observed: dict = {}
    for row in map(tuple, clicks.tolist()):
        observed[row] = observed.get(row, 0) + 1
    assert chi2_pvalue(observed, law, n) > ALPHA


def test_cascade_click_probabilities_equal_the_direct_formula() -> None:
    rng = np.random.default_rng(3)
    for name, g in itertools.product(NAMES, GRADES):
        model = cascade_model(name, n_grades=g)
        grades = rng.integers(0, g, size=(50, 8))
        direct = cascade_marginals(np.array(model.click_prob), np.array(model.stop_prob), grades)
        np.testing.assert_allclose(model.click_probabilities(grades), direct, rtol=1e-12)


def test_cascade_hand_computed_probabilities() -> None:
    # navigational-3, grades (2, 1, 0): 0.95; 0.5·(1 − 0.95·0.9); 0.05·(1 − 0.855)(1 − 0.25)
    model = cascade_model("navigational", n_grades=3)
    expected = [0.95, 0.5 * (1 - 0.95 * 0.9), 0.05 * (1 - 0.95 * 0.9) * (1 - 0.5 * 0.5)]
    np.testing.assert_allclose(model.click_probabilities([2, 1, 0]), expected, rtol=1e-12)


def test_a_stop_of_certainty_ends_the_session() -> None:
    model = CascadeClickModel((1.0, 1.0), (0.0, 1.0))
    clicks = model.simulate(np.array([[0, 1, 0, 1], [1, 0, 0, 0]]), rng=0)
    np.testing.assert_array_equal(clicks, [[True, True, False, False], [True, False, False, False]])


# ---------------------------------------------------------------------------
# position-based model


@pytest.mark.parametrize("eta", [0.0, 1.0, 2.0])
def test_position_based_click_rates_match_examination_times_attractiveness(eta: float) -> None:
    model = position_based_model("informational", n_grades=5, eta=eta)
    alpha = np.array([0.4, 0.6, 0.7, 0.8, 0.9])
    n, m = 40_000, 10
    grades = np.random.default_rng(5).integers(0, 5, size=(n, m))
    clicks = model.simulate(grades, rng=6)
    theta = np.array([(1.0 / (i + 1)) ** eta for i in range(m)])
    pvals = []
    for g in range(5):
        for i in range(m):
            rows = grades[:, i] == g
            p = theta[i] * alpha[g]
            pvals.append(z_pvalues(clicks[rows, i].sum(), rows.sum() * p, rows.sum() * p * (1 - p)))
    assert min(pvals) > ALPHA / len(pvals)


def test_position_based_clicks_are_independent_across_positions() -> None:
    model = PositionBasedClickModel((0.3, 0.9), eta=1.0)
    grades = [1, 0, 1]
    p = np.array([0.9, 0.3 / 2, 0.9 / 3])
    law = {
        c: float(np.prod(np.where(c, p, 1 - p))) for c in itertools.product([False, True], repeat=3)
    }
    n = 60_000
    clicks = model.simulate(np.tile(grades, (n, 1)), rng=8)
    observed: dict = {}
    for row in map(tuple, clicks.tolist()):
        observed[row] = observed.get(row, 0) + 1
    assert chi2_pvalue(observed, law, n) > ALPHA
    np.testing.assert_allclose(model.click_probabilities(grades), p, rtol=1e-12)


def test_position_based_examination_is_one_over_rank_to_the_eta() -> None:
    model = PositionBasedClickModel((0.5,), eta=2.0)
    np.testing.assert_allclose(model.examination(4), [1.0, 1 / 4, 1 / 9, 1 / 16])


# ---------------------------------------------------------------------------
# seeding, batching, padding


@pytest.mark.parametrize(
    "model", [cascade_model("navigational"), position_based_model("perfect", eta=1.0)]
)
def test_same_seed_same_clicks_and_per_row_generators_match_single_calls(model) -> None:
    grades = np.random.default_rng(0).integers(0, 5, size=(6, 10))
    np.testing.assert_array_equal(model.simulate(grades, rng=11), model.simulate(grades, rng=11))
    batch = model.simulate(grades, [np.random.default_rng(100 + b) for b in range(6)])
    for b in range(6):
        alone = model.simulate(grades[b], np.random.default_rng(100 + b))
        np.testing.assert_array_equal(batch[b], alone)
    # A row's clicks do not depend on the rows batched with it.
    pair = model.simulate(grades[[4, 1]], [np.random.default_rng(104), np.random.default_rng(101)])
    np.testing.assert_array_equal(pair, batch[[4, 1]])


def test_a_generator_is_advanced_not_reseeded() -> None:
    model = cascade_model("informational")
    g = np.random.default_rng(5)
    first, second = model.simulate(np.full(200, 2), g), model.simulate(np.full(200, 2), g)
    assert not np.array_equal(first, second)


def test_padding_is_never_clicked_and_may_hold_invalid_grades() -> None:
    model = cascade_model("perfect", n_grades=3)
    grades = np.array([[2, 2, -1, -1], [2, 1, 2, np.nan]])
    mask = np.array([[True, True, False, False], [True, True, True, False]])
    clicks = model.simulate(grades, rng=0, mask=mask)
    assert not clicks[~mask].any()
    assert clicks[0, :2].all() and clicks[1, [0, 2]].all()
    probs = model.click_probabilities(grades, mask=mask)
    np.testing.assert_array_equal(probs[~mask], 0.0)


# ---------------------------------------------------------------------------
# bad input


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (
            lambda: cascade_model("navigational", n_grades=5).simulate([0, 5], rng=0),
            ValueError,
            r"relevance grades must lie in \[0, 4\].*got 5 at index \(1,\)",
        ),
        (
            lambda: cascade_model("perfect", n_grades=3).simulate([0.5, 1.0], rng=0),
            ValueError,
            "relevance must hold integer grades, got 0.5",
        ),
        (
            lambda: cascade_model("perfect", n_grades=3).simulate([np.nan, 1.0], rng=0),
            ValueError,
            "integer grades, got nan",
        ),
        (lambda: cascade_model("perfect").simulate([], rng=0), ValueError, "n_shown >= 1"),
        (lambda: cascade_model("perfect").simulate(3, rng=0), ValueError, "shape"),
        (lambda: cascade_model("perfect").simulate(["a"], rng=0), TypeError, "dtype"),
        (
            lambda: cascade_model("perfect").simulate([[0, 1]] * 3, rng=[np.random.default_rng(0)]),
            ValueError,
            "one row per Generator",
        ),
        (lambda: cascade_model("perfect").simulate([[0, 1]], rng=[0]), TypeError, r"rng\[0\]"),
        (lambda: cascade_model("perfect").simulate([0, 1], rng="x"), TypeError, "rng must be"),
        (lambda: cascade_model("perfect").simulate([0, 1], rng=0, mask=[1, 0]), TypeError, "mask"),
        (
            lambda: cascade_model("perfect").simulate([0, 1], rng=0, mask=[True] * 3),
            ValueError,
            "mask of shape",
        ),
        (
            lambda: CascadeClickModel((0.1, 1.5), (0.0, 0.0)),
            ValueError,
            r"click_prob\[1\] must be a probability",
        ),
        (lambda: CascadeClickModel((0.1, 0.5), (0.0, np.nan)), ValueError, r"stop_prob\[1\]"),
        (lambda: CascadeClickModel((0.1, 0.5), (0.0,)), ValueError, "one entry per grade"),
        (lambda: CascadeClickModel((), ()), ValueError, "non-empty"),
        (lambda: PositionBasedClickModel((0.5,), eta=-1.0), ValueError, "eta must be"),
        (lambda: PositionBasedClickModel((0.5,)).examination(0), ValueError, "n_shown"),
        (lambda: cascade_model("impatient"), ValueError, "unknown click model 'impatient'"),
        (lambda: cascade_model("perfect", n_grades=4), ValueError, "n_grades=4"),
        (lambda: position_based_model("nope"), ValueError, "valid names"),
    ],
)
def test_bad_input_raises_a_clear_error(call, error, match) -> None:
    with pytest.raises(error, match=match):
        call()


class _Streams(Sequence):
    """A sequence of Generators that is neither a list nor a tuple (like per-run holders)."""

    def __init__(self, gens: list[np.random.Generator]) -> None:
        self._gens = gens

    def __len__(self) -> int:
        return len(self._gens)

    def __getitem__(self, i):  # type: ignore[no-untyped-def]
        return self._gens[i]


def test_any_sequence_of_generators_gives_per_row_streams() -> None:
    model = cascade_model("informational")
    grades = np.random.default_rng(0).integers(0, 5, size=(3, 10))
    from_list = model.simulate(grades, [np.random.default_rng(r) for r in range(3)])
    from_seq = model.simulate(grades, _Streams([np.random.default_rng(r) for r in range(3)]))
    np.testing.assert_array_equal(from_list, from_seq)
