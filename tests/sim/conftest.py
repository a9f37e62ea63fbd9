"""Fixtures of the simulator tests."""

from __future__ import annotations

import pytest

from condvln.scene.model import Scene
from condvln.scene.sources.procedural import generate_house


@pytest.fixture(scope="session")
def procedural_scene() -> Scene:
    """A procedural house with several rooms, doors and furniture."""
    return generate_house(0)
