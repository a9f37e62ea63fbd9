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


@pytest.mark.parametrize("house", ["0", "5"])
def test_contains_agrees_with_shapely(house: str) -> None:
    """On random points, on every vertex, on edge midpoints and on the hash's grid lines."""
    poly = NavPolygon(SceneGeodesic(load("procedural", house)).navigator.area.polygon)
    rng = np.random.default_rng(1)
    lo, hi = poly.xy.min(axis=0) - 1, poly.xy.max(axis=0) + 1
    on_lines = np.floor(rng.uniform(lo, hi, size=(2000, 2)) / 0.25) * 0.25 + poly.grid[:2] % 0.25
    points = np.vstack(
        [rng.uniform(lo, hi, size=(20000, 2)), poly.xy, (poly.xy + poly.xy[poly.nxt]) / 2, on_lines]
    )
    expected = shapely.intersects_xy(poly.polygon, points[:, 0], points[:, 1])
    np.testing.assert_array_equal(poly.contains(points), expected)
