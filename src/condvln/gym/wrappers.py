"""Wrappers that give RL libraries what they expect: fixed-size ``Box`` es, VLN-CE's keys, budgets.

* :class:`BudgetTimeLimit` — Gymnasium's ``TimeLimit`` with each episode's step budget as its
  limit (``gymnasium.make`` applies it; truncation, never termination).
* :class:`HabitatObservation` — VLN-CE's observation keys: ``rgb`` / ``depth`` / ``semantic``
  (the protocol's sensors, unchanged), ``instruction`` (the instruction's token ids in the
  split's vocabulary, int64 ``(max_tokens,)``, right-padded with :data:`PAD` = 0, the id of
  ``<pad>``; VLN-CE pads to 200 the same way), and with the pose ``heading`` (1,), ``compass``
  (1,) and ``gps`` (2,) float32 as habitat-lab's sensors compute them
  (:func:`~condvln.sim.habitat_obs.pose_sensors`, relative to the episode's start) plus
  ``position`` (3,); ``room_type`` becomes its token ids (int64 ``(ROOM_TOKENS,)``, all
  :data:`PAD` outside every room). ``step`` and ``collided`` stay.
* :class:`FixedDetections` — the detections as ``max_detections`` rows, nearest first, in flat
  keys (no nested ``Dict``, which Stable-Baselines3 cannot take): ``detections_mask`` (int8, 1
  for a real row), ``detections_category`` (int64 ``(K, CATEGORY_TOKENS)`` token ids of the
  category name), ``detections_bearing`` and ``detections_depth`` (float32 ``(K,)``), and with
  the protocol's pose / boxes ``detections_position`` / ``detections_size`` (float32 ``(K, 3)``);
  empty rows are zeros (mask 0).

Unknown words map to ``<unk>`` (1). After :func:`standard_wrappers` every space is a ``Box`` or
``Discrete`` in one flat ``Dict``, so ``AsyncVectorEnv(shared_memory=True)`` works.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.wrappers import TimeLimit

from condvln.errors import ConfigError
from condvln.gym.spaces import EXTENT
from condvln.sim.habitat_obs import pose_sensors
from condvln.sim.protocol import ObservationProtocol
from condvln.vlnce import encode

PAD = 0
"""Token id of ``<pad>`` (the first word of every split's vocabulary, as in VLN-CE)."""

MAX_TOKENS = 200
"""Default instruction length in tokens (VLN-CE's ``instruction_tokens`` are padded to 200)."""

ROOM_TOKENS = 4
CATEGORY_TOKENS = 4
"""Token ids kept per room type and per detection category (longer names are cut)."""

MAX_DETECTIONS = 32
"""Default number of detection rows."""


def _box(shape: tuple[int, ...], low: float, high: float, dtype: type = np.float32) -> spaces.Box:
    return spaces.Box(low=low, high=high, shape=shape, dtype=dtype)


class _Vocabulary:
    """Token ids of words in the wrapped environment's split vocabulary."""

    def __init__(self, env: gymnasium.Env) -> None:
        self.words: tuple[str, ...] = env.unwrapped.vocabulary  # type: ignore[attr-defined]
        self.index = {word: i for i, word in enumerate(self.words)}

    def tokens(self, text: str, length: int) -> np.ndarray:
        """``text``'s token ids, cut or right-padded with :data:`PAD` to ``length``."""
        out = np.full(length, PAD, dtype=np.int64)
        ids = encode(text, self.index)[:length] if text else []
        out[: len(ids)] = ids
        return out

    def space(self, shape: tuple[int, ...]) -> spaces.Box:
        return spaces.Box(0, max(len(self.words) - 1, 1), shape=shape, dtype=np.int64)


def _protocol(env: gymnasium.Env) -> ObservationProtocol:
    return env.unwrapped.protocol  # type: ignore[attr-defined,no-any-return]


class BudgetTimeLimit(TimeLimit):
    """``TimeLimit`` whose limit is the current episode's step budget (``info["step_budget"]``).

    Args:
        env: A :class:`~condvln.gym.env.CondVLNEnv` (possibly wrapped).
        max_episode_steps: The limit before the first reset; the split's largest budget when
            ``None`` (also the spec's ``max_episode_steps``).
    """

    def __init__(self, env: gymnasium.Env, max_episode_steps: int | None = None) -> None:
        largest = int(env.unwrapped.max_episode_steps)  # type: ignore[attr-defined]
        super().__init__(env, max_episode_steps=max_episode_steps or largest)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Reset and take the new episode's budget as the limit."""
        obs, info = super().reset(seed=seed, options=options)
        self._max_episode_steps = int(info["step_budget"])
        return obs, info

    @property
    def spec(self) -> gymnasium.envs.registration.EnvSpec | None:
        """The spec with this wrapper in ``additional_wrappers`` (so ``make`` recreates it) and
        the split's largest budget as ``max_episode_steps``."""
        spec = gymnasium.Wrapper.spec.fget(self)  # type: ignore[attr-defined]
        if spec is not None:
            spec.max_episode_steps = int(self.env.unwrapped.max_episode_steps)  # type: ignore[attr-defined]
        return spec  # type: ignore[no-any-return]


class HabitatObservation(gymnasium.ObservationWrapper, gymnasium.utils.RecordConstructorArgs):
    """VLN-CE's observation keys as fixed-size boxes (see the module notes).

    Args:
        env: A :class:`~condvln.gym.env.CondVLNEnv` (possibly wrapped).
        max_tokens: Instruction length; a split with a longer instruction is refused.

    Raises:
        ConfigError: An instruction of the split has more than ``max_tokens`` tokens.
    """

    def __init__(self, env: gymnasium.Env, max_tokens: int = MAX_TOKENS) -> None:
        gymnasium.utils.RecordConstructorArgs.__init__(self, max_tokens=max_tokens)
        gymnasium.ObservationWrapper.__init__(self, env)
        longest = max(env.unwrapped.specs, key=lambda s: len(s.instruction_tokens))  # type: ignore[attr-defined]
        if len(longest.instruction_tokens) > max_tokens:
            raise ConfigError(
                f"episode {longest.episode_id}: instruction has "
                f"{len(longest.instruction_tokens)} tokens, more than max_tokens={max_tokens}"
            )
        self.max_tokens = max_tokens
        self.tokenizer = _Vocabulary(env)
        self.protocol = _protocol(env)
        self.observation_space = self._space(env.observation_space)
        self._tokens = np.zeros(max_tokens, dtype=np.int64)
        self._start: tuple[np.ndarray, float] | None = None

    def _space(self, inner: spaces.Space) -> spaces.Dict:
        assert isinstance(inner, spaces.Dict)
        fields = dict(inner.spaces)
        fields["instruction"] = self.tokenizer.space((self.max_tokens,))
        if "room_type" in fields:
            fields["room_type"] = self.tokenizer.space((ROOM_TOKENS,))
        if self.protocol.pose:
            fields["position"] = _box((3,), -EXTENT, EXTENT)
            fields["heading"] = _box((1,), -math.pi, math.pi)
            fields["compass"] = _box((1,), -math.pi, math.pi)
            fields["gps"] = _box((2,), -EXTENT, EXTENT)
        return spaces.Dict(fields)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Reset and take the episode's instruction tokens and start pose."""
        obs, info = self.env.reset(seed=seed, options=options)
        self._tokens = np.full(self.max_tokens, PAD, dtype=np.int64)
        tokens = list(info["instruction_tokens"])
        self._tokens[: len(tokens)] = tokens
        if self.protocol.pose:
            self._start = (np.asarray(obs["position"]), float(obs["heading"][0]))
        return self.observation(obs), info

    def observation(self, observation: dict[str, Any]) -> dict[str, Any]:
        """The habitat-keyed observation."""
        out = dict(observation)
        out["instruction"] = self._tokens.copy()
        if "room_type" in out:
            out["room_type"] = self.tokenizer.tokens(out["room_type"], ROOM_TOKENS)
        if self.protocol.pose and self._start is not None:
            position, heading = observation["position"], float(observation["heading"][0])
            out.update(pose_sensors(position, heading, *self._start))
            out["position"] = np.asarray(position, dtype=np.float32)
        return out


class FixedDetections(gymnasium.ObservationWrapper, gymnasium.utils.RecordConstructorArgs):
    """The detections as fixed-size rows with a mask (see the module notes).

    Args:
        env: A :class:`~condvln.gym.env.CondVLNEnv` (possibly wrapped).
        max_detections: Rows; beyond them the farthest detections are dropped.
    """

    def __init__(self, env: gymnasium.Env, max_detections: int = MAX_DETECTIONS) -> None:
        gymnasium.utils.RecordConstructorArgs.__init__(self, max_detections=max_detections)
        gymnasium.ObservationWrapper.__init__(self, env)
        if max_detections < 1:
            raise ConfigError(f"max_detections must be at least 1, got {max_detections}")
        self.rows = max_detections
        self.tokenizer = _Vocabulary(env)
        protocol = _protocol(env)
        rows = (max_detections,)
        self._fields: dict[str, spaces.Box] = {
            "detections_mask": _box(rows, 0, 1, np.int8),
            "detections_category": self.tokenizer.space((max_detections, CATEGORY_TOKENS)),
            "detections_bearing": _box(rows, -math.pi, math.pi),
            "detections_depth": _box(rows, 0.0, EXTENT),
        }
        if protocol.pose:
            self._fields["detections_position"] = _box((max_detections, 3), -EXTENT, EXTENT)
        if protocol.boxes:
            self._fields["detections_size"] = _box((max_detections, 3), 0.0, EXTENT)
        inner = env.observation_space
        assert isinstance(inner, spaces.Dict)
        fields = {k: v for k, v in inner.spaces.items() if k != "detections"}
        self.observation_space = spaces.Dict({**fields, **self._fields})

    def observation(self, observation: dict[str, Any]) -> dict[str, Any]:
        """The observation with the detection rows."""
        out = {k: v for k, v in observation.items() if k != "detections"}
        rows = {k: np.zeros(box.shape, dtype=box.dtype) for k, box in self._fields.items()}
        kept = _nearest(observation["detections"], self.rows)
        for i, det in enumerate(kept):
            rows["detections_mask"][i] = 1
            rows["detections_category"][i] = self.tokenizer.tokens(det["category"], CATEGORY_TOKENS)
            rows["detections_bearing"][i] = det["bearing"][0]
            rows["detections_depth"][i] = det["depth"][0]
            for key in ("position", "size"):
                if f"detections_{key}" in rows:
                    rows[f"detections_{key}"][i] = det[key]
        return out | rows


def _nearest(detections: Sequence[dict[str, Any]], count: int) -> list[dict[str, Any]]:
    """The ``count`` nearest detections, nearest first (ties keep the simulator's order)."""
    order = sorted(range(len(detections)), key=lambda i: float(detections[i]["depth"][0]))
    return [detections[i] for i in order[:count]]


def standard_wrappers(
    env: gymnasium.Env, max_tokens: int = MAX_TOKENS, max_detections: int = MAX_DETECTIONS
) -> gymnasium.Env:
    """``FixedDetections(HabitatObservation(env))``: one flat ``Dict`` of ``Box`` / ``Discrete``."""
    return FixedDetections(HabitatObservation(env, max_tokens), max_detections)
