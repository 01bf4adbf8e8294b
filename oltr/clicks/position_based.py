"""The position-based click model: P(click) = P(examined at position i) · P(attractive | grade).

Craswell, Zoeppritz, Taylor & Ramsey 2008 (WSDM); Chuklin, Markov & de Rijke 2015,
*Click Models for Web Search*, §3.5.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from oltr.clicks.click_models import (
    ClickModel,
    _check_name,
    _check_probs,
    _check_relevance_mask,
    _Probs,
)

__all__ = ["PositionBasedClickModel", "position_based_model"]


@dataclass(frozen=True)
class PositionBasedClickModel(ClickModel):
    """Position-based click model: independent clicks, P(click at i) = θ_i · α[g_i].

    Examination probability at 0-based position ``i`` is θ_i = (1 / (i + 1))^η
    (Joachims et al. 2017 vary η, with η = 1 as the default); attractiveness α[g] is
    P(click | examined, grade g).

    Parameters
    ----------
    attractiveness
        P(click | examined, grade g) for g = 0..n_grades-1, each in [0, 1].
    eta
        Severity of the position bias, η >= 0 (0: every position is examined).
    name
        A label; not used in computation.

    References
    ----------
    Craswell et al. 2008 (WSDM); Joachims, Swaminathan & Schnabel 2017 (WSDM).

    Examples
    --------
    >>> model = position_based_model("perfect", n_grades=3, eta=1.0)
    >>> model.click_probabilities([2, 2, 1, 0])
    array([1.        , 0.5       , 0.16666667, 0.        ])
    """

    attractiveness: _Probs
    eta: float = 1.0
    name: str = "position-based"

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "attractiveness", _check_probs(self.attractiveness, "attractiveness")
        )
        eta = float(self.eta)
        if not np.isfinite(eta) or eta < 0:
            raise ValueError(f"eta must be a finite number >= 0, got {self.eta}")
        object.__setattr__(self, "eta", eta)

    @property
    def n_grades(self) -> int:  # type: ignore[override]
        """Number of relevance grades the model knows (grades 0..n_grades-1)."""
        return len(self.attractiveness)

    def examination(self, n_shown: int) -> NDArray[np.float64]:
        """θ_i = (1 / (i + 1))^η for positions i = 0..n_shown-1."""
        if isinstance(n_shown, bool) or not isinstance(n_shown, int | np.integer) or n_shown < 1:
            raise ValueError(f"n_shown must be an int >= 1, got {n_shown!r}")
        return (1.0 / np.arange(1, n_shown + 1)) ** self.eta

    def _click_given(
        self,
        grades: NDArray[np.intp],
        u_click: NDArray[np.float64],
        u_stop: NDArray[np.float64],
        mask: NDArray[np.bool_] | None,
    ) -> NDArray[np.bool_]:
        # u_stop is unused; it is drawn anyway so both models consume the same stream.
        p = self.examination(grades.shape[-1]) * np.asarray(self.attractiveness)[grades]
        clicks = u_click < p
        return np.asarray(clicks if mask is None else clicks & mask, dtype=bool)

    def click_probabilities(
        self, relevance: ArrayLike, *, mask: ArrayLike | None = None
    ) -> NDArray[np.float64]:
        """Exact marginal click probability θ_i · α[g_i] at every position.

        Parameters
        ----------
        relevance
            Integer grades of the shown list(s), shape (..., n_shown).
        mask
            Optional bool array, False marks padding (probability 0).

        Returns
        -------
        probabilities
            Float array of the shape of ``relevance``.
        """
        grades, mask_ = _check_relevance_mask(relevance, mask, self.n_grades)
        p = self.examination(grades.shape[-1]) * np.asarray(self.attractiveness)[grades]
        return p if mask_ is None else np.where(mask_, p, 0.0)


def position_based_model(
    attractiveness: str | Sequence[float], *, n_grades: int = 5, eta: float = 1.0
) -> PositionBasedClickModel:
    """Build a position-based model with examination (1/rank)^η.

    Parameters
    ----------
    attractiveness
        P(click | examined, grade) per grade, or the name of a cascade
        instantiation whose click probabilities to use as attractiveness.
    n_grades
        Number of grades when ``attractiveness`` is a name (2, 3 or 5).
    eta
        Position-bias severity η >= 0.

    Returns
    -------
    model
        A :class:`PositionBasedClickModel`.

    Examples
    --------
    >>> position_based_model("informational", n_grades=2, eta=0.5).attractiveness
    (0.4, 0.9)
    """
    if isinstance(attractiveness, str):
        click, _ = _check_name(attractiveness, n_grades)
        return PositionBasedClickModel(click, eta=eta, name=f"pbm-{attractiveness}")
    return PositionBasedClickModel(tuple(attractiveness), eta=eta)
