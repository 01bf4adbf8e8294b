"""LETOR reader, dataset, cache, options, writer, stream and summary."""

from __future__ import annotations

import gzip
import hashlib
import os
import re
import shutil
import tempfile
import time
from itertools import permutations
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import oltr.data.cache as letor_cache
import oltr.data.letor as letor
import oltr.data.svmlight as svmlight
import oltr.data.tokenizer as tokenizer
from oltr.data.cache import cache_root
from oltr.data.dataset import LetorDataset, normalize_per_query, summarize
from oltr.data.letor import load_letor, write_letor
from oltr.data.stream import QueryStream
from oltr.data.svmlight import LetorFormatError

FIXTURES = Path(__file__).parents[1] / "fixtures" / "letor"
MALFORMED = FIXTURES / "malformed"

#: Error rate of each statistical test in this file.
ALPHA = 0.001

# tests/fixtures/letor/dense.txt, typed in by hand.
DENSE_X = [
    [0.5, 1.0, 0.25],
    [0.0, 0.5, 1.0],
    [1.0, 0.0, 0.0],
    [0.2, 0.4, 0.6],
    [0.8, 0.4, 0.1],
]
DENSE_R = [2, 0, 1, 0, 0]


@pytest.fixture
def cache_dir(tmp_path: Path) -> Path:
    return tmp_path / "cache"


def _load(path: Path, **kw: object) -> LetorDataset:
    return load_letor(path, cache=False, **kw)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------
# Reading well-formed files


@pytest.mark.parametrize("name", ["dense.txt", "dense_crlf.txt", "dense.txt.gz"])
def test_dense_file_with_comments_crlf_and_gzip(name: str) -> None:
    ds = _load(FIXTURES / name)
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
    assert _load(renamed).features.tolist() == DENSE_X


def test_sparse_indices_comments_and_blank_lines() -> None:
    ds = _load(FIXTURES / "sparse.txt")
    assert ds.features.tolist() == [[0, 0.5, 0], [3, 0, -15], [0, 0, 7], [0, 0, 0]]
    assert ds.relevance.tolist() == [1, 0, 2, 0]
    assert ds.qids.tolist() == [1, 2]
    assert ds.offsets.tolist() == [0, 2, 4]


def test_non_contiguous_qids_are_grouped_by_first_appearance_keeping_line_order() -> None:
    ds = _load(FIXTURES / "noncontiguous.txt")
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
    _check_nogroup(_load(FIXTURES / "nogroup.txt"))


def test_group_file_given_explicitly(tmp_path: Path) -> None:
    shutil.copy(FIXTURES / "nogroup.txt", tmp_path / "data")
    shutil.copy(FIXTURES / "nogroup.txt.query", tmp_path / "sizes.txt")
    _check_nogroup(_load(tmp_path / "data", group_file=tmp_path / "sizes.txt"))


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
    _check_nogroup(_load(tmp_path / data_name))


def test_auto_detected_group_file_is_ignored_when_lines_carry_qid(tmp_path: Path) -> None:
    shutil.copy(FIXTURES / "dense.txt", tmp_path / "d.txt")
    (tmp_path / "d.txt.query").write_text("1\n4\n")  # would contradict the qids
    assert _load(tmp_path / "d.txt").offsets.tolist() == [0, 3, 5]


def test_explicit_group_file_consistent_with_qids_defines_lists(tmp_path: Path) -> None:
    (tmp_path / "g").write_text("3\n2\n")
    ds = _load(FIXTURES / "dense.txt", group_file=tmp_path / "g")
    assert ds.offsets.tolist() == [0, 3, 5] and ds.qids.tolist() == [10, 20]


def test_n_features_pads_with_zero_columns() -> None:
    ds = _load(FIXTURES / "sparse.txt", n_features=5)
    assert ds.features.shape == (4, 5)
    assert ds.features[:, 3:].tolist() == [[0, 0]] * 4
    assert ds.features[1].tolist() == [3, 0, -15, 0, 0]


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "3"])
def test_n_features_must_be_a_positive_integer(bad: object) -> None:
    with pytest.raises(ValueError, match="n_features"):
        _load(FIXTURES / "dense.txt", n_features=bad)


def test_missing_file_is_named() -> None:
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        _load(FIXTURES / "nope.txt")
    with pytest.raises(FileNotFoundError, match="nope.query"):
        _load(FIXTURES / "nogroup.txt", group_file=FIXTURES / "nope.query")


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
        _load(path)


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
        _load(FIXTURES / data, group_file=gpath)


def test_group_that_mixes_qids_names_the_data_line() -> None:
    path = MALFORMED / "qids_split.txt"
    # Sizes 3, 1: the first group takes line 3, whose qid 2 differs from qid 1.
    with pytest.raises(
        LetorFormatError, match="^" + re.escape(str(path)) + r":3: qid 2 differs from qid 1"
    ):
        _load(path, group_file=MALFORMED / "qids_split.query")


def test_index_above_n_features_names_the_line() -> None:
    path = FIXTURES / "sparse.txt"
    with pytest.raises(
        LetorFormatError,
        match="^" + re.escape(str(path)) + r":4: feature index 3 exceeds n_features=2",
    ):
        _load(path, n_features=2)


def test_format_error_is_a_value_error() -> None:
    assert issubclass(LetorFormatError, ValueError)


# ---------------------------------------------------------------------------
# The compiled tokeniser against sklearn's parser (the reference)


def _both_engines(path: Path) -> tuple[object, object]:
    """Outcome of each engine: the parsed arrays, or the error message."""
    outcomes = []
    for engine in ("auto", "sklearn"):
        try:
            outcomes.append(svmlight._parse_svmlight(path, engine=engine))
        except LetorFormatError as exc:
            outcomes.append(str(exc))
    return outcomes[0], outcomes[1]


def _assert_same_outcome(path: Path) -> None:
    fast, reference = _both_engines(path)
    if isinstance(reference, str) or isinstance(fast, str):
        assert fast == reference
        return
    for a, b in zip(fast, reference, strict=True):  # type: ignore[call-overload]
        assert a.dtype == b.dtype and a.shape == b.shape
        assert a.tobytes() == b.tobytes()  # bit for bit, signed zeros included


@pytest.mark.parametrize(
    "path",
    sorted(FIXTURES.glob("*.txt*")) + sorted(MALFORMED.glob("*.txt")),
    ids=lambda p: p.name,
)
def test_fast_path_matches_sklearn_on_fixtures(path: Path) -> None:
    _assert_same_outcome(path)


def test_fast_path_is_taken_for_plain_letor_and_left_for_odd_syntax(tmp_path: Path) -> None:
    plain = np.frombuffer((FIXTURES / "dense.txt").read_bytes(), np.uint8)
    assert tokenizer._parse_fast(plain) is not None
    # Python's float() accepts digit separators; the tokeniser leaves such
    # files to sklearn, which reads them the same way.
    odd = tmp_path / "odd.txt"
    odd.write_bytes(b"1 qid:1 1:1_000 2:0x1\n")
    assert tokenizer._parse_fast(svmlight._read_buffer(odd)) is None
    with pytest.raises(LetorFormatError, match=r"odd.txt:1: bad value in token '2:0x1'"):
        _load(odd)
    odd.write_bytes(b"1 qid:1 1:1_000 2:.5\n")
    assert _load(odd).features.tolist() == [[1000.0, 0.5]]


def test_exact_slow_path_in_blocks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # 17-digit mantissas and large exponents leave the fast path (Clinger's
    # m <= 2**53, |e| <= 22); they must still be correctly rounded.
    monkeypatch.setattr(tokenizer, "_EXACT_BLOCK", 3)
    values = [
        "0.10000000000000001",
        "1e23",
        "123456789012345678",
        "2.2250738585072014e-308",
        "9007199254740993",
        "0.1",
        "-0e-30",
        "7",
    ]
    path = tmp_path / "slow.txt"
    path.write_text(
        "".join(f"{g} qid:1 1:{v}\n" for g, v in zip("01", values[:2], strict=True))
        + "2 qid:2 "
        + " ".join(f"{i}:{v}" for i, v in enumerate(values, start=1))
        + "\n"
    )
    ds = _load(path)
    assert ds.features[2].tolist() == [float(v) for v in values]
    assert not np.signbit(ds.features[2, 6])  # "-0e-30" reads as 0, like a missing feature
    _assert_same_outcome(path)


def test_fast_path_rounds_like_python_float(tmp_path: Path) -> None:
    # Mantissas of 1..19 digits (around Clinger's m <= 2**53 bound) with
    # decimal exponents around +-22, written with a point or an exponent:
    # every value must equal Python's correctly rounded float().
    rng = np.random.default_rng(53)
    texts = []
    for _ in range(20_000):
        digits = int(rng.integers(1, 20))
        mantissa = str(int(rng.integers(10 ** (digits - 1), 10**digits, dtype=np.uint64)))
        exponent = int(rng.integers(-26, 27))
        point = int(rng.integers(0, digits + 1))
        texts.append(f"{mantissa[:point]}.{mantissa[point:]}e{exponent}")
    rows = [texts[i : i + 40] for i in range(0, len(texts), 40)]
    path = tmp_path / "round.txt"
    path.write_text(
        "".join(
            "0 qid:1 " + " ".join(f"{j}:{v}" for j, v in enumerate(row, 1)) + "\n" for row in rows
        )
    )
    assert tokenizer._parse_fast(svmlight._read_buffer(path)) is not None
    got = _load(path).features.ravel()
    assert got.tolist() == [float(v) for v in texts]


@pytest.mark.parametrize(("prefix", "capacity"), [(16, 1 << 16), (1 << 20, 2), (16, 2)])
def test_fast_path_second_pass_when_guesses_fall_short(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, prefix: int, capacity: int
) -> None:
    # A short prefix hides the largest index (sparse lines); a small capacity
    # overflows with slow-path tokens (17 significant digits).
    monkeypatch.setattr(tokenizer, "_PREFIX_BYTES", prefix)
    monkeypatch.setattr(tokenizer, "_SLOW_CAPACITY", capacity)
    path = tmp_path / "f.txt"
    path.write_text(
        "1 qid:1 1:0.5\n0 qid:1 2:0.12345678901234567 3:0.1\n"
        "2 qid:2 1:0.22222222222222221 7:9.8765432109876543e-5\n0 qid:2 4:1\n"
    )
    ds = _load(path)
    assert ds.features.shape == (4, 7)
    assert ds.features[2, 6] == float("9.8765432109876543e-5")
    assert ds.features[1, 1] == float("0.12345678901234567")
    assert ds.features[3].tolist() == [0, 0, 0, 1, 0, 0, 0]
    _assert_same_outcome(path)


def test_fast_path_second_pass_when_later_lines_are_shorter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The rows are estimated from the bytes per line of the first block; here
    # the lines after it are far shorter, so the estimate falls short.
    long_line = "2 qid:1 " + " ".join(f"{j}:0.5" for j in range(1, 101)) + "\n"
    monkeypatch.setattr(tokenizer, "_PREFIX_BYTES", len(long_line) + 5)
    measured: list[int] = []
    real = tokenizer._measure
    monkeypatch.setattr(
        tokenizer, "_measure", lambda buf: (measured.append(buf.size), real(buf))[1]
    )
    path = tmp_path / "f.txt"
    path.write_text(long_line + "".join(f"{g % 3} qid:2 1:{g}\n" for g in range(500)))
    ds = _load(path)
    assert ds.n_docs == 501 and ds.features.shape == (501, 100)
    assert ds.features[1:, 0].tolist() == list(range(500))
    assert ds.features[1:, 1:].max() == 0
    assert measured == [len(long_line), path.stat().st_size]  # the block, then the whole file
    _assert_same_outcome(path)


_GRADES = st.sampled_from(["0", "1", "2", "4", "+2", "1.0", "2e0", "3.", "0.5", "-1"])
_VALUES = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.floats(-1e6, 1e6).map(lambda x: f"{x:.6g}"),
    st.floats(allow_nan=False, allow_infinity=False).map(lambda x: f"{x:E}"),
    st.integers(-(10**25), 10**25).map(str),
    st.from_regex(r"[+-]?(\d{1,24}(\.\d{0,24})?|\.\d{1,24})([eE][+-]?\d{1,3})?", fullmatch=True),
    st.sampled_from(["nan", "inf", "-0", "0.0", "1_0", "", "1e", "5e-324", "1e308"]),
)
_SPACE = st.sampled_from([" ", "  ", "\t", " \t "])


@st.composite
def _letor_text(draw: st.DrawFn) -> str:
    lines = []
    for _ in range(draw(st.integers(1, 6))):
        if draw(st.integers(0, 9)) == 0:
            lines.append(draw(st.sampled_from(["", "# comment", "   "])))
            continue
        indices = sorted(draw(st.sets(st.integers(1, 9), max_size=6)))
        tokens = [draw(_GRADES), f"qid:{draw(st.integers(1, 3))}"]
        tokens += [f"{i}:{draw(_VALUES)}" for i in indices]
        line = draw(_SPACE).join(tokens)
        if draw(st.booleans()):
            line += draw(st.sampled_from([" # doc = 1", "#x", " #"]))
        lines.append(line)
    ending = draw(st.sampled_from(["\n", "\r\n"]))
    return ending.join(lines) + draw(st.sampled_from(["", ending]))


@settings(max_examples=300, deadline=None)
@given(text=_letor_text())
def test_fast_path_matches_sklearn_on_generated_files(text: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "gen.txt"
        path.write_bytes(text.encode())
        _assert_same_outcome(path)


# ---------------------------------------------------------------------------
# Options, by hand


def test_normalize_per_query_by_hand() -> None:
    ds = _load(FIXTURES / "sparse.txt", normalize=True)
    # query 1: f1 (0, 3) -> (0, 1); f2 (0.5, 0) -> (1, 0); f3 (0, -15) -> (1, 0)
    # query 2: f1 (0, 0) constant -> 0; f2 constant -> 0; f3 (7, 0) -> (1, 0)
    assert ds.features.tolist() == [[0, 1, 1], [1, 0, 0], [0, 0, 1], [0, 0, 0]]
    ds = _load(FIXTURES / "dense.txt", normalize=True)
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
    ds = _load(FIXTURES / "dense.txt", drop_no_relevant=True)
    # query 20 has grades (0, 0): dropped.
    assert ds.qids.tolist() == [10]
    assert ds.offsets.tolist() == [0, 3]
    assert ds.features.tolist() == DENSE_X[:3]
    assert ds.relevance.tolist() == [2, 0, 1]


def test_drop_no_relevant_everything_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "z.txt").write_text("0 qid:1 1:1\n0 qid:2 1:2\n")
    with pytest.raises(ValueError, match="leaves no query"):
        _load(tmp_path / "z.txt", drop_no_relevant=True)


def test_drop_then_normalize_combined() -> None:
    ds = _load(FIXTURES / "sparse.txt", drop_no_relevant=True, normalize=True)
    assert ds.qids.tolist() == [1, 2]  # both queries hold a relevant document
    assert ds.features.tolist() == [[0, 1, 1], [1, 0, 0], [0, 0, 1], [0, 0, 0]]


# ---------------------------------------------------------------------------
# Cache


def _count_parses(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    calls: list[Path] = []
    real = letor._parse

    def counting(path: Path, *args: object) -> LetorDataset:
        calls.append(path)
        return real(path, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(letor, "_parse", counting)
    return calls


def test_cache_hit_returns_identical_arrays_without_parsing(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _count_parses(monkeypatch)
    first = load_letor(FIXTURES / "dense.txt", cache_dir=cache_dir)
    second = load_letor(FIXTURES / "dense.txt", cache_dir=cache_dir)
    assert len(calls) == 1
    for name in ("features", "relevance", "qids", "offsets"):
        a, b = getattr(first, name), getattr(second, name)
        assert a.dtype == b.dtype and np.array_equal(a, b)
    assert second.source == str(FIXTURES / "dense.txt")
    # The cached arrays are memory-mapped and read-only.
    base = second.features
    while not isinstance(base, np.memmap) and base.base is not None:
        base = base.base
    assert isinstance(base, np.memmap)
    assert not second.features.flags.writeable


def test_cache_is_keyed_on_content_not_name(
    tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _count_parses(monkeypatch)
    shutil.copy(FIXTURES / "dense.txt", tmp_path / "a.txt")
    shutil.copy(FIXTURES / "dense.txt", tmp_path / "b.txt")
    load_letor(tmp_path / "a.txt", cache_dir=cache_dir)
    b = load_letor(tmp_path / "b.txt", cache_dir=cache_dir)
    assert len(calls) == 1  # same bytes, other name: a hit
    assert b.source == str(tmp_path / "b.txt")


def _rewrite_same_size_and_mtime(path: Path, old: bytes, new: bytes) -> None:
    assert len(old) == len(new) and old != new
    st = path.stat()
    path.write_bytes(new)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns


def test_same_size_same_mtime_rewrite_is_reloaded(
    tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "d.txt"
    old = (FIXTURES / "dense.txt").read_bytes()
    path.write_bytes(old)
    assert load_letor(path, cache_dir=cache_dir).relevance.tolist() == DENSE_R
    new = old.replace(b"2 qid:10", b"1 qid:10", 1)
    _rewrite_same_size_and_mtime(path, old, new)
    assert load_letor(path, cache_dir=cache_dir).relevance.tolist() == [1, 0, 1, 0, 0]


def test_remembered_digest_is_used_and_invalidated_by_a_rewrite(
    tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Trust digests of files of any age, so that this fresh file's digest is remembered.
    monkeypatch.setattr(letor_cache, "_SETTLE_NS", 0)
    path = tmp_path / "d.txt"
    old = (FIXTURES / "dense.txt").read_bytes()
    path.write_bytes(old)
    time.sleep(0.05)  # let the clock pass the file's ctime tick
    load_letor(path, cache_dir=cache_dir)
    hashed: list[object] = []
    real = hashlib.file_digest

    def spy(*args: object, **kw: object) -> object:
        if getattr(args[0], "name", None) == str(path):  # not the cached arrays' digests
            hashed.append(args)
        return real(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(hashlib, "file_digest", spy)
    assert load_letor(path, cache_dir=cache_dir).relevance.tolist() == DENSE_R
    assert hashed == []  # unchanged file: the remembered digest served
    time.sleep(0.05)
    _rewrite_same_size_and_mtime(path, old, old.replace(b"2 qid:10", b"1 qid:10", 1))
    assert load_letor(path, cache_dir=cache_dir).relevance.tolist() == [1, 0, 1, 0, 0]
    assert len(hashed) == 1  # ctime moved: hashed again


def test_group_file_content_is_part_of_the_key(tmp_path: Path, cache_dir: Path) -> None:
    shutil.copy(FIXTURES / "nogroup.txt", tmp_path / "r.txt")
    (tmp_path / "r.txt.query").write_text("2\n3\n")
    assert load_letor(tmp_path / "r.txt", cache_dir=cache_dir).offsets.tolist() == [0, 2, 5]
    (tmp_path / "r.txt.query").write_text("4\n1\n")
    assert load_letor(tmp_path / "r.txt", cache_dir=cache_dir).offsets.tolist() == [0, 4, 5]


def _entries(cache_dir: Path) -> list[Path]:
    return [p for p in cache_root(cache_dir).iterdir() if p.name != "digests"]


@pytest.mark.parametrize(
    "damage", ["truncate_features", "garbage_meta", "missing_offsets", "wrong_shape"]
)
def test_corrupt_cache_entry_is_ignored_and_rewritten(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch, damage: str
) -> None:
    load_letor(FIXTURES / "dense.txt", cache_dir=cache_dir)
    (entry,) = _entries(cache_dir)
    good = (entry / "features.npy").read_bytes()
    if damage == "truncate_features":
        (entry / "features.npy").write_bytes(good[: len(good) - 16])
    elif damage == "garbage_meta":
        (entry / "meta.json").write_text("{not json")
    elif damage == "missing_offsets":
        (entry / "offsets.npy").unlink()
    else:
        np.save(entry / "relevance.npy", np.zeros(4, dtype=np.int64))
    calls = _count_parses(monkeypatch)
    ds = load_letor(FIXTURES / "dense.txt", cache_dir=cache_dir)
    assert len(calls) == 1
    assert ds.features.tolist() == DENSE_X and ds.relevance.tolist() == DENSE_R
    assert (entry / "features.npy").read_bytes() == good  # rewritten
    load_letor(FIXTURES / "dense.txt", cache_dir=cache_dir)
    assert len(calls) == 1  # and used again


def test_cache_leaves_no_temporary_files(cache_dir: Path) -> None:
    load_letor(FIXTURES / "dense.txt", cache_dir=cache_dir)
    load_letor(FIXTURES / "sparse.txt", cache_dir=cache_dir)
    names = [p.name for p in _entries(cache_dir)]
    assert len(names) == 2 and not any(n.startswith(".") for n in names)


def test_options_are_applied_after_the_cache(cache_dir: Path) -> None:
    raw = load_letor(FIXTURES / "dense.txt", cache_dir=cache_dir)
    ds = load_letor(
        FIXTURES / "dense.txt", cache_dir=cache_dir, normalize=True, drop_no_relevant=True
    )
    assert ds.features.tolist() == DENSE_X[:3] and ds.qids.tolist() == [10]
    assert (
        load_letor(FIXTURES / "dense.txt", cache_dir=cache_dir).features.tolist()
        == raw.features.tolist()
    )
    assert len(_entries(cache_dir)) == 2  # the parsed file, and its normalised form


@pytest.mark.parametrize("drop", [False, True])
@pytest.mark.parametrize("n_features", [None, 5])
def test_normalised_data_are_cached_and_memory_mapped(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch, drop: bool, n_features: int | None
) -> None:
    """A normalised load maps a cached normalised matrix: no private dense copy per load."""
    path = FIXTURES / "sparse.txt"
    options = {"normalize": True, "drop_no_relevant": drop, "n_features": n_features}
    expected = load_letor(path, cache=False, **options)  # type: ignore[arg-type]
    first = load_letor(path, cache_dir=cache_dir, **options)  # type: ignore[arg-type]
    calls = _count_parses(monkeypatch)
    normalize_calls: list[int] = []
    real = letor.normalize_per_query
    monkeypatch.setattr(
        letor, "normalize_per_query", lambda ds: normalize_calls.append(1) or real(ds)
    )
    second = load_letor(path, cache_dir=cache_dir, **options)  # type: ignore[arg-type]
    assert not calls and not normalize_calls
    for ds in (first, second):
        for name in ("features", "relevance", "qids", "offsets"):
            a, b = getattr(ds, name), getattr(expected, name)
            assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
    assert second.source == str(path)
    base = second.features
    while not isinstance(base, np.memmap) and base.base is not None:
        base = base.base
    assert isinstance(base, np.memmap)
    # other options make other entries; the plain load still reads the parsed file
    assert load_letor(path, cache_dir=cache_dir).features.tolist() == (
        load_letor(path, cache=False).features.tolist()
    )


def test_cache_false_writes_nothing(cache_dir: Path) -> None:
    load_letor(FIXTURES / "dense.txt", cache=False, cache_dir=cache_dir)
    assert not cache_dir.exists()


def test_cache_root_resolution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    version = f"letor-v{svmlight.PARSER_VERSION}"
    monkeypatch.setenv("OLTR_CACHE_DIR", str(tmp_path / "env"))
    assert cache_root(tmp_path / "arg") == tmp_path / "arg" / version
    assert cache_root() == tmp_path / "env" / version
    monkeypatch.delenv("OLTR_CACHE_DIR")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_root() == tmp_path / "home" / ".cache" / "oltr" / version


def test_errors_are_not_cached(tmp_path: Path, cache_dir: Path) -> None:
    with pytest.raises(LetorFormatError):
        load_letor(MALFORMED / "bad_value.txt", cache_dir=cache_dir)
    with pytest.raises(LetorFormatError):
        load_letor(MALFORMED / "bad_value.txt", cache_dir=cache_dir)
    assert not cache_root(cache_dir).exists() or _entries(cache_dir) == []


# ---------------------------------------------------------------------------
# The dataset


def _tiny() -> LetorDataset:
    return LetorDataset(
        features=np.arange(12.0).reshape(6, 2),
        relevance=np.array([0, 1, 2, 0, 3, 1]),
        qids=np.array([4, 5, 6]),
        offsets=np.array([0, 3, 4, 6]),
    )


def test_dataset_properties_and_query() -> None:
    ds = _tiny()
    assert (ds.n_queries, ds.n_docs, ds.n_features) == (3, 6, 2)
    assert ds.list_lengths.tolist() == [3, 1, 2]
    X, R = ds.query(2)
    assert X.tolist() == [[8, 9], [10, 11]] and R.tolist() == [3, 1]


def test_padded_by_hand() -> None:
    X, R, mask = _tiny().padded([2, 1, 0])
    assert X.shape == (3, 3, 2)
    assert mask.tolist() == [[True, True, False], [True, False, False], [True, True, True]]
    assert R.tolist() == [[3, 1, 0], [0, 0, 0], [0, 1, 2]]
    assert X[0].tolist() == [[8, 9], [10, 11], [0, 0]]
    assert X[1].tolist() == [[6, 7], [0, 0], [0, 0]]
    assert X[2].tolist() == [[0, 1], [2, 3], [4, 5]]


def test_subset_by_hand() -> None:
    sub = _tiny().subset([2, 0, 2])
    assert sub.qids.tolist() == [6, 4, 6]
    assert sub.offsets.tolist() == [0, 2, 5, 7]
    assert sub.relevance.tolist() == [3, 1, 0, 1, 2, 3, 1]
    assert sub.features[:, 0].tolist() == [8, 10, 0, 2, 4, 8, 10]


def test_dataset_arrays_are_read_only_and_inputs_untouched() -> None:
    features = np.ones((2, 1))
    ds = LetorDataset(
        features=features, relevance=np.array([0, 1]), qids=np.array([1]), offsets=np.array([0, 2])
    )
    with pytest.raises(ValueError, match="read-only"):
        ds.features[0, 0] = 5.0
    features[0, 0] = 5.0  # the caller's array stays writable
    with pytest.raises(AttributeError):
        ds.features = features  # type: ignore[misc]


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"features": np.ones(3)}, ValueError, "features must be 2-D"),
        ({"features": np.array([[1.0], [np.nan], [0.0]])}, ValueError, "row 1 holds NaN or inf"),
        ({"relevance": np.array([0, 1])}, ValueError, "relevance must have shape"),
        ({"relevance": np.array([0, -1, 0])}, ValueError, "grades must be >= 0"),
        ({"relevance": np.array([0, 0.5, 1])}, ValueError, "whole numbers"),
        ({"offsets": np.array([1, 3])}, ValueError, "start at 0 and end at n_docs=3"),
        ({"offsets": np.array([0, 2])}, ValueError, "start at 0 and end at n_docs=3"),
        (
            {"offsets": np.array([0, 0, 3]), "qids": np.array([1, 2])},
            ValueError,
            "query 0 is empty",
        ),
        ({"qids": np.array([1, 2])}, ValueError, "qids must have shape"),
        ({"features": np.array([["a"], ["b"], ["c"]])}, TypeError, "numeric"),
    ],
)
def test_dataset_validation(
    kwargs: dict[str, object], error: type[Exception], message: str
) -> None:
    base: dict[str, object] = {
        "features": np.zeros((3, 1)),
        "relevance": np.array([0, 1, 2]),
        "qids": np.array([9]),
        "offsets": np.array([0, 3]),
    }
    with pytest.raises(error, match=re.escape(message)):
        LetorDataset(**(base | kwargs))  # type: ignore[arg-type]


@pytest.mark.parametrize("indices", [[3], [-1], [0, 7]])
def test_query_indices_out_of_range(indices: list[int]) -> None:
    ds = _tiny()
    with pytest.raises(ValueError, match=r"must lie in \[0, 3\)"):
        ds.subset(indices)
    with pytest.raises(ValueError, match=r"must lie in \[0, 3\)"):
        ds.padded(indices)
    with pytest.raises(ValueError, match=r"must lie in \[0, 3\)"):
        ds.query(indices[-1])


# ---------------------------------------------------------------------------
# Writing


def test_write_letor_text_by_hand(tmp_path: Path) -> None:
    ds = LetorDataset(
        features=np.array([[0.5, 0.0], [1.0, 0.125], [0.1, 3.0]]),
        relevance=np.array([2, 0, 1]),
        qids=np.array([7, 8]),
        offsets=np.array([0, 2, 3]),
    )
    write_letor(ds, tmp_path / "out.txt")
    assert (tmp_path / "out.txt").read_text() == (
        "2 qid:7 1:0.5 2:0.0\n0 qid:7 1:1.0 2:0.125\n1 qid:8 1:0.1 2:3.0\n"
    )
    write_letor(ds, tmp_path / "short.txt", precision=1)
    assert (tmp_path / "short.txt").read_text().splitlines()[1] == "0 qid:7 1:1 2:0.1"


@pytest.mark.parametrize("name", ["round.txt", "round.txt.gz"])
def test_write_then_load_round_trips_exactly(tmp_path: Path, name: str) -> None:
    rng = np.random.default_rng(3)
    X = rng.standard_normal((40, 6)) * 10.0 ** rng.integers(-8, 8, size=(40, 6))
    ds = LetorDataset(
        features=X,
        relevance=rng.integers(0, 5, 40),
        qids=np.array([3, 1, 2]),
        offsets=np.array([0, 10, 25, 40]),
    )
    write_letor(ds, tmp_path / name)
    back = _load(tmp_path / name)
    np.testing.assert_array_equal(back.features, ds.features)
    np.testing.assert_array_equal(back.relevance, ds.relevance)
    np.testing.assert_array_equal(back.qids, ds.qids)
    np.testing.assert_array_equal(back.offsets, ds.offsets)


def test_gzip_output_is_gzip_and_deterministic(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ds = _load(FIXTURES / "dense.txt")
    write_letor(ds, tmp_path / "a.txt.gz")
    # A gzip header stamped with the clock would differ a day later.
    later = time.time() + 86_400
    monkeypatch.setattr(time, "time", lambda: later)
    write_letor(ds, tmp_path / "b.txt.gz")
    assert (tmp_path / "a.txt.gz").read_bytes()[:2] == b"\x1f\x8b"
    assert (tmp_path / "a.txt.gz").read_bytes() == (tmp_path / "b.txt.gz").read_bytes()


def test_write_is_atomic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ds = _load(FIXTURES / "dense.txt")
    target = tmp_path / "out.txt"
    target.write_text("old content\n")

    def fail(*args: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        write_letor(ds, target)
    assert target.read_text() == "old content\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_written_file_gets_the_usual_permissions(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        write_letor(_tiny(), tmp_path / "x.txt")
    finally:
        os.umask(old)
    assert (tmp_path / "x.txt").stat().st_mode & 0o777 == 0o644


def test_write_precision_validated(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="precision"):
        write_letor(_tiny(), tmp_path / "x.txt", precision=0)


# ---------------------------------------------------------------------------
# Streams


def test_stream_same_seed_same_stream_and_chunking_does_not_matter() -> None:
    for order in ("uniform", "epochs"):
        whole = QueryStream(13, order=order, rng=5).take(10_000)
        stream = QueryStream(13, order=order, rng=5)
        pieces = [stream.take(n) for n in (1, 0, 12, 13, 4096, 5878)]
        np.testing.assert_array_equal(np.concatenate(pieces), whole)
        assert stream.n_taken == 10_000
        assert not np.array_equal(QueryStream(13, order=order, rng=6).take(10_000), whole)
        assert whole.dtype == np.int64 and whole.min() >= 0 and whole.max() < 13


@pytest.mark.parametrize("order", ["uniform", "epochs"])
def test_stream_iterates_like_take(order: str) -> None:
    whole = QueryStream(_tiny(), order=order, rng=2).take(9000).tolist()  # type: ignore[arg-type]
    stream = QueryStream(_tiny(), order=order, rng=2)  # type: ignore[arg-type]
    mixed: list[int] = []
    while len(mixed) < 9000:  # next() and take() interleaved, across block ends
        mixed.append(next(stream))
        mixed.extend(stream.take(min(7, 9000 - len(mixed))).tolist())
    assert mixed == whole and stream.n_taken == 9000


def test_epochs_visit_every_query_once_per_pass() -> None:
    n = 11
    passes = QueryStream(n, order="epochs", rng=0).take(20 * n).reshape(20, n)
    assert all(sorted(p) == list(range(n)) for p in passes.tolist())
    assert len({tuple(p) for p in passes.tolist()}) > 1  # reshuffled each pass


def test_uniform_stream_is_uniform_chi_square() -> None:
    n, draws = 7, 70_000
    counts = np.bincount(QueryStream(n, order="uniform", rng=11).take(draws), minlength=n)
    assert stats.chisquare(counts).pvalue > ALPHA


def test_epoch_orders_are_uniform_permutations_chi_square() -> None:
    n, epochs = 4, 12_000
    passes = QueryStream(n, order="epochs", rng=12).take(n * epochs).reshape(epochs, n)
    index = {p: i for i, p in enumerate(permutations(range(n)))}
    counts = np.bincount([index[tuple(p)] for p in passes.tolist()], minlength=len(index))
    assert stats.chisquare(counts).pvalue > ALPHA


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((0,), {"rng": 0}, "at least one query"),
        ((5,), {"order": "random", "rng": 0}, "order must be"),
        ((True,), {"rng": 0}, "at least one query"),
    ],
)
def test_stream_bad_arguments(
    args: tuple[object, ...], kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        QueryStream(*args, **kwargs)  # type: ignore[arg-type]


def test_stream_take_validates_n() -> None:
    with pytest.raises(ValueError, match="n must be an integer >= 0"):
        QueryStream(3, rng=0).take(-1)


# ---------------------------------------------------------------------------
# Summary


def test_summarize_by_hand() -> None:
    s = summarize(_load(FIXTURES / "dense.txt"))
    assert (s["n_queries"], s["n_docs"], s["n_features"]) == (2, 5, 3)
    assert s["grades"] == {0: 3, 1: 1, 2: 1}
    assert s["list_length"] == {"min": 2, "median": 2.5, "mean": 2.5, "max": 3}
    assert s["zero_relevance_queries"] == 1
    assert s["feature_range"] == [0.0, 1.0]
    # Non-constant (query, feature) pairs: all 3 of query 10 span [0, 1]; of query 20,
    # f2 is constant and f1, f3 do not span [0, 1]: 3 of 5.
    assert s["minmax_fraction"] == pytest.approx(3 / 5)
    assert s["query_normalised"] is False
    normalised = summarize(_load(FIXTURES / "dense.txt", normalize=True))
    assert normalised["minmax_fraction"] == 1.0 and normalised["query_normalised"] is True


def test_summarize_counts_absent_grades_as_zero() -> None:
    s = summarize(_load(FIXTURES / "noncontiguous.txt"))
    assert s["grades"] == {0: 3, 1: 2, 2: 1}
    s = summarize(_load(FIXTURES / "sparse.txt"))
    assert s["grades"] == {0: 2, 1: 1, 2: 1}
    assert s["feature_range"] == [-15.0, 7.0] and s["query_normalised"] is False


# ---------------------------------------------------------------------------
# Every LETOR file in shared/data against MANIFEST.md

# (file, queries, docs, features, grade histogram, zero-relevance queries or None
#  where the manifest gives none, query-level normalised)
MANIFEST = [
    ("LETOR4.0/MQ2008/Fold1/train.txt.gz", 471, 9630, 46, {0: 7820, 1: 1223, 2: 587}, 132, True),
    ("LETOR4.0/MQ2008/Fold1/vali.txt.gz", 157, 2707, 46, {0: 2140, 1: 400, 2: 167}, 37, True),
    ("LETOR4.0/MQ2008/Fold1/test.txt.gz", 156, 2874, 46, {0: 2319, 1: 378, 2: 177}, 51, True),
    ("LETOR4.0/MQ2008/Fold2/train.txt.gz", 471, 9404, 46, {0: 7644, 1: 1196, 2: 564}, 117, True),
    ("LETOR4.0/MQ2008/Fold2/vali.txt.gz", 156, 2874, 46, {0: 2319, 1: 378, 2: 177}, 51, True),
    ("LETOR4.0/MQ2008/Fold2/test.txt.gz", 157, 2933, 46, {0: 2316, 1: 427, 2: 190}, 52, True),
    ("LETOR4.0/MQ2008/Fold3/train.txt.gz", 470, 8643, 46, {0: 6883, 1: 1189, 2: 571}, 123, True),
    ("LETOR4.0/MQ2008/Fold3/vali.txt.gz", 157, 2933, 46, {0: 2316, 1: 427, 2: 190}, 52, True),
    ("LETOR4.0/MQ2008/Fold3/test.txt.gz", 157, 3635, 46, {0: 3080, 1: 385, 2: 170}, 45, True),
    ("LETOR4.0/MQ2008/Fold4/train.txt.gz", 470, 8514, 46, {0: 6775, 1: 1205, 2: 534}, 140, True),
    ("LETOR4.0/MQ2008/Fold4/vali.txt.gz", 157, 3635, 46, {0: 3080, 1: 385, 2: 170}, 45, True),
    ("LETOR4.0/MQ2008/Fold4/test.txt.gz", 157, 3062, 46, {0: 2424, 1: 411, 2: 227}, 35, True),
    ("LETOR4.0/MQ2008/Fold5/train.txt.gz", 470, 9442, 46, {0: 7715, 1: 1190, 2: 537}, 148, True),
    ("LETOR4.0/MQ2008/Fold5/vali.txt.gz", 157, 3062, 46, {0: 2424, 1: 411, 2: 227}, 35, True),
    ("LETOR4.0/MQ2008/Fold5/test.txt.gz", 157, 2707, 46, {0: 2140, 1: 400, 2: 167}, 37, True),
    ("LETOR3.0/OHSUMED/Fold1/train.txt.gz", 63, 9219, 45, {0: 6052, 1: 1765, 2: 1402}, 1, True),
    ("LETOR3.0/OHSUMED/Fold1/vali.txt.gz", 21, 3538, 45, {0: 2457, 1: 546, 2: 535}, 0, True),
    ("LETOR3.0/OHSUMED/Fold1/test.txt.gz", 22, 3383, 45, {0: 2794, 1: 274, 2: 315}, 0, True),
    ("LETOR3.0/OHSUMED/Fold2/train.txt.gz", 63, 10187, 45, {0: 6758, 1: 1860, 2: 1569}, 0, True),
    ("LETOR3.0/OHSUMED/Fold2/vali.txt.gz", 22, 3383, 45, {0: 2794, 1: 274, 2: 315}, 0, True),
    ("LETOR3.0/OHSUMED/Fold2/test.txt.gz", 21, 2570, 45, {0: 1751, 1: 451, 2: 368}, 1, True),
    ("LETOR3.0/OHSUMED/Fold3/train.txt.gz", 64, 10494, 45, {0: 7390, 1: 1633, 2: 1471}, 0, True),
    ("LETOR3.0/OHSUMED/Fold3/vali.txt.gz", 21, 2570, 45, {0: 1751, 1: 451, 2: 368}, 1, True),
    ("LETOR3.0/OHSUMED/Fold3/test.txt.gz", 21, 3076, 45, {0: 2162, 1: 501, 2: 413}, 0, True),
    ("LETOR3.0/OHSUMED/Fold4/train.txt.gz", 64, 9491, 45, {0: 7002, 1: 1271, 2: 1218}, 1, True),
    ("LETOR3.0/OHSUMED/Fold4/vali.txt.gz", 21, 3076, 45, {0: 2162, 1: 501, 2: 413}, 0, True),
    ("LETOR3.0/OHSUMED/Fold4/test.txt.gz", 21, 3573, 45, {0: 2139, 1: 813, 2: 621}, 0, True),
    ("LETOR3.0/OHSUMED/Fold5/train.txt.gz", 64, 9029, 45, {0: 6707, 1: 1226, 2: 1096}, 1, True),
    ("LETOR3.0/OHSUMED/Fold5/vali.txt.gz", 21, 3573, 45, {0: 2139, 1: 813, 2: 621}, 0, True),
    ("LETOR3.0/OHSUMED/Fold5/test.txt.gz", 21, 3538, 45, {0: 2457, 1: 546, 2: 535}, 0, True),
    (
        "MSLR-WEB-sample/mslr_fold1_test_sample.txt.gz",
        18,
        1900,
        136,
        {0: 1023, 1: 604, 2: 243, 3: 20, 4: 10},
        None,
        False,
    ),
    (
        "MSLR-WEB-sample/mslr_fold1_valid_sample.txt.gz",
        18,
        1734,
        136,
        {0: 980, 1: 492, 2: 231, 3: 26, 4: 5},
        None,
        False,
    ),
    (
        "LightGBM-lambdarank-example/rank.train.gz",
        201,
        3005,
        300,
        {0: 645, 1: 1211, 2: 858, 3: 222, 4: 69},
        None,
        False,
    ),
    (
        "LightGBM-lambdarank-example/rank.test.gz",
        50,
        768,
        300,
        {0: 206, 1: 256, 2: 252, 3: 44, 4: 10},
        None,
        False,
    ),
    (
        "TREC-News-2018-entity/trec_news_2018.train.gz",
        45,
        782,
        5,
        {0: 303, 1: 256, 2: 146, 3: 27, 4: 50},
        None,
        False,
    ),
    (
        "TREC-News-2018-entity/trec_news_2018.test.gz",
        5,
        41,
        5,
        {0: 14, 1: 15, 2: 4, 3: 4, 4: 4},
        None,
        False,
    ),
]


@pytest.mark.shared_data
def test_every_shared_letor_file_matches_the_manifest(shared_data: Path, tmp_path: Path) -> None:
    on_disk = {
        p.relative_to(shared_data).as_posix()
        for p in shared_data.rglob("*.gz")
        if not p.name.endswith((".query.gz", ".qrel.gz", ".json.gz"))
    }
    assert on_disk == {row[0] for row in MANIFEST}  # every LETOR file is covered
    for name, queries, docs, features, grades, zero_rel, normalised in MANIFEST:
        s = summarize(load_letor(shared_data / name, cache_dir=tmp_path))
        got = (s["n_queries"], s["n_docs"], s["n_features"], s["grades"], s["query_normalised"])
        assert got == (queries, docs, features, grades, normalised), name
        if zero_rel is not None:
            assert s["zero_relevance_queries"] == zero_rel, name


@pytest.mark.shared_data
def test_fast_path_matches_sklearn_on_every_shared_file(shared_data: Path) -> None:
    for name, *_ in MANIFEST:
        fast, reference = _both_engines(shared_data / name)
        assert not isinstance(fast, str) and not isinstance(reference, str), name
        for a, b in zip(fast, reference, strict=True):  # type: ignore[call-overload]
            assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), name
