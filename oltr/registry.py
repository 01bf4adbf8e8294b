"""Name tables of learners, environments and feedback models, filled by class decorators.

Classes register themselves where they are defined::

    @register_learner("rtop1f")
    class RTop1F(Learner): ...

:data:`LEARNERS`, :data:`ENVIRONMENTS` and :data:`FEEDBACK_MODELS` map names to
classes. This module imports nothing from the package (it sits at the bottom
of the layers); the tables are complete once :mod:`oltr.learners`,
:mod:`oltr.envs` and :mod:`oltr.feedback` are imported, which importing
:mod:`oltr.build` (or reading ``oltr.LEARNERS``) does. Building components
from names and checking that they fit together is the job of :mod:`oltr.build`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from typing import TypeVar

__all__ = [
    "ENVIRONMENTS",
    "FEEDBACK_MODELS",
    "LEARNERS",
    "PARAMETER_DUELERS",
    "Registry",
    "register_env",
    "register_feedback",
    "register_dueler",
    "register_learner",
]

T = TypeVar("T", bound=type)
_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")


class Registry(Mapping[str, type]):
    """A name -> class table, filled by the ``register_*`` decorators."""

    def __init__(self, what: str) -> None:
        self.what = what
        self._table: dict[str, type] = {}

    def add(self, name: str, cls: type) -> None:
        if not isinstance(name, str) or not _NAME.match(name):
            raise ValueError(
                f"{self.what} name must be lowercase letters, digits, '-', '_' or '.', got {name!r}"
            )
        old = self._table.get(name)
        if old is not None and (old.__module__, old.__qualname__) != (
            cls.__module__,
            cls.__qualname__,
        ):
            raise ValueError(
                f"{self.what} name {name!r} is already taken by {old.__module__}.{old.__qualname__}"
            )
        self._table[name] = cls

    def __getitem__(self, name: str) -> type:
        return self._table[name]

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._table))

    def __len__(self) -> int:
        return len(self._table)

    def __contains__(self, name: object) -> bool:
        return name in self._table

    def __repr__(self) -> str:
        return f"<{self.what} registry: {', '.join(self)}>"

    def lookup(self, name: str) -> type:
        """The class registered as ``name``; ValueError listing the valid names otherwise."""
        if not isinstance(name, str):
            raise TypeError(f"a {self.what} name must be a str, got {type(name).__name__}")
        if name not in self:
            raise ValueError(f"unknown {self.what} {name!r}; valid: {', '.join(self)}")
        return self._table[name]


#: Learners by name.
LEARNERS = Registry("learner")
#: Environments by name (ids carry a version, e.g. ``fixed-items-v1``).
ENVIRONMENTS = Registry("environment")
#: Feedback models by name.
FEEDBACK_MODELS = Registry("feedback model")
#: Parameter-space duel learners by name (:class:`oltr.learners.base.ParameterDueler`).
PARAMETER_DUELERS = Registry("parameter-space dueler")


def _register(table: Registry, name: str) -> Callable[[T], T]:
    def decorate(cls: T) -> T:
        table.add(name, cls)
        return cls

    return decorate


def register_learner(name: str) -> Callable[[T], T]:
    """Class decorator: register a :class:`~oltr.learners.base.Learner` as ``name``."""
    return _register(LEARNERS, name)


def register_env(name: str) -> Callable[[T], T]:
    """Class decorator: register an :class:`~oltr.envs.base.Environment` as ``name``."""
    return _register(ENVIRONMENTS, name)


def register_feedback(name: str) -> Callable[[T], T]:
    """Class decorator: register a :class:`~oltr.feedback.FeedbackModel` as ``name``."""
    return _register(FEEDBACK_MODELS, name)


def register_dueler(name: str) -> Callable[[T], T]:
    """Class decorator: register a parameter-space duel learner as ``name``."""
    return _register(PARAMETER_DUELERS, name)
