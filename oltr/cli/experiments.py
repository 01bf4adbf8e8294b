"""``oltr run``, ``oltr report``, ``oltr reproduce``: experiments through the engine."""

from __future__ import annotations

import enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from oltr.errors import InputError

if TYPE_CHECKING:
    from oltr.experiments.config import Experiment

# Library imports happen inside the commands: the engine pulls in numba-compiled
# learners, and `oltr --help` should not pay for that.


class BackendChoice(enum.StrEnum):
    """Where run sets execute."""

    local = "local"
    ray = "ray"


class SizeChoice(enum.StrEnum):
    """Reproduction sizes."""

    small = "small"
    full = "full"


JobsOpt = Annotated[
    int | None,
    typer.Option("--jobs", "-j", min=1, help="Worker processes (default: all cores)."),
]
BackendOpt = Annotated[
    BackendChoice, typer.Option("--backend", help="local process pool, or Ray (extra 'ray').")
]
AddressOpt = Annotated[
    str | None,
    typer.Option("--address", help="Ray cluster address (e.g. 'auto'); default: local Ray."),
]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")]


def _fail(message: str, code: int = 2) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def _execute(
    experiment: Experiment,
    *,
    out: Path | None,
    jobs: int | None,
    backend: BackendChoice,
    address: str | None,
    quiet: bool,
    report: bool,
    run_set_fn: Any = None,
) -> None:
    """Run a loaded experiment, then write (or point to) its report."""
    from oltr.experiments import storage
    from oltr.experiments.sweep import SweepError, run_experiment
    from oltr.reproductions import write_results_report

    results_dir = out if out is not None else experiment.output
    done = storage.finished_run_sets(results_dir)
    n_done = sum(rs.run_set_id in done for rs in experiment.run_sets)
    n_total = len(experiment.run_sets)
    typer.echo(
        f"{experiment.name}: {n_total} run set(s), {n_total - n_done} to run,"
        f" {n_done} already finished in {results_dir}"
    )
    if experiment.seed_drawn:
        typer.echo(f"no seed in the config; drew seed = {experiment.seed} (recorded)")
    try:
        run_experiment(
            experiment,
            out=results_dir,
            jobs=jobs,
            backend=backend.value,
            address=address,
            progress=not quiet,
            run_set_fn=run_set_fn,
        )
    except KeyboardInterrupt:
        kept = sum(
            rs.run_set_id in storage.finished_run_sets(results_dir) for rs in experiment.run_sets
        )
        typer.echo(
            f"\ninterrupted: {kept}/{n_total} run sets stored in {results_dir};"
            " rerun the same command to resume",
            err=True,
        )
        raise typer.Exit(130) from None
    except RuntimeError as exc:  # Ray missing or failing to start: a problem with the setup
        if isinstance(exc, SweepError):
            raise
        raise InputError(str(exc)) from None
    if report:
        rep = write_results_report(results_dir)
        typer.echo(f"report: {rep.html}")
    else:
        typer.echo(f"results in {results_dir}; report with: oltr report {results_dir}")


def run(
    config: Annotated[Path, typer.Argument(help="Experiment config (TOML).")],
    size: Annotated[
        str | None, typer.Option("--size", help="Apply the config's sizes.NAME override table.")
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Results folder (default: from config).")
    ] = None,
    jobs: JobsOpt = None,
    backend: BackendOpt = BackendChoice.local,
    address: AddressOpt = None,
    report: Annotated[bool, typer.Option(help="Write the report when done.")] = True,
    quiet: QuietOpt = False,
) -> None:
    """Run an experiment config; finished run sets in the results folder are skipped."""
    from oltr.experiments.config import load_config

    experiment = load_config(config, size=size)
    _execute(
        experiment, out=out, jobs=jobs, backend=backend, address=address, quiet=quiet, report=report
    )


def report(
    results_dir: Annotated[Path, typer.Argument(help="Results folder written by `oltr run`.")],
    measure: Annotated[
        list[str] | None,
        typer.Option("--measure", "-m", help="Measure or column to plot (repeatable)."),
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Report folder (default RESULTS_DIR/report).")
    ] = None,
) -> None:
    """Plots (PNG, SVG), a table of final values (Markdown, CSV) and one HTML page.

    A reproduction's folder also gets the reproduction's own tables and figures.
    """
    from oltr.reproductions import write_results_report

    rep = write_results_report(results_dir, measures=measure or None, out=out)
    typer.echo(f"wrote {len(rep.images)} images, {rep.table_md.name}, {rep.table_csv.name}")
    typer.echo(f"report: {rep.html}")


def reproduce(
    name: Annotated[str | None, typer.Argument(help="Reproduction name (see --list).")] = None,
    list_: Annotated[bool, typer.Option("--list", help="List the reproductions.")] = False,
    size: Annotated[
        SizeChoice, typer.Option("--size", help="small: quick; full: paper scale.")
    ] = SizeChoice.small,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Results folder (default results/NAME-SIZE).")
    ] = None,
    jobs: JobsOpt = None,
    backend: BackendOpt = BackendChoice.local,
    address: AddressOpt = None,
    quiet: QuietOpt = False,
) -> None:
    """Reproduce a paper figure or table: its run sets, stored in the results folder, and report."""
    from oltr.reproductions.reproduce import (
        list_reproductions,
        load_reproduction,
        reproduction_task,
    )

    if list_:
        entries = list_reproductions()
        width = max((len(r.name) for r in entries), default=0)
        for r in entries:
            typer.echo(f"{r.name:<{width}}  {r.description}")
        return
    if name is None:
        raise _fail("give a reproduction NAME or --list")
    experiment: Any = load_reproduction(name, size=size.value, out=out)
    _execute(
        experiment,
        out=experiment.output,
        jobs=jobs,
        backend=backend,
        address=address,
        quiet=quiet,
        report=True,
        run_set_fn=reproduction_task(name),
    )


def register(app: typer.Typer) -> None:
    """Add the experiment commands (run, report, reproduce) to the root app."""
    app.command("run")(run)
    app.command("report")(report)
    app.command("reproduce")(reproduce)
