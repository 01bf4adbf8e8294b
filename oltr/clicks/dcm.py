"""The dependent click model (DCM; Guo, Liu & Wang 2009), batched and seeded.

DCM extends the cascade model to several clicks per list: the user scans
top-down; an examined result of grade ``g`` is clicked with probability
``r_g`` (its attractiveness); after a click at position ``i`` (0-based) the user
goes on with a *position-dependent* probability ``λ_i``, and after a skip always
goes on. With ``e_i`` the examination probability (Guo et al. 2009, §4, eqs. for
``e_{d_i,i}``; Chuklin, Markov & de Rijke 2015, §3.5):

    e_0 = 1,   c_i = e_i r_{g_i},   e_{i+1} = λ_i c_i + (e_i − c_i),

so ``P(click at i) = r_{g_i} · Π_{j<i} (1 − r_{g_j} (1 − λ_j))``.

DCM has no standard instantiation for simulation in online learning to rank, so
both parameter vectors are required (no invented defaults); the attractiveness
of a cascade instantiation (:func:`oltr.clicks.cascade.click_model`) is a natural
choice for ``attractiveness``.

References
----------
Guo, Liu & Wang 2009, "Efficient multiple-click models in web search", WSDM, §4.
Chuklin, Markov & de Rijke 2015, *Click Models for Web Search*, Morgan & Claypool,
§3.5 (DCM).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from oltr.clicks.cascade import check_grades, draw_uniforms
from oltr.random import RNGLike

__all__ = ["DependentClickModel"]


def _unit_interval(p: ArrayLike, name: str) -> tuple[float, ...]:
    arr = np.asarray(p, dtype=np.float64)
    if arr.ndim != 1 or arr.size < 1:
        raise ValueError(f"{name} must be a non-empty 1-D sequence, got shape {arr.shape}")
    bad = ~((arr >= 0.0) & (arr <= 1.0))
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"{name}[{i}] must be a probability in [0, 1], got {arr[i]}")
    return tuple(float(x) for x in arr)


@dataclass(frozen=True)
class DependentClickModel:
    """Dependent click model: grade attractiveness, position-dependent continuation after a click.

    Parameters
    ----------
    attractiveness
        ``r_g`` = P(click | examined, grade g), g = 0..n_grades-1.
    continuation
        ``λ_i`` = P(examine i+1 | click at i) for positions i = 0..L-1; lists
        may be at most L long.

    Examples
    --------
    >>> dcm = DependentClickModel(attractiveness=(0.0, 1.0), continuation=(0.5, 0.5, 0.5))
    >>> dcm.click_probabilities([1, 1, 1]).tolist()
    [1.0, 0.5, 0.25]
    """

    attractiveness: tuple[float, ...]
    continuation: tuple[float, ...]

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "attractiveness", _unit_interval(self.attractiveness, "attractiveness")
        )
        object.__setattr__(self, "continuation", _unit_interval(self.continuation, "continuation"))

    @property
    def n_grades(self) -> int:
        """Number of grades the model knows."""
        return len(self.attractiveness)

    def _lambda(self, n: int) -> NDArray[np.float64]:
        if n > len(self.continuation):
            raise ValueError(
                f"lists of {n} results need {n} continuation probabilities, "
                f"the model has {len(self.continuation)}"
            )
        return np.asarray(self.continuation[:n])

    def clicks_from_uniforms(
        self, grades: NDArray[np.intp], u_click: NDArray[np.float64], u_stop: NDArray[np.float64]
    ) -> NDArray[np.bool_]:
        """Clicks for checked ``grades`` (..., n) from the click and leave coins' uniforms."""
        would_click = u_click < np.asarray(self.attractiveness)[grades]
        leaves = would_click & (u_stop >= self._lambda(grades.shape[-1]))
        left_above = np.cumsum(leaves, axis=-1) - leaves > 0
        return np.asarray(would_click & ~left_above)

    def simulate(self, relevance: ArrayLike, rng: RNGLike) -> NDArray[np.bool_]:
        """One click vector per list of grades (..., n), top first."""
        g = check_grades(relevance, self.n_grades)
        u = draw_uniforms(rng, (2, *g.shape))
        return self.clicks_from_uniforms(g, u[0], u[1])

    def click_probabilities(self, relevance: ArrayLike) -> NDArray[np.float64]:
        """Exact P(click at i) = r_i Π_{j<i} (1 − r_j (1 − λ_j))."""
        g = check_grades(relevance, self.n_grades)
        r = np.asarray(self.attractiveness)[g]
        go_on = 1.0 - r * (1.0 - self._lambda(g.shape[-1]))
        examined = np.concatenate(
            [np.ones_like(go_on[..., :1]), np.cumprod(go_on[..., :-1], axis=-1)], axis=-1
        )
        return np.asarray(r * examined, dtype=np.float64)
