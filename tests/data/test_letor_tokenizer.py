"""The compiled LETOR tokeniser against sklearn's parser; every shared LETOR file."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from letor_fixtures import FIXTURES, MALFORMED, load_uncached

import oltr.data.svmlight as svmlight
import oltr.data.tokenizer as tokenizer
from oltr.data.dataset import summarize
from oltr.data.letor import load_letor
from oltr.data.svmlight import LetorFormatError


@pytest.fixture
def cache_dir(tmp_path: Path) -> Path:
    return tmp_path / "cache"


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
        load_uncached(odd)
    odd.write_bytes(b"1 qid:1 1:1_000 2:.5\n")
    assert load_uncached(odd).features.tolist() == [[1000.0, 0.5]]


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
    ds = load_uncached(path)
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
    got = load_uncached(path).features.ravel()
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
    ds = load_uncached(path)
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
    ds = load_uncached(path)
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
