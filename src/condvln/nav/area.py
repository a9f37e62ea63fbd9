"""Navigable area of a scene: floors and doors, minus walls and obstacles, eroded by the agent.

Construction (all in the ground plane, ``(x, z)``):

1. **Floors.** Each room's floor polygon; a room without one falls back to the ``(x, z)``
   extent of its objects' boxes (or discs / centres), and is skipped when it has no objects.
2. **Walls.** Every room outline is a wall, except where a door lies on it: wall pieces within
   :data:`~condvln.scene.ground.DOOR_TOLERANCE` of a door segment (and between its end points) are cut away. Rooms
   that share a boundary therefore connect only through their doors; an ``"opening"`` may span
   the whole boundary.
3. **Obstacles.** Footprints of objects whose vertical extent overlaps the agent's body,
   ``(floor + max_climb, floor + height)`` of the object's room: the box's ``(x, z)`` rectangle,
   or the disc of an object that only has a radius. Objects with only a centre never block.
4. **Navigable polygon** = ``union(floors)`` eroded by the agent radius, minus walls and
   obstacles dilated by it. A continuous point is navigable when the agent's centre may stand
   there.
5. **Occupancy grid** (default 5 cm). A cell is free when its centre lies inside the navigable
   polygon, so a straight move between free cells may graze the polygon's edge by at most half a
   cell diagonal (3.5 cm): it keeps at least ``radius − 0.035`` m from every wall and obstacle.
   The largest 4-connected component of free cells
   is *the* navigable region; the other components are reported as :class:`Island` s.

A "view" map for :func:`~condvln.nav.geodesic.GridNavigator.visible` marks the cells that walls
pass through and everything outside the floors; furniture does not block the view.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import shapely
from numpy.typing import ArrayLike, NDArray
from scipy import ndimage
from shapely.geometry import LineString, MultiLineString
from shapely.geometry.base import BaseGeometry

from condvln.errors import ValidationError
from condvln.nav import _kernels
from condvln.nav.agent import AgentSpec
from condvln.nav.grid import FloatArray, GridFrame, frame_around
from condvln.scene.ground import footprint, room_floor, wall_lines
from condvln.scene.model import Scene, SceneObject

_FOUR_CONNECTED = ndimage.generate_binary_structure(2, 1)


@dataclass(frozen=True, slots=True)
class Island:
    """A navigable component that is not the main region (unreachable from it).

    Attributes:
        area: Free area in m² (cells × cell area).
        centroid: ``(x, z)`` mean of its cell centres.
    """

    area: float
    centroid: tuple[float, float]


@dataclass(frozen=True, eq=False)
class NavArea:
    """The navigable area of one scene for one agent body.

    Attributes:
        scene: The scene it was built from.
        agent: The agent body.
        frame: The grid placement.
        floors: Floor geometry per room, in ``scene.rooms`` order (``None`` when unknown).
        walls: Wall lines (room outlines minus doors).
        obstacles: ``(object_id, footprint)`` of every blocking object.
        polygon: The navigable polygon (all components).
        free: Grid cells of the main navigable region (bool, shape ``frame.shape``).
        free_any: Free cells of every component.
        room_index: Index into ``scene.rooms`` of the room holding each cell centre, ``-1`` when
            none.
        view_blocked: Cells that block the line of sight (walls and outside the floors).
        islands: The components other than the main one, largest first.
    """

    scene: Scene
    agent: AgentSpec
    frame: GridFrame
    floors: tuple[BaseGeometry | None, ...]
    walls: BaseGeometry
    obstacles: tuple[tuple[str, BaseGeometry], ...]
    polygon: BaseGeometry
    free: NDArray[np.bool_]
    free_any: NDArray[np.bool_]
    room_index: NDArray[np.int32]
    view_blocked: NDArray[np.bool_]
    islands: tuple[Island, ...]

    @property
    def area(self) -> float:
        """Area of the main navigable region in m²."""
        return float(self.free.sum()) * self.frame.cell_size**2

    def navigable(self, xz: ArrayLike) -> NDArray[np.bool_]:
        """Whether each ground point ``(N, 2)`` lies in a cell of the main navigable region."""
        rows, cols, inside = self.frame.cells(xz)
        return inside & self.free[rows, cols]

    @cached_property
    def floor_heights(self) -> FloatArray:
        """Floor height of every cell: its room's, else the nearest room's."""
        heights = np.array([room.floor_height for room in self.scene.rooms], dtype=np.float64)
        index = self.room_index
        if (index < 0).all() or (heights == heights[0]).all():
            return np.full(index.shape, heights[0])
        near_rows, near_cols = ndimage.distance_transform_edt(
            index < 0, return_distances=False, return_indices=True
        )
        return heights[index[near_rows, near_cols]]

    @cached_property
    def _view(self) -> tuple[NDArray[np.bool_], float, float, float]:
        frame = self.frame
        view = np.ascontiguousarray(self.view_blocked, dtype=np.bool_)
        return view, float(frame.origin[0]), float(frame.origin[1]), float(frame.cell_size)

    def visible(self, a: tuple[float, float], b: tuple[float, float]) -> bool:
        """Whether ground point ``b`` is visible from ``a``: no wall between them (furniture does
        not block). The cells holding ``a`` and ``b`` themselves are ignored, so an object on a
        wall is visible from its room."""
        (ax, az), (bx, bz) = a, b
        return not _kernels.segment_hits(*self._view, ax, az, bx, bz, True)

    def point(self, x: float, z: float) -> tuple[float, float, float]:
        """The 3D point at ground position ``(x, z)`` on the floor of the room holding it."""
        frame = self.frame
        row = min(max(math.floor((z - frame.origin[1]) / frame.cell_size), 0), frame.shape[0] - 1)
        col = min(max(math.floor((x - frame.origin[0]) / frame.cell_size), 0), frame.shape[1] - 1)
        return (float(x), float(self.floor_heights[row, col]), float(z))


def footprint_distance(obj: SceneObject, xz: ArrayLike) -> FloatArray:
    """Ground distance from points ``(N, 2)`` to the footprint of ``obj`` (0 inside it).

    >>> cup = SceneObject(id="c", category="cup", label="Cup", center=(0, 0, 0), size=(2, 1, 2))
    >>> footprint_distance(cup, [(0.0, 0.0), (4.0, 0.0), (4.0, 5.0)]).tolist()
    [0.0, 3.0, 5.0]
    """
    pts = np.asarray(xz, dtype=np.float64).reshape(-1, 2)
    bbox = obj.box
    if bbox is not None:
        lo = np.array([bbox.min[0], bbox.min[2]])
        hi = np.array([bbox.max[0], bbox.max[2]])
        gap = np.maximum(np.maximum(lo - pts, pts - hi), 0.0)
        return np.hypot(gap[:, 0], gap[:, 1])
    centre = np.array([obj.center[0], obj.center[2]])
    dist = np.hypot(*(pts - centre).T)
    return np.maximum(dist - (obj.radius or 0.0), 0.0)


def blocks_agent(obj: SceneObject, floor_height: float, agent: AgentSpec) -> bool:
    """Whether ``obj`` overlaps the agent's body band ``(floor + max_climb, floor + height)``."""
    bbox = obj.box
    if bbox is not None:
        bottom, top = bbox.min[1], bbox.max[1]
    elif obj.radius is not None:
        bottom, top = obj.center[1] - obj.radius, obj.center[1] + obj.radius
    else:
        return False
    return bottom < floor_height + agent.height and top > floor_height + agent.max_climb


def obstacle_footprints(scene: Scene, agent: AgentSpec) -> tuple[tuple[str, BaseGeometry], ...]:
    """``(object_id, footprint)`` of every object of ``scene`` that blocks the agent."""
    found = []
    for room in scene.rooms:
        for obj in room.objects:
            shape = footprint(obj)
            if shape.area > 0.0 and blocks_agent(obj, room.floor_height, agent):
                found.append((obj.id, shape))
    return tuple(found)


def build_nav_area(
    scene: Scene, agent: AgentSpec | None = None, cell_size: float = 0.05
) -> NavArea:
    """Build the navigable polygon and occupancy grid of ``scene`` (see the module notes).

    Args:
        scene: The scene.
        agent: The agent body (VLN-CE defaults when omitted).
        cell_size: Grid cell edge in metres.

    Returns:
        The :class:`NavArea`.

    Raises:
        ValidationError: When no room has floor geometry or nothing is navigable.
    """
    agent = agent or AgentSpec()
    floors = tuple(room_floor(room) for room in scene.rooms)
    known = [f for f in floors if f is not None and not f.is_empty]
    if not known:
        raise ValidationError(f"scene {scene.id!r}: no room has floor geometry")
    union = shapely.unary_union(known)
    frame = frame_around(union.bounds, cell_size)  # refuses oversized scenes before any work
    walls = wall_lines(known, scene.doors)
    obstacles = obstacle_footprints(scene, agent)
    blockers = shapely.unary_union([walls, *(shape for _, shape in obstacles)])
    polygon = union.buffer(-agent.radius).difference(blockers.buffer(agent.radius))
    free_any = rasterize(polygon, frame)
    free, islands = _main_component(free_any, frame)
    if not free.any():
        raise ValidationError(f"scene {scene.id!r}: no navigable area for this agent")
    room_index = _room_index(floors, frame)
    return NavArea(
        scene=scene,
        agent=agent,
        frame=frame,
        floors=floors,
        walls=walls,
        obstacles=obstacles,
        polygon=polygon,
        free=free,
        free_any=free_any,
        room_index=room_index,
        view_blocked=_view_blocked(walls, room_index, frame),
        islands=islands,
    )


def rasterize(geometry: BaseGeometry, frame: GridFrame) -> NDArray[np.bool_]:
    """Cells whose centre lies inside ``geometry``."""
    mask = np.zeros(frame.shape, dtype=bool)
    if geometry.is_empty:
        return mask
    xmin, zmin, xmax, zmax = geometry.bounds
    c = frame.cell_size
    (r0, r1), (c0, c1) = (
        _index_span(lo, hi, o, c, n)
        for lo, hi, o, n in (
            (zmin, zmax, frame.origin[1], frame.shape[0]),
            (xmin, xmax, frame.origin[0], frame.shape[1]),
        )
    )
    xs = frame.origin[0] + (np.arange(c0, c1) + 0.5) * c
    zs = frame.origin[1] + (np.arange(r0, r1) + 0.5) * c
    if math.isclose(geometry.area, geometry.envelope.area, rel_tol=1e-12):  # a rectangle
        inside_x = (xs > xmin) & (xs < xmax)
        inside_z = (zs > zmin) & (zs < zmax)
        mask[r0:r1, c0:c1] = inside_z[:, None] & inside_x[None, :]
        return mask
    gx, gz = np.meshgrid(xs, zs)
    shapely.prepare(geometry)
    mask[r0:r1, c0:c1] = shapely.contains_xy(geometry, gx, gz)
    return mask


def _index_span(lo: float, hi: float, origin: float, cell: float, n: int) -> tuple[int, int]:
    start = max(int(np.floor((lo - origin) / cell)), 0)
    stop = min(int(np.ceil((hi - origin) / cell)) + 1, n)
    return start, max(stop, start)


def _main_component(
    free_any: NDArray[np.bool_], frame: GridFrame
) -> tuple[NDArray[np.bool_], tuple[Island, ...]]:
    labels, count = ndimage.label(free_any, structure=_FOUR_CONNECTED)
    if count == 0:
        return free_any.copy(), ()
    sizes = np.bincount(labels.ravel(), minlength=count + 1)[1:]
    order = np.argsort(-sizes, kind="stable")
    main = labels == order[0] + 1
    flat = labels.ravel()
    rows, cols = np.divmod(np.arange(flat.size), frame.shape[1])
    row_sum = np.bincount(flat, weights=rows, minlength=count + 1)[1:]
    col_sum = np.bincount(flat, weights=cols, minlength=count + 1)[1:]
    islands = []
    for k in order[1:]:
        ((x, z),) = frame.centres([row_sum[k] / sizes[k]], [col_sum[k] / sizes[k]])
        islands.append(Island(float(sizes[k]) * frame.cell_size**2, (float(x), float(z))))
    return main, tuple(islands)


def _room_index(floors: Sequence[BaseGeometry | None], frame: GridFrame) -> NDArray[np.int32]:
    index = np.full(frame.shape, -1, dtype=np.int32)
    for i, floor in enumerate(floors):
        if floor is None or floor.is_empty:
            continue
        inside = rasterize(floor, frame) & (index < 0)
        index[inside] = i
    return index


def _view_blocked(
    walls: BaseGeometry, room_index: NDArray[np.int32], frame: GridFrame
) -> NDArray[np.bool_]:
    blocked = room_index < 0
    for line in _line_parts(walls):
        coords = np.asarray(line.coords)
        for a, b in itertools.pairwise(coords):
            rows, cols = frame.traverse(a, b)
            blocked[rows, cols] = True
    return blocked


def _line_parts(geometry: BaseGeometry) -> list[LineString]:
    if isinstance(geometry, LineString):
        return [] if geometry.is_empty else [geometry]
    if isinstance(geometry, MultiLineString) or hasattr(geometry, "geoms"):
        return [p for g in geometry.geoms for p in _line_parts(g)]
    return []
