"""What an agent with map access may know: the occupancy / geodesic side of a scene, nothing else.

A :class:`MapView` wraps a :class:`~condvln.nav.GridNavigator` and exposes only geometry: paths,
geodesic distances, navigability, snapping, the room *segmentation* as room indices (never room
types), approach points for object geometry the agent supplies itself, and exploration
waypoints. It never gives object positions, categories or room types; those come only from
perception. (Python cannot enforce privacy: an agent that reads the private attributes cheats.)

>>> from condvln.nav import GridNavigator
>>> from condvln.scene.model import Room, Scene
>>> room = Room(id="r", room_type="bedroom", label="Bedroom",
...             floor_polygon=((0, 0), (4, 0), (4, 3), (0, 3)))
>>> view = MapView(GridNavigator(Scene(id="s", source="test", rooms=(room,))))
>>> view.n_rooms, view.room_index((1.0, 0.0, 1.0)), len(view.room_waypoints())
(1, 0, 1)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import cached_property

import numpy as np
from numpy.typing import ArrayLike
from scipy import ndimage

from condvln.nav import GridNavigator, Unreachable
from condvln.nav.geodesic import choose_approach
from condvln.nav.protocol import as_points
from condvln.scene.model import AABB, SceneObject, Vec3

COVERAGE_SPACING = 2.5
"""Side (m) of the squares that each get one coverage waypoint."""


class MapView:
    """The planner an agent gets when the protocol grants ``map_access``.

    Args:
        navigator: The scene's grid navigator (kept private).
    """

    def __init__(self, navigator: GridNavigator) -> None:
        self._nav = navigator
        self._coverage: dict[float, tuple[Vec3, ...]] = {}  # spacing → waypoints (per scene)

    # --- geodesic side -----------------------------------------------------------------------

    def shortest_path(self, a: Sequence[float], b: Sequence[float]) -> list[Vec3] | None:
        """Any-angle shortest path ``a → b`` (waypoints, ``a`` first), or ``None``."""
        return self._nav.shortest_path(a, b)

    def distance(self, a: Sequence[float], b: Sequence[float]) -> float | None:
        """Geodesic distance ``a → b`` in metres, or ``None`` when unreachable."""
        return self._nav.distance(a, b)

    def distances_from(self, point: Sequence[float], targets: ArrayLike) -> list[float | None]:
        """Geodesic distances from ``point`` to each of ``targets`` ``(N, 3)`` (one field solve)."""
        try:
            field = self._nav.distance_field(point)
        except Unreachable:
            return [None] * len(np.asarray(targets).reshape(-1, 3))
        values = field.query(targets)
        return [
            None if masked else float(v) for v, masked in zip(values.data, values.mask, strict=True)
        ]

    def nearest(self, point: Sequence[float], targets: ArrayLike) -> int | None:
        """Index of the target geodesically nearest to ``point`` (the first on ties), or ``None``
        when no target is reachable: the smallest of :meth:`distances_from`.

        The field from ``point`` is not kept: asked from where the agent stands, it seldom
        recurs, and kept it would push out the fields of the goals that do. One target needs no
        field at all: the navigable area is one connected region, so a target is reachable
        exactly when both ends are on it.
        """
        ends = np.vstack([as_points(point), np.asarray(targets, dtype=np.float64).reshape(-1, 3)])
        if len(ends) == 1:
            return None
        if len(ends) == 2:
            return 0 if self._nav.locate(ends[:, [0, 2]])[3].all() else None
        try:
            field = self._nav.distance_field(point, keep=False)
        except Unreachable:
            return None
        values = field.query(ends[1:])
        (reachable,) = np.nonzero(~np.ma.getmaskarray(values))
        return int(reachable[np.argmin(values.data[reachable])]) if reachable.size else None

    def is_navigable(self, point: Sequence[float]) -> bool:
        """Whether the agent may stand at ``point``."""
        return self._nav.is_navigable(point)

    def snap(self, point: Sequence[float]) -> Vec3:
        """``point`` when navigable, else the nearest navigable point."""
        return self._nav.snap(point)

    def line_of_sight(self, a: Sequence[float], b: Sequence[float]) -> bool:
        """Whether the straight move ``a → b`` stays on the navigable area."""
        return self._nav.line_of_sight(a, b)

    # --- rooms (indices only) ----------------------------------------------------------------

    @property
    def n_rooms(self) -> int:
        """Number of rooms of the segmentation (indices ``0 … n_rooms − 1``)."""
        return len(self._nav.scene.rooms)

    def room_index(self, point: Sequence[float]) -> int:
        """Index of the room whose floor holds ``point``, ``-1`` outside every room (agents
        ask once per step and per detection, hence :meth:`~condvln.nav.grid.GridFrame.cell`)."""
        area = self._nav.area
        cell = area.frame.cell(float(point[0]), float(point[2]))
        return -1 if cell is None else int(area.room_index[cell])

    # --- objects the agent perceived ---------------------------------------------------------

    def approach(self, center: Sequence[float], size: Sequence[float] | None = None) -> Vec3 | None:
        """Where to stand to reach an object of this geometry (the navigator's approach rule).

        Cells within ``reach`` of the footprint (box from ``size``, else the centre) are the
        candidates, those in the room holding the centre preferred; ``None`` when none.
        """
        nav = self._nav
        obj = SceneObject(
            id="probe",
            category="probe",
            label="probe",
            center=tuple(float(c) for c in center),  # type: ignore[arg-type]
            aabb=None if size is None else AABB.from_center_size(center, size),
        )
        half = np.zeros(2) if size is None else 0.5 * np.array([size[0], size[2]], dtype=float)
        centre = np.array([center[0], center[2]], dtype=np.float64)
        pad = nav.config.reach
        frame = nav.area.frame
        (r0, r1), (c0, c1), _ = frame.cells(np.vstack([centre - half - pad, centre + half + pad]))
        rows, cols = np.nonzero(nav.area.free[r0 : r1 + 1, c0 : c1 + 1])
        rows, cols = rows + r0, cols + c0
        xz = frame.centres(rows, cols)
        room = self.room_index(center)
        preferred = nav.area.room_index[rows, cols] == room if room >= 0 else None
        best = choose_approach(obj, xz, pad, preferred, nav.config.cell_size)
        return None if best is None else nav.point(*xz[best])

    # --- exploration -------------------------------------------------------------------------

    def room_waypoints(self) -> dict[int, Vec3]:
        """One navigable point per room index: an open spot near the middle of the room."""
        return dict(self._room_waypoints)

    @cached_property
    def _room_waypoints(self) -> dict[int, Vec3]:
        area, nav = self._nav.area, self._nav
        clearance = ndimage.distance_transform_edt(area.free)
        points = {}
        for index in range(self.n_rooms):
            rows, cols = np.nonzero(area.free & (area.room_index == index))
            if rows.size == 0:
                continue
            room_clear = clearance[rows, cols]
            open_ = room_clear >= 0.5 * room_clear.max()
            xz = area.frame.centres(rows[open_], cols[open_])
            centroid = area.frame.centres(rows, cols).mean(axis=0)
            best = int(np.argmin(np.hypot(*(xz - centroid).T)))
            points[index] = nav.point(*xz[best])
        return points

    def coverage_waypoints(self, spacing: float = COVERAGE_SPACING) -> list[Vec3]:
        """Navigable points covering the map: one per ``spacing`` square with enough free cells.

        Each is the free cell nearest the mean of its square's free cells; squares whose point
        is within ``spacing / 2`` of a room waypoint are left out. Computed once per spacing:
        every episode of the scene shares them.
        """
        if spacing not in self._coverage:
            self._coverage[spacing] = tuple(self._coverage_points(spacing))
        return list(self._coverage[spacing])

    def _coverage_points(self, spacing: float) -> list[Vec3]:
        area, nav = self._nav.area, self._nav
        k = max(round(spacing / area.frame.cell_size), 1)
        rows, cols = np.nonzero(area.free)
        block = (rows // k) * (area.frame.shape[1] // k + 1) + cols // k
        _, inverse, counts = np.unique(block, return_inverse=True, return_counts=True)
        xz = area.frame.centres(rows, cols)
        mean = np.column_stack([np.bincount(inverse, weights=xz[:, i]) / counts for i in range(2)])
        gap = np.hypot(*(xz - mean[inverse]).T)
        order = np.lexsort((gap, inverse))
        first = order[np.r_[0, np.nonzero(np.diff(inverse[order]))[0] + 1]]
        rooms = np.array([(p[0], p[2]) for p in self._room_waypoints.values()]).reshape(-1, 2)
        points = []
        for cell, count in zip(first, counts[inverse[first]], strict=True):
            if count < 0.1 * k * k:
                continue
            x, z = xz[cell]
            if len(rooms) and np.hypot(rooms[:, 0] - x, rooms[:, 1] - z).min() < 0.5 * spacing:
                continue
            points.append(nav.point(float(x), float(z)))
        return points

    def exploration_waypoints(self) -> list[Vec3]:
        """Room waypoints (in room order) followed by coverage waypoints."""
        return [*self._room_waypoints.values(), *self.coverage_waypoints()]


def heading_to(a: Sequence[float], b: Sequence[float]) -> float:
    """Habitat yaw that faces from ``a`` towards ``b`` (3D points; 0 faces −Z).

    >>> round(heading_to((0, 0, 0), (-1, 0, 0)), 6)
    1.570796
    """
    return math.atan2(-(b[0] - a[0]), -(b[2] - a[2]))
