"""The ``ithor`` source on real AI2-THOR object metadata (``tests/data/ai2thor``)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from condvln.errors import ConfigError, SceneFormatError
from condvln.scene.sources import ithor
from condvln.scene.sources import load as load_source
from condvln.scene.sources.ithor import ithor_scene_names, load

AI2THOR = Path(__file__).resolve().parents[1] / "data" / "ai2thor"
RAW = AI2THOR / "ithor_FloorPlan1_objects_raw.json"
COMPACT = AI2THOR / "ithor_robothor_5scenes_compact.json"
STOVE = "StoveBurner|-00.04|+00.92|-02.37"

HAS_PROCTHOR = importlib.util.find_spec("procthor") is not None
needs_procthor = pytest.mark.skipif(
    not HAS_PROCTHOR,
    reason='the procthor package is not installed (pip install "procthor>=0.0.1.dev2")',
)


def _raw_objects() -> list[dict[str, Any]]:
    return json.loads(RAW.read_text())["objects"]


def _write(tmp_path: Path, data: Any, name: str = "scene.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def _assert_one_line_error(path: Path, *parts: str) -> None:
    with pytest.raises(SceneFormatError) as info:
        load(str(path))
    message = str(info.value)
    assert "\n" not in message
    assert str(path) in message
    for part in parts:
        assert part in message


def test_floorplan1_raw_file() -> None:
    objects = _raw_objects()
    scene = load(str(RAW))
    (room,) = scene.rooms
    assert scene.source == "ithor" and scene.is_single_room
    assert room.room_type == "kitchen"  # inferred from the stove and fridge: the file has no name
    assert len(objects) == 77
    assert len(room.objects) == len(objects) - 1 == 76
    assert all(o.label != "Floor" for o in room.objects)
    assert {o.id for o in room.objects} == {o["objectId"] for o in objects} - {
        "Floor|+00.00|+00.00|+00.00"
    }


def test_floorplan1_floor_rectangle() -> None:
    """Floor AABB (THOR): centre (0.015, −0.05, −0.2), size (4.83, 0.10, 5.40)."""
    room = load(str(RAW)).rooms[0]
    assert room.floor_polygon is not None
    xs = sorted({p[0] for p in room.floor_polygon})
    zs = sorted({p[1] for p in room.floor_polygon})
    assert xs == pytest.approx([0.015 - 2.415, 0.015 + 2.415], abs=1e-6)
    # Habitat z = −THOR z: the centre −0.2 becomes +0.2.
    assert zs == pytest.approx([0.2 - 2.7, 0.2 + 2.7], abs=1e-6)
    assert room.area == pytest.approx(4.83 * 5.40, abs=1e-5)
    assert room.floor_height == pytest.approx(0.0, abs=1e-6)


def test_known_object_aabb_with_z_flip() -> None:
    raw = next(o for o in _raw_objects() if o["objectId"] == STOVE)
    corners = raw["axisAlignedBoundingBox"]["cornerPoints"]
    stove = load(str(RAW)).object(STOVE)
    assert stove.box is not None
    # THOR centre (−0.0361, 0.93547, −2.3722), size (0.2026, 0.0321, 0.2026).
    assert stove.center == pytest.approx((-0.0361, 0.9354671239852905, 2.3722000122070312))
    assert stove.box.size == pytest.approx(
        (0.2025984525680542, 0.03208458423614502, 0.20259809494018555)
    )
    # The box from the pivot-free AABB agrees with the corner points, z negated.
    assert stove.box.min == pytest.approx(
        (min(c[0] for c in corners), min(c[1] for c in corners), -max(c[2] for c in corners))
    )
    assert stove.box.max == pytest.approx(
        (max(c[0] for c in corners), max(c[1] for c in corners), -min(c[2] for c in corners))
    )
    assert stove.box.min[2] == pytest.approx(2.2709009647369385)
    assert stove.category == "stove burner" and stove.label == "StoveBurner"


def test_parents_and_placement() -> None:
    scene = load(str(RAW))
    egg = scene.object("Egg|-02.04|+00.81|+01.24")
    assert egg.parent_id == "Fridge|-02.10|+00.00|+01.07"
    assert egg.placement == "surface"
    fridge = scene.object("Fridge|-02.10|+00.00|+01.07")
    assert fridge.parent_id is None and fridge.placement == "floor"
    assert scene.object(STOVE).placement is None


@pytest.mark.parametrize(
    ("name", "room_type", "count"),
    [
        ("FloorPlan1", "kitchen", 76),
        ("FloorPlan201", "living room", 46),
        ("FloorPlan301", "bedroom", 53),
        ("FloorPlan401", "bathroom", 36),
    ],
)
def test_compact_file_scenes(name: str, room_type: str, count: int) -> None:
    raw = json.loads(COMPACT.read_text())["scenes"][name]
    assert len(raw) - 1 == count
    for scene in (load(str(COMPACT), scene=name), load(f"{COMPACT}#{name}")):
        (room,) = scene.rooms
        assert scene.id == f"ithor/{name}"
        assert room.room_type == room_type
        assert len(room.objects) == count
        assert room.floor_polygon is not None and room.area is not None and room.area > 4.0


def test_compact_matches_raw_to_four_decimals() -> None:
    compact = load(f"{COMPACT}#FloorPlan1").object(STOVE)
    raw = load(str(RAW)).object(STOVE)
    assert compact.center == pytest.approx(raw.center, abs=1e-4)
    assert compact.box is not None and raw.box is not None
    assert compact.box.size == pytest.approx(raw.box.size, abs=1e-4)


def test_robothor_is_rejected() -> None:
    with pytest.raises(SceneFormatError) as info:
        load(str(COMPACT), scene="FloorPlan_Train1_1")
    message = str(info.value)
    assert "\n" not in message and str(COMPACT) in message
    assert "RoboTHOR apartments have no room or floor annotations" in message


def test_object_list_without_floor_is_rejected(tmp_path: Path) -> None:
    objects = [o for o in _raw_objects() if o["objectType"] != "Floor"]
    _assert_one_line_error(_write(tmp_path, objects), "no Floor object", "RoboTHOR")


def test_multi_scene_file_needs_a_name(tmp_path: Path) -> None:
    _assert_one_line_error(COMPACT, "holds 5 scenes", "FloorPlan1, FloorPlan201", "PATH#NAME")
    with pytest.raises(SceneFormatError, match="no such scene") as info:
        load(f"{COMPACT}#FloorPlan2")
    assert "FloorPlan_Train1_1" in str(info.value)


def test_bare_list_and_zero_size_axis(tmp_path: Path) -> None:
    objects = _raw_objects()
    stove = next(o for o in objects if o["objectId"] == STOVE)
    stove["axisAlignedBoundingBox"]["size"]["z"] = 0.0  # real data has flat shelves
    scene = load(str(_write(tmp_path, objects)), scene="FloorPlan5")
    assert scene.id == "ithor/FloorPlan5" and scene.rooms[0].room_type == "kitchen"
    box = scene.object(STOVE).box
    assert box is not None and box.size[2] == 0.0


def test_registered_and_loadable_by_name() -> None:
    assert load_source("ithor", f"{COMPACT}#FloorPlan301").rooms[0].room_type == "bedroom"


# --- malformed input -------------------------------------------------------------------------------


def test_truncated_empty_directory_missing(tmp_path: Path) -> None:
    truncated = tmp_path / "truncated.json"
    truncated.write_text(RAW.read_text()[:3000])
    _assert_one_line_error(truncated, "not valid JSON")
    empty = tmp_path / "empty.json"
    empty.write_text("  \n")
    _assert_one_line_error(empty, "empty")
    _assert_one_line_error(tmp_path, "directory")
    _assert_one_line_error(tmp_path / "missing.json", "no such file")


@pytest.mark.parametrize("bad", ["nan", None, "0.1", False])
def test_bad_aabb_number(tmp_path: Path, bad: Any) -> None:
    objects = _raw_objects()
    next(o for o in objects if o["objectId"] == STOVE)["axisAlignedBoundingBox"]["center"]["y"] = (
        bad
    )
    _assert_one_line_error(
        _write(tmp_path, objects),
        f"object '{STOVE}'",
        "field 'axisAlignedBoundingBox.center.y'",
        "finite number",
    )


def test_nan_literal(tmp_path: Path) -> None:
    text = COMPACT.read_text()
    needle = '"aabb_center":{"x":-0.0361,"y":0.9355,"z":-2.3722}'
    assert text.count(needle) == 1
    path = tmp_path / "compact.json"
    path.write_text(text.replace(needle, '"aabb_center":{"x":NaN,"y":0.9355,"z":-2.3722}'))
    with pytest.raises(SceneFormatError) as info:
        load(f"{path}#FloorPlan1")
    message = str(info.value)
    assert "\n" not in message and str(path) in message
    assert f"object '{STOVE}': field 'aabb_center.x'" in message


@pytest.mark.parametrize(
    ("edit", "parts"),
    [
        (lambda o: o.pop("axisAlignedBoundingBox"), ("'axisAlignedBoundingBox'", "missing")),
        (lambda o: o.pop("objectId"), ("object #", "'objectId'")),
        (lambda o: o.pop("objectType"), (f"object '{STOVE}'", "'objectType'")),
        (lambda o: o["axisAlignedBoundingBox"].pop("size"), ("axisAlignedBoundingBox.size",)),
        (lambda o: o.update(parentReceptacles="Fridge"), ("'parentReceptacles'", "list")),
    ],
)
def test_missing_or_wrong_keys(tmp_path: Path, edit: Any, parts: tuple[str, ...]) -> None:
    objects = _raw_objects()
    edit(next(o for o in objects if o["objectId"] == STOVE))
    _assert_one_line_error(_write(tmp_path, objects), *parts)


def test_negative_aabb_size(tmp_path: Path) -> None:
    objects = _raw_objects()
    next(o for o in objects if o["objectId"] == STOVE)["axisAlignedBoundingBox"]["size"]["x"] = -0.2
    _assert_one_line_error(
        _write(tmp_path, objects), f"object '{STOVE}'", "axisAlignedBoundingBox.size", ">= 0"
    )


def test_duplicate_ids_and_two_floors(tmp_path: Path) -> None:
    objects = _raw_objects()
    stove = next(o for o in objects if o["objectId"] == STOVE)
    _assert_one_line_error(
        _write(tmp_path, [*objects, stove], "dup.json"), f"object '{STOVE}'", "duplicate id"
    )
    floor = next(o for o in objects if o["objectType"] == "Floor")
    _assert_one_line_error(
        _write(tmp_path, [*objects, {**floor, "objectId": "Floor|2"}], "floors.json"),
        "expected one Floor object, found 2",
    )


def test_not_an_object_list(tmp_path: Path) -> None:
    _assert_one_line_error(_write(tmp_path, {"objects": 3}), "'objects'", "list")
    _assert_one_line_error(_write(tmp_path, [1, 2], "ints.json"), "object #0")


def test_scenes_must_be_a_mapping(tmp_path: Path) -> None:
    _assert_one_line_error(_write(tmp_path, {"scenes": [1]}), "field 'scenes'")


# --- the 120 iTHOR rooms of the procthor package --------------------------------------------------


def test_unknown_scene_name() -> None:
    with pytest.raises(ConfigError, match="unknown iTHOR scene 'FloorPlan31'"):
        load("FloorPlan31")


def test_robothor_name_is_rejected_without_reading_anything() -> None:
    with pytest.raises(SceneFormatError, match="RoboTHOR apartments"):
        load("FloorPlan_Val2_3")


def test_missing_package_gives_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    ithor._metadata.cache_clear()
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ConfigError) as info:
        load("FloorPlan1")
    assert 'pip install "procthor>=0.0.1.dev2"' in str(info.value)
    assert "\n" not in str(info.value)


@needs_procthor
def test_all_120_ithor_rooms_load() -> None:
    types = {1: "kitchen", 2: "living room", 3: "bedroom", 4: "bathroom"}
    names = ithor_scene_names()
    assert len(names) == 120
    for name in names:
        scene = load(name)
        (room,) = scene.rooms
        number = int(name.removeprefix("FloorPlan"))
        assert room.room_type == types[max(1, number // 100)], name
        assert len(room.objects) >= 1
        assert room.floor_polygon is not None and room.area is not None and room.area > 1.0


@needs_procthor
def test_named_scene_matches_fixture() -> None:
    named = load("FloorPlan1")
    from_file = load(str(RAW))
    assert named.id == "ithor/FloorPlan1"
    assert [o.id for o in named.objects()] == [o.id for o in from_file.objects()]
    assert named.object(STOVE).box == from_file.object(STOVE).box


@needs_procthor
def test_flat_shelves_of_floorplan302() -> None:
    scene = load("FloorPlan302")
    shelf = scene.object("Shelf|-00.47|+00.83|-02.04")
    assert shelf.box is not None and shelf.box.size[2] == 0.0
