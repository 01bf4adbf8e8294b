"""What the LETOR tests (``test_letor*.py``) share: the fixture files and an uncached load."""

from __future__ import annotations

from pathlib import Path

from oltr.data.dataset import LetorDataset
from oltr.data.letor import load_letor

FIXTURES = Path(__file__).parents[1] / "fixtures" / "letor"
MALFORMED = FIXTURES / "malformed"

# tests/fixtures/letor/dense.txt, typed in by hand.
DENSE_X = [
    [0.5, 1.0, 0.25],
    [0.0, 0.5, 1.0],
    [1.0, 0.0, 0.0],
    [0.2, 0.4, 0.6],
    [0.8, 0.4, 0.1],
]
DENSE_R = [2, 0, 1, 0, 0]


def load_uncached(path: Path, **kw: object) -> LetorDataset:
    """``load_letor`` without the cache: every call parses the file."""
    return load_letor(path, cache=False, **kw)  # type: ignore[arg-type]
