"""Every registered learner, environment, feedback model and dueler passes the library's checks.

Registering a class (``@register_learner(...)`` etc.) adds it here, built from
its ``_test_params()``, with no extra test code: the checks are those of
:mod:`oltr.conformance`, the same a user runs on their own classes. Test ids
are ``f"{name}:{check}"``, so ``pytest -k "rtop1f:"`` runs one learner's checks
and ``pytest -k check_pickle`` one check everywhere.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from oltr.conformance import (
    DUELER_CHECKS,
    ENVIRONMENT_CHECKS,
    FEEDBACK_MODEL_CHECKS,
    LEARNER_CHECKS,
    Subject,
    subject,
)
from oltr.registry import ENVIRONMENTS, FEEDBACK_MODELS, LEARNERS, PARAMETER_DUELERS, Registry

Check = Callable[[Subject], None]


def _cases(table: Registry, checks: Sequence[Check]) -> Any:
    pairs = [(name, check) for name in table for check in checks]
    return pytest.mark.parametrize(
        ("name", "check"), pairs, ids=[f"{name}:{check.__name__}" for name, check in pairs]
    )


@_cases(LEARNERS, LEARNER_CHECKS)
def test_learner(name: str, check: Check) -> None:
    check(subject(name, "learner"))


@_cases(ENVIRONMENTS, ENVIRONMENT_CHECKS)
def test_environment(name: str, check: Check) -> None:
    check(subject(name, "environment"))


@_cases(FEEDBACK_MODELS, FEEDBACK_MODEL_CHECKS)
def test_feedback_model(name: str, check: Check) -> None:
    check(subject(name, "feedback model"))


@_cases(PARAMETER_DUELERS, DUELER_CHECKS)
def test_dueler(name: str, check: Check) -> None:
    check(subject(name, "dueler"))


def test_every_registered_class_is_checked() -> None:
    """The suite covers the registries as they are (so a new class cannot slip past)."""
    assert {"random", "fixed", "noop"} <= set(LEARNERS)
    assert {"fixed-items-v1", "letor-stream-v1"} <= set(ENVIRONMENTS)
    assert {"full", "top-k", "choice", "bandit", "duel"} <= set(FEEDBACK_MODELS)
    assert {"dbgd", "bgd"} <= set(PARAMETER_DUELERS)
