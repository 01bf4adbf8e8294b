"""Held-out NDCG@k of linear rankers (oltr.experiments.heldout)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from oltr.data.dataset import LetorDataset
from oltr.data.synthetic import synthetic_letor
from oltr.experiments.heldout import HeldoutSet, heldout_ndcg
from oltr.metrics import ndcg

# Query A: 3 docs, grades (0, 2, 1); query B: 2 docs, grades (1, 0); one feature.
DS = LetorDataset(
    features=np.array([[0.1], [0.9], [0.5], [0.2], [0.8]]),
    relevance=np.array([0, 2, 1, 1, 0]),
    qids=np.array([1, 2]),
    offsets=np.array([0, 3, 5]),
)


def test_by_hand() -> None:
    # w = +1: A ranked (1, 2, 0) -> ideal, 1; B ranked (4, 3): DCG = 1/log2(3), ideal 1.
    # w = -1: A ranked (0, 2, 1): DCG = 1/log2(3) + 3/log2(4) = 1/log2(3) + 1.5,
    #         ideal 3 + 1/log2(3); B ranked (3, 4) -> 1.
    a_neg = (1 / math.log2(3) + 1.5) / (3 + 1 / math.log2(3))
    want = [(1.0 + 1 / math.log2(3)) / 2, (a_neg + 1.0) / 2]
    np.testing.assert_allclose(heldout_ndcg([[1.0], [-1.0]], DS), want, rtol=1e-12)


def test_cutoff_and_no_relevant() -> None:
    ds = LetorDataset(
        features=np.array([[0.0], [1.0], [0.3], [0.7]]),
        relevance=np.array([1, 0, 0, 0]),
        qids=np.array([1, 2]),
        offsets=np.array([0, 2, 4]),
    )
    # Query 1 (w = 1): relevant doc at position 2; k = 1 cuts it off. Query 2 has none.
    np.testing.assert_allclose(heldout_ndcg([[1.0]], ds, k=1, no_relevant=0.0), [0.0])
    np.testing.assert_allclose(heldout_ndcg([[1.0]], ds, k=1), [0.5])
    np.testing.assert_allclose(
        heldout_ndcg([[1.0]], ds, k=2, no_relevant=0.0), [1 / math.log2(3) / 2]
    )


def per_run_per_query_loop(ds: LetorDataset, w: np.ndarray) -> np.ndarray:
    """NDCG@10 of each run on each query: numpy's stable sort and the public ``ndcg``."""
    loop = np.empty((w.shape[0], ds.n_queries))
    for b in range(w.shape[0]):
        for q in range(ds.n_queries):
            x, r = ds.query(q)
            loop[b, q] = ndcg(r, np.argsort(-(x @ w[b]), kind="stable"), k=10)
    return loop


def test_matches_a_per_run_per_query_loop() -> None:
    ds = synthetic_letor(n_queries=15, n_features=4, min_docs=2, max_docs=30, rng=3)
    w = np.random.default_rng(0).standard_normal((4, 4))
    w[0] = 0.0  # all ties: order by document index
    loop = per_run_per_query_loop(ds, w)
    np.testing.assert_allclose(HeldoutSet(ds).per_query(w), loop, rtol=1e-12)
    np.testing.assert_allclose(heldout_ndcg(w, ds), loop.mean(axis=1), rtol=1e-12)


@pytest.mark.parametrize(("min_docs", "max_docs"), [(2, 40), (250, 300)])
def test_tied_scores_on_short_and_long_lists_match_the_loop(min_docs: int, max_docs: int) -> None:
    """Lists on either side of the counting threshold (256 items), scores with many ties."""
    ds = synthetic_letor(n_queries=6, n_features=3, min_docs=min_docs, max_docs=max_docs, rng=5)
    coarse = LetorDataset(
        features=np.round(ds.features * 2) / 2,  # three values per feature: ties everywhere
        relevance=ds.relevance,
        qids=ds.qids,
        offsets=ds.offsets,
    )
    w = np.array([[1.0, 0.0, 0.0], [0.5, -1.0, 2.0], [0.0, 0.0, 0.0]])
    loop = per_run_per_query_loop(coarse, w)
    np.testing.assert_allclose(HeldoutSet(coarse).per_query(w), loop, rtol=1e-12)


def test_bad_input() -> None:
    with pytest.raises(ValueError, match=r"weights must have shape \(B, 1\)"):
        heldout_ndcg([1.0], DS)
    with pytest.raises(ValueError, match=r"shape \(B, 1\)"):
        heldout_ndcg(np.ones((2, 3)), DS)
    with pytest.raises(ValueError, match="finite"):
        heldout_ndcg([[np.nan]], DS)
    with pytest.raises(ValueError, match="k must be"):
        heldout_ndcg([[1.0]], DS, k=0)
    with pytest.raises(TypeError, match="LetorDataset"):
        HeldoutSet("test.txt")  # type: ignore[arg-type]
