"""Fixtures of the executor tests: a small dataset, a test agent and one local Ray cluster."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from condvln.dataset.generate import GenerateConfig, generate_dataset

AGENTS = Path(__file__).resolve().parent / "data" / "agents.py"
SMALL = GenerateConfig(scenes=8, per_scene=40)
"""About 95 train episodes over 8 houses."""


@pytest.fixture(scope="session")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small dataset generated locally in one process."""
    out = tmp_path_factory.mktemp("parallel") / "ds"
    generate_dataset(SMALL, out)
    return out


@pytest.fixture(scope="session")
def agents_file() -> Path:
    """The test agents' file."""
    return AGENTS


@pytest.fixture(scope="session")
def sleepy() -> str:
    """Spec of the deterministic test agent (``file.py:Class``)."""
    return f"{AGENTS}:SleepyAgent"


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[Any]:
    """A real local Ray cluster of 2 CPUs (no dashboard, no usage stats), always shut down."""
    ray = pytest.importorskip("ray")
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield ray
    finally:
        ray.shutdown()
