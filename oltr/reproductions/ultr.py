"""``oltr reproduce ultr``: unbiased learning to rank from simulated click logs.

The semi-synthetic protocol of counterfactual learning to rank (Joachims,
Swaminathan & Schnabel 2017, WSDM, §6; Ai, Bi, Luo, Guo & Croft 2018, SIGIR,
§6.1; Oosterhuis 2023, "Doubly robust estimation for correcting position bias
in click feedback for unbiased learning to rank", TOIS, §6): a logging ranker
(a Ranking SVM trained on 1% of the training queries,
:func:`oltr.logs.simulate.train_logger`) shows its top 10 for queries drawn
uniformly; simulated users click under the position-based model with
examination ``θ_k = (1/k)^η`` and graded click noise
(:func:`oltr.logs.simulate.simulate_log`). From the log alone:

* the propensities are estimated by the regression EM of Wang, Golbandi,
  Bendersky, Metzler & Najork 2018 (WSDM) (``"em"``), and by intervention
  harvesting (Agarwal et al. 2019, WSDM) when the log has several loggers;
  DLA (Ai et al. 2018) estimates its own; the true θ are known to the simulator;
* rankers are fit (:func:`oltr.learners.counterfactual.fit_counterfactual`):
  ``naive`` (clicks as labels), ``ips`` (listwise IPS, Ai et al. 2018 §4, with
  the EM estimate), ``ips-true`` (the same with the true θ: what estimation
  costs), ``dla`` and ``dr`` (Oosterhuis 2023, with the EM estimate), and the
  ``skyline`` fit on the true grades (:func:`~oltr.learners.counterfactual.fit_skyline`);
* each ranker and the logger are scored by NDCG@10 on the fold's test queries,
  those without a relevant document dropped (:func:`oltr.learners.counterfactual.mean_ndcg`,
  :func:`oltr.metrics.ndcg`).

One run set is one run (repetition) on one (data set fold, η): it simulates one
log of the largest size, and the log of ``n`` sessions is its first ``n``
(:func:`run_ultr_set`, the run-set task, keyed by the spec's seed and the
repetition; the engine records every run set at the same checkpoints, so the
log sizes are the checkpoints ``t``). The trace has one row per log size:
``heldout:LEARNER:ndcg@10`` per learner, ``prop:METHOD:k`` per propensity
estimate and position, and ``ndcg@10`` the mean NDCG@10 of the logged pages
(what the users saw). The report
(:mod:`oltr.reproductions.ultr_report`) tabulates and plots them.

Sizes: ``full`` — MQ2008 and OHSUMED (5 folds each) and the MSLR-WEB sample,
η ∈ {0.5, 1, 2}, 10^4, 10^5 and 10^6 sessions, 5 runs; ``small`` — MQ2008
Fold 1 (a synthetic split written to the results folder when ``../shared/data``
is absent), η = 2, 10^4 and 10^5 sessions, 5 runs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from oltr.data import load_letor, synthetic_letor, write_letor
from oltr.data.dataset import LetorDataset
from oltr.estimators import estimate_propensities
from oltr.experiments.config import Experiment, PlannedRunSet
from oltr.experiments.datapaths import data_root
from oltr.experiments.heldout import HeldoutSet, heldout_column
from oltr.experiments.runner import RunSetSpec, trace_columns
from oltr.learners.counterfactual import fit_counterfactual, fit_dr, fit_skyline, mean_ndcg
from oltr.logs import bind
from oltr.logs.simulate import simulate_log, train_logger, true_propensities
from oltr.random import child_rng
from oltr.reproductions.clicks import DATASETS
from oltr.reproductions.recipe import Recipe, built_experiment
from oltr.reproductions.ultr_report import LEARNERS, K, prop_column, ultr_sections
from oltr.validation import check_choice

__all__ = [
    "K",
    "LEARNERS",
    "LOGGED",
    "SEED",
    "SIZES",
    "ULTR_RECIPE",
    "build_ultr",
    "prop_column",
    "run_ultr_set",
    "ultr_data",
]

SEED = 20180708
#: The measure of the logged pages (the runner's name for the NDCG@10 of what was shown).
LOGGED = f"ndcg@{K}"
#: The run-set task's spec names (not registry entries: :func:`run_ultr_set` reads them).
ENV, FEEDBACK, LEARNER = "ultr-log", "pbm-clicks", "counterfactual"

#: size -> data sets with their folds, η values, sessions, runs
SIZES: dict[str, dict[str, Any]] = {
    "small": {
        "datasets": {"MQ2008": (1,)},
        "etas": (2.0,),
        "sessions": (10**4, 10**5),
        "runs": 5,
    },
    "full": {
        "datasets": {name: spec[0] for name, spec in DATASETS.items()},
        "etas": (0.5, 1.0, 2.0),
        "sessions": (10**4, 10**5, 10**6),
        "runs": 5,
    },
}


def _synthetic(folder: Path) -> tuple[str, str, str, int, bool]:
    """A synthetic train/test split (46 features, grades 0-2) written once to ``folder``."""
    train, test = folder / "train.txt", folder / "test.txt"
    if not (train.is_file() and test.is_file()):
        data = synthetic_letor(n_queries=600, n_features=46, max_grade=2, rng=SEED)
        folder.mkdir(parents=True, exist_ok=True)
        for part, rows in ((train, np.arange(0, 400)), (test, np.arange(400, 600))):
            partial = part.with_name(f".{part.name}.tmp")
            write_letor(data.subset(rows), partial)
            partial.replace(part)  # atomic: a half-written file is never read
    return ("synthetic", str(train), str(test), 3, False)


def ultr_data(
    datasets: Mapping[str, Sequence[int]], output: Path | None = None
) -> list[tuple[str, str, str, int, bool]]:
    """``(group, train, test, grades, normalise)`` per data set fold (:data:`~.clicks.DATASETS`).

    With ``output``, a missing MQ2008 Fold 1 is replaced by a synthetic split
    written to ``output/data`` (the small size without ``../shared/data``).
    """
    root = data_root()
    out = []
    for name, folds in datasets.items():
        _, train, test, n_grades, normalize = DATASETS[name]
        for fold in folds:
            paths = [str((root / p.format(fold=fold)).resolve()) for p in (train, test)]
            if output is not None and not Path(paths[0]).is_file():
                out.append(_synthetic(Path(output).resolve() / "data"))
                continue
            out.append((f"{name}/Fold{fold}", paths[0], paths[1], n_grades, normalize))
    return out


def build_ultr(
    size: str,
    output: Path,
    *,
    datasets: Mapping[str, Sequence[int]] | None = None,
    data: Sequence[tuple[str, str, str, int, bool]] | None = None,
    etas: Sequence[float] | None = None,
    sessions: Sequence[int] | None = None,
    runs: int | None = None,
    n_loggers: int = 1,
    fit: Mapping[str, Any] | None = None,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    learners: Sequence[str] | None = None,
) -> Experiment:
    """The run sets of ``size``: one per (fold, η, run), recorded at each log size.

    Keywords override the size's settings.

    ``data`` replaces the data sets (``(group, train, test, grades, normalise)``
    tuples, e.g. synthetic files in tests); ``n_loggers`` > 1 simulates logs of
    several loggers (and estimates by intervention harvesting too); ``fit``
    passes options (``l2``, ``max_iter``, ``clip``) to every counterfactual fit,
    ``options`` more by method: ``{"em": {...}}`` to
    :func:`~oltr.estimators.estimate_propensities`, ``{"dr": {"steps": ...}}`` to
    :func:`~oltr.learners.counterfactual.fit_dr`; ``learners`` a subset of :data:`LEARNERS`.
    """
    check_choice(size, "size", tuple(SIZES))
    setting = SIZES[size]
    chosen = (
        list(data)
        if data is not None
        else ultr_data(datasets or setting["datasets"], output if size == "small" else None)
    )
    etas = tuple(float(e) for e in (etas or setting["etas"]))
    sessions = tuple(sorted({int(n) for n in (sessions or setting["sessions"])}))
    reps = tuple(range(int(runs or setting["runs"])))
    run_sets: list[PlannedRunSet] = []
    for group, train, test, _, normalize in chosen:
        for eta, rep in ((e, r) for e in etas for r in reps):
            spec = RunSetSpec(
                env=ENV,
                env_params={
                    "train": train,
                    "test": test,
                    "normalize": normalize,
                    "eta": eta,
                    "click_model": "pbm",
                    "top_k": K,
                    "n_loggers": int(n_loggers),
                    "group": group,
                },
                feedback=FEEDBACK,
                feedback_params={},
                learner=LEARNER,
                learner_params={
                    "learners": list(learners or LEARNERS),
                    "fit": dict(fit or {}),
                    **{k: dict(v) for k, v in (options or {}).items()},
                },
                reps=(rep,),  # one run set per run: -j spreads them over workers
                seed=SEED,
                horizon=sessions[-1],
                measures=(LOGGED,),
                checkpoints=sessions,
            )
            label = f"{group} η={eta:g}"
            run_sets.append(PlannedRunSet(spec, label, {"eta": eta}, len(run_sets), group=group))
    return built_experiment(
        "ultr",
        description=ULTR_DESCRIPTION,
        source=f"{__name__}:build_ultr",
        size=size,
        seed=SEED,
        output=output,
        run_sets=run_sets,
        settings={
            "etas": list(etas),
            "sessions": list(sessions),
            "runs": len(reps),
            "n_loggers": int(n_loggers),
            "data": [list(d) for d in chosen],
        },
    )


# ----------------------------------------------------------------------------- the task


def _logged_ndcg(train: LetorDataset, logger: Any, query_index: Any) -> float:
    """Mean NDCG@K over the sessions of the pages shown (queries without a relevant doc: 0)."""
    per_query = HeldoutSet(train, k=K, no_relevant=0.0).per_query_scorer(
        lambda x: np.asarray(x @ logger)[None]
    )[0]
    return float(per_query[query_index].mean())


def _loggers(spec: RunSetSpec, train: LetorDataset, rep: int) -> list[Any]:
    """The repetition's logging rankers (the same for every η: keyed by group and rep only)."""
    group = str(spec.env_params["group"])
    return [
        train_logger(train, rng=child_rng(spec.seed, "ultr-logger", group, rep, i))
        for i in range(int(spec.env_params["n_loggers"]))
    ]


def _fit_all(
    spec: RunSetSpec, bound: Any, train: LetorDataset, test: LetorDataset, rep: int
) -> tuple[dict[str, float], dict[str, Any]]:
    """Propensities and fits on one log: held-out NDCG@10 per learner, θ per method."""
    opts, params = spec.env_params, spec.learner_params
    learners, fit = tuple(params.get("learners", LEARNERS)), dict(params.get("fit", {}))
    group, eta, top_k = str(opts["group"]), float(opts["eta"]), int(opts["top_k"])
    n = bound.log.n_impressions
    keys = (group, f"{eta:g}", n, rep)
    theta: dict[str, Any] = {"true": true_propensities("pbm", eta, top_k)}
    boot = child_rng(spec.seed, "ultr-propensities", *keys)
    em = {"n_bootstrap": 0, **params.get("em", {})}
    theta["em"] = estimate_propensities(bound, "em", n_positions=top_k, rng=boot, **em)
    if int(opts["n_loggers"]) > 1:
        theta["harvesting"] = estimate_propensities(
            bound, "harvesting", n_positions=top_k, rng=boot, n_bootstrap=0
        )
    using = {"naive": None, "dla": None, "ips": theta["em"], "dr": theta["em"]}
    using["ips-true"] = theta["true"]
    row: dict[str, float] = {}
    for name in learners:
        if name in ("logger", "skyline"):
            continue
        rng = child_rng(spec.seed, "ultr-fit", name, *keys)
        if name == "dr":  # its own options (the policy optimisation's steps, samples)
            model = fit_dr(
                bound, train, propensities=using[name], rng=rng, **fit, **params.get("dr", {})
            )
        else:
            learner = "ips" if name == "ips-true" else name
            model = fit_counterfactual(
                bound, train, learner=learner, propensities=using[name], rng=rng, **fit
            )
        row[heldout_column(K, name)] = mean_ndcg(model, test, k=K)
        if name == "dla" and model.propensities is not None:
            theta["dla"] = model.propensities
    return row, theta


def _one_run(
    spec: RunSetSpec,
    train: LetorDataset,
    test: LetorDataset,
    rep: int,
    skyline: float,
    progress: Callable[[int], Any] | None,
) -> list[dict[str, float]]:
    """One repetition: a logger, one log of the largest size, a trace row per log prefix."""
    opts = spec.env_params
    learners = tuple(spec.learner_params.get("learners", LEARNERS))
    eta, top_k = float(opts["eta"]), int(opts["top_k"])
    loggers = _loggers(spec, train, rep)
    log = simulate_log(
        train,
        loggers[0] if len(loggers) == 1 else np.stack(loggers),
        n_sessions=spec.horizon,
        click_model=str(opts["click_model"]),
        eta=eta,
        top_k=top_k,
        rng=child_rng(spec.seed, "ultr-log", str(opts["group"]), f"{eta:g}", rep),
    )
    logger_ndcg = mean_ndcg(lambda x: x @ loggers[0], test, k=K)
    rows, done = [], 0
    for n in spec.checkpoints:
        bound = bind(log.take(np.arange(n)), train)  # the first n sessions: a log of n
        fitted, theta = _fit_all(spec, bound, train, test, rep)
        row: dict[str, float] = {"rep": rep, "t": n, **fitted}
        if "logger" in learners:
            row[heldout_column(K, "logger")] = logger_ndcg
        if "skyline" in learners:
            row[heldout_column(K, "skyline")] = skyline
        for method, est in theta.items():
            values = np.asarray(getattr(est, "theta", est), dtype=np.float64)
            for k in range(1, top_k + 1):
                row[prop_column(method, k)] = float(values[k - 1]) if k <= values.size else np.nan
        shown = _logged_ndcg(train, loggers[0], bound.query_index) if len(loggers) == 1 else np.nan
        row.update({LOGGED: shown, f"{LOGGED}:avg": shown, f"{LOGGED}:cum": shown * n})
        row[f"{LOGGED}:regret"] = np.nan
        rows.append(row)
        if progress is not None:
            progress(n - done)
        done = n
    return rows


def run_ultr_set(spec: RunSetSpec, *, progress: Callable[[int], Any] | None = None) -> pd.DataFrame:
    """Run one ULTR run set (:func:`build_ultr`): a trace row per repetition and log size.

    Each repetition ``r`` simulates one log of ``horizon`` sessions; the log of
    ``n`` sessions (a checkpoint) is its first ``n`` sessions, so the sizes are
    nested, as a log that grows. Randomness (:func:`oltr.random.child_rng` of the
    spec's seed): the logger's training sample ``("ultr-logger", group, r, i)``
    (the same for every η, so they compare on one logger), the log
    ``("ultr-log", group, η, r)``, the fits ``("ultr-fit", learner, group, η, n,
    r)``. The skyline, which sees no clicks, is fit once per run set.
    """
    if spec.env != ENV:
        raise ValueError(f"run_ultr_set runs env {ENV!r} run sets, got {spec.env!r}")
    opts = spec.env_params
    normalize = bool(opts["normalize"])
    train = load_letor(opts["train"], normalize=normalize)
    test = load_letor(opts["test"], normalize=normalize, drop_no_relevant=True)
    fit = {k: v for k, v in spec.learner_params.get("fit", {}).items() if k != "clip"}
    sky = fit_skyline(train, rng=child_rng(spec.seed, "ultr-fit", "skyline"), **fit)
    skyline = mean_ndcg(sky, test, k=K)
    rows = []
    for rep in spec.reps:
        rows += _one_run(spec, train, test, rep, skyline, progress)
    frame = pd.DataFrame(rows)
    first = trace_columns([LOGGED])
    return frame[first + [c for c in frame.columns if c not in first]]


ULTR_DESCRIPTION = (
    "Unbiased learning to rank from simulated click logs: EM propensities, naive, IPS, DLA, "
    "DR and the skyline, held-out NDCG@10 (small: MQ2008 Fold1, eta = 2, 10^4 and 10^5 "
    "sessions, 5 runs; full: MQ2008, OHSUMED, MSLR sample, eta 0.5/1/2, up to 10^6 sessions)"
)


def _build(size: str, output: Path) -> Experiment:
    return build_ultr(size, output)


#: ``oltr reproduce ultr``.
ULTR_RECIPE = Recipe(ULTR_DESCRIPTION, build=_build, task=run_ultr_set, sections=ultr_sections)
