"""Approach points: where the agent arrives at an object (shared by every navigator backend).

The candidates are navigable grid-cell centres within ``reach`` of the object's footprint; the
rule that picks one is :func:`choose_approach`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from condvln.nav.area import NavArea, footprint_distance
from condvln.nav.grid import FloatArray, IntArray
from condvln.scene.model import SceneObject


def choose_approach(
    obj: SceneObject,
    xz: FloatArray,
    reach: float,
    preferred: NDArray[np.bool_] | None = None,
    tolerance: float = 0.05,
) -> int | None:
    """Index of the approach point of ``obj`` among navigable candidates ``xz`` ``(N, 2)``.

    Candidates farther than ``reach`` from the footprint are dropped; when ``preferred`` marks
    any remaining candidate (e.g. those in the object's room) only those are kept. Candidates
    within ``tolerance`` (one grid cell) of the smallest footprint distance count as equally
    near; of those the one closest to the object's centre wins (the middle of the nearest free
    side rather than a corner), then the first.

    >>> cup = SceneObject(id="c", category="cup", label="Cup", center=(0, 1, 0), size=(1, 1, 1))
    >>> choose_approach(cup, np.array([[2.0, 0.0], [0.6, 0.6], [0.0, 0.62]]), 1.0)
    2
    """
    gap = footprint_distance(obj, xz)
    keep = gap <= reach
    if preferred is not None and (keep & preferred).any():
        keep &= preferred
    if not keep.any():
        return None
    keep &= gap <= gap[keep].min() + tolerance
    (index,) = np.nonzero(keep)
    to_centre = np.hypot(xz[index, 0] - obj.center[0], xz[index, 1] - obj.center[2])
    return int(index[np.argmin(to_centre)])


def _window(
    area: NavArea, obj: SceneObject, reach: float, allowed: NDArray[np.bool_]
) -> tuple[IntArray, IntArray]:
    """Allowed cells within ``reach`` (plus the object's extent) of the object's box."""
    bbox = obj.box
    lo = np.array([bbox.min[0], bbox.min[2]]) if bbox else np.array(obj.center)[[0, 2]]
    hi = np.array([bbox.max[0], bbox.max[2]]) if bbox else lo.copy()
    pad = reach + (0.0 if bbox else (obj.radius or 0.0))
    (r0, r1), (c0, c1), _ = area.frame.cells(np.vstack([lo - pad, hi + pad]))
    rows, cols = np.nonzero(allowed[r0 : r1 + 1, c0 : c1 + 1])
    return rows + r0, cols + c0


def grid_approach(
    area: NavArea,
    obj: SceneObject,
    reach: float,
    allowed: NDArray[np.bool_],
    room: int | None,
) -> tuple[float, float, float] | None:
    """The approach point of ``obj`` among the ``allowed`` cell centres of ``area``.

    Candidates are allowed cells within ``reach`` of the object's footprint, preferring cells
    in the object's own room (``room``: its index in ``area.scene.rooms``) when it has any; the
    pick is :func:`choose_approach` with one cell of tolerance.

    Returns:
        The 3D approach point, or ``None`` when no allowed cell is within reach.
    """
    rows, cols = _window(area, obj, reach, allowed)
    xz = area.frame.centres(rows, cols)
    in_room = area.room_index[rows, cols] == room if room is not None else None
    best = choose_approach(obj, xz, reach, in_room, area.frame.cell_size)
    return None if best is None else area.point(*xz[best])


def room_numbers(area: NavArea) -> dict[str, int]:
    """Object id → index of its room in ``area.scene.rooms``."""
    return {obj.id: i for i, room in enumerate(area.scene.rooms) for obj in room.objects}
