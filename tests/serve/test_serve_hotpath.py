"""The hot path of rank and feedback: its decoder agrees with the API's models; ``.npy`` bodies."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest
from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from oltr.serve import ServeSettings, create_app
from oltr.serve.bodies import FeedbackRequest, RankRequest
from oltr.serve.hotpath import NPY_MEDIA_TYPE, decode_feedback, decode_rank
from oltr.serve.limits import Limits

D = 3
RTOPK = {
    "learner": "rtopk",
    "params": {"surrogate": "squared", "gamma": 0.3, "eta": 0.1},
    "feedback_params": {"k": 2},
    "n_features": D,
    "seed": 1,
}
NPY = {"content-type": NPY_MEDIA_TYPE}

# Mostly what the models take, now and then any other JSON value where a number is meant.
_NUMBERS = st.integers(-(2**70), 2**70) | st.floats(allow_nan=False, allow_infinity=False)
_OTHER = st.booleans() | st.none() | st.text(max_size=3) | st.lists(_NUMBERS, max_size=2)
_LEAF = st.one_of(_NUMBERS, _NUMBERS, _NUMBERS, st.booleans(), _OTHER)
_ROWS = st.lists(st.lists(_LEAF, max_size=4), max_size=4) | _OTHER
_RANK_BODIES = st.fixed_dictionaries(
    {"features": _ROWS}, optional={"other": _LEAF, "impression": st.text(max_size=3)}
)
_FIELD = st.lists(_LEAF, max_size=3) | _OTHER
_FEEDBACK_BODIES = st.fixed_dictionaries(
    {"impression": st.one_of(st.text(max_size=5), st.text(max_size=5), _OTHER)},
    optional={"labels": _FIELD, "chosen": _FIELD, "clicks": _FIELD, "other": _LEAF},
)


def _strict(model: Any, raw: bytes) -> Any:
    try:
        return model.model_validate_json(raw)
    except ValidationError:
        return None


_DEFERRED = object()  # handed to the FastAPI route, which answers as before


def _hot(decode: Any, raw: bytes) -> Any:
    try:
        return decode(raw)
    except msgspec.DecodeError:
        return _DEFERRED


@settings(max_examples=300, deadline=None, derandomize=True)
@given(_RANK_BODIES)
def test_the_hot_rank_decoder_takes_only_what_the_api_model_takes_alike(
    body: dict[str, Any],
) -> None:
    raw = json.dumps(body).encode()
    hot = _hot(decode_rank, raw)
    strict = _strict(RankRequest, raw)
    if hot is _DEFERRED:  # the FastAPI route answers it as before
        return
    assert strict is not None, raw
    rows = strict.features
    if not rows or len({len(r) for r in rows}) > 1:
        assert hot == rows
    else:
        assert isinstance(hot, np.ndarray) and hot.dtype == np.float64
        np.testing.assert_array_equal(hot, np.array(rows, dtype=np.float64))


@settings(max_examples=300, deadline=None, derandomize=True)
@given(_FEEDBACK_BODIES)
def test_the_hot_feedback_decoder_takes_only_what_the_api_model_takes_alike(
    body: dict[str, Any],
) -> None:
    raw = json.dumps(body).encode()
    hot = _hot(decode_feedback, raw)
    strict = _strict(FeedbackRequest, raw)
    if hot is not _DEFERRED:  # deferred: the FastAPI route answers it as before
        assert strict is not None, raw
        payload = strict.model_dump(exclude_none=True, exclude={"impression"})
        assert hot == (strict.impression, payload)


_ODD = ["true", "false", "null", '"1"', "1", "-0", "1.5", "1e400", "-1e400", "[1]", "{}", "2e0"]


@pytest.mark.parametrize("odd", _ODD)
def test_no_kind_of_value_in_any_field_is_taken_that_the_api_model_refuses(
    odd: str,
) -> None:
    """Exhaustive over the fields and the kinds of value: hot and strict decoders agree."""
    bodies = [
        (decode_rank, RankRequest, f'{{"features": [[0.5, {odd}], [1, 2]]}}'),
        (decode_rank, RankRequest, f'{{"features": [[{odd}]]}}'),
        (decode_rank, RankRequest, f'{{"features": {odd}}}'),
    ]
    for key in ("labels", "chosen", "clicks"):
        for value in (f"[{odd}]", odd):
            text = f'{{"impression": "i", "{key}": {value}}}'
            bodies.append((decode_feedback, FeedbackRequest, text))
    bodies.append((decode_feedback, FeedbackRequest, f'{{"impression": {odd}}}'))
    for decode, model, text in bodies:
        raw = text.encode()
        hot, strict = _hot(decode, raw), _strict(model, raw)
        if hot is _DEFERRED:  # the FastAPI route answers it as before
            continue
        assert strict is not None, text
        if model is FeedbackRequest:
            payload = strict.model_dump(exclude_none=True, exclude={"impression"})
            assert hot == (strict.impression, payload), text


_WRITTEN_BY_HAND = [
    '{"features": [[1, 2], [3, 4]]}',
    '{ "features" :\n [ [1 ,2] ,\t[3,4] ] }',
    '{"feat\\u0075res": [[1, 2], [3, 4]]}',
    '{"features": [[1, 2]], "features": [[3, 4]]}',
    '{"features": [[1, [2]], [3, 4]]}',
    '{"features": [[1, 2], [3, []]]}',
    '{"features": [[1, 2], {"a": 1, "b": 2}]}',
    '{"features": [[1, 2], "ab"]}',
    '{"features": [[1, 2], 3]}',
    '{"features": [[], []]}',
    '{"features": [[1E5, -0, 0e0, -1.5e-3]]}',
    '{"features": [[9007199254740993, 18446744073709551615, 18446744073709551616]]}',
    '{"features": [[-9223372036854775808, -9223372036854775809]]}',
    '{"features": [[1, 2]], "impression": "x"}',
    "[[1, 2]]",
]


@pytest.mark.parametrize("text", _WRITTEN_BY_HAND)
def test_bodies_written_by_hand_are_read_as_the_api_model_reads_them(text: str) -> None:
    """Whitespace, escapes, a key twice, nested or odd rows, integers past 2**53 and 2**64."""
    raw = text.encode()
    hot, strict = _hot(decode_rank, raw), _strict(RankRequest, raw)
    if hot is _DEFERRED:  # the FastAPI route answers it as before
        return
    assert strict is not None, text
    rows = strict.features
    if isinstance(hot, np.ndarray):
        assert hot.dtype == np.float64 and hot.shape == (len(rows), len(rows[0]))
        np.testing.assert_array_equal(hot, np.array(rows, dtype=np.float64).reshape(hot.shape))
        assert np.signbit(hot).tolist() == np.signbit(np.array(rows).reshape(hot.shape)).tolist()
    else:
        assert hot == rows


@pytest.mark.parametrize(
    "text", ["0.1", "1e-308", "5e-324", "1.7976931348623157e308", "123456789.123456789"]
)
def test_the_hot_decoder_reads_each_number_as_the_nearest_float64(text: str) -> None:
    hot = decode_rank(f'{{"features": [[{text}]]}}'.encode())
    assert hot[0, 0] == float(text)  # Python's float() rounds correctly


@pytest.fixture
def client(tmp_path: Path) -> TestClient:
    limits = Limits(max_cells=60)
    c = TestClient(create_app(ServeSettings(store=tmp_path / "s.db", limits=limits)))
    for name in ("a", "b"):
        assert c.put(f"/rankers/{name}", json=RTOPK).status_code == 201
    return c


def _npy(x: np.ndarray[Any, Any]) -> bytes:
    buf = io.BytesIO()
    np.save(buf, x, allow_pickle=False)
    return buf.getvalue()


@pytest.mark.parametrize("layout", ["<f8", "<f4", "fortran"])
def test_a_npy_body_ranks_and_learns_as_the_same_features_in_json(
    client: TestClient, layout: str
) -> None:
    rng = np.random.default_rng(3)
    for _ in range(12):
        # Multiples of 1/1024 below 8: exact in float32, so every encoding holds the same numbers.
        x = rng.integers(0, 8192, (7, D)) / 1024
        if layout == "fortran":
            sent = _npy(np.asfortranarray(x))
        else:
            sent = _npy(x.astype(layout))
        by_json = client.post("/rankers/a/rank", json={"features": x.tolist()}).json()
        by_npy = client.post("/rankers/b/rank", content=sent, headers=NPY).json()
        assert by_npy["order"] == by_json["order"]
        assert by_npy["propensities"] == by_json["propensities"]
        for name, answer in (("a", by_json), ("b", by_npy)):
            fb = {"impression": answer["impression"], "labels": [1.0, 0.0]}
            assert client.post(f"/rankers/{name}/feedback", json=fb).status_code == 200
    weights = [client.get(f"/rankers/{n}").json()["learner"] for n in ("a", "b")]
    assert weights[0] == weights[1]


def _refusal(client: TestClient, body: bytes) -> tuple[int, str]:
    resp = client.post("/rankers/a/rank", content=body, headers=NPY)
    return resp.status_code, resp.json()["detail"]


def test_bad_npy_bodies_are_refused_saying_what_is_wrong(client: TestClient) -> None:
    good = np.ones((4, D))
    cases = [
        (b"not a npy file", 422, "is not a .npy file"),
        (_npy(good)[:20], 422, "is not a .npy file"),
        (_npy(good.astype(np.int64)), 422, "dtype <i8"),
        (_npy(good.astype(">f8")), 422, "dtype >f8"),
        (_npy(np.ones((2, 2, D))), 422, "shape (2, 2, 3)"),
        (_npy(good)[:-8], 422, "need 96 bytes of data, the body has 88"),
        (_npy(good) + b"\0" * 8, 422, "the body has 104"),
        (_npy(np.ones((4, D + 1))), 422, "features[0] must have 3 numbers, got 4"),
        (_npy(np.ones((0, D))), 422, "non-empty"),
        (_npy(np.ones((21, D))), 413, "63 feature values exceeds the limit of 60"),
    ]
    for body, status, words in cases:
        got, detail = _refusal(client, body)
        assert (got, words in detail) == (status, True), (words, got, detail)
    bad = good.copy()
    bad[2, 1] = math.nan
    assert _refusal(client, _npy(bad)) == (422, "features[2][1] is nan; features must be finite")
    assert client.get("/rankers/a").json()["impressions"] == 0  # nothing refused was ranked


def test_hot_path_answers_are_counted_under_their_route(client: TestClient) -> None:
    answer = client.post("/rankers/a/rank", json={"features": np.ones((2, D)).tolist()}).json()
    client.post("/rankers/a/feedback", json={"impression": answer["impression"], "labels": [1]})
    client.post("/rankers/a/feedback", json={"impression": "nope", "labels": [1]})
    text = client.get("/metrics").text
    rank = 'oltr_requests_total{method="POST",route="/rankers/{name}/rank",status="200"} 1.0'
    done = 'oltr_requests_total{method="POST",route="/rankers/{name}/feedback",status="200"} 1.0'
    missing = 'oltr_errors_total{route="/rankers/{name}/feedback",status="404"} 1.0'
    assert rank in text and done in text and missing in text
    assert 'oltr_impressions_total{ranker="a"} 1.0' in text
    assert 'oltr_rounds_total{ranker="a"} 1.0' in text
