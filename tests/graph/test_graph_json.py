"""Scene-graph JSON: exact round trip, determinism, no NaN, one-line errors on bad input."""

from __future__ import annotations

import copy

import orjson
import pytest

from condvln.errors import FormatError
from condvln.graph import (
    RelationConfig,
    build_scene_graph,
    graph_from_dict,
    graph_to_dict,
    load_graph,
    save_graph,
)
from condvln.scene.model import Room, Scene, SceneObject


@pytest.fixture(scope="module")
def scene() -> Scene:
    objects = (
        SceneObject(
            id="table",
            category="table",
            label="Table",
            center=(0.1, 0.4, 0.2),
            size=(1.2, 0.8, 0.8),
        ),
        SceneObject(
            id="cup",
            category="cup",
            label="Cup",
            center=(0.3, 0.85, 0.1),
            size=(0.1, 0.1, 0.1),
            parent_id="table",
            placement="surface",
        ),
        SceneObject(id="ball", category="ball", label="Ball", center=(2.0, 0.2, -1.3), radius=0.2),
        SceneObject(id="plant", category="plant", label="Plant", center=(-1.7, 0.6, 1.9)),
    )
    rooms = (
        Room(id="r1", room_type="living room", label="LivingRoom", objects=objects),
        Room(
            id="r2",
            room_type="hallway",
            label="Hallway",
            objects=(
                SceneObject(id="coat", category="coat", label="Coat", center=(5.0, 1.5, 0.0)),
            ),
        ),
    )
    return Scene(id="json-demo", source="manual", rooms=rooms)


@pytest.fixture(scope="module")
def doc(scene) -> dict:
    return graph_to_dict(build_scene_graph(scene))


def test_document_layout(doc):
    assert (doc["format"], doc["schema_version"]) == ("condvln.scene_graph", 1)
    assert doc["config_hash"] == RelationConfig().config_hash
    assert doc["config"] == RelationConfig().model_dump(mode="json")
    room = doc["rooms"][0]
    assert room["object_ids"] == ["table", "cup", "ball", "plant"]
    assert [(p["subject"], p["target"]) for p in room["pairs"][:4]] == [
        ("table", "cup"),
        ("table", "ball"),
        ("table", "plant"),
        ("cup", "table"),
    ]
    cup_on_table = room["pairs"][3]
    assert cup_on_table["truth"]["above"] == "true"
    assert cup_on_table["metrics"]["distance_type"] == "aabb"
    assert cup_on_table["directional"] == "north-east-and-up of"
    ball_plant = room["pairs"][8]
    assert (ball_plant["subject"], ball_plant["target"]) == ("ball", "plant")
    assert ball_plant["metrics"]["aabb_distance"] is None  # null, never NaN
    assert ball_plant["metrics"]["footprint_overlap"] is None
    assert doc["rooms"][1]["pairs"] == []


def test_dict_and_file_round_trips_are_exact(scene, doc, tmp_path):
    graph = build_scene_graph(scene)
    assert graph_from_dict(doc) == graph
    assert graph_from_dict(orjson.loads(orjson.dumps(doc))) == graph
    path = tmp_path / "g.json"
    save_graph(graph, path)
    assert load_graph(path) == graph
    again = tmp_path / "again.json"
    save_graph(load_graph(path), again)
    assert again.read_bytes() == path.read_bytes()


def test_same_scene_and_config_give_identical_bytes(scene, tmp_path):
    cfg = RelationConfig(near_holds=0.4)
    save_graph(build_scene_graph(scene, cfg), tmp_path / "a.json")
    save_graph(build_scene_graph(scene, cfg), tmp_path / "b.json")
    data = (tmp_path / "a.json").read_bytes()
    assert data == (tmp_path / "b.json").read_bytes()
    assert b"NaN" not in data and b"Infinity" not in data
    assert load_graph(tmp_path / "a.json").config == cfg


def test_a_different_config_gives_a_different_graph(scene):
    assert build_scene_graph(scene, RelationConfig(near_holds=0.1)) != build_scene_graph(scene)


def broken(doc: dict, edit) -> dict:
    out = copy.deepcopy(doc)
    edit(out)
    return out


def _set(path, value):
    def edit(d):
        for key in path[:-1]:
            d = d[key]
        d[path[-1]] = value

    return edit


def _delete(path):
    def edit(d):
        for key in path[:-1]:
            d = d[key]
        del d[path[-1]]

    return edit


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (_set(["format"], "condvln.scene"), "document: field 'format': not a condvln.scene_graph"),
        (_set(["schema_version"], 9), "field 'schema_version': unsupported schema version 9"),
        (_set(["config", "near_holds"], 5.0), "document: field 'config': invalid relation config"),
        (_set(["config_hash"], "0" * 16), "field 'config_hash': does not match the config"),
        (_delete(["rooms"]), "document: field 'rooms': missing"),
        (_set(["rooms"], []), "has 0 entries but the scene has 2 rooms"),
        (_set(["rooms", 0, "room_id"], "r2"), "rooms[0]: field 'room_id': must be 'r1'"),
        (_set(["rooms", 0, "object_ids"], ["cup"]), "rooms[0]: field 'object_ids': must list"),
        (_set(["rooms", 0, "pairs"], []), "rooms[0]: field 'pairs': must hold 12 ordered pairs"),
        (
            _set(["rooms", 0, "pairs", 5, "subject"], "plant"),
            "rooms[0].pairs[5]: field 'subject': must be the pair ('cup', 'plant')",
        ),
        (
            _delete(["rooms", 0, "pairs", 7, "metrics", "used_distance"]),
            "rooms[0].pairs[7].metrics: field 'used_distance': missing",
        ),
        (
            _set(["rooms", 0, "pairs", 2, "metrics"], [1, 2]),
            "rooms[0].pairs[2]: field 'metrics': must be of type Mapping",
        ),
        (
            _set(["rooms", 0, "pairs", 4, "metrics", "center_distance"], "1.5"),
            "rooms[0].pairs[4]: field 'metrics.center_distance': must be a finite number",
        ),
        (
            _set(["rooms", 0, "pairs", 4, "metrics", "used_distance"], None),
            "rooms[0].pairs[4]: field 'metrics.used_distance': must be a finite number",
        ),
        (
            _set(["rooms", 0, "pairs", 1, "metrics", "delta"], [1.0, 2.0]),
            "rooms[0].pairs[1]: field 'metrics.delta': must be a list of 3 numbers",
        ),
        (
            _set(["rooms", 0, "pairs", 3, "metrics", "azimuth_bin"], "northeast"),
            "rooms[0].pairs[3]: field 'azimuth_bin': unknown value 'northeast'",
        ),
        (
            _set(["rooms", 0, "pairs", 6, "truth", "near"], "maybe"),
            "rooms[0].pairs[6]: field 'truth.near': unknown value 'maybe'",
        ),
        (
            _set(["rooms", 0, "pairs", 3, "directional"], "east of"),
            "rooms[0].pairs[3]: field 'directional': does not match azimuth_bin and elevation_bin",
        ),
        (_delete(["scene", "scene", "rooms"]), "scene: field 'rooms': missing"),
    ],
)
def test_bad_documents_give_one_line_format_errors(doc, tmp_path, edit, message):
    path = tmp_path / "bad.json"
    path.write_bytes(orjson.dumps(broken(doc, edit)))
    with pytest.raises(FormatError) as info:
        load_graph(path)
    text = str(info.value)
    assert text.startswith(f"{path}: ")
    assert message in text
    assert "\n" not in text


def test_unreadable_files_give_format_errors(tmp_path):
    with pytest.raises(FormatError, match="no such file"):
        load_graph(tmp_path / "missing.json")
    (tmp_path / "list.json").write_text("[1, 2]")
    with pytest.raises(FormatError, match=r"list\.json: document: field 'format': not a"):
        load_graph(tmp_path / "list.json")
    (tmp_path / "cut.json").write_text('{"format": ')
    with pytest.raises(FormatError, match="not valid JSON"):
        load_graph(tmp_path / "cut.json")


def test_save_is_atomic_and_leaves_no_temporary_files(scene, tmp_path):
    save_graph(build_scene_graph(scene), tmp_path / "out" / "g.json")
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["g.json"]
