"""When to min–max scale features per query: the ``normalize`` choice and its ``"auto"`` rule.

``normalize`` takes one of three values wherever a LETOR file is read for
learning (:func:`oltr.data.letor.load_letor`, the ``letor-stream-v1``
environment, a ``[heldout]`` table):

* ``True``: always apply LETOR's QueryLevelNorm (:func:`normalize_per_query`);
* ``False``: keep the file's values;
* ``"auto"``: apply it exactly when some value of the file lies outside [0, 1].

Why ``"auto"`` is the default of the learning pipeline
    The linear learners of Chaudhuri & Tewari (2016) project their weights onto a
    ball of radius U = 1 and the KL-modified ListNet takes e^{s} of scores
    ``|s| <= U ‖x‖``: raw web features (MSLR-WEB: counts, BM25, PageRank, up to
    5·10^7) make e^{s} overflow and let a few large-scale features dominate every
    step. CT16 §6 ran on Yahoo! LTR and Yandex, whose features ship scaled to
    [0, 1]; LETOR 3.0/4.0 (OHSUMED, MQ2007/8) ship "QueryLevelNorm" files (Qin et
    al. 2010); MSLR-WEB ships raw, and the online LTR literature min–max scales it
    per query (the code of Oosterhuis & de Rijke 2018 does so for every data set).
    Per-query scaling needs no statistics beyond the list being ranked, so a
    served ranker applies it to each request as well (:func:`scale_list`, the
    definition's ``normalize``, ``"auto"`` by default for a new ranker).

    Data already inside [0, 1] — QueryLevelNorm files, globally scaled sets such as
    Yahoo! LTR or LightGBM's example, the synthetic generator's output — is left
    exactly as it is: its scale is already the one the defaults assume, and runs
    on it keep their traces bit for bit. (Min–max of a query-normalised file is
    the identity only up to constant features, which it sets to 0.)

The rule looks at the whole file as parsed (before ``n_features`` and
``drop_no_relevant``), so ``oltr data info FILE`` can say what it does.

References
----------
Qin, T., Liu, T.-Y., Xu, J. & Li, H. (2010). LETOR: A benchmark collection for
research on learning to rank for information retrieval. *Inf. Retr.* 13(4).
Oosterhuis, H. & de Rijke, M. (2018). Differentiable unbiased online learning
to rank. CIKM.
Chaudhuri, S. & Tewari, A. (2016). Online learning to rank with top-k feedback.
arXiv:1608.06408.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "NORMALIZE_CHOICES",
    "Normalize",
    "check_normalize",
    "describe_normalization",
    "outside_unit_interval",
    "resolve_normalize",
    "scale_list",
]

#: The values ``normalize`` accepts.
NORMALIZE_CHOICES: tuple[bool | str, ...] = (True, False, "auto")

#: The type of a ``normalize`` choice.
Normalize = bool | Literal["auto"]


def check_normalize(value: object, name: str = "normalize") -> Normalize:
    """``value`` if it is True, False or ``"auto"``; a clear error otherwise.

    >>> check_normalize("auto"), check_normalize(False)
    ('auto', False)
    >>> check_normalize(1)
    Traceback (most recent call last):
    ...
    TypeError: normalize must be a bool or 'auto', got 1
    """
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if value == "auto" and isinstance(value, str):
        return "auto"
    if isinstance(value, str):
        raise ValueError(f"{name} must be true, false or 'auto', got {value!r}")
    raise TypeError(f"{name} must be a bool or 'auto', got {value!r}")


def outside_unit_interval(features: NDArray[np.float64]) -> bool:
    """Whether some value of ``features`` is below 0 or above 1 (False when empty).

    >>> outside_unit_interval(np.array([[0.0, 1.0], [0.5, 0.25]]))
    False
    >>> outside_unit_interval(np.array([[0.0, 3.0]]))
    True
    """
    if features.size == 0:
        return False
    return bool(features.min() < 0.0 or features.max() > 1.0)


def scale_list(features: NDArray[np.float64]) -> NDArray[np.float64]:
    """LETOR's QueryLevelNorm of one list (m, d): min–max scale each feature within it.

    The arithmetic of :func:`oltr.data.dataset.normalize_per_query` for a single query, so a
    served list is scaled bit for bit as the same list in a file would be; a feature constant
    within the list becomes 0.

    >>> scale_list(np.array([[1.0, 5.0], [3.0, 5.0], [2.0, 5.0]])).tolist()
    [[0.0, 0.0], [1.0, 0.0], [0.5, 0.0]]
    """
    lo = features.min(axis=0)
    span = features.max(axis=0) - lo
    out = np.zeros_like(features, dtype=np.float64)
    np.divide(features - lo, span, out=out, where=span > 0)
    return out


def resolve_normalize(normalize: Normalize, features: NDArray[np.float64]) -> bool:
    """Whether ``normalize`` scales data with these ``features`` (the file as parsed).

    >>> X = np.array([[0.0, 2.5e7], [1.0, 3.0]])
    >>> resolve_normalize("auto", X), resolve_normalize("auto", X / X.max())
    (True, False)
    >>> resolve_normalize(False, X)
    False
    """
    choice = check_normalize(normalize)
    return outside_unit_interval(features) if choice == "auto" else bool(choice)


def describe_normalization(normalize: Normalize, features: NDArray[np.float64]) -> dict[str, Any]:
    """What ``normalize`` does to data with these ``features``, for ``oltr data info``.

    Keys: ``choice`` (the value given), ``applied`` (bool) and ``reason`` (one line).

    >>> describe_normalization("auto", np.array([[0.0, 4.0]]))["reason"]
    'min-max per query: values outside [0, 1] (0 .. 4)'
    """
    choice = check_normalize(normalize)
    applied = resolve_normalize(choice, features)
    if choice == "auto" and applied:
        span = f"{float(features.min()):g} .. {float(features.max()):g}"
        reason = f"min-max per query: values outside [0, 1] ({span})"
    elif choice == "auto":
        reason = "none: every value lies in [0, 1]"
    else:
        reason = "min-max per query" if applied else "none"
    return {"choice": choice, "applied": applied, "reason": reason}
