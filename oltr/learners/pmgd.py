"""Multileave gradient descent (Schuth et al. 2016) and its two-ranker cases P-DBGD and TD-DBGD.

Each impression, for every run ``b`` with current linear ranker ``w``:

1. draw ``n`` directions ``u_j`` uniform on the unit sphere and form the candidates
   ``w_j = w + δ u_j`` (Schuth et al. 2016, Algorithm 1, lines 4–6);
2. multileave the ``n + 1`` rankings into one page of ``k`` results
   (probabilistic multileaving, :mod:`oltr.clicks.multileaving`; or team-draft
   interleaving when ``n = 1``, :func:`oltr.clicks.interleaving.team_draft_interleave`);
3. from the clicks, the candidates that *win* against ``w`` (preference > 0) form
   the set ``W``; if it is not empty, ``w ← w + η · (1/|W|) Σ_{j∈W} (w_j − w)``
   (the "mean winner" update, Algorithm 1 line 10).

With ``n = 1`` this is DBGD (Yue & Joachims 2009, Algorithm 1) with the
comparison made by interleaving: P-DBGD with probabilistic interleaving (Hofmann
et al. 2013; :class:`PDBGD`) and TD-DBGD with team-draft interleaving
(:class:`TDDBGD`). As in the reference implementation the candidates are *not*
projected onto a sphere and w₀ = 0.

Settings (Schuth et al. 2016 §5; Oosterhuis & de Rijke 2018 §6): η = 0.01, δ = 1,
w₀ = 0, n = 49 candidates for P-MGD, τ = 3, k = 10.

Each run draws its directions and its multileaving coins from its own generator
and its update is row-wise arithmetic (scores from
:func:`oltr.learners.linear.batch_scores`), so a run does not depend on its batch.

References
----------
Schuth, Oosterhuis, Whiteson & de Rijke 2016, "Multileave gradient descent for fast
online learning to rank", WSDM, Algorithm 1, §5.
Yue & Joachims 2009, ICML, Algorithm 1.
Hofmann, Whiteson & de Rijke 2013, "Reusing historical interaction data for faster
online learning to rank for IR", WSDM (P-DBGD with probabilistic interleaving).
Oosterhuis & de Rijke 2018, CIKM, §6 (the baselines' settings).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
from numpy.typing import NDArray

from oltr.clicks.interleaving import team_draft_rows
from oltr.clicks.multileaving import multileave_one, preference_vs_first, rank_weights
from oltr.feedback import FeedbackRequirement
from oltr.feedback.clicks import ClickFeedback
from oltr.kernels import njit
from oltr.learners.base import ResumableRound
from oltr.learners.linear import LinearRanker, batch_scores
from oltr.permutations.counting import COUNTING_UP_TO, orders_by_counting
from oltr.registry import register_learner
from oltr.types import Context, FloatArray, Orders, RunRNGLike
from oltr.validation import check_choice, check_scalar

__all__ = ["MULTILEAVING_METHODS", "PDBGD", "PMGD", "TDDBGD", "fill_order"]

MULTILEAVING_METHODS = ("probabilistic", "team_draft")


@njit(nogil=True)
def _rank_and_multileave(
    weights: Any,
    u: Any,
    delta: float,
    features: Any,
    uniforms: Any,
    table: Any,
    own: Any,
    shown: Any,
    q: Any,
) -> None:  # pragma: no cover
    """Per run: score the ranker and its candidates, rank the documents, multileave the page.

    Scores are the candidates ``w + (δ u_j)`` times the features, summed over
    features in index order (the arithmetic of
    :func:`~oltr.learners.linear.batch_scores`), and ranks are those of a stable
    descending sort (ties by lower index), one run at a time, so a run's page
    does not depend on its batch. Scores are laid out (document, ranker) so the
    loops over the n + 1 rankers vectorise; each ranker's order of lists up to
    :data:`~oltr.permutations.counting.COUNTING_UP_TO` documents is counted
    (:func:`~oltr.permutations.counting.orders_by_counting`), longer lists sorted.
    """
    n_runs, d = weights.shape
    n1 = u.shape[1] + 1
    m = features.shape[0]
    wt = np.empty((d, n1))
    s = np.empty((m, n1))
    neg = np.empty((n1, m))
    orders = np.empty((n1, m), dtype=np.intp)
    ranks = np.empty((n1, m), dtype=np.intp)
    for b in range(n_runs):
        for j in range(d):
            wt[j, 0] = weights[b, j]
            for r in range(1, n1):
                wt[j, r] = weights[b, j] + delta * u[b, r - 1, j]
        for i in range(m):
            for r in range(n1):
                s[i, r] = 0.0
            for j in range(d):
                v = features[i, j]
                if v != 0.0:  # a zero term adds an exact zero
                    for r in range(n1):
                        s[i, r] += wt[j, r] * v
        for r in range(n1):
            for i in range(m):
                neg[r, i] = -s[i, r]
        if m <= COUNTING_UP_TO:
            orders_by_counting(neg, orders)
        else:
            for r in range(n1):
                orders[r] = np.argsort(neg[r], kind="mergesort")
        for r in range(n1):
            for pos in range(m):
                ranks[r, orders[r, pos]] = pos
        for i in range(m):
            own[b, ranks[0, i]] = i
        multileave_one(ranks, uniforms[b, 0], uniforms[b, 1], table, shown[b], q[b])


def fill_order(shown: NDArray[np.intp], base: NDArray[np.intp]) -> NDArray[np.intp]:
    """Full orders (B, m): the shown page first, then the rest in the order of ``base``.

    >>> fill_order(np.array([[2, 0]]), np.array([[0, 1, 2, 3]])).tolist()
    [[2, 0, 1, 3]]
    """
    b, m = base.shape
    rows = np.arange(b)[:, None]
    on_page = np.zeros((b, m), dtype=bool)
    on_page[rows, shown] = True
    rest = base[~on_page[rows, base]].reshape(b, m - shown.shape[1])
    return np.concatenate([shown, rest], axis=1).astype(np.intp)


@register_learner("p-mgd")
class PMGD(ResumableRound, LinearRanker[ClickFeedback]):
    """Multileave gradient descent: compare n candidates at once, move to their mean winner.

    Parameters
    ----------
    eta
        Learning rate η > 0 (0.01).
    delta
        Exploration radius δ > 0 of the candidates w + δu (1).
    n_candidates
        Number n >= 1 of candidates per impression (49 for P-MGD).
    tau
        Softmax sharpness τ > 0 of probabilistic multileaving (3).
    k
        Length of the result page, >= 1 (10).
    method
        ``"probabilistic"`` multileaving, or ``"team_draft"`` interleaving
        (``n_candidates = 1`` only).
    lr_decay
        Factor in (0, 1] applied to η after every update (1: none).
    n_runs, rng
        See :class:`~oltr.learners.base.Learner`.

    References
    ----------
    Schuth et al. 2016, WSDM, Algorithm 1 and §5.
    """

    _round_attr = "_round"

    requires = FeedbackRequirement("clicks")

    def __init__(
        self,
        *,
        eta: float = 0.01,
        delta: float = 1.0,
        n_candidates: int = 49,
        tau: float = 3.0,
        k: int = 10,
        method: str = "probabilistic",
        lr_decay: float = 1.0,
        n_runs: int = 1,
        rng: RunRNGLike = None,
    ) -> None:
        super().__init__(radius=float("inf"), n_runs=n_runs, rng=rng)
        check_scalar(eta, "eta", low=0, include_low=False)
        check_scalar(delta, "delta", low=0, include_low=False)
        check_scalar(n_candidates, "n_candidates", low=1, integer=True)
        check_scalar(tau, "tau", low=0, include_low=False)
        check_scalar(k, "k", low=1, integer=True)
        check_choice(method, "method", MULTILEAVING_METHODS)
        check_scalar(lr_decay, "lr_decay", low=0, high=1, include_low=False)
        if method == "team_draft" and n_candidates != 1:
            raise ValueError(
                f"method='team_draft' interleaves two rankers: n_candidates must be 1, "
                f"got {n_candidates}"
            )
        self.eta = eta
        self.delta = delta
        self.n_candidates = n_candidates
        self.tau = tau
        self.k = k
        self.method = method
        self.lr_decay = lr_decay
        self._eta = np.full(self.n_runs, float(eta))
        self._round: tuple[int, FloatArray, Any] | None = None

    @classmethod
    def _test_params(cls) -> Iterator[dict[str, Any]]:
        yield {"n_candidates": 4, "k": 3}
        yield {"n_candidates": 1, "method": "team_draft", "eta": 0.1}

    def rank(self, context: Context) -> Orders:
        """The multileaved page on top, then the rest in the current ranker's order."""
        x = self._features(context)
        assert self._weights is not None
        b, d = self._weights.shape
        n, m = int(self.n_candidates), x.shape[0]
        z = self.rngs.standard_normal((n, d))
        u = z / np.linalg.norm(z, axis=-1, keepdims=True)
        kk = min(int(self.k), m)
        if self.method != "team_draft":
            coins = self.rngs.random((2, kk))
            own = np.empty((b, m), dtype=np.intp)
            shown = np.empty((b, kk), dtype=np.intp)
            posterior = np.empty((b, kk, n + 1))
            _rank_and_multileave(
                self._weights,
                u,
                float(self.delta),
                np.ascontiguousarray(x, dtype=np.float64),
                coins,
                rank_weights(m, float(self.tau)),
                own,
                shown,
                posterior,
            )
            self._round = (context.t, u, posterior)
            return fill_order(shown, own)
        rankers = np.concatenate(
            [self._weights[:, None], self._weights[:, None] + self.delta * u], 1
        )
        scores = batch_scores(rankers.reshape(b * (n + 1), d), x).reshape(b, n + 1, m)
        orders = np.argsort(-scores, axis=-1, kind="stable")
        il = team_draft_rows(orders[:, 0], orders[:, 1], kk, self.rngs)  # own orders: unchecked
        self._round = (context.t, u, il)
        return fill_order(il.shown, orders[:, 0])

    def update(self, context: Context, orders: Orders, feedback: ClickFeedback) -> None:
        """Move every run with a winning candidate towards the winners' mean (line 10)."""
        if self._round is None or self._round[0] != context.t:
            raise RuntimeError(
                f"{type(self).__name__}.update must follow rank() on the same context"
            )
        _, u, credit = self._round
        # Credit only the multileaved page: clicks past it (a longer feedback page) have no
        # ranker to credit; positions of a shorter feedback page were not seen (no click).
        page = credit.shown.shape[1] if self.method == "team_draft" else credit.shape[1]
        clicks = np.zeros((self.n_runs, page), dtype=bool)
        seen = min(page, feedback.clicks.shape[1])
        clicks[:, :seen] = feedback.clicks[:, :seen]
        if self.method == "team_draft":
            winners = (np.asarray(credit.outcome(clicks)) > 0)[:, None]
        else:
            winners = preference_vs_first(credit, clicks)[:, 1:] > 0
        self._round = None  # the round is over: keep nothing of it
        count = winners.sum(axis=1)
        moved = count > 0
        if not moved.any():
            return
        mean_u = (winners[:, :, None] * u).sum(axis=1) / np.maximum(count, 1)[:, None]
        assert self._weights is not None
        step = (self._eta * float(self.delta))[:, None] * mean_u
        self._weights += np.where(moved[:, None], step, 0.0)
        self._eta = np.where(moved, self._eta * float(self.lr_decay), self._eta)


@register_learner("p-dbgd")
class PDBGD(PMGD):
    """DBGD with probabilistic interleaving: multileave gradient descent with one candidate.

    Parameters are those of :class:`PMGD`, with ``n_candidates = 1`` by default
    (Hofmann et al. 2013; Oosterhuis & de Rijke 2018 §6: η = 0.01, δ = 1, τ = 3).
    """

    def __init__(
        self,
        *,
        eta: float = 0.01,
        delta: float = 1.0,
        n_candidates: int = 1,
        tau: float = 3.0,
        k: int = 10,
        method: str = "probabilistic",
        lr_decay: float = 1.0,
        n_runs: int = 1,
        rng: RunRNGLike = None,
    ) -> None:
        super().__init__(
            eta=eta,
            delta=delta,
            n_candidates=n_candidates,
            tau=tau,
            k=k,
            method=method,
            lr_decay=lr_decay,
            n_runs=n_runs,
            rng=rng,
        )

    @classmethod
    def _test_params(cls) -> Iterator[dict[str, Any]]:
        yield {"k": 3}


@register_learner("td-dbgd")
class TDDBGD(PMGD):
    """DBGD with team-draft interleaving on clicks, w₀ = 0 and unprojected candidates.

    Parameters are those of :class:`PMGD`, with ``n_candidates = 1`` and
    ``method = "team_draft"`` by default (Radlinski et al. 2008's interleaving;
    the TD-DBGD baseline of Schuth et al. 2016 and Oosterhuis & de Rijke 2018).
    """

    def __init__(
        self,
        *,
        eta: float = 0.01,
        delta: float = 1.0,
        n_candidates: int = 1,
        tau: float = 3.0,
        k: int = 10,
        method: str = "team_draft",
        lr_decay: float = 1.0,
        n_runs: int = 1,
        rng: RunRNGLike = None,
    ) -> None:
        super().__init__(
            eta=eta,
            delta=delta,
            n_candidates=n_candidates,
            tau=tau,
            k=k,
            method=method,
            lr_decay=lr_decay,
            n_runs=n_runs,
            rng=rng,
        )

    @classmethod
    def _test_params(cls) -> Iterator[dict[str, Any]]:
        yield {"k": 3}
