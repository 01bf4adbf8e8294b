"""``oltr logs simulate``: a click log of simulated users on a logging ranker's lists."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

# Library imports happen inside the command, so that `oltr --help` stays instant.

#: Sessions from which a progress bar is shown (unless --quiet).
PROGRESS_FROM = 200_000


def _read_weights(path: Path, n_features: int) -> list[list[float]]:
    """One or several weight vectors from JSON: a list, a list of lists, or ``{"weights": ...}``."""
    from oltr.errors import InputError

    try:
        payload: Any = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not JSON ({exc.msg}, line {exc.lineno})") from None
    if isinstance(payload, dict):
        payload = payload.get("weights")
    if isinstance(payload, list) and payload and not isinstance(payload[0], list):
        payload = [payload]
    ok = isinstance(payload, list) and len(payload) > 0
    for vector in payload if ok else []:
        ok = ok and isinstance(vector, list) and len(vector) == n_features
        ok = ok and all(isinstance(x, int | float) and not isinstance(x, bool) for x in vector)
    if not ok:
        raise InputError(
            f"{path}: logger weights must be a list of {n_features} numbers (one per feature), "
            'a list of such lists, or an object with such a "weights" entry'
        )
    return [[float(x) for x in vector] for vector in payload]


def _click_given_examined(click_model: str, noise: float, top_k: int, dataset: Any) -> Any:
    """What the user clicks once a result is examined: per grade (pbm) or per position (trust)."""
    from oltr.logs.simulate import graded_click_probability, trust_parameters

    ymax = max(int(dataset.relevance.max()), 1)
    if click_model == "pbm":
        grades = range(ymax + 1)
        probs = graded_click_probability(list(grades), noise=noise, max_grade=ymax)
        return {"by_grade": dict(zip([str(g) for g in grades], probs.tolist(), strict=True))}
    if click_model == "trust":
        plus, minus = trust_parameters(top_k)
        return {"relevant_from_grade": max(1, ymax - 1), "eps_plus": plus.tolist(),
                "eps_minus": minus.tolist()}  # fmt: skip
    return None


def simulate(
    data: Annotated[Path, typer.Option("--data", help="LETOR / SVMlight file with grades.")],
    out: Annotated[Path, typer.Option("--out", help="The log to write: .parquet or .jsonl.")],
    sessions: Annotated[int, typer.Option("--sessions", help="Number of sessions.")] = 100_000,
    click_model: Annotated[
        str, typer.Option("--click-model", help="pbm | trust | cascade.")
    ] = "pbm",
    eta: Annotated[float, typer.Option("--eta", help="Position bias: θ_k = (1/k)^eta.")] = 1.0,
    noise: Annotated[
        float, typer.Option("--noise", help="pbm: P(click | examined, grade 0).")
    ] = 0.1,
    cascade: Annotated[
        str, typer.Option("--cascade", help="cascade: perfect | navigational | informational.")
    ] = "informational",
    top_k: Annotated[int, typer.Option("--top-k", help="Length of the shown lists.")] = 10,
    loggers: Annotated[int, typer.Option("--loggers", help="Number of logging rankers.")] = 1,
    logger: Annotated[
        str,
        typer.Option(
            "--logger", help="svm (Ranking SVM on --share of the queries) | random | FILE.json."
        ),
    ] = "svm",
    share: Annotated[
        float, typer.Option("--share", help="svm: share of the queries it is trained on.")
    ] = 0.01,
    swap: Annotated[str, typer.Option("--swap", help="none | swap-1k | randpair.")] = "none",
    seed: Annotated[int, typer.Option("--seed", help="Seed of every random choice.")] = 0,
    truth: Annotated[
        Path | None,
        typer.Option("--truth", help="Write the true propensities and logger weights here (JSON)."),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """Simulate a click log: users click a logging ranker's top-k under a click model."""
    from oltr.data import load_letor
    from oltr.errors import InputError
    from oltr.logs.io import write_log
    from oltr.logs.simulate import (
        CLICK_MODELS,
        SWAPS,
        random_logger,
        simulate_log,
        train_logger,
        true_propensities,
    )
    from oltr.random import child_rng

    # Checked before the data is read and the loggers trained.
    if click_model not in CLICK_MODELS:
        raise InputError(f"--click-model must be one of {list(CLICK_MODELS)}, got {click_model!r}")
    if swap != "none" and swap not in SWAPS:
        raise InputError(f"--swap must be none or one of {list(SWAPS)}, got {swap!r}")
    true_propensities("pbm", eta, top_k)  # raises for a bad --eta or --top-k
    if loggers < 1:
        raise InputError(f"--loggers must be >= 1, got {loggers}")
    if sessions < 1:
        raise InputError(f"--sessions must be >= 1, got {sessions}")
    swap_kind = None if swap == "none" else swap
    dataset = load_letor(data)
    if logger == "svm":
        weights = [
            train_logger(dataset, share=share, rng=child_rng(seed, "logger", i)).tolist()
            for i in range(loggers)
        ]
    elif logger == "random":
        weights = [
            random_logger(dataset.n_features, rng=child_rng(seed, "logger", i)).tolist()
            for i in range(loggers)
        ]
    else:
        path = Path(logger)
        if path.suffix != ".json":
            raise InputError(f"--logger must be svm, random or a .json file, got {logger!r}")
        weights = _read_weights(path, dataset.n_features)
        if loggers not in (1, len(weights)):
            raise InputError(f"--loggers {loggers} but {path} holds {len(weights)} weight vectors")
    names = [logger if logger in ("svm", "random") else "file"]
    names = names if len(weights) == 1 else [f"{names[0]}{i}" for i in range(len(weights))]
    bar = None
    if not quiet and sessions >= PROGRESS_FROM:
        from tqdm.auto import tqdm

        bar = tqdm(total=sessions, unit="session", desc="simulate", leave=False)
    try:
        log = simulate_log(
            dataset,
            weights,
            n_sessions=sessions,
            click_model=click_model,
            eta=eta,
            top_k=top_k,
            noise=noise,
            cascade=cascade,
            swap=swap_kind,
            rng=child_rng(seed, "sessions"),
            logger_names=names,
            progress=None if bar is None else bar.update,
        )
    finally:
        if bar is not None:
            bar.close()
    write_log(log, out)
    if truth is not None:
        propensities = (
            None if click_model == "cascade" else true_propensities(click_model, eta, top_k)
        )
        record = {
            "click_model": click_model,
            "eta": eta,
            "noise": noise,
            "cascade": cascade if click_model == "cascade" else None,
            "top_k": top_k,
            "swap": swap_kind,
            "seed": seed,
            "sessions": sessions,
            "data": str(data),
            "propensities": None if propensities is None else propensities.tolist(),
            "click_given_examined": _click_given_examined(click_model, noise, top_k, dataset),
            "loggers": [{"name": n, "weights": w} for n, w in zip(names, weights, strict=True)],
        }
        tmp = truth.with_name(truth.name + ".tmp")
        tmp.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        tmp.replace(truth)
    if not quiet:
        clicks = int(log.clicks.sum())
        typer.echo(f"{log.n_impressions:,} impressions, {clicks:,} clicks -> {out}")
