"""The ``fit`` command (``oltr logs fit``): model file, printed NDCG, propensity files, errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from oltr.cli.logs_fit import fit, read_propensities
from oltr.data import load_letor, synthetic_letor
from oltr.data.letor import write_letor
from oltr.errors import InputError
from oltr.learners.counterfactual import load_model, mean_ndcg
from oltr.logs.io import write_log
from oltr.logs.simulate import simulate_log, train_logger

app = typer.Typer()
app.command()(fit)


@app.callback()
def _group() -> None:
    """Keep ``fit`` a named subcommand."""


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("fit")
    ds = synthetic_letor(n_queries=40, n_features=5, rng=0)
    write_letor(ds.subset(np.arange(30)), root / "train.txt")
    write_letor(ds.subset(np.arange(30, 40)), root / "valid.txt")
    train = load_letor(root / "train.txt")
    log = simulate_log(train, train_logger(train, rng=0), n_sessions=3000, eta=2.0, rng=1)
    write_log(log, root / "log.jsonl")
    (root / "theta.json").write_text(
        json.dumps({"method": "em", "propensities": (1 / np.arange(1, 11) ** 2).tolist()})
    )
    return {"root": root, "train": root / "train.txt", "valid": root / "valid.txt",
            "log": root / "log.jsonl", "theta": root / "theta.json"}  # fmt: skip


def _run(files: dict[str, Path], *extra: str) -> tuple[int, str, BaseException | None]:
    out = files["root"] / "model.json"
    args = ["fit", str(files["log"]), "--data", str(files["train"]), "--out", str(out), *extra]
    result = CliRunner().invoke(app, args)
    return result.exit_code, result.output, result.exception


def test_fit_writes_the_model_and_prints_its_ndcg(files: dict[str, Path]) -> None:
    code, output, exc = _run(files, "--propensities", str(files["theta"]),
                             "--valid", str(files["valid"]))  # fmt: skip
    assert code == 0, (output, exc)
    model = load_model(files["root"] / "model.json")
    assert model.learner == "ips" and model.data["sessions"] == 3000
    assert model.data["propensities_file"] == str(files["theta"])
    assert model.propensities is not None
    np.testing.assert_allclose(model.propensities, 1 / np.arange(1, 11) ** 2)
    train = mean_ndcg(model, load_letor(files["train"]))
    valid = mean_ndcg(model, load_letor(files["valid"]))
    assert f"train NDCG@10 {train:.4f}" in output
    assert f"valid NDCG@10 {valid:.4f}" in output


def test_fit_with_dla_needs_no_propensities(files: dict[str, Path]) -> None:
    code, output, exc = _run(files, "--learner", "dla")
    assert code == 0, (output, exc)
    model = load_model(files["root"] / "model.json")
    assert model.kind == "linear" and model.learner == "dla"
    assert "propensities 1.0000" in output


def test_fit_estimates_propensities_with_a_method(files: dict[str, Path]) -> None:
    code, output, exc = _run(files, "--method", "em", "--scorer", "mlp")
    assert code == 0, (output, exc)
    model = load_model(files["root"] / "model.json")
    assert model.data["propensity_method"] == "em" and model.kind == "mlp"


def test_fit_refuses_bad_arguments(files: dict[str, Path]) -> None:
    code, _, exc = _run(files)
    assert isinstance(exc, InputError) and "needs propensities" in str(exc)
    code, _, exc = _run(files, "--learner", "svm")
    assert isinstance(exc, InputError) and "--learner must be one of" in str(exc)
    code, _, exc = _run(files, "--propensities", str(files["theta"]), "--method", "em")
    assert isinstance(exc, InputError) and "not both" in str(exc)


def test_read_propensities_accepts_lists_and_objects_and_names_bad_files(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    path.write_text("[1, 0.5]")
    assert read_propensities(path) == [1.0, 0.5]
    path.write_text('{"propensities": [1, 0.25], "ci": null}')
    assert read_propensities(path) == [1.0, 0.25]
    for bad in ('{"propensities": [1, 0]}', '{"theta": [1]}', "[]", "[true]", "{oops"):
        path.write_text(bad)
        with pytest.raises(InputError, match=str(path)):
            read_propensities(path)
    with pytest.raises(InputError, match="does not exist"):
        read_propensities(tmp_path / "none.json")
