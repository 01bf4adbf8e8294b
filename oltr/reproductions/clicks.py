"""``oltr reproduce oltr-clicks``: click-based online learning to rank under the field's protocol.

For each data set (LETOR 4.0 MQ2008 and LETOR 3.0 OHSUMED, five folds each; the
MSLR-WEB sample), each cascade click model (perfect, navigational,
informational) and each learner — PDGD, PDGD with a neural ranker (one hidden
layer of 64 sigmoid units), P-MGD (49 candidates), P-DBGD, TD-DBGD, RTop-kF (its
defaults: squared surrogate, top-1 labels, a different feedback kind on the same
queries) and the random ranker — ``runs`` runs of ``horizon`` impressions, each
one ordinary run set of :func:`~oltr.experiments.runner.run_set`, recording

* **offline**: the held-out NDCG@10 of the current ranker on the fold's test
  queries (those with a relevant document), column ``heldout:test:ndcg@10``, at
  log-spaced impressions (Schuth et al. 2016 §5; Oosterhuis & de Rijke 2018 §6);
* **online**: the discounted cumulative NDCG@10 of the pages shown,
  Σ_t 0.9995^{t−1} NDCG@10_t, column ``online:ndcg@10`` (Hofmann et al. 2013 §5).

Two protocols (:data:`PROTOCOLS`):

``"reference"`` (the default)
    As the reference implementation of Oosterhuis & de Rijke 2018
    (HarrieO/OnlineLearningToRank: ``utils/clicks.py``, ``utils/singlesimulation.py``,
    ``utils/evaluate.py``): the simulated user throws the stop coin at every
    examined position (``stop_rule = "every-position"``); training keeps the
    queries without a relevant document, whose online NDCG is 0; each run draws
    its own query sequence (``streams = "per-run"``).
``"lerot"``
    The protocol this package shipped first, after Lerot's cascade user
    (Hofmann et al. 2013; Schuth et al. 2016): the stop coin only after a click
    (``"after-click"``), training queries without a relevant document dropped,
    and one query sequence shared by the runs of a cell (common random numbers).
    Its online figures are about 1.4 times the reference's on MQ2008 (28% of its
    training queries have no relevant document): they cannot be set beside
    published ones.

The held-out queries without a relevant document are left out under both (the
reference's ``purge_test_set``). Tables report mean ± 95% Student-t interval over
folds × runs. Sizes: ``small`` — MQ2008 Fold 1, three learners, 5 runs, 1,000
impressions; ``full`` — everything above, 25 runs, 10,000 impressions
(Oosterhuis & de Rijke 2018 §6 run 10,000 impressions; Schuth et al. 2016 §5 use
25 runs per fold).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from oltr.experiments.config import Experiment, PlannedRunSet
from oltr.experiments.datapaths import data_root
from oltr.experiments.heldout import heldout_column
from oltr.experiments.page import ReportSection
from oltr.experiments.regret import log_checkpoints
from oltr.experiments.runner import RunSetSpec, online_column
from oltr.reproductions.recipe import Recipe, built_experiment, load_grouped, t_interval
from oltr.validation import check_choice

__all__ = [
    "CLICK_LEARNERS",
    "CLICK_MODELS",
    "DATASETS",
    "DISCOUNT",
    "OFFLINE",
    "ONLINE",
    "PROTOCOLS",
    "RECIPES",
    "SIZES",
    "click_experiment",
    "click_run_sets",
    "protocol_options",
    "sections",
    "summarize",
]

PROTOCOLS = ("reference", "lerot")
CLICK_MODELS = ("perfect", "navigational", "informational")
#: Discount of the online measure (Hofmann et al. 2013; Oosterhuis & de Rijke 2018).
DISCOUNT = 0.9995
K = 10
SEED = 20180410
#: Trace columns of the two measures.
OFFLINE = heldout_column(K, "test")
ONLINE = online_column(f"ndcg@{K}")

#: label -> (learner, its parameters); RTop-kF learns from top-1 labels, the rest from clicks.
CLICK_LEARNERS: dict[str, tuple[str, dict[str, Any]]] = {
    "PDGD": ("pdgd", {}),
    "PDGD (neural)": ("pdgd-neural", {}),
    "P-MGD": ("p-mgd", {}),
    "P-DBGD": ("p-dbgd", {}),
    "TD-DBGD": ("td-dbgd", {}),
    "RTop-kF (top-1 labels)": ("rtopk", {}),
    "random": ("random", {}),
}

#: data set -> (folds, train file, test file (``{fold}`` filled in), grades, normalise)
DATASETS: dict[str, tuple[tuple[int, ...], str, str, int, bool]] = {
    "MQ2008": (
        (1, 2, 3, 4, 5),
        "LETOR4.0/MQ2008/Fold{fold}/train.txt.gz",
        "LETOR4.0/MQ2008/Fold{fold}/test.txt.gz",
        3,
        False,
    ),
    "OHSUMED": (
        (1, 2, 3, 4, 5),
        "LETOR3.0/OHSUMED/Fold{fold}/train.txt.gz",
        "LETOR3.0/OHSUMED/Fold{fold}/test.txt.gz",
        3,
        False,
    ),
    # Only the Fold1 vali/test heads are available: learn on vali, test on test; raw
    # MSLR features are query-level normalised like LETOR's QueryLevelNorm.
    "MSLR-sample": (
        (1,),
        "MSLR-WEB-sample/mslr_fold1_valid_sample.txt.gz",
        "MSLR-WEB-sample/mslr_fold1_test_sample.txt.gz",
        5,
        True,
    ),
}

#: size -> data sets with their folds, learners, runs, impressions
SIZES: dict[str, dict[str, Any]] = {
    "small": {
        "datasets": {"MQ2008": (1,)},
        "learners": ("PDGD", "TD-DBGD", "random"),
        "runs": 5,
        "horizon": 1000,
    },
    "full": {
        "datasets": {name: spec[0] for name, spec in DATASETS.items()},
        "learners": tuple(CLICK_LEARNERS),
        "runs": 25,
        "horizon": 10_000,
    },
}


def protocol_options(protocol: str) -> dict[str, Any]:
    """What a protocol sets: the click model's stop rule, the training stream, the spec.

    >>> protocol_options("reference")["spec"]
    {'streams': 'per-run', 'no_relevant': 0.0}
    """
    check_choice(protocol, "protocol", PROTOCOLS)
    if protocol == "reference":
        return {
            "stop_rule": "every-position",
            "drop_no_relevant": False,
            "spec": {"streams": "per-run", "no_relevant": 0.0},
        }
    return {"stop_rule": "after-click", "drop_no_relevant": True, "spec": {}}


def click_run_sets(
    data: Sequence[tuple[str, str, str, int, bool]],
    *,
    learners: Sequence[str],
    click_models: Sequence[str] = CLICK_MODELS,
    runs: int,
    horizon: int,
    protocol: str = "reference",
    seed: int = SEED,
    batch_size: int = 5,
) -> list[PlannedRunSet]:
    """Run sets of every (data, click model, learner) cell.

    Parameters
    ----------
    data
        ``(group, train path, test path, grades, normalise)`` per data set (and fold).
    learners
        Labels of :data:`CLICK_LEARNERS`.
    click_models, runs, horizon, protocol, seed
        As the module docstring says; runs are repetitions ``0..runs-1``.
    batch_size
        Repetitions per run set under per-run streams (where batching buys no
        speed, smaller run sets spread over more workers); a shared stream runs
        all repetitions of a cell as one batch.

    The group of a run set is ``"DATA|CLICK MODEL"``, its label ``"LEARNER"``;
    RTop-kF, which sees top-1 labels rather than clicks, runs once per data set
    (group ``"DATA|top-1 labels"``).
    """
    options = protocol_options(protocol)
    per_run = options["spec"].get("streams") == "per-run"
    chunk = batch_size if per_run else runs
    rep_chunks = [tuple(range(i, min(i + chunk, runs))) for i in range(0, runs, chunk)]
    checkpoints = log_checkpoints(horizon, 20)
    out: list[PlannedRunSet] = []
    for group, train, test, n_grades, normalize in data:
        for first, cm in enumerate(click_models):
            for index, label in enumerate(learners):
                learner, params = CLICK_LEARNERS[label]
                if learner == "rtopk" and first:
                    continue  # labels, not clicks: the same runs under every click model
                feedback, feedback_params = (
                    ("top-k", {"k": 1})
                    if learner == "rtopk"
                    else (
                        "clicks",
                        {
                            "click_model": cm,
                            "n_grades": n_grades,
                            "k": K,
                            "stop_rule": options["stop_rule"],
                        },
                    )
                )
                for reps in rep_chunks:
                    spec = RunSetSpec(
                        env="letor-stream-v1",
                        env_params={
                            "path": train,
                            "normalize": normalize,
                            "drop_no_relevant": options["drop_no_relevant"],
                        },
                        feedback=feedback,
                        feedback_params=feedback_params,
                        learner=learner,
                        learner_params=dict(params),
                        reps=reps,
                        seed=seed,
                        horizon=horizon,
                        measures=(f"ndcg@{K}",),
                        checkpoints=checkpoints,
                        heldouts={
                            "test": {
                                "path": test,
                                "normalize": normalize,
                                "drop_no_relevant": True,
                                "k": K,
                            }
                        },
                        online_discount=DISCOUNT,
                        **options["spec"],
                    )
                    where = f"{group}|{'top-1 labels' if learner == 'rtopk' else cm}"
                    out.append(PlannedRunSet(spec, label, dict(params), index, where))
    return out


def _data(datasets: dict[str, Sequence[int]]) -> list[tuple[str, str, str, int, bool]]:
    root = data_root()
    out = []
    for name, folds in datasets.items():
        _, train, test, n_grades, normalize = DATASETS[name]
        for fold in folds:
            paths = [str((root / p.format(fold=fold)).resolve()) for p in (train, test)]
            out.append((f"{name}/Fold{fold}", paths[0], paths[1], n_grades, normalize))
    return out


def click_experiment(
    size: str = "small",
    output: Path | None = None,
    *,
    protocol: str = "reference",
    runs: int | None = None,
    horizon: int | None = None,
    learners: Sequence[str] | None = None,
    click_models: Sequence[str] = CLICK_MODELS,
    datasets: dict[str, Sequence[int]] | None = None,
    data: Sequence[tuple[str, str, str, int, bool]] | None = None,
) -> Experiment:
    """The experiment of ``size`` under ``protocol``; keywords override the size's settings.

    ``data`` replaces the real data sets (``(group, train, test, grades,
    normalise)`` tuples, e.g. synthetic files in tests).
    """
    check_choice(size, "size", tuple(SIZES))
    setting = SIZES[size]
    runs = runs or setting["runs"]
    horizon = horizon or setting["horizon"]
    learners = tuple(learners or setting["learners"])
    chosen = data if data is not None else _data(datasets or setting["datasets"])
    name = "oltr-clicks" if protocol == "reference" else f"oltr-clicks-{protocol}"
    run_sets = click_run_sets(
        chosen,
        learners=learners,
        click_models=click_models,
        runs=runs,
        horizon=horizon,
        protocol=protocol,
    )
    options = protocol_options(protocol)
    return built_experiment(
        name,
        description=_DESCRIPTION[protocol],
        source=__name__,
        size=size,
        seed=SEED,
        output=output or Path("results") / f"{name}-{size}",
        run_sets=run_sets,
        settings={
            "protocol": protocol,
            "stop_rule": options["stop_rule"],
            "train_drop_no_relevant": options["drop_no_relevant"],
            "streams": options["spec"].get("streams", "shared"),
            "runs": runs,
            "horizon": horizon,
            "learners": list(learners),
            "click_models": list(click_models),
            "data": [list(d) for d in chosen],
        },
    )


def summarize(results_dir: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(table, curves) of a results folder.

    The table has one row per (data set, click model, learner): offline and online
    mean ± 95% interval over folds × runs, and ``n``; the curves one row per (data
    set, click model, learner, impressions): the mean offline NDCG@10.
    """
    df, _ = load_grouped(results_dir)
    parts = df["group"].str.split("|", expand=True)
    df = df.assign(
        dataset=parts[0].str.split("/").str[0], click_model=parts[1], impressions=df["t"]
    )
    keys = ["dataset", "click_model", "learner"]
    final = df[df["t"] == df["t"].max()]
    rows = []
    for key, part in final.groupby(keys, sort=False):
        rows.append(
            dict(zip(keys, key, strict=True))
            | {
                "offline NDCG@10": part[OFFLINE].mean(),
                "offline ±95%": t_interval(part[OFFLINE].to_numpy()),
                "online (discounted)": part[ONLINE].mean(),
                "online ±95%": t_interval(part[ONLINE].to_numpy()),
                "n": len(part),
            }
        )
    curves = df.groupby([*keys, "impressions"], sort=False)[OFFLINE].mean().reset_index()
    return pd.DataFrame(rows), curves.rename(columns={OFFLINE: "offline NDCG@10"})


def _figure(curves: pd.DataFrame, dataset: str) -> Figure:
    part = curves[curves["dataset"] == dataset]
    models = list(dict.fromkeys(part["click_model"]))
    fig = Figure(figsize=(4.5 * len(models), 3.6), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, len(models), squeeze=False)[0]
    for ax, cm in zip(axes, models, strict=True):
        for learner, line in part[part["click_model"] == cm].groupby("learner", sort=False):
            ax.plot(line["impressions"], line["offline NDCG@10"], label=str(learner))
        ax.set_xscale("log")
        ax.set_xlabel("impressions")
        ax.set_title(f"{dataset}, {cm} clicks")
    axes[0].set_ylabel("held-out NDCG@10")
    axes[-1].legend(fontsize=7)
    return fig


def sections(results_dir: Path) -> list[ReportSection]:
    """The table and one offline-curve figure per data set, for the report."""
    table, curves = summarize(Path(results_dir))
    out = [
        ReportSection(
            "clicks-table",
            "Offline and online NDCG@10",
            "Offline: held-out NDCG@10 of the final ranker; online: discounted cumulative "
            f"NDCG@10 of the pages shown (γ = {DISCOUNT}); mean ± 95% Student-t interval "
            "over folds × runs (n).",
            table=table,
        )
    ]
    for dataset in dict.fromkeys(curves["dataset"]):
        out.append(
            ReportSection(
                f"clicks-{dataset}",
                f"{dataset}: held-out NDCG@10 against impressions",
                "Mean over folds × runs.",
                figure=_figure(curves, str(dataset)),
            )
        )
    return out


_DESCRIPTION = {
    "reference": (
        "PDGD (linear, neural), P-MGD, P-DBGD, TD-DBGD, RTop-kF under simulated clicks as the "
        "PDGD reference code runs them (small: MQ2008 Fold1, 5 runs x 10^3; full: MQ2008 and "
        "OHSUMED 5 folds, MSLR sample, 25 runs x 10^4)"
    ),
    "lerot": (
        "oltr-clicks under the protocol shipped first: stop coin after clicks only, training "
        "queries without a relevant document dropped, one query stream per cell"
    ),
}


def _build(protocol: str) -> Any:
    def build(size: str, output: Path) -> Experiment:
        return click_experiment(size, output, protocol=protocol)

    return build


#: The two reproductions: ``oltr-clicks`` (the reference protocol) and ``oltr-clicks-lerot``.
RECIPES: dict[str, Recipe] = {
    "oltr-clicks": Recipe(_DESCRIPTION["reference"], _build("reference"), sections=sections),
    "oltr-clicks-lerot": Recipe(_DESCRIPTION["lerot"], _build("lerot"), sections=sections),
}
