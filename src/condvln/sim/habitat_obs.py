"""Observations as habitat-lab observation dicts, so a habitat agent's preprocessing applies.

Keys, shapes and dtypes are habitat-lab's sensors (``habitat/sims/habitat_simulator`` and
``habitat/tasks/nav``, VLN task):

=============== =========================== ================================================
key             value                       habitat sensor
=============== =========================== ================================================
``rgb``         uint8 H×W×3                 ``HabitatSimRGBSensor``
``depth``       float32 H×W×1               ``HabitatSimDepthSensor`` (clipped, normalised)
``semantic``    int32 H×W×1                 ``HabitatSimSemanticSensor`` (instance ids)
``instruction`` ``{"text", "tokens",          ``InstructionSensor`` (habitat-lab's VLN task):
                "trajectory_id"}``          the episode's ``instruction_tokens`` (vocabulary
                                            indices) and ``trajectory_id``
``heading``     float32 (1,)                ``HeadingSensor``: yaw, counter-clockwise from −Z
``compass``     float32 (1,)                ``EpisodicCompassSensor``: yaw − start yaw
``gps``         float32 (2,)                ``EpisodicGPSSensor``: ``[forward, right]`` of the
                                            start frame, metres
=============== =========================== ================================================

Image keys appear for the protocol's sensors only; ``heading`` / ``compass`` / ``gps`` only when
the protocol gives the pose.

>>> from condvln.sim.protocol import Observation
>>> obs = Observation("Go.", 0, (1.0, 0.0, 2.0), math.pi / 2, None, ())
>>> out = habitat_observation(obs, start_position=(1.0, 0.0, 3.0), start_yaw=math.pi / 2,
...                           tokens=[7, 4], trajectory_id=3)
>>> sorted(out), out["instruction"], out["compass"].tolist(), np.round(out["gps"], 6).tolist()
(['compass', 'gps', 'heading', 'instruction'], {'text': 'Go.', 'tokens': [7, 4], 'trajectory_id': 3}, [0.0], [0.0, 1.0])
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from condvln.sim.protocol import Observation


def _wrap(angle: float) -> float:
    return (angle + math.pi) % (2.0 * math.pi) - math.pi


def habitat_observation(
    obs: Observation,
    *,
    start_position: Sequence[float],
    start_yaw: float,
    tokens: Sequence[int] = (),
    trajectory_id: int | None = None,
) -> dict[str, Any]:
    """The habitat-lab observation dict of ``obs`` (see the module table).

    Args:
        obs: The simulator's observation.
        start_position: The episode's start position (origin of ``gps``).
        start_yaw: The episode's start yaw (zero of ``compass``, axes of ``gps``).
        tokens: The instruction's token indices (the episode's ``instruction_tokens``).
        trajectory_id: The episode's ``trajectory_id``.
    """
    out: dict[str, Any] = dict(obs.images)
    out["instruction"] = {
        "text": obs.instruction,
        "tokens": [int(t) for t in tokens],
        "trajectory_id": trajectory_id,
    }
    if obs.position is not None and obs.heading is not None:
        out.update(pose_sensors(obs.position, obs.heading, start_position, start_yaw))
    return out


def pose_sensors(
    position: Sequence[float],
    heading: float,
    start_position: Sequence[float],
    start_yaw: float,
) -> dict[str, np.ndarray]:
    """habitat's ``heading``, ``compass`` and ``gps`` of a pose (see the module table).

    >>> out = pose_sensors((2.0, 0.0, 0.0), 0.5, (0.0, 0.0, 0.0), 0.0)
    >>> out["heading"].tolist(), out["compass"].tolist(), out["gps"].tolist()
    ([0.5], [0.5], [-0.0, 2.0])
    """
    dx = position[0] - start_position[0]
    dz = position[2] - start_position[2]
    # the offset in the start frame (rotate by −start_yaw about +Y), then [−z, x]
    c, s = math.cos(start_yaw), math.sin(start_yaw)
    local_x, local_z = c * dx - s * dz, s * dx + c * dz
    return {
        "heading": np.array([heading], dtype=np.float32),
        "compass": np.array([_wrap(heading - start_yaw)], dtype=np.float32),
        "gps": np.array([-local_z, local_x], dtype=np.float32),
    }
