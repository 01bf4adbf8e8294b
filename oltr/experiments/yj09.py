"""Yue & Joachims (2009) on query streams, and the paper's tables.

Offline NDCG of the current weights, duels on LETOR streams, and the Table 1 /
Figure 2 reproductions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from oltr.experiments.duels import (
    SYNTHETIC_METHODS,
    TABLE1,
    TABLE1_DELTA_L,
    _checkpoints,
    simulate_synthetic,
)
from oltr.feedback import FeedbackModel
from oltr.metrics import ndcg
from oltr.random import child_rng
from oltr.types import FloatArray, RunGenerators
from oltr.validation import check_choice

__all__ = [
    "SYNTHETIC_SIZES",
    "offline_ndcg",
    "reproduce_figure2",
    "reproduce_table1",
    "run_letor_duels",
]


def offline_ndcg(
    weights: ArrayLike, dataset: Any, *, k: int = 10, per_query: bool = False, chunk: int = 256
) -> FloatArray:
    """NDCG@k of linear rankers on every query of a data set.

    Parameters
    ----------
    weights
        Linear scorers, shape (B, d) (or (d,)).
    dataset
        A :class:`~oltr.data.letor.LetorDataset` with d features.
    k
        Cutoff (NDCG@k as in :func:`oltr.metrics.ndcg`; a query without a
        relevant document scores 1, the package's convention).
    per_query
        Return the (B, n_queries) values instead of their mean over queries.
    chunk
        Queries scored at once (memory only).

    Returns
    -------
    Mean NDCG@k per ranker, shape (B,), or per query, (B, n_queries).
    """
    w = np.atleast_2d(np.asarray(weights, dtype=np.float64))
    if w.ndim != 2 or w.shape[1] != dataset.n_features:
        raise ValueError(f"weights must have shape (B, {dataset.n_features}), got {w.shape}")
    vals = []
    for lo in range(0, dataset.n_queries, chunk):
        x, rel, mask = dataset.padded(np.arange(lo, min(lo + chunk, dataset.n_queries)))
        scores = np.einsum("qmd,bd->bqm", x, w)
        scores = np.where(mask[None], scores, -np.inf)  # padding sorts last
        order = np.argsort(-scores, axis=-1, kind="stable")
        vals.append(np.asarray(ndcg(rel[None], order, k=k, mask=mask[None])))
    per_q = np.concatenate(vals, axis=1)
    return per_q if per_query else per_q.mean(axis=1)


def run_letor_duels(
    *,
    env: Any,
    feedback: FeedbackModel,
    learner: str = "dbgd",
    learner_params: Mapping[str, Any] | None = None,
    reps: Sequence[int] = (0,),
    seed: int = 0,
    horizon: int,
    checkpoints: Sequence[int],
    eval_sets: Mapping[str, Any] | None = None,
    k: int = 10,
    env_name: str = "letor-stream-v1",
    online: bool = True,
) -> pd.DataFrame:
    """The runner's protocol on a query stream, plus offline NDCG@k of w_t at checkpoints.

    Each round: the stream shows a query, the learner ranks it with w_t and w'_t
    (orders (B, 2, m)), ``feedback`` decides the duel, the learner learns from
    the outcome. Recorded per checkpoint and run: the online NDCG@k of the two
    shown lists (mean of both, eq. 2's "both points count"), its running
    average, and the NDCG@k of the current w_t on each evaluation set (mean
    over queries) — §5.2's "training NDCG", Table 3's test NDCG.

    Parameters
    ----------
    env
        A query-stream environment (e.g. :class:`oltr.envs.stream.LetorStreamEnv`),
        built without a feedback model; ``feedback`` is attached here.
    feedback
        A duel feedback model (web-search oracle or interleaved clicks).
    learner, learner_params
        Registry name and parameters of a learner with ``weights_`` (DBGD).
    reps, seed
        Repetitions and root seed (random streams keyed as in the runner).
    horizon, checkpoints
        Rounds (queries, i.e. impressions) and when to record.
    eval_sets
        Name -> :class:`~oltr.data.letor.LetorDataset` to evaluate w_t on.
    k
        NDCG cutoff.
    env_name
        Key of the environment's random stream.
    online
        Also evaluate the shown lists every round (False: ``online`` and
        ``online:avg`` are NaN, and the loop runs about twice as fast).

    Returns
    -------
    DataFrame with columns ``rep``, ``t``, ``online``, ``online:avg`` and
    ``offline:<name>`` per evaluation set; ``attrs["weights"]`` holds the final
    w of every run, shape (B, d).
    """
    from oltr.build import make_learner

    reps = tuple(int(r) for r in reps)
    cps = _checkpoints(checkpoints, horizon)
    env.feedback_model = feedback
    lrn = make_learner(
        learner,
        dict(learner_params or {}),
        n_runs=len(reps),
        rngs=RunGenerators.from_keys(seed, "learner", learner, reps=reps),
        horizon=horizon,
    )
    fb_rngs = RunGenerators.from_keys(seed, "feedback", reps=reps)
    env.reset(rng=child_rng(seed, "env", env_name))
    sets = dict(eval_sets or {})
    cum = np.zeros(len(reps))
    rows: dict[str, list[Any]] = {"rep": [], "t": [], "online": [], "online:avg": []}
    for name in sets:
        rows[f"offline:{name}"] = []
    ci = 0
    for t in range(1, horizon + 1):
        ctx = env.observe(t)
        orders = lrn.rank(ctx)
        fb = env.feedback(orders, fb_rngs)
        shown = (
            env.evaluate(orders, [f"ndcg@{k}"], validate=False)[f"ndcg@{k}"]
            if online
            else np.full(len(reps), np.nan)
        )
        lrn.update(ctx, orders, fb.restrict(lrn.requires))
        cum += shown
        if t == cps[ci]:
            offline = {
                name: offline_ndcg(lrn.weights_, ds, k=k)  # type: ignore[attr-defined]
                for name, ds in sets.items()
            }
            rows["rep"] += list(reps)
            rows["t"] += [t] * len(reps)
            rows["online"] += shown.tolist()
            rows["online:avg"] += (cum / t).tolist()
            for name, vals in offline.items():
                rows[f"offline:{name}"] += vals.tolist()
            ci += 1
            if ci == cps.size:
                break
    df = pd.DataFrame(rows).sort_values(["rep", "t"], kind="stable").reset_index(drop=True)
    df.attrs["weights"] = np.array(lrn.weights_)  # type: ignore[attr-defined]
    return df


#: Sizes of the synthetic reproductions: T and the number of runs per cell.
SYNTHETIC_SIZES: Mapping[str, Mapping[str, int]] = {
    "small": {"horizon": 20_000, "reps": 3},
    "full": {"horizon": 1_000_000, "reps": 10},
}


def _size(size: str) -> Mapping[str, int]:
    check_choice(size, "size", tuple(SYNTHETIC_SIZES))
    return SYNTHETIC_SIZES[size]


def reproduce_table1(
    *, size: str = "small", seed: int = 2009, problems: Sequence[str] = tuple(TABLE1)
) -> pd.DataFrame:
    """Table 1 of Yue & Joachims (2009): DBGD's average regret Δ_T/T, P1–P5 × δ_L.

    Each problem runs its ``len(TABLE1_DELTA_L) × reps`` runs in one array loop
    (:func:`simulate_synthetic`); ``size="full"`` is the paper's scale as we
    read it — T = 10⁶ (the horizon at which the rows match), 10 runs per cell,
    d = 50, R = 10, w_1 = 1·√(5/d), "P2" the L1 reading of v2.

    Returns
    -------
    DataFrame, one row per (problem, δ_L): ``problem``, ``delta_l``, ``regret``
    (mean over runs), ``stderr``, ``paper`` (Table 1's value; NaN for problems
    outside the table).
    """
    sz = _size(size)
    rows = []
    for name in problems:
        reg = simulate_synthetic(
            name, delta_l=TABLE1_DELTA_L, reps=range(sz["reps"]), seed=seed, horizon=sz["horizon"]
        )[..., -1]
        paper = TABLE1.get(name, (np.nan,) * len(TABLE1_DELTA_L))
        for i, dl in enumerate(TABLE1_DELTA_L):
            se = reg[i].std(ddof=1) / np.sqrt(reg.shape[1]) if reg.shape[1] > 1 else np.nan
            rows.append(
                {
                    "problem": name,
                    "delta_l": dl,
                    "regret": float(reg[i].mean()),
                    "stderr": float(se),
                    "paper": float(paper[i]),
                }
            )
    return pd.DataFrame(rows)


def reproduce_figure2(
    *,
    size: str = "small",
    seed: int = 2009,
    problems: Sequence[str] = ("P1", "P5"),
    n_checkpoints: int = 30,
    delta_l: float = 1.0,
) -> pd.DataFrame:
    """Figure 2 of Yue & Joachims (2009): average regret vs t of DBGD, BGD1, BGD2 (δ_L = 1).

    Returns
    -------
    DataFrame with ``problem``, ``method``, ``t``, ``regret`` (mean Δ_t/t over
    runs) and ``stderr``, at ``n_checkpoints`` log-spaced rounds.
    """
    sz = _size(size)
    horizon = sz["horizon"]
    cps = np.unique(np.geomspace(10, horizon, n_checkpoints).astype(np.int64))
    rows = []
    for name in problems:
        for method in SYNTHETIC_METHODS:
            reg = simulate_synthetic(
                name,
                method=method,
                delta_l=[delta_l],
                reps=range(sz["reps"]),
                seed=seed,
                horizon=horizon,
                checkpoints=cps.tolist(),
            )[0]
            se = reg.std(axis=0, ddof=1) / np.sqrt(reg.shape[0])
            for j, t in enumerate(cps):
                rows.append(
                    {
                        "problem": name,
                        "method": method,
                        "t": int(t),
                        "regret": float(reg[:, j].mean()),
                        "stderr": float(se[j]),
                    }
                )
    return pd.DataFrame(rows)
