"""Every Chaudhuri & Tewari (2016) learner learns, at its defaults, from a raw feature file.

The MSLR-WEB sample ships raw features (counts, BM25, PageRank: values up to
5·10^7; ../shared/data/MANIFEST.md §3). Each learner streams the *validation*
sample (18 queries) through ``letor-stream-v1`` with nothing but the file's
path — no ``normalize``, no step or radius — and is scored on the *test* sample
(18 other queries, a ``[heldout]`` table with only its path): the held-out
NDCG@10 of its reported weights after T rounds.

Statistical reasoning. The baseline is the random ranker (CT16 §6): a uniformly
random order of each test list, whose expected NDCG@10 is exact, query by query,
``E[DCG@10] = mean(G) Σ_{i ≤ min(10, m)} 1/log2(i + 1)`` over the ideal DCG
(0.1801 on the test sample). One evaluation of the random ranker on the 18
queries has a standard deviation of 0.026 (4,000 permutations per query); the
mean of ``REPS`` = 4 independent ones, 0.013. The test asks the mean over 4
seeds (each its own query stream, ``streams = "per-run"``; fixed root seed, so
the outcome is deterministic) to exceed the exact expectation by ``MARGIN`` =
0.08, six of those standard deviations: a learner that ranks no better than
random passes with probability below 1e-8 (normal approximation of a mean of
4 × 18 bounded per-query values). The bar is also above what data-
independent weights give: the mean held-out NDCG@10 of 4 uniformly random weight
directions reaches it with probability ≈ 0.02 (40,000 draws), so passing needs
weights that learned from the stream. Measured (root seed 2016, T = 4000, raw
valid → raw test): squared, RankSVM, KL, SmoothDCG and online ListNet clear it
(SmoothDCG by 0.06: 0.319).

SmoothDCG at CT16 §6's fixed ε = 0.01 does not (0.176): with features scaled to
[0, 1] the scores of a list span about one unit, softmax(s/ε) is nearly one-hot and
its estimate vanishes. Its default ε follows each list's score scale
(:func:`oltr.surrogates.score_scale_eps`, ε = 10 U σ_X); the factor 10 was chosen
on MQ2008 and OHSUMED (folds 1 and 2: held-out NDCG@10 rises with it up to 10 and
is flat from 10 to 100), not on this sample.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from oltr import RunSetSpec, load_letor, run_set

pytestmark = [pytest.mark.shared_data, pytest.mark.slow]

TRAIN = "MSLR-WEB-sample/mslr_fold1_valid_sample.txt.gz"
TEST = "MSLR-WEB-sample/mslr_fold1_test_sample.txt.gz"
HORIZON = 4000
REPS = (0, 1, 2, 3)
SEED = 2016
MARGIN = 0.08
COLUMN = "heldout:ndcg@10"

#: (learner, its parameters: only the surrogate, feedback, its parameters)
CT16 = {
    "squared": ("rtopk", {"surrogate": "squared"}, "top-k", {"k": 1}),
    "ranksvm": ("rtopk", {"surrogate": "ranksvm"}, "top-k", {"k": 2}),
    "kl": ("rtopk", {"surrogate": "kl"}, "top-k", {"k": 1}),
    "smoothdcg": ("rtopk", {"surrogate": "smoothdcg"}, "top-k", {"k": 1}),
    "listnet": ("listnet", {}, "full", {}),
}


def random_ranker_ndcg10(relevance: list[np.ndarray]) -> float:
    """Exact expected NDCG@10 of a uniformly random order, averaged over lists."""
    values = []
    for grades in relevance:
        gains = 2.0 ** grades.astype(np.float64) - 1.0
        k = min(10, grades.size)
        discounts = 1.0 / np.log2(np.arange(2, k + 2))
        ideal = float(np.sort(gains)[::-1][:k] @ discounts)
        assert ideal > 0  # every test query has a relevant document (MANIFEST.md §3)
        values.append(float(gains.mean() * discounts.sum()) / ideal)
    return float(np.mean(values))


def test_the_random_ranker_expectation_by_hand() -> None:
    # Two items, grades (1, 0): either order with probability 1/2 -> (1 + 1/log2(3)) / 2.
    want = (1.0 + 1.0 / np.log2(3.0)) / 2.0
    assert random_ranker_ndcg10([np.array([1, 0])]) == pytest.approx(want, rel=1e-15)
    assert random_ranker_ndcg10([np.array([2, 2, 2])]) == pytest.approx(1.0, rel=1e-15)


@pytest.mark.parametrize("name", list(CT16))
def test_ct16_learner_learns_from_raw_mslr_at_its_defaults(shared_data: Path, name: str) -> None:
    train, test = shared_data / TRAIN, shared_data / TEST
    raw = load_letor(test, normalize=False)
    assert raw.features.max() > 1e6  # the file really is raw
    baseline = random_ranker_ndcg10([raw.query(q)[1] for q in range(raw.n_queries)])
    learner, params, feedback, feedback_params = CT16[name]
    spec = RunSetSpec(
        env="letor-stream-v1",
        env_params={"path": str(train)},
        feedback=feedback,
        feedback_params=feedback_params,
        learner=learner,
        learner_params=dict[str, Any](params),
        reps=REPS,
        seed=SEED,
        horizon=HORIZON,
        measures=("ndcg@10",),
        checkpoints=(HORIZON,),
        heldout={"path": str(test)},
        streams="per-run",
    )
    scores = run_set(spec)[COLUMN].to_numpy()
    assert scores.shape == (len(REPS),) and np.isfinite(scores).all()
    assert scores.mean() > baseline + MARGIN, (
        f"{name}: held-out NDCG@10 per seed {np.round(scores, 4).tolist()}, mean "
        f"{scores.mean():.4f}; random ranker {baseline:.4f} + margin {MARGIN}"
    )
