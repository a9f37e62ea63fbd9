"""The grid backend: distance fields, distances, any-angle shortest paths on the occupancy grid.

:class:`GridNavigator` implements :class:`~condvln.nav.protocol.Navigator` on the occupancy grid
of :mod:`condvln.nav.area`. The simulator moves on this grid (collisions) and agents plan on it;
the geodesics that episodes store and the evaluator scores come from the exact engine
(:mod:`condvln.nav.exact`), because the grid is measurably longer (a 5 cm grid narrows or closes
passages that the navigable polygon keeps open; see ``benchmarks/bench_nav.py``).

Conventions (besides those of :mod:`condvln.nav.protocol`):

* Query points off the navigable area are moved to the nearest free cell when that is at most
  ``GridConfig.max_snap`` away; a point that lands in an island (a component that is not the
  main region) or farther away is **unreachable**.
* A distance field is solved once per goal (fast marching by default, Dijkstra on the
  16-connected grid as the fallback) and cached (LRU, keyed by the goal rounded to 1 mm).
  Navigators given one :class:`FieldStore` keep their fields there instead, under one memory
  limit, one-off seeds' too (keyed by their exact coordinates).
  Field values carry the solver's error (fast marching: about ±1.5 cm on 5 cm cells).
* :meth:`GridNavigator.distance` is the length of the any-angle shortest path: the field's
  steepest-descent chain of cells, string-pulled with exact grid line-of-sight. It is exact
  when the end points see each other and longer otherwise, most where the grid narrows a
  passage (measured against the exact engine: ``benchmarks/bench_nav.py``).
"""

from __future__ import annotations

import importlib.util
import math
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from functools import cached_property

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import ndimage, sparse
from scipy.sparse import csgraph

from condvln.nav import _kernels
from condvln.nav.agent import AgentSpec, GridConfig
from condvln.nav.approach import choose_approach, grid_approach, room_numbers
from condvln.nav.area import NavArea, build_nav_area
from condvln.nav.grid import FloatArray, IntArray
from condvln.nav.protocol import GeodesicField, Navigator, Unreachable, as_points, ground, masked
from condvln.scene.model import Scene, SceneObject, Vec3

__all__ = [
    "HAVE_SKFMM",
    "FieldStore",
    "GeodesicField",
    "GridField",
    "GridNavigator",
    "Navigator",
    "Unreachable",
    "as_points",
    "choose_approach",
]

HAVE_SKFMM = importlib.util.find_spec("skfmm") is not None
"""Whether scikit-fmm is importable (otherwise the Dijkstra solver is used)."""

# The 8 neighbour offsets (row, col); the first four are the 4-connected ones.
_OFFSETS = ((-1, 0), (1, 0), (0, -1), (0, 1), (-1, -1), (-1, 1), (1, -1), (1, 1))


class GridField:
    """A solved distance field on the occupancy grid (see :meth:`GridNavigator.distance_field`).

    Attributes:
        goal: The goal the field was solved for (after snapping).
        values: Distance (m) at every cell centre of the main region (0 elsewhere).
        reached: Cells that hold a distance.
    """

    def __init__(
        self, navigator: GridNavigator, goal: Vec3, values: FloatArray, reached: NDArray[np.bool_]
    ) -> None:
        self.goal = goal
        self.values = values
        self.reached = reached
        self._nav = navigator

    def query(self, points: ArrayLike) -> np.ma.MaskedArray:
        """Geodesic distances from points ``(N, 3)`` (or one point) to the goal.

        Navigable points interpolate the four surrounding cell centres (bilinear over the cells
        that hold a distance); snapped points take the value of their cell.

        Returns:
            A masked float array of length N; masked entries are unreachable.
        """
        xz = as_points(points)[:, [0, 2]]
        rows, cols, own, ok = self._nav.locate(xz)
        ok &= self.reached[rows, cols]
        values = self.values[rows, cols].copy()
        smooth = ok & own
        values[smooth] = _kernels.bilinear(
            self.values, self.reached, *self._nav._grid_args, np.ascontiguousarray(xz[smooth])
        )
        return masked(values, ok)

    def distance(self, point: Sequence[float]) -> float | None:
        """Geodesic distance from ``point`` to the goal, or ``None`` when unreachable."""
        result = self.query(point)
        return None if bool(result.mask[0]) else float(result.data[0])

    @cached_property
    def downhill(self) -> IntArray:
        """For every cell, the flat index of its lowest neighbour (itself at a local minimum).

        Diagonal steps need both orthogonal neighbours reached (no corner cutting).
        """
        rows, cols = self.values.shape
        big = float(self.values.max()) + 1.0
        val = np.where(self.reached, self.values, big)
        padded = np.pad(val, 1, constant_values=big)
        flat = np.arange(rows * cols).reshape(rows, cols)
        best, best_index = val.copy(), flat.copy()
        open_: dict[tuple[int, int], NDArray[np.bool_]] = {}
        for dr, dc in _OFFSETS:
            shifted = padded[1 + dr : 1 + dr + rows, 1 + dc : 1 + dc + cols]
            allowed = open_[(dr, dc)] = shifted < big
            if dr and dc:
                allowed = allowed & open_[(dr, 0)] & open_[(0, dc)]
            better = allowed & (shifted < best)
            best = np.where(better, shifted, best)
            best_index = np.where(better, flat + dr * cols + dc, best_index)
        return best_index.ravel()

    def descend(self, row: int, col: int) -> IntArray:
        """Flat indices of the cells from ``(row, col)`` down to the goal's local minimum.

        Follows :attr:`downhill` (evaluated along the chain only, by a compiled kernel).
        """
        cells = _kernels.descend(self._values_c, self._reached_c, int(row), int(col))
        if cells.size == 0:  # pragma: no cover
            raise RuntimeError("distance field descent did not terminate")
        return cells

    @cached_property
    def _values_c(self) -> FloatArray:
        return np.ascontiguousarray(self.values, dtype=np.float64)

    @cached_property
    def _reached_c(self) -> NDArray[np.bool_]:
        return np.ascontiguousarray(self.reached, dtype=np.bool_)


class FieldStore:
    """Distance fields of several navigators under one memory limit (the bytes of their arrays);
    the least recently used go first, but never the newest.

    A field put ``cold`` (one that may never be asked for again: from where an agent stood)
    enters as the least recently used and stays only while there is room or once it is asked
    for again, so a stream of one-off fields cannot push out the fields that recur; a pass over
    more fields than fit keeps those it found room for, instead of none as plain LRU would.

    A field is a pure function of its navigator's scene and seed, so a process that serves many
    runs over the same scenes can keep its navigators and one store, and a field one agent
    solved answers the next agent's identical query (the benchmark's workers do).

    >>> from condvln.scene.model import Room, Scene
    >>> room = Room(id="r", room_type="bedroom", label="Bedroom",
    ...             floor_polygon=((0, 0), (4, 0), (4, 3), (0, 3)))
    >>> store = FieldStore(limit=1 << 20)
    >>> nav = GridNavigator(Scene(id="s", source="test", rooms=(room,)), store=store)
    >>> field = nav.distance_field((1.0, 0.0, 1.0))
    >>> field is nav.distance_field((1.0, 0.0, 1.0)), len(store), store.used == field.values.size * 9
    (True, 1, True)
    >>> nav.distance_field((2.0, 0.0, 2.0), keep=False) is nav.distance_field((2.0, 0.0, 2.0), keep=False)
    True
    """

    def __init__(self, limit: int) -> None:
        if limit < 0:
            raise ValueError(f"limit must be at least 0 bytes, got {limit}")
        self.limit = limit
        self.used = 0
        self._fields: OrderedDict[Hashable, GridField] = OrderedDict()

    def __len__(self) -> int:
        return len(self._fields)

    def get(self, key: Hashable) -> GridField | None:
        """The field stored under ``key`` (now the most recently used), or ``None``."""
        field = self._fields.get(key)
        if field is not None:
            self._fields.move_to_end(key)
        return field

    def put(self, key: Hashable, field: GridField, *, cold: bool = False) -> None:
        """Keep ``field`` under ``key`` (``cold``: as the least recently used), dropping the least
        recently used beyond the limit."""
        old = self._fields.pop(key, None)
        if old is not None:
            self.used -= _field_bytes(old)
        self._fields[key] = field
        self.used += _field_bytes(field)
        if cold:
            self._fields.move_to_end(key, last=False)
        while self.used > self.limit and len(self._fields) > 1:
            self.used -= _field_bytes(self._fields.popitem(last=False)[1])

    def discard(self, navigator: GridNavigator) -> None:
        """Drop every field of ``navigator`` (keys are ``(navigator, ...)`` tuples)."""
        for key in [k for k in self._fields if k[0] is navigator]:  # type: ignore[index]
            self.used -= _field_bytes(self._fields.pop(key))


def _field_bytes(field: GridField) -> int:
    return field.values.nbytes + field.reached.nbytes


class GridNavigator:
    """The built-in navigator: occupancy grid + fast marching (or Dijkstra) distance fields.

    Args:
        scene: The scene.
        agent: The agent body (VLN-CE defaults when omitted).
        config: Grid settings (defaults: 5 cm cells, fast marching, 1 m reach).
        area: A prebuilt navigable area (built from ``scene`` when omitted).
        store: Keep the fields in this store, shared with other navigators, instead of the
            navigator's own cache (``config.cache_size``).

    >>> from condvln.scene.model import Room, Scene
    >>> room = Room(id="r", room_type="bedroom", label="Bedroom",
    ...             floor_polygon=((0, 0), (4, 0), (4, 3), (0, 3)))
    >>> nav = GridNavigator(Scene(id="s", source="test", rooms=(room,)))
    >>> round(nav.distance((1.0, 0.0, 1.0), (3.0, 0.0, 2.0)), 1)
    2.2
    """

    def __init__(
        self,
        scene: Scene,
        agent: AgentSpec | None = None,
        config: GridConfig | None = None,
        *,
        area: NavArea | None = None,
        store: FieldStore | None = None,
    ) -> None:
        self.config = config or GridConfig()
        self.store = store
        self.area = area or build_nav_area(scene, agent, self.config.cell_size)
        self.agent = self.area.agent
        self.scene = scene
        self.solver = self.config.solver if HAVE_SKFMM else "dijkstra"
        self._cache: OrderedDict[tuple[float, float], GridField] = OrderedDict()

    # --- points ------------------------------------------------------------------------------

    def locate(
        self, xz: FloatArray
    ) -> tuple[IntArray, IntArray, NDArray[np.bool_], NDArray[np.bool_]]:
        """Cells answering for ground points ``(N, 2)``.

        Returns:
            ``(rows, cols, own, ok)``: the point's own cell when it is free, else the nearest free
            cell (any component); ``own`` marks points standing in their own free cell; ``ok``
            marks points whose cell is in the main region and within ``max_snap``.
        """
        frame, area = self.area.frame, self.area
        rows, cols, inside = frame.cells(xz)
        own = inside & area.free_any[rows, cols]
        near_rows, near_cols = self._nearest_any[:, rows, cols]
        rows = np.where(own, rows, near_rows)
        cols = np.where(own, cols, near_cols)
        gap = np.hypot(*(frame.centres(rows, cols) - xz).T)
        ok = (own | (gap <= self.config.max_snap)) & area.free[rows, cols]
        return rows, cols, own & area.free[rows, cols], ok

    def distances_to(
        self, point: Sequence[float], fields: Sequence[GridField]
    ) -> list[float | None]:
        """:meth:`GridField.distance` of one ``point`` in each of ``fields`` (this navigator's
        fields), the point located once and in scalar arithmetic: the same floats, without a
        round trip through arrays per field (the sampler asks this for every instance)."""
        frame, area = self.area.frame, self.area
        x, z = float(point[0]), float(point[2])
        row = min(max(math.floor((z - frame.origin[1]) / frame.cell_size), 0), frame.shape[0] - 1)
        col = min(max(math.floor((x - frame.origin[0]) / frame.cell_size), 0), frame.shape[1] - 1)
        own = frame.cell(x, z) is not None and bool(area.free_any[row, col])
        if not own:
            row, col = (int(i) for i in self._nearest_any[:, row, col])
            centre = frame.centres([row], [col])[0]
            gap = np.hypot(centre[0] - x, centre[1] - z)
        if not (bool(area.free[row, col]) and (own or gap <= self.config.max_snap)):
            return [None] * len(fields)
        xz = np.array([[x, z]])
        out: list[float | None] = []
        for field in fields:
            if not field.reached[row, col]:
                out.append(None)
            elif own:
                out.append(
                    float(_kernels.bilinear(field.values, field.reached, *self._grid_args, xz)[0])
                )
            else:
                out.append(float(field.values[row, col]))
        return out

    @cached_property
    def _nearest_any(self) -> IntArray:
        return ndimage.distance_transform_edt(
            ~self.area.free_any, return_distances=False, return_indices=True
        )

    @cached_property
    def _nearest_main(self) -> IntArray:
        return ndimage.distance_transform_edt(
            ~self.area.free, return_distances=False, return_indices=True
        )

    def point(self, x: float, z: float) -> Vec3:
        """The 3D point at ground position ``(x, z)`` on the floor of the room holding it."""
        return self.area.point(x, z)

    def _points(self, xz: FloatArray) -> list[Vec3]:
        return [self.point(x, z) for x, z in xz]

    def is_navigable(self, point: Sequence[float]) -> bool:
        """Whether ``point`` lies in a cell of the main navigable region."""
        return bool(self.area.navigable(as_points(point)[:, [0, 2]])[0])

    def snap(self, point: Sequence[float]) -> Vec3:
        """``point`` itself when navigable, else the centre of the nearest main-region cell."""
        xz = as_points(point)[:, [0, 2]]
        if self.area.navigable(xz)[0]:
            return self.point(*xz[0])
        rows, cols, _ = self.area.frame.cells(xz)
        near_rows, near_cols = self._nearest_main[:, rows, cols]
        return self.point(*self.area.frame.centres(near_rows, near_cols)[0])

    # --- fields and distances ----------------------------------------------------------------

    def distance_field(self, goal: Sequence[float], *, keep: bool = True) -> GridField:
        """The (cached) distance field to ``goal``.

        ``keep=False`` solves a field that is not cached without caching it: for one-off seeds
        (an agent's own position) that would push out the fields of goals that recur. With a
        :class:`FieldStore` every field is kept there: a goal's under its 1 mm key, a one-off
        seed's under its exact coordinates and ``cold``.

        Raises:
            Unreachable: When ``goal`` is not within ``max_snap`` of the main region.
        """
        xz = as_points(goal)[:, [0, 2]]
        rows, cols, own, ok = self.locate(xz)
        if not ok[0]:
            raise Unreachable(
                f"scene {self.scene.id!r}: goal {tuple(goal)} is not on the navigable area"
            )
        seed = xz[0] if own[0] else self.area.frame.centres(rows, cols)[0]
        key = (round(float(seed[0]), 3), round(float(seed[1]), 3))
        if self.store is not None:
            stored = (self, *key) if keep else (self, "at", float(seed[0]), float(seed[1]))
            field = self.store.get(stored)
            if field is None:
                field = self._new_field(seed)
                self.store.put(stored, field, cold=not keep)
            return field
        if key in self._cache:
            self._cache.move_to_end(key)
            return self._cache[key]
        field = self._new_field(seed)
        if not keep:
            return field
        self._cache[key] = field
        if len(self._cache) > self.config.cache_size:
            self._cache.popitem(last=False)
        return field

    def _new_field(self, seed: FloatArray) -> GridField:
        values, reached = self._solve(seed)
        return GridField(self, self.point(*seed), values, reached)

    def _solve(self, seed: FloatArray) -> tuple[FloatArray, NDArray[np.bool_]]:
        if self.solver == "fmm":
            return _solve_fmm(self.area, seed)
        return _solve_dijkstra(self.area, seed, self._graph)

    @cached_property
    def _graph(self) -> sparse.csr_matrix:
        return _grid_graph(self.area.free, self.area.frame.cell_size)

    def distance(self, a: Sequence[float], b: Sequence[float]) -> float | None:
        """Geodesic distance from ``a`` to ``b`` in metres, or ``None`` when unreachable.

        This is the ground length of :meth:`shortest_path`: exact (Euclidean) when ``a`` sees
        ``b``, within a few millimetres per corner otherwise. For many points per goal use
        :meth:`distance_field`, whose values carry the fast-marching error (about ±1.5 cm).
        """
        path = self.shortest_path(a, b)
        if path is None:
            return None
        xz = np.asarray(path)[:, [0, 2]]
        return float(np.hypot(*np.diff(xz, axis=0).T).sum())

    # --- paths and visibility ----------------------------------------------------------------

    def shortest_path(self, a: Sequence[float], b: Sequence[float]) -> list[Vec3] | None:
        """Any-angle shortest path from ``a`` to ``b`` (string-pulled), or ``None``.

        The first waypoint is ``a`` (or its snapped cell centre), the last is ``b`` (or its
        snapped point); consecutive waypoints see each other on the navigable grid.
        """
        try:
            field = self.distance_field(b)
        except Unreachable:
            return None
        xz = as_points(a)[:, [0, 2]]
        rows, cols, own, ok = self.locate(xz)
        if not ok[0]:
            return None
        frame = self.area.frame
        start = xz[0] if own[0] else frame.centres(rows, cols)[0]
        goal = np.array([field.goal[0], field.goal[2]])
        cells = field.descend(int(rows[0]), int(cols[0]))
        chain = _kernels.chain_points(cells, frame.shape[1], *self._grid_args, start, goal)
        return self._points(self._string_pull(chain))

    def _string_pull(self, chain: FloatArray) -> FloatArray:
        """Waypoints of ``chain`` (consecutive points see each other) with the corners pulled taut.

        A greedy pass keeps the farthest visible chain point at each step; two refinement passes
        then move every corner to the chain point that shortens its two legs most while both
        stay clear; a last greedy pass drops corners that became redundant. Line of sight is
        the exact grid traversal (compiled: :func:`condvln.nav._kernels.string_pull`).
        """
        chain = np.ascontiguousarray(chain, dtype=np.float64)
        kept = _kernels.string_pull(
            self._blocked, self._free, self._free_room, *self._grid_args, chain
        )
        return chain[kept]

    @cached_property
    def _grid_args(self) -> tuple[float, float, float]:
        """``(ox, oz, cell)`` of the grid frame as floats (one kernel specialisation)."""
        frame = self.area.frame
        return float(frame.origin[0]), float(frame.origin[1]), float(frame.cell_size)

    @cached_property
    def _free(self) -> NDArray[np.bool_]:
        return np.ascontiguousarray(self.area.free, dtype=np.bool_)

    @cached_property
    def _free_room(self) -> FloatArray:
        return _kernels.free_room(self._free)

    @cached_property
    def _blocked(self) -> NDArray[np.bool_]:
        return ~self._free

    def _clear(self, a: ArrayLike, b: ArrayLike) -> bool:
        """Whether every cell the segment ``a → b`` (ground points) crosses is free."""
        (ax, az), (bx, bz) = a, b  # type: ignore[misc]
        return _kernels.segment_clear(
            self._blocked,
            self._free_room,
            *self._grid_args,
            float(ax),
            float(az),
            float(bx),
            float(bz),
        )

    def line_of_sight(self, a: Sequence[float], b: Sequence[float]) -> bool:
        """Whether the segment ``a → b`` crosses only cells of the main navigable region."""
        return self._clear(ground(a), ground(b))

    def visible(self, a: Sequence[float], b: Sequence[float]) -> bool:
        """Whether ``b`` is visible from ``a``: no wall between them (furniture does not block).

        The cells holding ``a`` and ``b`` themselves are ignored, so an object on a wall is
        visible from its room.
        """
        return self.area.visible(ground(a), ground(b))

    # --- objects -----------------------------------------------------------------------------

    def approach_point(self, obj: SceneObject) -> Vec3 | None:
        """Where the agent arrives at ``obj``: the navigable point nearest its footprint.

        Candidates are main-region cell centres within ``config.reach`` (1 m) of the object's
        footprint (box rectangle, radius disc or centre), preferring cells in the object's own
        room when it has any. Among those within one cell of the smallest footprint distance,
        the one closest to the object's centre wins (see :func:`choose_approach`).

        Returns:
            The approach point, or ``None`` when no navigable point is within reach.
        """
        own_room = self._room_numbers.get(obj.id)
        return grid_approach(self.area, obj, self.config.reach, self.area.free, own_room)

    @cached_property
    def _room_numbers(self) -> dict[str, int]:
        return room_numbers(self.area)


# --- solvers -----------------------------------------------------------------------------------


def _seed_phi(area: NavArea, seed: FloatArray, rho: float) -> FloatArray:
    """The level set whose zero contour is the disc of radius ``rho`` around ``seed``: the
    distance to ``seed`` minus ``rho`` at the cell centres within a few cells of the disc, 1.0
    (outside it) beyond.

    scikit-fmm reads ``phi``'s values only at the cells beside its zero contour and its sign
    elsewhere, so the field solved is the one from the distance at every cell, bit for bit,
    without computing that distance for the whole grid at every solve.
    """
    frame = area.frame
    reach = math.ceil(rho / frame.cell_size) + 3
    (row,), (col,), _ = frame.cells(seed)
    r0, r1 = max(row - reach, 0), min(row + reach + 1, frame.shape[0])
    c0, c1 = max(col - reach, 0), min(col + reach + 1, frame.shape[1])
    xs = frame.origin[0] + (np.arange(c0, c1) + 0.5) * frame.cell_size
    zs = frame.origin[1] + (np.arange(r0, r1) + 0.5) * frame.cell_size
    phi = np.ones(frame.shape)
    phi[r0:r1, c0:c1] = np.hypot(xs[np.newaxis, :] - seed[0], zs[:, np.newaxis] - seed[1]) - rho
    return phi


def _solve_fmm(area: NavArea, seed: FloatArray) -> tuple[FloatArray, NDArray[np.bool_]]:
    """Second-order fast marching from a small disc around ``seed``.

    The disc (two cells, at most the agent radius, so it never reaches past a wall) keeps the
    front's curvature error small; its radius is added back.
    """
    import skfmm

    cell = area.frame.cell_size
    rho = min(2.0 * cell, area.agent.radius)
    phi = np.ma.MaskedArray(_seed_phi(area, seed, rho), mask=~area.free)
    if not (phi > 0).any():
        return np.where(area.free, phi.data + rho, 0.0), area.free.copy()
    solved = skfmm.distance(phi, dx=cell, order=2)
    reached = area.free & ~np.ma.getmaskarray(solved)
    values = np.where(reached, np.maximum(np.ma.getdata(solved) + rho, 0.0), 0.0)
    return values, reached


def _moves() -> list[tuple[int, int, tuple[tuple[int, int], ...]]]:
    """16-neighbour moves ``(dr, dc, cells the move also crosses)``: no corner cutting."""
    moves = []
    for dr in (-2, -1, 0, 1, 2):
        for dc in (-2, -1, 0, 1, 2):
            if (dr, dc) == (0, 0) or (abs(dr) == 2 and abs(dc) != 1):
                continue
            if abs(dc) == 2 and abs(dr) != 1:
                continue
            sr, sc = int(np.sign(dr)), int(np.sign(dc))
            if abs(dr) == 2:
                crossed = ((sr, 0), (sr, dc))
            elif abs(dc) == 2:
                crossed = ((0, sc), (dr, sc))
            elif dr and dc:
                crossed = ((dr, 0), (0, dc))
            else:
                crossed = ()
            moves.append((dr, dc, crossed))
    return moves


def _grid_graph(free: NDArray[np.bool_], cell: float) -> sparse.csr_matrix:
    """Directed 16-connected graph of the free cells plus one (unlinked) source node.

    Knight moves cut the octile metric's error from 8 % to under 3 %; a move is allowed when
    every cell its segment crosses is free.
    """
    rows, cols = free.shape
    index = np.arange(rows * cols).reshape(rows, cols)
    padded = np.pad(free, 2)

    def shifted(dr: int, dc: int) -> NDArray[np.bool_]:
        return padded[2 + dr : 2 + dr + rows, 2 + dc : 2 + dc + cols]

    heads, tails, weights = [], [], []
    for dr, dc, crossed in _moves():
        ok = free & shifted(dr, dc)
        for cr, cc in crossed:
            ok &= shifted(cr, cc)
        src = index[ok]
        heads.append(src)
        tails.append(src + dr * cols + dc)
        weights.append(np.full(src.size, cell * math.hypot(dr, dc)))
    n = rows * cols + 1
    data = np.concatenate(weights)
    return sparse.csr_matrix((data, (np.concatenate(heads), np.concatenate(tails))), shape=(n, n))


def _solve_dijkstra(
    area: NavArea, seed: FloatArray, graph: sparse.csr_matrix
) -> tuple[FloatArray, NDArray[np.bool_]]:
    """Dijkstra on the 16-connected grid from a virtual node joined to the seed's 3×3 cells."""
    frame = area.frame
    (row,), (col,), _ = frame.cells(seed)
    r0, c0 = max(row - 1, 0), max(col - 1, 0)
    near_r, near_c = np.nonzero(area.free[r0 : row + 2, c0 : col + 2])
    near_r, near_c = near_r + r0, near_c + c0
    source = frame.shape[0] * frame.shape[1]
    links = np.hypot(*(frame.centres(near_r, near_c) - seed).T)
    targets = near_r * frame.shape[1] + near_c
    extra = sparse.csr_matrix((links, (np.full(targets.size, source), targets)), shape=graph.shape)
    dist = csgraph.dijkstra(graph + extra, directed=True, indices=source)[:-1]
    reached = np.isfinite(dist).reshape(frame.shape) & area.free
    values = np.where(reached, np.where(np.isfinite(dist), dist, 0.0).reshape(frame.shape), 0.0)
    return values, reached
