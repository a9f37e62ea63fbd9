"""Properties of the predicates on random rooms (hypothesis)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from condvln.graph import PREDICATES, RelationConfig
from condvln.graph.relations import (
    DIRECTIONAL_PREDICATES,
    FALSE_CODE,
    SEMANTIC_PREDICATES,
    TRUE_CODE,
    UNDECIDED_CODE,
)
from condvln.graph.scene_graph import RoomRelations, room_relations
from condvln.scene.model import SceneObject

# Coordinates on a 5 cm grid hit thresholds and sector edges exactly; free floats do not.
grid = st.integers(-60, 60).map(lambda k: k * 0.05)
coordinate = st.one_of(grid, st.floats(-3.0, 3.0, allow_nan=False, allow_infinity=False))
extent = st.one_of(st.integers(1, 30).map(lambda k: k * 0.05), st.floats(0.01, 2.0))


@st.composite
def scene_object(draw, index: int) -> SceneObject:
    center = (draw(coordinate), draw(coordinate), draw(coordinate))
    kind = draw(st.sampled_from(["size", "radius", "point"]))
    size = (draw(extent), draw(extent), draw(extent)) if kind == "size" else None
    radius = draw(extent) if kind == "radius" else None
    return SceneObject(
        id=f"o{index}", category="thing", label="Thing", center=center, size=size, radius=radius
    )


@st.composite
def configs(draw) -> RelationConfig:
    near = sorted(draw(st.lists(st.floats(0.05, 4.0), min_size=4, max_size=4, unique=True)))
    higher = sorted(draw(st.lists(st.floats(0.0, 1.0), min_size=2, max_size=2, unique=True)))
    overlap = sorted(draw(st.lists(st.floats(0.0, 0.99), min_size=2, max_size=2, unique=True)))
    return RelationConfig(
        near_holds=near[0],
        near_fails=near[1],
        far_fails=near[2],
        far_holds=near[3],
        higher_fails=higher[0],
        higher_holds=higher[1],
        overlap_fails=overlap[0],
        overlap_holds=overlap[1],
        level_angle=draw(st.floats(5.0, 85.0)),
    )


@st.composite
def rooms(draw) -> tuple[RoomRelations, RelationConfig]:
    n = draw(st.integers(2, 7))
    objects = [draw(scene_object(i)) for i in range(n)]
    config = draw(st.one_of(st.just(RelationConfig()), configs()))
    return room_relations("r", objects, config), config


def off_diagonal(n: int) -> np.ndarray:
    return ~np.eye(n, dtype=bool)


def codes(rel: RoomRelations, predicate: str) -> np.ndarray:
    return rel.truths[SEMANTIC_PREDICATES.index(predicate)]


def expected_band(value: np.ndarray, low: float, high: float) -> np.ndarray:
    return (value > low) & (value < high)


@settings(max_examples=150, deadline=None)
@given(rooms())
def test_near_and_far_are_symmetric(case):
    rel, _ = case
    for predicate in ("near", "far from"):
        assert np.array_equal(codes(rel, predicate), codes(rel, predicate).T)


@settings(max_examples=150, deadline=None)
@given(rooms())
def test_directional_predicates_have_exact_converses(case):
    rel, _ = case
    n = len(rel.object_ids)
    for i in range(n):
        for j in range(n):
            if i != j:
                forward = DIRECTIONAL_PREDICATES[rel.directional_code(i, j)]
                backward = DIRECTIONAL_PREDICATES[rel.directional_code(j, i)]
                assert PREDICATES.get(forward).converse == backward
                assert (forward == "east of") == (backward == "west of")


@settings(max_examples=150, deadline=None)
@given(rooms())
def test_higher_and_lower_are_converse_and_above_and_below_too(case):
    rel, _ = case
    assert np.array_equal(codes(rel, "higher than"), codes(rel, "lower than").T)
    assert np.array_equal(codes(rel, "above"), codes(rel, "below").T)


@settings(max_examples=150, deadline=None)
@given(rooms())
def test_above_implies_higher(case):
    rel, _ = case
    above = codes(rel, "above") == TRUE_CODE
    assert np.all(codes(rel, "higher than")[above] == TRUE_CODE)
    below = codes(rel, "below") == TRUE_CODE
    assert np.all(codes(rel, "lower than")[below] == TRUE_CODE)


@settings(max_examples=150, deadline=None)
@given(rooms())
def test_never_both_near_and_far(case):
    rel, _ = case
    near, far = codes(rel, "near"), codes(rel, "far from")
    assert not np.any((near == TRUE_CODE) & (far == TRUE_CODE))
    assert np.all(far[near == TRUE_CODE] == FALSE_CODE)


@settings(max_examples=200, deadline=None)
@given(rooms())
def test_undecided_exactly_in_the_dead_band(case):
    rel, cfg = case
    off = off_diagonal(len(rel.object_ids))
    used = rel.metrics.used_distance
    dy = rel.metrics.delta[..., 1]
    bands = {
        "near": expected_band(used, cfg.near_holds, cfg.near_fails),
        "far from": expected_band(used, cfg.far_fails, cfg.far_holds),
        "higher than": expected_band(dy, cfg.higher_fails, cfg.higher_holds),
        "lower than": expected_band(-dy, cfg.higher_fails, cfg.higher_holds),
    }
    for predicate, band in bands.items():
        assert np.array_equal((codes(rel, predicate) == UNDECIDED_CODE)[off], band[off])
    higher = codes(rel, "higher than")
    overlap = rel.metrics.footprint_overlap
    boxes = ~np.isnan(overlap)
    footprint_band = np.where(
        boxes,
        expected_band(overlap, cfg.overlap_fails, cfg.overlap_holds),
        expected_band(
            rel.metrics.horizontal_distance, cfg.stack_horizontal_holds, cfg.stack_horizontal_fails
        ),
    )
    footprint_false = np.where(
        boxes,
        overlap <= cfg.overlap_fails,
        rel.metrics.horizontal_distance >= cfg.stack_horizontal_fails,
    )
    any_false = (higher == FALSE_CODE) | footprint_false
    any_band = (higher == UNDECIDED_CODE) | footprint_band
    expected = any_band & ~any_false
    assert np.array_equal((codes(rel, "above") == UNDECIDED_CODE)[off], expected[off])


@settings(max_examples=100, deadline=None)
@given(rooms())
def test_metrics_are_finite_and_symmetric_where_they_should_be(case):
    rel, _ = case
    m = rel.metrics
    for name in (
        "center_distance",
        "horizontal_distance",
        "used_distance",
        "azimuth_deg",
        "elevation_deg",
    ):
        assert np.all(np.isfinite(getattr(m, name)))
    for name in (
        "center_distance",
        "horizontal_distance",
        "aabb_distance",
        "sphere_distance",
        "used_distance",
        "footprint_overlap",
    ):
        array = getattr(m, name)
        assert np.array_equal(array, array.T, equal_nan=True)
    assert np.array_equal(m.delta, -np.transpose(m.delta, (1, 0, 2)))
    assert np.all(m.used_distance <= m.center_distance)
