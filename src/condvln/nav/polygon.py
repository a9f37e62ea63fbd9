"""The navigable polygon prepared for exact geodesics: rings, reflex vertices, an edge hash.

:class:`NavPolygon` takes the main part (largest area) of a navigable polygon — usually
:attr:`condvln.nav.area.NavArea.polygon` — and lays it out for the compiled kernels of
:mod:`condvln.nav._visibility`: the vertices of every ring (navigable side on the left of each
edge), their ring neighbours, the reflex vertices (where shortest paths bend) and a uniform hash
of the edges. Repeated and collinear vertices are dropped first; they change neither the polygon
nor any shortest path. The other parts (islands) are kept for snapping: a point nearer to an
island than to the main part is not on the main part.

>>> from shapely.geometry import box
>>> poly = NavPolygon(box(0, 0, 4, 3).difference(box(1, 1, 2, 2)))
>>> len(poly.xy), poly.reflex.size    # the hole's four corners are reflex
(8, 4)
>>> poly.segment_free((0.5, 0.5), (3.5, 0.8)), poly.segment_free((0.5, 1.5), (3.5, 1.5))
(True, False)
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from functools import cached_property

import numpy as np
import shapely
from numpy.typing import ArrayLike, NDArray
from shapely.geometry import Polygon
from shapely.geometry.base import BaseGeometry

from condvln.errors import ValidationError
from condvln.nav import _visibility as vis

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

HASH_CELL = 0.25
"""Edge of an edge-hash cell (m)."""

_STRAIGHT = 1e-12
"""A vertex this close (m) to the line through its neighbours is dropped as collinear."""


def polygon_parts(geometry: BaseGeometry) -> list[Polygon]:
    """The polygons of ``geometry``, largest area first (ties: first in geometry order)."""
    parts = [g for g in getattr(geometry, "geoms", [geometry]) if isinstance(g, Polygon)]
    parts = [p for p in parts if not p.is_empty and p.area > 0.0]
    return sorted(parts, key=lambda p: -p.area)


def _clean_ring(coords: FloatArray) -> FloatArray:
    """Ring vertices without the closing repeat, repeated points, collinear points or spikes."""
    pts = np.asarray(coords[:-1], dtype=np.float64).reshape(-1, 2)
    while len(pts) >= 3:  # each pass drops every vertex off by <= _STRAIGHT from its neighbours
        a, v, b = np.roll(pts, 1, axis=0), pts, np.roll(pts, -1, axis=0)
        ab = np.hypot(*(b - a).T)
        cross = (v[:, 0] - a[:, 0]) * (b[:, 1] - a[:, 1]) - (v[:, 1] - a[:, 1]) * (
            b[:, 0] - a[:, 0]
        )
        with np.errstate(divide="ignore", invalid="ignore"):
            off = np.where(ab > 0.0, np.abs(cross) / ab, np.hypot(*(v - a).T))
        keep = off > _STRAIGHT
        if keep.all():
            break
        pts = pts[keep]
    return pts


def _layout(rings: list[FloatArray]) -> tuple[FloatArray, IntArray, IntArray]:
    """The vertices of ``rings`` one ring after another, and each one's ring predecessor and
    successor."""
    xy = np.ascontiguousarray(np.concatenate(rings), dtype=np.float64)
    spans = list(itertools.pairwise(np.cumsum([0, *(len(r) for r in rings)])))
    index = np.arange(len(xy), dtype=np.int64)
    prev = np.concatenate([np.roll(index[s:e], 1) for s, e in spans])
    nxt = np.concatenate([np.roll(index[s:e], -1) for s, e in spans])
    return xy, prev, nxt


def _edge_hash(xy: FloatArray, nxt: IntArray) -> tuple[FloatArray, IntArray, IntArray]:
    """Every edge ``i → nxt[i]`` in every hash cell its bounding box (grown by ``EPS``)
    overlaps: the grid ``(origin_x, origin_z, size, rows, cols)`` and the cells' edges (CSR)."""
    lo = xy.min(axis=0) - HASH_CELL
    hi = xy.max(axis=0) + HASH_CELL
    cols, rows = (np.ceil((hi - lo) / HASH_CELL).astype(int) + 1).tolist()
    a, b = xy, xy[nxt]
    low = np.floor((np.minimum(a, b) - vis.EPS - lo) / HASH_CELL).astype(np.int64)
    high = np.floor((np.maximum(a, b) + vis.EPS - lo) / HASH_CELL).astype(np.int64)
    width, height = (high - low + 1).T  # the cells of each edge's box, row by row
    count = width * height
    edge = np.repeat(np.arange(len(a), dtype=np.int64), count)
    local = np.arange(count.sum()) - np.repeat(np.cumsum(count) - count, count)
    cell_of = (low[edge, 1] + local // width[edge]) * cols + low[edge, 0] + local % width[edge]
    order = np.argsort(cell_of, kind="stable")
    cell_edges = edge[order]
    cell_start = np.zeros(rows * cols + 1, dtype=np.int64)
    np.add.at(cell_start, cell_of + 1, 1)
    grid = np.array([lo[0], lo[1], HASH_CELL, rows, cols], dtype=np.float64)
    return grid, np.cumsum(cell_start), np.ascontiguousarray(cell_edges)


class NavPolygon:
    """One polygon (with holes) laid out for the visibility kernels.

    Args:
        geometry: A polygon or a collection of them; its largest part is used, the others are
            islands.

    Attributes:
        polygon: The main part (shapely, prepared).
        islands: The other parts (may be empty).
        xy: ``(N, 2)`` vertex coordinates, ring after ring.
        prev: Index of each vertex's predecessor on its ring.
        nxt: Index of each vertex's successor on its ring (edge ``i → nxt[i]``).
        reflex: Indices of the reflex vertices.

    Raises:
        ValidationError: ``geometry`` has no polygon of positive area.
    """

    def __init__(self, geometry: BaseGeometry) -> None:
        parts = polygon_parts(geometry)
        if not parts:
            raise ValidationError("the navigable polygon is empty")
        self.polygon = shapely.geometry.polygon.orient(parts[0], sign=1.0)
        self.islands = shapely.MultiPolygon(parts[1:])
        shapely.prepare(self.polygon)
        shapely.prepare(self.islands)
        rings = [_clean_ring(np.asarray(r.coords)) for r in self._rings()]
        self.xy, self.prev, self.nxt = _layout([r for r in rings if len(r) >= 3])
        self.reflex = np.flatnonzero(self._turns() < 0.0).astype(np.int64)
        self.grid, self.cell_start, self.cell_edges = _edge_hash(self.xy, self.nxt)

    def _rings(self) -> list[BaseGeometry]:
        return [self.polygon.exterior, *self.polygon.interiors]

    def _turns(self) -> FloatArray:
        """Signed turn at every vertex (> 0 left / convex, < 0 right / reflex)."""
        a, v, b = self.xy[self.prev], self.xy, self.xy[self.nxt]
        return (v[:, 0] - a[:, 0]) * (b[:, 1] - v[:, 1]) - (v[:, 1] - a[:, 1]) * (b[:, 0] - v[:, 0])

    @property
    def kernel_args(self) -> tuple[np.ndarray, ...]:
        """``(xy, prev, nxt, reflex, cell_start, cell_edges, grid)`` for the kernels."""
        return (
            self.xy,
            self.prev,
            self.nxt,
            self.reflex,
            self.cell_start,
            self.cell_edges,
            self.grid,
        )

    @cached_property
    def corners(self) -> FloatArray:
        """Per reflex vertex a column ``(x, z, unit vector to prev, unit vector to next)``:
        ``(6, V)``, so the kernels read each quantity contiguously."""
        v = self.xy[self.reflex]
        to_prev = self.xy[self.prev[self.reflex]] - v
        to_next = self.xy[self.nxt[self.reflex]] - v
        to_prev /= np.hypot(*to_prev.T)[:, None]
        to_next /= np.hypot(*to_next.T)[:, None]
        return np.ascontiguousarray(np.hstack([v, to_prev, to_next]).T)

    @cached_property
    def graph(self) -> tuple[IntArray, IntArray, FloatArray]:
        """The reduced visibility graph over :attr:`reflex` (CSR, built on first use)."""
        return vis.visibility_graph(*self.kernel_args)

    def segment_free(self, a: Sequence[float], b: Sequence[float]) -> bool:
        """Whether the segment ``a → b`` (ground points on the main part) stays on it."""
        xy, prev, nxt, _, start, edges, grid = self.kernel_args
        return bool(
            vis.segment_free(xy, prev, nxt, start, edges, grid, *map(float, a), *map(float, b))
        )

    def _cell_table(self, grid: FloatArray, cell_start: IntArray) -> NDArray[np.int8]:
        """Per cell of an edge hash 1 (inside) or 0 (outside) when no edge is hashed into it —
        no boundary point lies in it then, so every point of the cell agrees with its centre —
        else -1."""
        ox, oz, size, rows, cols = grid.tolist()
        row, col = np.divmod(np.arange(int(rows * cols)), int(cols))
        centre_x, centre_z = ox + (col + 0.5) * size, oz + (row + 0.5) * size
        inside = shapely.intersects_xy(self.polygon, centre_x, centre_z).astype(np.int8)
        return np.where(np.diff(cell_start) > 0, np.int8(-1), inside)

    @cached_property
    def _cell_inside(self) -> NDArray[np.int8]:
        """:meth:`_cell_table` of the edge hash."""
        return self._cell_table(self.grid, self.cell_start)

    @cached_property
    def _boundary(self) -> tuple[np.ndarray, ...]:
        """The rings of :attr:`polygon` as shapely holds them (not cleaned, so the test agrees
        with shapely's) in an edge hash of their own: the arguments of
        :func:`~condvln.nav._visibility.point_status` but the points."""
        xy, _, nxt = _layout([np.asarray(r.coords)[:-1] for r in self._rings()])
        grid, cell_start, cell_edges = _edge_hash(xy, nxt)
        return xy, nxt, cell_start, cell_edges, grid, self._cell_table(grid, cell_start)

    def contains(self, xz: ArrayLike) -> NDArray[np.bool_]:
        """Whether each ground point ``(N, 2)`` lies on the main part (boundary included):
        from the edge hash where a cell holds no edge, else as shapely answers (a crossing
        count, :func:`~condvln.nav._visibility.point_status`, or shapely itself within
        rounding of an edge)."""
        pts = np.ascontiguousarray(np.asarray(xz, dtype=np.float64).reshape(-1, 2))
        status = vis.cell_status(self.grid, self._cell_inside, pts)
        mixed = np.flatnonzero(status < 0)
        if mixed.size:
            status[mixed] = vis.point_status(*self._boundary, pts[mixed])
            near = mixed[status[mixed] < 0]
            if near.size:
                status[near] = shapely.intersects_xy(self.polygon, pts[near, 0], pts[near, 1])
        return status.astype(bool)

    def _nearest(self, pts: FloatArray, reach: float) -> tuple[FloatArray, FloatArray]:
        """Nearest boundary points of the main part within ``reach`` and their distances."""
        return vis.nearest_boundary(
            self.xy, self.nxt, self.cell_start, self.cell_edges, self.grid, pts, reach
        )

    def nearest(self, xz: ArrayLike) -> FloatArray:
        """The nearest point of the main part to each ground point ``(N, 2)`` (itself inside)."""
        pts = np.asarray(xz, dtype=np.float64).reshape(-1, 2)
        out = pts.copy()
        outside = np.flatnonzero(~self.contains(pts))
        if outside.size:
            span = float(np.hypot(*(self.xy.max(axis=0) - self.xy.min(axis=0))))
            far = np.hypot(*(pts[outside] - self.xy.mean(axis=0)).T).max() + span
            out[outside], _ = self._nearest(np.ascontiguousarray(pts[outside]), far)
        return out

    def locate(self, xz: ArrayLike, max_snap: float) -> tuple[FloatArray, NDArray[np.bool_]]:
        """Ground points ``(N, 2)`` moved onto the main part, and which of them may be used.

        A point on the main part stays. Another point moves to the nearest point of the main
        part when that is at most ``max_snap`` away and no island is nearer; otherwise it is
        off the main part (``ok`` false, the point is returned unchanged).
        """
        pts = np.asarray(xz, dtype=np.float64).reshape(-1, 2)
        inside = self.contains(pts)
        out, ok = pts.copy(), inside.copy()
        outside = np.flatnonzero(~inside)
        if outside.size:
            near, gap = self._nearest(np.ascontiguousarray(pts[outside]), max_snap)
            found = np.isfinite(gap)
            if found.any() and not self.islands.is_empty:
                island_gap = shapely.distance(self.islands, shapely.points(pts[outside[found]]))
                found[found] = gap[found] <= island_gap
            out[outside[found]] = near[found]
            ok[outside] = found
        return out, ok
