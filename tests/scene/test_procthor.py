"""The ``procthor`` source on the real ProcTHOR houses of ``tests/data/procthor``."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any

import pytest

from condvln.errors import SceneFormatError
from condvln.scene.labels import normalize_room_type
from condvln.scene.model import polygon_area
from condvln.scene.sources import load as load_source
from condvln.scene.sources.procthor import load, packaged_asset_sizes

PROCTHOR = Path(__file__).resolve().parents[1] / "data" / "procthor"
HOUSES = PROCTHOR / "houses"
TRAIN_4 = HOUSES / "train_4.json"

# From tests/data/procthor/SOURCES.md: rooms, top-level objects, objects incl. children, doors.
SOURCES_TABLE = {
    "1310": (4, 31, 90, 3),
    "143": (4, 30, 82, 3),
    "746": (4, 36, 64, 4),
    "ghostchair": (7, 48, 142, 6),
    "house2": (4, 27, 67, 4),
    "house_3703": (2, 15, 39, 2),
    "lighthouse": (10, 69, 178, 8),
    "lighthouse_test": (10, 70, 179, 8),
    "train_4": (4, 41, 97, 3),
    "old_house_jsons__TestHouse": (4, 30, 84, 4),
    "old_house_jsons__bug": (4, 27, 66, 4),
}


def _raw(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def _count_objects(objects: list[dict[str, Any]]) -> int:
    return sum(1 + _count_objects(o.get("children") or []) for o in objects)


def _empty_segments(house: dict[str, Any]) -> set[tuple[tuple[float, float], ...]]:
    segments = set()
    for wall in house["walls"]:
        if wall.get("empty"):
            bottom = [(p["x"], p["z"]) for p in wall["polygon"] if p["y"] == 0]
            segments.add(tuple(sorted(bottom)))
    return segments


def _write(tmp_path: Path, house: Any, name: str = "house.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(house))
    return path


def _assert_one_line_error(path: Path, *parts: str, **kwargs: Any) -> None:
    with pytest.raises(SceneFormatError) as info:
        load(str(path), **kwargs)
    message = str(info.value)
    assert "\n" not in message
    assert str(path) in message
    for part in parts:
        assert part in message


def test_every_fixture_house_is_listed() -> None:
    assert sorted(p.stem for p in HOUSES.glob("*.json")) == sorted(SOURCES_TABLE)


@pytest.mark.parametrize("stem", sorted(SOURCES_TABLE))
def test_house_counts_match_file_and_sources_table(stem: str) -> None:
    path = HOUSES / f"{stem}.json"
    raw = _raw(path)
    scene = load(str(path))
    n_rooms, n_top, n_all, n_doors = SOURCES_TABLE[stem]

    assert scene.id == f"procthor/{stem}"
    assert scene.source == "procthor"
    assert len(scene.rooms) == len(raw["rooms"]) == n_rooms
    assert [r.id for r in scene.rooms] == [r["id"] for r in raw["rooms"]]
    assert [r.room_type for r in scene.rooms] == [
        normalize_room_type(r["roomType"]) for r in raw["rooms"]
    ]
    assert {r.room_type for r in scene.rooms} <= {"kitchen", "living room", "bedroom", "bathroom"}
    assert len(raw["objects"]) == n_top
    assert sum(1 for _ in scene.objects()) == _count_objects(raw["objects"]) == n_all
    assert sum(1 for o in scene.objects() if o.parent_id is None) == n_top
    assert scene.metadata["objects_outside_rooms"] == []
    doors = [d for d in scene.doors if d.kind == "door"]
    openings = [d for d in scene.doors if d.kind == "opening"]
    assert len(doors) == len(raw["doors"]) == n_doors
    assert len(openings) == len(_empty_segments(raw))


@pytest.mark.parametrize("stem", sorted(SOURCES_TABLE))
def test_house_geometry_is_consistent(stem: str) -> None:
    scene = load(str(HOUSES / f"{stem}.json"))
    for room in scene.rooms:
        assert room.floor_polygon is not None
        assert polygon_area(room.floor_polygon) > 0.0  # counter-clockwise after the z flip
        assert room.ceiling_height is not None and room.ceiling_height > 2.0
    for obj in scene.objects():
        assert obj.box is not None and min(obj.box.size) > 0.0
        assert obj.placement in ("floor", "wall", "surface", None)
        assert (obj.placement == "surface") == (obj.parent_id is not None)
    ids = {o.id for o in scene.objects()}
    assert all(o.parent_id in ids for o in scene.objects() if o.parent_id)
    for door in scene.doors:
        assert 0.5 < door.width < 10.0


def test_objects_land_in_the_room_their_id_names() -> None:
    scene = load(str(TRAIN_4))
    for room in scene.rooms:
        for obj in room.objects:
            numbers = [p for p in obj.id.split("|") if p.isdigit()]
            if obj.parent_id is None:
                assert f"room|{numbers[0]}" == room.id, obj.id


def test_known_object_aabb_in_habitat_frame() -> None:
    """Sofa|7|0|1 of train_4: asset Sofa_206_1, size (2.4519, 1.0612, 1.0965), yaw 270°."""
    scene = load(str(TRAIN_4))
    sofa = scene.object("Sofa|7|0|1")
    # THOR position (3.171078816652298, 0.530612587928772, 2.3224737254701164); z is flipped.
    # Yaw 270° swaps the x and z extents: world size (1.0965, 1.0612, 2.4519).
    assert sofa.center == pytest.approx((3.171078816652298, 0.530612587928772, -2.3224737254701164))
    assert sofa.box is not None
    assert sofa.box.min == pytest.approx(
        (2.622828816652298, 0.000012587928772, -3.5484237254701164)
    )
    assert sofa.box.max == pytest.approx(
        (3.719328816652298, 1.061212587928772, -1.0965237254701164)
    )
    assert sofa.yaw == pytest.approx(-math.radians(270.0))
    assert sofa.category == "sofa" and sofa.label == "Sofa"
    assert sofa.placement == "floor" and sofa.parent_id is None
    assert scene.room_of("Sofa|7|0|1").id == "room|7"


def test_children_and_wall_objects() -> None:
    scene = load(str(TRAIN_4))
    pillow = scene.object("Pillow|4|0|1")
    assert pillow.parent_id == "Bed|4|0|0"
    assert pillow.placement == "surface"
    painting = scene.object("Painting|4|6")
    assert painting.placement == "wall"
    assert scene.room_of("Painting|4|6").id == "room|4"


def test_door_segment_from_wall_polygon_and_hole() -> None:
    """door|4|5 of train_4: wall0 runs from (14.684, 2.098) to (8.391, 2.098) in THOR x–z."""
    scene = load(str(TRAIN_4))
    door = next(d for d in scene.doors if d.id == "door|4|5")
    assert door.kind == "door" and door.room_ids == ("room|4", "room|5")
    (ax, az), (bx, bz) = door.segment
    assert (ax, bx) == pytest.approx((14.684 - 0.8175334420827419, 14.684 - 2.8144558158544095))
    assert (az, bz) == pytest.approx((-2.098, -2.098))
    exterior = next(d for d in scene.doors if d.id == "door|1|7")
    assert exterior.is_exterior and exterior.room_ids == ("room|7",)


def test_empty_wall_becomes_one_opening() -> None:
    scene = load(str(TRAIN_4))
    (opening,) = [d for d in scene.doors if d.kind == "opening"]
    assert set(opening.room_ids) == {"room|6", "room|7"}
    assert sorted(opening.segment) == [(0.0, -4.195), (8.391, -4.195)]


def test_schema_0_0_1_doors_use_bounding_box_and_null_room1() -> None:
    scene = load(str(HOUSES / "old_house_jsons__bug.json"))
    exterior = next(d for d in scene.doors if d.id == "door|1|7")
    assert exterior.room_ids == ("room|7",)
    assert exterior.width == pytest.approx(2.462216869372411 - 0.521880641955419)


def test_registered_and_loadable_by_name() -> None:
    assert load_source("procthor", str(TRAIN_4)).id == "procthor/train_4"


def test_packaged_asset_table_matches_fixture() -> None:
    fixture = _raw(PROCTHOR / "asset_sizes.json")
    table = packaged_asset_sizes()
    assert len(table) == len(fixture) == 1653
    for asset_id, entry in fixture.items():
        assert table[asset_id].object_type == entry["objectType"]
        assert table[asset_id].size == tuple(entry["size"])


# --- malformed input: one line naming file, record and field -------------------------------------


def test_truncated_json(tmp_path: Path) -> None:
    path = tmp_path / "house.json"
    path.write_text(TRAIN_4.read_text()[:5000])
    _assert_one_line_error(path, "not valid JSON")


BED_Y = '"y":0.6772911548614502'


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-1e999", '"nan"', "null", '"0.5"', "true"])
def test_bad_coordinate(tmp_path: Path, literal: str) -> None:
    text = TRAIN_4.read_text()
    assert text.count(BED_Y) == 1
    path = tmp_path / "house.json"
    path.write_text(text.replace(BED_Y, f'"y":{literal}'))
    _assert_one_line_error(path, "object 'Bed|4|0|0'", "field 'position.y'", "finite number")


def test_bad_floor_polygon_point(tmp_path: Path) -> None:
    house = _raw(TRAIN_4)
    house["rooms"][1]["floorPolygon"][2]["z"] = "nan"
    _assert_one_line_error(_write(tmp_path, house), "room 'room|5'", "floorPolygon.z")


@pytest.mark.parametrize(
    ("edit", "parts"),
    [
        (
            lambda h: h["rooms"][0].pop("floorPolygon"),
            ("room 'room|4'", "'floorPolygon'", "missing"),
        ),
        (lambda h: h["rooms"][0].pop("roomType"), ("room 'room|4'", "'roomType'")),
        (lambda h: h.pop("rooms"), ("house", "'rooms'", "missing")),
        (lambda h: h["objects"][3].pop("position"), ("'position'", "missing")),
        (lambda h: h["objects"][0]["children"][0].pop("id"), ("child #0 of object 'Bed|4|0|0'",)),
        (lambda h: h["doors"][0].pop("wall0"), ("door 'door|4|5'", "'wall0'")),
        (lambda h: h["doors"][0].pop("holePolygon"), ("door 'door|4|5'", "'holePolygon'")),
        (lambda h: h["walls"][0].pop("polygon"), ("wall 'wall|4|8.39|2.10|8.39|4.20'",)),
    ],
)
def test_missing_keys(tmp_path: Path, edit: Any, parts: tuple[str, ...]) -> None:
    house = _raw(TRAIN_4)
    edit(house)
    _assert_one_line_error(_write(tmp_path, house), *parts)


def test_wrong_types(tmp_path: Path) -> None:
    house = _raw(TRAIN_4)
    house["objects"][0]["children"] = {"not": "a list"}
    _assert_one_line_error(_write(tmp_path, house), "object 'Bed|4|0|0'", "'children'", "list")
    _assert_one_line_error(_write(tmp_path, [1, 2, 3], "list.json"), "house", "object")


def test_unknown_wall_and_room(tmp_path: Path) -> None:
    house = _raw(TRAIN_4)
    house["doors"][0]["wall0"] = "wall|9|0|0|1|1"
    _assert_one_line_error(_write(tmp_path, house), "door 'door|4|5'", "unknown wall")
    house = _raw(TRAIN_4)
    house["doors"][0]["room1"] = "room|99"
    _assert_one_line_error(_write(tmp_path, house), "door 'door|4|5'", "room|99")


def test_unknown_asset(tmp_path: Path) -> None:
    house = _raw(TRAIN_4)
    house["objects"][0]["assetId"] = "Foo"
    _assert_one_line_error(
        _write(tmp_path, house), "object 'Bed|4|0|0'", "field 'assetId'", "unknown asset 'Foo'"
    )


def test_duplicate_object_ids(tmp_path: Path) -> None:
    house = _raw(TRAIN_4)
    house["objects"][0]["children"][0]["id"] = house["objects"][5]["id"]
    dup = house["objects"][5]["id"]
    _assert_one_line_error(_write(tmp_path, house), f"object '{dup}'", "duplicate id")


def test_degenerate_room_polygon(tmp_path: Path) -> None:
    house = _raw(TRAIN_4)
    house["rooms"][0]["floorPolygon"] = house["rooms"][0]["floorPolygon"][:2]
    _assert_one_line_error(_write(tmp_path, house), "room 'room|4'", "floor_polygon")


def test_negative_asset_size(tmp_path: Path) -> None:
    table = copy.deepcopy(_raw(PROCTHOR / "asset_sizes.json"))
    table["Bed_9"]["size"][1] = -1.3546
    sizes = _write(tmp_path, table, "sizes.json")
    with pytest.raises(SceneFormatError) as info:
        load(str(TRAIN_4), asset_sizes=str(sizes))
    assert str(info.value) == (
        f"{sizes}: asset 'Bed_9': field 'size': must be 3 positive numbers, "
        "got [2.0712, -1.3546, 2.4115]"
    )


def test_custom_asset_table_is_used(tmp_path: Path) -> None:
    table = _raw(PROCTHOR / "asset_sizes.json")
    table["Sofa_206_1"]["size"] = [2.0, 1.0, 1.0]
    scene = load(str(TRAIN_4), asset_sizes=str(_write(tmp_path, table, "sizes.json")))
    box = scene.object("Sofa|7|0|1").box
    assert box is not None and box.size == pytest.approx((1.0, 1.0, 2.0))


def test_object_outside_every_room_is_reported(tmp_path: Path) -> None:
    house = _raw(TRAIN_4)
    house["objects"][0]["position"]["x"] = 100.0  # the bed and its 4 children
    scene = load(str(_write(tmp_path, house)))
    outside = scene.metadata["objects_outside_rooms"]
    assert outside[0] == "Bed|4|0|0" and len(outside) == 5
    assert sum(1 for _ in scene.objects()) == 97 - 5


def test_empty_file_directory_and_missing_file(tmp_path: Path) -> None:
    empty = tmp_path / "empty.json"
    empty.write_text("")
    _assert_one_line_error(empty, "empty")
    _assert_one_line_error(tmp_path, "directory")
    _assert_one_line_error(tmp_path / "nope.json", "no such file")
