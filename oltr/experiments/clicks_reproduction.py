"""``oltr reproduce oltr-clicks``: the click-based OLTR family under the standard protocol.

For each data set (LETOR 4.0 MQ2008 and LETOR 3.0 OHSUMED, five folds each; the
MSLR-WEB sample), each cascade click model (perfect, navigational,
informational; stop after a click) and each learner — PDGD, PDGD with a neural
ranker (one hidden layer of 64 sigmoid units), P-MGD (49 candidates), P-DBGD,
TD-DBGD, RTop-kF (its defaults: squared surrogate, top-1
labels, a different feedback kind on the same queries) and the random ranker —
``runs`` runs of ``horizon`` impressions (:mod:`oltr.experiments.clicks_protocol`):
offline held-out NDCG@10 at log-spaced impressions and the online discounted
cumulative NDCG@10. Queries without a relevant document are left out of both
the training stream and the test set. Rows report mean ± 95% interval (normal,
1.96 standard errors) over folds × runs.

Sizes: ``small`` — MQ2008 Fold1, 2 runs, 1,000 impressions; ``full`` — all the
above, 25 runs, 10,000 impressions (Oosterhuis & de Rijke 2018 §6 run 10,000
impressions; Schuth et al. 2016 §5 use 25 runs per fold).
"""

from __future__ import annotations

import functools
import multiprocessing
import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from oltr.data.dataset import LetorDataset
from oltr.data.letor import load_letor
from oltr.experiments.clicks_protocol import ClickRunResult, log_checkpoints, run_click_protocol
from oltr.experiments.datapaths import data_root
from oltr.experiments.heldout import HeldoutSet
from oltr.feedback import FeedbackModel, TopKFeedbackModel
from oltr.feedback.clicks import ClickFeedbackModel
from oltr.learners.base import Learner
from oltr.learners.baselines import RandomRanker
from oltr.learners.neural_pdgd import NeuralPDGD
from oltr.learners.pdgd import PDGD
from oltr.learners.pmgd import PDBGD, PMGD, TDDBGD
from oltr.learners.rtopk import RTopKF
from oltr.random import child_rng
from oltr.types import RunGenerators
from oltr.validation import check_scalar

__all__ = [
    "CLICK_MODELS",
    "LEARNERS",
    "SIZES",
    "plot_curves",
    "reproduce_oltr_clicks",
    "run_oltr_clicks",
    "summarize",
]

CLICK_MODELS = ("perfect", "navigational", "informational")

#: label -> factory(n_runs, rng, horizon)
LEARNERS: dict[str, Callable[[int, Any, int], Learner[Any]]] = {
    "PDGD": lambda b, rng, h: PDGD(n_runs=b, rng=rng),
    "PDGD (neural)": lambda b, rng, h: NeuralPDGD(n_runs=b, rng=rng),
    "P-MGD": lambda b, rng, h: PMGD(n_runs=b, rng=rng),
    "P-DBGD": lambda b, rng, h: PDBGD(n_runs=b, rng=rng),
    "TD-DBGD": lambda b, rng, h: TDDBGD(n_runs=b, rng=rng),
    "RTop-kF": lambda b, rng, h: RTopKF(horizon=h, n_runs=b, rng=rng),
    "random": lambda b, rng, h: RandomRanker(n_runs=b, rng=rng),
}

#: size -> (data sets with their folds, runs, horizon)
SIZES: dict[str, tuple[dict[str, tuple[int, ...]], int, int]] = {
    "small": ({"MQ2008": (1,)}, 2, 1000),
    "full": (
        {"MQ2008": (1, 2, 3, 4, 5), "OHSUMED": (1, 2, 3, 4, 5), "MSLR-sample": (1,)},
        25,
        10_000,
    ),
}

_SEED = 20180410


def _fold(name: str, fold: int) -> tuple[LetorDataset, LetorDataset, int]:
    """(train, test, n_grades) with queries without a relevant document dropped."""
    root = data_root()
    if name == "MSLR-sample":
        # Only the Fold1 vali/test heads are available: learn on vali, test on test;
        # raw MSLR features are query-level normalised like LETOR's QueryLevelNorm.
        base = root / "MSLR-WEB-sample"
        paths = (base / "mslr_fold1_valid_sample.txt.gz", base / "mslr_fold1_test_sample.txt.gz")
        kw: dict[str, Any] = {"normalize": True, "drop_no_relevant": True}
        return load_letor(paths[0], **kw), load_letor(paths[1], **kw), 5
    sub = "LETOR4.0/MQ2008" if name == "MQ2008" else "LETOR3.0/OHSUMED"
    base = root / sub / f"Fold{fold}"
    kw = {"drop_no_relevant": True}
    return load_letor(base / "train.txt.gz", **kw), load_letor(base / "test.txt.gz", **kw), 3


@functools.lru_cache(maxsize=2)
def _prepared(name: str, fold: int) -> tuple[LetorDataset, HeldoutSet, int]:
    train, test, n_grades = _fold(name, fold)
    return train, HeldoutSet(test, k=10), n_grades


def _run_one(
    ds_name: str, fold: int, cm: str, label: str, runs: int, horizon: int
) -> ClickRunResult:
    """One (data set, fold, click model, learner) cell: ``runs`` runs batched."""
    train, test, n_grades = _prepared(ds_name, fold)
    fb: FeedbackModel = (
        TopKFeedbackModel(k=1)
        if label == "RTop-kF"
        else ClickFeedbackModel(click_model=cm, n_grades=n_grades, k=10)
    )
    rng = RunGenerators.from_keys(_SEED, ds_name, fold, label, reps=range(runs))
    return run_click_protocol(
        LEARNERS[label](runs, rng, horizon),
        train,
        test,
        fb,
        horizon=horizon,
        checkpoints=log_checkpoints(horizon, 20),
        query_rng=child_rng(_SEED, ds_name, fold, cm, "queries"),
        feedback_rngs=RunGenerators.from_keys(_SEED, ds_name, fold, cm, "clicks", reps=range(runs)),
        eval_rngs=RunGenerators.from_keys(_SEED, "eval", reps=range(runs)),
    )


def _one_thread() -> None:
    # One numerical thread per worker process: the pool already uses the cores.
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
        return
    threadpool_limits(1)


def run_oltr_clicks(
    *,
    datasets: dict[str, tuple[int, ...]],
    runs: int,
    horizon: int,
    learners: tuple[str, ...] = tuple(LEARNERS),
    click_models: tuple[str, ...] = CLICK_MODELS,
    progress: Callable[[str], None] | None = None,
    n_jobs: int = 1,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every (data set, fold, click model, learner); returns (per-run finals, offline curves).

    The first frame has one row per run: ``dataset, fold, click_model, learner, run,
    offline, online``; the second one row per (…, checkpoint) with the mean over runs.
    With ``n_jobs > 1`` the cells run in that many worker processes; every cell
    draws from its own keyed generators, so the frames are the same for any
    ``n_jobs``.
    """
    check_scalar(n_jobs, "n_jobs", low=1, integer=True)
    cps = log_checkpoints(horizon, 20)
    cells = [
        (ds_name, fold, cm, label)
        for ds_name, folds in datasets.items()
        for fold in folds
        for cm in click_models
        for label in learners
    ]
    results: dict[int, ClickRunResult] = {}

    def done(i: int, res: ClickRunResult) -> None:
        results[i] = res
        if progress is not None:
            ds_name, fold, cm, label = cells[i]
            progress(f"{ds_name} fold {fold} {cm} {label}: {res.offline[:, -1].mean():.4f}")

    if n_jobs == 1:
        for i, cell in enumerate(cells):
            done(i, _run_one(*cell, runs, horizon))
    else:
        ctx = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(n_jobs, mp_context=ctx, initializer=_one_thread) as pool:
            futures = {
                pool.submit(_run_one, *cell, runs, horizon): i for i, cell in enumerate(cells)
            }
            for fut in as_completed(futures):
                done(futures[fut], fut.result())
    finals: list[dict[str, Any]] = []
    curves: list[dict[str, Any]] = []
    for i, (ds_name, fold, cm, label) in enumerate(cells):
        res = results[i]
        key = {"dataset": ds_name, "fold": fold, "click_model": cm, "learner": label}
        for r in range(runs):
            finals.append(key | {"run": r, "offline": res.offline[r, -1], "online": res.online[r]})
        for j, t in enumerate(cps):
            curves.append(key | {"impressions": int(t), "offline": res.offline[:, j].mean()})
    return pd.DataFrame(finals), pd.DataFrame(curves)


def summarize(finals: pd.DataFrame) -> pd.DataFrame:
    """Mean ± 95% interval (1.96 standard errors over folds × runs) per data set, model, learner."""

    def ci(x: pd.Series) -> float:
        return float(1.96 * x.std(ddof=1) / np.sqrt(len(x))) if len(x) > 1 else float("nan")

    g = finals.groupby(["dataset", "click_model", "learner"], sort=False)
    out = g.agg(
        offline=("offline", "mean"),
        offline_ci=("offline", ci),
        online=("online", "mean"),
        online_ci=("online", ci),
        n=("offline", "size"),
    )
    return out.reset_index()


def plot_curves(curves: pd.DataFrame, folder: Path) -> list[Path]:
    """One PNG per (data set, click model): offline NDCG@10 vs impressions (log x), per learner."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    for (ds, cm), part in curves.groupby(["dataset", "click_model"], sort=False):
        fig, ax = plt.subplots(figsize=(5, 3.5))
        mean = part.groupby(["learner", "impressions"], sort=False)["offline"].mean().reset_index()
        for label, line in mean.groupby("learner", sort=False):
            ax.plot(line["impressions"], line["offline"], label=str(label))
        ax.set_xscale("log")
        ax.set_xlabel("impressions")
        ax.set_ylabel("held-out NDCG@10")
        ax.set_title(f"{ds}, {cm} clicks")
        ax.legend(fontsize=7)
        fig.tight_layout()
        path = folder / f"oltr-clicks-{ds}-{cm}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        paths.append(path)
    return paths


def reproduce_oltr_clicks(*, size: str = "small", n_jobs: int | None = None) -> pd.DataFrame:
    """The table at ``size``; runs, curves and plots go to ``results/oltr-clicks-SIZE``.

    ``n_jobs`` worker processes (default: one per core) share the cells; the
    numbers do not depend on it.
    """
    datasets, runs, horizon = SIZES[size]
    jobs = n_jobs if n_jobs is not None else (os.cpu_count() or 1)
    finals, curves = run_oltr_clicks(datasets=datasets, runs=runs, horizon=horizon, n_jobs=jobs)
    folder = Path("results") / f"oltr-clicks-{size}"
    folder.mkdir(parents=True, exist_ok=True)
    finals.to_csv(folder / "runs.csv", index=False)
    curves.to_csv(folder / "curves.csv", index=False)
    plot_curves(curves, folder)
    return summarize(finals)
