"""Hand-computed cases of the pairwise metrics and predicates (paper §3.1.3)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from condvln.graph import RelationConfig, Truth
from condvln.graph.relations import (
    AZIMUTH_BINS,
    DISTANCE_TYPES,
    SEMANTIC_PREDICATES,
    azimuth_bins,
)
from condvln.graph.scene_graph import RoomRelations, room_relations
from condvln.scene.model import AABB, SceneObject

CFG = RelationConfig()
COS, SIN = math.cos(math.radians(22.5)), math.sin(math.radians(22.5))


def obj(oid: str, center, *, size=None, aabb=None, radius=None) -> SceneObject:
    return SceneObject(
        id=oid, category=oid, label=oid, center=center, size=size, aabb=aabb, radius=radius
    )


def pair(subject: SceneObject, target: SceneObject) -> RoomRelations:
    """Relations of a two-object room: index 0 is the subject, 1 the target."""
    return room_relations("r", [subject, target], CFG)


def truth(rel: RoomRelations, predicate: str, s: int = 0, t: int = 1) -> Truth:
    return Truth.from_code(rel.truths[SEMANTIC_PREDICATES.index(predicate), s, t])


def direction(rel: RoomRelations, s: int = 0, t: int = 1) -> str:
    return rel.edge_metrics(s, t).azimuth_bin, rel.edge_metrics(s, t).elevation_bin


# ---- distances ---------------------------------------------------------------------------------


def test_aabb_gap_is_taken_per_axis_and_combined_euclidean():
    a = obj("a", (0.5, 0.5, 0.5), aabb=AABB((0.0, 0.0, 0.0), (1.0, 1.0, 1.0)))
    # x gap 3 - 1 = 2; y ranges [0, 1] and [0.5, 2] overlap -> 0; z gap 0 - (-1.5) = 1.5.
    b = obj("b", (3.5, 1.25, -2.0), aabb=AABB((3.0, 0.5, -2.5), (4.0, 2.0, -1.5)))
    rel = pair(a, b)
    for s, t in ((0, 1), (1, 0)):
        m = rel.edge_metrics(s, t)
        assert m.aabb_distance == 2.5
        assert m.used_distance == 2.5
        assert m.distance_type == "aabb"
        assert m.sphere_distance is not None  # boxes also give bounding radii


@pytest.mark.parametrize(
    ("b_min", "b_max", "expected"),
    [
        ((2.0, 0.0, 0.0), (3.0, 1.0, 1.0), 1.0),  # x only
        ((0.0, 1.25, 0.0), (1.0, 2.0, 1.0), 0.25),  # y only
        ((0.0, 0.0, -3.0), (1.0, 1.0, -0.5), 0.5),  # z only, b on the negative side
        ((1.0, 0.0, 0.0), (2.0, 1.0, 1.0), 0.0),  # touching faces
        ((0.5, 0.5, 0.5), (2.0, 2.0, 2.0), 0.0),  # overlapping
    ],
)
def test_aabb_gap_single_axis(b_min, b_max, expected):
    a = obj("a", (0.5, 0.5, 0.5), aabb=AABB((0.0, 0.0, 0.0), (1.0, 1.0, 1.0)))
    centre = tuple(0.5 * (lo + hi) for lo, hi in zip(b_min, b_max, strict=True))
    rel = pair(a, obj("b", centre, aabb=AABB(b_min, b_max)))
    assert rel.edge_metrics(0, 1).aabb_distance == expected
    assert rel.edge_metrics(1, 0).aabb_distance == expected


def test_box_from_size_is_center_plus_minus_half_size():
    rel = pair(
        obj("a", (0.0, 0.5, 0.0), size=(2.0, 1.0, 2.0)),
        obj("b", (4.0, 0.5, 0.0), size=(2.0, 1.0, 2.0)),
    )
    assert rel.edge_metrics(0, 1).aabb_distance == 2.0  # [-1, 1] and [3, 5]


def test_sphere_fallback_when_one_object_has_only_a_radius():
    boxed = obj("box", (0.0, 0.0, 0.0), size=(2.0, 2.0, 1.0))  # bounding radius 1.5
    ball = obj("ball", (3.0, 0.0, 4.0), radius=0.5)
    m = pair(boxed, ball).edge_metrics(0, 1)
    assert m.center_distance == 5.0
    assert m.aabb_distance is None
    assert m.sphere_distance == 3.0  # 5 - (1.5 + 0.5)
    assert (m.distance_type, m.used_distance) == ("sphere", 3.0)


def test_sphere_distance_is_clamped_at_zero():
    m = pair(obj("a", (0.0, 0.0, 0.0), radius=1.0), obj("b", (1.0, 0.0, 0.0), radius=1.0))
    assert m.edge_metrics(0, 1).sphere_distance == 0.0


def test_center_fallback_when_one_object_has_no_extent():
    point = obj("point", (0.0, 0.0, 0.0))
    ball = obj("ball", (3.0, 0.0, 4.0), radius=0.5)
    m = pair(point, ball).edge_metrics(0, 1)
    assert (m.aabb_distance, m.sphere_distance) == (None, None)
    assert (m.distance_type, m.used_distance, m.center_distance) == ("center", 5.0, 5.0)
    assert m.horizontal_distance == 5.0


def test_displacement_is_subject_minus_target():
    m = pair(obj("s", (1.0, 2.0, 3.0)), obj("t", (0.5, 0.0, 1.0))).edge_metrics(0, 1)
    assert m.delta == (0.5, 2.0, 2.0)
    assert m.horizontal_distance == math.hypot(0.5, 2.0)


# ---- azimuth sectors ---------------------------------------------------------------------------

SECTOR_OFFSETS = {  # subject position relative to a target at the origin (north = -Z)
    "east": (1.0, 0.0, 0.0),
    "north-east": (1.0, 0.0, -1.0),
    "north": (0.0, 0.0, -1.0),
    "north-west": (-1.0, 0.0, -1.0),
    "west": (-1.0, 0.0, 0.0),
    "south-west": (-1.0, 0.0, 1.0),
    "south": (0.0, 0.0, 1.0),
    "south-east": (1.0, 0.0, 1.0),
}


SECTOR_ANGLES = {
    "east": 0.0,
    "north-east": 45.0,
    "north": 90.0,
    "north-west": 135.0,
    "west": 180.0,
    "south-west": -135.0,
    "south": -90.0,
    "south-east": -45.0,
}


@pytest.mark.parametrize(("name", "offset"), SECTOR_OFFSETS.items())
def test_each_of_the_eight_sectors(name, offset):
    rel = pair(obj("s", offset), obj("t", (0.0, 0.0, 0.0)))
    assert direction(rel) == (name, "level")
    assert rel.edge_metrics(0, 1).azimuth_deg == pytest.approx(SECTOR_ANGLES[name])


def test_stool_north_of_dishwasher_reads_subject_pred_target():
    from condvln.graph import build_scene_graph
    from condvln.scene.model import Room, Scene

    stool, dishwasher = obj("stool", (0.0, 0.3, -2.0)), obj("dishwasher", (0.0, 0.3, 0.0))
    graph = build_scene_graph(
        Scene(
            id="s",
            source="manual",
            rooms=(
                Room(id="k", room_type="kitchen", label="Kitchen", objects=(stool, dishwasher)),
            ),
        )
    )
    assert graph.directional("stool", "dishwasher") == "north of"
    assert graph.directional("dishwasher", "stool") == "south of"


# Sector edges at 22.5 + 45 m degrees, as exact (east, north) directions.
EDGES = [
    (COS, SIN),
    (SIN, COS),
    (-SIN, COS),
    (-COS, SIN),
    (-COS, -SIN),
    (-SIN, -COS),
    (SIN, -COS),
    (COS, -SIN),
]


@pytest.mark.parametrize("m", range(8))
def test_a_displacement_exactly_on_an_edge_goes_counter_clockwise(m):
    east, north = EDGES[m]
    rel = pair(obj("s", (east, 0.0, -north)), obj("t", (0.0, 0.0, 0.0)))
    assert rel.edge_metrics(0, 1).azimuth_bin == AZIMUTH_BINS[(m + 1) % 8]


def test_boundary_at_plus_and_minus_22_5_degrees():
    east = np.array([COS, COS, math.cos(math.radians(22.5 - 1e-9))])
    north = np.array([SIN, -SIN, math.sin(math.radians(22.5 - 1e-9))])
    bins = azimuth_bins(east, north, np.hypot(east, north), 0.01)
    assert [AZIMUTH_BINS[b] for b in bins] == ["north-east", "east", "east"]


def test_no_compass_bin_below_min_horizontal():
    rel = pair(obj("s", (0.005, 1.0, 0.0)), obj("t", (0.0, 0.0, 0.0)))
    assert direction(rel) == ("none", "up")
    assert direction(rel, 1, 0) == ("none", "down")
    assert direction(pair(obj("s", (0.0, 0.0, 0.0)), obj("t", (0.0, 0.0, 0.0)))) == (
        "none",
        "level",
    )
    assert rel.edge_metrics(0, 1).azimuth_deg == 0.0  # finite, never NaN


# ---- elevation ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dy", "expected"),
    [(1.0, "up"), (0.5, "level"), (0.0, "level"), (-0.5, "level"), (-1.0, "down")],
)
def test_three_elevation_bins(dy, expected):
    rel = pair(obj("s", (1.0, dy, 0.0)), obj("t", (0.0, 0.0, 0.0)))
    assert direction(rel)[1] == expected
    assert rel.edge_metrics(0, 1).elevation_deg == pytest.approx(math.degrees(math.atan(dy)))


def test_exactly_at_the_level_angle_is_level():
    tan30 = math.tan(math.radians(30.0))
    assert direction(pair(obj("s", (1.0, tan30, 0.0)), obj("t", (0.0, 0.0, 0.0))))[1] == "level"
    assert direction(pair(obj("s", (1.0, -tan30, 0.0)), obj("t", (0.0, 0.0, 0.0))))[1] == "level"
    above = math.nextafter(tan30, 1.0)
    assert direction(pair(obj("s", (1.0, above, 0.0)), obj("t", (0.0, 0.0, 0.0))))[1] == "up"


@pytest.mark.parametrize(
    ("offset", "predicate"),
    [
        ((1.0, 1.0, 0.0), "east-and-up of"),
        ((0.0, 0.0, -1.0), "north of"),
        ((-1.0, -1.0, 1.0), "south-west-and-down of"),
        ((0.0, 2.0, 0.0), "up of"),
        ((0.0, -2.0, 0.0), "down of"),
        ((0.0, 0.0, 0.0), "level with"),
    ],
)
def test_directional_predicate_composes_both_bins(offset, predicate):
    from condvln.graph.relations import DIRECTIONAL_PREDICATES

    rel = pair(obj("s", offset), obj("t", (0.0, 0.0, 0.0)))
    assert DIRECTIONAL_PREDICATES[rel.directional_code(0, 1)] == predicate


# ---- semantic thresholds -----------------------------------------------------------------------


def unit_box_at(x: float, y: float = 0.5) -> SceneObject:
    return obj(f"box{x}", (x + 0.5, y, 0.5), size=(1.0, 1.0, 1.0))


@pytest.mark.parametrize(
    ("gap", "near", "far"),
    [
        (0.0, Truth.TRUE, Truth.FALSE),
        (0.5, Truth.TRUE, Truth.FALSE),  # holds threshold is inclusive
        (0.75, Truth.UNDECIDED, Truth.FALSE),
        (1.0, Truth.FALSE, Truth.FALSE),  # fails threshold is inclusive
        (2.0, Truth.FALSE, Truth.FALSE),
        (2.5, Truth.FALSE, Truth.UNDECIDED),
        (3.0, Truth.FALSE, Truth.TRUE),
    ],
)
def test_near_and_far_on_the_used_distance(gap, near, far):
    rel = pair(unit_box_at(0.0), unit_box_at(1.0 + gap))
    assert rel.edge_metrics(0, 1).used_distance == gap
    assert (truth(rel, "near"), truth(rel, "far from")) == (near, far)
    assert (truth(rel, "near", 1, 0), truth(rel, "far from", 1, 0)) == (near, far)


@pytest.mark.parametrize(
    ("dy", "higher"),
    [(0.3, Truth.TRUE), (0.2, Truth.UNDECIDED), (0.1, Truth.FALSE), (-0.5, Truth.FALSE)],
)
def test_higher_and_lower_on_vertical_displacement(dy, higher):
    rel = pair(obj("s", (5.0, dy, 0.0)), obj("t", (0.0, 0.0, 0.0)))
    assert truth(rel, "higher than") == higher
    assert truth(rel, "lower than", 1, 0) == higher


def table() -> SceneObject:
    return obj("table", (0.5, 0.4, 0.5), aabb=AABB((0.0, 0.0, 0.0), (1.0, 0.8, 1.0)))


@pytest.mark.parametrize(
    ("x_min", "overlap", "above"),
    [
        (0.0, 1.0, Truth.TRUE),
        (0.5, 0.5, Truth.TRUE),  # half the smaller footprint: holds threshold, inclusive
        (0.7, 0.3, Truth.UNDECIDED),
        (0.9, 0.1, Truth.FALSE),
        (3.0, 0.0, Truth.FALSE),  # beside the table: higher, but not above
    ],
)
def test_above_requires_footprint_overlap(x_min, overlap, above):
    lamp = obj(
        "lamp", (x_min + 0.5, 1.5, 0.5), aabb=AABB((x_min, 1.3, 0.0), (x_min + 1.0, 1.7, 1.0))
    )
    rel = pair(lamp, table())
    assert rel.edge_metrics(0, 1).footprint_overlap == pytest.approx(overlap)
    assert truth(rel, "higher than") == Truth.TRUE
    assert truth(rel, "above") == above
    assert truth(rel, "below", 1, 0) == above
    assert truth(rel, "above", 1, 0) == Truth.FALSE  # the table is not above the lamp


def test_small_object_on_large_table_is_above_it():
    cup = obj("cup", (0.2, 0.85, 0.8), size=(0.1, 0.1, 0.1))
    rel = pair(cup, table())
    assert rel.edge_metrics(0, 1).footprint_overlap == 1.0
    assert (truth(rel, "above"), truth(rel, "near")) == (Truth.TRUE, Truth.TRUE)


def test_above_needs_enough_height_too():
    rug = obj("rug", (0.5, 0.05, 0.5), aabb=AABB((0.0, 0.0, 0.0), (1.0, 0.1, 1.0)))
    mat = obj("mat", (0.5, 0.25, 0.5), aabb=AABB((0.0, 0.2, 0.0), (1.0, 0.3, 1.0)))
    rel = pair(mat, rug)  # dy = 0.2: in the higher-than dead band
    assert (truth(rel, "higher than"), truth(rel, "above")) == (Truth.UNDECIDED, Truth.UNDECIDED)


@pytest.mark.parametrize(
    ("dx", "above"), [(0.2, Truth.TRUE), (0.3, Truth.UNDECIDED), (0.5, Truth.FALSE)]
)
def test_above_without_boxes_uses_horizontal_centre_distance(dx, above):
    rel = pair(obj("s", (dx, 2.0, 0.0), radius=0.1), obj("t", (0.0, 0.0, 0.0), radius=0.3))
    assert rel.edge_metrics(0, 1).footprint_overlap is None
    assert truth(rel, "above") == above
    assert truth(rel, "below", 1, 0) == above


def test_distance_type_names_are_exported_in_priority_order():
    assert DISTANCE_TYPES == ("aabb", "sphere", "center")
    assert SEMANTIC_PREDICATES == (
        "near",
        "far from",
        "higher than",
        "lower than",
        "above",
        "below",
    )
