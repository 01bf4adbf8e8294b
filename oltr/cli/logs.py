"""``oltr logs``: check click logs against their data, and export the service's as one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from oltr.cli import logs_fit, logs_propensities, logs_simulate

# Library imports happen inside the commands, so that `oltr --help` stays instant.

app = typer.Typer(
    rich_markup_mode=None,  # plain help: no "<bool>" metavar on flags
    help="Click logs (Parquet or JSON Lines), and learning to rank from them.",
    no_args_is_help=True,
)


def _summary(log: Any, n_queries: int | None) -> dict[str, Any]:
    import numpy as np

    positions = log.positions
    k = int(positions.max()) + 1
    shown = np.bincount(positions, minlength=k)
    clicked = np.bincount(positions, weights=log.clicks, minlength=k)
    return {
        "source": log.source,
        "impressions": log.n_impressions,
        "queries": int(np.unique(log.qids).size),
        "data_queries": n_queries,
        "positions": k,
        "clicks": int(log.clicks.sum()),
        "clicks_per_position": [int(c) for c in clicked],
        "shown_per_position": [int(s) for s in shown],
        "loggers": None if log.loggers is None else sorted(set(log.loggers.tolist())),
        "propensities": log.propensities is not None,
    }


app.command("simulate")(logs_simulate.simulate)
app.command("propensities")(logs_propensities.propensities)
app.command("fit")(logs_fit.fit)


@app.command("validate")
def validate(
    log_path: Annotated[Path, typer.Argument(help="Click log: .parquet, .jsonl or .jsonl.gz.")],
    data: Annotated[
        Path | None,
        typer.Option("--data", help="LETOR file of the log's queries: check qids and documents."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Read a click log (and bind it to its data file); print its impressions and clicks.

    A log that breaks the schema, or names a query or document the data file lacks,
    is reported with its file, row and column, and exit status 3.
    """
    from oltr.data.letor import load_letor
    from oltr.logs.binding import bind
    from oltr.logs.io import read_log

    log = read_log(log_path)
    n_queries = None
    if data is not None:
        dataset = load_letor(data)
        bind(log, dataset)
        n_queries = dataset.n_queries
    s = _summary(log, n_queries)
    if as_json:
        typer.echo(json.dumps(s, indent=2))
        return
    against = "" if data is None else f" (bound to {data}: {n_queries} queries)"
    typer.echo(f"{log_path}: valid{against}")
    typer.echo(f"impressions  {s['impressions']}")
    typer.echo(f"queries      {s['queries']}")
    typer.echo(f"positions    {s['positions']}")
    typer.echo(f"clicks       {s['clicks']}")
    typer.echo("position  shown  clicks  click rate")
    for k, (n, c) in enumerate(zip(s["shown_per_position"], s["clicks_per_position"], strict=True)):
        typer.echo(f"{k + 1:>8}  {n:>5}  {c:>6}  {c / n:10.4f}")


@app.command("export")
def export(
    store: Annotated[Path, typer.Argument(help="SQLite store of `oltr serve` (read only).")],
    ranker: Annotated[str, typer.Option("--ranker", help="Name of the ranker to export.")],
    out: Annotated[
        Path, typer.Option("--out", help="Click log to write: .parquet, .jsonl or .jsonl.gz.")
    ],
    data_out: Annotated[
        Path, typer.Option("--data-out", help="LETOR file to write: the impressions' features.")
    ],
    labels_as_clicks: Annotated[
        bool,
        typer.Option(
            "--labels-as-clicks",
            help="Count a relevance label > 0 as a click (top-k or full feedback).",
        ),
    ] = False,
) -> None:
    """Write a served ranker's impressions with feedback as a click log and its data file.

    Reads the store without its lock: a running service goes on undisturbed.
    """
    from oltr.serve.export import export_log

    s = export_log(store, ranker, out, data_out, labels_as_clicks=labels_as_clicks)
    props = "with" if s.propensities else "without"
    typer.echo(
        f"wrote {out} ({s.impressions} impressions, {props} propensities) and {data_out} "
        f"({s.n_features} features); left out {s.pending} pending and {s.expired} expired"
    )
