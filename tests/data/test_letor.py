"""LETOR reader: well-formed and malformed files, group files and the options, by hand."""

from __future__ import annotations

import gzip
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from letor_fixtures import DENSE_R, DENSE_X, FIXTURES, MALFORMED, load_uncached

from oltr.data.dataset import LetorDataset, normalize_per_query
from oltr.data.svmlight import LetorFormatError

# ---------------------------------------------------------------------------
# Reading well-formed files


@pytest.mark.parametrize("name", ["dense.txt", "dense_crlf.txt", "dense.txt.gz"])
def test_dense_file_with_comments_crlf_and_gzip(name: str) -> None:
    ds = load_uncached(FIXTURES / name)
    assert ds.features.tolist() == DENSE_X
    assert ds.relevance.tolist() == DENSE_R
    assert ds.qids.tolist() == [10, 20]
    assert ds.offsets.tolist() == [0, 3, 5]
    assert ds.features.dtype == np.float64 and ds.features.flags.c_contiguous
    assert ds.relevance.dtype == np.int64 and ds.offsets.dtype == np.int64
    assert ds.source == str(FIXTURES / name)


def test_crlf_fixture_really_has_crlf_and_gzip_fixture_really_is_gzip() -> None:
    assert b"\r\n" in (FIXTURES / "dense_crlf.txt").read_bytes()
    assert (FIXTURES / "dense.txt.gz").read_bytes()[:2] == b"\x1f\x8b"


def test_gzip_is_recognised_by_content_not_name(tmp_path: Path) -> None:
    renamed = tmp_path / "data.letor"
    shutil.copy(FIXTURES / "dense.txt.gz", renamed)
    assert load_uncached(renamed).features.tolist() == DENSE_X


def test_sparse_indices_comments_and_blank_lines() -> None:
    ds = load_uncached(FIXTURES / "sparse.txt")
    assert ds.features.tolist() == [[0, 0.5, 0], [3, 0, -15], [0, 0, 7], [0, 0, 0]]
    assert ds.relevance.tolist() == [1, 0, 2, 0]
    assert ds.qids.tolist() == [1, 2]
    assert ds.offsets.tolist() == [0, 2, 4]


def test_non_contiguous_qids_are_grouped_by_first_appearance_keeping_line_order() -> None:
    ds = load_uncached(FIXTURES / "noncontiguous.txt")
    # qid 5: lines 1, 3, 6; qid 3: lines 2, 4; qid 9: line 5 (feature 1 = line number).
    assert ds.qids.tolist() == [5, 3, 9]
    assert ds.offsets.tolist() == [0, 3, 5, 6]
    assert ds.features[:, 0].tolist() == [1, 3, 6, 2, 4, 5]
    assert ds.relevance.tolist() == [1, 2, 0, 0, 0, 1]


NOGROUP_X = [[0.1, 0.2], [0.3, 0.0], [0.0, 0.9], [0.5, 0.5], [1.0, 0.0]]


def _check_nogroup(ds: LetorDataset) -> None:
    assert ds.features.tolist() == NOGROUP_X
    assert ds.relevance.tolist() == [1, 0, 2, 0, 1]
    assert ds.offsets.tolist() == [0, 2, 5]
    assert ds.qids.tolist() == [0, 1]  # no qid in the file: the list's index


def test_group_file_found_beside_the_file() -> None:
    _check_nogroup(load_uncached(FIXTURES / "nogroup.txt"))


def test_group_file_given_explicitly(tmp_path: Path) -> None:
    shutil.copy(FIXTURES / "nogroup.txt", tmp_path / "data")
    shutil.copy(FIXTURES / "nogroup.txt.query", tmp_path / "sizes.txt")
    _check_nogroup(load_uncached(tmp_path / "data", group_file=tmp_path / "sizes.txt"))


def _gzip_copy(src: Path, dst: Path) -> None:
    dst.write_bytes(gzip.compress(src.read_bytes()))


@pytest.mark.parametrize(
    ("data_name", "group_name"),
    [
        ("rank.train", "rank.train.query"),  # LightGBM
        ("rank.train", "rank.train.group"),  # XGBoost
        ("rank.train", "rank.train.query.gz"),
        ("rank.train.gz", "rank.train.query.gz"),  # as in shared/data
        ("rank.train.gz", "rank.train.group"),  # .gz stripped
        ("rank.train.gz", "rank.train.gz.query"),
        ("rank.train", "rank.train.gz.group"),  # .gz added
    ],
)
def test_group_file_auto_detection_names(tmp_path: Path, data_name: str, group_name: str) -> None:
    copy = _gzip_copy if data_name.endswith(".gz") else shutil.copyfile
    copy(FIXTURES / "nogroup.txt", tmp_path / data_name)
    gcopy = _gzip_copy if group_name.endswith(".gz") else shutil.copyfile
    gcopy(FIXTURES / "nogroup.txt.query", tmp_path / group_name)
    _check_nogroup(load_uncached(tmp_path / data_name))


def test_auto_detected_group_file_is_ignored_when_lines_carry_qid(tmp_path: Path) -> None:
    shutil.copy(FIXTURES / "dense.txt", tmp_path / "d.txt")
    (tmp_path / "d.txt.query").write_text("1\n4\n")  # would contradict the qids
    assert load_uncached(tmp_path / "d.txt").offsets.tolist() == [0, 3, 5]


def test_explicit_group_file_consistent_with_qids_defines_lists(tmp_path: Path) -> None:
    (tmp_path / "g").write_text("3\n2\n")
    ds = load_uncached(FIXTURES / "dense.txt", group_file=tmp_path / "g")
    assert ds.offsets.tolist() == [0, 3, 5] and ds.qids.tolist() == [10, 20]


def test_n_features_pads_with_zero_columns() -> None:
    ds = load_uncached(FIXTURES / "sparse.txt", n_features=5)
    assert ds.features.shape == (4, 5)
    assert ds.features[:, 3:].tolist() == [[0, 0]] * 4
    assert ds.features[1].tolist() == [3, 0, -15, 0, 0]


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "3"])
def test_n_features_must_be_a_positive_integer(bad: object) -> None:
    with pytest.raises(ValueError, match="n_features"):
        load_uncached(FIXTURES / "dense.txt", n_features=bad)


def test_missing_file_is_named() -> None:
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        load_uncached(FIXTURES / "nope.txt")
    with pytest.raises(FileNotFoundError, match="nope.query"):
        load_uncached(FIXTURES / "nogroup.txt", group_file=FIXTURES / "nope.query")


# ---------------------------------------------------------------------------
# Malformed input: file, line and problem

MALFORMED_CASES = [
    # (data file, group file or None, line or None, problem regex)
    ("bad_value.txt", None, 3, r"bad value in token '2:abc'"),
    ("no_colon.txt", None, 2, r"bad token '7': expected <index>:<value>"),
    ("nan_value.txt", None, 2, r"non-finite value in token '1:nan'"),
    ("inf_value.txt", None, 4, r"non-finite value in token '2:-inf'"),
    ("nan_grade.txt", None, 2, r"grade 'nan' is not finite"),
    ("fractional_grade.txt", None, 1, r"grade '1.5' is not a non-negative integer"),
    ("negative_grade.txt", None, 2, r"grade '-1' is not a non-negative integer"),
    ("bad_grade.txt", None, 1, r"bad grade 'x': not a number"),
    ("index_zero.txt", None, 2, r"feature index 0 .* indices are 1-based"),
    ("unsorted.txt", None, 2, r"feature indices must increase along a line: 1 after 2"),
    ("duplicate_index.txt", None, 1, r"feature indices must increase along a line: 1 after 1"),
    ("missing_qid_later.txt", None, 3, r"missing qid \(line 1 has one\)"),
    ("missing_qid_first.txt", None, 1, r"missing qid \(line 2 has one\)"),
    ("no_qid.txt", None, 2, r"missing qid: no line carries 'qid:' and no group file"),
    ("bad_qid.txt", None, 2, r"bad qid token 'qid:abc'"),
    ("misplaced_qid.txt", None, 2, r"misplaced 'qid:1': qid must directly follow the grade"),
    ("bad_index_value.txt", None, 1, r"bad value in token '1:x:y'"),
    ("bad_index.txt", None, 1, r"bad feature index in token 'a:0.5'"),
    ("empty.txt", None, None, r"empty file: no data lines"),
    ("comments_only.txt", None, None, r"empty file: no data lines"),
    ("truncated.txt.gz", None, None, r"corrupt gzip data"),
]


@pytest.mark.parametrize(
    ("name", "group", "line", "problem"), MALFORMED_CASES, ids=[c[0] for c in MALFORMED_CASES]
)
def test_malformed_file_names_file_line_and_problem(
    name: str, group: str | None, line: int | None, problem: str
) -> None:
    path = MALFORMED / name
    where = re.escape(str(path)) + (f":{line}: " if line is not None else ": ")
    with pytest.raises(LetorFormatError, match="^" + where + problem):
        load_uncached(path)


GROUP_CASES = [
    # (data file, group file, expected message (regex, after the group file name))
    ("nogroup.txt", "short.query", r": group sizes sum to 4 but .*nogroup.txt has 5 data lines"),
    ("nogroup.txt", "bad_size.query", r":2: bad group size 'x': expected a positive integer"),
    ("nogroup.txt", "zero_size.query", r":2: group size 0 must be >= 1"),
    ("nogroup.txt", "empty.query", r": empty group file"),
]


@pytest.mark.parametrize(("data", "group", "problem"), GROUP_CASES, ids=[c[1] for c in GROUP_CASES])
def test_malformed_group_file_names_file_line_and_problem(
    data: str, group: str, problem: str
) -> None:
    gpath = MALFORMED / group
    with pytest.raises(LetorFormatError, match="^" + re.escape(str(gpath)) + problem):
        load_uncached(FIXTURES / data, group_file=gpath)


def test_group_that_mixes_qids_names_the_data_line() -> None:
    path = MALFORMED / "qids_split.txt"
    # Sizes 3, 1: the first group takes line 3, whose qid 2 differs from qid 1.
    with pytest.raises(
        LetorFormatError, match="^" + re.escape(str(path)) + r":3: qid 2 differs from qid 1"
    ):
        load_uncached(path, group_file=MALFORMED / "qids_split.query")


def test_index_above_n_features_names_the_line() -> None:
    path = FIXTURES / "sparse.txt"
    with pytest.raises(
        LetorFormatError,
        match="^" + re.escape(str(path)) + r":4: feature index 3 exceeds n_features=2",
    ):
        load_uncached(path, n_features=2)


def test_format_error_is_a_value_error() -> None:
    assert issubclass(LetorFormatError, ValueError)


# ---------------------------------------------------------------------------
# Options, by hand


def test_normalize_per_query_by_hand() -> None:
    ds = load_uncached(FIXTURES / "sparse.txt", normalize=True)
    # query 1: f1 (0, 3) -> (0, 1); f2 (0.5, 0) -> (1, 0); f3 (0, -15) -> (1, 0)
    # query 2: f1 (0, 0) constant -> 0; f2 constant -> 0; f3 (7, 0) -> (1, 0)
    assert ds.features.tolist() == [[0, 1, 1], [1, 0, 0], [0, 0, 1], [0, 0, 0]]
    ds = load_uncached(FIXTURES / "dense.txt", normalize=True)
    # query 20: f1 (0.2, 0.8) -> (0, 1); f2 constant 0.4 -> 0; f3 (0.6, 0.1) -> (1, 0)
    assert ds.features[3:].tolist() == [[0, 0, 1], [1, 0, 0]]
    # query 10 is already min-max normalised: unchanged.
    assert ds.features[:3].tolist() == DENSE_X[:3]


def test_normalize_general_case() -> None:
    X = np.array([[2.0, 10.0], [4.0, 10.0], [3.0, 10.0], [5.0, -1.0], [1.0, -3.0]])
    ds = LetorDataset(
        features=X, relevance=np.zeros(5, int), qids=np.array([1, 2]), offsets=np.array([0, 3, 5])
    )
    out = normalize_per_query(ds).features
    np.testing.assert_array_equal(out, [[0, 0], [1, 0], [0.5, 0], [1, 1], [0, 0]])


def test_drop_no_relevant_by_hand() -> None:
    ds = load_uncached(FIXTURES / "dense.txt", drop_no_relevant=True)
    # query 20 has grades (0, 0): dropped.
    assert ds.qids.tolist() == [10]
    assert ds.offsets.tolist() == [0, 3]
    assert ds.features.tolist() == DENSE_X[:3]
    assert ds.relevance.tolist() == [2, 0, 1]


def test_drop_no_relevant_everything_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "z.txt").write_text("0 qid:1 1:1\n0 qid:2 1:2\n")
    with pytest.raises(ValueError, match="leaves no query"):
        load_uncached(tmp_path / "z.txt", drop_no_relevant=True)


def test_drop_then_normalize_combined() -> None:
    ds = load_uncached(FIXTURES / "sparse.txt", drop_no_relevant=True, normalize=True)
    assert ds.qids.tolist() == [1, 2]  # both queries hold a relevant document
    assert ds.features.tolist() == [[0, 1, 1], [1, 0, 0], [0, 0, 1], [0, 0, 0]]
