"""Index arithmetic of a regular ground-plane grid: cells, centres and exact segment traversal.

Cell ``(row, col)`` covers ``x ∈ [x0 + col·c, x0 + (col+1)·c)`` and ``z ∈ [z0 + row·c, …)``:
rows run along +Z (south), columns along +X (east).

>>> frame = GridFrame(origin=(0.0, 0.0), cell_size=1.0, shape=(3, 3))
>>> rows, cols = frame.traverse((0.5, 0.5), (2.5, 1.5))
>>> list(zip(rows.tolist(), cols.tolist()))
[(0, 0), (0, 1), (1, 1), (1, 2)]
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from condvln.errors import SceneFormatError

IntArray = NDArray[np.intp]
FloatArray = NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class GridFrame:
    """Placement of a grid in the ground plane.

    Attributes:
        origin: ``(x, z)`` of the outer corner of cell ``(0, 0)``.
        cell_size: Edge of a cell in metres.
        shape: ``(rows, cols)``.
    """

    origin: tuple[float, float]
    cell_size: float
    shape: tuple[int, int]

    def continuous(self, xz: ArrayLike) -> tuple[FloatArray, FloatArray]:
        """Continuous cell coordinates ``(row, col)`` of ground points ``(N, 2)`` (cell units)."""
        pts = np.asarray(xz, dtype=np.float64).reshape(-1, 2)
        cols = (pts[:, 0] - self.origin[0]) / self.cell_size
        rows = (pts[:, 1] - self.origin[1]) / self.cell_size
        return rows, cols

    def cells(self, xz: ArrayLike) -> tuple[IntArray, IntArray, NDArray[np.bool_]]:
        """Cells holding ground points ``(N, 2)``, clipped into the grid, and an ``inside`` mask."""
        rows_f, cols_f = self.continuous(xz)
        rows = np.floor(rows_f).astype(np.intp)
        cols = np.floor(cols_f).astype(np.intp)
        inside = (rows >= 0) & (rows < self.shape[0]) & (cols >= 0) & (cols < self.shape[1])
        rows = np.clip(rows, 0, self.shape[0] - 1)
        cols = np.clip(cols, 0, self.shape[1] - 1)
        return rows, cols, inside

    def cell(self, x: float, z: float) -> tuple[int, int] | None:
        """The cell ``(row, col)`` holding one ground point, ``None`` outside the grid: what
        :meth:`cells` gives for one point, in scalar arithmetic (no array round trip)."""
        row = math.floor((z - self.origin[1]) / self.cell_size)
        col = math.floor((x - self.origin[0]) / self.cell_size)
        inside = 0 <= row < self.shape[0] and 0 <= col < self.shape[1]
        return (row, col) if inside else None

    def centres(self, rows: ArrayLike, cols: ArrayLike) -> FloatArray:
        """Ground coordinates ``(N, 2)`` of the centres of cells ``(rows, cols)``."""
        r = np.asarray(rows, dtype=np.float64).ravel()
        c = np.asarray(cols, dtype=np.float64).ravel()
        x = self.origin[0] + (c + 0.5) * self.cell_size
        z = self.origin[1] + (r + 0.5) * self.cell_size
        return np.column_stack([x, z])

    def all_centres(self) -> tuple[FloatArray, FloatArray]:
        """``(X, Z)`` arrays of shape :attr:`shape` with every cell centre."""
        x = self.origin[0] + (np.arange(self.shape[1]) + 0.5) * self.cell_size
        z = self.origin[1] + (np.arange(self.shape[0]) + 0.5) * self.cell_size
        xs, zs = np.meshgrid(x, z)
        return xs, zs

    def traverse(self, a: ArrayLike, b: ArrayLike) -> tuple[IntArray, IntArray]:
        """Every cell the closed segment ``a → b`` passes through, in order (exact, no sampling).

        Cells outside the grid are clipped to its border.
        """
        (r0,), (c0,) = self.continuous(a)
        (r1,), (c1,) = self.continuous(b)
        ts = [np.array([0.0, 1.0])]
        for p0, p1 in ((r0, r1), (c0, c1)):
            if p1 != p0:
                lo, hi = sorted((p0, p1))
                ks = np.arange(np.floor(lo) + 1.0, np.ceil(hi))
                ts.append((ks - p0) / (p1 - p0))
        t = np.unique(np.concatenate(ts))
        mid = 0.5 * (t[:-1] + t[1:]) if t.size > 1 else t
        rows = np.floor(r0 + mid * (r1 - r0)).astype(np.intp)
        cols = np.floor(c0 + mid * (c1 - c0)).astype(np.intp)
        rows = np.clip(rows, 0, self.shape[0] - 1)
        cols = np.clip(cols, 0, self.shape[1] - 1)
        return rows, cols


MAX_GRID_CELLS = 40_000_000
"""Largest navigation grid (cells) built for one scene: 316 m × 316 m at 5 cm, far beyond any
house; a larger request is refused before any array is allocated."""


def frame_around(bounds: tuple[float, float, float, float], cell_size: float) -> GridFrame:
    """A grid frame covering ``(xmin, zmin, xmax, zmax)`` with a two-cell margin.

    Raises:
        SceneFormatError: the grid would exceed :data:`MAX_GRID_CELLS` (or the bounds are not
            finite).

    >>> frame_around((0.0, 0.0, 1.0, 0.5), 0.25).shape
    (6, 8)
    """
    xmin, zmin, xmax, zmax = bounds
    if not all(np.isfinite(bounds)):
        raise SceneFormatError("scene bounds are not finite", record="scene", field="floor_polygon")
    margin = 2.0 * cell_size
    width, depth = xmax - xmin + 2.0 * margin, zmax - zmin + 2.0 * margin
    if (width / cell_size) * (depth / cell_size) > MAX_GRID_CELLS:
        raise SceneFormatError(
            f"spans {width:.0f} m × {depth:.0f} m: a {cell_size:g} m navigation grid would need "
            f"{(width / cell_size) * (depth / cell_size):.2g} cells (limit {MAX_GRID_CELLS:.0e})",
            record="scene",
            field="floor_polygon",
        )
    cols = int(np.ceil(width / cell_size))
    rows = int(np.ceil(depth / cell_size))
    return GridFrame(origin=(xmin - margin, zmin - margin), cell_size=cell_size, shape=(rows, cols))
