"""Source ``procedural``: the embedded default, a deterministic furnished-house generator.

A seed gives one house, always the same bytes: 2–8 rooms of realistic types and sizes tile a
rectangular footprint (recursive splitting on a 5 cm grid), doors on shared walls connect them
(a spanning tree of the adjacency graph plus a few extra doors between public rooms, and one
exterior door), and every room is furnished from the catalogue (:mod:`condvln.scene.catalogue`):
large furniture against walls and in the open, small objects on receptacle tops, wall-mounted
objects at real heights, sometimes two objects of one category.

Guarantees, checked for seeds 0..999 by the tests: floor furniture boxes never overlap each other
or the door clearance zones (door width × 0.9 m on both sides of every door); every box lies
inside its room and below its ceiling; a surface object's box bottom is its receptacle's box top;
wall-mounted objects touch a wall, keep off door openings and overlap nothing; and every room is
walkable, with every object in reach, for the agent of :mod:`condvln.nav` (radius 0.1 m, height
1.5 m, steps over 0.2 m). Walkability is tested on the navigation layer's 5 cm grid: a room's
cells have centres ``x0 + (i + 0.5) * 0.05`` (likewise in z). A cell is blocked when its centre
lies within the agent radius (Euclidean distance) of a blocker: the footprint of a floor object
taller than 0.2 m or of a wall-mounted object hanging below 1.5 m, or the room's walls (its
outline, cut at the doors to other rooms; an exterior door stays a wall). No cell centre lies at
exactly that distance (within 1e-6 m) from a blocker, where rounding could go either way. The
free cells form one 4-connected region that contains the cell holding the point 0.225 m inside
the middle of every door and, for every floor object, a cell within 0.2 m of its footprint
(Chebyshev distance); every other object has a free cell within 0.9 m of its footprint. So the
navigation layer finds each house one navigable region, without islands, and an approach point
(within 1 m) for every object.

>>> house = generate_house(3)
>>> house.id, 2 <= len(house.rooms) <= 8
('procedural/seed-3', True)
>>> generate_house(3) == house
True
>>> load("-1")
Traceback (most recent call last):
...
condvln.errors.ConfigError: procedural: the seed must be a non-negative integer below 2**63, got '-1'
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import ndimage

from condvln.errors import ConfigError
from condvln.scene.catalogue import Catalogue, CategorySpec, load_catalogue
from condvln.scene.model import AABB, Door, Room, Scene, SceneObject
from condvln.scene.sources import SceneSource

SOURCE_NAME = "procedural"
GENERATOR_VERSION = 2
MIN_ROOMS, MAX_ROOMS = 2, 8
ROOM_COUNT_WEIGHTS = (0.08, 0.12, 0.2, 0.2, 0.18, 0.12, 0.1)  # for 2..8 rooms

UNITS_PER_M = 20  # the layout grid: 5 cm
GRID = 1 / UNITS_PER_M  # walkability grid pitch (m): the navigation layer's 5 cm cells
AGENT_RADIUS = 0.1
AGENT_HEIGHT = 1.5  # wall-mounted objects hanging lower block the agent
AGENT_MAX_CLIMB = 0.2  # floor objects this low do not block the agent
TIE = 1e-6  # a cell centre this close to the agent radius from a blocker is a tie (m)
FLOOR_REACH = 0.2  # floor objects: free floor within this Chebyshev distance (m)
REACH = 0.9  # other objects: free floor within this distance (m), the navigator's 1 m less 0.1
DOOR_CELL_DEPTH = 0.225  # the door's cell: this far inside the middle of the door (m)
DOOR_CLEARANCE = 0.9  # depth kept free on both sides of a door (m)
DOOR_CORNER_MARGIN = 0.1  # door ↔ wall corner (m)
DOOR_WIDTHS = (0.8, 0.85, 0.9, 0.95, 1.0)
MIN_DOOR_WALL = 1.2  # shortest shared wall that can take a door (m)
WALL_GAP = 0.01  # furniture ↔ wall (m)
FLOOR_SHARE = 0.42  # most of a room's floor that furniture may cover
FLOOR_TRIES = 8
ESSENTIAL_TRIES = 40  # for the first instance of a category every room of its type holds
SURFACE_TRIES = 6
MOUNT_TRIES = 6
LAYOUT_TRIES = 500  # seeds 0..2999 need at most ~210; the strip layout is a last resort
ROOM_TRIES = 4  # furnishing restarts of a room whose essentials did not fit

PUBLIC_ROOMS = ("living room", "dining room", "kitchen", "hallway")
PRIVATE_ROOMS = ("bathroom", "bedroom", "laundry room", "office")
EXTRA_ROOMS: tuple[tuple[str, float, int], ...] = (  # type, weight, most per house
    ("bedroom", 3.0, 3),
    ("bathroom", 1.5, 2),
    ("dining room", 1.5, 1),
    ("office", 1.2, 1),
    ("hallway", 1.5, 1),
    ("laundry room", 0.8, 1),
)

# Facing directions k: the unit vector an object faces and its Habitat yaw (forward = −Z at 0).
# Wall k (0 north z=z0, 1 east x=x1, 2 south z=z1, 3 west x=x0) faces into the room along DIRS[k].
DIRS = ((0.0, 1.0), (-1.0, 0.0), (0.0, -1.0), (1.0, 0.0))
YAWS = (math.pi, 0.5 * math.pi, 0.0, -0.5 * math.pi)

_FOUR_NEIGHBOURS = ndimage.generate_binary_structure(2, 1)

SCENE_PLACEMENT = {"wall": "floor", "open": "floor", "surface": "surface", "wall_mounted": "wall"}
Box2 = tuple[float, float, float, float]  # xmin, zmin, xmax, zmax
Box3 = tuple[float, float, float, float, float, float]  # xmin, ymin, zmin, xmax, ymax, zmax


class _Rand:
    """Buffered uniform draws from one ``numpy.random.Generator`` (fast scalar access)."""

    def __init__(self, seed: int) -> None:
        self._rng = np.random.default_rng(seed)
        self._buf: list[float] = []
        self._pos = 0

    def random(self) -> float:
        if self._pos == len(self._buf):
            self._buf = self._rng.random(256).tolist()
            self._pos = 0
        self._pos += 1
        return self._buf[self._pos - 1]

    def uniform(self, lo: float, hi: float) -> float:
        return lo + (hi - lo) * self.random()

    def index(self, n: int) -> int:
        return min(int(self.random() * n), n - 1)

    def weighted(self, weights: list[float]) -> int:
        target = self.random() * sum(weights)
        for i, w in enumerate(weights):
            target -= w
            if target < 0.0:
                return i
        return len(weights) - 1

    def shuffled(self, items: list[Any]) -> list[Any]:
        out = list(items)
        for i in range(len(out) - 1, 0, -1):
            j = self.index(i + 1)
            out[i], out[j] = out[j], out[i]
        return out


# ---------------------------------------------------------------------------------------------
# Layout: room types, rectangles, doors
# ---------------------------------------------------------------------------------------------

Rect = tuple[int, int, int, int]  # x0, z0, x1, z1 in layout units


@dataclass(frozen=True, slots=True)
class _DoorPlan:
    rooms: tuple[int, ...]
    axis: str  # "x": the wall is the line x = coord; "z": the line z = coord
    coord: float
    lo: float  # opening along the wall (m)
    hi: float
    kind: str


def _room_types(rnd: _Rand, n: int) -> list[str]:
    types = ["living room", "kitchen", "bathroom", "bedroom"][:n]
    while len(types) < n:
        options = [(t, w) for t, w, most in EXTRA_ROOMS if types.count(t) < most]
        types.append(options[rnd.weighted([w for _, w in options])][0])
    return types


def _partition(rect: Rect, items: list[tuple[int, float]], out: dict[int, Rect]) -> None:
    """Split ``rect`` into one rectangle per item, areas roughly proportional (a treemap)."""
    if len(items) == 1:
        out[items[0][0]] = rect
        return
    total = sum(a for _, a in items)
    acc, best_k, best = 0.0, 1, math.inf
    for k in range(1, len(items)):
        acc += items[k - 1][1]
        if abs(acc - 0.5 * total) < best:
            best_k, best = k, abs(acc - 0.5 * total)
    frac = sum(a for _, a in items[:best_k]) / total
    x0, z0, x1, z1 = rect
    if x1 - x0 >= z1 - z0:
        cut = min(max(x0 + round(frac * (x1 - x0)), x0 + 1), x1 - 1)
        first, second = (x0, z0, cut, z1), (cut, z0, x1, z1)
    else:
        cut = min(max(z0 + round(frac * (z1 - z0)), z0 + 1), z1 - 1)
        first, second = (x0, z0, x1, cut), (x0, cut, x1, z1)
    _partition(first, items[:best_k], out)
    _partition(second, items[best_k:], out)


def _shared_walls(rects: list[Rect]) -> dict[tuple[int, int], tuple[str, int, int, int]]:
    """Pairs of rooms sharing a wall long enough for a door: ``(axis, coord, lo, hi)`` in units."""
    shared = {}
    min_len = MIN_DOOR_WALL * UNITS_PER_M
    for i, a in enumerate(rects):
        for j in range(i + 1, len(rects)):
            b = rects[j]
            if a[2] == b[0] or b[2] == a[0]:
                axis, coord, lo, hi = (
                    "x",
                    a[2] if a[2] == b[0] else a[0],
                    max(a[1], b[1]),
                    min(a[3], b[3]),
                )
            elif a[3] == b[1] or b[3] == a[1]:
                axis, coord, lo, hi = (
                    "z",
                    a[3] if a[3] == b[1] else a[1],
                    max(a[0], b[0]),
                    min(a[2], b[2]),
                )
            else:
                continue
            if hi - lo >= min_len:
                shared[(i, j)] = (axis, coord, lo, hi)
    return shared


def _connected(n: int, pairs: list[tuple[int, int]]) -> bool:
    reached, frontier = {0}, [0]
    while frontier:
        i = frontier.pop()
        for a, b in pairs:
            for u, v in ((a, b), (b, a)):
                if u == i and v not in reached:
                    reached.add(v)
                    frontier.append(v)
    return len(reached) == n


def _rects_ok(types: list[str], rects: list[Rect], cat: Catalogue) -> bool:
    for t, (x0, z0, x1, z1) in zip(types, rects, strict=True):
        spec = cat.room_types[t]
        short, long = sorted((x1 - x0, z1 - z0))
        if short < spec.min_side * UNITS_PER_M or long > spec.max_aspect * short:
            return False
    return True


def _layout(rnd: _Rand, types: list[str], cat: Catalogue) -> list[Rect]:
    """Room rectangles (units) tiling a footprint, every room reachable through shared walls."""
    rects: list[Rect] = []
    for _ in range(LAYOUT_TRIES):
        areas = [rnd.uniform(*cat.room_types[t].area) for t in types]
        total, aspect = sum(areas), rnd.uniform(1.0, 1.6)
        width = max(1, round(math.sqrt(total * aspect) * UNITS_PER_M))
        depth = max(1, round(total * UNITS_PER_M**2 / width))
        out: dict[int, Rect] = {}
        _partition((0, 0, width, depth), rnd.shuffled(list(enumerate(areas))), out)
        rects = [out[i] for i in range(len(types))]
        if _rects_ok(types, rects, cat) and _connected(len(rects), list(_shared_walls(rects))):
            return rects
    return _strip_layout(types, cat)


def _strip_layout(types: list[str], cat: Catalogue) -> list[Rect]:
    """Fallback: rooms side by side in one row (always connected)."""
    depth = round(max(cat.room_types[t].min_side for t in types) * 1.25 * UNITS_PER_M)
    rects, x = [], 0
    for t in types:
        spec = cat.room_types[t]
        width = max(
            round(spec.min_side * UNITS_PER_M), round(spec.area[0] * UNITS_PER_M**2 / depth)
        )
        rects.append((x, 0, x + width, depth))
        x += width
    return rects


def _door_on(rnd: _Rand, lo_u: int, hi_u: int, width: float) -> tuple[float, float]:
    """An opening of ``width`` metres on the wall span ``[lo_u, hi_u]`` (units), off the corners."""
    lo = lo_u / UNITS_PER_M + DOOR_CORNER_MARGIN + 0.5 * width
    hi = hi_u / UNITS_PER_M - DOOR_CORNER_MARGIN - 0.5 * width
    centre_cm = math.ceil(lo * 100) + rnd.index(
        max(1, math.floor(hi * 100) - math.ceil(lo * 100) + 1)
    )
    centre = centre_cm / 100
    return round(centre - 0.5 * width, 3), round(centre + 0.5 * width, 3)


def _door_weight(rnd: _Rand, a: str, b: str) -> float:
    """Cost of a door between room types ``a`` and ``b`` (lower is likelier)."""
    pair = {a, b}
    cost = rnd.random()
    if "hallway" in pair:
        cost -= 0.5
    if pair <= set(PUBLIC_ROOMS):
        cost -= 0.3
    if pair & {"bathroom", "bedroom"} and pair & {"kitchen", "dining room"}:
        cost += 1.5
    if pair <= set(PRIVATE_ROOMS):
        cost += 0.8
    return cost


def _tree_cost(weight: float, pair: tuple[int, int], tree: set[int], types: list[str]) -> float:
    """Prim's cost of growing the tree along ``pair``: leaving through a private room costs more."""
    inner = pair[0] if pair[0] in tree else pair[1]
    return weight + (3.0 if types[inner] in PRIVATE_ROOMS else 0.0)


def _plan_doors(rnd: _Rand, types: list[str], rects: list[Rect]) -> list[_DoorPlan]:
    """A spanning tree of doors (Prim), a few extra public doors and one exterior door."""
    shared = _shared_walls(rects)
    pairs = sorted(shared)
    weights = {p: _door_weight(rnd, types[p[0]], types[p[1]]) for p in pairs}
    tree, chosen = {0}, []
    while len(tree) < len(rects):
        candidates = [p for p in pairs if (p[0] in tree) != (p[1] in tree)]
        best = min(candidates, key=lambda p: (_tree_cost(weights[p], p, tree, types), p))
        chosen.append(best)
        tree.update(best)
    for p in pairs:
        both_public = types[p[0]] in PUBLIC_ROOMS and types[p[1]] in PUBLIC_ROOMS
        if p not in chosen and both_public and rnd.random() < 0.35:
            chosen.append(p)
    plans = []
    for i, j in chosen:
        axis, coord, lo_u, hi_u = shared[(i, j)]
        both_public = types[i] in PUBLIC_ROOMS and types[j] in PUBLIC_ROOMS
        kind = "opening" if both_public and rnd.random() < 0.4 else "door"
        lo, hi = _door_on(rnd, lo_u, hi_u, DOOR_WIDTHS[rnd.index(len(DOOR_WIDTHS))])
        plans.append(_DoorPlan((i, j), axis, coord / UNITS_PER_M, lo, hi, kind))
    exterior = _exterior_door(rnd, types, rects)
    return [*plans, exterior] if exterior else plans


def _exterior_door(rnd: _Rand, types: list[str], rects: list[Rect]) -> _DoorPlan | None:
    width = max(r[2] for r in rects)
    depth = max(r[3] for r in rects)
    for room_type in ("hallway", "living room", "kitchen"):
        for i, t in enumerate(types):
            if t != room_type:
                continue
            x0, z0, x1, z1 = rects[i]
            edges = [
                (axis, coord, lo, hi)
                for axis, coord, lo, hi, outside in (
                    ("z", z0, x0, x1, z0 == 0),
                    ("x", x1, z0, z1, x1 == width),
                    ("z", z1, x0, x1, z1 == depth),
                    ("x", x0, z0, z1, x0 == 0),
                )
                if outside and hi - lo >= MIN_DOOR_WALL * UNITS_PER_M
            ]
            if edges:
                axis, coord, lo_u, hi_u = edges[rnd.index(len(edges))]
                lo, hi = _door_on(rnd, lo_u, hi_u, DOOR_WIDTHS[2 + rnd.index(3)])
                return _DoorPlan((i,), axis, coord / UNITS_PER_M, lo, hi, "door")
    return None


# ---------------------------------------------------------------------------------------------
# Furnishing one room
# ---------------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Placed:
    spec: CategorySpec
    box: Box3
    facing: int
    wall: int | None = None
    parent: _Placed | None = None
    items: list[Box2] = field(default_factory=list)  # footprints of objects on its top
    object_id: str | None = None  # set when the scene object is built


@dataclass(frozen=True, slots=True)
class _Need:
    """Walkability-grid cells of which at least one must stay free: a window, maybe masked."""

    rows: slice
    cols: slice
    mask: np.ndarray | None = None

    def met(self, free: np.ndarray) -> bool:
        """Whether ``free`` (the room's grid) has a free cell among these."""
        cells = free[self.rows, self.cols]
        return bool((cells if self.mask is None else cells & self.mask).any())

    def touches(self, rows: slice, cols: slice) -> bool:
        """Whether the window overlaps the window ``rows`` × ``cols``."""
        return (
            self.rows.start < rows.stop
            and rows.start < self.rows.stop
            and self.cols.start < cols.stop
            and cols.start < self.cols.stop
        )


def _overlap2(a: Box2, b: Box2) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _overlap3(a: Box3, b: Box3) -> bool:
    return (
        a[0] < b[3] and b[0] < a[3] and a[1] < b[4] and b[1] < a[4] and a[2] < b[5] and b[2] < a[5]
    )


def _round_box(xmin: float, zmin: float, xmax: float, zmax: float) -> Box2:
    return (round(xmin, 3), round(zmin, 3), round(xmax, 3), round(zmax, 3))


def _extent(spec: CategorySpec, facing: int) -> tuple[float, float]:
    """World ``(sx, sz)`` of a footprint facing direction ``facing``."""
    w, _, d = spec.size
    return (w, d) if facing % 2 == 0 else (d, w)


def _centred(cx: float, cz: float, spec: CategorySpec, facing: int) -> Box2:
    sx, sz = _extent(spec, facing)
    return _round_box(cx - 0.5 * sx, cz - 0.5 * sz, cx + 0.5 * sx, cz + 0.5 * sz)


def _one_region(free: np.ndarray) -> bool:
    """Whether the free cells form exactly one 4-connected region."""
    return ndimage.label(free, structure=_FOUR_NEIGHBOURS)[1] == 1


class _RoomFurnisher:
    """Places one room's objects; every accepted object keeps the room walkable and is in reach.

    ``doors`` are all the room's doors as ``(wall, lo, hi)``; ``openings`` those of them that lead
    to another room (the wall is open there; an exterior door stays a wall for the agent).
    """

    def __init__(
        self,
        rect: Rect,
        ceiling: float,
        doors: list[tuple[int, float, float]],
        openings: list[tuple[int, float, float]],
    ) -> None:
        self.x0, self.z0, self.x1, self.z1 = (v / UNITS_PER_M for v in rect)
        self.ceiling = ceiling
        self.doors = doors  # (wall, lo, hi) along the wall
        self.area = (self.x1 - self.x0) * (self.z1 - self.z0)
        self.floor: list[_Placed] = []
        self.others: list[_Placed] = []
        self.obstacles: list[Box2] = [self._clearance(d) for d in doors]
        self.xs = self.x0 + (np.arange(rect[2] - rect[0]) + 0.5) * GRID
        self.zs = self.z0 + (np.arange(rect[3] - rect[1]) + 0.5) * GRID
        self.cx, self.cz = self.xs.tolist(), self.zs.tolist()
        self.free = self._open_floor(openings)
        self.door_cells = [self._door_cell(d) for d in doors]
        self.needs: list[_Need] = []

    # -- geometry helpers ---------------------------------------------------------------------

    def wall_span(self, wall: int) -> tuple[float, float]:
        return (self.x0, self.x1) if wall % 2 == 0 else (self.z0, self.z1)

    def _wall_line(self, wall: int) -> float:
        return (self.z0, self.x1, self.z1, self.x0)[wall]

    def _strip(self, wall: int, lo: float, hi: float, depth: float, gap: float = 0.0) -> Box2:
        """Footprint of ``[lo, hi]`` along ``wall``, from ``gap`` to ``gap + depth`` inwards."""
        line, sign = self._wall_line(wall), (1.0, -1.0, -1.0, 1.0)[wall]
        a, b = line + sign * gap, line + sign * (gap + depth)
        near, far = min(a, b), max(a, b)
        return _round_box(lo, near, hi, far) if wall % 2 == 0 else _round_box(near, lo, far, hi)

    def _clearance(self, door: tuple[int, float, float]) -> Box2:
        wall, lo, hi = door
        return self._strip(wall, lo - 0.05, hi + 0.05, DOOR_CLEARANCE)

    def _open_floor(self, openings: list[tuple[int, float, float]]) -> np.ndarray:
        """Free cells of the empty room: farther than the agent radius from the walls (the
        outline cut at the ``openings``).

        Cell centres lie 0.025, 0.075, 0.125 m… from a wall, so the walls block two rows of
        cells, except within an opening, farther than the radius from both of its ends.
        """
        free = np.zeros((self.zs.size, self.xs.size), dtype=bool)
        free[2:-2, 2:-2] = True
        band = (np.arange(2) + 0.5) * GRID  # distance of the two blocked rows from the wall
        for wall, lo, hi in openings:
            along = self.xs if wall % 2 == 0 else self.zs
            to_end = np.minimum(along - lo, hi - along)
            clear = (to_end[None, :] > 0.0) & (
                to_end[None, :] ** 2 + band[:, None] ** 2 > AGENT_RADIUS**2
            )
            band_cells = slice(0, 2) if wall in (0, 3) else slice(-1, -3, -1)  # wall side first
            if wall % 2 == 0:
                free[band_cells] |= clear
            else:
                free[:, band_cells] |= clear.T
        return free

    def _door_cell(self, door: tuple[int, float, float]) -> tuple[int, int]:
        """Grid cell holding the point :data:`DOOR_CELL_DEPTH` inside the middle of ``door``."""
        wall, lo, hi = door
        mid = 0.5 * (lo + hi)
        px, pz = (mid, self._wall_line(wall)) if wall % 2 == 0 else (self._wall_line(wall), mid)
        px, pz = px + DOOR_CELL_DEPTH * DIRS[wall][0], pz + DOOR_CELL_DEPTH * DIRS[wall][1]
        i = min(max(int((px - self.x0) / GRID), 0), self.xs.size - 1)
        j = min(max(int((pz - self.z0) / GRID), 0), self.zs.size - 1)
        return j, i

    def _cells(self, box: Box2, pad: float) -> tuple[slice, slice]:
        xs = slice(bisect_right(self.cx, box[0] - pad), bisect_left(self.cx, box[2] + pad))
        zs = slice(bisect_right(self.cz, box[1] - pad), bisect_left(self.cz, box[3] + pad))
        return zs, xs

    def _block(self, free: np.ndarray, box: Box2) -> tuple[slice, slice] | None:
        """Mark blocked, in ``free``, the cells whose centre lies within the agent radius of
        ``box``; return the window of cells that may have changed.

        Returns None instead when a cell centre lies at the agent radius (within :data:`TIE`):
        the navigation layer may round such a tie either way, so the blocker is refused.
        """
        zs, xs = self._cells(box, AGENT_RADIUS + TIE)
        dx = np.maximum(np.maximum(box[0] - self.xs[xs], self.xs[xs] - box[2]), 0.0)
        dz = np.maximum(np.maximum(box[1] - self.zs[zs], self.zs[zs] - box[3]), 0.0)
        excess = dz[:, None] ** 2 + dx[None, :] ** 2 - AGENT_RADIUS**2  # ≈ 2 r (distance − r)
        if (np.abs(excess) < 2.0 * AGENT_RADIUS * TIE).any():
            return None
        free[zs, xs] &= excess > 0.0
        return zs, xs

    def _within(self, box: Box2, distance: float) -> _Need:
        """The cells whose centre lies within ``distance`` (Euclidean) of the footprint ``box``."""
        zs, xs = self._cells(box, distance + GRID)
        dx = np.maximum(np.maximum(box[0] - self.xs[xs], self.xs[xs] - box[2]), 0.0)
        dz = np.maximum(np.maximum(box[1] - self.zs[zs], self.zs[zs] - box[3]), 0.0)
        return _Need(zs, xs, dz[:, None] ** 2 + dx[None, :] ** 2 <= distance**2)

    def inside(self, box: Box2) -> bool:
        return box[0] >= self.x0 and box[1] >= self.z0 and box[2] <= self.x1 and box[3] <= self.z1

    def _accept(self, blocker: Box2 | None, need: _Need) -> bool:
        """Block ``blocker`` (when given) and require a free cell among ``need``.

        Returns False, changing nothing, when the room would no longer be walkable or a cell
        required free (by ``need`` or an object accepted before) would have none left.
        """
        free = self.free
        if blocker is not None:
            free = free.copy()
            window = self._block(free, blocker)
            if window is None or not need.met(free) or not self._still_walkable(free, *window):
                return False
        elif not need.met(free):
            return False
        self.free = free
        self.needs.append(need)
        return True

    def _still_walkable(self, free: np.ndarray, rows: slice, cols: slice) -> bool:
        """Whether the room stays walkable after cells in ``rows`` × ``cols`` were blocked."""
        return (
            all(free[cell] for cell in self.door_cells)
            and all(n.met(free) for n in self.needs if n.touches(rows, cols))
            and (self._locally_connected(free, rows, cols) or _one_region(free))
        )

    def _locally_connected(self, free: np.ndarray, rows: slice, cols: slice) -> bool:
        """Sufficient test: nothing newly blocked in ``rows`` × ``cols``, or the free cells of
        that window grown by one cell form one region, so no path was cut."""
        rows = slice(max(rows.start - 1, 0), rows.stop + 1)
        cols = slice(max(cols.start - 1, 0), cols.stop + 1)
        after = free[rows, cols]
        if np.array_equal(after, self.free[rows, cols]):
            return True
        return ndimage.label(after, structure=_FOUR_NEIGHBOURS)[1] <= 1

    # -- floor objects ------------------------------------------------------------------------

    def try_floor(self, spec: CategorySpec, box: Box2, facing: int, wall: int | None) -> bool:
        """Accept the footprint ``box`` if it fits, overlaps nothing and keeps the room walkable."""
        if not self.inside(box) or any(_overlap2(box, o) for o in self.obstacles):
            return False
        blocker = box if spec.size[1] > AGENT_MAX_CLIMB else None
        if not self._accept(blocker, _Need(*self._cells(box, FLOOR_REACH))):
            return False
        self.obstacles.append(box)
        h = spec.size[1]
        self.floor.append(_Placed(spec, (box[0], 0.0, box[1], box[2], h, box[3]), facing, wall))
        return True

    def wall_candidate(self, rnd: _Rand, spec: CategorySpec) -> tuple[Box2, int, int] | None:
        """A footprint against a wall: next to a piece already there, in a corner, or anywhere."""
        w, _, d = spec.size
        on_walls = [p for p in self.floor if p.wall is not None]
        mode = rnd.random()
        if on_walls and mode < 0.4:
            neighbour = on_walls[rnd.index(len(on_walls))]
            wall = neighbour.wall
            a, b = self._along(neighbour.box, wall)
            t = b + 0.5 * w if rnd.random() < 0.5 else a - 0.5 * w
        else:
            wall = rnd.weighted([self.wall_span(k)[1] - self.wall_span(k)[0] for k in range(4)])
            lo, hi = self.wall_span(wall)
            if hi - lo < w + 2 * WALL_GAP:
                return None
            t_lo, t_hi = lo + WALL_GAP + 0.5 * w, hi - WALL_GAP - 0.5 * w
            corner = mode < 0.6
            t = (t_lo if rnd.random() < 0.5 else t_hi) if corner else rnd.uniform(t_lo, t_hi)
        return self._strip(wall, t - 0.5 * w, t + 0.5 * w, d, WALL_GAP), wall, wall

    @staticmethod
    def _along(box: Box3, wall: int) -> tuple[float, float]:
        """Extent of ``box`` along ``wall``."""
        return (box[0], box[3]) if wall % 2 == 0 else (box[2], box[5])

    def open_candidate(self, rnd: _Rand, spec: CategorySpec) -> tuple[Box2, int, None] | None:
        facing = rnd.index(4)
        sx, sz = _extent(spec, facing)
        margin = 0.5
        if self.x1 - self.x0 < sx + 2 * margin or self.z1 - self.z0 < sz + 2 * margin:
            return None
        cx = rnd.uniform(self.x0 + margin + 0.5 * sx, self.x1 - margin - 0.5 * sx)
        cz = rnd.uniform(self.z0 + margin + 0.5 * sz, self.z1 - margin - 0.5 * sz)
        return _centred(cx, cz, spec, facing), facing, None

    # -- surface and wall-mounted objects -----------------------------------------------------

    def try_surface(self, rnd: _Rand, spec: CategorySpec, parent: _Placed) -> bool:
        sx, sz = _extent(spec, parent.facing)
        px0, _, pz0, px1, top, pz1 = parent.box
        m = 0.02
        if px1 - px0 < sx + 2 * m or pz1 - pz0 < sz + 2 * m or top + spec.size[1] > self.ceiling:
            return False
        cx = rnd.uniform(px0 + m + 0.5 * sx, px1 - m - 0.5 * sx)
        cz = rnd.uniform(pz0 + m + 0.5 * sz, pz1 - m - 0.5 * sz)
        box = _centred(cx, cz, spec, parent.facing)
        if any(_overlap2(box, o) for o in parent.items):
            return False
        box3 = (box[0], top, box[1], box[2], round(top + spec.size[1], 3), box[3])
        if any(_overlap3(box3, o.box) for o in self.others):
            return False
        if not self._accept(None, self._within(box, REACH)):
            return False
        parent.items.append(box)
        self.others.append(_Placed(spec, box3, parent.facing, parent=parent))
        return True

    def try_mounted(self, spec: CategorySpec, wall: int, t: float, bottom: float) -> bool:
        w, h, d = spec.size
        lo, hi = self.wall_span(wall)
        a, b = round(t - 0.5 * w, 3), round(t + 0.5 * w, 3)
        top = round(bottom + h, 3)
        if a < lo + 0.05 or b > hi - 0.05 or top > self.ceiling - 0.05:
            return False
        if any(k == wall and a < dhi + 0.05 and dlo - 0.05 < b for k, dlo, dhi in self.doors):
            return False
        footprint = self._strip(wall, a, b, d)
        fx0, fz0, fx1, fz1 = footprint
        box3 = (fx0, round(bottom, 3), fz0, fx1, top, fz1)
        if any(_overlap3(box3, o.box) for o in (*self.floor, *self.others)):
            return False
        blocker = footprint if bottom < AGENT_HEIGHT else None
        if not self._accept(blocker, self._within(footprint, REACH)):
            return False
        self.others.append(_Placed(spec, box3, wall, wall))
        return True


# ---------------------------------------------------------------------------------------------
# Choosing and placing the room's content
# ---------------------------------------------------------------------------------------------


def _select(rnd: _Rand, specs: list[tuple[CategorySpec, float]]) -> list[tuple[CategorySpec, bool]]:
    """Draw which categories (and how many of each) a room holds, in catalogue order.

    Each entry is ``(spec, essential)``; essential marks the first instance of a category that
    every room of the type holds (probability 1, no anchor required).
    """
    chosen = []
    for spec, p in specs:
        if rnd.random() < p:
            anchored = spec.near is not None and spec.near.required
            chosen.append((spec, p >= 1.0 and not anchored))
            n = 1
            while n < spec.max_count and rnd.random() < spec.extra_probability:
                chosen.append((spec, False))
                n += 1
    return chosen


def _anchors(room: _RoomFurnisher, spec: CategorySpec) -> list[_Placed]:
    assert spec.near is not None
    return [p for name in spec.near.anchors for p in room.floor if p.spec.name == name]


def _near_floor_candidates(
    rnd: _Rand, spec: CategorySpec, anchor: _Placed
) -> list[tuple[Box2, int, int | None]]:
    """Footprints next to ``anchor`` as the category's ``near`` relation says."""
    assert spec.near is not None
    relation, gap = spec.near.relation, spec.near.gap
    ax0, _, az0, ax1, _, az1 = anchor.box
    acx, acz = 0.5 * (ax0 + ax1), 0.5 * (az0 + az1)
    k = anchor.facing
    fx, fz = DIRS[k]
    a_w, a_d = (ax1 - ax0, az1 - az0) if k % 2 == 0 else (az1 - az0, ax1 - ax0)
    w, _, d = spec.size
    out: list[tuple[Box2, int, int | None]] = []
    if relation == "front":
        for _ in range(3):
            off = 0.5 * a_d + gap + 0.5 * d
            lat = rnd.uniform(-0.1, 0.1)
            cx, cz = acx + fx * off - fz * lat, acz + fz * off + fx * lat
            out.append((_centred(cx, cz, spec, (k + 2) % 4), (k + 2) % 4, None))
    elif relation == "beside":
        lx, lz = DIRS[(k + 1) % 4]
        back = 0.5 * d - 0.5 * a_d
        for side in rnd.shuffled([1.0, -1.0]):
            off = side * (0.5 * a_w + gap + 0.5 * w)
            cx, cz = acx + lx * off + fx * back, acz + lz * off + fz * back
            out.append((_centred(cx, cz, spec, k), k, anchor.wall))
    else:  # around: any side of the anchor, facing it
        half = (0.5 * (ax1 - ax0), 0.5 * (az1 - az0))
        for s in rnd.shuffled([0, 1, 2, 3]):
            nx, nz = DIRS[s]
            along = half[0] if s % 2 == 0 else half[1]  # half-extent along the side
            across = half[1] if s % 2 == 0 else half[0]
            off = across + gap + 0.5 * d
            lat = rnd.uniform(-max(0.0, along - 0.5 * w), max(0.0, along - 0.5 * w))
            cx, cz = acx + nx * off - nz * lat, acz + nz * off + nx * lat
            out.append((_centred(cx, cz, spec, (s + 2) % 4), (s + 2) % 4, None))
    return out


def _place_floor(rnd: _Rand, room: _RoomFurnisher, spec: CategorySpec, tries: int) -> bool:
    """Place one floor object (next to an anchor first, if it has one); False if it found no spot."""
    if spec.near is not None:
        anchors = _anchors(room, spec)
        for anchor in anchors[:2]:
            for box, facing, wall in _near_floor_candidates(rnd, spec, anchor):
                if room.try_floor(spec, box, facing, wall):
                    return True
        if spec.near.required:
            return False
    propose = room.wall_candidate if spec.placement == "wall" else room.open_candidate
    for _ in range(tries):
        candidate = propose(rnd, spec)
        if candidate is not None and room.try_floor(spec, *candidate):
            return True
    return False


def _place_surface(rnd: _Rand, room: _RoomFurnisher, spec: CategorySpec) -> None:
    parents = [p for p in room.floor if p.spec.receptacle and p.spec.name in spec.on]
    if not parents:
        return
    for _ in range(SURFACE_TRIES):
        if room.try_surface(rnd, spec, parents[rnd.index(len(parents))]):
            return


def _mount_candidates(
    rnd: _Rand, room: _RoomFurnisher, spec: CategorySpec
) -> list[tuple[int, float, float]]:
    """``(wall, along, bottom)`` positions for a wall-mounted object, anchored ones first."""
    assert spec.mount_height is not None
    w = spec.size[0]
    base = spec.mount_height
    out = []
    near = spec.near
    if near is not None and "door" in near.anchors:
        for wall, lo, hi in room.doors:
            out += [(wall, hi + near.gap + 0.5 * w, base), (wall, lo - near.gap - 0.5 * w, base)]
    elif near is not None:
        for anchor in _anchors(room, spec):
            if anchor.wall is None:
                continue
            ax0, _, az0, ax1, _, az1 = anchor.box
            mid, a_w = (
                (0.5 * (ax0 + ax1), ax1 - ax0)
                if anchor.wall % 2 == 0
                else (0.5 * (az0 + az1), az1 - az0)
            )
            if near.relation == "above":
                out.append((anchor.wall, mid + rnd.uniform(-0.05, 0.05), base))
            else:
                off = 0.5 * a_w + near.gap + 0.5 * w
                out += [(anchor.wall, mid + off, base), (anchor.wall, mid - off, base)]
    out = rnd.shuffled(out)
    for _ in range(MOUNT_TRIES):
        wall = rnd.index(4)
        lo, hi = room.wall_span(wall)
        out.append((wall, rnd.uniform(lo + 0.5 * w, hi - 0.5 * w), base))
    return out


def _place_mounted(rnd: _Rand, room: _RoomFurnisher, spec: CategorySpec) -> None:
    for wall, t, bottom in _mount_candidates(rnd, room, spec):
        if room.try_mounted(spec, wall, t, bottom):
            return


@dataclass(frozen=True, slots=True)
class _RoomPlan:
    floor: list[tuple[CategorySpec, float]]
    surface: list[tuple[CategorySpec, float]]
    mounted: list[tuple[CategorySpec, float]]


_PLANS: dict[str, _RoomPlan] = {}


def _room_plan(cat: Catalogue, room_type: str) -> _RoomPlan:
    """Catalogue entries of a room type, by placement kind (cached per room type)."""
    if room_type not in _PLANS:
        entries = [(c, c.rooms[room_type]) for c in cat.categories if c.rooms.get(room_type, 0) > 0]
        _PLANS[room_type] = _RoomPlan(
            floor=[e for e in entries if e[0].placement in ("wall", "open")],
            surface=[e for e in entries if e[0].placement == "surface"],
            mounted=[e for e in entries if e[0].placement == "wall_mounted"],
        )
    return _PLANS[room_type]


def _furnish_floor(rnd: _Rand, room: _RoomFurnisher, plan: _RoomPlan, strict: bool) -> bool:
    """Place the floor objects, essentials first.

    Returns False (at once when ``strict``) when an essential found no spot.
    """
    complete = True
    budget = FLOOR_SHARE * room.area
    chosen = _select(rnd, plan.floor)
    chosen.sort(key=lambda e: (e[0].near is not None, not e[1], -e[0].footprint))
    for spec, essential in chosen:
        if essential or spec.footprint <= budget:
            tries = ESSENTIAL_TRIES if essential else FLOOR_TRIES
            if _place_floor(rnd, room, spec, tries):
                budget -= spec.footprint
            elif essential:
                complete = False
                if strict:
                    return False
    return complete


def _furnish(
    rnd: _Rand,
    rect: Rect,
    ceiling: float,
    doors: tuple[list[tuple[int, float, float]], list[tuple[int, float, float]]],
    plan: _RoomPlan,
) -> list[_Placed]:
    """Furnish one room: floor objects (restarting while an essential is missing), then small
    objects on receptacles and wall-mounted ones. ``doors``: all doors and the openings to other
    rooms (see :class:`_RoomFurnisher`)."""
    for attempt in range(ROOM_TRIES):
        room = _RoomFurnisher(rect, ceiling, *doors)
        if _furnish_floor(rnd, room, plan, strict=attempt < ROOM_TRIES - 1):
            break
    for spec, _ in _select(rnd, plan.surface):
        _place_surface(rnd, room, spec)
    for spec, _ in _select(rnd, plan.mounted):
        _place_mounted(rnd, room, spec)
    return [*room.floor, *room.others]


# ---------------------------------------------------------------------------------------------
# Scene assembly
# ---------------------------------------------------------------------------------------------


def _room_doors(rect: Rect, index: int, plans: list[_DoorPlan]) -> list[tuple[int, float, float]]:
    """The doors of room ``index`` as ``(wall, lo, hi)``."""
    x0, z0 = rect[0] / UNITS_PER_M, rect[1] / UNITS_PER_M
    out = []
    for plan in plans:
        if index in plan.rooms:
            if plan.axis == "z":
                wall = 0 if plan.coord == z0 else 2
            else:
                wall = 3 if plan.coord == x0 else 1
            out.append((wall, plan.lo, plan.hi))
    return out


def _scene_objects(placed: list[_Placed], counters: dict[str, int]) -> list[SceneObject]:
    """Scene objects of one room; ids number each category across the house (``bed_0``)."""
    out = []
    for p in placed:
        n = counters.get(p.spec.name, 0)
        counters[p.spec.name] = n + 1
        p.object_id = f"{p.spec.name.replace(' ', '_')}_{n}"
        x0, y0, z0, x1, y1, z1 = p.box
        out.append(
            SceneObject(
                id=p.object_id,
                category=p.spec.name,
                label=p.spec.label,
                center=(
                    round(0.5 * (x0 + x1), 4),
                    round(0.5 * (y0 + y1), 4),
                    round(0.5 * (z0 + z1), 4),
                ),
                size=(round(x1 - x0, 3), round(y1 - y0, 3), round(z1 - z0, 3)),
                aabb=AABB((x0, y0, z0), (x1, y1, z1)),
                yaw=YAWS[p.facing],
                parent_id=None if p.parent is None else p.parent.object_id,
                placement=SCENE_PLACEMENT[p.spec.placement],
            )
        )
    return out


def _door_segment(plan: _DoorPlan) -> tuple[tuple[float, float], tuple[float, float]]:
    if plan.axis == "x":
        return (plan.coord, plan.lo), (plan.coord, plan.hi)
    return (plan.lo, plan.coord), (plan.hi, plan.coord)


def generate_house(seed: int, *, n_rooms: int | None = None) -> Scene:
    """Generate the furnished house of ``seed`` (same seed and options → the same scene).

    Args:
        seed: A non-negative integer.
        n_rooms: Force the number of rooms (2–8); drawn from the seed when ``None``.

    Returns:
        The scene ``procedural/seed-<seed>`` (``…/rooms-<n>`` when ``n_rooms`` is forced).

    Raises:
        ConfigError: On a negative seed or a room count outside 2–8.
    """
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ConfigError(f"procedural: the seed must be a non-negative integer, got {seed!r}")
    if n_rooms is not None and not MIN_ROOMS <= n_rooms <= MAX_ROOMS:
        raise ConfigError(f"procedural: n_rooms must be {MIN_ROOMS}–{MAX_ROOMS}, got {n_rooms!r}")
    cat = load_catalogue()
    rnd = _Rand(seed)
    drawn = MIN_ROOMS + rnd.weighted(list(ROOM_COUNT_WEIGHTS))
    n = drawn if n_rooms is None else n_rooms
    types = _room_types(rnd, n)
    rects = _layout(rnd, types, cat)
    doors = _plan_doors(rnd, types, rects)
    ceiling = 2.5 + 0.05 * rnd.index(7)
    rooms = _furnished_rooms(rnd, cat, types, rects, doors, ceiling)
    scene_id = f"procedural/seed-{seed}" if n_rooms is None else f"procedural/seed-{seed}/rooms-{n}"
    return Scene(
        id=scene_id,
        source=SOURCE_NAME,
        rooms=tuple(rooms),
        doors=tuple(
            Door(
                id=f"door_{k}",
                room_ids=tuple(f"room_{r}" for r in plan.rooms),
                segment=_door_segment(plan),
                kind=plan.kind,
            )
            for k, plan in enumerate(doors)
        ),
        metadata={
            "generator": "condvln.procedural",
            "generator_version": GENERATOR_VERSION,
            "catalogue_version": cat.version,
            "seed": seed,
            "n_rooms": n,
        },
    )


def _furnished_rooms(
    rnd: _Rand,
    cat: Catalogue,
    types: list[str],
    rects: list[Rect],
    doors: list[_DoorPlan],
    ceiling: float,
) -> list[Room]:
    """The rooms of a house plan, furnished one after the other (in room order)."""
    counters: dict[str, int] = {}
    rooms = []
    for i, (room_type, rect) in enumerate(zip(types, rects, strict=True)):
        openings = [d for d in doors if len(d.rooms) == 2]
        room_doors = (_room_doors(rect, i, doors), _room_doors(rect, i, openings))
        placed = _furnish(rnd, rect, ceiling, room_doors, _room_plan(cat, room_type))
        x0, z0, x1, z1 = (v / UNITS_PER_M for v in rect)
        rooms.append(
            Room(
                id=f"room_{i}",
                room_type=room_type,
                label=cat.room_types[room_type].label,
                objects=tuple(_scene_objects(placed, counters)),
                floor_polygon=((x0, z0), (x1, z0), (x1, z1), (x0, z1)),
                floor_height=0.0,
                ceiling_height=ceiling,
            )
        )
    return rooms


_SEED = re.compile(r"[0-9]{1,19}")
"""A seed as text: decimal digits, at most 19 (every seed is below 2**63)."""


def load(reference: str, **options: Any) -> Scene:
    """Load the procedural house whose seed is ``reference`` (a non-negative integer).

    Args:
        reference: The seed, as text (``"42"``).
        **options: ``n_rooms`` (2–8) forces the number of rooms.

    Raises:
        ConfigError: On a seed that is not a non-negative integer or an unknown / bad option.
    """
    text = str(reference).strip()
    if not _SEED.fullmatch(text) or int(text) >= 2**63:
        shown = text if len(text) <= 40 else f"{text[:20]}… ({len(text)} characters)"
        raise ConfigError(
            f"procedural: the seed must be a non-negative integer below 2**63, got {shown!r}"
        )
    unknown = sorted(set(options) - {"n_rooms"})
    if unknown:
        raise ConfigError(f"procedural: unknown option(s) {', '.join(unknown)} (known: n_rooms)")
    n_rooms = options.get("n_rooms")
    if n_rooms is not None:
        try:
            n_rooms = int(n_rooms)
        except (TypeError, ValueError):
            raise ConfigError(f"procedural: n_rooms must be an integer, got {n_rooms!r}") from None
    return generate_house(int(text), n_rooms=n_rooms)


SOURCE = SceneSource(
    name=SOURCE_NAME,
    description="Deterministic furnished houses of 2–8 rooms, generated from a seed (built in)",
    reference="a non-negative integer seed",
    load=load,
)
