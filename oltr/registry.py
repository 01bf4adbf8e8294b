"""Names of learners, environments and feedback models, and checks made before any work.

Classes register themselves with a decorator::

    @register_learner("rtop1f")
    class RTop1F(Learner): ...

:data:`LEARNERS`, :data:`ENVIRONMENTS` and :data:`FEEDBACK_MODELS` map names to
classes. They are read-only mappings filled on first use by importing every
module of :mod:`oltr.feedback`, :mod:`oltr.learners` and :mod:`oltr.envs`, so a
new module there is registered (and joins the conformance suite) without
editing this file.

The ``make_*`` functions build components from a name and a parameter dict, the
way configs and the runner do; the ``check_*`` functions build them only to
validate (cheap: environments load no data in ``__init__``) and raise
``ValueError``/``TypeError`` naming the unknown name or the bad parameter.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from oltr.envs.base import Environment
    from oltr.feedback import FeedbackModel, FeedbackRequirement
    from oltr.learners.base import Learner
    from oltr.types import RunRNGLike

__all__ = [
    "ENVIRONMENTS",
    "FEEDBACK_MODELS",
    "LEARNERS",
    "check_compatible",
    "check_env",
    "check_feedback",
    "check_learner",
    "make_env",
    "make_feedback",
    "make_learner",
    "register_env",
    "register_feedback",
    "register_learner",
]

T = TypeVar("T", bound=type)
_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")
#: Packages whose modules are imported on first use so their classes register.
_PACKAGES = ("oltr.learners", "oltr.envs")
_MODULES = ("oltr.feedback",)


class _Registry(Mapping[str, type]):
    """A name -> class table, filled by decorators and completed on first read."""

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
        _discover()
        return self._table[name]

    def __iter__(self) -> Iterator[str]:
        _discover()
        return iter(sorted(self._table))

    def __len__(self) -> int:
        _discover()
        return len(self._table)

    def __contains__(self, name: object) -> bool:
        _discover()
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


_LEARNERS = _Registry("learner")
_ENVIRONMENTS = _Registry("environment")
_FEEDBACK_MODELS = _Registry("feedback model")
#: Learners by name.
LEARNERS: Mapping[str, type] = _LEARNERS
#: Environments by name (ids carry a version, e.g. ``fixed-items-v1``).
ENVIRONMENTS: Mapping[str, type] = _ENVIRONMENTS
#: Feedback models by name.
FEEDBACK_MODELS: Mapping[str, type] = _FEEDBACK_MODELS

_state = {"done": False, "running": False}


def _discover() -> None:
    """Import every module that may register components (once it has succeeded).

    A module that fails to import raises here, on every read, rather than
    leaving a silently incomplete registry.
    """
    if _state["done"] or _state["running"]:
        return  # reads during discovery (module-level code) see the partial table
    _state["running"] = True
    try:
        for module in _MODULES:
            importlib.import_module(module)
        for package in _PACKAGES:
            pkg = importlib.import_module(package)
            for info in pkgutil.walk_packages(pkg.__path__, prefix=f"{package}."):
                if not info.name.rsplit(".", 1)[-1].startswith("_"):
                    importlib.import_module(info.name)
        _state["done"] = True
    finally:
        _state["running"] = False


def _register(table: _Registry, name: str) -> Callable[[T], T]:
    def decorate(cls: T) -> T:
        table.add(name, cls)
        return cls

    return decorate


def register_learner(name: str) -> Callable[[T], T]:
    """Class decorator: register a :class:`~oltr.learners.base.Learner` as ``name``."""
    return _register(_LEARNERS, name)


def register_env(name: str) -> Callable[[T], T]:
    """Class decorator: register an :class:`~oltr.envs.base.Environment` as ``name``."""
    return _register(_ENVIRONMENTS, name)


def register_feedback(name: str) -> Callable[[T], T]:
    """Class decorator: register a :class:`~oltr.feedback.FeedbackModel` as ``name``."""
    return _register(_FEEDBACK_MODELS, name)


# ---------------------------------------------------------------------------
# construction


def _check_params(
    what: str, name: str, cls: type, params: Mapping[str, Any] | None, reserved: tuple[str, ...]
) -> dict[str, Any]:
    if params is None:
        return {}
    if not isinstance(params, Mapping):
        raise TypeError(
            f"parameters of {what} {name!r} must be a mapping, got {type(params).__name__}"
        )
    valid = [p for p in inspect.signature(cls).parameters if p not in reserved]
    for key in params:
        if key in reserved:
            raise ValueError(f"{what} {name!r}: {key!r} is set by the runner, not a parameter")
        if key not in valid:
            raise TypeError(
                f"{what} {name!r} has no parameter {key!r}; valid parameters: "
                f"{', '.join(valid) if valid else '(none)'}"
            )
    return dict(params)


def make_learner(
    name: str,
    params: Mapping[str, Any] | None = None,
    n_runs: int = 1,
    rngs: RunRNGLike = None,
    *,
    horizon: int | None = None,
) -> Learner:
    """Build learner ``name`` with ``params`` for ``n_runs`` runs drawing from ``rngs``.

    A learner whose constructor has a ``horizon`` parameter (schedules that
    depend on T, e.g. a block length ``K = m^{-1/3} T^{2/3}``) gets ``horizon``
    here unless ``params`` sets it.
    """
    cls = _LEARNERS.lookup(name)
    kwargs = _check_params("learner", name, cls, params, ("n_runs", "rng"))
    if (
        horizon is not None
        and "horizon" not in kwargs
        and "horizon" in inspect.signature(cls).parameters
    ):
        kwargs["horizon"] = horizon
    return cls(**kwargs, n_runs=n_runs, rng=rngs)  # type: ignore[no-any-return]


def make_env(
    name: str, params: Mapping[str, Any] | None = None, *, feedback: FeedbackModel | None = None
) -> Environment:
    """Build environment ``name`` with ``params``, revealing feedback through ``feedback``."""
    cls = _ENVIRONMENTS.lookup(name)
    kwargs = _check_params("environment", name, cls, params, ("feedback",))
    return cls(**kwargs, feedback=feedback)  # type: ignore[no-any-return]


def make_feedback(name: str, params: Mapping[str, Any] | None = None) -> FeedbackModel:
    """Build feedback model ``name`` with ``params``."""
    cls = _FEEDBACK_MODELS.lookup(name)
    kwargs = _check_params("feedback model", name, cls, params, ())
    return cls(**kwargs)  # type: ignore[no-any-return]


def check_learner(name: str, params: Mapping[str, Any] | None = None) -> None:
    """Raise ValueError/TypeError if learner ``name`` cannot be built with ``params``."""
    make_learner(name, params, n_runs=1, rngs=0)


def check_env(name: str, params: Mapping[str, Any] | None = None) -> None:
    """Raise ValueError/TypeError if environment ``name`` cannot be built with ``params``."""
    make_env(name, params)


def check_feedback(name: str, params: Mapping[str, Any] | None = None) -> None:
    """Raise ValueError/TypeError if feedback model ``name`` cannot be built with ``params``."""
    make_feedback(name, params)


# ---------------------------------------------------------------------------
# compatibility


def _requirement(
    learner: str | Learner, params: Mapping[str, Any] | None
) -> tuple[str, FeedbackRequirement, str, bool]:
    from oltr.learners.base import Learner

    if isinstance(learner, Learner):
        return type(learner).__name__, learner.requires, learner.context_kind, True
    inst = make_learner(learner, params, n_runs=1, rngs=0)
    return repr(learner), inst.requires, inst.context_kind, params is not None


def _provision(
    feedback: str | FeedbackModel, params: Mapping[str, Any] | None
) -> tuple[str, FeedbackRequirement, bool]:
    from oltr.feedback import FeedbackModel

    if isinstance(feedback, FeedbackModel):
        return repr(feedback), feedback.provides, True
    model = make_feedback(feedback, params)
    label = repr(feedback) if not params else f"{feedback!r} {dict(params)}"
    return label, model.provides, params is not None


def _suggest(required: FeedbackRequirement) -> str:
    if required.kind == "topk":
        return f"use feedback 'top-k' with k >= {required.k}, or 'full'"
    if required.kind == "choice":
        return "use feedback 'choice' or 'full'"
    if required.kind == "none":
        return "use any single-list feedback model"
    return f"use feedback {required.kind!r}"


def check_compatible(
    learner: str | Learner,
    feedback: str | FeedbackModel,
    *,
    learner_params: Mapping[str, Any] | None = None,
    feedback_params: Mapping[str, Any] | None = None,
    env: str | Environment | None = None,
    env_params: Mapping[str, Any] | None = None,
) -> None:
    """Refuse a learner that needs more than the feedback model reveals.

    ``learner`` and ``feedback`` are names (built with their params, defaults
    when None) or instances. When the feedback model's params are not given,
    only the kinds are compared (a ``top-k`` model could be configured with any
    ``k``); pass them for the exact check the runner makes. With ``env``, the
    learner's ``context_kind`` must also suit the environment's (a learner of a
    fixed item set cannot rank feature lists of varying length).

    Raises
    ------
    ValueError
        Naming the learner, what it requires, what the model reveals and a fix.

    Examples
    --------
    >>> check_compatible("random", "top-k")
    >>> check_compatible("random", "duel")
    Traceback (most recent call last):
    ...
    ValueError: learner 'random' requires no feedback (one list per round), but ... two lists; ...
    """
    l_label, required, l_context, _ = _requirement(learner, learner_params)
    f_label, provided, exact = _provision(feedback, feedback_params)
    if not required.satisfied_by(provided, check_k=exact):
        needs = required.describe() + (" (one list per round)" if required.kind == "none" else "")
        raise ValueError(
            f"learner {l_label} requires {needs}, but feedback model {f_label} "
            f"reveals {provided.describe()}; {_suggest(required)}"
        )
    if env is None:
        return
    from oltr.envs.base import Environment

    env_obj = env if isinstance(env, Environment) else make_env(env, env_params)
    if l_context != "any" and l_context != env_obj.context_kind:
        raise ValueError(
            f"learner {l_label} ranks contexts of kind {l_context!r}, but environment "
            f"{type(env_obj).__name__} produces {env_obj.context_kind!r} contexts"
        )
