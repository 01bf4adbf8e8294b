"""Reproductions: each paper's (or protocol's) figures and tables, run through the engine.

Every reproduction is an ordinary experiment of :mod:`oltr.experiments` — run
sets that the sweep runs, stores and resumes, and a report — either a packaged
TOML config (``oltr/reproductions/configs/NAME.toml``) or a
:class:`~oltr.reproductions.recipe.Recipe` written in Python
(:mod:`~oltr.reproductions.learner_quality`, :mod:`~oltr.reproductions.yj09`,
:mod:`~oltr.reproductions.clicks`). :mod:`~oltr.reproductions.reproduce` finds them
by name; ``oltr reproduce NAME`` runs one. Beside them: the parameter-space duels of
Yue & Joachims 2009 §5.1 (:mod:`~oltr.reproductions.synthetic_duels`), the regret
rates of Chaudhuri & Tewari 2015 across horizons (:mod:`~oltr.reproductions.horizons`)
and the built-in demonstration (:mod:`~oltr.reproductions.demo`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from oltr.lazy import lazy_exports

if TYPE_CHECKING:
    from oltr.reproductions.recipe import Recipe
    from oltr.reproductions.reproduce import (
        list_reproductions,
        load_reproduction,
        reproduction_entries,
        run_reproduction,
        write_results_report,
    )
else:
    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            "oltr.reproductions.recipe": ["Recipe"],
            "oltr.reproductions.reproduce": [
                "list_reproductions",
                "load_reproduction",
                "reproduction_entries",
                "run_reproduction",
                "write_results_report",
            ],
        },
    )

__all__ = [
    "Recipe",
    "list_reproductions",
    "load_reproduction",
    "reproduction_entries",
    "run_reproduction",
    "write_results_report",
]
