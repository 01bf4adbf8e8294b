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
    from oltr.experiments.storage import prepare_dir
    from oltr.metrics import get_measure
    from oltr.reproductions import run_reproduction
    from oltr.reproductions.demo import DEMO_REPRODUCTION, score_fixed_rankers

    if online:
        prepare_dir(out, what="demo folder")  # before any work: a bad folder fails at once
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
    typer.echo(
        f"\n== 3. Online learning at the defaults: oltr reproduce {DEMO_REPRODUCTION} --size small"
    )
    typer.echo(
        "every contextual learner learns online on 400 training queries (top-1/top-2 labels, "
        "full labels, or interleaved clicks) and is scored on 200 test queries"
    )
    _, report = run_reproduction(DEMO_REPRODUCTION, size="small", out=out)
    typer.echo((report.out_dir / f"{DEMO_REPRODUCTION}.md").read_text(encoding="utf-8"))
    typer.echo(
        "gap closed = (learner - random) / (offline RankSVM - random); "
        f"held-out curves: {report.out_dir / f'{DEMO_REPRODUCTION}.png'}; report: {report.html}"
    )
