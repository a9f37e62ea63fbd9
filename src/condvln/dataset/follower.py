"""Ground-truth action sequences: a geometric follower of the reference path (VLN-CE actions).

VLN-CE's ``{split}_gt.json.gz`` holds, per episode, the ``locations`` after every
MOVE_FORWARD (the start first), the ``actions`` (0 STOP, 1 MOVE_FORWARD 0.25 m, 2 TURN_LEFT 15°,
3 TURN_RIGHT 15°) and ``forward_steps`` (the number of forward moves). The follower turns towards
the next waypoint until the heading error is at most half a turn (7.5°), steps forward, and
advances to the next waypoint once within half a step of it (or when a step would no longer
bring it closer); it stops there at the goal. Invariants (checked on the real VLN-CE files): ``locations[0]`` is the start,
``len(locations) == forward_steps + 1``, ``forward_steps == actions.count(1)`` and the actions end
with exactly one STOP.

>>> gt = follow([(0.0, 0.0, 0.0), (0.0, 0.0, -1.0)], start_yaw=0.0)
>>> gt["actions"], gt["forward_steps"], gt["locations"][-1]
([1, 1, 1, 1, 0], 4, [0.0, 0.0, -1.0])
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

STOP, FORWARD, LEFT, RIGHT = 0, 1, 2, 3
FORWARD_STEP = 0.25
TURN_DEGREES = 15.0
_TURN = math.radians(TURN_DEGREES)


def _heading_to(x: float, z: float, tx: float, tz: float) -> float:
    """Habitat yaw that faces from (x, z) towards (tx, tz) (0 faces −Z, +90° faces −X)."""
    return math.atan2(-(tx - x), -(tz - z))


def _wrap(angle: float) -> float:
    return (angle + math.pi) % (2.0 * math.pi) - math.pi


def follow(
    path: Sequence[Sequence[float]], start_yaw: float, max_actions: int = 2000
) -> dict[str, Any]:
    """Actions and locations of a follower of the polyline ``path`` (first point = start).

    Turns change the yaw by exactly 15°; forward moves go 0.25 m along the current heading.
    Locations are rounded to 1e-9 m so that repeated runs and processes agree byte for byte.
    """
    x, y, z = (float(c) for c in path[0])
    yaw = float(start_yaw)
    actions: list[int] = []
    locations = [[x, y, z]]
    for target in path[1:]:
        tx, ty, tz = (float(c) for c in target)
        while math.hypot(tx - x, tz - z) > 0.5 * FORWARD_STEP and len(actions) < max_actions:
            error = _wrap(_heading_to(x, z, tx, tz) - yaw)
            if abs(error) > 0.5 * _TURN + 1e-9:
                actions.append(LEFT if error > 0 else RIGHT)
                yaw = _wrap(yaw + (_TURN if error > 0 else -_TURN))
                continue
            nx = round(x - FORWARD_STEP * math.sin(yaw), 9)
            nz = round(z - FORWARD_STEP * math.cos(yaw), 9)
            if math.hypot(tx - nx, tz - nz) >= math.hypot(tx - x, tz - z):
                break  # a step would not get closer: the waypoint is reached
            x, z, y = nx, nz, ty
            actions.append(FORWARD)
            locations.append([x, y, z])
    actions.append(STOP)
    return {"locations": locations, "actions": actions, "forward_steps": actions.count(FORWARD)}
