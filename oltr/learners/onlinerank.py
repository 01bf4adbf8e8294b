"""OnlineRank with noisy sorting, and Follow the Perturbed Leader (Ailon 2014).

Both learners keep, per run, the histogram ``W_t(u) = Σ_{s≤t} s_s(u)`` of what
nature revealed (the chosen set's indicator, or the grades ``r_s = m − σ_s`` of
a ranking in rank aggregation) and rank by it with noise:

* :class:`OnlineRank` — Algorithm 1: ``π_t = SortProc(V, w_{t−1})`` with
  ``w_t = η W_t`` and ``SortProc`` noisy QuickSort (Algorithm 2) or
  Plackett–Luce (Algorithm 3); both put ``u`` before ``v`` with probability
  ``e^{w(u)} / (e^{w(u)} + e^{w(v)})`` (Lemma 6.1), so every pair of items runs
  its own two-action multiplicative-weights game (§6). Default rate, Theorem 3.1:
  ``η = n √(log 2) / √(T M)``, capped at 1 (the algorithm's range ``η ∈ [0, 1]``),
  giving ``E[L_T] ≤ L_T(π*) + n √(T M log 2)`` for the pairwise loss ``ℓℓ``
  (eq. 2.2).
* :class:`AilonFPL` — Kalai & Vempala's FPL as Ailon §4.1 and §8
  describe it: rank by decreasing ``W_{t−1}(u) + ε_u``, ``ε_u ~ U[0, 1/η]``
  i.i.d. Sorting by ``W`` is the best response to every nondecreasing position
  weight ``z`` (rearrangement inequality), so the same ranker serves every loss
  ``ℓ_z`` (§8); ``z`` only sets the default rate
  ``η = √(D / (R A T))`` (§4.1), with ``D`` the ℓ1 diameter of the embedded
  rankings ``{z∘π}``, ``R`` the largest loss of one round and ``A`` the largest
  ``‖s_t‖₁``: expected regret at most ``2 √(D R A T)``.

``M`` (eq. 2.3) is ``max_t Σ_{u,v} (s_t(v) − s_t(u))²``. By default it is the
paper's value for the setting: ``n k`` in the ``k``-choice case (Corollary 3.2;
``n`` for a single choice) and ``n²(n² − 1)/12`` for rank aggregation, the exact
eq. (2.3) when ``s_t`` is a ranking (§5, Corollary 5.1: ``η = Θ(1/(n√T))``).

References
----------
Ailon 2014, Online Ranking: Discrete Choice, Spearman Correlation and Other
Feedback: Algorithms 1–3, Lemma 6.1, Theorem 3.1, Corollary 3.2, §4.1, §5, §8.
Kalai & Vempala 2005, Efficient algorithms for online decision problems.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from oltr.feedback import ChoiceFeedback, Feedback, FeedbackRequirement, FullFeedback
from oltr.kernels import njit
from oltr.learners.base import Learner
from oltr.learners.ftpl import _Perturbations
from oltr.metrics.aggregation import POSITION_WEIGHTS, position_weights
from oltr.permutations import noisy_quicksort_runs
from oltr.permutations.counting import orders_by_counting
from oltr.registry import register_learner
from oltr.types import Context, FloatArray, Orders, RunRNGLike
from oltr.validation import check_choice, check_scalar

__all__ = [
    "SIGNALS",
    "AilonFPL",
    "OnlineRank",
    "default_max_loss",
    "fpl_rate",
    "onlinerank_bound",
    "onlinerank_rate",
    "signal_values",
]

SIGNALS = ("choice", "full")


def default_max_loss(n_items: int, *, signal: str = "choice", n_chosen: int = 1) -> float:
    """Ailon's ``M`` (eq. 2.3) for a setting: ``n k`` for choice, ``n²(n²−1)/12`` for rankings.

    >>> default_max_loss(5), default_max_loss(5, n_chosen=2), default_max_loss(3, signal="full")
    (5.0, 10.0, 6.0)
    """
    n = float(n_items)
    if signal == "choice":
        return n * n_chosen  # Corollary 3.2 (M = n for a single choice)
    return n * n * (n * n - 1.0) / 12.0  # Σ_{u<v} (σ(v) − σ(u))² for a permutation σ


def onlinerank_rate(n_items: int, horizon: int, max_loss: float) -> float:
    """Theorem 3.1's learning rate ``η = min(1, n √(log 2 / (T M)))``.

    >>> round(onlinerank_rate(4, 100, 4.0), 6) == round(0.2 * math.sqrt(math.log(2)), 6)
    True
    """
    return min(1.0, n_items * math.sqrt(math.log(2.0) / (horizon * max_loss)))


def onlinerank_bound(n_items: int, horizon: int, max_loss: float) -> float:
    """Theorem 3.1's regret bound ``n √(T M log 2)`` (for the pairwise loss ℓℓ)."""
    return n_items * math.sqrt(horizon * max_loss * math.log(2.0))


def signal_values(n_items: int, *, signal: str = "choice", n_chosen: int = 1) -> FloatArray:
    """The multiset of values of one round's ``s_t``, increasing: k ones, or 0..n−1."""
    if signal == "choice":
        return np.concatenate([np.zeros(n_items - n_chosen), np.ones(n_chosen)])
    return np.arange(n_items, dtype=np.float64)


def fpl_rate(
    n_items: int, horizon: int, *, z: str = "linear", signal: str = "choice", n_chosen: int = 1
) -> tuple[float, float]:
    """Kalai–Vempala's FPL rate ``η = √(D / (R A T))`` and bound ``2 √(D R A T)`` (Ailon §4.1).

    ``D = Σ_i |z(i) − z(n+1−i)|`` is the ℓ1 diameter of ``{z∘π}`` (reversal is
    the farthest pair for sorted weights), ``R = max_π Σ_u z(π(u)) s(u)`` pairs
    the largest weights with the largest signals, ``A = ‖s‖₁``.

    >>> eta, bound = fpl_rate(4, 100)  # D = 8, R = 3, A = 1
    >>> math.isclose(eta, math.sqrt(8 / 300)), math.isclose(bound, 2 * math.sqrt(2400))
    (True, True)
    """
    d, r, a = fpl_constants(n_items, z=z, signal=signal, n_chosen=n_chosen)
    if d * r * a == 0:
        return 1.0, 0.0
    return math.sqrt(d / (r * a * horizon)), 2.0 * math.sqrt(d * r * a * horizon)


def fpl_constants(
    n_items: int, *, z: str = "linear", signal: str = "choice", n_chosen: int = 1
) -> tuple[float, float, float]:
    """``(D, R, A)`` of :func:`fpl_rate`, which depend on everything but the horizon."""
    zw = position_weights(z, n_items)
    s = signal_values(n_items, signal=signal, n_chosen=n_chosen)
    d = float(np.abs(zw - zw[::-1]).sum())
    r = float(zw @ s)  # both increasing: the worst ranking
    return d, r, float(s.sum())


def _signal(feedback: Feedback) -> NDArray[Any]:
    """``s_t`` per run, shape (B, n): the chosen indicator, or the revealed grades."""
    if isinstance(feedback, ChoiceFeedback):
        return np.asarray(feedback.chosen, dtype=np.float64)
    if isinstance(feedback, FullFeedback):
        return np.asarray(feedback.relevance, dtype=np.float64)
    raise TypeError(f"expected choice or full feedback, got {type(feedback).__name__}")


#: Lists up to this length are ranked by :func:`_race_orders`.
_SHORT_LIST = 16


@njit
def _race_orders(
    log_race: FloatArray, hist: FloatArray, eta: float, out: Orders
) -> None:  # pragma: no cover
    """Arrival order of the exponential race, all runs in one compiled pass, into ``out``.

    Key ``log E(u) − (w(u) − max w)`` with ``w = η · hist``, the same operations
    as the array form; items by increasing key, ordered by counting
    (:func:`~oltr.permutations.counting.orders_by_counting`, no data-dependent
    branch in the counts). The keys are continuous, so ties have probability 0
    and this is the order any sort gives.
    """
    n_runs, m = log_race.shape
    keys = np.empty((n_runs, m))
    for b in range(n_runs):
        w_max = -np.inf
        for i in range(m):
            w_max = max(w_max, eta * hist[b, i])
        for i in range(m):
            keys[b, i] = log_race[b, i] - (eta * hist[b, i] - w_max)
    orders_by_counting(keys, out)


class _Histogram(Learner[Feedback]):
    """Shared state: the per-run histogram ``W`` of revealed signals, sized at the first round."""

    context_kind: ClassVar[str] = "items"
    signal: str
    horizon: int | None
    eta: float | None

    @property
    def requires(self) -> FeedbackRequirement:  # type: ignore[override]
        """``choice`` (the chosen set) or ``full`` (a revealed ranking's grades)."""
        return FeedbackRequirement("choice" if self.signal == "choice" else "full")

    def _setup(self, n_items: int) -> None:
        """Called once, at the first round, when ``n`` is known."""

    def _histogram(self, context: Context) -> FloatArray:
        hist: FloatArray | None = getattr(self, "_w", None)
        if hist is None:
            hist = np.zeros((self.n_runs, context.n_items))
            self._w = hist
            self._setup(context.n_items)
        elif hist.shape[1] != context.n_items:
            raise ValueError(
                f"{type(self).__name__} ranks a fixed item set of {hist.shape[1]} "
                f"items; got a context with {context.n_items}"
            )
        return hist

    def _horizon_or(self, t: int) -> int:
        return t if self.horizon is None else int(self.horizon)

    def _anytime_rate(self, t: int) -> None:
        """Without a horizon, the default rate's formula with the round t for T.

        A non-increasing rate η_t of the form c/√t is the anytime version of the
        fixed c/√T (for exponential weights: Cesa-Bianchi & Lugosi 2006, Theorem 2.3;
        for the perturbed leader: Hutter & Poland 2005), with regret of the same
        order; Ailon 2014 analyses only the fixed rate.
        """
        if self.eta is None and self.horizon is None:
            self._eta = self._default_rate(self._w.shape[1], t)

    def _default_rate(self, n_items: int, horizon: int) -> float:
        raise NotImplementedError

    def update(self, context: Context, orders: Orders, feedback: Feedback) -> None:
        """Add this round's signal ``s_t`` to the histogram (Algorithm 1, line 6)."""
        hist = self._histogram(context)
        if isinstance(feedback, ChoiceFeedback):
            hist += feedback.chosen  # the bool indicator is cast in place, no float copy
        else:
            hist += _signal(feedback)


def _check_common(signal: str, n_chosen: int, horizon: int | None) -> None:
    check_choice(signal, "signal", SIGNALS)
    check_scalar(n_chosen, "n_chosen", low=1, integer=True)
    if horizon is not None:
        check_scalar(horizon, "horizon", low=1, integer=True)


@register_learner("onlinerank")
class OnlineRank(_Histogram):
    """Ailon's OnlineRank: noisy sorting of multiplicatively weighted choice counts.

    Round ``t`` shows ``π_t = SortProc(V, w_{t−1})`` and then sets
    ``w_t(u) = w_{t−1}(u) + η s_t(u)`` (Algorithm 1), ``w_0 = 0``. ``SortProc``
    is noisy QuickSort (Algorithm 2) or Plackett–Luce (Algorithm 3); either way
    ``P(u ≺ v) = e^{w(u)} / (e^{w(u)} + e^{w(v)})`` (Lemma 6.1), and with
    Theorem 3.1's rate ``η = n √(log 2) / √(T M)``
    ``E[L_T] ≤ L_T(π*) + n √(T M log 2)`` for the pairwise loss ℓℓ (eq. 2.2).
    O(n log n) per round and run.

    Parameters
    ----------
    sort
        ``"quicksort"`` (Algorithm 2) or ``"plackett-luce"`` (Algorithm 3).
    eta
        Learning rate ``η`` in (0, 1]; None uses Theorem 3.1's, capped at 1, with
        the horizon T, or without one the same formula with the round t for T
        (anytime; see :meth:`_anytime_rate`).
    max_loss
        Ailon's ``M`` (eq. 2.3), > 0; None uses :func:`default_max_loss`
        (``n k`` for choice, Corollary 3.2; ``n²(n²−1)/12`` for rankings, §5).
    n_chosen
        Largest chosen-set size ``k`` >= 1, for the default ``M``.
    signal
        ``"choice"``: learn from the chosen set ``U_t`` (§2–3); ``"full"``:
        learn from revealed grades, e.g. a ranking ``σ_t`` as ``m − σ_t`` (§5).
    horizon
        The number of rounds ``T`` >= 1, known in advance (filled by the runner).
    n_runs, rng
        See :class:`~oltr.learners.base.Learner`.

    References
    ----------
    Ailon 2014, Algorithms 1–3, Lemma 6.1, Theorem 3.1, Corollaries 3.2 and 5.1.

    Examples
    --------
    >>> from oltr.feedback import ChoiceFeedback
    >>> lrn = OnlineRank(sort="plackett-luce", eta=0.5, n_runs=2, rng=0)
    >>> ctx = Context(t=1, n_items=3)
    >>> orders = lrn.rank(ctx)
    >>> lrn.update(ctx, orders, ChoiceFeedback(orders, np.array([[True, False, False]] * 2)))
    >>> lrn.weights_.tolist()
    [[0.5, 0.0, 0.0], [0.5, 0.0, 0.0]]
    """

    #: The runner passes the run's horizon T (``horizon=``) to this learner.
    horizon_dependent: ClassVar[bool] = True

    def __init__(
        self,
        *,
        sort: str = "quicksort",
        eta: float | None = None,
        max_loss: float | None = None,
        n_chosen: int = 1,
        signal: str = "choice",
        horizon: int | None = None,
        n_runs: int = 1,
        rng: RunRNGLike = None,
    ) -> None:
        super().__init__(n_runs=n_runs, rng=rng)
        check_choice(sort, "sort", ("quicksort", "plackett-luce"))
        if eta is not None:
            check_scalar(eta, "eta", low=0, high=1, include_low=False)
        if max_loss is not None:
            check_scalar(max_loss, "max_loss", low=0, include_low=False)
        _check_common(signal, n_chosen, horizon)
        self.sort = sort
        self.eta = eta
        self.max_loss = max_loss
        self.n_chosen = n_chosen
        self.signal = signal
        self.horizon = horizon

    @classmethod
    def _test_params(cls) -> Iterator[dict[str, Any]]:
        yield {"horizon": 50}
        yield {"sort": "plackett-luce", "horizon": 50, "n_chosen": 2}
        yield {"sort": "plackett-luce", "signal": "full", "eta": 0.1}

    def _setup(self, n_items: int) -> None:
        if self.eta is not None:
            self._eta = float(self.eta)
            return
        m_bound = float(
            self.max_loss
            if self.max_loss is not None
            else default_max_loss(n_items, signal=self.signal, n_chosen=int(self.n_chosen))
        )
        self._max_loss = m_bound
        self._eta = self._default_rate(n_items, self._horizon_or(1))

    def _default_rate(self, n_items: int, horizon: int) -> float:
        return onlinerank_rate(n_items, horizon, self._max_loss)

    @property
    def eta_(self) -> float:
        """The learning rate in use (known after the first round)."""
        if not hasattr(self, "_eta"):
            raise AttributeError("eta_ is set at the first round")
        return self._eta

    @property
    def weights_(self) -> FloatArray:
        """``w_{t}`` per run, shape (B, n): η times the histogram (a copy)."""
        if getattr(self, "_w", None) is None:
            raise AttributeError("weights_ exist after the first round")
        return self._eta * self._w

    def rank(self, context: Context) -> Orders:
        """``SortProc(V, w_{t−1})`` for every run (Algorithm 1, line 4)."""
        hist = self._histogram(context)  # sets the rate at the first round
        self._anytime_rate(context.t)
        w = self._eta * hist
        if self.sort == "quicksort":
            # each run sorts with its own generator: the same draws as one call per run
            return noisy_quicksort_runs(w, self.rngs)
        # Plackett–Luce by an exponential race, as oltr.permutations.plackett_luce draws it:
        # item u arrives at E(u) e^{−w(u)}; the arrival order is Algorithm 3's output. The
        # shift by the row maximum keeps the noise when weights are huge.
        # Each run's exponentials come from its own stream, a chunk of rounds per call: the
        # same numbers as one call per round, without B generator calls every round.
        race = np.log(self._exponentials(w.shape[1]).next())
        if w.shape[1] <= _SHORT_LIST:
            out = np.empty(w.shape, dtype=np.intp)
            _race_orders(race, hist, self._eta, out)
            return out
        w -= w.max(axis=1, keepdims=True)
        race -= w
        return race.argsort(axis=1).astype(np.intp, copy=False)

    def _exponentials(self, n_items: int) -> _Perturbations:
        draws: _Perturbations | None = getattr(self, "_race_draws", None)
        if draws is None:
            draws = self._race_draws = _Perturbations(
                self.rngs, n_items, draw="standard_exponential"
            )
        return draws


@register_learner("ailon-fpl")
class AilonFPL(_Histogram):
    """Follow the Perturbed Leader for position-weighted choice losses ``ℓ_z``.

    Round ``t`` shows the items by decreasing ``W_{t−1}(u) + ε_u`` with
    ``ε_u ~ U[0, 1/η]`` i.i.d. per item, run and round (Kalai & Vempala 2005,
    as Ailon 2014 §4.1 describes it), ``W`` the histogram of revealed signals.
    For every nondecreasing position weight ``z`` the leader (sorting by ``W``)
    minimises ``Σ_t ℓ_z(π, s_t)``, so one ranker serves all ``ℓ_z`` (§8); the
    default rate ``η = √(D / (R A T))`` is computed for the given ``z``
    (:func:`fpl_rate`), with expected regret at most ``2 √(D R A T)``.

    Parameters
    ----------
    eta
        Perturbation shape ``η`` > 0 (noise on [0, 1/η]); None: :func:`fpl_rate`
        with the horizon T, or without one with the round t for T (anytime).
    z
        Position weight of the loss, a key of
        :data:`oltr.envs.choice.POSITION_WEIGHTS` (``linear`` is eq. 2.1).
    n_chosen
        Chosen-set size ``k`` >= 1, for the default rate.
    signal
        ``"choice"`` or ``"full"`` (see :class:`OnlineRank`).
    horizon
        The number of rounds ``T`` >= 1 (filled by the runner).
    n_runs, rng
        See :class:`~oltr.learners.base.Learner`.

    References
    ----------
    Ailon 2014, §4.1 (FPL with uniform noise, ``η = √(D/(RAT))``) and §8 (ℓ_z,
    Theorem 8.1). Kalai & Vempala 2005, Theorem 1.1.

    Examples
    --------
    >>> lrn = AilonFPL(eta=1e-9, rng=0)  # huge noise: a uniform order
    >>> sorted(lrn.rank(Context(t=1, n_items=4))[0].tolist())
    [0, 1, 2, 3]
    """

    #: The runner passes the run's horizon T (``horizon=``) to this learner.
    horizon_dependent: ClassVar[bool] = True

    def __init__(
        self,
        *,
        eta: float | None = None,
        z: str = "linear",
        n_chosen: int = 1,
        signal: str = "choice",
        horizon: int | None = None,
        n_runs: int = 1,
        rng: RunRNGLike = None,
    ) -> None:
        super().__init__(n_runs=n_runs, rng=rng)
        if eta is not None:
            check_scalar(eta, "eta", low=0, include_low=False)
        check_choice(z, "z", tuple(POSITION_WEIGHTS))
        _check_common(signal, n_chosen, horizon)
        self.eta = eta
        self.z = z
        self.n_chosen = n_chosen
        self.signal = signal
        self.horizon = horizon

    @classmethod
    def _test_params(cls) -> Iterator[dict[str, Any]]:
        yield {"horizon": 50}
        yield {"z": "quadratic", "n_chosen": 2, "horizon": 50}
        yield {"signal": "full", "eta": 0.5}

    def _setup(self, n_items: int) -> None:
        if self.eta is not None:
            self._eta = float(self.eta)
            return
        n_chosen = min(int(self.n_chosen), n_items)
        # D, R, A once: without a horizon the rate is recomputed every round
        self._dra = fpl_constants(n_items, z=self.z, signal=self.signal, n_chosen=n_chosen)
        self._eta = self._default_rate(n_items, self._horizon_or(1))

    def _default_rate(self, n_items: int, horizon: int) -> float:
        d, r, a = self._dra
        return 1.0 if d * r * a == 0 else math.sqrt(d / (r * a * horizon))  # fpl_rate's η

    @property
    def eta_(self) -> float:
        """The perturbation shape in use (known after the first round)."""
        if not hasattr(self, "_eta"):
            raise AttributeError("eta_ is set at the first round")
        return self._eta

    def rank(self, context: Context) -> Orders:
        """Sort ``W + ε`` decreasingly, ``ε ~ U[0, 1/η]`` (ties have probability 0)."""
        hist = self._histogram(context)
        self._anytime_rate(context.t)
        noise = self.rngs.uniform(0.0, 1.0 / self._eta, context.n_items)
        return np.argsort(-(hist + noise), axis=1).astype(np.intp, copy=False)
