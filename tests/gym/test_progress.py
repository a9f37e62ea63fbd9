"""Gold-path progress and rewards on a hand-made episode (an open plane: geodesic = straight)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from condvln.errors import ConfigError
from condvln.gym.progress import GoldPath, RewardConfig

SUBGOAL, GOAL = (2.0, 0.0, 0.0), (2.0, 0.0, 3.0)
RADIUS = 0.5


def straight(points: np.ndarray, target: np.ndarray) -> np.ndarray:
    return np.linalg.norm(np.asarray(points) - target, axis=-1)


def _path() -> GoldPath:
    return GoldPath([SUBGOAL, GOAL], RADIUS, straight)


def test_targets_are_reached_in_order_strictly_within_the_radius() -> None:
    path = _path()
    start = path.reset((0.0, 0.0, 0.0))
    assert start == {
        "targets_reached": 0,
        "distance_to_target": 2.0,
        "distance_to_goal": math.hypot(2.0, 3.0),
        "gold_path_left": 2.0 + 3.0,
    }
    # standing next to the goal first does not count the subgoal as passed
    near_goal = path.update((2.0, 0.0, 2.9))
    assert near_goal["targets_reached"] == 0
    assert near_goal["gold_path_left"] == pytest.approx(2.9 + 3.0)
    assert path.update((1.5, 0.0, 0.0))["targets_reached"] == 0  # exactly the radius: not yet
    reached = path.update((1.75, 0.0, 0.0))
    assert reached["targets_reached"] == 1
    assert (
        reached["distance_to_target"]
        == reached["distance_to_goal"]
        == pytest.approx(math.hypot(0.25, 3.0))
    )
    # once passed, a subgoal stays passed; the goal is never "passed"
    assert path.update((0.0, 0.0, 0.0))["targets_reached"] == 1
    assert path.update(GOAL)["targets_reached"] == 1


def test_distance_reward_follows_the_documented_formula() -> None:
    config = RewardConfig("distance", success=2.5, slack=-0.01)
    path = _path()
    walk = [(0.0, 0.0, 0.0), (1.0, 0.0, 0.0), (1.75, 0.0, 0.0), (2.0, 0.0, 1.5), (2.0, 0.0, 2.8)]
    left = [path.reset(walk[0])["gold_path_left"]]
    rewards = []
    for k, point in enumerate(walk[1:], start=1):
        left.append(path.update(point)["gold_path_left"])
        ended = k == len(walk) - 1
        rewards.append(config.reward(left[-2] - left[-1], ended, success=ended))
    # by hand: D = 5, 4, |(0.25, 3)|, 1.5, 0.2 (the subgoal counts from (1.75, 0, 0) on)
    expected_left = [5.0, 4.0, math.hypot(0.25, 3.0), 1.5, 0.2]
    assert left == pytest.approx(expected_left)
    expected = [a - b - 0.01 for a, b in itertools.pairwise(expected_left)]
    expected[-1] += 2.5
    assert rewards == pytest.approx(expected)
    # the shaping telescopes: Σ r = D_0 − D_T + slack · T + bonus
    assert sum(rewards) == pytest.approx(5.0 - 0.2 - 0.04 + 2.5)


def test_sparse_reward_is_one_only_for_a_successful_end() -> None:
    sparse = RewardConfig()
    assert sparse.kind == "sparse"
    assert sparse.reward(3.0, ended=False, success=False) == 0.0
    assert sparse.reward(3.0, ended=True, success=False) == 0.0
    assert sparse.reward(-1.0, ended=True, success=True) == 1.0
    with pytest.raises(ConfigError, match="unknown reward 'dense'"):
        RewardConfig("dense")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="at least its goal"):
        GoldPath([], RADIUS, straight)


def test_an_episode_without_subgoals_measures_to_the_goal() -> None:
    path = GoldPath([GOAL], RADIUS, straight)
    first = path.reset((2.0, 0.0, 0.0))
    assert first["targets_reached"] == 0 and first["gold_path_left"] == 3.0
    assert path.update(GOAL)["targets_reached"] == 0
