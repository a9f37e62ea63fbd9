"""Fixtures of the agent tests: a small generated dataset and a geodesic scorer."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from condvln.dataset.generate import GenerateConfig, generate_dataset
from condvln.nav import GridNavigator
from condvln.scene.serialize import load_scene
from condvln.vlnce import load_split


@pytest.fixture(scope="session")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small dataset (about 50 train episodes over 6 houses, a few test episodes)."""
    out = tmp_path_factory.mktemp("agents") / "ds"
    generate_dataset(GenerateConfig(scenes=6, per_scene=30), out)
    return out


@dataclass(frozen=True)
class Score:
    """Our own quick per-episode score (geodesic distances, strict radius)."""

    success: bool
    bsa: float | None
    csr: int | None
    seeable: bool
    at_gold: bool
    at_other: bool
    """Stopped by choice (before the step budget ran out) within the radius of a non-gold
    leaf goal. A stop forced by the budget ends wherever the search was, so it may land near
    any goal by chance: that is a failure to find the target, not a wrong choice."""


class Scorer:
    """Scores trajectory records against the dataset's labels (test helper)."""

    def __init__(self, root: Path, split: str) -> None:
        self.root = root
        self.episodes = {e["episode_id"]: e for e in load_split(root, split)["episodes"]}
        self._navs: dict[str, GridNavigator] = {}

    def nav(self, scene_file: str) -> GridNavigator:
        if scene_file not in self._navs:
            self._navs[scene_file] = GridNavigator(load_scene(self.root / scene_file))
        return self._navs[scene_file]

    def score(self, record: dict[str, Any]) -> Score:
        ep = self.episodes[record["episode_id"]]
        labels = ep["info"]["condvln"]
        nav = self.nav(labels["scene_file"])
        positions = np.asarray(record["positions"])

        def dist(points: np.ndarray, goal: list[float]) -> np.ndarray:
            q = nav.distance_field(goal).query(points)
            return np.where(q.mask, np.inf, q.data)

        radius = labels["goal"]["radius"]
        success = bool(record["stop"]) and bool(
            dist(positions[-1:], labels["goal"]["position"])[0] < radius
        )
        k, start = 0, 0
        for sub in labels["subgoals"]:
            hits = np.nonzero(dist(positions[start:], sub["position"]) < sub["radius"])[0]
            if hits.size == 0:
                break
            k, start = k + 1, start + int(hits[0])
        m = len(labels["subgoals"])
        bsa = k / m if m else (1.0 if success else None)
        csr = None if bsa is None else int(bsa == 1.0 and success)
        ends = [dist(positions[-1:], g["position"])[0] < radius for g in labels["branch_goals"]]
        gold = labels["leaf_index"]
        at_gold = bool(record["stop"]) and ends[gold]
        chose_stop = bool(record["stop"]) and record["steps"] < labels["step_budget"]
        at_other = chose_stop and not at_gold and any(ends)
        return Score(success, bsa, csr, self._seeable(ep, nav), at_gold, at_other)

    @staticmethod
    def _seeable(ep: dict[str, Any], nav: GridNavigator) -> bool:
        """Whether every target of the gold branch is visible from the start (look-around)."""
        start = ep["start_position"]
        labels = ep["info"]["condvln"]
        for target in [*labels["subgoals"], labels["goal"]]:
            centre = nav.scene.object(target["object_id"]).center
            near = np.hypot(centre[0] - start[0], centre[2] - start[2]) <= 5.0
            if not (near and nav.visible(start, centre)):
                return False
        return True


@pytest.fixture(scope="session")
def train_scorer(dataset: Path) -> Scorer:
    """Scorer of the train split."""
    return Scorer(dataset, "train")
