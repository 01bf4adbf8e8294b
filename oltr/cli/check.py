"""``oltr check``: run the conformance checks on a class of your own, or on a registered one."""

from __future__ import annotations

from typing import Annotated, Any

import typer


def _load(target: str) -> Any:
    """The class named by ``module:Class``, importing from the current folder like ``python -m``."""
    import importlib
    import os
    import sys

    from oltr.errors import InputError

    module_name, _, attr = target.partition(":")
    if not module_name or not attr:
        raise InputError(
            f"target {target!r} must be module:Class (e.g. mylearners:MyRanker) "
            "or a registered name (e.g. pdgd)"
        )
    here = os.getcwd()
    added = here not in sys.path
    if added:
        sys.path.insert(0, here)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if module_name != missing and not module_name.startswith(missing + "."):
            raise InputError(f"importing module {module_name!r} failed: {exc}") from None
        raise InputError(
            f"cannot import module {module_name!r} ({exc}); run oltr check from the folder "
            "that holds it, or put that folder on PYTHONPATH"
        ) from None
    except Exception as exc:  # the module's own code failed: name it, without a traceback
        raise InputError(
            f"importing module {module_name!r} failed: {type(exc).__name__}: {exc}"
        ) from None
    finally:
        if added:
            sys.path.remove(here)
    found = module
    for part in attr.split("."):
        if not hasattr(found, part):
            raise InputError(f"module {module_name!r} has no attribute {attr!r}")
        found = getattr(found, part)
    if not isinstance(found, type):
        raise InputError(f"{module_name}:{attr} is a {type(found).__name__}, not a class")
    return found


def check(
    target: Annotated[
        str,
        typer.Argument(
            help="module:Class (the current folder is importable, as with python -m), or a "
            "registered name such as pdgd.",
            show_default=False,
        ),
    ],
) -> None:
    """Check that a learner, environment, feedback model or dueler keeps oltr's contract.

    Runs every conformance check that applies (seeding, valid orders, untouched
    inputs, feedback limited to what a learner declares, batch independence,
    clone, pickle, ...) and prints one line per check; exits with 1 if any fails.
    """
    from oltr.conformance import audit

    subject = target if ":" not in target else _load(target)
    report = audit(subject, on_result=lambda result: typer.echo(result.line()))
    typer.echo(report.tally())
    if not report.passed:
        raise typer.Exit(1)
