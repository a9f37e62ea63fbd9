"""The Gymnasium environment: registration, check_env, wrappers, budgets, rewards, rendering,
vector envs, metrics at the end."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import gymnasium
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.utils.env_checker import check_env
from gymnasium.wrappers import RecordVideo, TimeLimit

import condvln
from condvln.agents import load_agent
from condvln.agents.run import read_trajectories, run_agent
from condvln.errors import ConfigError
from condvln.gym import BudgetTimeLimit, CondVLNEnv, standard_wrappers
from condvln.gym.wrappers import PAD
from condvln.vlnce import encode

SRC = str(Path(condvln.__file__).parent.parent)
AGENTS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "agents.md"
SMALL = {"width": 12, "height": 8}
PIXELS = {"sensors": ["rgb", "depth", "semantic"], "rgb": SMALL, "depth": SMALL, "semantic": SMALL}


def _python(code: str, cwd: Path | None = None, **env: str) -> str:
    """Run ``code`` in a fresh interpreter of this environment; its stdout."""
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env={"PATH": os.environ.get("PATH", ""), **env},
        cwd=cwd,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def test_make_in_a_fresh_interpreter_without_importing_condvln(dataset: Path) -> None:
    """condvln-gymnasium.pth (installed by `pip install -e .`) registers the environment."""
    out = _python(
        f"""
        import sys, warnings
        import gymnasium
        from gymnasium.utils.env_checker import check_env
        env = gymnasium.make("condvln/CondVLN-v0", dataset={str(dataset)!r}, split="train",
                             render_mode="rgb_array", protocol={PIXELS!r})
        print(gymnasium.spec("condvln/CondVLN-v0").entry_point)
        from condvln.gym import standard_wrappers
        env = standard_wrappers(env)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            warnings.filterwarnings("ignore", message=".*different from the unwrapped version")
            check_env(env)
        print(type(env.unwrapped).__name__, env.render().shape[2])
        """
    )
    assert out.split() == ["condvln.gym.env:CondVLNEnv", "CondVLNEnv", "3"], (
        "reinstall (pip install -e .) to get condvln-gymnasium.pth"
    )


def test_docs_example_runs_as_written(dataset: Path, tmp_path: Path) -> None:
    text = AGENTS_PAGE.read_text()
    section = text[text.index("\n## Gymnasium\n") :]
    (block,) = re.findall(r"```python\n(.*?)```", section.split("\n## ", 2)[1], re.S)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "condvln").symlink_to(dataset)
    out = _python(block, cwd=tmp_path)
    assert out.startswith("['collided', 'compass', 'depth', 'detections_bearing',")
    (video,) = (tmp_path / "videos").glob("*.mp4")
    assert video.stat().st_size > 1000


def test_registered_lazily_on_import_of_condvln() -> None:
    out = _python(
        """
        import sys, condvln
        assert "gymnasium" not in sys.modules
        import gymnasium
        print(gymnasium.spec("condvln/CondVLN-v0").entry_point)
        """,
        PYTHONPATH=SRC,
    )
    assert out.strip() == "condvln.gym.env:CondVLNEnv"
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
    for depth in ({}, {"normalize_depth": False, "min_depth": 0.5, "max_depth": 4.0}):
        protocol = PIXELS | {"depth": SMALL | depth}
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


def _leaves(space: spaces.Space) -> list[spaces.Space]:
    if isinstance(space, spaces.Dict):
        return [leaf for sub in space.spaces.values() for leaf in _leaves(sub)]
    return [space]


def test_standard_wrappers_give_boxes_and_vlnce_keys(dataset: Path) -> None:
    base = gymnasium.make(
        "condvln/CondVLN-v0",
        dataset=dataset,
        split="train",
        protocol=PIXELS,
        render_mode="rgb_array",
    )
    env = standard_wrappers(base, max_detections=4)
    space = env.observation_space
    assert isinstance(space, spaces.Dict)
    assert all(isinstance(s, spaces.Box | spaces.Discrete) for s in space.spaces.values())
    assert all(isinstance(s, spaces.Box | spaces.Discrete) for s in _leaves(space))
    assert {"rgb", "depth", "semantic", "instruction", "compass", "gps", "heading"} <= set(space)
    assert space["instruction"].shape == (200,) and space["detections_category"].shape == (4, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", message=".*different from the unwrapped version")
        check_env(env)
    obs, info = env.reset(seed=1)
    tokens = list(info["instruction_tokens"])
    assert obs["instruction"][: len(tokens)].tolist() == tokens
    assert (obs["instruction"][len(tokens) :] == PAD).all()
    assert obs["gps"].tolist() == [0.0, 0.0] and obs["compass"].tolist() == [0.0]
    obs, *_ = env.step(2)  # turn left 15°: compass +15°, still at the start
    assert obs["compass"][0] == pytest.approx(np.radians(15.0), abs=1e-6)
    words = base.unwrapped.vocabulary
    assert words[PAD] == "<pad>"
    index = {w: i for i, w in enumerate(words)}
    rows = obs["detections_mask"].astype(bool)
    raw = base.unwrapped._sim._observe(False).detections
    assert rows.sum() == min(len(raw), 4)
    if rows.any():  # nearest first, category as tokens of the split's vocabulary
        nearest = min(raw, key=lambda d: d.depth)
        assert obs["detections_depth"][0] == pytest.approx(nearest.depth, rel=1e-6)
        first = [t for t in obs["detections_category"][0].tolist() if t != PAD]
        assert first == encode(nearest.category, index)[:4] and first
    assert (obs["detections_depth"][~rows] == 0).all()
    with pytest.raises(ConfigError, match="more than max_tokens=3"):
        standard_wrappers(base, max_tokens=3)


def test_async_vector_env_with_shared_memory(dataset: Path) -> None:
    def make() -> gymnasium.Env:
        env = gymnasium.make("condvln/CondVLN-v0", dataset=dataset, split="train", protocol=PIXELS)
        return standard_wrappers(env, max_detections=8)

    raw = CondVLNEnv(dataset, "train")
    assert "Sequence" in raw.metadata["shared_memory"]
    with pytest.raises(TypeError, match="shared_memory"):
        gymnasium.vector.AsyncVectorEnv([lambda: CondVLNEnv(dataset, "train")], shared_memory=True)
    vec = gymnasium.vector.AsyncVectorEnv([make, make], shared_memory=True)
    try:
        obs, _ = vec.reset(seed=0)
        assert obs["rgb"].shape == (2, 8, 12, 3) and obs["detections_mask"].shape == (2, 8)
        for _ in range(6):
            obs, _, _, _, infos = vec.step(np.array([1, 2]))
            assert vec.observation_space.contains(obs)
        assert infos["path_length"].shape == (2,)
    finally:
        vec.close()


def test_step_budget_is_a_time_limit_that_truncates(dataset: Path) -> None:
    env = gymnasium.make("condvln/CondVLN-v0", dataset=dataset, split="train")
    assert isinstance(env, TimeLimit) and isinstance(env, BudgetTimeLimit)
    largest = max(s.step_budget for s in env.unwrapped.specs)
    assert env.spec.max_episode_steps == largest
    assert env.spec.additional_wrappers[-1].name == "BudgetTimeLimit"
    _, info = env.reset(seed=4)
    assert env.get_wrapper_attr("_max_episode_steps") == info["step_budget"] < largest + 1
    steps, terminated, truncated = 0, False, False
    while not (terminated or truncated):
        _, reward, terminated, truncated, info = env.step(2)  # turn in place until the budget
        steps += 1
    assert steps == info["step_budget"] and truncated and not terminated
    assert "metrics" in info and reward == 0.0
    # a user's own limit still applies on top
    short = gymnasium.make(
        "condvln/CondVLN-v0", dataset=dataset, split="train", max_episode_steps=3
    )
    short.reset(seed=4)
    assert [short.step(2)[3] for _ in range(3)] == [False, False, True]


def test_distance_reward_and_per_step_metrics(dataset: Path) -> None:
    env = CondVLNEnv(dataset, "train", reward="distance", slack_reward=-0.01, success_reward=2.5)
    _, info = env.reset(seed=2)
    keys = {"targets_reached", "distance_to_target", "distance_to_goal", "gold_path_left"}
    assert keys | {"path_length", "collisions", "step_budget"} <= set(info)
    first, total, steps = info["gold_path_left"], 0.0, 0
    for action in [1, 1, 3, 1, 1, 2, 1, 1, 1, 0]:
        _, reward, terminated, truncated, info = env.step(action)
        total, steps = total + reward, steps + 1
        assert keys <= set(info)
        if terminated or truncated:
            break
    bonus = 2.5 if info["metrics"]["success"] else 0.0
    assert total == pytest.approx(first - info["gold_path_left"] - 0.01 * steps + bonus)
    assert info["path_length"] == pytest.approx(info["metrics"]["path_length"], abs=1e-6)
    with pytest.raises(ConfigError, match="unknown reward"):
        CondVLNEnv(dataset, "train", reward="dense")  # type: ignore[arg-type]


def test_rgb_array_frames_and_record_video(dataset: Path, tmp_path: Path) -> None:
    env = gymnasium.make(
        "condvln/CondVLN-v0", dataset=dataset, split="train", render_mode="rgb_array"
    )
    env = RecordVideo(
        env, str(tmp_path / "videos"), episode_trigger=lambda k: k == 0, disable_logger=True
    )
    env.reset(seed=0)
    frame = env.render()
    rgb = env.unwrapped.protocol.rgb
    assert frame.dtype == np.uint8 and frame.shape[0] >= rgb.height and frame.shape[2] == 3
    assert frame[: rgb.height, : rgb.width].std() > 2.0  # the egocentric view: not one flat colour
    for _ in range(4):
        env.step(1)
    assert env.render().shape == frame.shape  # fixed within an episode
    env.close()
    (video,) = (tmp_path / "videos").glob("*.mp4")
    assert video.stat().st_size > 1000
    assert CondVLNEnv(dataset, "train").render() is None  # no render mode: nothing


def test_human_mode_needs_a_display(dataset: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "SDL_VIDEODRIVER"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ConfigError, match=r"render_mode=.human. needs a window.*no display"):
        gymnasium.make("condvln/CondVLN-v0", dataset=dataset, split="train", render_mode="human")
    assert CondVLNEnv(dataset, "train").metadata["render_modes"] == ["rgb_array"]
    with pytest.raises(ConfigError, match="unknown render_mode 'ansi'"):
        CondVLNEnv(dataset, "train", render_mode="ansi")


def test_human_mode_draws_the_frames_in_a_window(dataset: Path) -> None:
    out = _python(
        f"""
        import numpy as np
        from condvln.gym import CondVLNEnv
        env = CondVLNEnv({str(dataset)!r}, "train", render_mode="human")
        import pygame  # after the window's module (which hides pygame's banner)
        env.reset(seed=0)
        env.step(1)
        shown = pygame.surfarray.array3d(pygame.display.get_surface()).transpose(1, 0, 2)
        again = CondVLNEnv({str(dataset)!r}, "train", render_mode="rgb_array")
        again.reset(seed=0)
        again.step(1)
        print(env.metadata["render_modes"], np.array_equal(shown, again.render()))
        env.close()
        """,
        SDL_VIDEODRIVER="dummy",
    )
    assert out.strip() == "['rgb_array', 'human'] True"


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
    assert info["distance_to_goal"] == pytest.approx(metrics["distance_to_goal"], abs=1e-6)


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
