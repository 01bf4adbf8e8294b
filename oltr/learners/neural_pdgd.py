"""PDGD with a neural ranker: one hidden layer of sigmoid units, batched over runs.

The scorer of run ``b`` is a one-hidden-layer network

.. math::
    a_d = σ(W_1^⊤ x_d + b_1),\\qquad f(d) = w_2^⊤ a_d,\\qquad σ(z) = 1 / (1 + e^{−z}),

with ``H`` hidden units (no bias on the output, as in the reference code).
Everything else is PDGD as in :mod:`oltr.learners.pdgd`: Plackett–Luce sampling
of the shown list, preferences inferred from the clicks, the debiasing weight
ρ (eqs. 8–9), and the gradient ``Σ ρ ∇P(d_k ≻ d_l)`` of eq. 10 — now
back-propagated through the network. With ``c_d`` the per-document coefficient
of eq. 10 in score space (:func:`~oltr.learners.pdgd.pdgd_score_gradient`),

.. math::
    ∇_{w_2} = Σ_d c_d a_d,\\qquad δ_d = c_d\\, w_2 ⊙ a_d ⊙ (1 − a_d),\\qquad
    ∇_{W_1} = Σ_d x_d δ_d^⊤,\\qquad ∇_{b_1} = Σ_d δ_d,

and every parameter takes the ascent step ``θ ← θ + η ∇_θ`` (the old ``w_2`` is
used for ``δ``).

Settings, from the authors' reference implementation (github.com/HarrieO/
OnlineLearningToRank @ 54c13ad9): ``algorithms/PDGD/deeppdgd.py`` (DeepPDGD,
``hidden_layers = [64]``), ``models/neuralmodel.py`` (sigmoid hidden units, a
linear output without bias, initial weights and biases of a layer with ``n``
inputs drawn from ``N(0, (1/n)²)`` — ``np.random.normal(0, 1/n)``, a standard
deviation of ``1/n``) and ``scripts/CIKM2018.py`` (the paper's experiments run
DeepPDGD with ``learning_rate = 0.1`` and ``learning_rate_decay = 0.9999977``):
``H = 64``, η = 0.1, the decay selectable as ``lr_decay`` and off by default as
for the linear :class:`~oltr.learners.pdgd.PDGD`.

The forward and backward passes are compiled loops over one run at a time whose
order of operations does not depend on the batch, so a run's scores, and hence
its trace, are the same bit for bit alone or batched (no BLAS kernel chosen by
the shape of the whole batch).

References
----------
Oosterhuis & de Rijke 2018, "Differentiable unbiased online learning to rank",
CIKM, Algorithm 1, §4 (eqs. 2, 8–10); the reference implementation named above.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

import numpy as np

from oltr.errors import NumericalError
from oltr.feedback import FeedbackRequirement
from oltr.feedback.clicks import ClickFeedback
from oltr.kernels import njit
from oltr.learners.base import Learner, ResumableRound
from oltr.learners.pdgd import pdgd_score_gradient
from oltr.registry import register_learner
from oltr.types import Context, FloatArray, Orders, RunRNGLike
from oltr.validation import check_feature_columns, check_scalar, finite_features

__all__ = ["NeuralPDGD", "mlp_backward", "mlp_forward"]


@njit(nogil=True)
def _forward_kernel(
    w1: Any, b1: Any, w2: Any, x: Any, act: Any, out: Any
) -> None:  # pragma: no cover
    n_runs, d, h = w1.shape
    m = x.shape[0]
    z = np.empty(h)
    for b in range(n_runs):
        for i in range(m):
            for u in range(h):
                z[u] = 0.0
            for j in range(d):
                v = x[i, j]
                if v != 0.0:  # a zero feature adds exact zeros; LETOR rows are sparse
                    for u in range(h):
                        z[u] += v * w1[b, j, u]
            s = 0.0
            for u in range(h):
                a = 1.0 / (1.0 + np.exp(-(z[u] + b1[b, u])))
                act[b, i, u] = a
                s += a * w2[b, u]
            out[b, i] = s


@njit(nogil=True)
def _backward_kernel(
    w1: Any, b1: Any, w2: Any, x: Any, act: Any, coef: Any, eta: Any, g1: Any
) -> None:  # pragma: no cover
    n_runs, d, h = w1.shape
    m = x.shape[0]
    g2 = np.empty(h)
    gb = np.empty(h)
    delta = np.empty(h)
    for b in range(n_runs):
        for u in range(h):
            g2[u] = 0.0
            gb[u] = 0.0
        for j in range(d):
            for u in range(h):
                g1[j, u] = 0.0
        moved = False
        for i in range(m):
            c = coef[b, i]
            if c == 0.0:
                continue
            moved = True
            for u in range(h):
                a = act[b, i, u]
                g2[u] += c * a
                delta[u] = c * w2[b, u] * a * (1.0 - a)
                gb[u] += delta[u]
            for j in range(d):
                v = x[i, j]
                if v != 0.0:
                    for u in range(h):
                        g1[j, u] += v * delta[u]
        if not moved:
            continue
        e = eta[b]
        for j in range(d):
            for u in range(h):
                w1[b, j, u] += e * g1[j, u]
        for u in range(h):
            b1[b, u] += e * gb[u]
            w2[b, u] += e * g2[u]


def mlp_forward(
    w1: FloatArray, b1: FloatArray, w2: FloatArray, features: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """Scores (B, m) and hidden activations (B, m, H) of every run's network.

    Parameters
    ----------
    w1, b1, w2
        (B, d, H), (B, H), (B, H): each run's input weights, hidden biases and
        output weights.
    features
        (m, d) the documents' features.

    Examples
    --------
    >>> s, a = mlp_forward(np.zeros((1, 2, 3)), np.zeros((1, 3)), np.ones((1, 3)), np.eye(2))
    >>> s.tolist(), a.shape                # σ(0) = 1/2 on 3 units
    ([[1.5, 1.5]], (1, 2, 3))
    """
    b, _, h = w1.shape
    m = features.shape[0]
    act = np.empty((b, m, h))
    out = np.empty((b, m))
    _forward_kernel(w1, b1, w2, np.ascontiguousarray(features, dtype=np.float64), act, out)
    return out, act


def mlp_backward(
    w1: FloatArray,
    b1: FloatArray,
    w2: FloatArray,
    features: FloatArray,
    act: FloatArray,
    coef: FloatArray,
    eta: FloatArray,
) -> None:
    """Ascent step ``θ ← θ + η_b Σ_d coef[b, d] ∇_θ f(d)`` of every run, in place.

    ``act`` holds the activations :func:`mlp_forward` returned for these
    parameters; a run whose coefficients are all zero does not move.

    Examples
    --------
    >>> w1, b1, w2 = np.zeros((1, 1, 1)), np.zeros((1, 1)), np.ones((1, 1))
    >>> x = np.array([[2.0]])
    >>> _, act = mlp_forward(w1, b1, w2, x)
    >>> mlp_backward(w1, b1, w2, x, act, np.array([[1.0]]), np.array([1.0]))
    >>> w2.tolist(), b1.tolist(), w1.tolist()  # ∂f/∂w2 = 1/2; ∂f/∂b1 = 1/4; ∂f/∂w1 = 2/4
    ([[1.5]], [[0.25]], [[[0.5]]])
    """
    _backward_kernel(
        w1,
        b1,
        w2,
        np.ascontiguousarray(features, dtype=np.float64),
        act,
        np.ascontiguousarray(coef, dtype=np.float64),
        np.ascontiguousarray(eta, dtype=np.float64),
        np.empty(w1.shape[1:]),
    )


@register_learner("pdgd-neural")
class NeuralPDGD(ResumableRound, Learner[ClickFeedback]):
    """PDGD with a one-hidden-layer sigmoid network as the scorer, learning from clicks.

    Samples the shown list from the Plackett–Luce model of the network's scores
    and back-propagates the debiased pairwise gradient of the clicks (Oosterhuis
    & de Rijke 2018, Algorithm 1; see the module docstring for the network, the
    gradient and where each constant comes from).

    Parameters
    ----------
    hidden
        Number H >= 1 of hidden units (64 in the reference implementation).
    eta
        Learning rate η > 0 (0.1 in the reference implementation's CIKM 2018 script).
    lr_decay
        Factor in (0, 1] applied to η after every update with at least one pair
        (1: none; 0.9999977 in that script).
    n_runs, rng
        See :class:`~oltr.learners.base.Learner`. Each run draws its initial
        network from its own generator at the first :meth:`rank`, when the
        feature dimension d is known: ``W_1, b_1 ~ N(0, (1/d)²)``,
        ``w_2 ~ N(0, (1/H)²)``.

    Attributes
    ----------
    params_ : tuple of arrays
        Read-only ``(W_1, b_1, w_2)`` of shapes (B, d, H), (B, H), (B, H).

    References
    ----------
    Oosterhuis & de Rijke 2018, CIKM, Algorithm 1, eqs. 2 and 8–10.

    Examples
    --------
    >>> x = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
    >>> lrn = NeuralPDGD(hidden=4, n_runs=2, rng=0)
    >>> lrn.rank(Context(t=1, n_items=3, features=x)).shape
    (2, 3)
    >>> lrn.score_features(x).shape
    (2, 3)
    """

    requires = FeedbackRequirement("clicks")
    context_kind: ClassVar[str] = "features"

    def __init__(
        self,
        *,
        hidden: int = 64,
        eta: float = 0.1,
        lr_decay: float = 1.0,
        n_runs: int = 1,
        rng: RunRNGLike = None,
    ) -> None:
        super().__init__(n_runs=n_runs, rng=rng)
        check_scalar(hidden, "hidden", low=1, integer=True)
        check_scalar(eta, "eta", low=0, include_low=False)
        check_scalar(lr_decay, "lr_decay", low=0, high=1, include_low=False)
        self.hidden = hidden
        self.eta = eta
        self.lr_decay = lr_decay
        self._eta = np.full(self.n_runs, float(eta))
        self._params: tuple[FloatArray, FloatArray, FloatArray] | None = None
        self._last: tuple[int, FloatArray, FloatArray] | None = None

    @classmethod
    def _test_params(cls) -> Iterator[dict[str, Any]]:
        yield {"hidden": 3}
        yield {"hidden": 2, "eta": 0.5, "lr_decay": 0.99}

    @property
    def params_(self) -> tuple[FloatArray, FloatArray, FloatArray]:
        """Read-only views of ``(W_1, b_1, w_2)``, set at the first :meth:`rank`."""
        if self._params is None:
            raise AttributeError("params_ are set at the first rank() call (d comes from it)")
        views = tuple(p.view() for p in self._params)
        for v in views:
            v.flags.writeable = False
        return views[0], views[1], views[2]

    def _init_params(self, d: int) -> tuple[FloatArray, FloatArray, FloatArray]:
        h = int(self.hidden)
        b = self.n_runs
        w1, b1, w2 = np.empty((b, d, h)), np.empty((b, h)), np.empty((b, h))
        for r, g in enumerate(self.rngs):
            # Reference neuralmodel.py: normal(0, 1/n_inputs) for a layer's weights and biases.
            w1[r] = g.normal(0.0, 1.0 / d, (d, h))
            b1[r] = g.normal(0.0, 1.0 / d, h)
            w2[r] = g.normal(0.0, 1.0 / h, h)
        return w1, b1, w2

    def _features(self, context: Context) -> FloatArray:
        x = finite_features(context.features, "NeuralPDGD", context.t)
        if self._params is None:
            self._params = self._init_params(x.shape[1])
        else:
            check_feature_columns(x, self._params[0].shape[1], context.t)
        return x

    def score_features(self, features: FloatArray) -> FloatArray:
        """Every run's scores of the rows of ``features`` (n, d), shape (B, n)."""
        if self._params is None:
            raise AttributeError("the networks are set at the first rank() call")
        scores, _ = mlp_forward(*self._params, features)
        return scores

    def rank(self, context: Context) -> Orders:
        """A Plackett–Luce sample of every run's order (Gumbel-max), shape (B, m)."""
        x = self._features(context)
        assert self._params is not None
        scores, act = mlp_forward(*self._params, x)
        m = x.shape[0]
        u = self.rngs.random(m)
        gumbel = -np.log(-np.log1p(-u))  # 1 − u ∈ (0, 1]: no log(0)
        self._last = (context.t, scores, act)
        return np.argsort(-(scores + gumbel), axis=-1, kind="stable").astype(np.intp)

    def update(self, context: Context, orders: Orders, feedback: ClickFeedback) -> None:
        """One debiased pairwise step per run, back-propagated through its network."""
        if self._last is None or self._last[0] != context.t:
            raise RuntimeError("NeuralPDGD.update must follow rank() on the same context")
        assert self._params is not None and context.features is not None
        _, scores, act = self._last
        coef, pairs = pdgd_score_gradient(scores, orders, feedback.clicks)
        mlp_backward(*self._params, context.features, act, coef, self._eta)
        if not all(np.isfinite(p).all() for p in self._params):
            raise NumericalError(
                f"NeuralPDGD: the network parameters stopped being finite in round "
                f"{context.t} (normalise the features, or lower eta)"
            )
        self._eta = np.where(pairs > 0, self._eta * float(self.lr_decay), self._eta)
        self._last = None  # the round is over: keep nothing of its context
