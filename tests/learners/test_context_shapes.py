"""A feature learner given features that are not an (n_items, d) real array says what it expects."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from oltr.build import make_learner
from oltr.errors import InputError
from oltr.types import Context
from oltr.validation import require_features

LEARNERS = [
    ("rtopk", {"surrogate": "squared", "gamma": 0.3, "eta": 0.1}),
    ("rtopk", {"surrogate": "kl", "gamma": 0.3, "eta": 0.1}),
    ("listnet", {"eta": 0.1}),
]
BAD_FEATURES: list[tuple[Any, str]] = [
    (np.ones(4), "got shape (4,)"),
    (np.ones((3, 4, 2)), "got shape (3, 4, 2)"),
    (np.ones((2, 4)), "got shape (2, 4)"),  # 2 rows for 3 items
    ([[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]], "got a list"),
    (((0.1,), (0.2,), (0.3,)), "got a tuple"),
    (np.ones((3, 2), dtype=np.complex128), "got dtype complex128"),
    (np.ones((3, 2), dtype=object), "got dtype object"),
    (np.array([["a", "b"]] * 3), "got dtype <U1"),
]


@pytest.mark.parametrize(("name", "params"), LEARNERS)
@pytest.mark.parametrize(("features", "got"), BAD_FEATURES)
def test_misshapen_features_raise_input_error_naming_the_shape(
    name: str, params: dict[str, Any], features: Any, got: str
) -> None:
    learner = make_learner(name, params, rngs=np.random.default_rng(0))
    with pytest.raises(InputError) as info:
        learner.rank(Context(t=1, n_items=3, features=features))
    message = str(info.value)
    assert "must be a numpy array of real numbers of shape (3, n_features)" in message
    assert message.endswith(got) and "round 1" in message


@pytest.mark.parametrize(("name", "params"), LEARNERS)
def test_a_misshapen_round_after_good_ones_changes_nothing(
    name: str, params: dict[str, Any]
) -> None:
    rng = np.random.default_rng(1)
    learner = make_learner(name, params, rngs=np.random.default_rng(0))
    x = rng.random((3, 2))
    learner.rank(Context(t=1, n_items=3, features=x))
    with pytest.raises(InputError, match="got shape"):
        learner.rank(Context(t=2, n_items=3, features=x[None]))
    # integer and boolean arrays are real numbers: accepted
    for ok in (np.arange(6).reshape(3, 2), np.eye(3, 2, dtype=bool)):
        assert sorted(learner.rank(Context(t=2, n_items=3, features=ok))[0]) == [0, 1, 2]


def test_require_features_without_a_row_count_checks_dimensions_and_dtype() -> None:
    x = np.zeros((5, 2))
    assert require_features(x, "L", 1) is x
    with pytest.raises(ValueError, match="L ranks feature lists"):
        require_features(None, "L", 1)
    with pytest.raises(InputError, match=r"shape \(n_items, n_features\).*got shape \(5,\)"):
        require_features(np.zeros(5), "L", 1)
