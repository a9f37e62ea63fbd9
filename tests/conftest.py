"""Shared test fixtures: paths to the real data in ``../shared``."""

from __future__ import annotations

from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
FIXTURES = SHARED / "fixtures"


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    """The shared real-data fixtures folder."""
    if not FIXTURES.is_dir():
        pytest.fail(f"shared fixtures not found at {FIXTURES}")
    return FIXTURES
