"""What every propensity estimator module hands :func:`oltr.estimators.estimate_propensities`.

An estimator prepares a *problem* from the counts (a :class:`PropensityProblem`)
whose :meth:`~PropensityProblem.fit` returns θ for given query weights, so one
bootstrap (:mod:`oltr.estimators.propensity`) serves every estimator.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

__all__ = ["FitResult", "PropensityProblem"]


@dataclass(frozen=True)
class FitResult:
    """One run of an estimator: θ (normalised), its iterations and a warm start for the next."""

    theta: NDArray[np.float64]
    iterations: int = 0
    converged: bool = True
    start: Any = None
    details: dict[str, Any] = field(default_factory=dict)


class PropensityProblem(Protocol):
    """What an estimator module prepares from the counts: a fit under query weights."""

    n_groups: int

    def fit(self, weights: NDArray[np.float64] | None, start: Any) -> FitResult:
        """θ from the counts with every query's counts multiplied by ``weights`` (None: 1)."""
        ...
