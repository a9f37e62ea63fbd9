"""Scene graph build and queries on a hand-made two-room scene."""

from __future__ import annotations

import pytest

from condvln.errors import CondVLNError, ConfigError
from condvln.graph import (
    CrossRoomError,
    Edge,
    GraphQueryError,
    RelationConfig,
    Truth,
    build_scene_graph,
    summarize,
)
from condvln.scene.model import Room, Scene, SceneObject


def thing(oid: str, category: str, center, size=(0.4, 0.4, 0.4)) -> SceneObject:
    return SceneObject(id=oid, category=category, label=category.title(), center=center, size=size)


@pytest.fixture(scope="module")
def graph():
    kitchen = Room(
        id="kitchen",
        room_type="kitchen",
        label="Kitchen",
        objects=(
            thing("table", "table", (0.0, 0.4, 0.0), (1.2, 0.8, 0.8)),
            thing("lamp", "lamp", (0.1, 1.5, 0.0), (0.3, 0.4, 0.3)),
            thing("stool_a", "stool", (0.0, 0.3, -1.0)),
            thing("stool_b", "stool", (3.2, 0.3, -1.0)),
        ),
    )
    bedroom = Room(
        id="bedroom",
        room_type="bedroom",
        label="Bedroom",
        objects=(
            thing("bed", "bed", (10.0, 0.3, 0.0), (2.0, 0.6, 1.6)),
            SceneObject(id="lamp_2", category="lamp", label="Lamp", center=(11.5, 0.5, 0.0)),
        ),
    )
    return build_scene_graph(Scene(id="two", source="manual", rooms=(kitchen, bedroom)))


def test_nodes_and_lookups(graph):
    assert graph.room_ids == ("kitchen", "bedroom")
    assert graph.object_ids == ("table", "lamp", "stool_a", "stool_b", "bed", "lamp_2")
    assert graph.room_of("lamp_2") == "bedroom"
    assert graph.object("bed").category == "bed"
    assert [o.id for o in graph.objects_in("kitchen", "stool")] == ["stool_a", "stool_b"]
    assert [o.id for o in graph.objects_in("bedroom")] == ["bed", "lamp_2"]
    assert graph.objects_in("bedroom", "stool") == ()
    assert graph.categories("kitchen") == ("lamp", "stool", "table")
    assert graph.categories() == ("bed", "lamp", "stool", "table")
    assert graph.rooms_with("lamp") == ("kitchen", "bedroom")
    assert graph.rooms_with("bed") == ("bedroom",)
    assert graph.config == RelationConfig()
    assert graph.config_hash == RelationConfig().config_hash


def test_truth_of_each_predicate_kind(graph):
    assert graph.truth("lamp", "above", "table") == Truth.TRUE
    assert graph.truth("table", "below", "lamp") == Truth.TRUE
    assert graph.truth("stool_a", "near", "table") == Truth.TRUE  # gap 1.0 - 0.4 - 0.2 = 0.4
    assert graph.truth("stool_b", "far from", "stool_a") == Truth.UNDECIDED  # gap 2.8
    assert graph.truth("stool_a", "north of", "table") == Truth.TRUE
    assert graph.truth("stool_a", "south of", "table") == Truth.FALSE
    assert graph.truth("table", "south of", "stool_a") == Truth.TRUE
    assert graph.truth("lamp", "in", "kitchen") == Truth.TRUE
    assert graph.truth("lamp", "in", "bedroom") == Truth.FALSE


def test_lamp_in_bedroom_falls_back_to_centre_distance(graph):
    metrics = graph.metrics("lamp_2", "bed")
    assert (metrics.distance_type, metrics.aabb_distance, metrics.sphere_distance) == (
        "center",
        None,
        None,
    )
    assert metrics.used_distance == metrics.center_distance


def test_cross_room_query_raises_a_condvln_error(graph):
    with pytest.raises(
        CrossRoomError,
        match="'lamp' \\(room 'kitchen'\\) and 'bed' \\(room 'bedroom'\\) are in different rooms",
    ) as info:
        graph.truth("lamp", "near", "bed")
    assert isinstance(info.value, CondVLNError)


@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        (("lamp", "near", "lamp"), GraphQueryError, "no relation between object 'lamp' and itself"),
        (("sofa", "near", "lamp"), GraphQueryError, "unknown object 'sofa' in scene 'two'"),
        (("lamp", "in", "garage"), GraphQueryError, "unknown room 'garage' in scene 'two'"),
        (("lamp", "naer", "table"), ConfigError, "unknown predicate 'naer'; did you mean 'near'?"),
    ],
)
def test_bad_queries_raise_clear_errors(graph, args, error, message):
    with pytest.raises(error, match=message.replace("(", "\\(").replace("?", "\\?")):
        graph.truth(*args)


def test_relations_of_lists_outgoing_edges_in_order(graph):
    edges = graph.relations_of("lamp")
    assert edges[0] == Edge("lamp", "in", "kitchen", "containment", Truth.TRUE)
    assert [(e.target, e.predicate) for e in edges[1:5]] == [
        ("table", "east-and-up of"),
        ("table", "near"),  # vertical gap 1.3 - 0.8 = 0.5: the inclusive holds threshold
        ("table", "higher than"),
        ("table", "above"),
    ]
    assert all(e.subject == "lamp" for e in edges)
    assert [e.target for e in graph.relations_of("lamp", "higher than")] == [
        "table",
        "stool_a",
        "stool_b",
    ]


def test_edges_carry_the_metrics_they_were_computed_from(graph):
    (edge,) = graph.edges("above")
    assert (edge.subject, edge.target, edge.kind, edge.truth) == (
        "lamp",
        "table",
        "semantic",
        Truth.TRUE,
    )
    assert edge.metrics == graph.metrics("lamp", "table")
    assert edge.metrics.footprint_overlap == 1.0
    assert edge.metrics.distance_type == "aabb"
    assert edge.metrics.azimuth_bin == "east" and edge.metrics.elevation_bin == "up"
    assert edge.to_dict()["metrics"]["delta"] == list(edge.metrics.delta)


def test_edges_filter_by_truth_room_and_predicate(graph):
    undecided = list(graph.edges("far from", truth=Truth.UNDECIDED))
    others = ("table", "lamp", "stool_a")  # gaps to stool_b: 2.43, 2.94, 2.8
    assert {(e.subject, e.target) for e in undecided} == {
        *(("stool_b", o) for o in others),
        *((o, "stool_b") for o in others),
    }
    false = list(graph.edges("near", room_id="bedroom", truth=Truth.FALSE))
    assert {(e.subject, e.target) for e in false} == {("bed", "lamp_2"), ("lamp_2", "bed")}
    assert list(graph.edges("near", room_id="bedroom")) == []
    assert len(list(graph.edges("in"))) == 6
    directional = [e for e in graph.edges(room_id="kitchen") if e.kind == "directional"]
    assert len(directional) == 12  # one per ordered pair
    with pytest.raises(ConfigError):
        list(graph.edges("nearby"))


def test_summary_counts(graph):
    summary = summarize(graph)
    assert (summary["rooms"], summary["objects"], summary["nodes"]) == (2, 6, 8)
    assert summary["ordered_pairs"] == 4 * 3 + 2 * 1
    assert summary["edges_per_predicate"]["in"] == 6
    assert summary["edges_per_predicate"]["above"] == 1
    assert summary["undecided_per_predicate"]["far from"] == 6
    edges = list(graph.edges())
    assert summary["edges"] == sum(1 for e in edges if e.truth == Truth.TRUE)
    assert summary["undecided"] == sum(1 for e in edges if e.truth == Truth.UNDECIDED)
    directional_total = sum(
        v
        for k, v in summary["edges_per_predicate"].items()
        if k.endswith(" of") or k == "level with"
    )
    assert directional_total == summary["ordered_pairs"]


def test_truth_cannot_be_used_as_a_bool():
    with pytest.raises(TypeError, match="three-valued"):
        bool(Truth.UNDECIDED)


def test_empty_and_single_object_rooms_build():
    rooms = (
        Room(id="a", room_type="hall", label="Hall"),
        Room(
            id="b",
            room_type="bath",
            label="Bath",
            objects=(thing("sink", "sink", (0.0, 0.8, 0.0)),),
        ),
    )
    graph = build_scene_graph(Scene(id="tiny", source="manual", rooms=rooms))
    assert summarize(graph)["ordered_pairs"] == 0
    assert [e.predicate for e in graph.edges()] == ["in"]
    assert graph.relations("a").truths.shape == (6, 0, 0)


def test_edges_describe_themselves_in_one_line(graph):
    (edge,) = graph.edges("above")
    assert edge.describe() == "lamp above table [true] (aabb 0.500 m, east/up)"
    (containment,) = (e for e in graph.relations_of("bed") if e.predicate == "in")
    assert containment.describe() == "bed in bedroom [true]"


def test_relations_of_checks_the_predicate_name(graph):
    with pytest.raises(ConfigError, match="did you mean 'above'"):
        graph.relations_of("lamp", "abvoe")
