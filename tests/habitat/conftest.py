"""A small generated dataset shared by the habitat export tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from condvln.dataset.generate import GenerateConfig, generate_dataset


@pytest.fixture(scope="session")
def habitat_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Six procedural houses (two unseen: one val_unseen, one test), 30 instructions each."""
    out = tmp_path_factory.mktemp("habitat") / "ds"
    generate_dataset(GenerateConfig(scenes=6, per_scene=30), out)
    return out
