"""The outcome of conformance checks: one result per check, and the report that gathers them.

A check is a function of a :class:`~oltr.conformance.subjects.Subject` that
returns nothing when the subject conforms and raises :class:`CheckFailed`
(through :func:`expect`) saying what is wrong when it does not.
:func:`run_checks` runs a list of checks and turns each outcome, an unexpected
exception included, into a :class:`CheckResult`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CheckFailed",
    "CheckResult",
    "ConformanceError",
    "ConformanceReport",
    "expect",
    "run_checks",
]


class CheckFailed(AssertionError):
    """Raised by a check whose subject breaks the contract; the message says how."""


class ConformanceError(AssertionError):
    """Raised by :func:`oltr.conformance.assert_conforms`, listing every failed check."""


def expect(condition: object, message: str) -> None:
    """Fail the running check with ``message`` unless ``condition`` holds."""
    if not condition:
        raise CheckFailed(message)


@dataclass(frozen=True)
class CheckResult:
    """One check's outcome.

    Attributes
    ----------
    family
        What was checked: ``"learner"``, ``"environment"``, ``"feedback model"``
        or ``"dueler"``.
    check
        The check's name, e.g. ``"check_seeding_is_idempotent"``.
    passed
        Whether the subject conforms.
    message
        What is wrong ("" when it passed).
    """

    family: str
    check: str
    passed: bool
    message: str = ""

    def line(self) -> str:
        """One line for a terminal: ``PASS``/``FAIL``, the check, and what is wrong."""
        status = "PASS" if self.passed else "FAIL"
        text = f"{status}  {self.family}: {self.check}"
        return f"{text}: {self.message}" if self.message else text


@dataclass(frozen=True)
class ConformanceReport:
    """The results of every check run on one subject, in order.

    Attributes
    ----------
    subject
        The name of what was checked (a registry name or ``module.Class``).
    results
        One :class:`CheckResult` per check.
    """

    subject: str
    results: tuple[CheckResult, ...]

    @property
    def passed(self) -> bool:
        """Whether every check passed."""
        return all(r.passed for r in self.results)

    @property
    def failures(self) -> tuple[CheckResult, ...]:
        """The checks that failed."""
        return tuple(r for r in self.results if not r.passed)

    def __iter__(self) -> Iterator[CheckResult]:
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)

    def __add__(self, other: ConformanceReport) -> ConformanceReport:
        return ConformanceReport(self.subject, self.results + other.results)

    def tally(self) -> str:
        """One line: the subject and how many checks passed (and failed)."""
        failed = len(self.failures)
        text = f"{self.subject}: {len(self) - failed} of {len(self)} checks passed"
        return f"{text}, {failed} failed" if failed else text

    def summary(self) -> str:
        """Every result, one line each, then the tally."""
        return "\n".join([*(r.line() for r in self.results), self.tally()])

    def raise_if_failed(self) -> None:
        """Raise :class:`ConformanceError` listing every failed check, if any failed."""
        if self.failures:
            listed = "\n".join(f"  {r.family}: {r.check}: {r.message}" for r in self.failures)
            raise ConformanceError(
                f"{self.subject} fails {len(self.failures)} of {len(self)} checks:\n{listed}"
            )


def _describe(exc: BaseException) -> str:
    if isinstance(exc, CheckFailed):
        return str(exc)
    return f"raised {type(exc).__name__}: {exc}"


def run_checks(
    family: str,
    checks: Sequence[Callable[[Any], None]],
    subject: Any,
    label: str,
    on_result: Callable[[CheckResult], None] | None = None,
) -> ConformanceReport:
    """Run each check on ``subject``; a check that raises anything has failed.

    ``on_result`` is called with each result as soon as its check has run.
    """
    results = []
    for check in checks:
        try:
            check(subject)
        except Exception as exc:  # any failure of the subject is a finding, not a crash
            result = CheckResult(family, check.__name__, False, _describe(exc))
        else:
            result = CheckResult(family, check.__name__, True)
        results.append(result)
        if on_result is not None:
            on_result(result)
    return ConformanceReport(label, tuple(results))
