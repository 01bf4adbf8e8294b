"""``oltr logs fit``: fit a ranker to a click log and write it as a model file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

# Library imports happen inside the command, so that `oltr --help` stays instant.


def read_propensities(path: Path) -> list[float]:
    """θ from JSON: a list of numbers, or an object with a ``"propensities"`` list.

    That is what ``oltr logs propensities --json`` writes, what ``oltr logs
    simulate --truth`` writes, and a model file's ``propensities``.
    """
    from oltr.errors import InputError

    try:
        payload: Any = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"propensities file {path} does not exist") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not JSON ({exc.msg}, line {exc.lineno})") from None
    if isinstance(payload, dict):
        payload = payload.get("propensities")
    ok = isinstance(payload, list) and len(payload) > 0
    ok = ok and all(
        isinstance(x, int | float) and not isinstance(x, bool) and x > 0 for x in payload
    )
    if not ok:
        raise InputError(
            f"{path}: propensities must be a non-empty list of positive numbers, or an object "
            'with such a "propensities" entry (as `oltr logs propensities --json` writes)'
        )
    return [float(x) for x in payload]


def fit(
    log: Annotated[Path, typer.Argument(help="Click log: .parquet, .jsonl or .jsonl.gz.")],
    data: Annotated[Path, typer.Option("--data", help="LETOR file with the log's documents.")],
    out: Annotated[Path, typer.Option("--out", help="The model file to write (JSON).")],
    learner: Annotated[
        str,
        typer.Option("--learner", help="naive | naive-pairwise | ips | ips-pairwise | dla | dr."),
    ] = "ips",
    propensities: Annotated[
        Path | None,
        typer.Option(
            "--propensities", help="JSON of θ per position (`oltr logs propensities --json`)."
        ),
    ] = None,
    method: Annotated[
        str | None,
        typer.Option("--method", help="Estimate θ from the log first: em | harvesting | ..."),
    ] = None,
    scorer: Annotated[str, typer.Option("--scorer", help="linear | mlp.")] = "linear",
    seed: Annotated[int, typer.Option("--seed", help="Seed of every random choice.")] = 0,
    l2: Annotated[float, typer.Option("--l2", help="L2 penalty on the parameters.")] = 1e-4,
    clip: Annotated[
        float | None,
        typer.Option("--clip", help="Lower bound τ on θ (default min(1, 10/sqrt(sessions)))."),
    ] = None,
    valid: Annotated[
        Path | None,
        typer.Option("--valid", help="LETOR file to report held-out NDCG@10 on."),
    ] = None,
) -> None:
    """Fit a ranker to a click log (counterfactual learning to rank); write the model file."""
    from oltr.cli.logs_propensities import stream_counts
    from oltr.data import load_letor
    from oltr.errors import InputError
    from oltr.learners.counterfactual import (
        LEARNERS,
        fit_counterfactual,
        mean_ndcg,
        save_model,
    )
    from oltr.logs import bind
    from oltr.logs.io import read_log

    if learner not in LEARNERS:
        raise InputError(f"--learner must be one of {list(LEARNERS)}, got {learner!r}")
    if propensities is not None and method is not None:
        raise InputError("give --propensities or --method, not both")
    theta: Any = None if propensities is None else read_propensities(propensities)
    dataset = load_letor(data)
    if method in ("harvesting", "randomization"):  # these read loggers or whole lists
        bound: Any = bind(read_log(log), dataset)
    else:  # counts from a streamed log: memory does not grow with the log
        bound, _ = stream_counts(log, dataset, None, by_logger=False)
    if method is not None:
        from oltr.estimators import estimate_propensities

        theta = estimate_propensities(bound, method, rng=seed, n_bootstrap=0, dataset=dataset)
    provenance: dict[str, Any] = {"log": str(log), "dataset": str(data), "seed": seed}
    if method is not None:
        provenance["propensity_method"] = method
    elif propensities is not None:
        provenance["propensities_file"] = str(propensities)
    model = fit_counterfactual(
        bound,
        dataset,
        learner=learner,
        propensities=theta,
        scorer=scorer,
        rng=seed,
        l2=l2,
        clip=clip,
        provenance=provenance,
    )
    save_model(model, out)
    typer.echo(f"wrote {out} ({learner}, {scorer}, {model.data.get('sessions')} sessions)")
    if model.propensities is not None:
        typer.echo("propensities " + " ".join(f"{x:.4f}" for x in model.propensities))
    typer.echo(f"train NDCG@10 {mean_ndcg(model, dataset):.4f}")
    if valid is not None:
        typer.echo(f"valid NDCG@10 {mean_ndcg(model, load_letor(valid)):.4f}")
