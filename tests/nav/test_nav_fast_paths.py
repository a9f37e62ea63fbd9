"""The exact engine's fast paths against their definitions: the visibility graph against the
pairwise test, the distances of ``metric_rows`` against :func:`query`, and the edge-hash
shortcut of :meth:`NavPolygon.contains` against shapely."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import shapely
from shapely.geometry import box

from condvln.evaluation.evaluate import SceneGeodesic
from condvln.nav import _visibility as vis
from condvln.nav.polygon import NavPolygon
from condvln.scene.sources import load


def _room_with_obstacles(seed: int) -> NavPolygon:
    """A room with random (possibly overlapping or wall-touching) boxes and a rotated one."""
    rng = np.random.default_rng(seed)
    shape = box(0, 0, 8, 6)
    for _ in range(6):
        x, z = rng.uniform(0, 7), rng.uniform(0, 5)
        shape = shape.difference(box(x, z, x + rng.uniform(0.2, 1.5), z + rng.uniform(0.2, 1.0)))
    shape = shape.difference(shapely.affinity.rotate(box(3, 2, 4, 2.5), 30))
    return NavPolygon(shape)


@pytest.mark.parametrize("seed", range(6))
def test_visibility_graph_is_every_mutually_tangent_visible_pair(seed: int) -> None:
    poly = _room_with_obstacles(seed)
    xy, prev, nxt, reflex, start, edges, grid = poly.kernel_args
    expected = set()
    for a, b in itertools.combinations(range(reflex.size), 2):
        (ux, uz), (vx, vz) = xy[reflex[a]], xy[reflex[b]]
        if (
            vis.tangent(xy, prev, nxt, reflex[a], vx, vz)
            and vis.tangent(xy, prev, nxt, reflex[b], ux, uz)
            and vis.segment_free(xy, prev, nxt, start, edges, grid, ux, uz, vx, vz)
        ):
            expected |= {(a, b), (b, a)}
    indptr, indices, weights = poly.graph
    heads = np.repeat(np.arange(reflex.size), np.diff(indptr))
    assert set(zip(heads.tolist(), indices.tolist(), strict=True)) == expected
    lengths = np.hypot(*(xy[reflex[heads]] - xy[reflex[indices]]).T)
    assert np.array_equal(weights, lengths)


@pytest.mark.parametrize("house", ["0", "3"])
def test_metric_rows_measures_what_query_measures(house: str) -> None:
    """With an infinite radius every point is measured exactly: the same floats as
    :func:`query` (which sorts all candidates instead of picking the smallest)."""
    geo = SceneGeodesic(load("procedural", house))
    poly = geo.navigator.polygon
    rng = np.random.default_rng(int(house))
    lo, hi = poly.xy.min(axis=0), poly.xy.max(axis=0)
    ground = rng.uniform(lo, hi, size=(400, 2))
    ground = ground[poly.contains(ground)]
    points = np.column_stack([ground[:, 0], np.zeros(len(ground)), ground[:, 1]])
    goals = [np.array([g[0], 0.0, g[1]]) for g in ground[:3]]
    rows = geo.rows(points, np.array(goals), radius=math.inf)
    for goal, row in zip(goals, rows, strict=True):
        field = geo.field(goal)
        exact, _ = vis.query(
            *poly.kernel_args, poly.corners, field.vertex_distance, goal[0], goal[2], ground
        )
        assert np.isfinite(exact).all()
        np.testing.assert_array_equal(row, exact)


@pytest.mark.parametrize("house", ["0", "3"])
def test_metric_rows_is_exact_where_a_metric_reads_it(house: str) -> None:
    """With a finite radius, on points hidden from the goal (the branch and bound then measures
    many of them, most only until their bound passes the minimum so far): :func:`query`'s
    floats at the last point, within the radius and at the minimum; elsewhere a lower bound of
    them above the radius and not below the minimum."""
    geo = SceneGeodesic(load("procedural", house))
    poly = geo.navigator.polygon
    rng = np.random.default_rng(int(house))
    lo, hi = poly.xy.min(axis=0), poly.xy.max(axis=0)
    ground = rng.uniform(lo, hi, size=(800, 2))
    ground = ground[poly.contains(ground)]
    stopped = 0
    for goal in ground[:5]:
        field = geo.field((goal[0], 0.0, goal[1]))
        args = (*poly.kernel_args, poly.corners, field.vertex_distance, goal[0], goal[1])
        exact, _ = vis.query(*args, ground)
        hidden = ground[exact > np.hypot(*(ground - goal).T) + 1.0]  # behind something
        exact, _ = vis.query(*args, hidden)
        points = np.column_stack([hidden[:, 0], np.zeros(len(hidden)), hidden[:, 1]])
        for radius in (0.5, 2.0):
            row = geo.rows(points, np.array([[goal[0], 0.0, goal[1]]]), radius)[0]
            ground_distance = np.hypot(*(hidden - goal).T)
            measured = ground_distance <= radius
            measured[-1] = True
            np.testing.assert_array_equal(row[measured], exact[measured])
            assert row.min() == exact.min()
            assert (row <= exact).all() and (row[~measured] > radius).all()
            stopped += np.count_nonzero((row < exact) & (row > ground_distance))
    assert stopped  # some measurements stopped at a bound


@pytest.mark.parametrize("house", ["0", "5"])
def test_contains_agrees_with_shapely(house: str) -> None:
    """On random points, on every vertex (cleaned or as shapely holds it), on and beside edges
    (1e-12 to 1e-2 m off), at the height of every vertex and on the hash's grid lines; the
    crossing count agrees wherever it answers."""
    poly = NavPolygon(SceneGeodesic(load("procedural", house)).navigator.area.polygon)
    rng = np.random.default_rng(1)
    lo, hi = poly.xy.min(axis=0) - 1, poly.xy.max(axis=0) + 1
    on_lines = np.floor(rng.uniform(lo, hi, size=(2000, 2)) / 0.25) * 0.25 + poly.grid[:2] % 0.25
    points = [rng.uniform(lo, hi, size=(20000, 2)), on_lines]
    raw = np.vstack([np.asarray(ring.coords)[:-1] for ring in poly._rings()])
    for v in (poly.xy, raw):
        b = np.roll(v, -1, axis=0)
        on_edges = v + rng.uniform(0, 1, size=(len(v), 1)) * (b - v)
        normal = np.column_stack([v[:, 1] - b[:, 1], b[:, 0] - v[:, 0]])
        normal /= np.maximum(np.hypot(*normal.T), 1e-300)[:, None]
        heights = np.column_stack([rng.uniform(lo[0], hi[0], len(v)), v[:, 1]])
        points += [v, (v + b) / 2, on_edges, heights]
        points += [
            on_edges + side * off * normal for off in (1e-12, 3e-9, 1e-6, 1e-2) for side in (-1, 1)
        ]
    points = np.vstack(points)
    expected = shapely.intersects_xy(poly.polygon, points[:, 0], points[:, 1])
    np.testing.assert_array_equal(poly.contains(points), expected)
    status = vis.point_status(*poly._boundary, points)
    answered = status >= 0
    np.testing.assert_array_equal(status[answered].astype(bool), expected[answered])
    assert answered.mean() > 0.5  # most points are tested here on purpose near an edge


def _full_scan(poly: NavPolygon, points: np.ndarray, reach: float) -> tuple[np.ndarray, ...]:
    """The definition :func:`~condvln.nav._visibility.nearest_boundary` keeps: every edge of
    every hash cell within ``reach``, cells in row-major order, the first strictly nearest edge
    wins; beyond ``reach``, ``inf`` and the point itself."""
    ox, oz, size, rows, cols = poly.grid.tolist()
    out, gaps = points.copy(), np.full(len(points), math.inf)
    for i, (px, pz) in enumerate(points):
        r0, r1 = max(math.floor((pz - reach - oz) / size), 0), min(math.floor((pz + reach - oz) / size), int(rows) - 1)  # fmt: skip
        c0, c1 = max(math.floor((px - reach - ox) / size), 0), min(math.floor((px + reach - ox) / size), int(cols) - 1)  # fmt: skip
        for cell in (r * int(cols) + c for r in range(r0, r1 + 1) for c in range(c0, c1 + 1)):
            for e in poly.cell_edges[poly.cell_start[cell] : poly.cell_start[cell + 1]]:
                (ax, az), (bx, bz) = poly.xy[e], poly.xy[poly.nxt[e]]
                ex, ez = bx - ax, bz - az
                t = min(max(((px - ax) * ex + (pz - az) * ez) / (ex * ex + ez * ez), 0.0), 1.0)
                qx, qz = ax + t * ex, az + t * ez
                if math.hypot(px - qx, pz - qz) < gaps[i]:
                    gaps[i], out[i] = math.hypot(px - qx, pz - qz), (qx, qz)
    far = gaps > reach
    gaps[far], out[far] = math.inf, points[far]
    return out, gaps


@pytest.mark.parametrize("seed", range(3))
def test_nearest_boundary_by_rings_equals_the_full_scan(seed: int) -> None:
    """The same nearest points, ties included: points equidistant from the two edges of a vertex
    (on its bisector, outside), points near edges, random points and far points, at three
    reaches (the distances to the last bit of ``math.hypot``, which numba and CPython compute
    apart)."""
    poly = _room_with_obstacles(seed)
    rng = np.random.default_rng(seed)
    lo, hi = poly.xy.min(axis=0) - 2, poly.xy.max(axis=0) + 2
    v, a, b = poly.xy, poly.xy[poly.prev], poly.xy[poly.nxt]
    bisector = (v - a) / np.hypot(*(v - a).T)[:, None] + (v - b) / np.hypot(*(v - b).T)[:, None]
    tied = v + 0.1 * bisector / np.hypot(*bisector.T)[:, None]
    points = np.vstack(
        [
            rng.uniform(lo, hi, size=(1500, 2)),
            tied,
            v + rng.normal(0, 0.05, size=v.shape),
            (v + b) / 2 + rng.normal(0, 0.05, size=v.shape),
        ]
    )
    for reach in (0.2, 0.5, 20.0):
        got = vis.nearest_boundary(
            poly.xy, poly.nxt, poly.cell_start, poly.cell_edges, poly.grid, points, reach
        )
        expected = _full_scan(poly, points, reach)
        np.testing.assert_array_equal(got[0], expected[0])  # the same edge wins every tie
        np.testing.assert_allclose(got[1], expected[1], rtol=0, atol=1e-15)  # hypot's last bit


def test_a_stop_position_after_its_trajectory_is_located_once() -> None:
    """Scoring the leaf goals at the stop position reuses its location from the trajectory
    (the same distances as a fresh engine); another single point is located afresh."""
    geo, fresh = (SceneGeodesic(load("procedural", "0")) for _ in range(2))
    ground = geo.navigator.polygon.xy[:40:4] + 0.05
    points = np.column_stack([ground[:, 0], np.zeros(len(ground)), ground[:, 1]])
    goal = points[:1] + np.array([[0.3, 0.0, 0.0]])
    expected = fresh.rows(points[-1:], goal, 1.0)
    geo.field(goal[0])  # solved (and its goal located) before counting
    calls = []
    locate = geo.navigator.polygon.locate
    geo.navigator.polygon.locate = lambda *a: calls.append(len(a[0])) or locate(*a)
    geo.rows(points, goal, 1.0)
    np.testing.assert_array_equal(geo.rows(points[-1:], goal, 1.0), expected)
    geo.rows(points[:1], goal, 1.0)
    assert calls == [len(points), 1]


@pytest.mark.parametrize("house", ["1", "4"])
def test_distances_to_is_each_fields_distance(house: str) -> None:
    """:meth:`GridNavigator.distances_to` (one point, located once, in scalar arithmetic)
    gives the floats of :meth:`GridField.distance`, unreachable points and points snapped
    from walls or from outside the grid included."""
    from condvln.nav import GridNavigator

    nav = GridNavigator(load("procedural", house))
    frame = nav.area.frame
    rng = np.random.default_rng(int(house))
    rows, cols = np.nonzero(nav.area.free)
    goals = frame.centres(rows, cols)[rng.choice(rows.size, 4, replace=False)]
    fields = [nav.distance_field((x, 0.0, z)) for x, z in goals]
    lo = np.array(frame.origin) - 1.0
    hi = lo + np.array(frame.shape[::-1]) * frame.cell_size + 2.0
    points = rng.uniform(lo, hi, size=(600, 2))
    answers = {None: 0, "value": 0}
    for x, z in points:
        point = (float(x), 0.0, float(z))
        got = nav.distances_to(point, fields)
        assert got == [f.distance(point) for f in fields]
        answers[None if got[0] is None else "value"] += 1
    assert min(answers.values()) > 50  # both kinds of answer were exercised
