"""The ``normalize`` choice: ``"auto"`` scales raw files per query and leaves [0, 1] data alone.

Expected values are written by hand from the files below; the shared LETOR files are
compared with their own parsed values (a query-normalised file must come back bit
for bit) and the raw MSLR sample with LETOR's QueryLevelNorm formula.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from oltr.cli import app
from oltr.data import load_letor, synthetic_letor, write_letor
from oltr.data.dataset import LetorDataset, normalize_per_query
from oltr.data.normalization import check_normalize, resolve_normalize, scale_list
from oltr.envs import LetorStreamEnv
from oltr.experiments.heldout import check_heldout

# Two queries; feature 2 of query 1 is constant (3.0), values reach 40: a raw file.
RAW = (
    "2 qid:1 1:10 2:3 3:0.5\n0 qid:1 1:30 2:3 3:0.25\n1 qid:1 1:20 2:3 3:0\n1 qid:2 1:-2 2:40 3:1\n"
)
RAW_SCALED = [[0.0, 0.0, 1.0], [1.0, 0.0, 0.5], [0.5, 0.0, 0.0], [0.0, 0.0, 0.0]]
# Inside [0, 1], but feature 2 is a constant 0.5 in query 1 (min-max would make it 0).
UNIT = "1 qid:1 1:0.25 2:0.5\n0 qid:1 1:1 2:0.5\n1 qid:2 1:0 2:1\n0 qid:2 1:0.75 2:0\n"
UNIT_VALUES = [[0.25, 0.5], [1.0, 0.5], [0.0, 1.0], [0.75, 0.0]]


@pytest.fixture
def raw_file(tmp_path: Path) -> Path:
    path = tmp_path / "raw.txt"
    path.write_text(RAW)
    return path


@pytest.fixture
def unit_file(tmp_path: Path) -> Path:
    path = tmp_path / "unit.txt"
    path.write_text(UNIT)
    return path


def test_auto_scales_a_raw_file_per_query(raw_file: Path) -> None:
    assert load_letor(raw_file, cache=False, normalize="auto").features.tolist() == RAW_SCALED
    assert load_letor(raw_file, cache=False, normalize=True).features.tolist() == RAW_SCALED
    assert load_letor(raw_file, cache=False).features[0].tolist() == [10.0, 3.0, 0.5]  # reader


def test_auto_keeps_unit_interval_data_even_its_constant_features(unit_file: Path) -> None:
    assert load_letor(unit_file, cache=False, normalize="auto").features.tolist() == UNIT_VALUES
    # Always scaling would zero the constant 0.5: "auto" does not touch data already in [0, 1].
    assert load_letor(unit_file, cache=False, normalize=True).features[:2, 1].tolist() == [0, 0]


def test_auto_keeps_synthetic_data_bit_for_bit(tmp_path: Path) -> None:
    ds = synthetic_letor(n_queries=30, n_features=5, rng=3)
    write_letor(ds, tmp_path / "synth.txt")
    got = load_letor(tmp_path / "synth.txt", cache=False, normalize="auto").features
    assert np.array_equal(got, ds.features)


def test_the_decision_is_the_whole_files_not_the_kept_queries(tmp_path: Path) -> None:
    # Query 2 alone leaves [0, 1]; dropping it (no relevant item) still scales query 1.
    path = tmp_path / "mixed.txt"
    path.write_text("1 qid:1 1:0.2\n0 qid:1 1:0.6\n0 qid:2 1:9\n0 qid:2 1:0\n")
    ds = load_letor(path, cache=False, normalize="auto", drop_no_relevant=True)
    assert ds.features.ravel().tolist() == [0.0, 1.0]


def test_cache_keeps_auto_and_true_apart(unit_file: Path, raw_file: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    assert load_letor(unit_file, cache_dir=cache, normalize=True).features[0, 1] == 0.0
    for _ in range(2):  # a normalize=True entry must not answer an "auto" load
        got = load_letor(unit_file, cache_dir=cache, normalize="auto")
        assert got.features.tolist() == UNIT_VALUES
    for _ in range(2):  # stored, then read back from the cache
        got = load_letor(raw_file, cache_dir=cache, normalize="auto")
        assert got.features.tolist() == RAW_SCALED and got.source == str(raw_file)


@pytest.mark.parametrize(
    ("value", "error", "match"),
    [
        ("yes", ValueError, "normalize must be true, false or 'auto', got 'yes'"),
        (1, TypeError, "normalize must be a bool or 'auto', got 1"),
        (None, TypeError, "normalize must be a bool or 'auto'"),
    ],
)
def test_bad_choices_are_named(raw_file: Path, value: object, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        load_letor(raw_file, cache=False, normalize=value)  # type: ignore[arg-type]
    with pytest.raises(error, match="heldout.normalize must be"):
        check_heldout({"path": "t.txt", "normalize": value})


def test_check_and_resolve() -> None:
    assert [check_normalize(v) for v in (True, False, "auto", np.bool_(True))] == [
        True,
        False,
        "auto",
        True,
    ]
    X = np.array([[0.0, 0.5], [-0.5, 0.25]])
    assert resolve_normalize("auto", X) and not resolve_normalize("auto", X + 0.5)
    assert resolve_normalize("auto", X + 0.75)  # 1.25 > 1
    assert not resolve_normalize("auto", np.zeros((0, 3)))


def test_stream_and_heldout_default_to_auto(raw_file: Path, unit_file: Path) -> None:
    assert check_heldout({"path": "t.txt"})["normalize"] == "auto"
    assert LetorStreamEnv(path=str(raw_file)).data().features.tolist() == RAW_SCALED
    assert LetorStreamEnv(path=str(unit_file)).data().features.tolist() == UNIT_VALUES
    raw = LetorStreamEnv(path=str(raw_file), normalize=False).data().features
    assert raw[:, 0].tolist() == [10.0, 30.0, 20.0, -2.0]


def _info(path: Path, *options: str) -> dict[str, object]:
    result = CliRunner().invoke(app, ["data", "info", str(path), "--json", "--no-cache", *options])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def test_data_info_says_what_loading_does(raw_file: Path, unit_file: Path) -> None:
    raw = _info(raw_file)
    assert raw["feature_range"] == [-2.0, 40.0]  # the file's own values
    assert raw["normalization"] == {
        "choice": "auto",
        "applied": True,
        "reason": "min-max per query: values outside [0, 1] (-2 .. 40)",
    }
    assert _info(raw_file, "--normalize", "false")["normalization"]["applied"] is False  # type: ignore[index]
    unit = _info(unit_file)["normalization"]
    assert unit == {
        "choice": "auto",
        "applied": False,
        "reason": "none: every value lies in [0, 1]",
    }
    assert _info(unit_file, "--normalize", "true")["normalization"]["applied"] is True  # type: ignore[index]
    table = CliRunner().invoke(app, ["data", "info", str(raw_file)], env={"COLUMNS": "160"})
    assert "on load (normalize=auto)" in table.stdout and "min-max per query" in table.stdout


# ---------------------------------------------------------------------------------- real files

QUERY_NORMALISED = [
    f"LETOR4.0/MQ2008/Fold{fold}/{part}.txt.gz"
    for fold in range(1, 6)
    for part in ("train", "vali", "test")
] + [f"LETOR3.0/OHSUMED/Fold1/{part}.txt.gz" for part in ("train", "vali", "test")]
UNIT_SCALED = [
    "LightGBM-lambdarank-example/rank.train.gz",
    "LightGBM-lambdarank-example/rank.test.gz",
]
RAW_MSLR = [
    "MSLR-WEB-sample/mslr_fold1_valid_sample.txt.gz",
    "MSLR-WEB-sample/mslr_fold1_test_sample.txt.gz",
]


@pytest.mark.shared_data
@pytest.mark.parametrize("name", QUERY_NORMALISED + UNIT_SCALED)
def test_data_in_the_unit_interval_loads_bit_for_bit(shared_data: Path, name: str) -> None:
    # What the reproductions stream (MQ2008, OHSUMED, LightGBM's example) keeps its values.
    raw = load_letor(shared_data / name, normalize=False).features
    auto = load_letor(shared_data / name, normalize="auto").features
    assert np.array_equal(auto, raw)


@pytest.mark.shared_data
@pytest.mark.parametrize("name", QUERY_NORMALISED)
def test_query_normalised_letor_has_no_constant_nonzero_feature(
    shared_data: Path, name: str
) -> None:
    # So even normalize=true is the identity there (min-max of 0..1 is exact; it zeroes
    # only constant features, and these files hold none that are not 0 already).
    raw = load_letor(shared_data / name, normalize=False).features
    assert np.array_equal(load_letor(shared_data / name, normalize=True).features, raw)


@pytest.mark.shared_data
@pytest.mark.parametrize("name", RAW_MSLR)
def test_raw_mslr_is_min_max_scaled_per_query(shared_data: Path, name: str) -> None:
    raw = load_letor(shared_data / name, normalize=False)
    assert raw.features.max() > 1e6  # the raw scale this is about
    got = load_letor(shared_data / name, normalize="auto").features
    for q in range(raw.n_queries):  # QueryLevelNorm written out, query by query
        lo, hi = raw.offsets[q], raw.offsets[q + 1]
        X = raw.features[lo:hi]
        span = X.max(axis=0) - X.min(axis=0)
        want = np.where(span > 0, (X - X.min(axis=0)) / np.where(span > 0, span, 1), 0.0)
        np.testing.assert_allclose(got[lo:hi], want, rtol=0, atol=1e-15)


@pytest.mark.parametrize("seed", range(20))
def test_one_served_list_scales_bit_for_bit_as_the_same_query_of_a_file(seed: int) -> None:
    """``scale_list`` (what ``oltr serve`` applies to a request) is ``normalize_per_query`` of a
    one-query data set, to the last bit: lists of 1–60 items, signs and scales up to 1e8,
    constant and repeated columns."""
    rng = np.random.default_rng(seed)
    m, d = int(rng.integers(1, 61)), int(rng.integers(1, 9))
    x = rng.standard_normal((m, d)) * 10.0 ** rng.integers(-3, 9, d)
    x[:, rng.integers(d)] = rng.standard_normal()  # a constant column becomes 0
    x[rng.integers(m)] = x[0]  # repeated rows: minima and maxima attained twice
    one = LetorDataset(
        features=x, relevance=np.zeros(m, int), qids=np.array([1]), offsets=np.array([0, m])
    )
    want = normalize_per_query(one).features
    got = scale_list(x)
    assert got.dtype == np.float64 and got.tobytes() == want.tobytes()
    assert got.min() >= 0.0 and got.max() <= 1.0
