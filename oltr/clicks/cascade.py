"""Cascade click models with both stop rules of the online-learning-to-rank literature.

The simulated user scans the shown list top-down. At an examined position of
grade ``g`` they click with probability ``c_g = click_prob[g]``; then a stop
coin with probability ``s_g = stop_prob[g]`` decides whether they leave. Two
rules for *when* the stop coin is thrown are in use, and they give different
click laws under the same parameter table:

``"after-click"``
    The coin is thrown only after a click (the cascade user model of Hofmann,
    Whiteson & de Rijke 2011/2013 as implemented in Lerot, and of Schuth et al.
    2016). Position ``i`` (0-based) is examined with probability
    ``Π_{j<i} (1 − c_j s_j)``, so

        P(click at i) = c_i · Π_{j<i} (1 − c_j s_j).

``"every-position"``
    The coin is thrown after every examined position, clicked or not (the click
    simulation of Oosterhuis & de Rijke 2018's reference implementation,
    ``utils/clicks.py`` of HarrieO/OnlineLearningToRank: the user stops at the
    first position whose stop coin comes up, and the clicks are those up to and
    including it). Then

        P(click at i) = c_i · Π_{j<i} (1 − s_j).

Both are one vectorised expression over the batch: all click coins and all stop
coins are drawn at once and the first stop cuts the clicks, the same law as the
sequential process because a position's coins are read only when it is examined.

The standard instantiations (perfect, navigational, informational) for 2, 3 and 5
grades are :data:`oltr.clicks.click_models.CASCADE_PARAMETERS`; their sources:

* 5 grades (MSLR, Yahoo!): Oosterhuis & de Rijke 2018, CIKM, Table 1 — P(click |
  0..4): perfect 0/0.2/0.4/0.8/1, navigational 0.05/0.3/0.5/0.7/0.95,
  informational 0.4/0.6/0.7/0.8/0.9; P(stop | 0..4): perfect 0 throughout,
  navigational 0.2/0.3/0.5/0.7/0.9, informational 0.1/0.2/0.3/0.4/0.5.
* 3 grades (LETOR 3.0/4.0: MQ2007/2008, OHSUMED): Hofmann et al. 2013, as reused
  for 3-grade sets by Oosterhuis & de Rijke 2018 (the reference implementation's
  ``short_models``) — P(click | 0/1/2): perfect 0/0.5/1, navigational
  0.05/0.5/0.95, informational 0.4/0.7/0.9; P(stop | 0/1/2): perfect 0/0/0,
  navigational 0.2/0.5/0.9, informational 0.1/0.3/0.5.
* 2 grades: Hofmann, Whiteson & de Rijke 2011, ECIR, §5.

References
----------
Craswell, Zoeter, Taylor & Ramsey 2008, "An experimental comparison of click
position-bias models", WSDM (the cascade model).
Hofmann, Whiteson & de Rijke 2013, "Fidelity, soundness, and efficiency of
interleaved comparison methods", ACM TOIS 31(4), §6 (click model instantiations).
Schuth, Oosterhuis, Whiteson & de Rijke 2016, "Multileave gradient descent for fast
online learning to rank", WSDM, §5.
Oosterhuis & de Rijke 2018, "Differentiable unbiased online learning to rank",
CIKM, §6.1 and Table 1.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from oltr.clicks.click_models import CASCADE_PARAMETERS
from oltr.random import RNGLike, as_rng

__all__ = ["STOP_RULES", "StopRuleCascade", "check_grades", "click_model", "draw_uniforms"]

#: The two stop rules, by name.
STOP_RULES = ("after-click", "every-position")


def check_grades(relevance: ArrayLike, n_grades: int) -> NDArray[np.intp]:
    """Integer grades in ``0..n_grades-1`` of shape (..., n_shown), or a clear error."""
    r = np.asarray(relevance)
    if r.ndim < 1 or r.shape[-1] < 1:
        raise ValueError(f"relevance must have shape (..., n_shown), n_shown >= 1; got {r.shape}")
    if r.dtype.kind not in "iub" and not (r.dtype.kind == "f" and (r == np.round(r)).all()):
        raise TypeError(f"relevance must hold integer grades, got dtype {r.dtype}")
    g = r.astype(np.intp)
    bad = (g < 0) | (g >= n_grades)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(
            f"relevance grades must lie in [0, {n_grades - 1}] for this click model, "
            f"got {g[where]} at index {where}"
        )
    return g


def draw_uniforms(rng: RNGLike, shape: tuple[int, ...]) -> NDArray[np.float64]:
    """Uniforms on [0, 1) of ``shape`` from one seed or Generator."""
    return as_rng(rng).random(shape)


def _probs(p: ArrayLike, name: str) -> tuple[float, ...]:
    arr = np.asarray(p, dtype=np.float64)
    if arr.ndim != 1 or arr.size < 1:
        raise ValueError(
            f"{name} must be a non-empty 1-D sequence (one per grade), got {arr.shape}"
        )
    bad = ~((arr >= 0.0) & (arr <= 1.0))
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"{name}[{i}] must be a probability in [0, 1], got {arr[i]}")
    return tuple(float(x) for x in arr)


@dataclass(frozen=True)
class StopRuleCascade:
    """Cascade click model with grade-dependent click and stop probabilities and a stop rule.

    Parameters
    ----------
    click_prob
        P(click | examined, grade g), g = 0..n_grades-1.
    stop_prob
        P(stop | grade g) — thrown after a click (``"after-click"``) or after
        every examined position (``"every-position"``).
    stop_rule
        ``"after-click"`` or ``"every-position"`` (see the module docstring).
    name
        A label; not used in computation.

    Examples
    --------
    >>> m = click_model("navigational", n_grades=3, stop_rule="every-position")
    >>> m.click_probabilities([2, 0]).round(4).tolist()   # 0.05 · (1 − 0.9)
    [0.95, 0.005]
    >>> click_model("navigational", n_grades=3).click_probabilities([2, 0]).round(4).tolist()
    [0.95, 0.0073]
    """

    click_prob: tuple[float, ...]
    stop_prob: tuple[float, ...]
    stop_rule: str = "after-click"
    name: str = "cascade"
    #: ``[click_prob, stop_prob]`` as one read-only (2, n_grades) array.
    _tables: NDArray[np.float64] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        click, stop = _probs(self.click_prob, "click_prob"), _probs(self.stop_prob, "stop_prob")
        if len(click) != len(stop):
            raise ValueError(
                "click_prob and stop_prob need one entry per grade, got "
                f"{len(click)} and {len(stop)}"
            )
        if self.stop_rule not in STOP_RULES:
            raise ValueError(f"stop_rule must be one of {STOP_RULES}, got {self.stop_rule!r}")
        object.__setattr__(self, "click_prob", click)
        object.__setattr__(self, "stop_prob", stop)
        # The tables as arrays, once: numpy's path indexes them, the compiled one reads them.
        tables = np.array([click, stop], dtype=np.float64)
        tables.flags.writeable = False
        object.__setattr__(self, "_tables", tables)

    @property
    def n_grades(self) -> int:
        """Number of grades the model knows."""
        return len(self.click_prob)

    def clicks_from_uniforms(
        self, grades: NDArray[np.intp], u_click: NDArray[np.float64], u_stop: NDArray[np.float64]
    ) -> NDArray[np.bool_]:
        """Clicks for checked ``grades`` (..., n) given the click and stop coins' uniforms."""
        would_click = u_click < self._tables[0][grades]
        would_stop = u_stop < self._tables[1][grades]
        if self.stop_rule == "after-click":
            would_stop &= would_click
        # Examined iff no stop strictly above: an exclusive running "any" of would_stop.
        stopped_above = np.cumsum(would_stop, axis=-1) - would_stop > 0
        return np.asarray(would_click & ~stopped_above)

    def clicks_on_orders(
        self, relevance: NDArray[Any], orders: NDArray[np.intp], uniforms: NDArray[np.float64]
    ) -> NDArray[np.bool_] | None:
        """Clicks on the first ``n`` items of each order (B, m), n = ``uniforms.shape[-1]``,
        with each run's coins ``uniforms`` (B, 2, n): :meth:`clicks_from_uniforms` of the
        shown grades, in one compiled pass (:mod:`oltr.clicks.cascade_kernel`).

        For int64 grades and C-ordered arrays; None for anything else, or for an item or
        grade out of range, which the numpy path then reports.
        """
        from oltr.clicks.cascade_kernel import clicks_on_orders  # numba, loaded on first use

        return clicks_on_orders(
            relevance, orders, uniforms, self._tables, self.stop_rule == "after-click"
        )

    def simulate(self, relevance: ArrayLike, rng: RNGLike) -> NDArray[np.bool_]:
        """One click vector per list: ``relevance`` (..., n) grades by position, top first."""
        g = check_grades(relevance, self.n_grades)
        u = draw_uniforms(rng, (2, *g.shape))
        return self.clicks_from_uniforms(g, u[0], u[1])

    def click_probabilities(self, relevance: ArrayLike) -> NDArray[np.float64]:
        """Exact P(click at i) for every position (module docstring formulas)."""
        g = check_grades(relevance, self.n_grades)
        c = np.asarray(self.click_prob)[g]
        s = np.asarray(self.stop_prob)[g]
        go_on = 1.0 - (c * s if self.stop_rule == "after-click" else s)
        examined = np.concatenate(
            [np.ones_like(go_on[..., :1]), np.cumprod(go_on[..., :-1], axis=-1)], axis=-1
        )
        return np.asarray(c * examined, dtype=np.float64)


def click_model(name: str, *, n_grades: int, stop_rule: str = "after-click") -> StopRuleCascade:
    """The standard instantiation ``name`` for ``n_grades`` grades, with ``stop_rule``.

    Parameters
    ----------
    name
        ``"perfect"``, ``"navigational"`` or ``"informational"``.
    n_grades
        2, 3 or 5.
    stop_rule
        ``"after-click"`` or ``"every-position"``.
    """
    key = (name, n_grades)
    if key not in CASCADE_PARAMETERS:
        names = sorted({n for n, _ in CASCADE_PARAMETERS})
        raise ValueError(
            f"unknown click model {name!r} for n_grades={n_grades!r}; names are {names}, "
            "each for n_grades 2, 3 or 5"
        )
    click, stop = CASCADE_PARAMETERS[key]
    return StopRuleCascade(click, stop, stop_rule=stop_rule, name=name)
