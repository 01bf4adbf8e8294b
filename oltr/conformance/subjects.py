"""What a check runs on: a class, how to build it, and the checks every class shares.

A :class:`Subject` is a class with the settings (constructor keyword
arguments) to build it with: by default the class's own ``_test_params()``. It
is made from a class, a registry name (``"pdgd"``) or a
:func:`functools.partial` of a class (its keywords become the one setting).
The checks every configurable class shares (a docstring, parameters stored
unmodified, keyword-only parameters with immutable defaults) live here too.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from oltr.conformance.report import CheckFailed, expect
from oltr.errors import InputError
from oltr.registry import Registry

__all__ = [
    "Subject",
    "require_immutable_defaults",
    "require_docstring",
    "require_params_stored",
    "make_subject",
]


@dataclass(frozen=True)
class Subject:
    """A class under check and the settings to build it with.

    Attributes
    ----------
    name
        A short name: the registry name, or ``module.Class``. Learners' random
        streams in the checks are keyed by it.
    cls
        The class.
    given
        The settings to build it with, or None for the class's ``_test_params()``.
    """

    name: str
    cls: type
    given: tuple[Mapping[str, Any], ...] | None = None

    def settings(self) -> list[dict[str, Any]]:
        """The settings to build the class with (at least one)."""
        if self.given is not None:
            out = [dict(s) for s in self.given]
        else:
            maker = getattr(self.cls, "_test_params", None)
            out = [dict(s) for s in maker()] if callable(maker) else [{}]
        if not out:
            raise CheckFailed(f"{self.cls.__name__}._test_params() yields no setting")
        return out


def _label(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def make_subject(
    target: Any,
    *,
    registry: Registry,
    accepts: Callable[[type], bool],
    what: str,
    settings: Sequence[Mapping[str, Any]] | None = None,
) -> Subject:
    """The :class:`Subject` for ``target``: a class, a name in ``registry``, or a partial.

    Raises
    ------
    InputError
        Naming the target when it is an unknown name or not a ``what`` class.
    """
    given = None if settings is None else tuple(settings)
    if isinstance(target, functools.partial):
        if target.args:
            raise InputError(
                f"a partial to check must set keyword arguments only, got {target.args!r}"
            )
        if given is None:
            given = (dict(target.keywords),)
        target = target.func
    if isinstance(target, str):
        if target not in registry:
            raise InputError(f"unknown {registry.what} {target!r}; valid: {', '.join(registry)}")
        name, cls = target, registry[target]
    elif isinstance(target, type):
        name, cls = _label(target), target
    else:
        raise InputError(
            f"a {what} to check must be a class, a registered name or a functools.partial "
            f"of a class, got {type(target).__name__}"
        )
    if inspect.isabstract(cls):
        missing = ", ".join(sorted(getattr(cls, "__abstractmethods__", ())))
        raise InputError(f"{_label(cls)} is abstract: implement {missing}")
    if not accepts(cls):
        raise InputError(f"{_label(cls)} is not a {what}")
    if given is not None:
        for s in given:
            if not isinstance(s, Mapping):
                raise InputError(f"settings must be mappings, got {type(s).__name__}")
    return Subject(name, cls, given)


# ---------------------------------------------------------------------------
# checks every configurable class shares


def require_docstring(cls: type) -> None:
    """The class has a docstring whose first line is a sentence."""
    expect(cls.__doc__ and cls.__doc__.strip(), f"{cls.__name__} has no docstring")
    first = (cls.__doc__ or "").strip().splitlines()[0]
    expect(first.endswith("."), f"{cls.__name__}: the summary line should be a sentence")


def require_params_stored(
    cls: type,
    settings: list[dict[str, Any]],
    build: Callable[[dict[str, Any]], Any],
    reserved: tuple[str, ...],
) -> None:
    """``get_params()`` returns every constructor parameter, stored as given (not converted)."""
    sig = inspect.signature(cls)
    names = [p for p in sig.parameters if p not in reserved]
    for params in settings:
        got = build(params).get_params()
        expect(list(got) == names, f"get_params() keys {list(got)} != parameters {names}")
        for key, value in got.items():
            if key in params:
                expect(
                    value is params[key],
                    f"parameter {key!r} was not stored unmodified: given {params[key]!r}, "
                    f"stored {value!r}",
                )
            else:
                default = sig.parameters[key].default
                expect(
                    value is default or _equal(value, default),
                    f"parameter {key!r} left at its default {default!r} was stored as {value!r}",
                )


def _equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return False


def require_immutable_defaults(cls: type) -> None:
    """Every constructor parameter is keyword-only, with an immutable default."""
    for p in inspect.signature(cls).parameters.values():
        expect(p.kind is inspect.Parameter.KEYWORD_ONLY, f"{p.name} must be keyword-only")
        expect(
            not isinstance(p.default, list | dict | set | np.ndarray),
            f"default of {p.name!r} is mutable ({type(p.default).__name__})",
        )
