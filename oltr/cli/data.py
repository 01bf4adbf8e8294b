"""``oltr data``: inspect learning-to-rank data files and write synthetic ones."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from oltr.errors import OltrError

if TYPE_CHECKING:
    from rich.table import Table

    from oltr.data.normalization import Normalize

# Library imports happen inside the commands, so that `oltr --help` stays instant.

app = typer.Typer(
    rich_markup_mode=None,  # plain help: no "<bool>" metavar on flags
    help="Inspect LETOR / SVMlight data files and write synthetic ones.",
    no_args_is_help=True,
)


def _fail(exc: BaseException) -> NoReturn:
    """One line on stderr and the kind's exit status (3 for a malformed file, else 2)."""
    typer.echo(f"error: {exc}", err=True)
    raise typer.Exit(code=exc.exit_code if isinstance(exc, OltrError) else 2)


def _grades_text(grades: dict[int, int], n_docs: int) -> str:
    return ", ".join(f"{g}: {c} ({100 * c / n_docs:.1f}%)" for g, c in grades.items())


def _table(summary: dict[str, Any]) -> Table:
    from rich.table import Table

    lengths = summary["list_length"]
    low_high = summary["feature_range"]
    normalised = "yes" if summary["query_normalised"] else "no"
    table = Table(title=summary["source"] or "dataset", show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    rows = [
        ("queries", f"{summary['n_queries']:,}"),
        ("documents", f"{summary['n_docs']:,}"),
        ("features", f"{summary['n_features']:,}"),
        ("grades", _grades_text(summary["grades"], summary["n_docs"])),
        (
            "list length",
            f"min {lengths['min']}, median {lengths['median']:g}, "
            f"mean {lengths['mean']:.1f}, max {lengths['max']}",
        ),
        ("zero-relevance queries", f"{summary['zero_relevance_queries']:,}"),
        ("feature range", "-" if low_high is None else f"{low_high[0]:g} .. {low_high[1]:g}"),
        (
            "query-normalised",
            f"{normalised} (min-max per query: {100 * summary['minmax_fraction']:.1f}% "
            "of non-constant (query, feature) pairs)",
        ),
    ]
    if "normalization" in summary:
        how = summary["normalization"]
        rows.append((f"on load (normalize={_choice_text(how['choice'])})", how["reason"]))
    for name, value in rows:
        table.add_row(name, value)
    return table


def _choice_text(choice: bool | str) -> str:
    """A normalize choice as a config file writes it: true, false or auto."""
    return str(choice).lower()


class NormalizeChoice(StrEnum):
    """``--normalize``: the values of the ``normalize`` config key, as the CLI spells them."""

    auto = "auto"
    true = "true"
    false = "false"

    def value_for_loader(self) -> Normalize:
        """``"auto"``, True or False, as :func:`oltr.data.letor.load_letor` takes it."""
        return "auto" if self is NormalizeChoice.auto else self is NormalizeChoice.true


@app.command("info")
def info(
    path: Annotated[Path, typer.Argument(help="LETOR / SVMlight file, plain or .gz.")],
    group_file: Annotated[
        Path | None,
        typer.Option("--group-file", help="List sizes for a file without qid (.query / .group)."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Parse without the cache.")] = False,
    normalize: Annotated[
        NormalizeChoice,
        typer.Option(
            "--normalize",
            help="The per-query min-max choice to report: auto (the default of streams and "
            "held-out sets: only when a value lies outside [0, 1]), true or false.",
        ),
    ] = NormalizeChoice.auto,
) -> None:
    """Queries, documents, features, grades, list lengths and normalisation of a file.

    The statistics are the file's own values; the last row says what loading it for
    learning does with ``--normalize`` (the ``normalize`` key of ``[env]`` and
    ``[heldout]``).
    """
    from rich.console import Console

    from oltr.data.dataset import summarize
    from oltr.data.letor import load_letor
    from oltr.data.normalization import describe_normalization

    choice = normalize.value_for_loader()
    try:
        dataset = load_letor(path, group_file=group_file, cache=not no_cache, normalize=False)
    except (ValueError, OSError) as exc:
        _fail(exc)
    summary = summarize(dataset)
    summary["normalization"] = describe_normalization(choice, dataset.features)
    if as_json:
        typer.echo(json.dumps(summary, indent=2))
    else:
        Console(soft_wrap=False).print(_table(summary))


@app.command("synth")
def synth(
    out: Annotated[Path, typer.Argument(help="Output file (.gz compresses).")],
    queries: Annotated[int, typer.Option("--queries", help="Number of queries.", min=1)] = 200,
    features: Annotated[int, typer.Option("--features", help="Number of features.", min=1)] = 20,
    max_grade: Annotated[int, typer.Option("--max-grade", help="Largest grade.", min=1)] = 4,
    seed: Annotated[int, typer.Option("--seed", help="Random seed.", min=0)] = 0,
    precision: Annotated[
        int | None,
        typer.Option("--precision", help="Significant digits per value (default: exact).", min=1),
    ] = None,
) -> None:
    """Write a synthetic LETOR file drawn from a hidden scoring model."""
    from oltr.data.letor import write_letor
    from oltr.data.synthetic import synthetic_letor

    try:
        dataset = synthetic_letor(
            n_queries=queries, n_features=features, max_grade=max_grade, rng=seed
        )
        write_letor(dataset, out, precision=precision)
    except (ValueError, OSError) as exc:
        _fail(exc)
    typer.echo(
        f"wrote {out}: {dataset.n_queries} queries, {dataset.n_docs} documents, "
        f"{dataset.n_features} features (seed {seed})"
    )
