"""A Gymnasium environment over a CondVLN dataset split: ``gymnasium.make("condvln/CondVLN-v0")``.

::

    import condvln, gymnasium
    env = gymnasium.make("condvln/CondVLN-v0", dataset="data/condvln", split="val_unseen")
    obs, info = env.reset(seed=0)
    vec = gymnasium.vector.AsyncVectorEnv([make] * 4, shared_memory=False)  # detections vary

Each ``reset`` starts one episode of the split: the one named by ``options={"episode_id": ID}``,
else one drawn with the environment's seeded generator. Actions are ``Discrete(4)`` (VLN-CE: 0
STOP, 1 FORWARD, 2 LEFT, 3 RIGHT). The episode *terminates* on STOP and is *truncated* when its
step budget runs out; the reward is 1.0 on the final step of a successful episode, else 0.0.
``info["metrics"]`` holds the episode's scores (``success``, ``spl``, ``ndtw``, ``bsa``, ``csr``,
…, as ``condvln evaluate`` computes them) at the end of every episode; ``reset`` puts the
:class:`~condvln.agents.base.EpisodeView` (with the map planner when the protocol gives it) in
``info["episode"]``.

The observation space is a ``Dict`` matching the :class:`~condvln.sim.protocol.Observation`
fields the protocol switches on: ``instruction`` and ``room_type`` (``Text``; ``""`` outside
every room), ``step`` (``Box`` int64, shape ``(1,)``), ``position`` (3,) and ``heading`` (1,)
with the pose, ``collided`` (``Discrete(2)``) and ``detections``, a ``Sequence`` of ``Dict``
(``category``, ``bearing``, ``depth``, plus ``position`` with the pose and ``size`` with boxes,
zeros when the object has no box). With pixel ``sensors`` in the protocol it also has their
images as ``Box`` es with habitat's shapes and dtypes (:func:`image_spaces`): ``rgb`` uint8
H×W×3, ``depth`` float32 H×W×1 (in ``[0, 1]`` when normalised, else ``[min_depth, max_depth]``
metres) and ``semantic`` int32 H×W×1 instance ids (meanings in ``info["episode"].semantics``).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, ClassVar

import gymnasium
import numpy as np
from gymnasium import spaces

from condvln.agents.base import EpisodeView
from condvln.agents.run import EpisodeSpec, episode_seeds, episode_specs
from condvln.errors import ConfigError
from condvln.evaluation.evaluate import SceneGeodesic, load_split_episodes, score_prediction
from condvln.evaluation.predictions import Trajectory
from condvln.evaluation.reference import fidelity_reference, gt_locations
from condvln.nav import GridNavigator
from condvln.scene.serialize import load_scene
from condvln.sim.protocol import Observation, ObservationProtocol, parse_protocol
from condvln.sim.simulator import STOP, Simulator

ENV_ID = "condvln/CondVLN-v0"

CHARSET = "".join(chr(c) for c in range(32, 127)) + "".join(chr(c) for c in range(160, 384))
"""Characters allowed in the text observations (printable ASCII and Latin letters)."""

MAX_TEXT = 4096
MAX_STEP = 1_000_000
EXTENT = 10_000.0
"""Bound of coordinates and sizes in metres (Box spaces are finite)."""


def _text(max_length: int = MAX_TEXT) -> spaces.Text:
    return spaces.Text(max_length=max_length, min_length=0, charset=CHARSET)


def _box(shape: tuple[int, ...], low: float = -EXTENT, high: float = EXTENT) -> spaces.Box:
    return spaces.Box(low=low, high=high, shape=shape, dtype=np.float64)


def observation_space(protocol: ObservationProtocol) -> spaces.Dict:
    """The ``Dict`` space of a protocol's observations (see the module notes)."""
    detection: dict[str, spaces.Space] = {
        "category": _text(256),
        "bearing": _box((1,), -math.pi, math.pi),
        "depth": _box((1,), 0.0),
    }
    if protocol.pose:
        detection["position"] = _box((3,))
    if protocol.boxes:
        detection["size"] = _box((3,), 0.0)
    fields: dict[str, spaces.Space] = {
        "instruction": _text(),
        "step": spaces.Box(0, MAX_STEP, shape=(1,), dtype=np.int64),
        "collided": spaces.Discrete(2),
        "detections": spaces.Sequence(spaces.Dict(detection), stack=False),
    }
    if protocol.pose:
        fields["position"] = _box((3,))
        fields["heading"] = _box((1,), -math.pi, math.pi)
    if protocol.room_type:
        fields["room_type"] = _text(256)
    fields.update(image_spaces(protocol))
    return spaces.Dict(fields)


def image_spaces(protocol: ObservationProtocol) -> dict[str, spaces.Box]:
    """``Box`` spaces of the protocol's pixel sensors, with habitat's shapes and dtypes.

    >>> from condvln.sim.protocol import parse_protocol
    >>> boxes = image_spaces(parse_protocol({"sensors": ["rgb", "depth", "semantic"]}))
    >>> [(k, b.shape, b.dtype.name) for k, b in boxes.items()]
    [('rgb', (224, 224, 3), 'uint8'), ('depth', (256, 256, 1), 'float32'), ('semantic', (256, 256, 1), 'int32')]
    >>> float(boxes["depth"].low.min()), float(boxes["depth"].high.max())
    (0.0, 1.0)
    """
    out: dict[str, spaces.Box] = {}
    for name in protocol.sensors:
        if name == "rgb":
            cam = protocol.rgb
            out[name] = spaces.Box(0, 255, (cam.height, cam.width, 3), np.uint8)
        elif name == "depth":
            depth = protocol.depth
            low, high = (0.0, 1.0) if depth.normalize_depth else (depth.min_depth, depth.max_depth)
            out[name] = spaces.Box(low, high, (depth.height, depth.width, 1), np.float32)
        else:
            cam = protocol.semantic
            top = np.iinfo(np.int32).max
            out[name] = spaces.Box(0, top, (cam.height, cam.width, 1), np.int32)
    return out


def _clean(text: str) -> str:
    return "".join(c if c in CHARSET else "?" for c in text)


def to_gym(obs: Observation, protocol: ObservationProtocol) -> dict[str, Any]:
    """An :class:`Observation` as an element of :func:`observation_space`."""
    detections = []
    for det in obs.detections:
        item: dict[str, Any] = {
            "category": _clean(det.category),
            "bearing": np.array([det.bearing]),
            "depth": np.array([det.depth]),
        }
        if protocol.pose:
            item["position"] = np.array(det.position, dtype=np.float64)
        if protocol.boxes:
            item["size"] = np.array(det.size or (0.0, 0.0, 0.0), dtype=np.float64)
        detections.append(item)
    out: dict[str, Any] = {
        "instruction": _clean(obs.instruction),
        "step": np.array([obs.step], dtype=np.int64),
        "collided": int(obs.collided),
        "detections": tuple(detections),
    }
    if protocol.pose:
        out["position"] = np.array(obs.position, dtype=np.float64)
        out["heading"] = np.array([obs.heading], dtype=np.float64)
    if protocol.room_type:
        out["room_type"] = _clean(obs.room_type or "")
    for name in protocol.sensors:
        out[name] = obs.images[name]
    return out


class CondVLNEnv(gymnasium.Env):
    """CondVLN episodes in the built-in simulator (see the module notes).

    Args:
        dataset: The dataset folder (``condvln generate`` output).
        split: The split.
        protocol: Observation protocol overrides (defaults when omitted).
        instruction_source: ``"original"`` or ``"oracle"`` (the oracle-linear text).
        seed: Run seed of the per-episode agent and perception seeds.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": []}

    def __init__(
        self,
        dataset: str | Path,
        split: str = "val_unseen",
        protocol: dict[str, Any] | ObservationProtocol | None = None,
        instruction_source: str = "original",
        seed: int = 0,
    ) -> None:
        self.dataset = Path(dataset).resolve()
        self.split = split
        self.protocol = parse_protocol(protocol)
        self.run_seed = seed
        self.specs: list[EpisodeSpec] = episode_specs(self.dataset, split, instruction_source)
        if not self.specs:
            raise ConfigError(f"split {split!r} of {self.dataset} has no episodes")
        self._index = {str(s.episode_id): i for i, s in enumerate(self.specs)}
        self._labels = {str(e["episode_id"]): e for e in load_split_episodes(self.dataset, split)}
        self._gt_locations = gt_locations(self.dataset, split)[0]  # nDTW reference, as evaluate
        self.observation_space = observation_space(self.protocol)
        self.action_space = spaces.Discrete(4)
        self._scene_id: str | None = None
        self._sim: Simulator | None = None
        self._geodesic: SceneGeodesic | None = None
        self._spec: EpisodeSpec | None = None

    def _load(self, scene_id: str) -> Simulator:
        if scene_id != self._scene_id:
            nav = GridNavigator(load_scene(self.dataset / scene_id))
            self._sim = Simulator(nav.scene, self.protocol, navigator=nav)
            self._geodesic = None
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
        view = EpisodeView(
            episode_id=spec.episode_id,
            scene_id=spec.scene_id,
            instruction=spec.instruction,
            step_budget=spec.step_budget,
            protocol=self.protocol,
            map=sim.map_view() if self.protocol.map_access else None,
            seed=agent_seed,
            semantics=sim.semantic_table() if "semantic" in self.protocol.sensors else None,
            instruction_tokens=spec.instruction_tokens,
            trajectory_id=spec.trajectory_id,
        )
        return to_gym(obs, self.protocol), {"episode_id": spec.episode_id, "episode": view}

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        """Apply an action; metrics in ``info["metrics"]`` when the episode ends."""
        if self._sim is None or self._spec is None:
            raise ConfigError("call reset() before step()")
        if isinstance(action, (bool, np.bool_)) or not self.action_space.contains(action):
            raise ConfigError(f"invalid action {action!r} (0 STOP, 1 FORWARD, 2 LEFT, 3 RIGHT)")
        obs = self._sim.step(int(action))
        info: dict[str, Any] = {"episode_id": self._spec.episode_id}
        terminated = int(action) == STOP
        truncated = self._sim.done and not terminated
        reward = 0.0
        if terminated or truncated:
            info["metrics"] = self._score()
            reward = float(bool(info["metrics"]["success"]))
        return to_gym(obs, self.protocol), reward, terminated, truncated, info

    def _score(self) -> dict[str, Any]:
        assert self._sim is not None and self._spec is not None
        if self._geodesic is None:
            self._geodesic = SceneGeodesic(self.dataset / self._spec.scene_id)
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
