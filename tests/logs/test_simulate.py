"""Simulated click logs: click laws, propensities in closed form, loggers, swaps, bad input."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray
from scipy import stats

from oltr.data import LetorDataset, load_letor, synthetic_letor, write_letor
from oltr.errors import InputError
from oltr.logs import ClickLog
from oltr.logs.simulate import (
    SWAP_TAG,
    graded_click_probability,
    logger_top_k,
    random_logger,
    simulate_log,
    split_swap_tags,
    train_logger,
    true_click_probabilities,
    true_propensities,
    trust_parameters,
)
from oltr.metrics.ranking import ndcg

#: Overall false-alarm rate of every statistical test below (fixed seeds: each either passes
#: or fails for good; a correct simulator fails one with probability at most ALPHA).
ALPHA = 1e-3
K = 10


@pytest.fixture(scope="module")
def data() -> LetorDataset:
    """30 queries of 10..20 documents (every shown list is full), grades 0..2."""
    return synthetic_letor(n_queries=30, n_features=5, max_grade=2, min_docs=10, max_docs=20, rng=0)


def _query_index(ds: LetorDataset, log: ClickLog) -> NDArray[np.int64]:
    where = {str(q): i for i, q in enumerate(ds.qids.tolist())}
    return np.array([where[q] for q in log.qids.tolist()], dtype=np.int64)


def _shown_grades(ds: LetorDataset, log: ClickLog) -> NDArray[np.int64]:
    """Grades of the shown lists, (n, K): all lists are full in these tests."""
    q = _query_index(ds, log)
    rows = ds.offsets[q][log.impression_of_entry] + log.docs
    return np.asarray(ds.relevance[rows].reshape(log.n_impressions, -1), dtype=np.int64)


def _worst_cell_p_value(ds: LetorDataset, log: ClickLog, **model: object) -> float:
    """Smallest Bonferroni-corrected two-sided p-value over (position, grade) cells.

    In each cell the click count is a sum of independent Bernoullis (sessions are
    independent) with the exact probabilities of ``true_click_probabilities``;
    its z-score is normal by the CLT (each cell holds >= 1000 draws). The union
    bound makes the test valid even where positions are dependent (cascade).
    """
    grades = _shown_grades(ds, log)
    clicks = log.clicks.reshape(grades.shape).astype(float)
    p = true_click_probabilities(grades, max_grade=int(ds.relevance.max()), **model)  # type: ignore[arg-type]
    worst, cells = 1.0, 0
    for g in np.unique(grades):
        for k in range(grades.shape[1]):
            cell = grades[:, k] == g
            var = float((p[cell, k] * (1 - p[cell, k])).sum())
            if cell.sum() < 1000 or var == 0:
                continue
            z = (clicks[cell, k].sum() - p[cell, k].sum()) / math.sqrt(var)
            worst = min(worst, 2 * stats.norm.sf(abs(z)))
            cells += 1
    assert cells >= 20
    return worst * cells


# ---------------------------------------------------------------------------
# closed forms


@pytest.mark.parametrize("eta", [0.0, 0.5, 1.0, 2.0])
def test_true_propensities_are_one_over_k_to_the_eta(eta: float) -> None:
    theta = true_propensities("pbm", eta=eta, top_k=K)
    expected = np.array([1.0 / k**eta for k in range(1, K + 1)])
    np.testing.assert_allclose(theta, expected, rtol=1e-15)  # up to rounding of pow
    assert theta[0] == 1.0
    np.testing.assert_array_equal(true_propensities("trust", eta=eta, top_k=K), theta)


def test_graded_click_probability_and_trust_values_by_hand() -> None:
    # ε + (1 − ε)(2^y − 1)/(2^ymax − 1) with ε = 0.1, ymax = 4: y = 2 gives 0.1 + 0.9·3/15.
    got = graded_click_probability([0, 2, 4], noise=0.1, max_grade=4)
    np.testing.assert_allclose(got, [0.1, 0.28, 1.0], rtol=1e-15)
    plus, minus = trust_parameters(25)
    np.testing.assert_allclose(plus[[0, 9, 19, 24]], [0.98, 0.89, 0.79, 0.79], rtol=1e-15)
    np.testing.assert_allclose(minus[[0, 1, 9, 24]], [0.65, 0.325, 0.065, 0.065], rtol=1e-15)


def test_cascade_has_no_position_only_propensities() -> None:
    with pytest.raises(InputError, match="cascade"):
        true_propensities("cascade", eta=1.0, top_k=K)


# ---------------------------------------------------------------------------
# click laws


@pytest.mark.parametrize(
    ("model", "swap"),
    [
        ({"click_model": "pbm", "eta": 1.0, "noise": 0.1}, None),
        ({"click_model": "pbm", "eta": 2.0, "noise": 0.2}, "swap-1k"),
        ({"click_model": "trust", "eta": 0.5}, None),
        ({"click_model": "cascade", "cascade": "navigational"}, "randpair"),
    ],
)
def test_click_frequencies_match_the_click_model(
    data: LetorDataset, model: dict[str, object], swap: str | None
) -> None:
    w = random_logger(data.n_features, rng=1)
    log = simulate_log(data, w, n_sessions=60_000, top_k=K, swap=swap, rng=2, **model)  # type: ignore[arg-type]
    assert _worst_cell_p_value(data, log, **model) > ALPHA


def test_the_frequency_test_can_fail(data: LetorDataset) -> None:
    # Clicks drawn with η = 1 judged against η = 2 (and against 0-based ranks) must be rejected.
    log = simulate_log(data, random_logger(5, rng=1), n_sessions=60_000, eta=1.0, rng=2)
    assert _worst_cell_p_value(data, log, click_model="pbm", eta=2.0) < ALPHA
    assert _worst_cell_p_value(data, log, click_model="pbm", eta=1.0, noise=0.15) < ALPHA


def test_queries_without_a_relevant_document_are_kept_and_clicked_at_noise_rate() -> None:
    ds = LetorDataset(
        features=np.arange(6, dtype=float)[:, None],
        relevance=np.array([0, 0, 0, 1, 0, 2]),
        qids=np.array([5, 6]),
        offsets=np.array([0, 3, 6]),
    )
    log = simulate_log(ds, [1.0], n_sessions=20_000, eta=0.0, noise=0.3, rng=4)
    empty = log.qids == "5"
    # Queries uniform: the count of query "5" is Binomial(20000, 1/2).
    assert stats.binomtest(int(empty.sum()), log.n_impressions, 0.5).pvalue > ALPHA
    clicks = log.take(empty).clicks
    assert stats.binomtest(int(clicks.sum()), clicks.size, 0.3).pvalue > ALPHA


# ---------------------------------------------------------------------------
# loggers, mixing, reproducibility


def test_top_k_breaks_ties_by_document_index() -> None:
    ds = LetorDataset(
        features=np.array([[1.0], [2.0], [2.0], [0.0], [3.0], [3.0], [3.0]]),
        relevance=np.zeros(7, dtype=int),
        qids=np.array([1, 2]),
        offsets=np.array([0, 4, 7]),
    )
    docs, lengths = logger_top_k(ds, [1.0], 5)
    assert docs.tolist() == [[1, 2, 0, 3, -1], [0, 1, 2, -1, -1]]
    assert lengths.tolist() == [4, 3]
    docs, _ = logger_top_k(ds, [-1.0], 2)
    assert docs.tolist() == [[3, 0], [0, 1]]


def test_same_seed_same_log_and_another_seed_another(data: LetorDataset) -> None:
    w = [random_logger(5, rng=1), random_logger(5, rng=2)]
    a, b, c = (
        simulate_log(data, w, n_sessions=5000, swap="swap-1k", click_model="trust", rng=s)
        for s in (7, 7, 8)
    )
    for name in ("qids", "offsets", "docs", "clicks", "loggers"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert not np.array_equal(a.clicks, c.clicks)


def test_loggers_and_queries_are_drawn_uniformly(data: LetorDataset) -> None:
    w = [random_logger(5, rng=i) for i in range(3)]
    log = simulate_log(data, w, n_sessions=30_000, logger_names=["a", "b", "c"], rng=3)
    assert log.loggers is not None
    names, counts = np.unique(log.loggers, return_counts=True)
    assert names.tolist() == ["a", "b", "c"]
    assert stats.chisquare(counts).pvalue > ALPHA
    _, q_counts = np.unique(log.qids, return_counts=True)
    assert q_counts.size == data.n_queries and stats.chisquare(q_counts).pvalue > ALPHA
    # Each impression shows its own logger's list.
    q = _query_index(data, log)
    for i, name in enumerate("abc"):
        table, _ = logger_top_k(data, w[i], K)
        rows = np.flatnonzero(log.loggers == name)
        shown = log.take(rows).docs.reshape(rows.size, K)
        np.testing.assert_array_equal(shown, table[q[rows]])


@pytest.mark.parametrize("swap", ["swap-1k", "randpair"])
def test_swaps_happen_at_the_stated_rate_and_positions(swap: str) -> None:
    # Lists of 3..20 documents, top_k = 10: K = min(10, m_q) varies by query.
    ds = synthetic_letor(n_queries=40, n_features=4, min_docs=3, max_docs=20, rng=5)
    w = random_logger(4, rng=6)
    log = simulate_log(ds, w, n_sessions=40_000, top_k=K, swap=swap, logger_names=["s"], rng=7)
    assert log.loggers is not None
    names, k = split_swap_tags(log.loggers)
    assert set(names.tolist()) == {"s"}
    table, lengths = logger_top_k(ds, w, K)
    q = _query_index(ds, log)
    shown_len = log.list_lengths
    np.testing.assert_array_equal(shown_len, lengths[q])
    low = 1 if swap == "swap-1k" else 2
    assert np.all((k >= low) | (shown_len == 1)) and np.all(k <= shown_len)
    # The shown list is the logger's with positions 1 and k exchanged (exactly).
    for i in range(0, log.n_impressions, 97):
        expected = table[q[i], : shown_len[i]].copy()
        j = k[i] - 1
        expected[0], expected[j] = expected[j], expected[0]
        np.testing.assert_array_equal(log.impression(i)[1], expected)
    # k is uniform on low..K for every list length K.
    for length in np.unique(shown_len[shown_len >= 3]):
        ks = k[shown_len == length]
        counts = np.bincount(ks, minlength=length + 1)[low:]
        assert stats.chisquare(counts).pvalue > ALPHA / 20  # Bonferroni over <= 20 lengths


def test_split_swap_tags_reads_what_simulate_writes() -> None:
    names, k = split_swap_tags([f"x{SWAP_TAG}2", "y", f"a{SWAP_TAG}b"])
    assert names.tolist() == ["x", "y", f"a{SWAP_TAG}b"] and k.tolist() == [2, 0, 0]


# ---------------------------------------------------------------------------
# the logging ranker


def _mean_ndcg(ds: LetorDataset, weights: np.ndarray) -> float:
    docs, lengths = logger_top_k(ds, weights, int(ds.list_lengths.max()))
    values = [
        ndcg(ds.query(i)[1], docs[i, : lengths[i]], k=10)
        for i in range(ds.n_queries)
        if ds.query(i)[1].max() > 0
    ]
    return float(np.mean(values))


def test_train_logger_follows_its_documented_rule(data: LetorDataset) -> None:
    from sklearn.svm import LinearSVC

    got = train_logger(data, share=0.2, min_queries=3, c=50.0, rng=11)
    gen = np.random.default_rng(11)
    n = max(3, math.ceil(0.2 * data.n_queries))
    queries = np.sort(gen.choice(data.n_queries, size=n, replace=False))
    seed = int(gen.integers(2**31 - 1))
    diffs = []
    for q in queries:
        X, y = data.query(int(q))
        for i in range(len(y)):
            for j in range(len(y)):
                if y[i] > y[j]:
                    diffs.append(X[i] - X[j])
    D = np.array(diffs)
    svm = LinearSVC(
        loss="hinge", fit_intercept=False, C=50.0 / (2 * n), dual=True, max_iter=100_000,
        random_state=seed,
    )  # fmt: skip
    svm.fit(np.vstack([D, -D]), np.r_[np.ones(len(D)), -np.ones(len(D))])
    np.testing.assert_allclose(got, svm.coef_[0], rtol=1e-12)  # same solver, same pairs
    np.testing.assert_array_equal(got, train_logger(data, share=0.2, min_queries=3, c=50.0, rng=11))


def test_svm_logger_beats_random_rankers_on_held_out_synthetic_queries() -> None:
    train = synthetic_letor(n_queries=200, n_features=10, rng=20)
    test = synthetic_letor(n_queries=200, n_features=10, rng=20).subset(np.arange(100, 200))
    svm = _mean_ndcg(test, train_logger(train.subset(np.arange(100)), rng=21))
    randoms = [_mean_ndcg(test, random_logger(10, rng=s)) for s in range(10)]
    assert svm > max(randoms)


@pytest.mark.shared_data
def test_svm_logger_beats_random_rankers_on_mq2008(shared_data: Path) -> None:
    fold = shared_data / "LETOR4.0/MQ2008/Fold1"
    train, test = load_letor(fold / "train.txt.gz"), load_letor(fold / "test.txt.gz")
    svm = [_mean_ndcg(test, train_logger(train, rng=s)) for s in range(3)]
    randoms = [_mean_ndcg(test, random_logger(train.n_features, rng=s)) for s in range(10)]
    # The 1% logger is weak but clearly better than chance (0.55-0.61 against 0.33-0.48 here).
    assert min(svm) > max(randoms)


# ---------------------------------------------------------------------------
# bad input


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"eta": -0.5}, "eta"),
        ({"eta": float("nan")}, "eta"),
        ({"top_k": 0}, "top_k"),
        ({"click_model": "dbn"}, "unknown click model"),
        ({"n_sessions": 0}, "n_sessions"),
        ({"n_sessions": -3}, "n_sessions"),
        ({"swap": "shuffle"}, "unknown swap"),
        ({"noise": 1.5}, "noise"),
        ({"max_grade": 1}, "max_grade"),
        ({"logger_names": ["a", "a"]}, "logger_names"),
        ({"loggers": np.ones(3)}, "loggers"),
    ],
)
def test_bad_input_is_refused_with_a_clear_error(
    data: LetorDataset, kwargs: dict[str, object], match: str
) -> None:
    args: dict[str, object] = {"n_sessions": 10, "rng": 0, "loggers": [np.ones(5), -np.ones(5)]}
    args.update(kwargs)
    loggers = args.pop("loggers")
    with pytest.raises(InputError, match=match):
        simulate_log(data, loggers, **args)  # type: ignore[arg-type]


def test_train_logger_refuses_bad_share_and_pairless_samples(data: LetorDataset) -> None:
    with pytest.raises(InputError, match="share"):
        train_logger(data, share=0.0, rng=0)
    flat = LetorDataset(
        features=np.eye(4), relevance=np.zeros(4, dtype=int), qids=np.array([1, 2]),
        offsets=np.array([0, 2, 4]),
    )  # fmt: skip
    with pytest.raises(InputError, match="no pair"):
        train_logger(flat, rng=0)


# ---------------------------------------------------------------------------
# the command


def test_cli_writes_the_log_and_the_truth(tmp_path: Path) -> None:
    io = pytest.importorskip("oltr.logs.io")
    import typer
    from typer.testing import CliRunner

    from oltr.cli.logs_simulate import simulate
    from oltr.random import child_rng

    ds = synthetic_letor(n_queries=20, n_features=4, max_grade=2, rng=30)
    write_letor(ds, tmp_path / "train.txt")
    app = typer.Typer()
    app.command()(simulate)
    app.command("other")(lambda: None)  # two commands: the first is a named subcommand
    args = ["simulate", "--data", str(tmp_path / "train.txt")]
    args += ["--out", str(tmp_path / "log.parquet")]
    args += ["--sessions", "3000", "--eta", "2", "--logger", "random", "--seed", "4", "-q"]
    result = CliRunner().invoke(app, [*args, "--truth", str(tmp_path / "truth.json")])
    assert result.exit_code == 0, result.output
    truth = json.loads((tmp_path / "truth.json").read_text())
    np.testing.assert_allclose(truth["propensities"], true_propensities("pbm", 2.0, 10))
    weights = truth["loggers"][0]["weights"]
    expected = simulate_log(
        load_letor(tmp_path / "train.txt"), weights, n_sessions=3000, eta=2.0,
        rng=child_rng(4, "sessions"), logger_names=["random"],
    )  # fmt: skip
    got = io.read_log(tmp_path / "log.parquet")
    for name in ("qids", "offsets", "docs", "clicks", "loggers"):
        np.testing.assert_array_equal(getattr(got, name), getattr(expected, name))
    bad = CliRunner().invoke(app, [*args, "--eta", "-1"])
    assert bad.exit_code != 0 and "eta" in str(bad.exception)
