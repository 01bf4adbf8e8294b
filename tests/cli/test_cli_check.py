"""``oltr check``: one line per check, exit 1 when one fails, one clear line for a bad target.

The command is registered on the real ``oltr`` app elsewhere; here it runs on a
minimal app with the same error path (:func:`oltr.cli.errors.handle_errors`).
"""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from oltr.cli.check import check
from oltr.cli.errors import handle_errors
from oltr.conformance import DUELER_CHECKS, LEARNER_CHECKS
from oltr.errors import EXIT_CODES

app = typer.Typer()


@app.callback()
def _root() -> None:
    """A group, so that ``check`` is a subcommand as in ``oltr``."""


app.command("check")(handle_errors(check))
runner = CliRunner()

MODULE = "user_rankers_for_check"
SOURCE = textwrap.dedent(
    '''
    """Rankers written outside oltr."""

    import numpy as np

    from oltr.feedback import FeedbackRequirement
    from oltr.learners import Learner


    class TopFirst(Learner):
        """Ranks by the top-1 labels seen so far, ties broken at random."""

        requires = FeedbackRequirement("topk", k=1)

        def __init__(self, *, n_runs=1, rng=None):
            super().__init__(n_runs=n_runs, rng=rng)
            self._seen = {}

        def rank(self, context):
            m = context.n_items
            noise = self.rngs.random((m,))
            return np.argsort(-(self._score(m) + noise), axis=1)

        def _score(self, m):
            return self._seen.get(m, np.zeros((self.n_runs, m)))

        def update(self, context, orders, feedback):
            m = context.n_items
            score = self._score(m).copy()
            score[np.arange(self.n_runs), orders[:, 0]] += feedback.labels[:, 0]
            self._seen[m] = score


    class GlobalNoise(TopFirst):
        """Draws its tie-breaking noise from numpy's global state."""

        def rank(self, context):
            m = context.n_items
            noise = np.random.random((self.n_runs, m))
            return np.argsort(-(self._score(m) + noise), axis=1)


    class NotARanker:
        """Something else."""


    def helper():
        return 1
    '''
)


@pytest.fixture
def user_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A module of the user's own in the current folder (not on sys.path: oltr check adds it)."""
    (tmp_path / f"{MODULE}.py").write_text(SOURCE, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    yield MODULE
    sys.modules.pop(MODULE, None)


def test_a_conforming_learner_of_ones_own_passes_every_check(user_module: str) -> None:
    result = runner.invoke(app, ["check", f"{user_module}:TopFirst"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.strip().splitlines()
    assert lines[:-1] == [f"PASS  learner: {c.__name__}" for c in LEARNER_CHECKS]
    n = len(LEARNER_CHECKS)
    assert lines[-1] == f"{user_module}.TopFirst: {n} of {n} checks passed"
    assert str(Path.cwd()) not in sys.path  # the folder was on the path only while importing


def test_a_failing_check_is_named_with_what_is_wrong_and_exits_1(user_module: str) -> None:
    result = runner.invoke(app, ["check", f"{user_module}:GlobalNoise"])
    assert result.exit_code == 1, result.output
    failed = [ln for ln in result.stdout.splitlines() if ln.startswith("FAIL")]
    assert "FAIL  learner: check_seeding_is_idempotent: same seeds must give the same" in (
        "\n".join(failed)
    )
    names = {ln.split(": ")[1] for ln in failed}
    # every check that compares two rollouts of one seed catches the global noise
    assert names == {
        "check_repr_and_clone",
        "check_pickle",
        "check_seeding_is_idempotent",
        "check_batch_equals_single_runs",
    }, failed
    assert "PASS  learner: check_params_stored_unmodified" in result.stdout
    assert result.stdout.strip().splitlines()[-1].endswith(f"{len(failed)} failed")


def test_a_registered_name_is_checked_in_every_family_it_belongs_to() -> None:
    result = runner.invoke(app, ["check", "dbgd"])
    assert result.exit_code == 0, result.output
    n = len(LEARNER_CHECKS) + len(DUELER_CHECKS)
    assert result.stdout.count("PASS  ") == n
    assert "PASS  dueler: check_average_regret_falls_on_p1" in result.stdout


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("nosuchname", "'nosuchname' is not a registered learner, environment, feedback model"),
        (f"{MODULE}:", "must be module:Class"),
        (":TopFirst", "must be module:Class"),
        ("no_such_module_here:X", "cannot import module 'no_such_module_here'"),
        (f"{MODULE}:Missing", f"module '{MODULE}' has no attribute 'Missing'"),
        (f"{MODULE}:helper", "is a function, not a class"),
        (f"{MODULE}:NotARanker", "NotARanker is not a Learner, Environment or FeedbackModel"),
    ],
)
def test_a_bad_target_is_one_clear_error_line(user_module: str, target: str, message: str) -> None:
    result = runner.invoke(app, ["check", target])
    assert result.exit_code == EXIT_CODES["input"], result.output
    assert result.stdout == ""
    assert result.stderr.startswith("error: ") and len(result.stderr.strip().splitlines()) == 1
    assert message in result.stderr


def test_a_module_that_fails_to_import_is_named(tmp_path: Path, user_module: str) -> None:
    (tmp_path / "broken_user_module.py").write_text("import numpy\nraise RuntimeError('boom')\n")
    try:
        result = runner.invoke(app, ["check", "broken_user_module:X"])
    finally:
        sys.modules.pop("broken_user_module", None)
    assert result.exit_code == EXIT_CODES["input"]
    assert "importing module 'broken_user_module' failed: RuntimeError: boom" in result.stderr
