"""A Gymnasium environment over a CondVLN dataset split: ``gymnasium.make("condvln/CondVLN-v0")``.

::

    import gymnasium
    env = gymnasium.make("condvln/CondVLN-v0", dataset="data/condvln", split="val_unseen")
    obs, info = env.reset(seed=0)

Each ``reset`` starts one episode of the split: the one named by ``options={"episode_id": ID}``,
else one drawn with the environment's seeded generator. Actions are ``Discrete(4)`` (VLN-CE: 0
STOP, 1 FORWARD, 2 LEFT, 3 RIGHT). The episode *terminates* on STOP and is *truncated* when its
step budget runs out; ``gymnasium.make`` wraps the environment in
:class:`~condvln.gym.wrappers.BudgetTimeLimit`, a ``TimeLimit`` whose limit is each episode's
budget (``env.spec.max_episode_steps`` is the split's largest). Observations: see
:mod:`condvln.gym.spaces`; :mod:`condvln.gym.wrappers` makes them fixed-size for RL libraries.

**Rewards** (``reward="sparse"`` or ``"distance"``, :mod:`condvln.gym.progress`): sparse gives
1 on the last step of a successful episode; distance-shaped gives the progress along the gold
path (geodesic to the next subgoal, then the goal) minus a slack, plus a success bonus.

**Info.** Every ``reset`` and ``step`` puts the per-step metrics in ``info``: ``step_budget``,
``targets_reached``, ``distance_to_target``, ``distance_to_goal``, ``gold_path_left``,
``path_length`` (metres walked) and ``collisions``. At the end of an episode ``info["metrics"]``
holds its scores (``success``, ``spl``, ``ndtw``, ``bsa``, ``csr``, … as ``condvln evaluate``
computes them); ``reset`` also puts the :class:`~condvln.agents.base.EpisodeView` (with the map
planner when the protocol gives it) in ``info["episode"]`` and the instruction's token ids in
``info["instruction_tokens"]``.

**Rendering.** ``render_mode="rgb_array"``: :meth:`CondVLNEnv.render` returns the frame of the
episode videos (egocentric RGB from the protocol's RGB camera beside the top-down map with the
path so far, instruction below; the size is fixed within an episode); ``"human"`` shows the
same frames in a window (:mod:`condvln.gym.viewer`); without a display it is refused with a
one-line error, and the instance's ``metadata["render_modes"]`` lists only ``"rgb_array"``.

**Vector environments.** ``SyncVectorEnv`` and ``AsyncVectorEnv(shared_memory=False)`` work as
is; shared memory needs fixed-size spaces, which the wrappers give
(``metadata["shared_memory"]`` says so).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, ClassVar

import gymnasium
import numpy as np
from gymnasium import spaces

from condvln.agents.run import EpisodeSpec, episode_seeds, episode_specs
from condvln.agents.runner.episodes import episode_view
from condvln.errors import ConfigError
from condvln.evaluation.evaluate import SceneGeodesic, load_split_episodes, score_prediction
from condvln.evaluation.predictions import Trajectory
from condvln.evaluation.reference import fidelity_reference, gt_locations
from condvln.gym.progress import GoldPath, RewardConfig, RewardKind
from condvln.gym.spaces import observation_space, to_gym
from condvln.gym.viewer import Window, missing_display
from condvln.nav import GridNavigator
from condvln.scene.serialize import load_scene
from condvln.sim.protocol import Observation, ObservationProtocol, parse_protocol
from condvln.sim.simulator import STOP, Simulator
from condvln.sim.video import FPS, EpisodeFrames
from condvln.vlnce import load_split

ENV_ID = "condvln/CondVLN-v0"


class CondVLNEnv(gymnasium.Env):
    """CondVLN episodes in the built-in simulator (see the module notes).

    Args:
        dataset: The dataset folder (``condvln generate`` output).
        split: The split.
        protocol: Observation protocol overrides (defaults when omitted).
        instruction_source: ``"original"`` or ``"oracle"`` (the oracle-linear text).
        seed: Run seed of the per-episode agent and perception seeds.
        render_mode: ``None``, ``"rgb_array"`` or ``"human"``.
        reward: ``"sparse"`` or ``"distance"``.
        success_reward: Success bonus of the distance reward.
        slack_reward: Per-step term of the distance reward.
    """

    metadata: ClassVar[dict[str, Any]] = {
        "render_modes": ["rgb_array", "human"],
        "render_fps": FPS,
        "shared_memory": (
            "not as is: `instruction` / `room_type` are Text and `detections` a variable-length "
            "Sequence; condvln.gym.wrappers.standard_wrappers makes every space a fixed-size Box"
        ),
    }

    def __init__(
        self,
        dataset: str | Path,
        split: str = "val_unseen",
        protocol: dict[str, Any] | ObservationProtocol | None = None,
        instruction_source: str = "original",
        seed: int = 0,
        render_mode: str | None = None,
        reward: RewardKind = "sparse",
        success_reward: float = 2.5,
        slack_reward: float = -0.01,
    ) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ConfigError(f"unknown render_mode {render_mode!r} (known: 'rgb_array', 'human')")
        self.render_mode = render_mode
        self._window = Window(FPS) if render_mode == "human" else None  # no display: refused
        if missing_display():  # what this instance can show (env_checker tries every mode)
            self.metadata = {**self.metadata, "render_modes": ["rgb_array"]}
        self.reward_config = RewardConfig(reward, success_reward, slack_reward)
        self.dataset = Path(dataset).resolve()
        self.split = split
        self.protocol = parse_protocol(protocol)
        self.run_seed = seed
        self.specs: list[EpisodeSpec] = episode_specs(self.dataset, split, instruction_source)
        if not self.specs:
            raise ConfigError(f"split {split!r} of {self.dataset} has no episodes")
        self.vocabulary: tuple[str, ...] = tuple(
            load_split(self.dataset, split)["instruction_vocab"]["word_list"]
        )
        """The split's word list: token ``i`` is ``vocabulary[i]`` (0 ``<pad>``, 1 ``<unk>``)."""
        self.max_episode_steps = max(s.step_budget for s in self.specs)
        self._index = {str(s.episode_id): i for i, s in enumerate(self.specs)}
        self._labels = {str(e["episode_id"]): e for e in load_split_episodes(self.dataset, split)}
        self._gt_locations = gt_locations(self.dataset, split)[0]  # nDTW reference, as evaluate
        self.observation_space = observation_space(self.protocol)
        self.action_space = spaces.Discrete(4)
        self._scene_id: str | None = None
        self._sim: Simulator | None = None
        self._geodesic: SceneGeodesic | None = None
        self._spec: EpisodeSpec | None = None
        self._gold: GoldPath | None = None
        self._walked = 0.0
        self._collisions = 0
        self._progress: dict[str, Any] = {}
        self._frames: EpisodeFrames | None = None
        self._drawn = 0
        self._observation: Observation | None = None

    def _load(self, scene_id: str) -> Simulator:
        if scene_id != self._scene_id:
            nav = GridNavigator(load_scene(self.dataset / scene_id))
            self._sim = Simulator(nav.scene, self.protocol, navigator=nav)
            self._geodesic = SceneGeodesic(self.dataset / scene_id)
            self._scene_id = scene_id
        assert self._sim is not None
        return self._sim

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Start an episode (``options={"episode_id": ID}`` picks it)."""
        super().reset(seed=seed)
        wanted = (options or {}).get("episode_id")
        if wanted is None:
            index = int(self.np_random.integers(len(self.specs)))
        elif str(wanted) in self._index:
            index = self._index[str(wanted)]
        else:
            raise ConfigError(f"episode {wanted!r} is not in split {self.split!r}")
        spec = self._spec = self.specs[index]
        sim = self._load(spec.scene_id)
        perception_seed, agent_seed = episode_seeds(self.run_seed, spec.episode_id)
        obs = sim.reset(
            spec.start_position,
            spec.start_yaw,
            instruction=spec.instruction,
            step_budget=spec.step_budget,
            seed=perception_seed,
        )
        self._gold = self._gold_path(spec)
        self._walked, self._collisions = 0.0, 0
        self._progress = self._gold.reset(spec.start_position)
        self._frames = None
        info = self._info() | {
            "episode": episode_view(spec, sim, agent_seed),
            "instruction_tokens": spec.instruction_tokens,
        }
        self._observation = obs
        self._show()
        return to_gym(obs, self.protocol), info

    def _gold_path(self, spec: EpisodeSpec) -> GoldPath:
        episode = self._labels[str(spec.episode_id)]
        goal = episode["goals"][0]
        radius = float(goal["radius"])
        targets = [s["position"] for s in episode["info"]["condvln"]["subgoals"]]
        geodesic = self._geodesic
        assert geodesic is not None
        return GoldPath(
            [*targets, goal["position"]],
            radius,
            lambda points, target: geodesic.distances(points, target, radius),
        )

    def _info(self) -> dict[str, Any]:
        assert self._spec is not None
        return {
            "episode_id": self._spec.episode_id,
            "step_budget": self._spec.step_budget,
            **self._progress,
            "path_length": self._walked,
            "collisions": self._collisions,
        }

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        """Apply an action; metrics in ``info["metrics"]`` when the episode ends."""
        if self._sim is None or self._spec is None or self._gold is None:
            raise ConfigError("call reset() before step()")
        if isinstance(action, (bool, np.bool_)) or not self.action_space.contains(action):
            raise ConfigError(f"invalid action {action!r} (0 STOP, 1 FORWARD, 2 LEFT, 3 RIGHT)")
        before = self._sim.position
        obs = self._sim.step(int(action))
        self._walked += math.dist(before, self._sim.position)
        self._collisions += int(obs.collided)
        left = self._progress["gold_path_left"]
        self._progress = self._gold.update(self._sim.position)
        info = self._info()
        terminated = int(action) == STOP
        truncated = self._sim.done and not terminated
        success = False
        if terminated or truncated:
            info["metrics"] = self._score()
            success = bool(info["metrics"]["success"])
        progress = left - self._progress["gold_path_left"]
        reward = self.reward_config.reward(progress, terminated or truncated, success)
        self._observation = obs
        self._show()
        return to_gym(obs, self.protocol), reward, terminated, truncated, info

    def _score(self) -> dict[str, Any]:
        assert self._sim is not None and self._spec is not None and self._geodesic is not None
        traj = self._sim.trajectory()
        prediction = Trajectory(
            np.asarray(traj.positions, dtype=np.float64),
            np.asarray(traj.headings, dtype=np.float64),
            np.asarray(traj.actions, dtype=np.int64),
            traj.stop,
        )
        episode = self._labels[str(self._spec.episode_id)]
        reference, _ = fidelity_reference(episode, self._gt_locations)
        return dict(score_prediction(episode, prediction, self._geodesic, reference))

    # --- rendering -----------------------------------------------------------------------------

    def _frame(self) -> np.ndarray:
        """The frame of the current pose (the episode videos' layout)."""
        sim, spec = self._sim, self._spec
        if sim is None or spec is None or self._observation is None:
            raise ConfigError("call reset() before render()")
        if self._frames is None:
            self._frames = EpisodeFrames(
                sim.renderer(), sim.navigator, self.protocol.rgb, spec.instruction
            )
            self._drawn = 0
        positions = sim.trajectory().positions
        for position in positions[self._drawn : -1]:  # poses not rendered since the last frame
            self._frames.walk(position)
        self._drawn = len(positions)
        return self._frames.add(sim.position, sim.yaw, self._observation.images.get("rgb"))

    def _show(self) -> None:
        if self._window is not None:
            self._window.show(self._frame())

    def render(self) -> np.ndarray | None:
        """The current frame (``"rgb_array"``: uint8 H×W×3); ``None`` in other modes."""
        if self.render_mode == "rgb_array":
            return self._frame()
        return None

    def close(self) -> None:
        """Close the window of ``render_mode="human"``."""
        if self._window is not None:
            self._window.close()
        super().close()
