"""Compiled (numba) kernels behind the grid navigator's per-query work.

* :func:`segment_hits` — exact supercover traversal of a segment over a boolean grid, stopping
  at the first marked cell: line of sight (``~free``) and visibility (``view_blocked``). It
  visits exactly the cells of :meth:`condvln.nav.grid.GridFrame.traverse` (same arithmetic:
  the row/column crossing parameters are merged in order, each cell is the one holding the
  midpoint of two consecutive crossings, clipped into the grid).
* :func:`descend` — the steepest-descent chain of cells of a distance field (the rule of
  :attr:`condvln.nav.geodesic.GridField.downhill`, evaluated only along the chain).
* :func:`bilinear` — distance-field values at points, interpolated over the reached cells
  among the four surrounding cell centres (see :meth:`condvln.nav.geodesic.GridField.query`).
* :func:`string_pull` — the greedy / corner-refinement string pulling of a chain of points
  (see :meth:`condvln.nav.geodesic.GridNavigator._string_pull`).

Grid arguments are the grid array plus ``(ox, oz, cell)``: the frame's origin and cell size.
Points are ground coordinates ``(x, z)``; continuous cell coordinates are
``row = (z - oz) / cell`` and ``col = (x - ox) / cell``, as in
:meth:`~condvln.nav.grid.GridFrame.continuous`. Every float operation mirrors the former numpy
code, so results are bit-identical to it.

``cache=True`` stores the compiled code next to this module (or under ``NUMBA_CACHE_DIR``);
where that is read-only numba warns and compiles in memory.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from scipy import ndimage


def free_room(free: np.ndarray, margin: float = 1e-3) -> np.ndarray:
    """For every cell, a radius (in cells) such that every point within it of any point of the
    cell lies in a free cell of the grid (negative: none is guaranteed).

    The distance between the centres of a cell and its nearest blocked (or off-grid) cell, less
    the two half diagonals (√2) and a margin for rounding.
    """
    padded = np.pad(np.asarray(free, dtype=bool), 1, constant_values=False)
    centre = ndimage.distance_transform_edt(padded)[1:-1, 1:-1]
    return np.ascontiguousarray(centre - math.sqrt(2.0) - margin)


# The 8 neighbour offsets (row, col) in the order GridField.downhill scans them.
_DR = np.array([-1, 1, 0, 0, -1, -1, 1, 1], dtype=np.intp)
_DC = np.array([0, 0, -1, 1, -1, 1, -1, 1], dtype=np.intp)


@numba.njit(cache=True, nogil=True)
def _crossing_count(p0: float, p1: float) -> int:
    """How many integer grid lines lie strictly between ``p0`` and ``p1`` (0 when equal)."""
    if p1 == p0:
        return 0
    lo, hi = min(p0, p1), max(p0, p1)
    return max(int(math.ceil(hi) - (math.floor(lo) + 1.0)), 0)


@numba.njit(cache=True, nogil=True)
def _crossing(p0: float, p1: float, i: int) -> float:
    """Parameter ``t`` of the ``i``-th grid line crossed from ``p0`` towards ``p1``."""
    k = math.floor(p0) + 1.0 + i if p1 > p0 else math.ceil(p0) - 1.0 - i
    return (k - p0) / (p1 - p0)


@numba.njit(cache=True, nogil=True)
def _next_crossing(
    r0: float, c0: float, r1: float, c1: float, n_r: int, n_c: int, i_r: int, i_c: int
) -> tuple[float, int, int]:
    """The next crossing parameter ``t`` (row or column line, or the end ``1``) and the counts."""
    t_r = _crossing(r0, r1, i_r) if i_r < n_r else 2.0
    t_c = _crossing(c0, c1, i_c) if i_c < n_c else 2.0
    t = min(t_r, t_c, 1.0)
    if t_r == t:
        i_r += 1
    if t_c == t:
        i_c += 1
    return t, i_r, i_c


@numba.njit(cache=True, nogil=True)
def _cell_at(
    r0: float, c0: float, r1: float, c1: float, mid: float, n_rows: int, n_cols: int
) -> tuple[int, int]:
    """The cell holding the point at parameter ``mid``, clipped into the grid."""
    row = min(max(math.floor(r0 + mid * (r1 - r0)), 0), n_rows - 1)
    col = min(max(math.floor(c0 + mid * (c1 - c0)), 0), n_cols - 1)
    return row, col


@numba.njit(cache=True, nogil=True)
def _scan(
    grid: np.ndarray,
    r0: float,
    c0: float,
    r1: float,
    c1: float,
    skip_r0: int,
    skip_c0: int,
    skip_r1: int,
    skip_c1: int,
) -> bool:
    """Whether segment ``(r0, c0) → (r1, c1)`` (continuous cell coordinates) crosses a cell
    where ``grid`` is true, other than ``(skip_r0, skip_c0)`` and ``(skip_r1, skip_c1)``.

    The cells are those of ``GridFrame.traverse``: the row and column crossings are merged in
    order (a corner crossing counts once) and each cell holds the midpoint of two consecutive
    crossings. Stops at the first hit.
    """
    n_rows, n_cols = grid.shape
    n_r, n_c = _crossing_count(r0, r1), _crossing_count(c0, c1)
    i_r = i_c = 0
    prev = 0.0
    while prev < 1.0:
        t, i_r, i_c = _next_crossing(r0, c0, r1, c1, n_r, n_c, i_r, i_c)
        if t <= prev:
            continue  # a repeated crossing (the segment passes a grid corner)
        row, col = _cell_at(r0, c0, r1, c1, 0.5 * (prev + t), n_rows, n_cols)
        prev = t
        if grid[row, col]:
            if (row == skip_r0 and col == skip_c0) or (row == skip_r1 and col == skip_c1):
                continue
            return True
    return False


@numba.njit(cache=True, nogil=True)
def _crossings_upto(p0: float, p1: float, n: int, t: float) -> int:
    """How many of the ``n`` grid-line crossings from ``p0`` towards ``p1`` have ``t_i <= t``."""
    if n == 0:
        return 0
    p = p0 + t * (p1 - p0)
    i = math.floor(p) - math.floor(p0) if p1 > p0 else math.ceil(p0) - math.ceil(p)
    i = min(max(i, 0), n)
    while i < n and _crossing(p0, p1, i) <= t:
        i += 1
    while i > 0 and _crossing(p0, p1, i - 1) > t:
        i -= 1
    return i


@numba.njit(cache=True, nogil=True)
def _scan_clear(
    blocked: np.ndarray, room: np.ndarray, r0: float, c0: float, r1: float, c1: float
) -> bool:
    """``not _scan(blocked, …)`` that skips ahead through open space.

    At a free cell whose ``room`` (see :func:`free_room`) is ``ρ``, every segment point within
    ``ρ`` of the current one lies in a free cell, so the walk resumes at the crossing interval
    holding the parameter ``ρ`` cells further on; the cells it checks are a subset of
    :func:`_scan`'s and the skipped ones are free, so the answer is the same.
    """
    n_rows, n_cols = blocked.shape
    n_r, n_c = _crossing_count(r0, r1), _crossing_count(c0, c1)
    length = math.hypot(r1 - r0, c1 - c0)
    i_r = i_c = 0
    prev = 0.0
    while prev < 1.0:
        t, i_r, i_c = _next_crossing(r0, c0, r1, c1, n_r, n_c, i_r, i_c)
        if t <= prev:
            continue
        mid = 0.5 * (prev + t)
        row, col = _cell_at(r0, c0, r1, c1, mid, n_rows, n_cols)
        prev = t
        if blocked[row, col]:
            return False
        reach = room[row, col]
        if reach >= 2.0 and length > 0.0:
            jump = mid + reach / length
            if jump >= 1.0:
                return True
            if jump > prev:
                i_r = _crossings_upto(r0, r1, n_r, jump)
                i_c = _crossings_upto(c0, c1, n_c, jump)
                prev = 0.0
                if i_r > 0:
                    prev = max(prev, _crossing(r0, r1, i_r - 1))
                if i_c > 0:
                    prev = max(prev, _crossing(c0, c1, i_c - 1))
    return True


@numba.njit(cache=True, nogil=True)
def segment_clear(
    blocked: np.ndarray,
    room: np.ndarray,
    ox: float,
    oz: float,
    cell: float,
    ax: float,
    az: float,
    bx: float,
    bz: float,
) -> bool:
    """Whether every cell segment ``a → b`` crosses is free (``blocked`` false)."""
    r0, c0 = (az - oz) / cell, (ax - ox) / cell
    r1, c1 = (bz - oz) / cell, (bx - ox) / cell
    return _scan_clear(blocked, room, r0, c0, r1, c1)


@numba.njit(cache=True, nogil=True)
def traverse_cells(
    n_rows: int, n_cols: int, r0: float, c0: float, r1: float, c1: float
) -> tuple[np.ndarray, np.ndarray]:
    """The cells :func:`_scan` visits, in order (for tests: equals ``GridFrame.traverse``)."""
    n_r, n_c = _crossing_count(r0, r1), _crossing_count(c0, c1)
    rows = np.empty(n_r + n_c + 1, dtype=np.intp)
    cols = np.empty(n_r + n_c + 1, dtype=np.intp)
    i_r = i_c = n = 0
    prev = 0.0
    while prev < 1.0:
        t, i_r, i_c = _next_crossing(r0, c0, r1, c1, n_r, n_c, i_r, i_c)
        if t <= prev:
            continue
        rows[n], cols[n] = _cell_at(r0, c0, r1, c1, 0.5 * (prev + t), n_rows, n_cols)
        prev = t
        n += 1
    return rows[:n], cols[:n]


@numba.njit(cache=True, nogil=True)
def _cell_of(value: float, origin: float, cell: float, size: int) -> int:
    return min(max(math.floor((value - origin) / cell), 0), size - 1)


@numba.njit(cache=True, nogil=True)
def segment_hits(
    grid: np.ndarray,
    ox: float,
    oz: float,
    cell: float,
    ax: float,
    az: float,
    bx: float,
    bz: float,
    skip_ends: bool,
) -> bool:
    """Whether segment ``a → b`` crosses a cell where ``grid`` is true.

    With ``skip_ends`` the cells holding ``a`` and ``b`` themselves are ignored.
    """
    s_r0 = s_c0 = s_r1 = s_c1 = -1
    if skip_ends:
        n_rows, n_cols = grid.shape
        s_r0, s_c0 = _cell_of(az, oz, cell, n_rows), _cell_of(ax, ox, cell, n_cols)
        s_r1, s_c1 = _cell_of(bz, oz, cell, n_rows), _cell_of(bx, ox, cell, n_cols)
    r0, c0 = (az - oz) / cell, (ax - ox) / cell
    r1, c1 = (bz - oz) / cell, (bx - ox) / cell
    return _scan(grid, r0, c0, r1, c1, s_r0, s_c0, s_r1, s_c1)


@numba.njit(cache=True, nogil=True)
def _clear(
    blocked: np.ndarray,
    room: np.ndarray,
    ox: float,
    oz: float,
    cell: float,
    chain: np.ndarray,
    i: int,
    j: int,
) -> bool:
    r0, c0 = (chain[i, 1] - oz) / cell, (chain[i, 0] - ox) / cell
    r1, c1 = (chain[j, 1] - oz) / cell, (chain[j, 0] - ox) / cell
    return _scan_clear(blocked, room, r0, c0, r1, c1)


@numba.njit(cache=True, nogil=True)
def _downhill_step(values: np.ndarray, reached: np.ndarray, index: int) -> int:
    """The lowest allowed neighbour of cell ``index`` (itself at a local minimum)."""
    n_rows, n_cols = values.shape
    row, col = index // n_cols, index % n_cols
    best = values[row, col] if reached[row, col] else np.inf
    best_index = index
    for k in range(8):
        r, c = row + _DR[k], col + _DC[k]
        if r < 0 or r >= n_rows or c < 0 or c >= n_cols or not reached[r, c]:
            continue
        if _DR[k] != 0 and _DC[k] != 0 and not (reached[r, col] and reached[row, c]):
            continue  # no corner cutting (both orthogonal neighbours are in the grid here)
        if values[r, c] < best:
            best = values[r, c]
            best_index = r * n_cols + c
    return best_index


@numba.njit(cache=True, nogil=True)
def descend(values: np.ndarray, reached: np.ndarray, row: int, col: int) -> np.ndarray:
    """Flat indices from ``(row, col)`` down to the field's local minimum (empty: no end)."""
    limit = values.size
    start = row * values.shape[1] + col
    count, current = 1, start
    while count <= limit:
        nxt = _downhill_step(values, reached, current)
        if nxt == current:
            break
        current = nxt
        count += 1
    else:
        return np.empty(0, dtype=np.intp)
    cells = np.empty(count, dtype=np.intp)
    cells[0] = current = start
    for k in range(1, count):
        current = _downhill_step(values, reached, current)
        cells[k] = current
    return cells


@numba.njit(cache=True, nogil=True)
def bilinear(
    values: np.ndarray, reached: np.ndarray, ox: float, oz: float, cell: float, xz: np.ndarray
) -> np.ndarray:
    """Field values at ground points ``xz`` ``(N, 2)``: the weighted mean over the reached ones
    of the four cell centres around each point, or the point's own cell value when none is."""
    n_rows, n_cols = values.shape
    out = np.empty(xz.shape[0])
    for k in range(xz.shape[0]):
        rows_f = (xz[k, 1] - oz) / cell
        cols_f = (xz[k, 0] - ox) / cell
        r0 = math.floor(rows_f - 0.5)
        c0 = math.floor(cols_f - 0.5)
        fr, fc = rows_f - 0.5 - r0, cols_f - 0.5 - c0
        total = weight = 0.0
        for dr in range(2):
            for dc in range(2):
                r, c = r0 + dr, c0 + dc
                if 0 <= r < n_rows and 0 <= c < n_cols and reached[r, c]:
                    w = (fr if dr else 1.0 - fr) * (fc if dc else 1.0 - fc)
                    total += w * values[r, c]
                    weight += w
        if weight > 1e-9:
            out[k] = total / weight
        else:
            r = min(max(math.floor(rows_f), 0), n_rows - 1)
            c = min(max(math.floor(cols_f), 0), n_cols - 1)
            out[k] = values[r, c]
    return out


@numba.njit(cache=True, nogil=True)
def chain_points(
    cells: np.ndarray,
    n_cols: int,
    ox: float,
    oz: float,
    cell: float,
    start: np.ndarray,
    goal: np.ndarray,
) -> np.ndarray:
    """``start``, the centres of ``cells[1:]``, ``goal``: the chain to string-pull."""
    n = cells.size
    chain = np.empty((n + 1, 2))
    chain[0, 0], chain[0, 1] = start[0], start[1]
    for k in range(1, n):
        r, c = cells[k] // n_cols, cells[k] % n_cols
        chain[k, 0] = ox + (c + 0.5) * cell
        chain[k, 1] = oz + (r + 0.5) * cell
    chain[n, 0], chain[n, 1] = goal[0], goal[1]
    return chain


@numba.njit(cache=True, nogil=True)
def _greedy(
    blocked: np.ndarray,
    room: np.ndarray,
    ox: float,
    oz: float,
    cell: float,
    chain: np.ndarray,
    order: np.ndarray,
) -> np.ndarray:
    """From each kept point, the farthest later point of ``order`` it sees (in order)."""
    kept = np.empty(order.size, dtype=np.intp)
    kept[0] = order[0]
    n, j = 1, 0
    while kept[n - 1] != order[-1]:
        j += 1
        while j + 1 < order.size and _clear(
            blocked, room, ox, oz, cell, chain, kept[n - 1], order[j + 1]
        ):
            j += 1
        kept[n] = order[j]
        n += 1
    return kept[:n].copy()


@numba.njit(cache=True, nogil=True)
def _roughly_clear(
    free: np.ndarray,
    room: np.ndarray,
    ox: float,
    oz: float,
    cell: float,
    chain: np.ndarray,
    a: int,
    candidates: np.ndarray,
    hopeful: np.ndarray,
) -> None:
    """Clear ``hopeful[k]`` where segment ``a → candidates[k]`` has a sample off ``free``.

    Samples at quarter-cell steps of the longest hopeful segment (a fast pre-filter). Samples
    within ``room`` (cells, see :func:`free_room`) of a free sample are free, so they are skipped.
    """
    ax, az = chain[a, 0], chain[a, 1]
    longest = -1.0
    for k in range(candidates.size):
        if hopeful[k]:
            p = candidates[k]
            longest = max(longest, math.hypot(chain[p, 0] - ax, chain[p, 1] - az))
    if longest < 0.0:
        return
    steps = max(math.ceil(4.0 * longest / cell), 1)
    step = 1.0 / steps
    n_rows, n_cols = free.shape
    for k in range(candidates.size):
        if not hopeful[k]:
            continue
        p = candidates[k]
        dx, dz = chain[p, 0] - ax, chain[p, 1] - az
        spacing = step * math.hypot(dx, dz) / cell  # between samples, in cells
        i = 0
        while i <= steps:
            t = 1.0 if i == steps else i * step
            row = math.floor(((az + t * dz) - oz) / cell)
            col = math.floor(((ax + t * dx) - ox) / cell)
            if row < 0 or row >= n_rows or col < 0 or col >= n_cols or not free[row, col]:
                hopeful[k] = False
                break
            if spacing > 0.0 and room[row, col] > spacing:  # zero spacing: a single point
                i += int(room[row, col] / spacing)
            i += 1


@numba.njit(cache=True, nogil=True)
def _best_corner(
    blocked: np.ndarray,
    free: np.ndarray,
    room: np.ndarray,
    ox: float,
    oz: float,
    cell: float,
    chain: np.ndarray,
    prev: int,
    current: int,
    nxt: int,
) -> int:
    """The chain point between ``prev`` and ``nxt`` with the shortest clear legs (or current)."""
    m = nxt - prev - 1
    candidates = np.arange(prev + 1, nxt)
    legs = np.empty(m)
    for k in range(m):
        p = candidates[k]
        legs[k] = math.hypot(chain[p, 0] - chain[prev, 0], chain[p, 1] - chain[prev, 1]) + (
            math.hypot(chain[p, 0] - chain[nxt, 0], chain[p, 1] - chain[nxt, 1])
        )
    hopeful = legs < legs[current - prev - 1]
    _roughly_clear(free, room, ox, oz, cell, chain, prev, candidates, hopeful)
    _roughly_clear(free, room, ox, oz, cell, chain, nxt, candidates, hopeful)
    index = np.flatnonzero(hopeful)
    for k in index[np.argsort(legs[index], kind="mergesort")]:
        j = candidates[k]
        if _clear(blocked, room, ox, oz, cell, chain, prev, j) and _clear(
            blocked, room, ox, oz, cell, chain, j, nxt
        ):
            return j
    return current


@numba.njit(cache=True, nogil=True)
def string_pull(
    blocked: np.ndarray,
    free: np.ndarray,
    room: np.ndarray,
    ox: float,
    oz: float,
    cell: float,
    chain: np.ndarray,
) -> np.ndarray:
    """Indices of the waypoints of ``chain`` (consecutive points see each other), pulled taut.

    A greedy pass keeps the farthest visible chain point at each step; two refinement passes
    then move every corner to the chain point that shortens its two legs most while both stay
    clear; a last greedy pass drops corners that became redundant.
    """
    kept = _greedy(blocked, room, ox, oz, cell, chain, np.arange(chain.shape[0]))
    for _ in range(2):
        for i in range(1, kept.size - 1):
            kept[i] = _best_corner(
                blocked, free, room, ox, oz, cell, chain, kept[i - 1], kept[i], kept[i + 1]
            )
    return _greedy(blocked, room, ox, oz, cell, chain, kept)
