"""The click-model zoo by name: cascade (both stop rules), position-based, dependent.

:func:`make_click_model` resolves the names the experiment configs use:

* ``"perfect"``, ``"navigational"``, ``"informational"`` — the standard cascade
  instantiations (:mod:`oltr.clicks.cascade`) with the chosen stop rule;
* ``"pbm-<name>"`` — the position-based model with the attractiveness of that
  instantiation and examination ``(1/(i+1))^η`` (Joachims, Swaminathan & Schnabel
  2017, §6; Craswell et al. 2008);
* ``"dcm-<name>"`` — the dependent click model (:mod:`oltr.clicks.dcm`) with that
  attractiveness and the continuation probabilities ``λ_i`` given explicitly.

Every model offers ``n_grades``, ``click_probabilities(grades)``,
``simulate(grades, rng)`` and ``clicks_from_uniforms(grades, u_click, u_stop)``:
the last is what batched feedback uses, each run drawing its ``(2, n)`` uniforms
from its own generator, so a run's clicks never depend on its batch companions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
from numpy.typing import ArrayLike, NDArray

from oltr.clicks.cascade import STOP_RULES, StopRuleCascade, check_grades, click_model
from oltr.clicks.click_models import CASCADE_PARAMETERS
from oltr.clicks.dcm import DependentClickModel
from oltr.clicks.position_based import PositionBasedClickModel
from oltr.random import RNGLike

__all__ = ["ClickSimulator", "PositionBiasedModel", "clicks_for_runs", "make_click_model"]


class ClickSimulator(Protocol):
    """What every click model of the zoo offers."""

    @property
    def n_grades(self) -> int: ...

    def click_probabilities(self, relevance: ArrayLike) -> NDArray[np.float64]: ...

    def simulate(self, relevance: ArrayLike, rng: RNGLike) -> NDArray[np.bool_]: ...

    def clicks_from_uniforms(
        self, grades: NDArray[np.intp], u_click: NDArray[np.float64], u_stop: NDArray[np.float64]
    ) -> NDArray[np.bool_]: ...


class PositionBiasedModel(PositionBasedClickModel):
    """Position-based model P(click at i) = θ_i α[g_i], θ_i = (1/(i+1))^η, with batched coins.

    The model of :class:`oltr.clicks.click_models.PositionBasedClickModel` (Craswell et
    al. 2008; Joachims et al. 2017), plus the uniform-driven draw shared by the zoo.
    """

    def clicks_from_uniforms(
        self, grades: NDArray[np.intp], u_click: NDArray[np.float64], u_stop: NDArray[np.float64]
    ) -> NDArray[np.bool_]:
        """Independent clicks; ``u_stop`` is unused (drawn so every model reads the same stream)."""
        p = self.examination(grades.shape[-1]) * np.asarray(self.attractiveness)[grades]
        return np.asarray(u_click < p)


def make_click_model(
    name: str,
    *,
    n_grades: int,
    stop_rule: str = "after-click",
    eta: float = 1.0,
    continuation: Sequence[float] | None = None,
) -> StopRuleCascade | PositionBiasedModel | DependentClickModel:
    """The click model ``name`` (see the module docstring) for data with ``n_grades`` grades.

    Parameters
    ----------
    name
        ``"perfect"``, ``"navigational"``, ``"informational"``, ``"pbm-<one of them>"``
        or ``"dcm-<one of them>"``.
    n_grades
        2, 3 or 5.
    stop_rule
        Cascade stop rule, one of :data:`oltr.clicks.cascade.STOP_RULES`.
    eta
        Position-bias severity η >= 0 of the position-based model.
    continuation
        λ_i per position, required for ``"dcm-*"``.

    Examples
    --------
    >>> make_click_model("pbm-perfect", n_grades=3).click_probabilities([2, 2]).tolist()
    [1.0, 0.5]
    """
    if not isinstance(name, str):
        raise TypeError(f"click model name must be a string, got {type(name).__name__}")
    if stop_rule not in STOP_RULES:
        raise ValueError(f"stop_rule must be one of {STOP_RULES}, got {stop_rule!r}")
    base = name.split("-", 1)[1] if name.startswith(("pbm-", "dcm-")) else name
    if (base, n_grades) not in CASCADE_PARAMETERS:
        raise ValueError(
            f"unknown click model {name!r} for n_grades={n_grades!r}: use perfect, navigational "
            "or informational (optionally prefixed by 'pbm-' or 'dcm-'), n_grades 2, 3 or 5"
        )
    attractiveness = CASCADE_PARAMETERS[(base, n_grades)][0]
    if name.startswith("pbm-"):
        return PositionBiasedModel(attractiveness, eta=eta, name=name)
    if name.startswith("dcm-"):
        if continuation is None:
            raise ValueError(f"{name!r} needs continuation (λ_i per position); DCM has no default")
        return DependentClickModel(attractiveness, tuple(continuation))
    return click_model(name, n_grades=n_grades, stop_rule=stop_rule)


def clicks_for_runs(
    model: ClickSimulator, grades: ArrayLike, uniforms: NDArray[np.float64]
) -> NDArray[np.bool_]:
    """Clicks on (B, n) shown grades given per-run uniforms of shape (B, 2, n)."""
    g = check_grades(grades, model.n_grades)
    return model.clicks_from_uniforms(g, uniforms[:, 0], uniforms[:, 1])
