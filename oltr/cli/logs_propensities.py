"""``oltr logs propensities``: position-bias propensities θ_1..θ_K of a click log, with CIs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from oltr.data.dataset import LetorDataset
    from oltr.logs.binding import PositionCounts

# Library imports happen inside the command, so that `oltr --help` stays instant.

#: What ``--method`` accepts: the estimators of :mod:`oltr.estimators`, and DLA.
METHOD_NAMES = ("em", "harvesting", "randomization", "dla")
#: Impressions per chunk when the log is streamed.
CHUNK_ROWS = 200_000


def _pad(a: Any, k: int) -> Any:
    import numpy as np

    return np.pad(a, ((0, 0), (0, k - a.shape[1]))) if a.shape[1] < k else a


def stream_counts(
    path: Path, dataset: LetorDataset, n_positions: int | None, *, by_logger: bool
) -> tuple[PositionCounts, int]:
    """Counts per (row, position) (per logger with ``by_logger``) of the log at ``path``, streamed.

    The log is read in chunks (:func:`oltr.logs.io.iter_log`), each bound to
    ``dataset`` and counted, so memory does not grow with the log; K is
    ``n_positions`` or the longest list seen. Returns the counts and the
    number of impressions.
    """
    import numpy as np

    from oltr.logs.binding import PositionCounts, bind, position_counts
    from oltr.logs.io import iter_log
    from oltr.logs.schema import LogFormatError

    totals: dict[str, list[Any]] = {}
    k = n_positions or 1
    n = 0
    for chunk in iter_log(path, batch_rows=CHUNK_ROWS):
        if n_positions is None:
            k = max(k, int(chunk.list_lengths.max()))
        try:
            counts = position_counts(bind(chunk, dataset), k, by_logger=by_logger)
        except LogFormatError as exc:  # name the row in the file, not in the chunk
            row = None if exc.row is None else exc.row + n
            message = str(exc).split(": ", 1)[-1]
            raise LogFormatError(message, row=row, column=exc.column, source=str(path)) from None
        n += chunk.n_impressions
        names = counts.logger_names or ("",)
        clicks = counts.clicks if by_logger else counts.clicks[None]
        shown = counts.shown if by_logger else counts.shown[None]
        for i, name in enumerate(names):
            if name not in totals:
                totals[name] = [np.zeros((dataset.n_docs, k)), np.zeros((dataset.n_docs, k))]
            total = totals[name]
            total[0], total[1] = _pad(total[0], k), _pad(total[1], k)
            total[0][:, : clicks.shape[2]] += clicks[i]
            total[1][:, : shown.shape[2]] += shown[i]
    order = sorted(totals)
    c = np.stack([_pad(totals[name][0], k) for name in order])
    s = np.stack([_pad(totals[name][1], k) for name in order])
    if by_logger:
        return PositionCounts(c, s, tuple(order)), n
    return PositionCounts(c[0], s[0]), n


def _table(est: Any, source: str) -> Any:
    from rich.table import Table

    title = f"{source}: propensities by {est.method}, {est.n_impressions:,} impressions" + (
        f", 95% bootstrap intervals ({est.n_bootstrap} replicates)" if est.n_bootstrap else ""
    )
    table = Table(title=title, title_justify="left")
    table.add_column("position", justify="right")
    table.add_column("θ_k / θ_1", justify="right")
    table.add_column("95% interval", justify="right")
    for k, (theta, (lo, hi)) in enumerate(zip(est.theta.tolist(), est.ci.tolist(), strict=True)):
        interval = "-" if lo != lo or hi != hi else f"[{lo:.4f}, {hi:.4f}]"  # NaN: no bootstrap
        table.add_row(str(k + 1), f"{theta:.4f}", interval)
    return table


def _dla(counts: Any, dataset: Any, n: int, seed: int) -> Any:
    import numpy as np

    from oltr.errors import InputError
    from oltr.estimators.propensity import PropensityEstimate

    try:
        from oltr.learners.counterfactual import fit_dla
    except ImportError:
        raise InputError(
            "method 'dla' is not available: it needs oltr.learners.counterfactual"
        ) from None
    _, theta = fit_dla(counts, dataset, rng=seed)
    theta = np.asarray(theta, dtype=np.float64)
    ci = np.full((theta.shape[0], 2), np.nan)
    ci[0] = 1.0
    return PropensityEstimate(method="dla", theta=theta, ci=ci, n_impressions=n)


def propensities(
    log: Annotated[Path, typer.Argument(help="Click log: .parquet, .jsonl or .jsonl.gz.")],
    data: Annotated[Path, typer.Option("--data", help="LETOR file of the log's queries.")],
    method: Annotated[
        str,
        typer.Option(
            "--method",
            help="em (regression EM, one logger) | harvesting (several loggers) | "
            "randomization (swap interventions) | dla (learned with a ranker).",
        ),
    ] = "em",
    n_positions: Annotated[
        int | None,
        typer.Option("--n-positions", help="K, positions to estimate (default: longest list)."),
    ] = None,
    json_: Annotated[bool, typer.Option("--json", help="Print the estimate as JSON.")] = False,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the bootstrap.")] = 0,
    bootstrap: Annotated[
        int, typer.Option("--bootstrap", help="Bootstrap replicates over queries (0: none).")
    ] = 200,
) -> None:
    """Estimate the examination propensities θ_k / θ_1 of a click log, with 95% intervals.

    The intervals come from a Poisson bootstrap over queries. ``em`` works on
    the log of one deterministic logger (the relevance of a document is a
    logistic regression on its features); ``harvesting`` needs a ``logger``
    column with several loggers that rank differently; ``randomization``
    needs swap interventions tagged ``<logger>@swap<k>`` in the ``logger`` column.
    """
    from oltr.data.letor import load_letor
    from oltr.errors import InputError
    from oltr.estimators.propensity import estimate_propensities

    if method not in METHOD_NAMES:
        raise InputError(f"unknown method {method!r}; choose one of {list(METHOD_NAMES)}")
    dataset = load_letor(data)
    if method == "randomization":
        from oltr.logs.binding import bind
        from oltr.logs.io import read_log

        bound = bind(read_log(log), dataset)
        est = estimate_propensities(
            bound, method, n_positions=n_positions, rng=seed, n_bootstrap=bootstrap
        )
    else:
        counts, n = stream_counts(log, dataset, n_positions, by_logger=method == "harvesting")
        if method == "dla":
            est = _dla(counts, dataset, n, seed)
        else:
            est = estimate_propensities(
                counts, method, dataset=dataset, rng=seed, n_bootstrap=bootstrap
            )
    if json_:
        typer.echo(json.dumps(est.to_json(), indent=2))
        return
    from rich.console import Console

    Console(width=100).print(_table(est, str(log)))
    if not est.converged:
        typer.echo(
            f"warning: {method} stopped after {est.iterations} iterations without meeting "
            "its stopping rule",
            err=True,
        )
