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

Sizes: ``small`` runs on the built-in synthetic data (a train and a test split of
one hidden model; no files needed, it is what ``oltr demo`` shows); ``full`` on
MQ2008 and OHSUMED (all five folds) and the MSLR sample (train on its
validation part), T = 50,000, 4 repetitions, from ``{data}`` (``$OLTR_DATA_DIR``
or ``../shared/data``).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from scipy import stats
from tqdm.auto import tqdm

from oltr.data import LetorDataset, load_letor, synthetic_letor, write_letor
from oltr.experiments.datapaths import data_root
from oltr.experiments.heldout import HeldoutSet
from oltr.experiments.regret import log_checkpoints
from oltr.experiments.runner import RunSetSpec, heldout_column, run_set
from oltr.learners.ranksvm import fit_ranksvm
from oltr.metrics import ndcg
from oltr.surrogates import make_surrogate, sample_exploration_order

__all__ = [
    "LEARNERS",
    "PAPER_LEARNERS",
    "SIZES",
    "estimator_second_moments",
    "plot_curves",
    "reproduce_learner_quality",
    "summarize",
]

#: (label, learner, params, feedback, feedback params): every contextual learner at its defaults.
LEARNERS: tuple[tuple[str, str, dict[str, Any], str, dict[str, Any]], ...] = (
    ("RTop-kF squared (top-1)", "rtopk", {"surrogate": "squared"}, "top-k", {"k": 1}),
    ("RTop-kF RankSVM (top-2)", "rtopk", {"surrogate": "ranksvm"}, "top-k", {"k": 2}),
    ("RTop-kF KL (top-1)", "rtopk", {"surrogate": "kl"}, "top-k", {"k": 1}),
    ("RTop-kF SmoothDCG (top-1)", "rtopk", {"surrogate": "smoothdcg"}, "top-k", {"k": 1}),
    ("ListNet (full)", "listnet", {}, "full", {}),
    ("DBGD (team-draft clicks)", "dbgd", {}, "interleaved-clicks", {}),
)
PAPER_SUFFIX = ", paper η γ"
#: CT16's literal setting (η = T^(-2/3) or T^(-1/2), γ = T^(-1/3), last iterate), beside the
#: defaults in the full reproduction, to check CT16 §6's comparison of surrogates at both.
PAPER_LEARNERS: tuple[tuple[str, str, dict[str, Any], str, dict[str, Any]], ...] = tuple(
    (
        f"{label}{PAPER_SUFFIX}",
        learner,
        {**params, "eta": "paper", "gamma": "paper", "report": "last"},
        feedback,
        feedback_params,
    )
    for label, learner, params, feedback, feedback_params in LEARNERS
    if learner == "rtopk"
)
#: Horizon, repetitions and data sets of each size.
SIZES: dict[str, dict[str, Any]] = {
    "small": {"horizon": 20_000, "reps": 4, "datasets": ("synthetic",), "learners": LEARNERS},
    "full": {
        "horizon": 50_000,
        "reps": 4,
        "learners": LEARNERS + PAPER_LEARNERS,
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


def _paths(name: str, scratch: Path) -> tuple[Path, Path]:
    """(train, test) files of data set ``name`` (the synthetic one is written to ``scratch``)."""
    if name == "synthetic":
        data = synthetic_letor(n_queries=600, n_features=46, max_grade=4, rng=20160509)
        train, test = scratch / "train.txt", scratch / "test.txt"
        write_letor(data.subset(np.arange(0, 400)), train)
        write_letor(data.subset(np.arange(400, 600)), test)
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


def _floor(test: LetorDataset, rng: np.random.Generator, draws: int = 200) -> float:
    """Expected NDCG@10 of uniformly random orders, averaged over queries."""
    _, relevance, mask = test.padded(np.arange(test.n_queries))
    noise = rng.random((draws, *relevance.shape))
    noise[:, ~mask] = np.inf  # padding sorts last
    orders = np.argsort(noise, axis=-1)
    return float(np.mean(ndcg(relevance, orders, k=K, mask=mask)))


def _dataset_rows(name: str, size: dict[str, Any], scratch: Path) -> Iterator[dict[str, Any]]:
    train_path, test_path = _paths(name, scratch)
    options = {"normalize": True, "drop_no_relevant": True}
    train = load_letor(train_path, normalize=True, drop_no_relevant=True)
    test = load_letor(test_path, normalize=True, drop_no_relevant=True)
    heldout = HeldoutSet(test, k=K)
    floor = _floor(test, np.random.default_rng(0))
    ceiling = float(heldout.evaluate(fit_ranksvm(train)[None, :])[0])
    horizon, reps = size["horizon"], tuple(range(size["reps"]))
    checkpoints = tuple(log_checkpoints(horizon, 12))
    for label, learner, params, feedback, feedback_params in size["learners"]:
        spec = RunSetSpec(
            env="letor-stream-v1",
            env_params={"path": str(train_path), **options},
            feedback=feedback,
            feedback_params=feedback_params,
            learner=learner,
            learner_params=params,
            reps=reps,
            seed=20161124,
            horizon=horizon,
            measures=(f"ndcg@{K}",),
            checkpoints=checkpoints,
            heldout={"path": str(test_path), "k": K, **options},
        )
        trace = run_set(spec)
        for rep, t, value in trace[["rep", "t", heldout_column(K)]].itertuples(
            index=False, name=None
        ):
            yield {
                "dataset": name,
                "learner": label,
                "rep": int(rep),
                "t": int(t),
                "heldout": float(value),
                "floor": floor,
                "ceiling": ceiling,
            }


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


def _interval(values: pd.Series) -> float:
    """Half-width of the 95% t-interval of the mean (0 for a single value)."""
    n = len(values)
    return float(stats.t.ppf(0.975, n - 1) * values.std(ddof=1) / np.sqrt(n)) if n > 1 else 0.0


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
                    "±95%": _interval(part["heldout"]),
                    "floor (random)": part["floor"].mean(),
                    "ceiling (RankSVM)": part["ceiling"].mean(),
                    "gap closed": part["gap_closed"].mean(),
                    "min gap closed (fold)": part.groupby("dataset")["gap_closed"].mean().min(),
                }
            )
    return pd.DataFrame(rows)


def plot_curves(curves: pd.DataFrame, path: Path) -> None:
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
    fig.savefig(path, dpi=110)


def reproduce_learner_quality(*, size: str, out: Path | None = None) -> pd.DataFrame:
    """Run every learner at its defaults on every data set of ``size``; the summary table.

    With ``out``, also writes ``curves.csv`` (every checkpoint of every run) and
    ``curves.png`` there, and keeps each finished data set's curves in
    ``out/datasets/`` so that an interrupted reproduction resumes where it stopped.
    """
    settings = SIZES[size]
    parts: list[pd.DataFrame] = []
    with tempfile.TemporaryDirectory() as scratch:
        for name in tqdm(settings["datasets"], desc="learner quality", unit="data set"):
            parts.append(_dataset_curves(name, settings, Path(scratch), out))
    curves = pd.concat(parts, ignore_index=True)
    if out is not None:
        curves.to_csv(Path(out) / "curves.csv", index=False, float_format="%.6g")
        plot_curves(curves, Path(out) / "curves.png")
    return summarize(curves)


def _dataset_curves(
    name: str, settings: dict[str, Any], scratch: Path, out: Path | None
) -> pd.DataFrame:
    """One data set's curves: read back from ``out`` when finished before, else computed."""
    if out is None:
        return pd.DataFrame(_dataset_rows(name, settings, scratch))
    done = Path(out) / "datasets" / f"{name.replace('/', '-')}.csv"
    if done.exists():
        return pd.read_csv(done)
    curves = pd.DataFrame(_dataset_rows(name, settings, scratch))
    done.parent.mkdir(parents=True, exist_ok=True)
    partial = done.with_suffix(".partial")
    curves.to_csv(partial, index=False)  # full precision: the summary is computed from it
    partial.replace(done)  # atomic: a half-written file is never taken as finished
    return curves
