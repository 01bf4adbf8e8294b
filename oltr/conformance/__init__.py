"""Conformance checks as library functions: check your own learner, environment or dueler.

The suite that checks every built-in class is the one you run on yours, in
the spirit of scikit-learn's ``check_estimator`` and Gymnasium's
``check_env``. Each ``audit_*`` function takes a class (or its registry name,
or a :func:`functools.partial` of it fixing the settings to check), runs every
applicable check and returns a :class:`ConformanceReport` of per-check
results; :func:`assert_conforms` raises :class:`ConformanceError` listing
what failed. ``oltr check module:Class`` does the same from the command line.

* :func:`audit_learner` — :data:`LEARNER_CHECKS`: constructor rules, seeding,
  valid orders, untouched inputs, feedback limited to what the learner
  declares, runs independent of their batch, clone and pickle; on every
  registered environment and feedback model that fit the learner;
* :func:`audit_environment` — :data:`ENVIRONMENT_CHECKS`;
* :func:`audit_feedback_model` — :data:`FEEDBACK_MODEL_CHECKS`;
* :func:`audit_dueler` — :data:`DUELER_CHECKS` (parameter-space duel learners);
* :func:`audit` — every family the class belongs to.

A class is built from each of its settings: by default its ``_test_params()``
(for duelers, :func:`~oltr.conformance.duelers.default_dueler_setting`).

Examples
--------
>>> from oltr.conformance import audit_learner
>>> report = audit_learner("random")
>>> report.passed, len(report)
(True, 12)
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from oltr.conformance.duelers import DUELER_CHECKS, default_dueler_setting, is_dueler
from oltr.conformance.environments import ENVIRONMENT_CHECKS, is_environment
from oltr.conformance.feedback_models import FEEDBACK_MODEL_CHECKS, is_feedback_model
from oltr.conformance.learners import LEARNER_CHECKS, is_learner
from oltr.conformance.report import (
    CheckFailed,
    CheckResult,
    ConformanceError,
    ConformanceReport,
    run_checks,
)
from oltr.conformance.subjects import Subject, make_subject
from oltr.errors import InputError
from oltr.registry import ENVIRONMENTS, FEEDBACK_MODELS, LEARNERS, PARAMETER_DUELERS, Registry

__all__ = [
    "DUELER_CHECKS",
    "ENVIRONMENT_CHECKS",
    "FEEDBACK_MODEL_CHECKS",
    "LEARNER_CHECKS",
    "CheckFailed",
    "CheckResult",
    "ConformanceError",
    "ConformanceReport",
    "Subject",
    "assert_conforms",
    "audit",
    "audit_dueler",
    "audit_environment",
    "audit_feedback_model",
    "audit_learner",
    "default_dueler_setting",
    "subject",
]

Settings = Sequence[Mapping[str, Any]] | None
Check = Callable[[Subject], None]
OnResult = Callable[[CheckResult], None] | None

#: family -> (registry, class test, checks, what to call it in errors).
_FAMILIES: dict[str, tuple[Registry, Callable[[type], bool], tuple[Check, ...], str]] = {
    "learner": (LEARNERS, is_learner, LEARNER_CHECKS, "Learner subclass"),
    "environment": (ENVIRONMENTS, is_environment, ENVIRONMENT_CHECKS, "Environment subclass"),
    "feedback model": (
        FEEDBACK_MODELS,
        is_feedback_model,
        FEEDBACK_MODEL_CHECKS,
        "FeedbackModel subclass",
    ),
    "dueler": (PARAMETER_DUELERS, is_dueler, DUELER_CHECKS, "parameter-space dueler"),
}


def subject(target: Any, family: str, *, settings: Settings = None) -> Subject:
    """The :class:`Subject` of ``target`` as a ``family`` (``"learner"``, ``"environment"``, ...).

    Raises
    ------
    InputError
        When ``family`` is unknown, or ``target`` is an unknown name or not of the family.
    """
    if family not in _FAMILIES:
        raise InputError(f"unknown family {family!r}; valid: {', '.join(_FAMILIES)}")
    registry, accepts, _, what = _FAMILIES[family]
    return make_subject(target, registry=registry, accepts=accepts, what=what, settings=settings)


def _audit(
    family: str,
    target: Any,
    settings: Settings,
    checks: Sequence[Check] | None,
    on_result: OnResult = None,
) -> ConformanceReport:
    subj = subject(target, family, settings=settings)
    return run_checks(family, checks or _FAMILIES[family][2], subj, subj.name, on_result)


def audit_learner(
    target: Any, *, settings: Settings = None, checks: Sequence[Check] | None = None
) -> ConformanceReport:
    """Run every learner check (or ``checks``) on a Learner class, name or partial."""
    return _audit("learner", target, settings, checks)


def audit_environment(
    target: Any, *, settings: Settings = None, checks: Sequence[Check] | None = None
) -> ConformanceReport:
    """Run every environment check (or ``checks``) on an Environment class, name or partial."""
    return _audit("environment", target, settings, checks)


def audit_feedback_model(
    target: Any, *, settings: Settings = None, checks: Sequence[Check] | None = None
) -> ConformanceReport:
    """Run every feedback model check (or ``checks``) on a FeedbackModel class, name or partial."""
    return _audit("feedback model", target, settings, checks)


def audit_dueler(
    target: Any, *, settings: Settings = None, checks: Sequence[Check] | None = None
) -> ConformanceReport:
    """Run every dueler check (or ``checks``) on a parameter-space dueler class, name or partial."""
    return _audit("dueler", target, settings, checks)


def _families(target: Any) -> list[str]:
    if isinstance(target, str):
        found = [f for f, (registry, *_) in _FAMILIES.items() if target in registry]
        if not found:
            raise InputError(
                f"{target!r} is not a registered learner, environment, feedback model or "
                "dueler; see `oltr list`"
            )
        return found
    cls = getattr(target, "func", target)
    if inspect.isabstract(cls):
        missing = ", ".join(sorted(getattr(cls, "__abstractmethods__", ())))
        raise InputError(f"{cls.__qualname__} is abstract: implement {missing}")
    found = [f for f, (_, accepts, *_) in _FAMILIES.items() if accepts(cls)]
    if not found:
        label = getattr(cls, "__qualname__", type(cls).__name__)
        raise InputError(
            f"{label} is not a Learner, Environment or FeedbackModel subclass, "
            "nor a parameter-space dueler (propose, learn, parameter_feedback)"
        )
    return found


def audit(
    target: Any, *, settings: Settings = None, on_result: OnResult = None
) -> ConformanceReport:
    """Run the checks of every family ``target`` belongs to (e.g. DBGD: learner and dueler).

    ``on_result`` is called with each :class:`CheckResult` as soon as its check has run.
    """
    families = _families(target)
    subjects = [subject(target, family, settings=settings) for family in families]
    reports = [
        run_checks(family, _FAMILIES[family][2], subj, subj.name, on_result)
        for family, subj in zip(families, subjects, strict=True)
    ]
    out = reports[0]
    for more in reports[1:]:
        out = out + more
    return out


def assert_conforms(target: Any, *, settings: Settings = None) -> ConformanceReport:
    """:func:`audit` ``target``; raise :class:`ConformanceError` listing every failed check."""
    report = audit(target, settings=settings)
    report.raise_if_failed()
    return report
