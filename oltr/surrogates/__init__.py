"""Ranking surrogates, their gradients, and unbiased gradient estimators from top-k feedback.

Chaudhuri & Tewari (2016) §2–§4. Each surrogate φ(s, R) is an object with

* ``value`` (alias ``loss``) and ``grad`` (∇ with respect to the score vector s);
* ``kind`` (``"loss"`` or ``"gain"``), ``sign`` (+1 / −1), ``objective`` and
  ``descent_grad``: a learner always steps ``w ← w − η Xᵀ descent_grad``;
* ``min_k`` / ``required_k`` / ``check_k``: the feedback depth it needs;
* ``estimate_grad`` / ``estimate_descent_grad``: unbiased estimates from the
  relevances of the top k items of the order RTop-kF showed (Algorithm 1);
* ``decomposition``: the gradient in the form of Lemma 1 (Eq. 2), and
  ``second_moment_bound`` (Lemma 5).

===============  ======  ========  =============================================
name             kind    min_k     estimator
===============  ======  ========  =============================================
``squared``      loss    1         2(s − R_σ(1) e_σ(1) / p(σ(1)))
``ranksvm``      loss    2         (h_σ(1)σ(2) + h_σ(2)σ(1)) / P({σ(1), σ(2)} on top)
``kl``           loss    1         (e^{s_σ(1)} − e^{R_σ(1)}) e_σ(1) / p(σ(1))
``smoothdcg``    gain    1         G(R_σ(1)) q_σ(1) (e_σ(1) − q) / (ε p(σ(1)))
``listnet``      loss    full      exact gradient when the whole list is observed
===============  ======  ========  =============================================

:class:`DecomposedGradient` builds Lemma 1's estimator for any function that
decomposes over ℓ <= k relevance coordinates; :mod:`oltr.surrogates.exploration`
holds the exploration distribution and its closed-form marginals.
"""

from __future__ import annotations

from typing import Any

from oltr.surrogates.base import BOUND_FORMS, Surrogate, TrustedEstimator
from oltr.surrogates.decomposition import ComponentFn, DecomposedGradient, KnownFn
from oltr.surrogates.exploration import (
    position_probability,
    prefix_probability,
    sample_exploration_order,
    top_set_probability,
)
from oltr.surrogates.listwise import KLListNet, ListNet
from oltr.surrogates.pairwise import RankSVMHinge
from oltr.surrogates.pointwise import SquaredLoss
from oltr.surrogates.smoothdcg import SCORE_SCALE_EPS, SmoothDCG, score_scale_eps

__all__ = [
    "BOUND_FORMS",
    "SURROGATES",
    "ComponentFn",
    "DecomposedGradient",
    "KLListNet",
    "KnownFn",
    "ListNet",
    "RankSVMHinge",
    "SCORE_SCALE_EPS",
    "SmoothDCG",
    "SquaredLoss",
    "Surrogate",
    "TrustedEstimator",
    "make_surrogate",
    "position_probability",
    "prefix_probability",
    "sample_exploration_order",
    "score_scale_eps",
    "top_set_probability",
]

#: Registry: surrogate name -> class.
SURROGATES: dict[str, type[Surrogate]] = {
    cls.name: cls for cls in (SquaredLoss, RankSVMHinge, KLListNet, SmoothDCG, ListNet)
}


def make_surrogate(name: str, **params: Any) -> Surrogate:
    """Build a surrogate by registry name.

    Parameters
    ----------
    name
        One of ``SURROGATES``: ``"squared"``, ``"ranksvm"``, ``"kl"``,
        ``"smoothdcg"``, ``"listnet"``.
    **params
        Constructor parameters (``eps`` for ``"smoothdcg"``).

    Raises
    ------
    ValueError
        For an unknown name (the message lists the valid ones).
    TypeError
        For a parameter the surrogate does not take.

    Examples
    --------
    >>> make_surrogate("smoothdcg", eps=0.1)
    SmoothDCG(eps=0.1)
    >>> make_surrogate("ranksvm").min_k
    2
    """
    if name not in SURROGATES:
        raise ValueError(f"unknown surrogate {name!r}; valid names: {sorted(SURROGATES)}")
    cls = SURROGATES[name]
    try:
        return cls(**params)
    except TypeError as err:
        raise TypeError(f"bad parameters for surrogate {name!r}: {err}") from None
