"""The Gymnasium environment: registration, check_env, vector envs, metrics at the end."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import condvln
from condvln.agents import load_agent
from condvln.agents.gym_env import CondVLNEnv
from condvln.agents.run import read_trajectories, run_agent
from condvln.errors import ConfigError

SRC = str(Path(condvln.__file__).parent.parent)


def test_registered_lazily_on_import_of_condvln() -> None:
    code = (
        "import sys, condvln\n"
        "assert 'gymnasium' not in sys.modules\n"
        "import gymnasium\n"
        "print(gymnasium.spec('condvln/CondVLN-v0').entry_point)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": SRC},
        check=True,
    )
    assert out.stdout.strip() == "condvln.agents.gym_env:CondVLNEnv"
    assert gymnasium.spec("condvln/CondVLN-v0") is not None  # gymnasium imported first


def test_passes_check_env_without_warnings(dataset: Path) -> None:
    for protocol in ({}, {"pose": False, "room_type": False, "boxes": False, "map_access": False}):
        env = gymnasium.make(
            "condvln/CondVLN-v0", dataset=dataset, split="train", protocol=protocol
        )
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            check_env(env.unwrapped)
        assert isinstance(env.action_space, gymnasium.spaces.Discrete) and env.action_space.n == 4
        assert ("position" in env.observation_space.spaces) is not bool(protocol)


def test_pixel_observations_pass_check_env(dataset: Path) -> None:
    small = {"width": 12, "height": 8}
    for depth in ({}, {"normalize_depth": False, "min_depth": 0.5, "max_depth": 4.0}):
        protocol = {
            "sensors": ["rgb", "depth", "semantic"],
            "rgb": small,
            "depth": small | depth,
            "semantic": small,
        }
        env = gymnasium.make(
            "condvln/CondVLN-v0", dataset=dataset, split="train", protocol=protocol
        )
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            check_env(env.unwrapped)
        space = env.observation_space.spaces
        assert space["rgb"].shape == (8, 12, 3) and space["rgb"].dtype == np.uint8
        assert space["semantic"].shape == (8, 12, 1) and space["semantic"].dtype == np.int32
        assert space["depth"].dtype == np.float32
        obs, info = env.reset(seed=0)
        assert env.observation_space.contains(obs)
        for _ in range(5):
            obs, *_ = env.step(2)
            assert env.observation_space.contains(obs)
        assert obs["rgb"].any() and (obs["semantic"] > 0).any()
        assert info["episode"].semantics is not None
        metres = obs["depth"] if depth else obs["depth"] * 10.0
        assert metres.max() <= (4.0 if depth else 10.0) and metres.min() >= (0.5 if depth else 0)
    # without sensors there are no image entries
    plain = CondVLNEnv(dataset, "train").observation_space.spaces
    assert not {"rgb", "depth", "semantic"} & set(plain)


def test_episode_matches_the_runner_and_ends_with_metrics(dataset: Path, tmp_path: Path) -> None:
    run_agent("neurosymbolic", dataset, "train", tmp_path, limit=1)
    (record,) = read_trajectories(tmp_path / "trajectories.jsonl")
    env = CondVLNEnv(dataset, "train")
    obs, info = env.reset(seed=3, options={"episode_id": record["episode_id"]})
    agent = load_agent("neurosymbolic")
    agent.reset(info["episode"])
    sim_obs = env._sim._observe(False)  # the agent reads the simulator's own observation
    actions, positions, done = [], [list(obs["position"])], False
    while not done:
        action = agent.act(sim_obs)
        obs, reward, terminated, truncated, info = env.step(action)
        sim_obs = env._sim._observe(obs["collided"] == 1)
        actions.append(action)
        positions.append(list(obs["position"]))
        done = terminated or truncated
        assert env.observation_space.contains(obs)
    assert actions == record["actions"] and positions == record["positions"]
    assert terminated == record["stop"] and info["episode_id"] == record["episode_id"]
    metrics = info["metrics"]
    assert {"success", "spl", "ndtw", "bsa", "csr", "distance_to_goal"} <= set(metrics)
    assert reward == float(bool(metrics["success"]))


def test_vector_envs(dataset: Path) -> None:
    def make() -> gymnasium.Env:
        return gymnasium.make("condvln/CondVLN-v0", dataset=dataset, split="train")

    for vec in (
        gymnasium.vector.SyncVectorEnv([make, make]),
        gymnasium.vector.AsyncVectorEnv([make, make], shared_memory=False),  # detections vary
    ):
        obs, _ = vec.reset(seed=0)
        assert obs["step"].shape == (2, 1) and len(obs["detections"]) == 2
        ends = 0
        for _ in range(60):
            obs, _, terminated, _, _ = vec.step(np.array([1, 0]))
            ends += int(terminated[1])
            assert vec.single_observation_space.contains({k: v[0] for k, v in obs.items()})
        assert ends >= 20  # env 1 stops every other step (autoreset in between)
        vec.close()


def test_reset_is_seeded_and_rejects_unknown_episodes(dataset: Path) -> None:
    env = CondVLNEnv(dataset, "train")
    first = env.reset(seed=11)[1]["episode_id"]
    assert env.reset(seed=11)[1]["episode_id"] == first
    with pytest.raises(ConfigError, match="episode 'nope' is not in split 'train'"):
        env.reset(options={"episode_id": "nope"})
    with pytest.raises(ConfigError, match="invalid action True"):
        env.step(True)
