"""Exponential weights over all ``m!`` rankings, exact: the reference for small item sets.

The naïve approach Ailon (2014 §4) sets aside for large ``m``: treat every
ranking as an expert and play Hedge (Freund & Schapire 1995; Littlestone &
Warmuth 1994). With ``L_{t−1}(π) = Σ_{s<t} ℓ_z(π, s_s)`` the cumulative loss of
ranking ``π``, round ``t`` draws

    P_t(π) = exp(−β L_{t−1}(π)) / Σ_ρ exp(−β L_{t−1}(ρ)),

exactly, by enumerating the ``m!`` rankings (``m <= 8``: 40 320 rankings). Any
loss that differs from ``ℓ_z`` by a function of ``s_t`` alone (such as ``ℓℓ``,
eq. 2.2, against ``ℓ``, eq. 2.1) gives the same distribution. With losses of
range ``R`` per round (``max_π − min_π`` of ``ℓ_z(π, s)``) and the default
``β = √(8 ln(m!) / T) / R``, the expected regret is at most ``R √(T ln(m!) / 2)``
(Cesa-Bianchi & Lugosi 2006, Theorem 2.2), ``O(M √(T n log n))`` in Ailon's terms.

Cost per round and run: O(m · m!) to update the losses and to sample.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any, ClassVar

import numpy as np

from oltr.feedback import Feedback, FeedbackRequirement
from oltr.learners.base import Learner
from oltr.learners.onlinerank import SIGNALS, _signal, signal_values
from oltr.metrics.aggregation import POSITION_WEIGHTS, position_weights
from oltr.permutations import all_orders, ranks_from_order
from oltr.registry import register_learner
from oltr.types import Context, FloatArray, Orders, RunRNGLike
from oltr.validation import check_choice, check_scalar

__all__ = ["MAX_ITEMS", "ExponentialWeights", "hedge_rate", "loss_range"]

#: Largest item set enumerated (8! = 40 320 rankings).
MAX_ITEMS = 8


def loss_range(
    n_items: int, *, z: str = "linear", signal: str = "choice", n_chosen: int = 1
) -> float:
    """Largest ``max_π ℓ_z(π, s) − min_π ℓ_z(π, s)`` of one round.

    For sorted weights and signals the worst ranking pairs them in the same
    order, the best in opposite orders (rearrangement inequality): ``k(n−k)``
    for a linear ``z`` and a ``k``-choice.

    >>> loss_range(5, n_chosen=2)
    6.0
    """
    zw = position_weights(z, n_items)
    s = signal_values(n_items, signal=signal, n_chosen=n_chosen)
    return float(zw @ s - zw @ s[::-1])


def hedge_rate(n_items: int, horizon: int, spread: float) -> tuple[float, float]:
    """Hedge's rate ``β = √(8 ln(m!) / T) / R`` and its bound ``R √(T ln(m!) / 2)``.

    >>> beta, bound = hedge_rate(3, 100, 2.0)
    >>> round(beta, 6) == round(math.sqrt(8 * math.log(6) / 100) / 2, 6)
    True
    """
    log_n = math.lgamma(n_items + 1)
    return math.sqrt(8.0 * log_n / horizon) / spread, spread * math.sqrt(horizon * log_n / 2.0)


@register_learner("expweights")
class ExponentialWeights(Learner[Feedback]):
    """Exact exponential weights (Hedge) over all ``m!`` rankings, for ``m <= 8``.

    Draws ``π_t`` with probability ``∝ exp(−β L_{t−1}(π))``, ``L`` the
    cumulative position-weighted loss ``Σ_s Σ_u z(π(u)) s_s(u)`` (see the module
    docstring). For more than :data:`MAX_ITEMS` items it raises ValueError at
    the first round: use :class:`~oltr.learners.onlinerank.OnlineRank`.

    Parameters
    ----------
    beta
        Learning rate ``β`` > 0; None: ``√(8 ln(m!) / T) / R``, or without a
        horizon the anytime ``β_t = √(8 ln(m!) / t) / R`` (Cesa-Bianchi & Lugosi
        2006, Theorem 2.3: regret at most ``R(√(2 T ln(m!)) + √(ln(m!)/8))``).
    z
        Position weight of the loss, a key of
        :data:`oltr.envs.choice.POSITION_WEIGHTS`.
    n_chosen
        Chosen-set size ``k`` >= 1, for the loss range ``R``.
    signal
        ``"choice"`` (the chosen set) or ``"full"`` (revealed grades, §5).
    horizon
        The number of rounds ``T`` >= 1 (filled by the runner); None: anytime rate.
    n_runs, rng
        See :class:`~oltr.learners.base.Learner`.

    References
    ----------
    Ailon 2014 §4 (multiplicative weights over the ``n!`` rankings).
    Freund & Schapire 1995; Cesa-Bianchi & Lugosi 2006, Theorem 2.2.

    Examples
    --------
    >>> from oltr.feedback import ChoiceFeedback
    >>> lrn = ExponentialWeights(beta=1.0, rng=0)
    >>> ctx = Context(t=1, n_items=2)
    >>> orders = lrn.rank(ctx)
    >>> lrn.update(ctx, orders, ChoiceFeedback(orders, np.array([[False, True]])))
    >>> np.round(lrn.probabilities_, 4).tolist()  # orders (0, 1), (1, 0): losses 1, 0
    [[0.2689, 0.7311]]
    """

    context_kind: ClassVar[str] = "items"

    #: The runner passes the run's horizon T (``horizon=``) to this learner.
    horizon_dependent: ClassVar[bool] = True

    def __init__(
        self,
        *,
        beta: float | None = None,
        z: str = "linear",
        n_chosen: int = 1,
        signal: str = "choice",
        horizon: int | None = None,
        n_runs: int = 1,
        rng: RunRNGLike = None,
    ) -> None:
        super().__init__(n_runs=n_runs, rng=rng)
        if beta is not None:
            check_scalar(beta, "beta", low=0, include_low=False)
        check_choice(z, "z", tuple(POSITION_WEIGHTS))
        check_choice(signal, "signal", SIGNALS)
        check_scalar(n_chosen, "n_chosen", low=1, integer=True)
        if horizon is not None:
            check_scalar(horizon, "horizon", low=1, integer=True)
        self.beta = beta
        self.z = z
        self.n_chosen = n_chosen
        self.signal = signal
        self.horizon = horizon

    @classmethod
    def _test_params(cls) -> Iterator[dict[str, Any]]:
        yield {"horizon": 50}
        yield {"z": "dcg", "n_chosen": 2, "horizon": 50}
        yield {"signal": "full", "beta": 0.1}

    @property
    def requires(self) -> FeedbackRequirement:  # type: ignore[override]
        """``choice`` (the chosen set) or ``full`` (revealed grades)."""
        return FeedbackRequirement("choice" if self.signal == "choice" else "full")

    def _setup(self, n_items: int) -> None:
        if n_items > MAX_ITEMS:
            raise ValueError(
                f"ExponentialWeights enumerates all m! rankings and needs "
                f"m <= {MAX_ITEMS}; got m = {n_items} ({math.factorial(n_items)} "
                "rankings). Use 'onlinerank' or 'ailon-fpl' for larger item sets"
            )
        self._orders = all_orders(n_items)
        # _cost_t[u, o] = z(position of u in order o), positions from 1; contiguous (m, m!)
        # so that the per-round update is one well-strided matrix product
        self._cost_t = np.ascontiguousarray(
            position_weights(self.z, n_items)[ranks_from_order(self._orders)].T
        )
        self._loss = np.zeros((self.n_runs, self._orders.shape[0]))
        self._anytime_spread: float | None = None
        if self.beta is not None:
            self._beta = float(self.beta)
            return
        spread = loss_range(
            n_items,
            z=self.z,
            signal=self.signal,
            n_chosen=min(int(self.n_chosen), n_items - 1 or 1),
        )
        spread = spread if spread > 0 else 1.0
        if self.horizon is None:  # anytime: β_t with t for T, set at every round
            self._anytime_spread = spread
            self._beta = hedge_rate(n_items, 1, spread)[0]
        else:
            self._beta = hedge_rate(n_items, int(self.horizon), spread)[0]

    def _state(self, context: Context) -> FloatArray:
        if getattr(self, "_loss", None) is None:
            self._setup(context.n_items)
        elif self._orders.shape[1] != context.n_items:
            raise ValueError(
                f"ExponentialWeights ranks a fixed set of {self._orders.shape[1]} "
                f"items; got a context with {context.n_items}"
            )
        return self._loss

    @property
    def probabilities_(self) -> FloatArray:
        """``P_t(π)`` per run, shape (B, m!), rankings in :func:`all_orders` order."""
        if getattr(self, "_loss", None) is None:
            raise AttributeError("probabilities_ exist after the first round")
        logits = -self._beta * (self._loss - self._loss.min(axis=1, keepdims=True))
        p = np.exp(logits)
        return np.asarray(p / p.sum(axis=1, keepdims=True))

    @property
    def orders_(self) -> Orders:
        """The enumerated rankings, shape (m!, m), in :func:`all_orders` order."""
        return self._orders

    def rank(self, context: Context) -> Orders:
        """One ranking per run drawn from ``P_t`` by inverting its cumulative distribution."""
        self._state(context)
        if self._anytime_spread is not None:
            self._beta = hedge_rate(self._orders.shape[1], context.t, self._anytime_spread)[0]
        cdf = np.cumsum(self.probabilities_, axis=1)
        u = self.rngs.random() * cdf[:, -1]
        idx = np.minimum((cdf < u[:, None]).sum(axis=1), cdf.shape[1] - 1)
        orders: Orders = self._orders[idx].copy()
        return orders

    def update(self, context: Context, orders: Orders, feedback: Feedback) -> None:
        """``L_t(π) = L_{t−1}(π) + Σ_u z(π(u)) s_t(u)`` for every ranking ``π``."""
        loss = self._state(context)
        signal = _signal(feedback)
        # One scaled row of the cost table per item with a nonzero signal in some run: a
        # chosen set touches k of the m rows, and this avoids a BLAS call per round.
        for u in np.flatnonzero(signal.any(axis=0)):
            loss += signal[:, u, None] * self._cost_t[u]
