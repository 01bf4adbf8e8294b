"""LETOR datasets, writer, query streams, summaries and the shared data's manifest."""

from __future__ import annotations

import os
import re
import time
from itertools import permutations
from pathlib import Path

import numpy as np
import pytest
from letor_fixtures import FIXTURES, load_uncached
from scipy import stats

from oltr.data.dataset import LetorDataset, summarize
from oltr.data.letor import write_letor
from oltr.data.stream import QueryStream

#: Error rate of each statistical test in this file.
ALPHA = 0.001


def _tiny() -> LetorDataset:
    return LetorDataset(
        features=np.arange(12.0).reshape(6, 2),
        relevance=np.array([0, 1, 2, 0, 3, 1]),
        qids=np.array([4, 5, 6]),
        offsets=np.array([0, 3, 4, 6]),
    )


def test_dataset_properties_and_query() -> None:
    ds = _tiny()
    assert (ds.n_queries, ds.n_docs, ds.n_features) == (3, 6, 2)
    assert ds.list_lengths.tolist() == [3, 1, 2]
    X, R = ds.query(2)
    assert X.tolist() == [[8, 9], [10, 11]] and R.tolist() == [3, 1]


def test_padded_by_hand() -> None:
    X, R, mask = _tiny().padded([2, 1, 0])
    assert X.shape == (3, 3, 2)
    assert mask.tolist() == [[True, True, False], [True, False, False], [True, True, True]]
    assert R.tolist() == [[3, 1, 0], [0, 0, 0], [0, 1, 2]]
    assert X[0].tolist() == [[8, 9], [10, 11], [0, 0]]
    assert X[1].tolist() == [[6, 7], [0, 0], [0, 0]]
    assert X[2].tolist() == [[0, 1], [2, 3], [4, 5]]


def test_subset_by_hand() -> None:
    sub = _tiny().subset([2, 0, 2])
    assert sub.qids.tolist() == [6, 4, 6]
    assert sub.offsets.tolist() == [0, 2, 5, 7]
    assert sub.relevance.tolist() == [3, 1, 0, 1, 2, 3, 1]
    assert sub.features[:, 0].tolist() == [8, 10, 0, 2, 4, 8, 10]


def test_dataset_arrays_are_read_only_and_inputs_untouched() -> None:
    features = np.ones((2, 1))
    ds = LetorDataset(
        features=features, relevance=np.array([0, 1]), qids=np.array([1]), offsets=np.array([0, 2])
    )
    with pytest.raises(ValueError, match="read-only"):
        ds.features[0, 0] = 5.0
    features[0, 0] = 5.0  # the caller's array stays writable
    with pytest.raises(AttributeError):
        ds.features = features  # type: ignore[misc]


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"features": np.ones(3)}, ValueError, "features must be 2-D"),
        ({"features": np.array([[1.0], [np.nan], [0.0]])}, ValueError, "row 1 holds NaN or inf"),
        ({"relevance": np.array([0, 1])}, ValueError, "relevance must have shape"),
        ({"relevance": np.array([0, -1, 0])}, ValueError, "grades must be >= 0"),
        ({"relevance": np.array([0, 0.5, 1])}, ValueError, "whole numbers"),
        ({"offsets": np.array([1, 3])}, ValueError, "start at 0 and end at n_docs=3"),
        ({"offsets": np.array([0, 2])}, ValueError, "start at 0 and end at n_docs=3"),
        (
            {"offsets": np.array([0, 0, 3]), "qids": np.array([1, 2])},
            ValueError,
            "query 0 is empty",
        ),
        ({"qids": np.array([1, 2])}, ValueError, "qids must have shape"),
        ({"features": np.array([["a"], ["b"], ["c"]])}, TypeError, "numeric"),
    ],
)
def test_dataset_validation(
    kwargs: dict[str, object], error: type[Exception], message: str
) -> None:
    base: dict[str, object] = {
        "features": np.zeros((3, 1)),
        "relevance": np.array([0, 1, 2]),
        "qids": np.array([9]),
        "offsets": np.array([0, 3]),
    }
    with pytest.raises(error, match=re.escape(message)):
        LetorDataset(**(base | kwargs))  # type: ignore[arg-type]


@pytest.mark.parametrize("indices", [[3], [-1], [0, 7]])
def test_query_indices_out_of_range(indices: list[int]) -> None:
    ds = _tiny()
    with pytest.raises(ValueError, match=r"must lie in \[0, 3\)"):
        ds.subset(indices)
    with pytest.raises(ValueError, match=r"must lie in \[0, 3\)"):
        ds.padded(indices)
    with pytest.raises(ValueError, match=r"must lie in \[0, 3\)"):
        ds.query(indices[-1])


# ---------------------------------------------------------------------------
# Writing


def test_write_letor_text_by_hand(tmp_path: Path) -> None:
    ds = LetorDataset(
        features=np.array([[0.5, 0.0], [1.0, 0.125], [0.1, 3.0]]),
        relevance=np.array([2, 0, 1]),
        qids=np.array([7, 8]),
        offsets=np.array([0, 2, 3]),
    )
    write_letor(ds, tmp_path / "out.txt")
    assert (tmp_path / "out.txt").read_text() == (
        "2 qid:7 1:0.5 2:0.0\n0 qid:7 1:1.0 2:0.125\n1 qid:8 1:0.1 2:3.0\n"
    )
    write_letor(ds, tmp_path / "short.txt", precision=1)
    assert (tmp_path / "short.txt").read_text().splitlines()[1] == "0 qid:7 1:1 2:0.1"


@pytest.mark.parametrize("name", ["round.txt", "round.txt.gz"])
def test_write_then_load_round_trips_exactly(tmp_path: Path, name: str) -> None:
    rng = np.random.default_rng(3)
    X = rng.standard_normal((40, 6)) * 10.0 ** rng.integers(-8, 8, size=(40, 6))
    ds = LetorDataset(
        features=X,
        relevance=rng.integers(0, 5, 40),
        qids=np.array([3, 1, 2]),
        offsets=np.array([0, 10, 25, 40]),
    )
    write_letor(ds, tmp_path / name)
    back = load_uncached(tmp_path / name)
    np.testing.assert_array_equal(back.features, ds.features)
    np.testing.assert_array_equal(back.relevance, ds.relevance)
    np.testing.assert_array_equal(back.qids, ds.qids)
    np.testing.assert_array_equal(back.offsets, ds.offsets)


def test_gzip_output_is_gzip_and_deterministic(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ds = load_uncached(FIXTURES / "dense.txt")
    write_letor(ds, tmp_path / "a.txt.gz")
    # A gzip header stamped with the clock would differ a day later.
    later = time.time() + 86_400
    monkeypatch.setattr(time, "time", lambda: later)
    write_letor(ds, tmp_path / "b.txt.gz")
    assert (tmp_path / "a.txt.gz").read_bytes()[:2] == b"\x1f\x8b"
    assert (tmp_path / "a.txt.gz").read_bytes() == (tmp_path / "b.txt.gz").read_bytes()


def test_write_is_atomic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ds = load_uncached(FIXTURES / "dense.txt")
    target = tmp_path / "out.txt"
    target.write_text("old content\n")

    def fail(*args: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        write_letor(ds, target)
    assert target.read_text() == "old content\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_written_file_gets_the_usual_permissions(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        write_letor(_tiny(), tmp_path / "x.txt")
    finally:
        os.umask(old)
    assert (tmp_path / "x.txt").stat().st_mode & 0o777 == 0o644


def test_write_precision_validated(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="precision"):
        write_letor(_tiny(), tmp_path / "x.txt", precision=0)


# ---------------------------------------------------------------------------
# Streams


def test_stream_same_seed_same_stream_and_chunking_does_not_matter() -> None:
    for order in ("uniform", "epochs"):
        whole = QueryStream(13, order=order, rng=5).take(10_000)
        stream = QueryStream(13, order=order, rng=5)
        pieces = [stream.take(n) for n in (1, 0, 12, 13, 4096, 5878)]
        np.testing.assert_array_equal(np.concatenate(pieces), whole)
        assert stream.n_taken == 10_000
        assert not np.array_equal(QueryStream(13, order=order, rng=6).take(10_000), whole)
        assert whole.dtype == np.int64 and whole.min() >= 0 and whole.max() < 13


@pytest.mark.parametrize("order", ["uniform", "epochs"])
def test_stream_iterates_like_take(order: str) -> None:
    whole = QueryStream(_tiny(), order=order, rng=2).take(9000).tolist()  # type: ignore[arg-type]
    stream = QueryStream(_tiny(), order=order, rng=2)  # type: ignore[arg-type]
    mixed: list[int] = []
    while len(mixed) < 9000:  # next() and take() interleaved, across block ends
        mixed.append(next(stream))
        mixed.extend(stream.take(min(7, 9000 - len(mixed))).tolist())
    assert mixed == whole and stream.n_taken == 9000


def test_epochs_visit_every_query_once_per_pass() -> None:
    n = 11
    passes = QueryStream(n, order="epochs", rng=0).take(20 * n).reshape(20, n)
    assert all(sorted(p) == list(range(n)) for p in passes.tolist())
    assert len({tuple(p) for p in passes.tolist()}) > 1  # reshuffled each pass


def test_uniform_stream_is_uniform_chi_square() -> None:
    n, draws = 7, 70_000
    counts = np.bincount(QueryStream(n, order="uniform", rng=11).take(draws), minlength=n)
    assert stats.chisquare(counts).pvalue > ALPHA


def test_epoch_orders_are_uniform_permutations_chi_square() -> None:
    n, epochs = 4, 12_000
    passes = QueryStream(n, order="epochs", rng=12).take(n * epochs).reshape(epochs, n)
    index = {p: i for i, p in enumerate(permutations(range(n)))}
    counts = np.bincount([index[tuple(p)] for p in passes.tolist()], minlength=len(index))
    assert stats.chisquare(counts).pvalue > ALPHA


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((0,), {"rng": 0}, "at least one query"),
        ((5,), {"order": "random", "rng": 0}, "order must be"),
        ((True,), {"rng": 0}, "at least one query"),
    ],
)
def test_stream_bad_arguments(
    args: tuple[object, ...], kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        QueryStream(*args, **kwargs)  # type: ignore[arg-type]


def test_stream_take_validates_n() -> None:
    with pytest.raises(ValueError, match="n must be an integer >= 0"):
        QueryStream(3, rng=0).take(-1)


# ---------------------------------------------------------------------------
# Summary


def test_summarize_by_hand() -> None:
    s = summarize(load_uncached(FIXTURES / "dense.txt"))
    assert (s["n_queries"], s["n_docs"], s["n_features"]) == (2, 5, 3)
    assert s["grades"] == {0: 3, 1: 1, 2: 1}
    assert s["list_length"] == {"min": 2, "median": 2.5, "mean": 2.5, "max": 3}
    assert s["zero_relevance_queries"] == 1
    assert s["feature_range"] == [0.0, 1.0]
    # Non-constant (query, feature) pairs: all 3 of query 10 span [0, 1]; of query 20,
    # f2 is constant and f1, f3 do not span [0, 1]: 3 of 5.
    assert s["minmax_fraction"] == pytest.approx(3 / 5)
    assert s["query_normalised"] is False
    normalised = summarize(load_uncached(FIXTURES / "dense.txt", normalize=True))
    assert normalised["minmax_fraction"] == 1.0 and normalised["query_normalised"] is True


def test_summarize_counts_absent_grades_as_zero() -> None:
    s = summarize(load_uncached(FIXTURES / "noncontiguous.txt"))
    assert s["grades"] == {0: 3, 1: 2, 2: 1}
    s = summarize(load_uncached(FIXTURES / "sparse.txt"))
    assert s["grades"] == {0: 2, 1: 1, 2: 1}
    assert s["feature_range"] == [-15.0, 7.0] and s["query_normalised"] is False
