"""Property-based fuzzing of the LETOR parser: any input parses to a valid data set or is refused.

Arbitrary byte strings and mutations of valid lines are written to a file and
read with :func:`oltr.data.load_letor`, by the compiled tokeniser and by the
scikit-learn reference. The only acceptable failure is a
:class:`~oltr.errors.DataFormatError` naming the file; any other exception type
(``OverflowError``, ``MemoryError``, an ``IndexError`` from a parser) fails.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Literal

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oltr.data.dataset import LetorDataset
from oltr.data.letor import _apply_options, _parse
from oltr.errors import DataFormatError

#: Small enough that the whole file runs in a few seconds.
FUZZ = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)

VALID_LINES = [
    b"2 qid:1 1:0.5 2:-1.25 3:1e-3",
    b"0 qid:1 1:0 3:7 # comment",
    b"1 qid:7 2:3.5e2",
    b"4 qid:-3 1:1 2:2 3:3 4:4",
]

#: Tokens that stress the parsers' integer and float conversions.
NASTY = [
    b"5000000000",
    b"300000000",
    b"2147483648",
    b"1e20",
    b"-1",
    b"0",
    b"nan",
    b"inf",
    b"1e400",
    b"99999999999999999999",
    b"0x10",
    b"qid:",
    b":",
    b"#",
    b"\r",
    b"\n",
    b"\x00",
    b"\xff\xfe",
    b" ",
    b"1.5",
    b"+3",
]


def _check(data: bytes, engine: Literal["auto", "sklearn"]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fuzz.txt"
        path.write_bytes(data)
        try:
            ds = _apply_options(
                _parse(path, None, False, engine),
                path,
                n_features=None,
                normalize=False,
                drop_no_relevant=False,
            )
        except DataFormatError as exc:
            assert str(exc).startswith(str(path)), str(exc)
            return
    assert isinstance(ds, LetorDataset)
    assert ds.n_docs >= 1 and ds.offsets[-1] == ds.n_docs
    assert ds.features.shape == (ds.n_docs, ds.n_features)
    assert np.isfinite(ds.features).all()
    assert (ds.relevance >= 0).all()


@st.composite
def _mutated(draw: st.DrawFn) -> bytes:
    lines = draw(st.lists(st.sampled_from(VALID_LINES), min_size=1, max_size=4))
    text = bytearray(b"\n".join(lines) + b"\n")
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(text)))
        kind = draw(st.sampled_from(["insert", "delete", "replace"]))
        piece = draw(st.one_of(st.sampled_from(NASTY), st.binary(min_size=1, max_size=3)))
        if kind == "insert":
            text[at:at] = piece
        elif kind == "delete":
            del text[at : at + len(piece)]
        else:
            text[at : at + len(piece)] = piece
    return bytes(text)


@FUZZ
@given(st.binary(max_size=64))
def test_arbitrary_bytes_parse_or_raise_data_error(data: bytes) -> None:
    _check(data, "auto")


@FUZZ
@given(_mutated())
def test_mutated_lines_parse_or_raise_data_error(data: bytes) -> None:
    _check(data, "auto")


@FUZZ
@given(_mutated())
def test_mutated_lines_through_the_reference_parser(data: bytes) -> None:
    _check(data, "sklearn")


@FUZZ
@given(
    grade=st.sampled_from([b"0", b"3", b"1e20", b"9007199254740993", b"-0", b"2.0"]),
    index=st.integers(1, 10**12).map(lambda i: str(i).encode()),
    value=st.sampled_from([b"1", b"-0.5", b"1e308", b"1e309", b"nan"]),
)
def test_extreme_numbers_parse_or_raise_data_error(
    grade: bytes, index: bytes, value: bytes
) -> None:
    _check(grade + b" qid:1 " + index + b":" + value + b"\n", "auto")
