"""Shared fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

#: Real LTR data staged beside the project (never copied into it).
SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """Path of ``../shared/data``; skips the test with a reason when it is absent."""
    if not (SHARED_DATA / "MANIFEST.md").is_file():
        pytest.skip(f"real LETOR data not found at {SHARED_DATA} (../shared/data is absent)")
    return SHARED_DATA
