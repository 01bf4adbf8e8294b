"""The runner's (N)DCG of whole lists is, value for value and bit for bit, the general path's."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oltr.errors import InputError
from oltr.metrics.ranking import dcg, ndcg
from oltr.metrics.whole_lists import dcg_whole_lists, ndcg_whole_lists


@st.composite
def _rounds(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, int | None, float]:
    m = draw(st.integers(1, 60))
    n_runs = draw(st.integers(1, 5))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    kind = draw(st.sampled_from(["int", "float", "float32", "zeros"]))
    if kind == "int":
        grades: np.ndarray = rng.integers(0, 5, m)
    elif kind == "zeros":
        grades = np.zeros(m)
    else:
        grades = rng.random(m) * draw(st.sampled_from([1.0, 10.0, 900.0]))
        grades = grades.astype(np.float32) if kind == "float32" else grades
    lists = draw(st.sampled_from([(n_runs,), (n_runs, 2)]))  # one list a run, or a duel's two
    orders = np.argsort(rng.random((*lists, m)), axis=-1)
    k = draw(st.none() | st.integers(1, m + 5))
    fill = draw(st.sampled_from([1.0, 0.0, float("nan")]))
    return grades, orders, k, fill


@settings(max_examples=400, deadline=None, derandomize=True)
@given(_rounds())
def test_whole_lists_equal_the_general_path_bit_for_bit(
    case: tuple[np.ndarray, np.ndarray, int | None, float],
) -> None:
    grades, orders, k, fill = case
    assert ndcg_whole_lists(grades, orders, k or 0, fill) is not None  # the fast path answers
    fast = ndcg(grades, orders, k=k, no_relevant=fill, validate=False)
    # An all-True mask is what the general path builds for mask=None: it takes that path.
    general = ndcg(grades, orders, k=k, mask=np.ones(grades.shape, bool), no_relevant=fill)
    assert fast.dtype == general.dtype == np.float64 and fast.shape == general.shape
    assert fast.tobytes() == general.tobytes()  # every bit, NaN and the sign of zero included
    assert dcg_whole_lists(grades, orders, k or 0) is not None
    fast_dcg = dcg(grades, orders, k=k, validate=False)
    general_dcg = dcg(grades, orders, k=k, mask=np.ones(grades.shape, bool))
    assert fast_dcg.dtype == general_dcg.dtype and fast_dcg.shape == general_dcg.shape
    assert fast_dcg.tobytes() == general_dcg.tobytes()


@pytest.mark.parametrize("k", [10, None])
@pytest.mark.parametrize("top", [1000.0, 1022.0])
@pytest.mark.parametrize("orders_kind", ["permutation", "the top item everywhere"])
def test_huge_gains_take_the_same_bits_without_a_warning(
    k: int | None, top: float, orders_kind: str
) -> None:
    # 60 × 2^1000 leaves float64 room for any sum of 60 discounted gains (no overflow is
    # possible, and none is guarded against); 60 × 2^1022 does not, and the sums run under
    # errstate as the general path's do: with validate=False the orders may repeat an item,
    # and 60 discounted copies of 2^1022 overflow to inf (in both paths).
    grades = np.zeros(60)
    grades[[3, 17]] = top, top - 1.0
    if orders_kind == "permutation":
        orders = np.random.default_rng(0).permuted(np.tile(np.arange(60), (4, 1)), axis=1)
    else:
        orders = np.full((4, 60), 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an unguarded overflow would warn
        fast = ndcg_whole_lists(grades, orders, k or 0, 1.0)
        general = ndcg(  # a mask: the general path, unchecked (the orders may repeat)
            grades, orders, k=k, mask=np.ones(60, bool), no_relevant=1.0, validate=False
        )
        fast_dcg = dcg_whole_lists(grades, orders, k or 0)
        try:
            general_dcg = dcg(grades, orders, k=k, mask=np.ones(60, bool), validate=False)
        except InputError:  # the sum overflowed: the general path refuses it
            general_dcg = None
    assert fast is not None
    assert fast.tobytes() == general.tobytes()
    if general_dcg is None:
        assert fast_dcg is None and orders_kind != "permutation" and top == 1022.0
    else:
        assert fast_dcg is not None and fast_dcg.tobytes() == general_dcg.tobytes()


def test_other_forms_and_overflows_are_left_to_the_general_path() -> None:
    orders = np.array([[1, 0, 2]])
    assert ndcg_whole_lists(np.array([[1, 0, 2]]), orders, 2, 1.0) is None  # 2-D grades
    assert ndcg_whole_lists(np.array([1, 0, 2]), orders[0], 2, 1.0) is None  # 1-D orders
    assert ndcg_whole_lists(np.array([True, False, True]), orders, 2, 1.0) is None
    assert ndcg_whole_lists(np.array([1, 0, 2]), orders, 2, 1) is None  # type: ignore[arg-type]
    big = np.array([1023.0] * 3)  # each gain finite, their discounted sum not
    assert ndcg_whole_lists(big, orders, 0, 1.0) is None
    with pytest.raises(InputError, match="ideal DCG"):
        ndcg(big, orders, validate=False)
