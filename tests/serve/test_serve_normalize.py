"""A served ranker scales each request's features per list (``normalize``), as the loader does.

Raw web features (MSLR-WEB: counts, BM25, PageRank up to 5·10^7) reach a served ranker as they
are; the learners' defaults assume lists in [0, 1] (``oltr.data.normalization``). ``PUT`` defaults
to ``"normalize": "auto"``: a list with a value outside [0, 1] is min–max scaled per feature
(LETOR's QueryLevelNorm, :func:`oltr.data.normalization.scale_list`) before the learner sees it
and the store logs it; a list inside [0, 1] is left bit for bit as sent. So a served ranker on
raw lists is, bit for bit, the in-process learner on the scaled lists, which is what the runner
trains on when it reads the same file (``tests/data/test_raw_mslr_learning.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from oltr.build import make_learner
from oltr.data.normalization import scale_list
from oltr.feedback import TopKFeedback
from oltr.serve import ServeSettings, Store, create_app
from oltr.serve.protocol import RankerDefinition
from oltr.serve.rankers import Rankers
from oltr.types import Context, RunGenerators

D, M = 4, 7
RTOPK = {"learner": "rtopk", "params": {"surrogate": "squared"}, "n_features": D, "seed": 5}
#: Feature scales of a raw web list: a count, a BM25-like score, a PageRank-like value, a flag.
SCALES = np.array([3.0e4, 25.0, 5.0e7, 1.0])


def _raw(t: int) -> np.ndarray:
    rng = np.random.default_rng([7, t])
    return rng.random((M, D)) * SCALES


def _grades(t: int) -> np.ndarray:
    return np.random.default_rng([8, t]).integers(0, 5, M).astype(float)


@pytest.fixture
def client(tmp_path: Path) -> TestClient:
    return TestClient(create_app(ServeSettings(store=tmp_path / "s.db")))


def test_put_defaults_to_auto_and_refuses_other_values(client: TestClient) -> None:
    resp = client.put("/rankers/r", json=RTOPK)
    assert resp.status_code == 201, resp.text
    assert resp.json()["definition"]["normalize"] == "auto"
    for bad in ("yes", 1, None):
        resp = client.put("/rankers/bad", json={**RTOPK, "normalize": bad})
        assert resp.status_code == 422 and "normalize" in resp.text, (bad, resp.text)


def test_raw_lists_are_learned_from_scaled_bit_for_bit(tmp_path: Path) -> None:
    """Ten rounds of raw lists: the served RTop-kF is the in-process one on scale_list(x)."""
    store = Store(tmp_path / "s.db")
    rankers = Rankers(store, snapshot_every=100)
    rankers.put("r", RankerDefinition(**{**RTOPK, "normalize": "auto"}))
    ranker = rankers.get("r")
    rngs = RunGenerators.from_keys(RTOPK["seed"], "learner", "rtopk", reps=[0])
    reference = make_learner("rtopk", RTOPK["params"], n_runs=1, rngs=rngs)
    for t in range(1, 11):
        raw = _raw(t)
        out = ranker.rank(raw.tolist())
        ctx = Context(t=t, n_items=M, features=scale_list(raw))
        expected = reference.rank(ctx)
        assert out["order"] == expected[0].tolist()
        logged = store.impression("r", out["impression"])
        assert logged is not None and logged.features is not None
        assert logged.features.tobytes() == scale_list(raw).tobytes()  # what the learner saw
        label = _grades(t)[expected[0][0]]
        ranker.feedback(out["impression"], {"labels": [float(label)]}, 3600)
        reference.update(ctx, expected, TopKFeedback(expected, np.array([[label]])))
    served = np.asarray(ranker.learner.weights_)  # type: ignore[attr-defined]
    assert np.array_equal(served, np.asarray(reference.weights_))  # type: ignore[attr-defined]
    assert np.abs(served).sum() > 0  # it stepped
    store.close()


@pytest.mark.parametrize(
    ("normalize", "features", "scaled"),
    [
        ("auto", "unit", False),  # inside [0, 1]: left as sent
        ("auto", "raw", True),
        (True, "unit", True),
        (False, "raw", False),
    ],
)
def test_what_is_logged(client: TestClient, normalize: Any, features: str, scaled: bool) -> None:
    x = _raw(1) if features == "raw" else _raw(1) / SCALES
    assert client.put("/rankers/r", json={**RTOPK, "normalize": normalize}).status_code == 201
    out = client.post("/rankers/r/rank", json={"features": x.tolist()})
    assert out.status_code == 200, out.text
    impression = out.json()["impression"]
    store: Store = client.app.state.store  # type: ignore[attr-defined]
    logged = store.impression("r", impression)
    assert logged is not None and logged.features is not None
    want = scale_list(x) if scaled else x
    assert logged.features.tobytes() == want.tobytes()


def test_a_definition_stored_without_the_field_keeps_serving_raw_lists(tmp_path: Path) -> None:
    """Stores written before ``normalize`` existed hold no such key: their rankers stay raw."""
    stored = {k: v for k, v in RankerDefinition(**RTOPK).to_dict().items() if k != "normalize"}
    defn = RankerDefinition(**stored)
    assert defn.normalize is False
    store = Store(tmp_path / "s.db")
    Rankers(store, snapshot_every=100).put("r", defn)
    out = Rankers(store, snapshot_every=100).get("r").rank(_raw(1).tolist())
    logged = store.impression("r", out["impression"])
    assert logged is not None and logged.features is not None
    assert logged.features.tobytes() == _raw(1).tobytes()
    store.close()


def test_putting_an_earlier_releases_ranker_again_is_still_the_same_ranker(tmp_path: Path) -> None:
    """A client that PUTs its unchanged body at every start keeps getting 200, not 409."""
    stored = {k: v for k, v in RankerDefinition(**RTOPK).to_dict().items() if k != "normalize"}
    store = Store(tmp_path / "s.db")
    Rankers(store, snapshot_every=100).put("r", RankerDefinition(**stored))
    store.close()
    with TestClient(create_app(ServeSettings(store=tmp_path / "s.db"))) as http:
        again = http.put("/rankers/r", json=RTOPK)
        assert again.status_code == 200, again.text
        assert again.json()["definition"]["normalize"] is False
        changed = http.put("/rankers/r", json={**RTOPK, "normalize": "auto"})
        assert changed.status_code == 409, changed.text
