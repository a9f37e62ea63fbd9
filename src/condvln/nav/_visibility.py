"""Compiled (numba) kernels of the exact geodesic engine: visibility inside a polygon with holes.

The polygon is given as vertex arrays (see :class:`condvln.nav.polygon.NavPolygon`): ``xy``
``(N, 2)`` ground coordinates, ``prev`` / ``nxt`` ring neighbours, every ring oriented so that
the navigable side lies to the **left** of each edge ``i → nxt[i]`` (exterior counter-clockwise,
holes clockwise), and a uniform hash of the edges (``cells`` in CSR form over a grid of
``shape`` cells of edge ``size`` from ``origin``) to find the edges near a segment.

**Visibility** (:func:`segment_free`) is the closed-polygon test: the segment ``p → q`` is free
when every point of it lies in the polygon or on its boundary. A segment is blocked by a proper
crossing of an edge, by leaving the interior angle at a vertex it touches (a vertex within
:data:`EPS` of the segment), or by leaving the interior side of an edge it starts or ends on.
Touching the boundary from inside — grazing a corner, running along a wall — is free, so taut
shortest paths that wrap around corners are free; a passage of zero width is closed.

Shortest paths bend only at **reflex** vertices (interior angle > 180°) and only where the path
is tangent to the boundary (:func:`tangent`), so the engine works on the reduced visibility graph
of bitangent reflex-vertex pairs (:func:`visibility_graph`), runs Dijkstra from each goal
(:func:`goal_distances`) and answers a point by the smallest ``|p − v| + D(v)`` over the
tangent reflex vertices ``v`` it sees (:func:`query`), testing candidates in increasing order so
that the first visible one is the answer.
"""

from __future__ import annotations

import math

import numba
import numpy as np

EPS = 1e-9
"""Contact tolerance (m): a vertex this close to a segment touches it."""

ANGLE_EPS = 1e-9
"""Angular tolerance (sine) of the interior-angle and tangency tests."""

_NO_PARENT = -1
_UNREACHED = -2


@numba.njit(cache=True, nogil=True)
def _cross(ax: float, az: float, bx: float, bz: float) -> float:
    return ax * bz - az * bx


@numba.njit(cache=True, nogil=True)
def in_cone(
    xy: np.ndarray, prev: np.ndarray, nxt: np.ndarray, v: int, dx: float, dz: float
) -> bool:
    """Whether direction ``(dx, dz)`` from vertex ``v`` points into the closed interior angle."""
    ox, oz = xy[nxt[v], 0] - xy[v, 0], xy[nxt[v], 1] - xy[v, 1]
    kx, kz = xy[prev[v], 0] - xy[v, 0], xy[prev[v], 1] - xy[v, 1]
    no, nk, nd = math.hypot(ox, oz), math.hypot(kx, kz), math.hypot(dx, dz)
    s_out = _cross(ox, oz, dx, dz) / (no * nd)  # > 0: d lies left of the outgoing edge
    s_back = _cross(dx, dz, kx, kz) / (nd * nk)  # > 0: d lies right of the incoming edge
    turn = _cross(-kx, -kz, ox, oz) / (no * nk)
    if turn > ANGLE_EPS:  # convex corner: the wedge between the two edges
        return s_out >= -ANGLE_EPS and s_back >= -ANGLE_EPS
    if turn < -ANGLE_EPS:  # reflex corner: everything but the obstacle's wedge
        return s_out >= -ANGLE_EPS or s_back >= -ANGLE_EPS
    return s_out >= -ANGLE_EPS


@numba.njit(cache=True, nogil=True)
def _touch_ok(
    xy: np.ndarray,
    prev: np.ndarray,
    nxt: np.ndarray,
    v: int,
    px: float,
    pz: float,
    qx: float,
    qz: float,
) -> bool:
    """Whether a segment through (or ending at) vertex ``v`` stays in its interior angle."""
    vx, vz = xy[v, 0], xy[v, 1]
    if math.hypot(px - vx, pz - vz) > EPS and not in_cone(xy, prev, nxt, v, px - vx, pz - vz):
        return False
    return math.hypot(qx - vx, qz - vz) <= EPS or in_cone(xy, prev, nxt, v, qx - vx, qz - vz)


@numba.njit(cache=True, nogil=True)
def _near_segment(
    vx: float, vz: float, px: float, pz: float, dx: float, dz: float, length: float
) -> bool:
    """Whether point ``v`` lies within :data:`EPS` of the segment ``p → p + d``."""
    t = ((vx - px) * dx + (vz - pz) * dz) / (length * length)
    t = min(max(t, 0.0), 1.0)
    return math.hypot(px + t * dx - vx, pz + t * dz - vz) <= EPS


@numba.njit(cache=True, nogil=True)
def _end_on_edge(
    ax: float, az: float, ex: float, ez: float, le: float, s_end: float, rx: float, rz: float
) -> bool:
    """Whether an end point ``r`` (signed distance ``s_end`` from the edge line) lies on the
    open edge ``a → a + e``."""
    if abs(s_end) > EPS:
        return False
    t = ((rx - ax) * ex + (rz - az) * ez) / (le * le)
    return 0.0 < t < 1.0


@numba.njit(cache=True, nogil=True)
def edge_blocks(
    xy: np.ndarray,
    prev: np.ndarray,
    nxt: np.ndarray,
    i: int,
    px: float,
    pz: float,
    qx: float,
    qz: float,
) -> bool:
    """Whether edge ``i → nxt[i]`` makes the segment ``p → q`` leave the polygon."""
    j = nxt[i]
    ax, az, bx, bz = xy[i, 0], xy[i, 1], xy[j, 0], xy[j, 1]
    if (
        max(ax, bx) < min(px, qx) - EPS
        or min(ax, bx) > max(px, qx) + EPS
        or max(az, bz) < min(pz, qz) - EPS
        or min(az, bz) > max(pz, qz) + EPS
    ):
        return False
    dx, dz = qx - px, qz - pz
    length = math.hypot(dx, dz)
    if _near_segment(ax, az, px, pz, dx, dz, length) and not _touch_ok(
        xy, prev, nxt, i, px, pz, qx, qz
    ):
        return True
    if _near_segment(bx, bz, px, pz, dx, dz, length) and not _touch_ok(
        xy, prev, nxt, j, px, pz, qx, qz
    ):
        return True
    s_a = _cross(dx, dz, ax - px, az - pz) / length
    s_b = _cross(dx, dz, bx - px, bz - pz) / length
    if not ((s_a > EPS and s_b < -EPS) or (s_a < -EPS and s_b > EPS)):
        return False  # the edge does not cross the segment's line between its ends
    ex, ez = bx - ax, bz - az
    le = math.hypot(ex, ez)
    s_p = _cross(ex, ez, px - ax, pz - az) / le  # > 0: p on the navigable side
    s_q = _cross(ex, ez, qx - ax, qz - az) / le
    if _end_on_edge(ax, az, ex, ez, le, s_p, px, pz):
        return s_q < -EPS  # starts on the edge: must head to the navigable side
    if _end_on_edge(ax, az, ex, ez, le, s_q, qx, qz):
        return s_p < -EPS
    return (s_p > EPS and s_q < -EPS) or (s_p < -EPS and s_q > EPS)


@numba.njit(cache=True, nogil=True)
def _cell_index(value: float, origin: float, size: float, n: int) -> int:
    return min(max(math.floor((value - origin) / size), 0), n - 1)


@numba.njit(cache=True, nogil=True)
def segment_free(
    xy: np.ndarray,
    prev: np.ndarray,
    nxt: np.ndarray,
    cell_start: np.ndarray,
    cell_edges: np.ndarray,
    grid: np.ndarray,
    px: float,
    pz: float,
    qx: float,
    qz: float,
) -> bool:
    """Whether the closed segment ``p → q`` lies in the polygon (see the module notes).

    ``grid`` is ``(origin_x, origin_z, size, rows, cols)`` of the edge hash; both end points
    must lie inside it. The edges of every hash cell the segment passes (Amanatides–Woo
    traversal) are tested with :func:`edge_blocks`; an edge is hashed into every cell its
    bounding box (grown by :data:`EPS`) overlaps, so edges touching the segment are found.
    """
    ox, oz, size = grid[0], grid[1], grid[2]
    rows, cols = int(grid[3]), int(grid[4])
    col, row = _cell_index(px, ox, size, cols), _cell_index(pz, oz, size, rows)
    end_col, end_row = _cell_index(qx, ox, size, cols), _cell_index(qz, oz, size, rows)
    dx, dz = qx - px, qz - pz
    if math.hypot(dx, dz) <= EPS:
        return True  # a point (assumed on the polygon)
    step_c = 1 if end_col > col else -1
    step_r = 1 if end_row > row else -1
    t_c = ((ox + (col + (step_c > 0)) * size) - px) / dx if dx != 0.0 else math.inf
    t_r = ((oz + (row + (step_r > 0)) * size) - pz) / dz if dz != 0.0 else math.inf
    dt_c = size / abs(dx) if dx != 0.0 else math.inf
    dt_r = size / abs(dz) if dz != 0.0 else math.inf
    for _ in range(abs(end_col - col) + abs(end_row - row) + 1):
        cell = row * cols + col
        for k in range(cell_start[cell], cell_start[cell + 1]):
            if edge_blocks(xy, prev, nxt, cell_edges[k], px, pz, qx, qz):
                return False
        if (t_c < t_r and col != end_col) or row == end_row:
            col += step_c
            t_c += dt_c
        else:
            row += step_r
            t_r += dt_r
    return True


@numba.njit(cache=True, nogil=True)
def tangent(
    xy: np.ndarray, prev: np.ndarray, nxt: np.ndarray, v: int, px: float, pz: float
) -> bool:
    """Whether the line from ``p`` through vertex ``v`` keeps both neighbours of ``v`` on one
    side (a shortest path from ``p`` may bend at ``v`` only then)."""
    vx, vz = xy[v, 0], xy[v, 1]
    dx, dz = vx - px, vz - pz
    ax, az = xy[prev[v], 0] - vx, xy[prev[v], 1] - vz
    bx, bz = xy[nxt[v], 0] - vx, xy[nxt[v], 1] - vz
    return _tangent_to(
        xy, prev, nxt, v, dx, dz, math.hypot(dx, dz), math.hypot(ax, az), math.hypot(bx, bz)
    )


@numba.njit(cache=True, nogil=True)
def _tangent_to(
    xy: np.ndarray,
    prev: np.ndarray,
    nxt: np.ndarray,
    v: int,
    dx: float,
    dz: float,
    nd: float,
    na: float,
    nb: float,
) -> bool:
    """:func:`tangent` for the direction ``d`` (length ``nd``) from ``p`` to ``v``, given the
    lengths ``na`` / ``nb`` of the edges from ``v`` to its predecessor / successor."""
    if nd <= EPS:
        return True
    vx, vz = xy[v, 0], xy[v, 1]
    ax, az = xy[prev[v], 0] - vx, xy[prev[v], 1] - vz
    bx, bz = xy[nxt[v], 0] - vx, xy[nxt[v], 1] - vz
    s_a = _cross(dx, dz, ax, az) / (nd * na)
    s_b = _cross(dx, dz, bx, bz) / (nd * nb)
    return not ((s_a > ANGLE_EPS and s_b < -ANGLE_EPS) or (s_a < -ANGLE_EPS and s_b > ANGLE_EPS))


@numba.njit(cache=True, nogil=True)
def corner_tangent(corners: np.ndarray, a: int, px: float, pz: float) -> bool:
    """:func:`tangent` for column ``a`` of ``corners`` (rows ``vx, vz`` and the unit vectors to
    the vertex's predecessor and successor), without square roots or branches (so a loop over
    the columns vectorises)."""
    dx, dz = corners[0, a] - px, corners[1, a] - pz
    s_a = dx * corners[3, a] - dz * corners[2, a]
    s_b = dx * corners[5, a] - dz * corners[4, a]
    tol = ANGLE_EPS * (abs(dx) + abs(dz))
    return not (((s_a > tol) & (s_b < -tol)) | ((s_a < -tol) & (s_b > tol)))


@numba.njit(cache=True, nogil=True)
def _candidates(
    corners: np.ndarray,
    dist: np.ndarray,
    px: float,
    pz: float,
    bound: np.ndarray,
    cand: np.ndarray,
    keep: np.ndarray,
) -> int:
    """The reflex vertices a shortest path from ``p`` may bend at first (tangent, goal
    reachable), in index order, into ``cand`` with their bounds ``|p − v| + D(v)``; returns
    their count (``keep``: scratch)."""
    for a in range(dist.size):
        keep[a] = (dist[a] < math.inf) & corner_tangent(corners, a, px, pz)
    count = 0
    for a in range(dist.size):
        if keep[a]:
            bound[count] = math.hypot(corners[0, a] - px, corners[1, a] - pz) + dist[a]
            cand[count] = a
            count += 1
    return count


@numba.njit(cache=True, nogil=True)
def _grow(arr: np.ndarray, size: int) -> np.ndarray:
    out = np.empty(max(2 * arr.size, size), dtype=arr.dtype)
    out[: arr.size] = arr
    return out


@numba.njit(cache=True, nogil=True)
def visibility_graph(
    xy: np.ndarray,
    prev: np.ndarray,
    nxt: np.ndarray,
    reflex: np.ndarray,
    cell_start: np.ndarray,
    cell_edges: np.ndarray,
    grid: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The reduced visibility graph: reflex-vertex pairs that are mutually tangent and see each
    other, as a symmetric CSR graph ``(indptr, indices, weights)`` over positions in ``reflex``."""
    n = reflex.size
    heads = np.empty(1024, dtype=np.int64)
    tails = np.empty(1024, dtype=np.int64)
    count = 0
    edge_in = np.empty(n)  # lengths of each reflex vertex's incoming and outgoing edges
    edge_out = np.empty(n)
    for a in range(n):
        v = reflex[a]
        edge_in[a] = math.hypot(xy[prev[v], 0] - xy[v, 0], xy[prev[v], 1] - xy[v, 1])
        edge_out[a] = math.hypot(xy[nxt[v], 0] - xy[v, 0], xy[nxt[v], 1] - xy[v, 1])
    for a in range(n):
        u = reflex[a]
        ux, uz = xy[u, 0], xy[u, 1]
        for b in range(a + 1, n):
            v = reflex[b]
            vx, vz = xy[v, 0], xy[v, 1]
            dx, dz = vx - ux, vz - uz  # u → v; v → u is its exact negation
            nd = math.hypot(dx, dz)
            if not (
                _tangent_to(xy, prev, nxt, u, -dx, -dz, nd, edge_in[a], edge_out[a])
                and _tangent_to(xy, prev, nxt, v, dx, dz, nd, edge_in[b], edge_out[b])
            ):
                continue
            if not segment_free(xy, prev, nxt, cell_start, cell_edges, grid, ux, uz, vx, vz):
                continue
            if count + 2 > heads.size:
                heads, tails = _grow(heads, count + 2), _grow(tails, count + 2)
            heads[count], tails[count] = a, b
            heads[count + 1], tails[count + 1] = b, a
            count += 2
    order = np.argsort(heads[:count], kind="mergesort")
    indices = tails[:count][order]
    indptr = np.zeros(n + 1, dtype=np.int64)
    for k in range(count):
        indptr[heads[k] + 1] += 1
    for a in range(n):
        indptr[a + 1] += indptr[a]
    weights = np.empty(count)
    for a in range(n):
        u = reflex[a]
        for k in range(indptr[a], indptr[a + 1]):
            v = reflex[indices[k]]
            weights[k] = math.hypot(xy[v, 0] - xy[u, 0], xy[v, 1] - xy[u, 1])
    return indptr, indices, weights


@numba.njit(cache=True, nogil=True)
def _heap_push(keys: np.ndarray, nodes: np.ndarray, size: int, key: float, node: int) -> int:
    i = size
    keys[i], nodes[i] = key, node
    while i > 0:
        parent = (i - 1) // 2
        if keys[parent] <= keys[i]:
            break
        keys[i], keys[parent] = keys[parent], keys[i]
        nodes[i], nodes[parent] = nodes[parent], nodes[i]
        i = parent
    return size + 1


@numba.njit(cache=True, nogil=True)
def _heap_pop(keys: np.ndarray, nodes: np.ndarray, size: int) -> tuple[float, int, int]:
    key, node = keys[0], nodes[0]
    size -= 1
    keys[0], nodes[0] = keys[size], nodes[size]
    i = 0
    while True:
        left, smallest = 2 * i + 1, i
        if left < size and keys[left] < keys[smallest]:
            smallest = left
        if left + 1 < size and keys[left + 1] < keys[smallest]:
            smallest = left + 1
        if smallest == i:
            break
        keys[i], keys[smallest] = keys[smallest], keys[i]
        nodes[i], nodes[smallest] = nodes[smallest], nodes[i]
        i = smallest
    return key, node, size


@numba.njit(cache=True, nogil=True)
def dijkstra(
    indptr: np.ndarray,
    indices: np.ndarray,
    weights: np.ndarray,
    dist: np.ndarray,
    parent: np.ndarray,
) -> None:
    """Dijkstra in place: ``dist`` holds the start distances (``inf`` elsewhere); ``parent``
    receives each node's next node towards the sources (kept where a start distance wins)."""
    n = dist.size
    keys = np.empty(n + indices.size + 1)
    nodes = np.empty(n + indices.size + 1, dtype=np.int64)
    size = 0
    for a in range(n):
        if dist[a] < math.inf:
            size = _heap_push(keys, nodes, size, dist[a], a)
    done = np.zeros(n, dtype=np.bool_)
    while size > 0:
        d, a, size = _heap_pop(keys, nodes, size)
        if done[a]:
            continue
        done[a] = True
        for k in range(indptr[a], indptr[a + 1]):
            b = indices[k]
            nd = d + weights[k]
            if nd < dist[b]:
                dist[b] = nd
                parent[b] = a
                size = _heap_push(keys, nodes, size, nd, b)


@numba.njit(cache=True, nogil=True)
def goal_distances(
    xy: np.ndarray,
    prev: np.ndarray,
    nxt: np.ndarray,
    reflex: np.ndarray,
    cell_start: np.ndarray,
    cell_edges: np.ndarray,
    grid: np.ndarray,
    indptr: np.ndarray,
    indices: np.ndarray,
    weights: np.ndarray,
    gx: float,
    gz: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact geodesic distance from every reflex vertex to the goal ``g`` and each vertex's next
    reflex vertex on its shortest path (``-1``: straight to the goal, ``-2``: unreachable)."""
    n = reflex.size
    dist = np.full(n, math.inf)
    parent = np.full(n, _UNREACHED, dtype=np.int64)
    for a in range(n):
        v = reflex[a]
        vx, vz = xy[v, 0], xy[v, 1]
        if tangent(xy, prev, nxt, v, gx, gz) and segment_free(
            xy, prev, nxt, cell_start, cell_edges, grid, vx, vz, gx, gz
        ):
            dist[a] = math.hypot(vx - gx, vz - gz)
            parent[a] = _NO_PARENT
    dijkstra(indptr, indices, weights, dist, parent)
    return dist, parent


@numba.njit(cache=True, nogil=True)
def _query_point(
    xy: np.ndarray,
    prev: np.ndarray,
    nxt: np.ndarray,
    reflex: np.ndarray,
    cell_start: np.ndarray,
    cell_edges: np.ndarray,
    grid: np.ndarray,
    corners: np.ndarray,
    dist: np.ndarray,
    gx: float,
    gz: float,
    px: float,
    pz: float,
    bound: np.ndarray,
    cand: np.ndarray,
    keep: np.ndarray,
) -> tuple[float, int]:
    """:func:`query` for one point (``bound`` / ``cand`` / ``keep``: scratch arrays of the
    reflex count)."""
    if segment_free(xy, prev, nxt, cell_start, cell_edges, grid, px, pz, gx, gz):
        return math.hypot(px - gx, pz - gz), _NO_PARENT
    count = _candidates(corners, dist, px, pz, bound, cand, keep)
    for k in np.argsort(bound[:count]):
        v = reflex[cand[k]]
        if segment_free(xy, prev, nxt, cell_start, cell_edges, grid, px, pz, xy[v, 0], xy[v, 1]):
            return bound[k], cand[k]
    return math.inf, _UNREACHED


@numba.njit(cache=True, nogil=True)
def query(
    xy: np.ndarray,
    prev: np.ndarray,
    nxt: np.ndarray,
    reflex: np.ndarray,
    cell_start: np.ndarray,
    cell_edges: np.ndarray,
    grid: np.ndarray,
    corners: np.ndarray,
    dist: np.ndarray,
    gx: float,
    gz: float,
    points: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact geodesic distance from every point ``(M, 2)`` to the goal ``g`` of ``dist`` (see
    :func:`goal_distances`) and the first reflex vertex of its shortest path (``-1``: the goal is
    in sight; ``-2``: unreachable, distance ``inf``). ``corners`` are the reflex vertices'
    columns for :func:`corner_tangent`."""
    m, n = points.shape[0], reflex.size
    out = np.full(m, math.inf)
    first = np.full(m, _UNREACHED, dtype=np.int64)
    bound = np.empty(n)
    cand = np.empty(n, dtype=np.int64)
    keep = np.empty(n, dtype=np.bool_)
    for i in range(m):
        out[i], first[i] = _query_point(
            xy, prev, nxt, reflex, cell_start, cell_edges, grid, corners, dist, gx, gz,
            points[i, 0], points[i, 1], bound, cand, keep,
        )  # fmt: skip
    return out, first


@numba.njit(cache=True, nogil=True)
def _point_distance(
    xy: np.ndarray,
    prev: np.ndarray,
    nxt: np.ndarray,
    reflex: np.ndarray,
    cell_start: np.ndarray,
    cell_edges: np.ndarray,
    grid: np.ndarray,
    corners: np.ndarray,
    dist: np.ndarray,
    gx: float,
    gz: float,
    px: float,
    pz: float,
    bound: np.ndarray,
    cand: np.ndarray,
    keep: np.ndarray,
) -> float:
    """The distance of :func:`_query_point` (the same float), faster when only it is needed:
    the smallest bounds are picked and tested in turn (usually one or two) instead of sorting
    all candidates; among equal bounds it may test another vertex first, which changes no
    distance but could change the first vertex of a path, so :func:`query` keeps the sort."""
    if segment_free(xy, prev, nxt, cell_start, cell_edges, grid, px, pz, gx, gz):
        return math.hypot(px - gx, pz - gz)
    count = _candidates(corners, dist, px, pz, bound, cand, keep)
    while count > 0:
        k = np.argmin(bound[:count])
        v = reflex[cand[k]]
        if segment_free(xy, prev, nxt, cell_start, cell_edges, grid, px, pz, xy[v, 0], xy[v, 1]):
            return bound[k]
        count -= 1
        bound[k], cand[k] = bound[count], cand[count]
    return math.inf


@numba.njit(cache=True, nogil=True)
def _point_distance_below(
    xy: np.ndarray,
    prev: np.ndarray,
    nxt: np.ndarray,
    reflex: np.ndarray,
    cell_start: np.ndarray,
    cell_edges: np.ndarray,
    grid: np.ndarray,
    corners: np.ndarray,
    dist: np.ndarray,
    order: np.ndarray,
    gx: float,
    gz: float,
    px: float,
    pz: float,
    keys: np.ndarray,
    nodes: np.ndarray,
    cutoff: float,
) -> float:
    """The distance of :func:`_point_distance` (the same float) when it is below ``cutoff``,
    else a lower bound of it that is at least ``cutoff``; faster for a point near the goal or
    a low cutoff. The vertices are taken in increasing ``D(v)`` (``order``: their indices
    sorted so) into a heap of bounds ``|p − v| + D(v)``, and the smallest bound is tested once
    no vertex left can have a smaller one (its bound is at least its ``D(v)``), so only the
    vertices with ``D(v)`` below the answer and the cutoff are visited (``keys`` / ``nodes``:
    scratch arrays of the reflex count)."""
    if segment_free(xy, prev, nxt, cell_start, cell_edges, grid, px, pz, gx, gz):
        return math.hypot(px - gx, pz - gz)
    size, i = 0, 0
    while True:
        while i < order.size and dist[order[i]] < min(cutoff, keys[0] if size else math.inf):
            a = order[i]
            i += 1
            if corner_tangent(corners, a, px, pz):
                bound = math.hypot(corners[0, a] - px, corners[1, a] - pz) + dist[a]
                size = _heap_push(keys, nodes, size, bound, a)
        rest = dist[order[i]] if i < order.size else math.inf  # a bound of every vertex left
        if size == 0 or keys[0] >= cutoff:
            return min(keys[0], rest) if size else rest
        bound, a, size = _heap_pop(keys, nodes, size)
        v = reflex[a]
        if segment_free(xy, prev, nxt, cell_start, cell_edges, grid, px, pz, xy[v, 0], xy[v, 1]):
            return bound


@numba.njit(cache=True, nogil=True)
def metric_rows(  # long: one compiled kernel over the query arrays; helpers would cost a call per query
    xy: np.ndarray,
    prev: np.ndarray,
    nxt: np.ndarray,
    reflex: np.ndarray,
    cell_start: np.ndarray,
    cell_edges: np.ndarray,
    grid: np.ndarray,
    corners: np.ndarray,
    dists: np.ndarray,
    orders: np.ndarray,
    targets: np.ndarray,
    points: np.ndarray,
    snapped: np.ndarray,
    ok: np.ndarray,
    runs: np.ndarray,
    radius: float,
    floor: float,
) -> np.ndarray:
    """Distances from the positions ``points[runs]`` to targets ``(T, 3)`` where a metric can
    depend on them, ``(T, len(runs))``; each distinct point ``(M, 3)`` is measured once.

    Row ``t`` uses ``dists[t]`` (:func:`goal_distances` of ``targets[t]``, the snapped goal)
    and ``orders[t]`` (its vertex indices by increasing distance). ``snapped`` are the ground
    points the distances are measured from (:meth:`NavPolygon.locate`; the point itself where
    not ``ok``). Measured exactly: the last point, every point whose ground distance from its
    snapped position to the target is at most ``radius``, and the nearest one (branch and bound
    over that ground distance, a lower bound of the geodesic: a point farther than the radius
    is measured only below the smallest distance so far); a point that is not ``ok`` (off the
    map) or cannot reach the target gets its straight-line distance, at least ``floor``. Every
    other point keeps a lower bound of its geodesic above ``radius`` and not below the minimum:
    its ground distance, or the bound at which its branch-and-bound measurement stopped.
    """
    m, n, last = points.shape[0], reflex.size, points.shape[0] - 1
    out = np.empty((targets.shape[0], m))
    bound = np.empty(n)
    cand = np.empty(n, dtype=np.int64)
    keep = np.empty(n, dtype=np.bool_)
    done = np.empty(m, dtype=np.bool_)
    for t in range(targets.shape[0]):
        tx, ty, tz = targets[t, 0], targets[t, 1], targets[t, 2]
        best = math.inf
        for i in range(m):  # ground distance from where the point is measured: a lower bound
            out[t, i] = math.hypot(snapped[i, 0] - tx, snapped[i, 1] - tz)
            done[i] = False
        order = np.argsort(out[t])
        for step in range(m + 1):
            todo = last if step == 0 else order[step - 1]
            if done[todo]:
                continue
            if step > 0 and out[t, todo] >= best and out[t, todo] > radius:
                break  # sorted: every later ground distance is as large
            d = math.inf
            px, pz = snapped[todo, 0], snapped[todo, 1]
            if ok[todo] and step > 0:  # exact within the radius, else only below the best
                cutoff = math.inf if out[t, todo] <= radius else best
                d = _point_distance_below(
                    xy, prev, nxt, reflex, cell_start, cell_edges, grid, corners, dists[t],
                    orders[t], tx, tz, px, pz, bound, cand, cutoff,
                )  # fmt: skip
            elif ok[todo]:  # the last point, often far: every candidate in one pass is faster
                d = _point_distance(
                    xy, prev, nxt, reflex, cell_start, cell_edges, grid, corners, dists[t],
                    tx, tz, px, pz, bound, cand, keep,
                )  # fmt: skip
            if d == math.inf:
                dx, dy, dz = points[todo, 0] - tx, points[todo, 1] - ty, points[todo, 2] - tz
                d = max(math.sqrt(dx * dx + dy * dy + dz * dz), floor)
            out[t, todo] = d
            done[todo] = True
            best = min(best, d)
    full = np.empty((targets.shape[0], runs.size))
    for t in range(targets.shape[0]):
        for i in range(runs.size):
            full[t, i] = out[t, runs[i]]
    return full


RING_SLACK = 1e-9
"""Metres by which a nearest boundary point must lie inside the rings of hash cells searched
so far before the search stops (rounding never hides a nearer edge)."""


@numba.njit(cache=True, nogil=True)
def _scan_cell(
    xy: np.ndarray,
    nxt: np.ndarray,
    cell_start: np.ndarray,
    cell_edges: np.ndarray,
    cell: int,
    px: float,
    pz: float,
    best: np.ndarray,
) -> None:
    """Fold the edges of hash cell ``cell`` into ``best`` = [gap, qx, qz, edge, tied]: the
    nearest boundary point to ``(px, pz)`` so far, its edge, and whether another edge is as
    near (the first edge found keeps the point, as in a row-major scan)."""
    for k in range(cell_start[cell], cell_start[cell + 1]):
        e = cell_edges[k]
        ax, az = xy[e, 0], xy[e, 1]
        ex, ez = xy[nxt[e], 0] - ax, xy[nxt[e], 1] - az
        t = ((px - ax) * ex + (pz - az) * ez) / (ex * ex + ez * ez)
        t = min(max(t, 0.0), 1.0)
        qx, qz = ax + t * ex, az + t * ez
        d = math.hypot(px - qx, pz - qz)
        if d < best[0]:
            best[0], best[1], best[2], best[3], best[4] = d, qx, qz, e, 0.0
        elif d == best[0] and e != best[3]:
            best[4] = 1.0


@numba.njit(cache=True, nogil=True)
def _nearest_by_rings(
    xy: np.ndarray,
    nxt: np.ndarray,
    cell_start: np.ndarray,
    cell_edges: np.ndarray,
    grid: np.ndarray,
    px: float,
    pz: float,
    span: np.ndarray,
    best: np.ndarray,
) -> None:
    """The nearest boundary point among the cells of ``span`` (rows r0..r1, columns c0..c1),
    searched in square rings around the point's cell: once it is nearer than the rings'
    inner radius, no farther cell can hold a nearer (or an equally near) edge."""
    ox, oz, size, cols = grid[0], grid[1], grid[2], int(grid[4])
    r0, r1, c0, c1 = span[0], span[1], span[2], span[3]
    row, col = math.floor((pz - oz) / size), math.floor((px - ox) / size)
    ring = 0
    while True:
        for r in range(max(row - ring, r0), min(row + ring, r1) + 1):
            if r in (row - ring, row + ring):  # the ring's top or bottom: every column
                first, last, step = max(col - ring, c0), min(col + ring, c1), 1
            else:  # its sides: two columns (one in ring 0)
                first, last, step = col - ring, col + ring, max(2 * ring, 1)
            for c in range(first, last + 1, step):
                if c0 <= c <= c1:
                    _scan_cell(xy, nxt, cell_start, cell_edges, r * cols + c, px, pz, best)
        covered = row - ring <= r0 and row + ring >= r1 and col - ring <= c0 and col + ring >= c1
        if covered or best[0] < ring * size - RING_SLACK:
            return
        ring += 1


@numba.njit(cache=True, nogil=True)
def nearest_boundary(
    xy: np.ndarray,
    nxt: np.ndarray,
    cell_start: np.ndarray,
    cell_edges: np.ndarray,
    grid: np.ndarray,
    points: np.ndarray,
    reach: float,
) -> tuple[np.ndarray, np.ndarray]:
    """The nearest boundary point to each point ``(M, 2)`` among the edges within ``reach``
    (through the edge hash), and its distance (``inf`` and the point itself when none is).

    Cells are searched in rings around the point's (:func:`_nearest_by_rings`); when two
    edges are equally near, every cell within ``reach`` is scanned in row-major order and the
    first of them wins, so the result never depends on the search order."""
    ox, oz, size = grid[0], grid[1], grid[2]
    rows, cols = int(grid[3]), int(grid[4])
    m = points.shape[0]
    out = points.copy()
    gap = np.full(m, math.inf)
    best = np.empty(5)
    span = np.empty(4, dtype=np.int64)
    for i in range(m):
        px, pz = points[i, 0], points[i, 1]
        span[0] = max(math.floor((pz - reach - oz) / size), 0)
        span[1] = min(math.floor((pz + reach - oz) / size), rows - 1)
        span[2] = max(math.floor((px - reach - ox) / size), 0)
        span[3] = min(math.floor((px + reach - ox) / size), cols - 1)
        best[0], best[1], best[2], best[3], best[4] = math.inf, px, pz, -1.0, 0.0
        _nearest_by_rings(xy, nxt, cell_start, cell_edges, grid, px, pz, span, best)
        if best[4]:  # a tie: the first of the tied edges in row-major order, as a full scan
            best[0], best[1], best[2], best[3], best[4] = math.inf, px, pz, -1.0, 0.0
            for row in range(span[0], span[1] + 1):
                for col in range(span[2], span[3] + 1):
                    _scan_cell(xy, nxt, cell_start, cell_edges, row * cols + col, px, pz, best)
        gap[i], out[i, 0], out[i, 1] = best[0], best[1], best[2]
    for i in range(m):
        if gap[i] > reach:
            gap[i], out[i, 0], out[i, 1] = math.inf, points[i, 0], points[i, 1]
    return out, gap


@numba.njit(cache=True, nogil=True)
def cell_status(grid: np.ndarray, cell_inside: np.ndarray, points: np.ndarray) -> np.ndarray:
    """``cell_inside`` of the edge-hash cell of each ground point ``(M, 2)`` (0 outside the
    hash's extent, which encloses the polygon with a margin)."""
    ox, oz, size = grid[0], grid[1], grid[2]
    rows, cols = int(grid[3]), int(grid[4])
    out = np.zeros(points.shape[0], dtype=np.int8)
    for i in range(points.shape[0]):
        col = math.floor((points[i, 0] - ox) / size)
        row = math.floor((points[i, 1] - oz) / size)
        if 0 <= col < cols and 0 <= row < rows:
            out[i] = cell_inside[row * cols + col]
    return out


@numba.njit(cache=True, nogil=True)
def _near_edge(
    xy: np.ndarray,
    nxt: np.ndarray,
    cell_start: np.ndarray,
    cell_edges: np.ndarray,
    cell: int,
    px: float,
    pz: float,
) -> bool:
    """Whether an edge of hash cell ``cell`` passes within ``2 EPS`` of the point (every edge
    within :data:`EPS` of a point is hashed into the point's cell; edges may have length 0)."""
    for k in range(cell_start[cell], cell_start[cell + 1]):
        e = cell_edges[k]
        ax, az = xy[e, 0], xy[e, 1]
        ex, ez = xy[nxt[e], 0] - ax, xy[nxt[e], 1] - az
        length2 = ex * ex + ez * ez
        t = (
            0.0
            if length2 == 0.0
            else min(max(((px - ax) * ex + (pz - az) * ez) / length2, 0.0), 1.0)
        )
        if math.hypot(px - ax - t * ex, pz - az - t * ez) <= 2 * EPS:
            return True
    return False


@numba.njit(cache=True, nogil=True)
def point_status(
    xy: np.ndarray,
    nxt: np.ndarray,
    cell_start: np.ndarray,
    cell_edges: np.ndarray,
    grid: np.ndarray,
    cell_inside: np.ndarray,
    points: np.ndarray,
) -> np.ndarray:
    """Per ground point ``(M, 2)``: 1 inside the polygon of rings ``xy`` / ``nxt`` (boundary
    included), 0 outside, -1 within ``2 EPS`` of an edge (where rounding could decide; the
    caller asks an exact test). ``cell_inside`` is 1 (inside) or 0 (outside) for a hash cell
    without edges, else -1.

    A point in a hash cell without edges takes the cell's ``cell_inside``; another starts from
    the status of the nearest edge-free cell to its left in its row (outside when none: the
    hash's extent encloses the polygon) and flips it at every edge that crosses the horizontal
    segment from there (half-open in z, so a vertex at the point's height counts once). An edge
    lies in every cell its box touches, so it is counted only in the cell its crossing lies in.
    Away from the edges the crossings are far (> ``2 EPS``) from the point, beyond rounding.
    """
    ox, oz, size = grid[0], grid[1], grid[2]
    rows, cols = int(grid[3]), int(grid[4])
    out = np.zeros(points.shape[0], dtype=np.int8)
    for i in range(points.shape[0]):
        px, pz = points[i, 0], points[i, 1]
        col, row = math.floor((px - ox) / size), math.floor((pz - oz) / size)
        if not (0 <= col < cols and 0 <= row < rows):
            continue
        cell = row * cols + col
        if cell_inside[cell] >= 0:
            out[i] = cell_inside[cell]
            continue
        if _near_edge(xy, nxt, cell_start, cell_edges, cell, px, pz):
            out[i] = -1
            continue
        first = col - 1
        while first >= 0 and cell_inside[row * cols + first] < 0:
            first -= 1
        inside = first >= 0 and cell_inside[row * cols + first] == 1
        for c in range(first + 1, col + 1):
            for k in range(cell_start[row * cols + c], cell_start[row * cols + c + 1]):
                e = cell_edges[k]
                ax, az, bx, bz = xy[e, 0], xy[e, 1], xy[nxt[e], 0], xy[nxt[e], 1]
                if (az > pz) != (bz > pz):
                    x = ax + (pz - az) * (bx - ax) / (bz - az)
                    if x < px and _cell_index(x, ox, size, cols) == c:
                        inside = not inside
        out[i] = inside
    return out
