"""``oltr list``: every registered component, its summary and its parameters."""

from __future__ import annotations

import inspect

from typer.testing import CliRunner

from oltr.cli import app
from oltr.registry import LEARNERS


def test_every_learner_is_listed_with_every_user_parameter() -> None:
    result = CliRunner().invoke(app, ["list", "learners"])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0] == f"learners ({len(LEARNERS)})"
    for name, cls in LEARNERS.items():
        block = result.output[result.output.index(f"  {name} ") :]
        for param in inspect.signature(cls).parameters:
            if param not in ("n_runs", "rng"):
                assert f"{param}=" in block.split("\n  ")[0] or param in block, (name, param)


def test_all_kinds_are_listed_without_an_argument() -> None:
    result = CliRunner().invoke(app, ["list"])
    assert result.exit_code == 0
    for kind in ("learners", "envs", "feedback", "duelers", "measures", "reproductions"):
        assert f"\n{kind} (" in "\n" + result.output


def test_an_unknown_kind_is_refused_with_the_valid_ones() -> None:
    result = CliRunner().invoke(app, ["list", "lerners"])
    assert result.exit_code == 2
    assert "unknown kind 'lerners'" in result.output and "learners" in result.output
