"""``oltr demo``: the main job on built-in data (no downloads, no data files)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def demo(
    seed: Annotated[
        int, typer.Option(help="Seed of the synthetic data and the random ranker.")
    ] = 0,
    out: Annotated[Path, typer.Option("--out", "-o", help="Results folder.")] = Path(
        "results/demo"
    ),
    online: Annotated[bool, typer.Option(help="Also run the small online reproduction.")] = True,
) -> None:
    """Synthetic LETOR-like data, fixed rankers under every measure, then a small online run."""
    from oltr.data.dataset import summarize
    from oltr.data.synthetic import synthetic_letor
    from oltr.experiments.demo import DEMO_REPRODUCTION, score_fixed_rankers
    from oltr.experiments.report import write_report
    from oltr.experiments.reproduce import load_reproduction
    from oltr.experiments.sweep import run_experiment
    from oltr.metrics import get_measure

    data = synthetic_letor(rng=seed)
    s = summarize(data)
    typer.echo("== 1. Built-in synthetic LETOR-like data (oltr.data.synthetic)")
    typer.echo(
        f"{s['n_queries']} queries, {s['n_docs']} documents, {s['n_features']} features; "
        f"grade histogram {s['grades']}; list length min/median/max "
        f"{s['list_length']['min']}/{s['list_length']['median']:g}/{s['list_length']['max']}; "
        f"{s['zero_relevance_queries']} queries without a relevant document"
    )
    typer.echo("\n== 2. Fixed rankers, mean over queries of every measure (oltr.metrics)")
    table = score_fixed_rankers(data, rng=seed)
    # Mark each column: higher is better for gains, lower for losses.
    table.columns = [f"{m} {'↑' if get_measure(m).kind == 'gain' else '↓'}" for m in table.columns]
    typer.echo(table.to_string(float_format=lambda v: f"{v:.4f}"))
    if not online:
        return
    typer.echo(f"\n== 3. Online learning from top-k feedback: {DEMO_REPRODUCTION} --size small")
    experiment = load_reproduction(DEMO_REPRODUCTION, size="small")  # its own fixed seed
    run_experiment(experiment, out=out, progress=True)
    report = write_report(out)
    typer.echo(report.table_md.read_text(encoding="utf-8"))
    typer.echo(f"report with plots: {report.html}")
