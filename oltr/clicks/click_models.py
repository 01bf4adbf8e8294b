"""Simulated users: cascade and position-based click models.

A click model turns the relevance grades of a shown list into a random click
vector. Two families are provided, both as frozen dataclasses with a batched,
seeded :meth:`simulate`:

* :class:`CascadeClickModel` — the dependent-click cascade model used to
  simulate users in online learning to rank (Hofmann et al. 2011, 2013;
  Oosterhuis & de Rijke 2018). The user scans the list top-down; an examined
  item of grade ``g`` is clicked with probability ``click_prob[g]``; after a
  click the user stops with probability ``stop_prob[g]``, otherwise goes on.
  Position ``i`` (0-based) is examined iff the user did not stop before it, so

      P(click at i) = c_i · Π_{j<i} (1 − c_j s_j),   c_j = click_prob[g_j], s_j = stop_prob[g_j].

* :class:`PositionBasedClickModel` — the position-based model (PBM; Craswell
  et al. 2008, Joachims et al. 2017): clicks at different positions are
  independent and P(click at i) = θ_i · α[g_i], with examination
  θ_i = (1 / (i+1))^η and attractiveness α per grade.

The standard instantiations (perfect, navigational, informational) for 2, 3 and
5 relevance grades are in :data:`CASCADE_PARAMETERS`; :func:`cascade_model`
builds them by name.

Randomness comes only from the ``rng`` passed in: either one seed/Generator for
the whole batch, or a sequence of Generators, one per row of a 2-D batch. With a
sequence, row ``b`` is drawn from ``rng[b]`` exactly as a 1-D call with ``rng[b]``
would draw it, so a run's clicks do not depend on which runs share its batch.

References
----------
Craswell, Zoeter, Taylor & Ramsey 2008, "An experimental comparison of click
position-bias models", WSDM (cascade and position models).
Hofmann, Whiteson & de Rijke 2011, "Balancing exploration and exploitation in
learning to rank online", ECIR, experimental setup (binary-relevance perfect /
navigational / informational cascade models; extended in Information Retrieval
16(1), 2013).
Hofmann, Whiteson & de Rijke 2013, "Fidelity, soundness, and efficiency of
interleaved comparison methods", ACM TOIS 31(4), experimental setup (3-grade
instantiations).
Oosterhuis & de Rijke 2018, "Differentiable unbiased online learning to rank",
CIKM, experimental setup (5-grade instantiations).
Joachims, Swaminathan & Schnabel 2017, "Unbiased learning-to-rank with biased
feedback", WSDM, experiments (examination (1/rank)^η).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np
from numpy.typing import ArrayLike, NDArray

from oltr.random import RNGLike, as_rng

__all__ = [
    "CASCADE_PARAMETERS",
    "CascadeClickModel",
    "ClickModel",
    "RNGs",
    "cascade_model",
    "normalize_rngs",
    "uniform_draws",
]

#: One seed/Generator for the whole batch, or one Generator per row of a 2-D batch.
RNGs = RNGLike | Sequence[np.random.Generator]

_Probs = tuple[float, ...]

#: (name, n_grades) -> (P(click | examined, grade), P(stop | click, grade)), grades 0..n_grades-1.
#:
#: * 5 grades (MSLR-WEB10K/30K, Yahoo!): Oosterhuis & de Rijke 2018 (click-model table).
#: * 3 grades (LETOR 3.0/4.0, e.g. MQ2007/MQ2008, OHSUMED): Hofmann et al. 2013 (TOIS),
#:   as reused for 3-grade sets by Oosterhuis & de Rijke 2018.
#: * 2 grades (binary sets, e.g. TD2003/NP2003): Hofmann et al. 2011 (ECIR), §5.
CASCADE_PARAMETERS: MappingProxyType[tuple[str, int], tuple[_Probs, _Probs]] = MappingProxyType(
    {
        ("perfect", 5): ((0.0, 0.2, 0.4, 0.8, 1.0), (0.0, 0.0, 0.0, 0.0, 0.0)),
        ("navigational", 5): ((0.05, 0.3, 0.5, 0.7, 0.95), (0.2, 0.3, 0.5, 0.7, 0.9)),
        ("informational", 5): ((0.4, 0.6, 0.7, 0.8, 0.9), (0.1, 0.2, 0.3, 0.4, 0.5)),
        ("perfect", 3): ((0.0, 0.5, 1.0), (0.0, 0.0, 0.0)),
        ("navigational", 3): ((0.05, 0.5, 0.95), (0.2, 0.5, 0.9)),
        ("informational", 3): ((0.4, 0.7, 0.9), (0.1, 0.3, 0.5)),
        ("perfect", 2): ((0.0, 1.0), (0.0, 0.0)),
        ("navigational", 2): ((0.05, 0.95), (0.2, 0.9)),
        ("informational", 2): ((0.4, 0.9), (0.1, 0.5)),
    }
)


# ---------------------------------------------------------------------------
# seeded draws, one stream per row when asked


def normalize_rngs(
    rng: RNGs, batch_shape: tuple[int, ...], name: str = "rng"
) -> np.random.Generator | list[np.random.Generator]:
    """One Generator for the batch, or a list of per-row Generators.

    Any sequence of Generators counts as per-row streams (a list, a tuple, or
    :class:`oltr.types.RunGenerators`). Normalise once per public call: a seed
    normalised twice would restart its stream.
    """
    if isinstance(rng, Sequence) and not isinstance(rng, str | bytes):
        gens = list(rng)
        if len(batch_shape) != 1 or len(gens) != batch_shape[0]:
            raise ValueError(
                f"{name}: a sequence of Generators needs a 2-D batch with one row "
                f"per Generator; got {len(gens)} Generators for batch shape "
                f"{batch_shape}"
            )
        for i, g in enumerate(gens):
            if not isinstance(g, np.random.Generator):
                raise TypeError(f"{name}[{i}] must be a numpy Generator, got {type(g).__name__}")
        return gens
    try:
        return as_rng(rng)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"{name} must be a seed, a numpy Generator or a sequence of Generators, "
            f"got {type(rng).__name__}"
        ) from exc


def uniform_draws(
    rngs: np.random.Generator | list[np.random.Generator],
    batch_shape: tuple[int, ...],
    tail: tuple[int, ...],
) -> NDArray[np.float64]:
    """Uniforms on [0, 1) of shape ``batch_shape + tail``; row ``b`` from ``rngs[b]`` if a list."""
    if isinstance(rngs, list):
        if not rngs:
            return np.empty(batch_shape + tail)
        return np.stack([g.random(tail) for g in rngs])
    return rngs.random(batch_shape + tail)


# ---------------------------------------------------------------------------
# validation


def _check_probs(p: Sequence[float], name: str) -> _Probs:
    arr = np.asarray(p, dtype=np.float64)
    if arr.ndim != 1 or arr.size < 1:
        raise ValueError(
            f"{name} must be a non-empty 1-D sequence (one entry per grade), got shape {arr.shape}"
        )
    bad = ~((arr >= 0.0) & (arr <= 1.0))  # also catches NaN
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"{name}[{i}] must be a probability in [0, 1], got {arr[i]}")
    return tuple(float(x) for x in arr)


def _check_grades(relevance: ArrayLike, n_grades: int, name: str = "relevance") -> NDArray[np.intp]:
    r = np.asarray(relevance)
    if r.dtype.kind not in "biuf":
        raise TypeError(f"{name} must hold integer grades, got dtype {r.dtype}")
    if r.ndim < 1 or r.shape[-1] < 1:
        raise ValueError(
            f"{name} must have shape (..., n_shown) with n_shown >= 1, got shape {r.shape}"
        )
    if r.dtype.kind == "f":
        bad = ~np.isfinite(r) | (r != np.round(r))
        if bad.any():
            where = tuple(int(i) for i in np.argwhere(bad)[0])
            raise ValueError(f"{name} must hold integer grades, got {r[where]} at index {where}")
    out = r.astype(np.intp)
    bad = (out < 0) | (out >= n_grades)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(
            f"{name} grades must lie in [0, {n_grades - 1}] for this click model, "
            f"got {out[where]} at index {where}"
        )
    return out


def _check_relevance_mask(
    relevance: ArrayLike, mask: ArrayLike | None, n_grades: int
) -> tuple[NDArray[np.intp], NDArray[np.bool_] | None]:
    """Grades (padded slots set to 0 so they pass the range check) and the mask."""
    if mask is None:
        return _check_grades(relevance, n_grades), None
    r = np.asarray(relevance)
    mk = np.asarray(mask)
    if mk.dtype != np.bool_:
        raise TypeError(f"mask must be a bool array, got dtype {mk.dtype}")
    try:
        mk = np.broadcast_to(mk, r.shape)
    except ValueError as exc:
        raise ValueError(
            f"mask of shape {mk.shape} does not broadcast to relevance shape {r.shape}"
        ) from exc
    # Padded slots may hold anything (NaN, -1): give them grade 0 before the range check.
    return _check_grades(np.where(mk, r, 0), n_grades), mk


# ---------------------------------------------------------------------------
# models


class ClickModel:
    """Shared behaviour of the click models: validation and batched simulation.

    Subclasses provide :meth:`_click_given` (clicks from uniforms) and
    :meth:`click_probabilities` (the exact marginals).
    """

    n_grades: int

    def simulate(
        self, relevance: ArrayLike, rng: RNGs, *, mask: ArrayLike | None = None
    ) -> NDArray[np.bool_]:
        """Draw one click vector per list.

        Parameters
        ----------
        relevance
            Integer grades ``0..n_grades-1`` of the shown items by position, shape
            (..., n_shown); ``relevance[..., 0]`` is the top item.
        rng
            Seed or Generator for the whole batch, or a sequence of Generators,
            one per row of a 2-D ``relevance``.
        mask
            Optional bool array broadcastable to ``relevance``; False marks padding,
            which is never clicked and never stops the user.

        Returns
        -------
        clicks
            Bool array of the shape of ``relevance``.
        """
        grades, mask_ = _check_relevance_mask(relevance, mask, self.n_grades)
        batch, m = grades.shape[:-1], grades.shape[-1]
        rngs = normalize_rngs(rng, batch)
        u = uniform_draws(rngs, batch, (2, m))
        return self._click_given(grades, u[..., 0, :], u[..., 1, :], mask_)

    def _click_given(
        self,
        grades: NDArray[np.intp],
        u_click: NDArray[np.float64],
        u_stop: NDArray[np.float64],
        mask: NDArray[np.bool_] | None,
    ) -> NDArray[np.bool_]:
        raise NotImplementedError


@dataclass(frozen=True)
class CascadeClickModel(ClickModel):
    """Cascade click model with grade-dependent click and stop probabilities.

    The user examines positions ``0, 1, …`` in turn. At an examined position of
    grade ``g`` they click with probability ``click_prob[g]``; after a click they
    stop with probability ``stop_prob[g]``. Hence, with ``c_j = click_prob[g_j]``
    and ``s_j = stop_prob[g_j]``,

        P(click at i) = c_i · Π_{j<i} (1 − c_j s_j).

    Simulation is vectorised: all "would click if examined" and "would stop if
    clicked" coins are drawn at once, the first position where both come up
    fixes the stop, and the clicks are the would-clicks up to it — the same law
    as the sequential process, since the coins at a position are only read when
    it is examined.

    Parameters
    ----------
    click_prob
        P(click | examined, grade g) for g = 0..n_grades-1, each in [0, 1].
    stop_prob
        P(stop | clicked, grade g), same length, each in [0, 1].
    name
        A label (e.g. ``"navigational"``); not used in computation.

    References
    ----------
    Craswell et al. 2008 (WSDM), cascade model; Hofmann et al. 2011 (ECIR) and
    2013 (TOIS); Oosterhuis & de Rijke 2018 (CIKM), click-model table.

    Examples
    --------
    >>> model = cascade_model("perfect", n_grades=3)
    >>> model.simulate([2, 0, 2], rng=0)    # grade 2 is always clicked, grade 0 never
    array([ True, False,  True])
    >>> model.click_probabilities([2, 0, 2, 1])
    array([1. , 0. , 1. , 0.5])
    """

    click_prob: _Probs
    stop_prob: _Probs
    name: str = "cascade"
    #: ``[click_prob, stop_prob]`` as one read-only (2, n_grades) array (numpy's path indexes
    #: it; :func:`oltr.clicks.team_draft_duels.team_draft_cascade_duels` reads it).
    _tables: NDArray[np.float64] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        click = _check_probs(self.click_prob, "click_prob")
        stop = _check_probs(self.stop_prob, "stop_prob")
        if len(click) != len(stop):
            raise ValueError(
                f"click_prob and stop_prob must have one entry per grade, got "
                f"lengths {len(click)} and {len(stop)}"
            )
        object.__setattr__(self, "click_prob", click)
        object.__setattr__(self, "stop_prob", stop)
        tables = np.array([click, stop], dtype=np.float64)
        tables.flags.writeable = False
        object.__setattr__(self, "_tables", tables)

    @property
    def n_grades(self) -> int:  # type: ignore[override]
        """Number of relevance grades the model knows (grades 0..n_grades-1)."""
        return len(self.click_prob)

    def _click_given(
        self,
        grades: NDArray[np.intp],
        u_click: NDArray[np.float64],
        u_stop: NDArray[np.float64],
        mask: NDArray[np.bool_] | None,
    ) -> NDArray[np.bool_]:
        would_click = u_click < self._tables[0][grades]
        if mask is not None:
            would_click &= mask
        would_stop = would_click & (u_stop < self._tables[1][grades])
        # Examined iff no stop strictly before: an exclusive running "any" of would_stop.
        stopped_before = np.cumsum(would_stop, axis=-1) - would_stop > 0
        return np.asarray(would_click & ~stopped_before, dtype=bool)

    def click_probabilities(
        self, relevance: ArrayLike, *, mask: ArrayLike | None = None
    ) -> NDArray[np.float64]:
        """Exact marginal click probability at every position.

        ``c_i · Π_{j<i} (1 − c_j s_j)`` (padded positions: 0 and no effect).

        Parameters
        ----------
        relevance
            Integer grades of the shown list(s), shape (..., n_shown).
        mask
            Optional bool array, False marks padding.

        Returns
        -------
        probabilities
            Float array of the shape of ``relevance``.
        """
        grades, mask_ = _check_relevance_mask(relevance, mask, self.n_grades)
        c = np.asarray(self.click_prob)[grades]
        if mask_ is not None:
            c = np.where(mask_, c, 0.0)
        go_on = 1.0 - c * np.asarray(self.stop_prob)[grades]
        examined = np.concatenate(
            [np.ones_like(go_on[..., :1]), np.cumprod(go_on[..., :-1], axis=-1)], axis=-1
        )
        return np.asarray(c * examined, dtype=np.float64)


# ---------------------------------------------------------------------------
# named instantiations


def _check_name(name: str, n_grades: int) -> tuple[_Probs, _Probs]:
    key = (name, n_grades)
    if key not in CASCADE_PARAMETERS:
        names = sorted({n for n, _ in CASCADE_PARAMETERS})
        grades = sorted({g for _, g in CASCADE_PARAMETERS})
        raise ValueError(
            f"unknown click model {name!r} with n_grades={n_grades!r}; valid names "
            f"are {names}, each for n_grades in {grades}"
        )
    return CASCADE_PARAMETERS[key]


def cascade_model(name: str, *, n_grades: int = 5) -> CascadeClickModel:
    """Build the standard cascade instantiation ``name`` for ``n_grades`` grades.

    Parameters
    ----------
    name
        ``"perfect"``, ``"navigational"`` or ``"informational"``.
    n_grades
        2, 3 or 5 (grades 0..n_grades-1); see :data:`CASCADE_PARAMETERS` for the
        values and their sources.

    Returns
    -------
    model
        A :class:`CascadeClickModel`.

    Examples
    --------
    >>> cascade_model("navigational").click_prob
    (0.05, 0.3, 0.5, 0.7, 0.95)
    """
    click, stop = _check_name(name, n_grades)
    return CascadeClickModel(click, stop, name=name)
