"""Click models of oltr.clicks: exact enumeration of the simulators on small lists.

Every coin the simulator reads (a click coin and a stop coin per position) is
enumerated with its probability; each outcome is fed to ``clicks_from_uniforms``
as uniforms that fall on the chosen side of the threshold. The resulting exact law
of click vectors must equal the law of the sequential story (written out here
independently, as the papers tell it), and its marginals must equal
``click_probabilities``. Both are sums of at most 4^4 products of probabilities:
float64 round-off is below 1e-15, so agreement is checked to 1e-12.
"""

from __future__ import annotations

import itertools
from collections import defaultdict

import numpy as np
import pytest

from oltr.clicks import (
    DependentClickModel,
    StopRuleCascade,
    click_model,
    clicks_for_runs,
    make_click_model,
)
from oltr.clicks.click_models import CASCADE_PARAMETERS
from oltr.feedback.clicks import ClickFeedbackModel
from oltr.types import RunGenerators

TOL = 1e-12
LISTS = [[2, 0, 1], [0, 0, 2, 1], [1, 2, 2, 0], [2]]


def _side(p: float, heads: bool) -> float:
    """A uniform that makes ``u < p`` equal ``heads``."""
    return p / 2 if heads else (p + 1) / 2


def simulator_law(model, grades, p_click, p_stop):  # type: ignore[no-untyped-def]
    """Exact law of the click vector, enumerating every (click, stop) coin outcome."""
    n = len(grades)
    law: dict[tuple[bool, ...], float] = defaultdict(float)
    for coins in itertools.product([True, False], repeat=2 * n):
        cc, ss = coins[:n], coins[n:]
        weight = 1.0
        for i in range(n):
            weight *= p_click[i] if cc[i] else 1 - p_click[i]
            weight *= p_stop[i] if ss[i] else 1 - p_stop[i]
        if weight == 0.0:
            continue
        u_c = np.array([_side(p_click[i], cc[i]) for i in range(n)])
        u_s = np.array([_side(p_stop[i], ss[i]) for i in range(n)])
        clicks = model.clicks_from_uniforms(np.asarray(grades), u_c, u_s)
        law[tuple(bool(x) for x in clicks)] += weight
    return law


def sequential_law(grades, c, s, rule):  # type: ignore[no-untyped-def]
    """The sequential user: examine, maybe click, maybe stop (per ``rule``), go on."""
    law: dict[tuple[bool, ...], float] = defaultdict(float)

    def walk(i, clicks, prob):  # type: ignore[no-untyped-def]
        if i == len(grades) or prob == 0.0:
            law[tuple(clicks + [False] * (len(grades) - len(clicks)))] += prob
            return
        for clicked in (True, False):
            pc = c[i] if clicked else 1 - c[i]
            stop = s[i] if (clicked or rule == "every-position") else 0.0
            if stop > 0:
                law[tuple(clicks + [clicked] + [False] * (len(grades) - i - 1))] += prob * pc * stop
            walk(i + 1, clicks + [clicked], prob * pc * (1 - stop))

    walk(0, [], 1.0)
    return law


def assert_same_law(a, b):  # type: ignore[no-untyped-def]
    for key in set(a) | set(b):
        assert abs(a.get(key, 0.0) - b.get(key, 0.0)) <= TOL, key


def marginals(law, n):  # type: ignore[no-untyped-def]
    out = np.zeros(n)
    for clicks, p in law.items():
        out += p * np.array(clicks, dtype=float)
    return out


@pytest.mark.parametrize("rule", ["after-click", "every-position"])
@pytest.mark.parametrize("name", ["perfect", "navigational", "informational"])
@pytest.mark.parametrize("grades", LISTS)
def test_cascade_law_by_enumeration(rule: str, name: str, grades: list[int]) -> None:
    model = click_model(name, n_grades=3, stop_rule=rule)
    c = [model.click_prob[g] for g in grades]
    s = [model.stop_prob[g] for g in grades]
    law = simulator_law(model, grades, c, s)
    assert_same_law(law, sequential_law(grades, c, s, rule))
    np.testing.assert_allclose(
        marginals(law, len(grades)), model.click_probabilities(grades), rtol=0, atol=TOL
    )


def test_stop_rules_differ_where_the_papers_differ() -> None:
    # Navigational, grades [2, 0]: after-click leaves after the top click w.p. 0.95·0.9;
    # every-position leaves after the top w.p. 0.9 whether clicked or not.
    after = click_model("navigational", n_grades=3).click_probabilities([2, 0])
    every = click_model("navigational", n_grades=3, stop_rule="every-position")
    assert after[1] == pytest.approx(0.05 * (1 - 0.95 * 0.9), abs=TOL)
    assert every.click_probabilities([2, 0])[1] == pytest.approx(0.05 * 0.1, abs=TOL)


@pytest.mark.parametrize("grades", LISTS)
def test_dcm_law_by_enumeration(grades: list[int]) -> None:
    lam = (0.6, 0.3, 0.9, 0.5)
    model = DependentClickModel(attractiveness=(0.4, 0.7, 0.9), continuation=lam)
    c = [model.attractiveness[g] for g in grades]
    leave = [1 - lam[i] for i in range(len(grades))]
    # The leave coin reads u >= λ_i: enumerate it as "u < 1 − λ" on the reflected uniform.
    law: dict[tuple[bool, ...], float] = defaultdict(float)
    n = len(grades)
    for coins in itertools.product([True, False], repeat=2 * n):
        cc, ll = coins[:n], coins[n:]
        w = np.prod([c[i] if cc[i] else 1 - c[i] for i in range(n)])
        w *= np.prod([leave[i] if ll[i] else 1 - leave[i] for i in range(n)])
        if w == 0:
            continue
        u_c = np.array([_side(c[i], cc[i]) for i in range(n)])
        u_s = np.array([1 - _side(leave[i], ll[i]) for i in range(n)])
        law[tuple(bool(x) for x in model.clicks_from_uniforms(np.array(grades), u_c, u_s))] += w
    assert_same_law(law, sequential_law(grades, c, leave, "after-click"))
    np.testing.assert_allclose(marginals(law, n), model.click_probabilities(grades), atol=TOL)


def test_pbm_marginals_are_products() -> None:
    model = make_click_model("pbm-informational", n_grades=3, eta=2.0)
    grades = np.array([0, 2, 1])
    want = np.array([0.4, 0.9 / 4, 0.7 / 9])
    np.testing.assert_allclose(model.click_probabilities(grades), want, atol=TOL)


def test_standard_tables_match_the_papers() -> None:
    # Hofmann et al. 2013 / Oosterhuis & de Rijke 2018 Table 1, typed from the papers.
    assert CASCADE_PARAMETERS[("navigational", 3)] == ((0.05, 0.5, 0.95), (0.2, 0.5, 0.9))
    assert CASCADE_PARAMETERS[("informational", 3)] == ((0.4, 0.7, 0.9), (0.1, 0.3, 0.5))
    assert CASCADE_PARAMETERS[("perfect", 3)] == ((0.0, 0.5, 1.0), (0.0, 0.0, 0.0))
    assert CASCADE_PARAMETERS[("perfect", 5)] == ((0.0, 0.2, 0.4, 0.8, 1.0), (0.0,) * 5)


def test_simulate_matches_marginals_statistically() -> None:
    # 40,000 lists; each marginal's binomial sd <= 0.0025, so 5 sd = 0.0125 bounds the
    # error at a family-wise rate below 1e-5 over the 4 positions (Bonferroni, normal tail).
    model = click_model("informational", n_grades=3, stop_rule="every-position")
    grades = np.tile([1, 2, 0, 2], (40_000, 1))
    freq = model.simulate(grades, rng=11).mean(axis=0)
    np.testing.assert_allclose(freq, model.click_probabilities([1, 2, 0, 2]), atol=0.0125)


def test_feedback_reveals_only_page_clicks_and_is_batch_independent() -> None:
    fb = ClickFeedbackModel(click_model="informational", n_grades=3, k=3)
    rel = np.array([2, 0, 1, 2, 0])
    orders = np.array([[0, 1, 2, 3, 4], [4, 3, 2, 1, 0], [3, 0, 1, 2, 4]])
    out = fb.observe(orders, rel, rngs=RunGenerators.from_keys(5, "fb", reps=[0, 1, 2]))
    assert out.clicks.shape == (3, 3) and out.clicks.dtype == bool
    assert set(vars(out)) == {"orders", "clicks"}
    solo = fb.observe(orders[1:2], rel, rngs=RunGenerators.from_keys(5, "fb", reps=[1]))
    assert np.array_equal(solo.clicks[0], out.clicks[1])


def test_bad_input_is_named() -> None:
    with pytest.raises(ValueError, match="grades must lie in"):
        click_model("perfect", n_grades=3).click_probabilities([3])
    with pytest.raises(ValueError, match="stop_rule"):
        StopRuleCascade((0.5,), (0.5,), stop_rule="sometimes")
    with pytest.raises(ValueError, match="continuation"):
        make_click_model("dcm-perfect", n_grades=3)
    with pytest.raises(ValueError, match="unknown click model"):
        make_click_model("lazy", n_grades=3)
    with pytest.raises(ValueError, match="click feedback"):
        ClickFeedbackModel(n_grades=3).observe(
            np.array([[0, 1]]), np.array([4, 0]), rngs=RunGenerators.from_rng(0, 1)
        )


def test_clicks_for_runs_shapes() -> None:
    u = np.zeros((2, 2, 3))  # every coin heads: perfect user clicks grades 1 and 2
    got = clicks_for_runs(click_model("perfect", n_grades=3), np.array([[0, 1, 2], [2, 2, 0]]), u)
    assert got.tolist() == [[False, True, True], [True, True, False]]
