"""The report's HTML page, and the sections a caller adds to a report.

:func:`oltr.experiments.report.write_report` draws what every results folder has
(curves per measure, a table of final values). A caller that knows more about the
experiment (a paper's table, its figure) adds :class:`ReportSection` objects: each
is shown first on the page, and its table and figure are also written as files.
"""

from __future__ import annotations

import dataclasses
import html
import json
import re
from collections.abc import Sequence
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

__all__ = ["ReportSection", "frame_cells", "frame_markdown", "render_page", "table_html"]


@dataclasses.dataclass(frozen=True)
class ReportSection:
    """One part of a report: a heading, a paragraph, and optionally a table and a figure.

    Parameters
    ----------
    name
        File stem of the section's files: ``NAME.csv`` and ``NAME.md`` for the
        table, ``NAME.png`` and ``NAME.svg`` for the figure (letters, digits,
        ``-`` and ``_`` only).
    title
        Heading on the page.
    text
        A paragraph under the heading (plain text).
    table
        Shown as it is (strings as written, numbers with 4 significant digits).
    figure
        A matplotlib figure, embedded in the page.
    """

    name: str
    title: str
    text: str = ""
    table: pd.DataFrame | None = None
    figure: Figure | None = None

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[A-Za-z0-9_-]+", self.name):
            raise ValueError(
                f"section name must use letters, digits, '-' and '_' only, got {self.name!r}"
            )


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return "–" if value != value else f"{value:.4g}"
    return str(value)


def table_html(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """An HTML table of already formatted cells (escaped here)."""
    esc = html.escape
    out = "<table><thead><tr>" + "".join(f"<th>{esc(h)}</th>" for h in header)
    out += "</tr></thead><tbody>"
    out += "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>" for row in rows)
    return out + "</tbody></table>"


def frame_cells(table: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    """Header and formatted cells of a plain DataFrame (floats to 4 significant digits)."""
    rows = [[_cell(v) for v in row] for row in table.itertuples(index=False)]
    return [str(c) for c in table.columns], rows


def frame_markdown(table: pd.DataFrame) -> str:
    """A Markdown table of a plain DataFrame (as :func:`frame_cells` formats it)."""
    header, rows = frame_cells(table)
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


_CSS = """
body { font-family: system-ui, sans-serif; max-width: 70em; margin: 2em auto; padding: 0 1em;
       color: #222; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #bbb; padding: 0.3em 0.6em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
figure { display: inline-block; margin: 0.5em; }
img { max-width: 100%; }
code, pre { background: #f4f4f4; }
"""


def _figure(name: str, png_base64: str) -> str:
    esc = html.escape
    return (
        f'<figure><img alt="{esc(name)}" src="data:image/png;base64,{png_base64}">'
        f"<figcaption>{esc(name)}</figcaption></figure>"
    )


def render_page(
    manifest: dict[str, Any],
    summary: str,
    final: tuple[list[str], list[list[str]]],
    images: list[tuple[str, str]],
    sections: Sequence[tuple[ReportSection, str | None]] = (),
) -> str:
    """The self-contained HTML page of a report.

    ``final`` is the final-value table (header, cells); ``images`` are (name,
    base64 PNG) pairs; ``sections`` are the caller's sections, each with its
    figure as base64 PNG (or None), shown first.
    """
    esc = html.escape
    name = manifest.get("name", "experiment")
    config = manifest.get("config", {})
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{esc(str(name))} — oltr report</title><style>{_CSS}</style></head><body>",
        f"<h1>{esc(str(name))}</h1>",
        f"<p>{esc(str(manifest.get('description', '')))}</p>",
        f"<p>{esc(summary)}.</p>",
    ]
    for section, png in sections:
        parts.append(f"<h2>{esc(section.title)}</h2>")
        if section.text:
            parts.append(f"<p>{esc(section.text)}</p>")
        if section.table is not None:
            parts.append(table_html(*frame_cells(section.table)))
        if png is not None:
            parts.append(_figure(section.name, png))
    parts += [
        "<h2>Final values</h2>",
        table_html(*final),
        "<p>Mean ± 95% t-interval half-width over repetitions at the last round.</p>",
        "<h2>Curves</h2>",
        "\n".join(_figure(n, data) for n, data in images),
        "<h2>Configuration</h2>",
        f"<pre>{esc(json.dumps(config, indent=2))}</pre>",
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"
