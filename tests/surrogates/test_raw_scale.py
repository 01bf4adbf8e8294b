"""Surrogates at the score scale of raw web features (MSLR-WEB: values up to 5·10^7).

ListNet (log-sum-exp) and SmoothDCG (max-shifted softmax) stay finite and exact at
such scores; the KL-modified ListNet is e^{s} by definition (CT16 §4.1), so it
refuses them with an error that says how to load such data.
"""

from __future__ import annotations

import numpy as np
import pytest

from oltr.surrogates import KLListNet, ListNet, SmoothDCG

# Scores X w of unit weights on raw MSLR rows: huge, with gaps far beyond exp's range.
S = np.array([5.35e7, 5.35e7 - 2.0, 1.2e6, -49.8])
R = np.array([1.0, 3.0, 0.0, 2.0])


def test_listnet_is_exact_at_raw_scores() -> None:
    # softmax(S) puts 1/(1 + e^-2) on item 0, e^-2/(1 + e^-2) on item 1, 0 elsewhere.
    p_s = np.array([1.0, np.exp(-2.0), 0.0, 0.0]) / (1.0 + np.exp(-2.0))
    p_r = np.exp(R) / np.exp(R).sum()
    np.testing.assert_allclose(ListNet().grad(S, R), p_s - p_r, rtol=1e-12, atol=1e-300)
    # -Σ P(R) log P(S): items 2 and 3 have log P(S) = S_i - S_0 - log(1 + e^-2).
    log_p_s = S - S[0] - np.log1p(np.exp(-2.0))
    want = -(p_r * log_p_s).sum()
    assert ListNet().value(S, R) == pytest.approx(want, rel=1e-12)


def test_smoothdcg_is_exact_at_raw_scores() -> None:
    # ε = 1: q = softmax(S) as above; value Σ (2^R - 1) q.
    q = np.array([1.0, np.exp(-2.0), 0.0, 0.0]) / (1.0 + np.exp(-2.0))
    gains = 2.0**R - 1.0
    assert SmoothDCG(eps=1.0).value(S, R) == pytest.approx(float(gains @ q), rel=1e-12)
    assert np.isfinite(SmoothDCG().grad(S, R)).all()  # ε = 0.01: q one-hot, still finite


def test_kl_refuses_raw_scores_and_names_the_remedy() -> None:
    with pytest.raises(ValueError, match=r"exp overflows.*normalize='auto'"):
        KLListNet().grad(S, R)
    with pytest.raises(ValueError, match="overflows float64"):
        KLListNet().value(S, R)
