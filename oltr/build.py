"""Components from names: build learners, environments and feedback models, and check they fit.

Configs, the runner and the service name components by their registry names
(:mod:`oltr.registry`) with a parameter dict. The ``make_*`` functions build
them; the ``check_*`` functions build them only to validate (cheap:
environments load no data in ``__init__``) and raise ``ValueError``/``TypeError``
naming the unknown name or the bad parameter; :func:`check_compatible` refuses
a learner that needs more than the feedback model reveals, before any work.

Importing this module imports every learner, environment and feedback model,
so the registry tables are complete.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Mapping
from typing import Any

import oltr.envs  # noqa: F401  (registers every environment)
import oltr.feedback  # noqa: F401  (registers every feedback model)
import oltr.learners  # noqa: F401  (registers every learner)
from oltr.envs.base import Environment
from oltr.errors import InputError
from oltr.feedback import FeedbackModel, FeedbackRequirement
from oltr.learners.base import Learner
from oltr.registry import ENVIRONMENTS, FEEDBACK_MODELS, LEARNERS
from oltr.types import Context, RunRNGLike

__all__ = [
    "check_compatible",
    "check_env",
    "check_feedback",
    "check_learner",
    "first_context",
    "learner_class",
    "learner_problems",
    "make_env",
    "make_feedback",
    "make_learner",
]


#: Learner arguments set by the runner, never by a config.
_LEARNER_RESERVED = ("n_runs", "rng")


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


def learner_class(name: str) -> type[Learner[Any]]:
    """The learner class named ``name``: a registry name, or ``"package.module:Class"``.

    The second form runs a learner of your own without registering it: the module
    is imported (it must be importable, e.g. on ``PYTHONPATH``, also in worker
    processes) and ``Class`` must subclass :class:`~oltr.learners.base.Learner`.
    """
    if ":" not in name:
        registered = LEARNERS.lookup(name)
        assert issubclass(registered, Learner)
        return registered
    module_name, _, attr = name.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise InputError(
            f"learner {name!r}: cannot import module {module_name!r} ({exc}); "
            "is it installed or on PYTHONPATH?"
        ) from None
    cls = getattr(module, attr, None)
    if not (isinstance(cls, type) and issubclass(cls, Learner)):
        raise InputError(
            f"learner {name!r}: {module_name}.{attr} is not a Learner subclass"
            + (" (no such name in the module)" if cls is None else "")
        )
    return cls


def make_learner(
    name: str,
    params: Mapping[str, Any] | None = None,
    n_runs: int = 1,
    rngs: RunRNGLike = None,
    *,
    horizon: int | None = None,
) -> Learner[Any]:
    """Build learner ``name`` with ``params`` for ``n_runs`` runs drawing from ``rngs``.

    A learner that declares ``horizon_dependent`` (schedules that depend on T,
    e.g. a block length ``K = m^{-1/3} T^{2/3}``) gets ``horizon`` here unless
    ``params`` sets it.
    """
    cls = learner_class(name)
    kwargs = _check_params("learner", name, cls, params, _LEARNER_RESERVED)
    if horizon is not None and "horizon" not in kwargs and cls.horizon_dependent:
        kwargs["horizon"] = horizon
    return cls(**kwargs, n_runs=n_runs, rng=rngs)


def make_env(
    name: str, params: Mapping[str, Any] | None = None, *, feedback: FeedbackModel | None = None
) -> Environment:
    """Build environment ``name`` with ``params``, revealing feedback through ``feedback``."""
    cls = ENVIRONMENTS.lookup(name)
    kwargs = _check_params("environment", name, cls, params, ("feedback",))
    return cls(**kwargs, feedback=feedback)  # type: ignore[no-any-return]


def make_feedback(name: str, params: Mapping[str, Any] | None = None) -> FeedbackModel:
    """Build feedback model ``name`` with ``params``."""
    cls = FEEDBACK_MODELS.lookup(name)
    kwargs = _check_params("feedback model", name, cls, params, ())
    return cls(**kwargs)  # type: ignore[no-any-return]


def check_learner(
    name: str,
    params: Mapping[str, Any] | None = None,
    *,
    horizon: int | None = None,
    context: Context | None = None,
) -> None:
    """Raise ValueError/TypeError if learner ``name`` cannot run with ``params``.

    Built as the runner builds it (with ``horizon``); given the first round's
    ``context`` (:func:`first_context`), it also ranks it once, so that every
    error a run would raise at round 1 (a schedule that does not fit the
    horizon and the number of items, features of the wrong width) is raised
    here, before any work.
    """
    learner = make_learner(name, params, n_runs=1, rngs=0, horizon=horizon)
    if context is not None:
        learner.rank(context)


def _learner_problem(
    name: str, params: Mapping[str, Any], horizon: int | None, context: Context | None
) -> str | None:
    try:
        check_learner(name, params, horizon=horizon, context=context)
    except (ValueError, TypeError) as exc:
        return str(exc)
    return None


def learner_problems(
    name: str,
    params: Mapping[str, Any] | None = None,
    *,
    horizon: int | None = None,
    context: Context | None = None,
) -> list[str]:
    """Every problem of learner ``name`` with ``params``, not only the first (empty: fine).

    A constructor stops at its first bad argument, so one problem would hide
    the next (an unknown parameter hides a bad value of a known one). Here every
    unknown or reserved parameter is one problem; then each known parameter is
    tried on its own (the others at their defaults), and a failure is confirmed
    together with all the parameters that passed alone, so a value valid only
    in combination is not blamed. A problem only the whole setting shows (two
    values that do not fit each other, or the first round's ``context``, see
    :func:`check_learner`) is reported when nothing else is.

    >>> learner_problems("rtopk", {"bogus": 1, "surrogate": "nosuch"})  # doctest: +ELLIPSIS
    ["learner 'rtopk' has no parameter 'bogus'; ...", "surrogate must be one of ..."]
    """
    try:
        cls = learner_class(name)
        if params is None:
            params = {}
        if not isinstance(params, Mapping):
            raise TypeError(
                f"parameters of learner {name!r} must be a mapping, got {type(params).__name__}"
            )
    except (ValueError, TypeError) as exc:
        return [str(exc)]
    problems: list[str] = []
    known = {}
    for key, value in params.items():
        try:
            _check_params("learner", name, cls, {key: value}, _LEARNER_RESERVED)
        except (ValueError, TypeError) as exc:
            problems.append(str(exc))
        else:
            known[key] = value
    whole = _learner_problem(name, known, horizon, context)
    if whole is None:
        return problems
    alone = {
        key: _learner_problem(name, {key: value}, horizon, None) for key, value in known.items()
    }
    passed = {key: value for key, value in known.items() if alone[key] is None}
    found: list[str] = []
    for key, value in known.items():
        if alone[key] is not None:
            confirmed = _learner_problem(name, {**passed, key: value}, horizon, None)
            if confirmed is not None and confirmed not in found:
                found.append(confirmed)
    return problems + (found or [whole])


def first_context(
    env: str,
    env_params: Mapping[str, Any] | None,
    feedback: str,
    feedback_params: Mapping[str, Any] | None,
) -> Context:
    """Round 1's context of ``env`` (reset with seed 0), for :func:`check_learner`."""
    environment = make_env(env, env_params, feedback=make_feedback(feedback, feedback_params))
    environment.reset(rng=0)
    return environment.observe(1)


def check_env(name: str, params: Mapping[str, Any] | None = None) -> None:
    """Raise ValueError/TypeError if environment ``name`` cannot be built with ``params``."""
    make_env(name, params)


def check_feedback(name: str, params: Mapping[str, Any] | None = None) -> None:
    """Raise ValueError/TypeError if feedback model ``name`` cannot be built with ``params``."""
    make_feedback(name, params)


# ---------------------------------------------------------------------------
# compatibility


def _requirement(
    learner: str | Learner[Any], params: Mapping[str, Any] | None
) -> tuple[str, FeedbackRequirement, str, bool]:
    if isinstance(learner, Learner):
        return type(learner).__name__, learner.requires, learner.context_kind, True
    inst = make_learner(learner, params, n_runs=1, rngs=0)
    return repr(learner), inst.requires, inst.context_kind, params is not None


def _provision(
    feedback: str | FeedbackModel, params: Mapping[str, Any] | None
) -> tuple[str, FeedbackRequirement, bool]:
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
    learner: str | Learner[Any],
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
    env_obj = env if isinstance(env, Environment) else make_env(env, env_params)
    if l_context != "any" and l_context != env_obj.context_kind:
        raise ValueError(
            f"learner {l_label} ranks contexts of kind {l_context!r}, but environment "
            f"{type(env_obj).__name__} produces {env_obj.context_kind!r} contexts"
        )
