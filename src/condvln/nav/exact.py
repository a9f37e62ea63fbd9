"""The exact backend: any-angle shortest paths on the navigable polygon (the reference geodesic).

:class:`ExactNavigator` implements :class:`~condvln.nav.protocol.Navigator` on the navigable
polygon of :mod:`condvln.nav.area` (floors minus walls and obstacles, eroded by the agent
radius) without any grid: shortest paths bend only at reflex vertices of the polygon, so the
engine builds the reduced visibility graph of those vertices once per scene, runs Dijkstra from
each goal once (:class:`ExactField`: the exact distance from every reflex vertex to the goal) and
answers a point by the smallest ``|p − v| + D(v)`` over the vertices ``v`` it sees (compiled
kernels: :mod:`condvln.nav._visibility`). Distances are exact up to floating-point rounding;
a passage stays open exactly when the polygon is connected through it.

This is the one geodesic of CondVLN's data and metrics: reference paths, the stored
``info.geodesic_distance``, the evaluator's distances to goals and subgoals and SPL's ℓ all come
from :meth:`ExactNavigator.distance_field`, so ``distance(a, b)`` and
``distance_field(b).distance(a)`` are the same float.

Why our own code: ``extremitypathfinder`` (PyPI) computes the same exact paths on a polygon with
holes, but prepares a house in about a minute and answers a query in ~0.15 s through networkx
(and rejects rings with repeated vertices); ``pyvisgraph`` has no outer boundary (free space is
the outside of obstacles), fails on points on an obstacle edge and builds seven holes in ~20 s.
Neither offers a distance to one goal from many points, which the evaluator needs for every
trajectory position (measured in ``benchmarks/bench_nav.py``).

Points off the main part of the polygon are moved onto it when they are at most
``GridConfig.max_snap`` away and no island is nearer (:meth:`NavPolygon.locate`); other points
are unreachable.

>>> from condvln.scene.model import Room, Scene
>>> room = Room(id="r", room_type="bedroom", label="Bedroom",
...             floor_polygon=((0, 0), (4, 0), (4, 3), (0, 3)))
>>> nav = ExactNavigator(Scene(id="s", source="test", rooms=(room,)))
>>> round(nav.distance((1.0, 0.0, 1.0), (3.0, 0.0, 2.0)), 6) == round(5 ** 0.5, 6)
True
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from functools import cached_property

import numpy as np
from numpy.typing import ArrayLike, NDArray

from condvln.nav import _visibility as vis
from condvln.nav.agent import AgentSpec, GridConfig
from condvln.nav.approach import grid_approach, room_numbers
from condvln.nav.area import NavArea, build_nav_area, rasterize
from condvln.nav.polygon import FloatArray, NavPolygon
from condvln.nav.protocol import Unreachable, as_points, ground, masked
from condvln.scene.model import Scene, SceneObject, Vec3

FIELD_CACHE = 4096
"""Goal fields kept per navigator (each holds two numbers per reflex vertex)."""


class ExactField:
    """Exact geodesic distances to one goal (see :meth:`ExactNavigator.distance_field`).

    Attributes:
        goal: The goal (after snapping onto the polygon).
        vertex_distance: Exact distance from every reflex vertex to the goal (``inf``:
            unreachable).
        parent: Next reflex vertex on each vertex's shortest path (``-1``: the goal itself).
    """

    def __init__(self, navigator: ExactNavigator, goal: Vec3) -> None:
        self.goal = goal
        self._nav = navigator
        self._gx, self._gz = goal[0], goal[2]
        poly = navigator.polygon
        self.vertex_distance, self.parent = vis.goal_distances(
            *poly.kernel_args, *poly.graph, self._gx, self._gz
        )

    @property
    def nbytes(self) -> int:
        """Bytes of the field's arrays."""
        return self.vertex_distance.nbytes + self.parent.nbytes

    def located(self, xz: FloatArray) -> tuple[FloatArray, NDArray[np.int64]]:
        """Distances (``inf``: unreachable) and first reflex vertices (``-1``: the goal in sight)
        of ground points ``(N, 2)`` already on the main part (see :meth:`NavPolygon.locate`)."""
        poly = self._nav.polygon
        return vis.query(
            *poly.kernel_args,
            poly.corners,
            self.vertex_distance,
            self._gx,
            self._gz,
            np.ascontiguousarray(xz, dtype=np.float64),
        )

    def _solve(self, xz: FloatArray) -> tuple[FloatArray, NDArray[np.int64], NDArray[np.bool_]]:
        """Distances, first vertices and reachability of ground points ``(N, 2)`` (snapped)."""
        snapped, ok = self._nav.polygon.locate(xz, self._nav.config.max_snap)
        values = np.zeros(len(xz))
        first = np.full(len(xz), -2, dtype=np.int64)
        if ok.any():
            values[ok], first[ok] = self.located(snapped[ok])
        ok &= np.isfinite(values)
        return np.where(ok, values, 0.0), first, ok

    def values(self, points: ArrayLike) -> tuple[FloatArray, NDArray[np.bool_]]:
        """Exact geodesic distances from points ``(N, 3)`` to the goal and which are reachable
        (unreachable entries hold 0): :meth:`query` without the masked array."""
        values, _, ok = self._solve(as_points(points)[:, [0, 2]])
        return values, ok

    def query(self, points: ArrayLike) -> np.ma.MaskedArray:
        """Exact geodesic distances from points ``(N, 3)`` (or one point) to the goal.

        Returns:
            A masked float array of length N; masked entries are unreachable.
        """
        return masked(*self.values(points))

    def reachable(self, points: ArrayLike) -> NDArray[np.bool_]:
        """Whether each point ``(N, 3)`` reaches the goal (on or near enough to the main part),
        without measuring the distances."""
        _, ok = self._nav.polygon.locate(as_points(points)[:, [0, 2]], self._nav.config.max_snap)
        return ok

    def distance(self, point: Sequence[float]) -> float | None:
        """Exact geodesic distance from ``point`` to the goal, or ``None`` when unreachable."""
        values, _, ok = self._solve(np.array([ground(point)]))
        return float(values[0]) if ok[0] else None

    def path_from(self, point: Sequence[float]) -> list[Vec3] | None:
        """The shortest path from ``point`` (or its snapped position) to the goal, or ``None``."""
        xz = np.array([ground(point)])
        poly = self._nav.polygon
        snapped, ok = poly.locate(xz, self._nav.config.max_snap)
        _, first, reach = self._solve(xz)
        if not (ok[0] and reach[0]):
            return None
        corners = []
        k = int(first[0])
        while k >= 0:
            corners.append(poly.xy[poly.reflex[k]])
            k = int(self.parent[k])
        chain = [snapped[0], *corners, np.array([self._gx, self._gz])]
        return [self._nav.point(float(x), float(z)) for x, z in chain]


class ExactNavigator:
    """Exact geodesics on the navigable polygon (see the module notes).

    Args:
        scene: The scene.
        agent: The agent body (VLN-CE defaults when omitted).
        config: ``max_snap`` (snapping), ``reach`` and ``cell_size`` (approach points, picked
            among grid-cell centres as the grid backend does) are used.
        area: A prebuilt navigable area (built from ``scene`` when omitted), e.g. a
            :class:`~condvln.nav.geodesic.GridNavigator`'s, to share it.
    """

    def __init__(
        self,
        scene: Scene,
        agent: AgentSpec | None = None,
        config: GridConfig | None = None,
        *,
        area: NavArea | None = None,
    ) -> None:
        self.config = config or GridConfig()
        self.area = area or build_nav_area(scene, agent, self.config.cell_size)
        self.agent = self.area.agent
        self.scene = scene
        self._cache: OrderedDict[tuple[float, float], ExactField] = OrderedDict()
        self._cached_bytes = 0
        self._goals: dict[tuple[float, float], tuple[float, float] | None] = {}

    @cached_property
    def polygon(self) -> NavPolygon:
        """The main part of the navigable polygon, prepared for the kernels."""
        return NavPolygon(self.area.polygon)

    def point(self, x: float, z: float) -> Vec3:
        """The 3D point at ground position ``(x, z)`` on the floor of the room holding it."""
        return self.area.point(x, z)

    def is_navigable(self, point: Sequence[float]) -> bool:
        """Whether ``point`` lies on the main part of the navigable polygon (boundary included)."""
        return bool(self.polygon.contains(np.array([ground(point)]))[0])

    def snap(self, point: Sequence[float]) -> Vec3 | None:
        """``point`` itself when navigable, else the nearest point of the main part."""
        return self.point(*self.polygon.nearest(np.array([ground(point)]))[0])

    def distance_field(self, goal: Sequence[float]) -> ExactField:
        """The (cached) exact field of ``goal``.

        Raises:
            Unreachable: When ``goal`` is not within ``max_snap`` of the main part.
        """
        key = self._snapped_goal(ground(goal))
        if key is None:
            raise Unreachable(
                f"scene {self.scene.id!r}: goal {tuple(goal)} is not on the navigable area"
            )
        field = self._cache.get(key)
        if field is None:
            field = self._cache[key] = ExactField(self, self.point(*key))
            self._cached_bytes += field.nbytes
            if len(self._cache) > FIELD_CACHE:
                self._cached_bytes -= self._cache.popitem(last=False)[1].nbytes
        else:
            self._cache.move_to_end(key)
        return field

    def field_bytes(self) -> int:
        """Bytes of the goal fields this navigator keeps."""
        return self._cached_bytes

    def _snapped_goal(self, xz: tuple[float, float]) -> tuple[float, float] | None:
        """A goal's ground point snapped onto the main part (``None``: off it), kept per point
        (the goals of a scene recur: every target is the goal of many paths)."""
        if xz not in self._goals:
            if len(self._goals) >= 4 * FIELD_CACHE:
                self._goals.clear()
            snapped, ok = self.polygon.locate(np.array([xz]), self.config.max_snap)
            self._goals[xz] = (float(snapped[0, 0]), float(snapped[0, 1])) if ok[0] else None
        return self._goals[xz]

    def distance(self, a: Sequence[float], b: Sequence[float]) -> float | None:
        """Exact geodesic distance ``a → b`` in metres, or ``None`` when unreachable."""
        try:
            return self.distance_field(b).distance(a)
        except Unreachable:
            return None

    def shortest_path(self, a: Sequence[float], b: Sequence[float]) -> list[Vec3] | None:
        """The exact shortest path ``a → b`` (corners at reflex vertices), or ``None``."""
        try:
            return self.distance_field(b).path_from(a)
        except Unreachable:
            return None

    def line_of_sight(self, a: Sequence[float], b: Sequence[float]) -> bool:
        """Whether the segment ``a → b`` lies on the main part of the navigable polygon."""
        ends = np.array([ground(a), ground(b)])
        return bool(self.polygon.contains(ends).all()) and self.polygon.segment_free(*ends)

    def visible(self, a: Sequence[float], b: Sequence[float]) -> bool:
        """Whether ``b`` is visible from ``a``: no wall between them (as the grid backend)."""
        return self.area.visible(ground(a), ground(b))

    def approach_point(self, obj: SceneObject) -> Vec3 | None:
        """Where the agent arrives at ``obj``: as the grid backend's rule, among the grid-cell
        centres that lie on the main part of the polygon."""
        room = self._room_numbers.get(obj.id)
        return grid_approach(self.area, obj, self.config.reach, self._main_cells, room)

    @cached_property
    def _main_cells(self) -> NDArray[np.bool_]:
        return rasterize(self.polygon.polygon, self.area.frame)

    @cached_property
    def _room_numbers(self) -> dict[str, int]:
        return room_numbers(self.area)
