"""Simulated click logs: the semi-synthetic protocol of counterfactual learning to rank.

A *logging ranker* (a Ranking SVM trained on a small share of the labelled
queries, :func:`train_logger`) shows its top ``K`` for queries drawn uniformly,
and a simulated user clicks (:func:`simulate_log`): the protocol of Joachims,
Swaminathan & Schnabel 2017 (WSDM), Ai et al. 2018 (SIGIR) and Wang et al. 2018
(WSDM), experimental setups. Several loggers give the logs of intervention harvesting
(Agarwal et al. 2019, WSDM); swaps those of the randomization estimators.

Click models, with 1-based position ``k`` and examination ``θ_k = (1/k)^η``
(Joachims et al. 2017, experiments; η ∈ {0.5, 1, 2}):

``"pbm"``
    position-based: ``P(click at k) = θ_k · (ε + (1 − ε)(2^y − 1)/(2^ymax − 1))``,
    the graded click noise of Ai et al. 2018 and Wang et al. 2018
    (ε = 0.1; :data:`DEFAULT_NOISE`). On binary grades it is Joachims et al.
    2017's ε⁻ = ε, ε⁺ = 1.
``"trust"``
    trust bias (Agarwal, Wang, Li, Bendersky & Najork 2019, WWW):
    ``P(click at k) = θ_k · (ε⁺_k if relevant else ε⁻_k)`` with the values
    ε⁺_k = 1 − (min(k, 20) + 1)/100 and ε⁻_k = 0.65 / min(k, 10) that
    Vardasbi, Oosterhuis & de Rijke 2020 (CIKM, experiments) set to mimic the trust
    bias Agarwal et al. measured (:func:`trust_parameters`). Relevance is
    binarised: relevant iff ``y >= max(1, ymax − 1)`` (grades 3–4 of 0–4, as
    the papers do on Yahoo!/MSLR; grades 1–2 of LETOR 4.0's 0–2, LETOR's own
    binary convention).
``"cascade"``
    a cascade user of :data:`oltr.clicks.CASCADE_PARAMETERS` (``cascade=``,
    default informational); no position-only examination.

Queries are drawn uniformly from *all* queries (each has a document); those
without a relevant document are kept, as in the field's logs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from oltr.clicks.click_models import CascadeClickModel, cascade_model
from oltr.data.dataset import LetorDataset
from oltr.errors import InputError
from oltr.logs.schema import ClickLog
from oltr.random import RNGLike, as_rng

__all__ = [
    "CLICK_MODELS",
    "DEFAULT_NOISE",
    "LOGGER_C",
    "SWAP_TAG",
    "SWAPS",
    "graded_click_probability",
    "logger_top_k",
    "random_logger",
    "simulate_log",
    "split_swap_tags",
    "train_logger",
    "true_click_probabilities",
    "true_propensities",
    "trust_parameters",
]

#: The click models of :func:`simulate_log`.
CLICK_MODELS = ("pbm", "trust", "cascade")
#: The result randomizations of :func:`simulate_log` (or None).
SWAPS = ("swap-1k", "randpair")
#: P(click | examined, grade 0) of the graded PBM: Ai et al. 2018, Wang et al. 2018.
DEFAULT_NOISE = 0.1
#: SVMrank's C for the logging ranker, as ULTRA's initial ranker (``svm_rank_learn -c 200``).
LOGGER_C = 200.0
#: A swapped impression's logger is ``f"{name}{SWAP_TAG}{k}"`` (k 1-based; k = 1: unchanged).
SWAP_TAG = "@swap"
_CHUNK = 1 << 16  # sessions per vectorised chunk (fixed: the log depends only on the seed)


def _check_int(value: int, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise InputError(f"{name} must be an int >= 1, got {value!r}")
    return int(value)


def _check_eta_top_k(eta: float, top_k: int) -> tuple[float, int]:
    top_k = _check_int(top_k, "top_k")
    eta = float(eta)
    if not math.isfinite(eta) or eta < 0:
        raise InputError(f"eta must be a finite number >= 0, got {eta!r}")
    return eta, int(top_k)


def _check_click_model(click_model: str) -> str:
    if click_model not in CLICK_MODELS:
        raise InputError(f"unknown click model {click_model!r}; choose one of {list(CLICK_MODELS)}")
    return click_model


# ---------------------------------------------------------------------------
# click probabilities in closed form


def trust_parameters(top_k: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """ε⁺_k and ε⁻_k, k = 1..top_k, of the trust-bias click model.

    ε⁺_k = 1 − (min(k, 20) + 1)/100 (P(click | examined, relevant)) and
    ε⁻_k = 0.65 / min(k, 10) (P(click | examined, not relevant)): Vardasbi et
    al. 2020 (CIKM) and 2021 (CIKM, mixture-based correction, eqs. 10–11),
    modelled on the trust bias Agarwal et al. 2019 (WWW) estimated.

    >>> plus, minus = trust_parameters(3)
    >>> plus.round(2).tolist(), minus.round(4).tolist()
    ([0.98, 0.97, 0.96], [0.65, 0.325, 0.2167])
    """
    _check_eta_top_k(0.0, top_k)
    k = np.arange(1, top_k + 1)
    return 1.0 - (np.minimum(k, 20) + 1) / 100.0, 0.65 / np.minimum(k, 10)


def graded_click_probability(
    grades: ArrayLike, *, noise: float = DEFAULT_NOISE, max_grade: int
) -> NDArray[np.float64]:
    """P(click | examined, y) = ε + (1 − ε)(2^y − 1)/(2^ymax − 1) (Ai et al. 2018).

    >>> graded_click_probability([0, 1, 2], noise=0.1, max_grade=2).tolist()
    [0.1, 0.4, 1.0]
    """
    noise = float(noise)
    if not 0.0 <= noise <= 1.0:
        raise InputError(f"noise must be a probability in [0, 1], got {noise!r}")
    y = np.asarray(grades, dtype=np.float64)
    top = 2.0 ** max(int(max_grade), 1) - 1.0
    frac = (2.0**y - 1.0) / top  # ε + (1 − ε)·frac rounded may pass 1 (ε = 0.2: 1 + 2^-52)
    return np.asarray(np.minimum(noise + (1.0 - noise) * frac, 1.0), dtype=np.float64)


def true_propensities(
    click_model: str = "pbm", eta: float = 1.0, top_k: int = 10
) -> NDArray[np.float64]:
    """Examination probabilities θ_k = (1/k)^η, k = 1..top_k, normalised so θ_1 = 1.

    For ``"pbm"`` and ``"trust"`` (whose clicks are also scaled by ε⁺_k/ε⁻_k);
    the cascade model has no position-only examination and is refused.

    >>> true_propensities("pbm", eta=2.0, top_k=3).tolist()
    [1.0, 0.25, 0.1111111111111111]
    """
    eta, top_k = _check_eta_top_k(eta, top_k)
    if _check_click_model(click_model) == "cascade":
        raise InputError("the cascade model has no position-only examination probabilities")
    return np.asarray((1.0 / np.arange(1, top_k + 1)) ** eta, dtype=np.float64)


def true_click_probabilities(
    grades: ArrayLike,
    *,
    click_model: str = "pbm",
    eta: float = 1.0,
    noise: float = DEFAULT_NOISE,
    max_grade: int,
    cascade: str = "informational",
) -> NDArray[np.float64]:
    """Exact P(click) at every position of full shown lists, grades (..., K), rank 1 first.

    The parameters are those of :func:`simulate_log`."""
    g = np.asarray(grades, dtype=np.int64)
    eta, top_k = _check_eta_top_k(eta, int(g.shape[-1]) if g.ndim else 0)
    model = _check_click_model(click_model)
    if model == "cascade":
        return _cascade(cascade, max_grade).click_probabilities(g)
    theta = true_propensities(model, eta, top_k)
    if g.size and (g.min() < 0 or g.max() > max_grade):
        raise InputError(f"grades must lie in 0..max_grade={max_grade}")
    if model == "pbm":  # a table per grade, indexed: no pow per entry
        return theta * graded_click_probability(np.arange(max_grade + 1), noise=noise,
                                                max_grade=max_grade)[g]  # fmt: skip
    plus, minus = trust_parameters(top_k)
    return np.asarray(theta * np.where(g >= max(1, int(max_grade) - 1), plus, minus))


def _cascade(name: str, max_grade: int) -> CascadeClickModel:
    return cascade_model(name, n_grades=int(max_grade) + 1)


# ---------------------------------------------------------------------------
# logging rankers


def _pairs(dataset: LetorDataset, queries: NDArray[np.int64]) -> NDArray[np.float64]:
    """x_i − x_j for every pair of one query's documents with y_i > y_j."""
    diffs = []
    for q in queries.tolist():
        X, y = dataset.query(q)
        i, j = np.nonzero(y[:, None] > y[None, :])
        if i.size:
            diffs.append(X[i] - X[j])
    if not diffs:
        return np.zeros((0, dataset.n_features))
    return np.concatenate(diffs)


def train_logger(
    dataset: LetorDataset,
    *,
    share: float = 0.01,
    min_queries: int = 10,
    c: float = LOGGER_C,
    rng: RNGLike,
) -> NDArray[np.float64]:
    """A Ranking SVM trained on a small random share of the labelled queries.

    The production ranker of the semi-synthetic protocol: "a Ranking SVM
    trained on 1 percent of the training queries" (Joachims et al. 2017;
    Ai et al. 2018, whose ULTRA toolkit runs ``svm_rank_learn -c 200`` on
    a 1% sample). The rule:

    1. ``n = min(n_queries, max(min_queries, ceil(share · n_queries)))`` queries
       drawn without replacement by ``rng`` (``rng.choice``), all of them kept
       (also those with one grade only, which give no pair);
    2. every pair of one query's documents with grades ``y_i > y_j`` gives the
       difference ``x_i − x_j`` (Joachims 2002, KDD, eq. 12), added twice, as
       ``(x_i − x_j, +1)`` and ``(x_j − x_i, −1)``;
    3. scikit-learn's ``LinearSVC(loss="hinge", fit_intercept=False,
       C=c / (2 n))`` on them, ``random_state`` the next ``rng.integers(2**31 - 1)``.
       SVMrank minimises ½‖w‖² + (c/n) Σ ξ_ij over the n training queries (its
       C is divided by the number of queries; SVMrank's page); each pair
       appears twice with the same hinge loss, hence c / (2n).

    Parameters
    ----------
    dataset
        Labelled training queries.
    share, min_queries
        Share of the queries to train on, in (0, 1], and the least number of
        queries (the 1% of a small set such as MQ2008 is 5).
    c
        SVMrank's C (default :data:`LOGGER_C`).
    rng
        Seed or Generator: the sample of queries and the solver's seed.

    Returns
    -------
    weights
        Array (n_features,): the logger scores documents by ``X @ weights``.
    """
    if not (isinstance(share, int | float) and 0.0 < share <= 1.0):
        raise InputError(f"share must be in (0, 1], got {share!r}")
    _check_int(min_queries, "min_queries")
    if not (isinstance(c, int | float) and math.isfinite(c) and c > 0):
        raise InputError(f"c must be a finite number > 0, got {c!r}")
    gen = as_rng(rng)
    n_q = dataset.n_queries
    n = min(n_q, max(min_queries, math.ceil(share * n_q)))
    queries = np.sort(gen.choice(n_q, size=n, replace=False)).astype(np.int64)
    seed = int(gen.integers(2**31 - 1))
    diffs = _pairs(dataset, queries)
    if diffs.shape[0] == 0:
        raise InputError(
            f"the {n} sampled queries hold no pair of documents with different grades; "
            "raise share or min_queries"
        )
    from sklearn.svm import LinearSVC

    X = np.concatenate([diffs, -diffs])
    y = np.concatenate([np.ones(diffs.shape[0]), -np.ones(diffs.shape[0])])
    svm = LinearSVC(loss="hinge", fit_intercept=False, C=c / (2 * n), dual=True,
                    max_iter=100_000, random_state=seed)  # fmt: skip
    svm.fit(X, y)
    return np.asarray(svm.coef_[0], dtype=np.float64)


def random_logger(n_features: int, *, rng: RNGLike) -> NDArray[np.float64]:
    """A random linear logger: standard normal weights scaled to unit norm."""
    w = as_rng(rng).standard_normal(_check_int(n_features, "n_features"))
    return np.asarray(w / np.linalg.norm(w), dtype=np.float64)


def logger_top_k(
    dataset: LetorDataset, weights: ArrayLike, top_k: int
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Every query's top ``top_k`` under ``X @ weights``; ties go to the lower document index.

    Returns ``docs`` (n_queries, top_k), int64, the document indices within the
    query, best first, padded with -1, and ``lengths`` (n_queries,), ``min(top_k, m_q)``.
    """
    top_k = _check_int(top_k, "top_k")
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (dataset.n_features,) or not np.isfinite(w).all():
        raise InputError(
            f"logger weights must be {dataset.n_features} finite numbers (one per feature), "
            f"got shape {w.shape}"
        )
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1, user_api="blas"):  # the same sums, bit for bit, on every machine
        scores = dataset.features @ w
    lengths_all = dataset.list_lengths
    query = np.repeat(np.arange(dataset.n_queries), lengths_all)
    local = np.arange(dataset.n_docs) - dataset.offsets[query]
    order = np.lexsort((local, -scores, query))  # by query, score down, index up
    # Sorting keeps every query's block in place, so slot i of the sorted order holds rank
    # i - offsets[query[i]] of query[i], and local[order][i] is that document.
    rank = np.arange(dataset.n_docs) - dataset.offsets[query]
    keep = rank < top_k
    docs = np.full((dataset.n_queries, top_k), -1, dtype=np.int64)
    docs[query[keep], rank[keep]] = local[order][keep]
    return docs, np.minimum(lengths_all, top_k).astype(np.int64)


# ---------------------------------------------------------------------------
# sessions


def split_swap_tags(loggers: ArrayLike) -> tuple[NDArray[np.str_], NDArray[np.int64]]:
    """Split ``f"{name}{SWAP_TAG}{k}"`` logger names into names and swap positions.

    ``k`` is the 1-based swapped position (1: shown unchanged; 0: no swap tag).

    >>> names, k = split_swap_tags(["svm@swap3", "svm@swap1", "svm"])
    >>> names.tolist(), k.tolist()
    (['svm', 'svm', 'svm'], [3, 1, 0])
    """
    arr = np.asarray(loggers, dtype=str)
    parts = np.char.rpartition(arr, SWAP_TAG)
    tagged = (parts[:, 1] == SWAP_TAG) & np.char.isdigit(parts[:, 2])
    names = np.where(tagged, parts[:, 0], arr)
    k = np.zeros(arr.shape, dtype=np.int64)
    if tagged.any():
        k[tagged] = parts[:, 2][tagged].astype(np.int64)
    return names, k


def _check_loggers(
    loggers: ArrayLike | Sequence[ArrayLike], n_features: int, names: Sequence[str] | None
) -> tuple[NDArray[np.float64], list[str]]:
    w = np.asarray(loggers, dtype=np.float64)
    w = w[None, :] if w.ndim == 1 else w
    if w.ndim != 2 or w.shape[0] < 1 or w.shape[1] != n_features:
        raise InputError(
            f"loggers must be one weight vector or a list of them, each of {n_features} "
            f"numbers (one per feature), got shape {w.shape}"
        )
    if names is None:
        names = ["logger"] if w.shape[0] == 1 else [f"logger{i}" for i in range(w.shape[0])]
    names = [str(n) for n in names]
    bad = [n for n in names if not n or SWAP_TAG in n]
    if len(names) != w.shape[0] or len(set(names)) != len(names) or bad:
        raise InputError(
            f"logger_names must be {w.shape[0]} distinct non-empty names without "
            f"{SWAP_TAG!r}, got {names}"
        )
    return w, names


def _swap_positions(
    swap: str | None, lengths: NDArray[np.int64], gen: np.random.Generator
) -> NDArray[np.int64]:
    """0-based position swapped with the top one, per session (0: no swap)."""
    u = gen.random(lengths.shape[0])
    if swap == "swap-1k":  # k uniform on 1..K
        return np.minimum((u * lengths).astype(np.int64), lengths - 1)
    # randpair: k uniform on 2..K (a list of one document stays as it is)
    others = np.maximum(lengths - 1, 1)
    k = 1 + np.minimum((u * others).astype(np.int64), others - 1)
    return np.where(lengths > 1, k, 0)


def simulate_log(
    dataset: LetorDataset,
    loggers: ArrayLike | Sequence[ArrayLike],
    *,
    n_sessions: int,
    click_model: str = "pbm",
    eta: float = 1.0,
    top_k: int = 10,
    noise: float = DEFAULT_NOISE,
    cascade: str = "informational",
    max_grade: int | None = None,
    swap: str | None = None,
    rng: RNGLike,
    logger_names: Sequence[str] | None = None,
    progress: Callable[[int], Any] | None = None,
) -> ClickLog:
    """Draw ``n_sessions`` sessions of simulated users on the loggers' rankings.

    Each session draws a query uniformly from all queries of ``dataset``
    (queries without a relevant document are kept) and a logger uniformly from
    ``loggers``, shows that logger's deterministic top ``top_k``
    (:func:`logger_top_k`: ties broken by the lower document index; fewer when
    the query has fewer documents), applies the result randomization ``swap``
    and draws clicks from ``click_model`` (see the module docstring).

    ``swap="swap-1k"``: the top document is swapped with position ``k`` drawn
    uniformly from ``1..K`` (K the shown list's length; k = 1 leaves the list
    unchanged), the swap intervention of Joachims et al. 2017.
    ``swap="randpair"``: ``k`` uniform on ``2..K`` (always a swap), the
    RandPair randomization of Wang et al. 2016 (SIGIR). A swapped log's
    ``loggers`` column holds ``f"{name}{SWAP_TAG}{k}"`` (:func:`split_swap_tags`),
    so the randomization estimators can read each impression's intervention.

    Randomness, per chunk of 65,536 sessions: query indices, logger indices,
    swap uniforms (if ``swap``), then the click uniforms (``rng.random((chunk,
    top_k))``, or :meth:`oltr.clicks.CascadeClickModel.simulate`'s draws).

    Parameters
    ----------
    dataset
        The labelled queries (grades drive the clicks).
    loggers
        One weight vector (n_features,) or several (L, n_features).
    n_sessions, top_k
        Number of sessions (impressions) and shown list length K, each >= 1.
    click_model, eta, noise, cascade
        ``"pbm"``, ``"trust"`` or ``"cascade"``; η >= 0 of θ_k = (1/k)^η; ε of
        pbm; the cascade instantiation (perfect, navigational, informational).
    max_grade
        ymax of the click model; default the data set's largest grade (at least 1).
    swap
        None, ``"swap-1k"`` or ``"randpair"``.
    rng
        Seed or Generator, the only source of randomness.
    logger_names
        The loggers' names (default ``"logger"``, or ``"logger0"``, ``"logger1"``, ...).
    progress
        Called with the number of sessions done after each chunk.

    Returns
    -------
    ClickLog
        ``qids`` the data set's qids as text, ``docs`` indices within the query,
        ``loggers`` always filled.
    """
    n_sessions = _check_int(n_sessions, "n_sessions")
    eta, top_k = _check_eta_top_k(eta, top_k)
    model = _check_click_model(click_model)
    if swap is not None and swap not in SWAPS:
        raise InputError(f"unknown swap {swap!r}; choose None or one of {list(SWAPS)}")
    ymax = max(int(dataset.relevance.max()) if max_grade is None else int(max_grade), 1)
    if int(dataset.relevance.max()) > ymax:
        raise InputError(f"max_grade={ymax} is below the data set's largest grade")
    weights, names = _check_loggers(loggers, dataset.n_features, logger_names)
    gen = as_rng(rng)
    tables = [logger_top_k(dataset, w, top_k) for w in weights]
    docs_table = np.stack([t[0] for t in tables])  # (L, n_queries, K)
    lengths = tables[0][1]
    grades_table = np.where(
        docs_table >= 0,
        dataset.relevance[np.maximum(docs_table, 0) + dataset.offsets[:-1, None]],
        0,
    )
    cascade_user = _cascade(cascade, ymax) if model == "cascade" else None
    graded_click_probability(0, noise=noise, max_grade=ymax)  # checks noise before the work
    qid_text = np.array([str(q) for q in dataset.qids.tolist()])
    name_text = np.array(names)
    positions = np.arange(top_k)
    out_docs, out_clicks, out_len, out_q, out_l = [], [], [], [], []
    done = 0
    while done < n_sessions:
        size = min(_CHUNK, n_sessions - done)
        q = gen.integers(dataset.n_queries, size=size)
        lg = gen.integers(weights.shape[0], size=size)
        length = lengths[q]
        docs = docs_table[lg, q]  # fancy indexing: copies, safe to swap in place
        g = grades_table[lg, q]
        if swap is not None:  # the document and its grade move; examination stays with the position
            rows = np.arange(size)
            k = _swap_positions(swap, length, gen)
            for a in (docs, g):
                a[:, 0], a[rows, k] = a[rows, k], a[:, 0].copy()
        mask = positions < length[:, None]
        if cascade_user is not None:
            clicks = cascade_user.simulate(g, gen, mask=mask)
        else:
            p = true_click_probabilities(g, click_model=model, eta=eta, noise=noise, max_grade=ymax)
            clicks = gen.random((size, top_k)) < p
        out_docs.append(docs[mask])
        out_clicks.append(clicks[mask].astype(np.int8))
        out_len.append(length)
        out_q.append(q)
        out_l.append(lg if swap is None else np.stack([lg, k]))
        done += size
        if progress is not None:
            progress(size)
    offsets = np.zeros(n_sessions + 1, dtype=np.int64)
    np.cumsum(np.concatenate(out_len), out=offsets[1:])
    if swap is None:
        logger_col = name_text[np.concatenate(out_l)]
    else:
        lk = np.concatenate(out_l, axis=1)
        tags = np.char.add(SWAP_TAG, (np.arange(top_k) + 1).astype(str))
        logger_col = np.char.add(name_text[:, None], tags[None, :])[lk[0], lk[1]]
    return ClickLog(
        qids=qid_text[np.concatenate(out_q)],
        offsets=offsets,
        docs=np.concatenate(out_docs),
        clicks=np.concatenate(out_clicks),
        loggers=logger_col,
    )
