"""The synthetic LETOR generator: shapes, grade skew, normalisation, hidden model."""

from __future__ import annotations

import numpy as np
import pytest

from oltr.data.dataset import LetorDataset
from oltr.data.synthetic import GRADE_RATIO, SyntheticLetor, synthetic_letor

#: Error rate of the statistical test in this file.
ALPHA = 0.001


def _ndcg_at(relevance: np.ndarray, scores: np.ndarray, k: int) -> float:
    """NDCG@k written out here (not oltr.metrics): gain 2^r - 1, discount log2(1 + pos)."""
    order = np.argsort(-scores, kind="stable")
    discount = 1.0 / np.log2(np.arange(2, k + 2))
    dcg = ((2.0 ** relevance[order][:k] - 1) * discount[: min(k, relevance.size)]).sum()
    ideal = ((2.0 ** np.sort(relevance)[::-1][:k] - 1) * discount[: min(k, relevance.size)]).sum()
    return dcg / ideal if ideal > 0 else 1.0


def _per_query_ndcg(ds: LetorDataset, scores: np.ndarray, k: int = 10) -> np.ndarray:
    lo, hi = ds.offsets[:-1], ds.offsets[1:]
    return np.array(
        [_ndcg_at(ds.relevance[a:b], scores[a:b], k) for a, b in zip(lo, hi, strict=True)]
    )


@pytest.fixture(scope="module")
def ds() -> SyntheticLetor:
    return synthetic_letor(n_queries=400, n_features=12, rng=2024)


def test_shapes_and_types(ds: SyntheticLetor) -> None:
    assert isinstance(ds, LetorDataset)
    assert ds.n_queries == 400 and ds.n_features == 12
    assert ds.qids.tolist() == list(range(1, 401))
    assert ds.list_lengths.min() >= 5 and ds.list_lengths.max() <= 60
    assert ds.hidden_weights.shape == (12,) and ds.hidden_utility.shape == (ds.n_docs,)
    assert ds.relevance.min() == 0 and ds.relevance.max() == 4


def test_list_lengths_vary_and_respect_bounds() -> None:
    d = synthetic_letor(n_queries=300, min_docs=3, max_docs=9, rng=1)
    lengths = d.list_lengths
    assert lengths.min() >= 3 and lengths.max() <= 9 and np.unique(lengths).size > 3
    fixed = synthetic_letor(n_queries=20, min_docs=7, max_docs=7, rng=1)
    assert set(fixed.list_lengths.tolist()) == {7}


def test_features_are_min_max_normalised_per_query(ds: SyntheticLetor) -> None:
    starts = ds.offsets[:-1]
    lo = np.minimum.reduceat(ds.features, starts, axis=0)
    hi = np.maximum.reduceat(ds.features, starts, axis=0)
    np.testing.assert_array_equal(lo, 0.0)
    np.testing.assert_array_equal(hi, 1.0)


def test_grade_shares_follow_the_geometric_skew() -> None:
    d = synthetic_letor(n_queries=3000, n_features=5, max_grade=4, rng=7)
    shares = np.bincount(d.relevance, minlength=5) / d.n_docs
    # Target share of grade g: r^g / sum_k r^k; cuts at empirical quantiles hit
    # it up to one document per cut.
    target = GRADE_RATIO ** np.arange(5) / (GRADE_RATIO ** np.arange(5)).sum()
    np.testing.assert_allclose(shares, target, atol=2 / d.n_docs)
    assert shares[0] > 0.5 and np.all(np.diff(shares) < 0)


def test_max_grade_sets_the_label_range() -> None:
    d = synthetic_letor(n_queries=300, max_grade=2, rng=3)
    assert set(np.unique(d.relevance).tolist()) == {0, 1, 2}


def test_some_but_not_all_queries_have_no_relevant_document(ds: SyntheticLetor) -> None:
    best = np.maximum.reduceat(ds.relevance, ds.offsets[:-1])
    assert 0 < np.sum(best == 0) < ds.n_queries // 2


def test_hidden_model_ranks_far_better_than_random(ds: SyntheticLetor) -> None:
    rng = np.random.default_rng(0)
    hidden = _per_query_ndcg(ds, ds.features @ ds.hidden_weights)
    utility = _per_query_ndcg(ds, ds.hidden_utility)
    random = _per_query_ndcg(ds, rng.random(ds.n_docs))
    # Paired one-sided sign test over queries: hidden model vs random ordering.
    from scipy import stats

    wins, losses = np.sum(hidden > random), np.sum(hidden < random)
    assert stats.binomtest(int(wins), int(wins + losses), alternative="greater").pvalue < ALPHA
    assert hidden.mean() - random.mean() > 0.2  # a large margin, not just a significant one
    assert utility.mean() >= hidden.mean()  # the full latent score is the better ranker


def test_same_seed_same_data_other_seed_other_data() -> None:
    a = synthetic_letor(n_queries=30, rng=5)
    b = synthetic_letor(n_queries=30, rng=np.random.default_rng(5))
    c = synthetic_letor(n_queries=30, rng=6)
    for name in ("features", "relevance", "offsets", "hidden_weights", "hidden_utility"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert not np.array_equal(a.hidden_weights, c.hidden_weights)


def test_subset_keeps_the_hidden_model_aligned(ds: SyntheticLetor) -> None:
    sub = ds.subset([3, 1])
    assert isinstance(sub, SyntheticLetor)
    o = ds.offsets
    expected = np.concatenate([ds.hidden_utility[o[3] : o[4]], ds.hidden_utility[o[1] : o[2]]])
    np.testing.assert_array_equal(sub.hidden_utility, expected)
    np.testing.assert_array_equal(sub.hidden_weights, ds.hidden_weights)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n_queries": 0}, "n_queries must be an integer >= 1"),
        ({"n_features": 0}, "n_features must be an integer >= 1"),
        ({"max_grade": 0}, "max_grade must be an integer >= 1"),
        ({"min_docs": 0}, "min_docs must be an integer >= 1"),
        ({"min_docs": 10, "max_docs": 5}, "max_docs must be an integer >= 10"),
        ({"noise": -0.1}, "noise must be a finite number >= 0"),
        ({"noise": float("nan")}, "noise must be a finite number >= 0"),
        ({"n_queries": 2.5}, "n_queries must be an integer"),
    ],
)
def test_bad_parameters(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        synthetic_letor(rng=0, **kwargs)  # type: ignore[arg-type]
