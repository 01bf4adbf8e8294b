"""OnlineRank and FPL regret (Ailon 2014 Theorems 3.1, 3.3) through the runner.

Statistical tests use fixed seeds and the error rate ``ALPHA`` (Bonferroni-corrected
where several hypotheses are tested at once).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from oltr.experiments.runner import RunSetSpec, run_set

ALPHA = 1e-3
SORTS = ("quicksort", "plackett-luce")


# ---------------------------------------------------------------------------
# Theorem 3.1 and Theorem 3.3 through the runner


def spec(
    env: str,
    env_params: dict,
    learner: str,
    learner_params: dict,
    *,
    feedback: str,
    horizon: int,
    reps: tuple[int, ...],
    seed: int,
    measure: str,
) -> RunSetSpec:
    return RunSetSpec(
        env=env,
        env_params=env_params,
        feedback=feedback,
        feedback_params={},
        learner=learner,
        learner_params=learner_params,
        reps=reps,
        seed=seed,
        horizon=horizon,
        measures=(measure,),
        checkpoints=(horizon // 2, horizon),
    )


ADVERSARIES = [
    # (env, params, feedback, measure, M for the bound, learner extras)
    ("ailon-choice-v1", {"n_items": 6}, "choice", "pairwise", 6, {}),
    ("ailon-choice-v1", {"n_items": 6, "kind": "zipf"}, "choice", "pairwise", 6, {}),
    ("ailon-choice-v1", {"n_items": 6, "kind": "cyclic"}, "choice", "pairwise", 6, {}),
    ("ailon-choice-v1", {"n_items": 6, "n_chosen": 2}, "choice", "pairwise", 12, {"n_chosen": 2}),
    (
        "ailon-choice-v1",
        {"n_items": 7, "n_chosen": 3, "kind": "zipf", "skew": 2.0},
        "choice",
        "pairwise",
        21,
        {"n_chosen": 3},
    ),
    (
        "fixed-items-v1",
        {"n_items": 6, "kind": "choice", "n_chosen": 2, "probs": [0.9, 0.8, 0.5, 0.3, 0.2, 0.1]},
        "choice",
        "pairwise",
        12,
        {"n_chosen": 2},
    ),
    # rank aggregation: sumloss = const − ρ, same regret as ℓℓ (§5); M = n²(n²−1)/12
    (
        "spearman-aggregation-v1",
        {"n_items": 5},
        "full",
        "sumloss",
        25 * 24 / 12,
        {"signal": "full"},
    ),
    (
        "spearman-aggregation-v1",
        {"n_items": 5, "kind": "uniform"},
        "full",
        "sumloss",
        25 * 24 / 12,
        {"signal": "full"},
    ),
]


@pytest.mark.parametrize("sort", SORTS)
@pytest.mark.parametrize(
    ("env", "env_params", "feedback", "measure", "m_bound", "extra"),
    ADVERSARIES,
    ids=lambda v: str(v) if isinstance(v, str) else None,
)
def test_regret_stays_under_theorem_31(
    sort: str, env: str, env_params: dict, feedback: str, measure: str, m_bound: float, extra: dict
) -> None:
    horizon, reps = 400, (0, 1, 2, 3)
    n = env_params["n_items"]
    trace = run_set(
        spec(
            env,
            env_params,
            "onlinerank",
            {"sort": sort, **extra},
            feedback=feedback,
            horizon=horizon,
            reps=reps,
            seed=17,
            measure=measure,
        )
    )
    eta = min(1.0, n * math.sqrt(math.log(2) / (horizon * m_bound)))
    assert (
        n * math.sqrt(horizon * m_bound * math.log(2))
        >= eta * horizon * m_bound / 2 + math.comb(n, 2) * math.log(2) / eta - 1e-9
    )
    for t, rows in trace.groupby("t"):
        # §6, last display: E[L_t] − L_t(π*) <= η t M / 2 + C(n, 2) log 2 / η, for every t <= T;
        # at t = T with Theorem 3.1's η it is at most n √(T M log 2) (checked above).
        bound = eta * t * m_bound / 2 + math.comb(n, 2) * math.log(2) / eta
        assert rows[f"{measure}:regret"].mean() <= bound, (t, rows[f"{measure}:regret"].mean())


@pytest.mark.parametrize(
    ("env", "env_params", "feedback", "measure", "m_bound", "extra"),
    ADVERSARIES,
    ids=lambda v: str(v) if isinstance(v, str) else None,
)
def test_fpl_regret_stays_under_kalai_vempala(
    env: str, env_params: dict, feedback: str, measure: str, m_bound: float, extra: dict
) -> None:
    from oltr.learners.onlinerank import fpl_rate

    horizon, reps = 400, (0, 1, 2, 3)
    n = env_params["n_items"]
    params = {k: v for k, v in extra.items() if k in ("n_chosen", "signal")}
    trace = run_set(
        spec(
            env,
            env_params,
            "ailon-fpl",
            params,
            feedback=feedback,
            horizon=horizon,
            reps=reps,
            seed=17,
            measure=measure,
        )
    )
    _, bound = fpl_rate(n, horizon, **params)
    final = trace[trace["t"] == horizon][f"{measure}:regret"].mean()
    assert final <= bound


@pytest.mark.parametrize(
    ("n_chosen", "learner", "params"),
    [
        (1, "onlinerank", {"sort": "quicksort"}),
        (1, "onlinerank", {"sort": "plackett-luce"}),
        (1, "ailon-fpl", {}),
        (2, "onlinerank", {"sort": "plackett-luce", "n_chosen": 2}),
    ],
)
def test_expected_loss_on_the_uniform_adversary(n_chosen: int, learner: str, params: dict) -> None:
    """Theorem 3.3's adversary: whatever the algorithm, the ℓℓ loss of a round is the sum
    of the (0-based) positions of a uniform k-subset minus k(k−1)/2, independent of the
    past; so L_T has mean T k(n−k)/2 and variance T k(n−k)(n+1)/12 exactly. Each seed
    draws its own adversary (independent totals); z-test at ALPHA."""
    n, horizon, seeds = 8, 300, range(12)
    totals = []
    for seed in seeds:
        trace = run_set(
            spec(
                "ailon-choice-v1",
                {"n_items": n, "n_chosen": n_chosen},
                learner,
                params,
                feedback="choice",
                horizon=horizon,
                reps=(0,),
                seed=seed,
                measure="pairwise",
            )
        )
        totals.append(float(trace["pairwise:cum"].iloc[-1]))
    k = n_chosen
    mean, var = horizon * k * (n - k) / 2, horizon * k * (n - k) * (n + 1) / 12
    z = (np.mean(totals) - mean) / math.sqrt(var / len(totals))
    assert abs(z) < stats.norm.ppf(1 - ALPHA / 2), (np.mean(totals), mean)


# ---------------------------------------------------------------------------
# the packaged reproductions, small size


@pytest.mark.slow
@pytest.mark.parametrize(("name", "k"), [("ailon14-thm31", 1), ("ailon14-thm31-kchoice", 2)])
def test_reproduction_small(name: str, k: int) -> None:
    """Every learner's loss ≈ T k(n−k)/2 and its regret under its theorem's bound.

    The repetitions share one adversary sequence (common random numbers), so their mean
    is tested against the variance of a single repetition, T k(n−k)(n+1)/12, which bounds
    the variance of a mean of correlated repetitions (two-sided, ALPHA).
    """
    from oltr.learners.expweights import hedge_rate, loss_range
    from oltr.learners.onlinerank import fpl_rate
    from oltr.reproductions.reproduce import load_reproduction

    experiment = load_reproduction(name, size="small")
    n, horizon = experiment.resolved["env"]["params"]["n_items"], experiment.horizon
    bounds = {
        "onlinerank": n * math.sqrt(horizon * n * k * math.log(2)),
        "ailon-fpl": fpl_rate(n, horizon, n_chosen=k)[1],
        "expweights": hedge_rate(n, horizon, loss_range(n, n_chosen=k))[1],
    }
    mean, var = horizon * k * (n - k) / 2, horizon * k * (n - k) * (n + 1) / 12
    for planned in experiment.run_sets:
        final = run_set(planned.spec).query(f"t == {horizon}")
        z = (final["pairwise:cum"].mean() - mean) / math.sqrt(var)
        assert abs(z) < stats.norm.ppf(1 - ALPHA / 2), (planned.label, final["pairwise:cum"].mean())
        np.testing.assert_allclose(
            final["sumloss:cum"] - final["pairwise:cum"], horizon * k * (k + 1) / 2
        )
        if planned.spec.learner in bounds:
            assert final["pairwise:regret"].mean() <= bounds[planned.spec.learner], planned.label


def test_spearman_reproduction_small() -> None:
    """Rank aggregation (§5): OnlineRank and FPL under their bounds, random ranker above both."""
    from oltr.learners.onlinerank import fpl_rate
    from oltr.reproductions.reproduce import load_reproduction

    experiment = load_reproduction("ailon14-spearman", size="small")
    n, horizon = experiment.resolved["env"]["params"]["n_items"], experiment.horizon
    m_bound = n * n * (n * n - 1) / 12
    regret = {}
    for planned in experiment.run_sets:
        final = run_set(planned.spec).query(f"t == {horizon}")
        regret[planned.label] = final["sumloss:regret"].mean()
    assert regret["OnlineRank (QuickSort)"] <= n * math.sqrt(horizon * m_bound * math.log(2))
    assert regret["OnlineRank (Plackett-Luce)"] <= n * math.sqrt(horizon * m_bound * math.log(2))
    assert regret["FPL (uniform noise)"] <= fpl_rate(n, horizon, signal="full")[1]
    assert regret["random ranker"] > max(v for k, v in regret.items() if k != "random ranker")
