"""``oltr list``: what is registered, with a line of description and the parameters each takes."""

from __future__ import annotations

import textwrap
from typing import Annotated

import typer

KINDS = ("learners", "envs", "feedback", "duelers", "measures", "reproductions")


def list_components(
    kind: Annotated[
        str | None,
        typer.Argument(help=f"One of {', '.join(KINDS)}; all of them when left out."),
    ] = None,
) -> None:
    """List registered learners, environments, feedback models, measures or reproductions."""
    from oltr.experiments.catalog import catalog
    from oltr.reproductions import reproduction_entries

    if kind is not None and kind not in KINDS:
        typer.echo(f"error: unknown kind {kind!r}; choose one of {', '.join(KINDS)}", err=True)
        raise typer.Exit(2)
    for i, name in enumerate([kind] if kind else KINDS):
        entries = reproduction_entries() if name == "reproductions" else catalog(name)
        typer.echo(("\n" if i else "") + f"{name} ({len(entries)})")
        width = max((len(e.name) for e in entries), default=0)
        for entry in entries:
            typer.echo(f"  {entry.name:<{width}}  {entry.summary}")
            if entry.params:
                params = textwrap.fill(
                    ", ".join(entry.params),
                    width=96,
                    initial_indent=" " * (width + 4),
                    subsequent_indent=" " * (width + 4),
                )
                typer.echo(params)
