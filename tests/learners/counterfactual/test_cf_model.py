"""Model files (round trip, refused files), scorers, NDCG helper, and the learners' input checks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from oltr.data.dataset import LetorDataset
from oltr.errors import DataFormatError, InputError
from oltr.learners.counterfactual import (
    ModelFormatError,
    RankingModel,
    fit_counterfactual,
    fit_skyline,
    load_model,
    make_scorer,
    mean_ndcg,
    save_model,
)
from oltr.logs import PositionCounts


def _model(kind: str) -> RankingModel:
    scorer = make_scorer(kind, 3, hidden=4)
    params = np.random.default_rng(0).normal(size=scorer.n_params)
    return RankingModel(scorer, params, "ips", np.array([1.0, 0.5]), {"log": "x.parquet"})


@pytest.mark.parametrize("kind", ["linear", "mlp"])
def test_round_trip_scores_bit_for_bit(tmp_path: Path, kind: str) -> None:
    model = _model(kind)
    path = save_model(model, tmp_path / "sub" / "model.json")
    again = load_model(path)
    x = np.random.default_rng(1).uniform(size=(7, 3))
    assert np.array_equal(again.scores(x), model.scores(x))
    assert again.to_json() == model.to_json()
    assert again.learner == "ips" and again.data == {"log": "x.parquet"}
    assert [p.name for p in path.parent.iterdir()] == ["model.json"]  # no temporary left
    content = json.loads(path.read_text())
    assert content["format"] == "oltr-model" and content["version"] == 1
    assert content["kind"] == kind and content["n_features"] == 3


def test_mlp_scores_match_the_documented_formula() -> None:
    model = _model("mlp")
    layers = model.to_json()["layers"]
    w1, b1 = np.array(layers[0]["weights"]), np.array(layers[0]["bias"])
    w2, b2 = np.array(layers[1]["weights"]), np.array(layers[1]["bias"])
    x = np.random.default_rng(2).uniform(size=(5, 3))
    np.testing.assert_allclose(model.scores(x), (np.tanh(x @ w1 + b1) @ w2)[:, 0] + b2[0])
    assert model.scores(x[0]).shape == ()
    with pytest.raises(InputError, match=r"shape \(n, 3\)"):
        model.scores(np.ones((2, 4)))


def _write(tmp_path: Path, content: Any) -> Path:
    path = tmp_path / "m.json"
    path.write_text(json.dumps(content) if not isinstance(content, str) else content)
    return path


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"format": "other"}, "'format' must be 'oltr-model'"),
        ({"version": 2}, "'version' 2 is not supported"),
        ({"kind": "tree"}, "'kind' must be one of"),
        ({"n_features": 0}, "'n_features' must be a positive integer"),
        ({"weights": [1.0, 2.0]}, r"'weights' must have shape \(3,\), got \(2,\)"),
        ({"weights": [1.0, "a", 2.0]}, "'weights' must be an array of numbers"),
        ({"propensities": [1.0, -0.5]}, "'propensities' must be positive"),
        ({"learner": 3}, "'learner' must be a string"),
    ],
)
def test_bad_linear_files_are_refused_by_key(
    tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    content = _model("linear").to_json() | change
    with pytest.raises(ModelFormatError, match=message) as info:
        load_model(_write(tmp_path, content))
    assert str(tmp_path / "m.json") in str(info.value)
    assert isinstance(info.value, DataFormatError)


def test_nan_and_broken_files_are_refused(tmp_path: Path) -> None:
    content = _model("linear").to_json()
    text = json.dumps(content).replace(str(content["weights"][1]), "NaN", 1)
    with pytest.raises(ModelFormatError, match="'weights' holds a value that is not finite"):
        load_model(_write(tmp_path, text))
    with pytest.raises(ModelFormatError, match=r"not JSON \(line 1"):
        load_model(_write(tmp_path, "{oops"))
    with pytest.raises(ModelFormatError, match="holds a JSON object"):
        load_model(_write(tmp_path, [1, 2]))
    with pytest.raises(InputError, match="does not exist"):
        load_model(tmp_path / "missing.json")


def test_bad_mlp_layers_are_refused(tmp_path: Path) -> None:
    content = _model("mlp").to_json()
    content["layers"][1]["weights"] = [[1.0]] * 3  # fan-in 3, hidden layer has 4 units
    with pytest.raises(ModelFormatError, match=r"'layers\[1\].weights' must have shape \(4, 1\)"):
        load_model(_write(tmp_path, content))
    content["layers"] = content["layers"][:1]
    with pytest.raises(ModelFormatError, match="'layers' must be a list of at least two"):
        load_model(_write(tmp_path, content))


def _tiny() -> tuple[LetorDataset, PositionCounts]:
    ds = LetorDataset(
        features=np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5], [1.0, 1.0]]),
        relevance=np.array([2, 0, 1, 0]), qids=np.array([5, 6]), offsets=np.array([0, 3, 4]),
    )  # fmt: skip
    clicks = np.array([[3.0, 0.0], [0.0, 1.0], [0.0, 0.0], [1.0, 0.0]])
    shown = np.array([[4.0, 0.0], [0.0, 4.0], [0.0, 0.0], [2.0, 0.0]])
    return ds, PositionCounts(clicks, shown)


def test_mean_ndcg_of_the_ideal_and_the_reversed_ranking() -> None:
    ds, _ = _tiny()
    assert mean_ndcg(lambda x: ds.relevance.astype(float), ds) == 1.0
    # Query 5 reversed: grades (0, 1, 2) -> DCG = 1/log2(3) + 3/log2(4); query 6 has no
    # relevant document and counts 1.
    ideal = 3 + 1 / np.log2(3)
    reversed_ndcg = (1 / np.log2(3) + 3 / 2) / ideal
    value = mean_ndcg(lambda x: -ds.relevance.astype(float), ds)
    assert value == pytest.approx((reversed_ndcg + 1.0) / 2, rel=1e-12)


def test_input_errors_name_the_problem() -> None:
    ds, counts = _tiny()
    with pytest.raises(InputError, match="learner 'ips' needs propensities"):
        fit_counterfactual(counts, ds, learner="ips", rng=0)
    with pytest.raises(InputError, match="cover 1 positions but the log shows lists of up to 2"):
        fit_counterfactual(counts, ds, learner="ips", propensities=[1.0], rng=0)
    with pytest.raises(InputError, match="unknown learner 'svm'"):
        fit_counterfactual(counts, ds, learner="svm", rng=0)
    with pytest.raises(InputError, match="clip must be in"):
        fit_counterfactual(counts, ds, learner="naive", rng=0, clip=2.0)
    with pytest.raises(InputError, match="propensities must be positive"):
        fit_counterfactual(counts, ds, learner="ips", propensities=[1.0, 0.0], rng=0)
    with pytest.raises(InputError, match="unknown scorer 'tree'"):
        fit_skyline(ds, scorer="tree", rng=0)
    with pytest.raises(InputError, match="the counts cover 4 documents, the data set has 3"):
        fit_counterfactual(counts, ds.subset([0]), learner="naive", rng=0)
    empty = PositionCounts(np.zeros((4, 2)), np.zeros((4, 2)))
    with pytest.raises(InputError, match="no impression"):
        fit_counterfactual(empty, ds, learner="naive", rng=0)


def test_propensity_estimates_are_accepted_and_normalised() -> None:
    ds, counts = _tiny()

    class Estimate:  # the shape of oltr.estimators.PropensityEstimate
        theta = np.array([2.0, 1.0, 0.5])

    model = fit_counterfactual(counts, ds, learner="ips", propensities=Estimate(), rng=0)
    assert model.propensities is not None
    assert model.propensities.tolist() == [1.0, 0.5]
    assert model.data["sessions"] == 6 and model.data["queries"] == 2


def test_same_seed_same_model() -> None:
    ds, counts = _tiny()
    a = fit_counterfactual(counts, ds, learner="naive", scorer="mlp", hidden=3, rng=4)
    b = fit_counterfactual(counts, ds, learner="naive", scorer="mlp", hidden=3, rng=4)
    assert np.array_equal(a.params, b.params)
