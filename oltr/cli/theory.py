"""``oltr theory``: partial-monitoring analysis of ranking games."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable
from fractions import Fraction
from typing import Annotated, Any

import typer

from oltr.errors import InputError

app = typer.Typer(
    rich_markup_mode=None,  # plain help: no "<bool>" metavar on flags
    help="Loss/feedback matrices, observability and impossibility witnesses.",
    no_args_is_help=True,
)

MeasureOpt = Annotated[
    str,
    typer.Option(
        "--measure", help="Measure: sumloss, pairwise, dcg, ndcg, ap (map), auc, precision@K, err."
    ),
]
ItemsOpt = Annotated[int, typer.Option("--m", help="Number of items m (1..8; cells up to ~5).")]
KOpt = Annotated[int, typer.Option("--k", help="Feedback depth: relevances of the top k items.")]
GradesOpt = Annotated[
    int, typer.Option("--grades", help="Largest relevance grade n (grades 0..n; 1 = binary).")
]
#: Beyond this many cells per matrix, ``matrices`` asks for --force (m = 7, binary: 645,120).
MAX_PRINTED_CELLS = 200_000
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]


def _run(fn: Callable[[], None]) -> None:
    """Call ``fn``; bad input becomes a one-line error and exit code 2."""
    try:
        fn()
    except (ValueError, TypeError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc


def _fmt(x: Any) -> str:
    if isinstance(x, Fraction):
        return str(x.numerator) if x.denominator == 1 else f"{x.numerator}/{x.denominator}"
    v = float(x)
    return str(int(round(v))) if abs(v - round(v)) < 1e-12 else f"{v:.4f}"


def _table(corner: str, rows: list[str], cols: list[str], cells: list[list[str]]) -> str:
    width = [max(len(corner), *(len(r) for r in rows))]
    width += [
        max(len(c), *(len(cells[i][j]) for i in range(len(rows)))) for j, c in enumerate(cols)
    ]
    lines = [
        "  ".join(
            [corner.ljust(width[0])] + [c.rjust(w) for c, w in zip(cols, width[1:], strict=True)]
        )
    ]
    for r, row in zip(rows, cells, strict=True):
        lines.append(
            "  ".join(
                [r.ljust(width[0])] + [v.rjust(w) for v, w in zip(row, width[1:], strict=True)]
            )
        )
    return "\n".join(lines)


@app.command("matrices")
def matrices(
    measure: MeasureOpt = "sumloss",
    m: ItemsOpt = 3,
    k: KOpt = 1,
    grades: GradesOpt = 1,
    rows: Annotated[str, typer.Option(help="Row order: ranks (CT15 Table 1) or orders.")] = "ranks",
    cols: Annotated[
        str, typer.Option(help="Column order: lex (CT15 Table 1) or weight (CT15 §15).")
    ] = "lex",
    as_json: JsonOpt = False,
    force: Annotated[bool, typer.Option("--force", help="Print matrices of any size.")] = False,
) -> None:
    """Print the loss (or gain) matrix L and the feedback matrix H (CT15 Tables 1–2)."""

    def go() -> None:
        import numpy as np

        from oltr.theory.matrices import ranking_game

        cells = math.factorial(m) * (grades + 1) ** m if 1 <= m <= 12 else 0
        if cells > MAX_PRINTED_CELLS and not force:
            raise InputError(
                f"the matrices for m={m}, grades 0..{grades} have {math.factorial(m):,} x "
                f"{(grades + 1) ** m:,} = {cells:,} cells per matrix (hundreds of MB of text); "
                "add --force to print them anyway (redirect to a file), or choose a smaller --m"
            )
        g = ranking_game(
            measure,
            m,
            k=k,
            max_grade=grades,
            row_order=rows,  # type: ignore[arg-type]
            col_order=cols,
        )
        vals = g.exact_values()
        shown = g.values if vals is None else vals
        sym = [[g.symbol_label(h) for h in row] for row in g.feedback]
        if as_json:
            typer.echo(
                json.dumps(
                    {
                        "measure": g.measure,
                        "kind": g.kind,
                        "n_items": m,
                        "k": k,
                        "max_grade": grades,
                        "actions": list(g.action_labels),
                        "outcomes": list(g.outcome_labels),
                        "orders": (np.asarray(g.actions) + 1).tolist(),
                        "L": [[_fmt(x) for x in row] for row in shown],
                        "H": sym,
                    },
                    indent=1,
                )
            )
            return
        row_names = [f"σ{i + 1}={lab}" for i, lab in enumerate(g.action_labels)]
        head = (
            f"{'Gain' if g.kind == 'gain' else 'Loss'} matrix L: {g.measure} ({g.kind}), "
            f"m={m}, grades 0..{grades}; rows: rank vectors σ (σ(i) = position of item i)"
        )
        typer.echo(head)
        typer.echo(
            _table(
                "σ \\ r",
                row_names,
                list(g.outcome_labels),
                [[_fmt(x) for x in row] for row in shown],
            )
        )
        typer.echo(f"\nFeedback matrix H: relevance of the top {k} item(s), top first")
        typer.echo(_table("σ \\ r", row_names, list(g.outcome_labels), sym))

    _run(go)


def _print_report(rep: dict[str, Any]) -> None:
    yes = {True: "holds", False: "FAILS"}
    typer.echo(
        f"{rep['measure']}: m={rep['n_items']}, top-{rep['k']} feedback, grades "
        f"0..{rep['max_grade']}: {rep['n_actions']} actions, {rep['n_outcomes']} outcomes"
    )
    typer.echo(
        f"classes of duplicate actions: {rep['n_classes']}"
        + (
            f" (e.g. {{{', '.join(rep['duplicate_classes'][0])}}})"
            if rep["duplicate_classes"]
            else " (no duplicates)"
        )
    )
    typer.echo(f"Pareto-optimal actions: {rep['n_pareto']} of {rep['n_actions']}")
    typer.echo(f"neighbouring class pairs: {len(rep['neighbours'])}")
    for nb in rep["neighbours"][:12]:
        hood = ", ".join(nb["neighbourhood"])
        typer.echo(f"  {nb['pair'][0]} ~ {nb['pair'][1]}   N+ = {{{hood}}}")
    if len(rep["neighbours"]) > 12:
        typer.echo(f"  ... {len(rep['neighbours']) - 12} more (use --json)")
    for key, name in (
        ("global", "global observability (CT15 Def. 3, all pairs)"),
        ("global_pareto", "global observability (Pareto-optimal pairs)"),
        ("local", "local observability (CT15 Def. 5)"),
    ):
        v = rep[key]
        line = f"{name}: {yes[v['holds']]} ({v['n_pairs']} class pairs"
        line += f", {v['n_failures']} fail)" if v["n_failures"] else ")"
        typer.echo(line)
        if v["witness"] is not None:
            w = v["witness"]
            typer.echo(
                f"  witness: {w['actions'][0]} vs {w['actions'][1]}, residual "
                f"{w['residual']:.4g} of |l_i - l_j| = {w['diff_norm']:.4g}"
                + (f", signals of {{{', '.join(w['observers'])}}}" if "observers" in w else "")
            )


@app.command("observability")
def observability(
    measure: MeasureOpt = "sumloss",
    m: ItemsOpt = 3,
    k: KOpt = 1,
    grades: GradesOpt = 1,
    as_json: JsonOpt = False,
) -> None:
    """Pareto-optimal actions, neighbours and global/local observability verdicts."""

    def go() -> None:
        from tqdm.auto import tqdm

        from oltr.theory.matrices import ranking_game
        from oltr.theory.observability import ANALYSIS_STAGES, analyze_game

        game = ranking_game(measure, m, k=k, max_grade=grades)
        started: list[str] = []
        with tqdm(
            total=len(ANALYSIS_STAGES), unit="stage", leave=False, disable=None, file=sys.stderr
        ) as bar:

            def stage(name: str) -> None:
                if started:  # the previous stage is done
                    bar.update(1)
                started.append(name)
                bar.set_description(name)

            rep = analyze_game(game, progress=stage)
            bar.update(1)
        if as_json:
            typer.echo(json.dumps(rep, indent=1))
        else:
            _print_report(rep)

    _run(go)


def _print_pair(d: dict[str, Any], title: str) -> None:
    typer.echo(title)
    for key in ("p", "q"):
        dist = ", ".join(f"{r}: {v:.4g}" for r, v in d[key].items())
        typer.echo(f"  {key} = {{{dist}}}")
        typer.echo(f"    E[R] = ({', '.join(f'{x:.4f}' for x in d[f'expected_relevance_{key}'])})")
        if f"expected_G_over_Z_{key}" in d:
            typer.echo(
                "    E[G(R)/Z(R)] = ("
                + ", ".join(f"{x:.4f}" for x in d[f"expected_G_over_Z_{key}"])
                + ")"
            )
        best = ", ".join(d[f"optimal_orders_{key}"])
        typer.echo(f"    optimal orders (items best first): {best}")
    typer.echo(
        f"  feedback gap max|S p - S q| = {d['feedback_gap']:.2g}; "
        f"epsilon = {d['epsilon']:.4g} "
        f"({'a witness: regret >= epsilon*T' if d['is_witness'] else 'not a witness'})"
    )


@app.command("witness")
def witness(
    measure: MeasureOpt = "ndcg",
    m: ItemsOpt = 3,
    k: KOpt = 1,
    grades: GradesOpt = 1,
    ct16: Annotated[
        bool, typer.Option("--ct16", help="Also verify the pair of CT16 Table 1 (NDCG, m = 3).")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Indistinguishable adversaries with different optimal rankings (CT16 Thm. 5.2)."""

    def go() -> None:
        from oltr.theory.matrices import ranking_game
        from oltr.theory.witness import (
            CT16_P,
            CT16_P_TILDE,
            CT16_RELEVANCE,
            check_pair,
            find_indistinguishable_pair,
        )

        g = ranking_game(measure, m, k=k, max_grade=grades)
        found = find_indistinguishable_pair(g)
        out: dict[str, Any] = {
            "measure": g.measure,
            "n_items": m,
            "k": k,
            "max_grade": grades,
            "found": None if found is None else found.as_dict(g),
        }
        if ct16:
            g16 = ranking_game("ndcg", 3, col_order=CT16_RELEVANCE)
            out["ct16_table1"] = check_pair(g16, CT16_P, CT16_P_TILDE).as_dict(g16)
        if as_json:
            typer.echo(json.dumps(out, indent=1))
            return
        if "ct16_table1" in out:
            _print_pair(out["ct16_table1"], "CT16 Table 1 pair (NDCG, m=3, top-1 feedback):")
        if found is None:
            typer.echo(
                f"{g.measure}, m={m}, top-{k}: no indistinguishable pair with different "
                "optimal actions (global observability holds)"
            )
        else:
            _print_pair(
                out["found"],
                f"LP-found pair ({g.measure}, m={m}, top-{k} feedback, largest epsilon):",
            )

    _run(go)
