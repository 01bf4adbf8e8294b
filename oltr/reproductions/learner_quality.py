"""Do the learners learn at their defaults? Held-out NDCG@10 against a floor and a ceiling.

For every contextual learner at its defaults (no per-data-set tuning) and every
data set, the learner runs online on the training queries and its reported
ranker (:attr:`~oltr.learners.linear.LinearRanker.reported_weights_`) is scored
on the test queries (NDCG@10, queries without a relevant document left out) at
log-spaced checkpoints. Two references frame it:

* **floor**: random orders (the expected NDCG@10 of a uniform permutation,
  averaged over 200 draws per query);
* **ceiling**: an offline pairwise ranker trained on the same training file
  (linear RankSVM, :func:`oltr.learners.ranksvm.fit_ranksvm`).

``gap closed`` = (learner − floor) / (ceiling − floor) at the horizon.

Every (data set, learner) pair is one run set of the experiment engine
(:func:`~oltr.experiments.runner.run_set` with a held-out table): the sweep runs,
stores and resumes them, and the report adds the summary table and the held-out
curves (:func:`learner_quality_sections`), computed from the stored results; the
floor and ceiling of each data set are computed once and kept in the results
folder (``references.json``).

Sizes: ``small`` runs on the built-in synthetic data (a train and a test split of
one hidden model, written to ``RESULTS/data/``; no files needed, it is what
``oltr demo`` shows), T = 20,000, 5 repetitions; ``full`` on MQ2008 and OHSUMED
(all five folds) and the MSLR sample (train on its validation part), T = 50,000,
4 repetitions per fold, from ``{data}`` (``$OLTR_DATA_DIR`` or ``../shared/data``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from oltr.data import LetorDataset, load_letor, synthetic_letor, write_letor
from oltr.experiments import storage
from oltr.experiments.config import Experiment, PlannedRunSet
from oltr.experiments.datapaths import data_root
from oltr.experiments.heldout import HeldoutSet
from oltr.experiments.page import ReportSection
from oltr.experiments.regret import log_checkpoints
from oltr.experiments.runner import RunSetSpec, heldout_column
from oltr.learners.ranksvm import fit_ranksvm
from oltr.metrics import ndcg
from oltr.reproductions.recipe import Recipe, built_experiment, load_grouped, t_interval
from oltr.surrogates import make_surrogate, sample_exploration_order
from oltr.validation import check_choice

__all__ = [
    "CONTEXTUAL_DEFAULTS",
    "CT16_PAPER_SETTINGS",
    "LEARNER_QUALITY",
    "SIZES",
    "build_learner_quality",
    "estimator_second_moments",
    "learner_quality_sections",
    "plot_curves",
    "summarize",
]

#: (label, learner, params, feedback, feedback params): every contextual learner at its defaults.
CONTEXTUAL_DEFAULTS: tuple[tuple[str, str, dict[str, Any], str, dict[str, Any]], ...] = (
    ("RTop-kF squared (top-1)", "rtopk", {"surrogate": "squared"}, "top-k", {"k": 1}),
    ("RTop-kF RankSVM (top-2)", "rtopk", {"surrogate": "ranksvm"}, "top-k", {"k": 2}),
    ("RTop-kF KL (top-1)", "rtopk", {"surrogate": "kl"}, "top-k", {"k": 1}),
    ("RTop-kF SmoothDCG (top-1)", "rtopk", {"surrogate": "smoothdcg"}, "top-k", {"k": 1}),
    ("ListNet (full)", "listnet", {}, "full", {}),
    ("DBGD (team-draft clicks)", "dbgd", {}, "interleaved-clicks", {}),
)
PAPER_SUFFIX = ", paper η γ"
#: CT16's literal setting (η = T^(-2/3) or T^(-1/2), γ = T^(-1/3), last iterate, SmoothDCG's
#: ε = 0.01), beside the defaults in the full reproduction, to check CT16 §6's comparison of
#: surrogates at both.
CT16_PAPER_SETTINGS: tuple[tuple[str, str, dict[str, Any], str, dict[str, Any]], ...] = tuple(
    (
        f"{label}{PAPER_SUFFIX}",
        learner,
        {
            **params,
            "eta": "paper",
            "gamma": "paper",
            "report": "last",
            **({"eps": 0.01} if params.get("surrogate") == "smoothdcg" else {}),
        },
        feedback,
        feedback_params,
    )
    for label, learner, params, feedback, feedback_params in CONTEXTUAL_DEFAULTS
    if learner == "rtopk"
)
#: Horizon, repetitions, data sets and learner settings of each size.
SIZES: dict[str, dict[str, Any]] = {
    "small": {
        "horizon": 20_000,
        "reps": 5,
        "datasets": ("synthetic",),
        "learners": CONTEXTUAL_DEFAULTS,
    },
    "full": {
        "horizon": 50_000,
        "reps": 4,
        "learners": CONTEXTUAL_DEFAULTS + CT16_PAPER_SETTINGS,
        "datasets": tuple(f"MQ2008/Fold{i}" for i in range(1, 6))
        + tuple(f"OHSUMED/Fold{i}" for i in range(1, 6))
        + ("MSLR-sample",),
    },
}
_FILES = {
    "MQ2008": "LETOR4.0/MQ2008/{fold}/{part}.txt.gz",
    "OHSUMED": "LETOR3.0/OHSUMED/{fold}/{part}.txt.gz",
}
K = 10
SEED = 20161124
#: How train and test files are read (for the stream and the held-out set alike).
_OPTIONS: dict[str, Any] = {"normalize": True, "drop_no_relevant": True}
#: The floor and ceiling of each data set, kept in the results folder.
REFERENCES = "references.json"


def _paths(name: str, folder: Path) -> tuple[Path, Path]:
    """(train, test) files of data set ``name``; the synthetic split is written to ``folder``."""
    if name == "synthetic":
        train, test = folder / "train.txt", folder / "test.txt"
        if not (train.is_file() and test.is_file()):
            data = synthetic_letor(n_queries=600, n_features=46, max_grade=4, rng=20160509)
            folder.mkdir(parents=True, exist_ok=True)
            for part, rows in ((train, np.arange(0, 400)), (test, np.arange(400, 600))):
                partial = part.with_name(f".{part.name}.tmp")
                write_letor(data.subset(rows), partial)
                partial.replace(part)  # atomic: a half-written file is never read
        return train, test
    root = data_root()
    if name == "MSLR-sample":
        folder = root / "MSLR-WEB-sample"
        return folder / "mslr_fold1_valid_sample.txt.gz", folder / "mslr_fold1_test_sample.txt.gz"
    collection, fold = name.split("/")
    pattern = _FILES[collection]
    return root / pattern.format(fold=fold, part="train"), root / pattern.format(
        fold=fold, part="test"
    )


def build_learner_quality(size: str, output: Path, *, reps: int | None = None) -> Experiment:
    """One run set per data set and learner setting of ``size`` (``reps`` overrides the count).

    The synthetic split of the small size is written to ``output/data/`` once.
    """
    check_choice(size, "size", tuple(SIZES))
    settings = SIZES[size]
    horizon = int(settings["horizon"])
    rep_ids = tuple(range(settings["reps"] if reps is None else int(reps)))
    checkpoints = tuple(log_checkpoints(horizon, 12))
    several = len(settings["datasets"]) > 1
    run_sets = []
    for name in settings["datasets"]:
        train, test = _paths(name, Path(output).resolve() / "data")
        for index, (label, learner, params, feedback, feedback_params) in enumerate(
            settings["learners"]
        ):
            spec = RunSetSpec(
                env="letor-stream-v1",
                env_params={"path": str(train), **_OPTIONS},
                feedback=feedback,
                feedback_params=feedback_params,
                learner=learner,
                learner_params=params,
                reps=rep_ids,
                seed=SEED,
                horizon=horizon,
                measures=(f"ndcg@{K}",),
                checkpoints=checkpoints,
                heldout={"path": str(test), "k": K, **_OPTIONS},
            )
            shown = f"{name}: {label}" if several else label
            run_sets.append(PlannedRunSet(spec, shown, dict(params), index, group=name))
    return built_experiment(
        "learner-quality",
        description=LEARNER_QUALITY.description,
        source="oltr.reproductions.learner_quality:build_learner_quality",
        size=size,
        seed=SEED,
        output=Path(output),
        run_sets=run_sets,
        settings={
            "horizon": horizon,
            "reps": len(rep_ids),
            "datasets": list(settings["datasets"]),
            "learners": [row[0] for row in settings["learners"]],
        },
    )


def _floor(test: LetorDataset, rng: np.random.Generator, draws: int = 200) -> float:
    """Expected NDCG@10 of uniformly random orders, averaged over queries."""
    _, relevance, mask = test.padded(np.arange(test.n_queries))
    noise = rng.random((draws, *relevance.shape))
    noise[:, ~mask] = np.inf  # padding sorts last
    orders = np.argsort(noise, axis=-1)
    return float(np.mean(ndcg(relevance, orders, k=K, mask=mask)))


def _references(train_path: str, test_path: str) -> dict[str, float]:
    """Floor (random orders) and ceiling (offline RankSVM) of one data set."""
    train = load_letor(train_path, normalize=True, drop_no_relevant=True)
    test = load_letor(test_path, normalize=True, drop_no_relevant=True)
    ceiling = float(HeldoutSet(test, k=K).evaluate(fit_ranksvm(train)[None, :])[0])
    return {"floor": _floor(test, np.random.default_rng(0)), "ceiling": ceiling}


def _stored_references(
    results_dir: Path, meta: Mapping[str, Mapping[str, Any]]
) -> dict[str, dict[str, float]]:
    """The references of every data set of the results, computed once and kept in the folder."""
    path = Path(results_dir) / REFERENCES
    known: dict[str, dict[str, float]] = (
        json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    )
    missing = False
    for record in meta.values():
        group = str(record.get("group"))
        if group not in known:
            spec = record["spec"]
            known[group] = _references(spec["env_params"]["path"], spec["heldout"]["path"])
            missing = True
    if missing:
        storage.write_json_atomic(path, known)
    return known


def _curves(results_dir: Path) -> pd.DataFrame:
    """Held-out values of every run at every checkpoint, with the floor and ceiling of its data."""
    df, meta = load_grouped(results_dir)
    refs = _stored_references(results_dir, meta)
    learner = [
        str(label).removeprefix(f"{group}: ")
        for label, group in zip(df["learner"], df["group"], strict=True)
    ]
    return pd.DataFrame(
        {
            "dataset": df["group"],
            "learner": learner,
            "rep": df["rep"],
            "t": df["t"],
            "heldout": df[heldout_column(K)],
            "floor": df["group"].map(lambda g: refs[g]["floor"]),
            "ceiling": df["group"].map(lambda g: refs[g]["ceiling"]),
        }
    )


def learner_quality_sections(results_dir: Path) -> list[ReportSection]:
    """The summary table (:func:`summarize`) and the held-out curves, from the stored results."""
    curves = _curves(results_dir)
    horizon = int(curves["t"].max())
    text = (
        f"Held-out NDCG@{K} of each learner's reported ranker at T = {horizon:,} (mean over "
        "runs, 95% t-interval), against random orders (floor) and offline RankSVM (ceiling); "
        "gap closed = (learner - floor) / (ceiling - floor)."
    )
    return [
        ReportSection(
            "learner-quality",
            "Held-out NDCG@10 at the defaults",
            text,
            summarize(curves),
            plot_curves(curves),
        )
    ]


def estimator_second_moments(
    data: LetorDataset, gamma: float, rng: np.random.Generator, draws: int = 20
) -> dict[str, float]:
    """E‖z̃ X‖² of each RTop-kF surrogate's top-k estimate at w = 0, averaged over queries.

    The quantity in CT16 eq. 4's bound (and Lemma 5): the mean squared norm of
    the stochastic gradient in weight space when exploring with rate ``gamma``,
    ``draws`` exploration draws per query. Lower means a less noisy learner.
    """
    out = {}
    for name in ("squared", "ranksvm", "kl", "smoothdcg"):
        surrogate = make_surrogate(name)
        k = int(surrogate.min_k or 1)
        total = 0.0
        for q in range(data.n_queries):
            x, grades = data.query(q)
            scores = np.zeros((draws, x.shape[0]))
            order = sample_exploration_order(scores, gamma, rng)
            observed = grades[order[:, :k]].astype(np.float64)
            z = surrogate.estimate_descent_grad(scores, order, observed, gamma)
            total += float(np.mean(np.sum((z @ x) ** 2, axis=1)))
        out[name] = total / data.n_queries
    return out


def summarize(curves: pd.DataFrame) -> pd.DataFrame:
    """One row per learner and data set group at the horizon: mean ± 95% interval, gap closed.

    Folds of one collection (``MQ2008/Fold1`` ... ``Fold5``) are pooled as one group
    (runs × folds); each fold also gets its own row.
    """
    final = curves[curves["t"] == curves.groupby("dataset")["t"].transform("max")].copy()
    final["gap_closed"] = (final["heldout"] - final["floor"]) / (final["ceiling"] - final["floor"])
    final["group"] = final["dataset"].str.split("/").str[0]
    rows = []
    for by in ("dataset", "group"):
        for (name, learner), part in final.groupby([by, "learner"], sort=False):
            if by == "group" and part["dataset"].nunique() == 1:
                continue  # a collection of one data set is its own row already
            rows.append(
                {
                    "data": name if by == "dataset" else f"{name} (all folds)",
                    "learner": learner,
                    "heldout NDCG@10": part["heldout"].mean(),
                    "±95%": t_interval(part["heldout"]),
                    "floor (random)": part["floor"].mean(),
                    "ceiling (RankSVM)": part["ceiling"].mean(),
                    "gap closed": part["gap_closed"].mean(),
                    "min gap closed (fold)": part.groupby("dataset")["gap_closed"].mean().min(),
                }
            )
    return pd.DataFrame(rows)


def plot_curves(curves: pd.DataFrame) -> Figure:
    """Held-out NDCG@10 against t (log scale), one panel per data set group, mean over runs."""
    curves = curves.assign(group=curves["dataset"].str.split("/").str[0])
    groups = list(dict.fromkeys(curves["group"]))
    fig = Figure(figsize=(5.0 * len(groups), 3.8), layout="constrained")
    FigureCanvasAgg(fig)
    for ax, group in zip(fig.subplots(1, len(groups), squeeze=False)[0], groups, strict=True):
        part = curves[curves["group"] == group]
        colours: dict[str, str] = {}
        for learner, lines in part.groupby("learner", sort=False):
            mean = lines.groupby("t")["heldout"].mean()
            base = str(learner).removesuffix(PAPER_SUFFIX)  # the paper's setting: dashed, same hue
            colours.setdefault(base, f"C{len(colours)}")
            style = "--" if base != learner else "-"
            ax.plot(mean.index, mean.to_numpy(), style, color=colours[base], label=learner)
        ax.axhline(part["floor"].mean(), color="grey", linestyle=":", label="random orders")
        ax.axhline(part["ceiling"].mean(), color="black", linestyle="--", label="offline RankSVM")
        ax.set_xscale("log")
        ax.set_title(f"{group}: held-out NDCG@10")
        ax.set_xlabel("round t")
    fig.axes[0].set_ylabel("NDCG@10 on test queries")
    fig.axes[-1].legend(fontsize=7, loc="lower right")
    return fig


LEARNER_QUALITY = Recipe(
    "Held-out NDCG@10 of every contextual learner at its defaults vs random orders and "
    "offline RankSVM (small: synthetic, 5 runs; full: MQ2008, OHSUMED folds, MSLR sample, "
    "T = 50,000)",
    build=build_learner_quality,
    sections=learner_quality_sections,
)
