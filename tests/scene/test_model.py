"""The scene model: geometry fallback, validation and one-line errors."""

from __future__ import annotations

import math

import pytest

from condvln.errors import SceneFormatError
from condvln.scene.labels import normalize_category, normalize_room_type
from condvln.scene.model import AABB, Door, Room, Scene, SceneObject


def _obj(oid: str = "o", **kw) -> SceneObject:
    base = {"category": "cup", "label": "Cup", "center": (0.0, 1.0, 0.0)}
    base.update(kw)
    return SceneObject(id=oid, **base)


def test_size_gives_box_centred_on_center() -> None:
    obj = _obj(center=(1.0, 2.0, 3.0), size=(2.0, 4.0, 6.0))
    assert obj.box == AABB((0.0, 0.0, 0.0), (2.0, 4.0, 6.0))
    assert obj.bounding_radius == pytest.approx(0.5 * math.sqrt(4 + 16 + 36))


def test_explicit_aabb_wins_over_size() -> None:
    box = AABB((0.0, 0.0, 0.0), (1.0, 1.0, 1.0))
    obj = _obj(size=(5.0, 5.0, 5.0), aabb=box)
    assert obj.box == box


def test_radius_is_the_fallback() -> None:
    obj = _obj(radius=0.3)
    assert obj.box is None
    assert obj.bounding_radius == 0.3
    assert _obj().bounding_radius is None


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"center": (0.0, math.nan, 0.0)}, "center"),
        ({"center": (0.0, math.inf, 0.0)}, "center"),
        ({"center": (0.0, 1.0)}, "center"),
        ({"center": ("a", 1.0, 2.0)}, "center"),
        ({"size": (1.0, -1.0, 1.0)}, "size"),
        ({"size": (1.0, 0.0, 1.0)}, "size"),
        ({"radius": -0.5}, "radius"),
        ({"radius": math.nan}, "radius"),
        ({"aabb": AABB((0.0, 0.0, 0.0), (1.0, -1.0, 1.0))}, "aabb"),
        ({"label": ""}, "label"),
        ({"category": "  "}, "category"),
    ],
)
def test_invalid_object_fields_name_record_and_field(kwargs: dict, field: str) -> None:
    with pytest.raises(SceneFormatError) as info:
        _obj("bad|1", **kwargs)
    assert info.value.record == "object 'bad|1'"
    assert info.value.field == field
    assert "\n" not in str(info.value)


def test_room_polygon_must_have_area() -> None:
    with pytest.raises(SceneFormatError, match="floor_polygon"):
        Room(id="r", room_type="kitchen", label="Kitchen", floor_polygon=((0, 0), (1, 0), (2, 0)))
    room = Room(id="r", room_type="kitchen", label="K", floor_polygon=((0, 0), (3, 0), (3, 2)))
    assert room.area == pytest.approx(3.0)


def test_scene_rejects_duplicate_object_ids_across_rooms() -> None:
    r1 = Room(id="a", room_type="kitchen", label="K", objects=(_obj("x"),))
    r2 = Room(id="b", room_type="bedroom", label="B", objects=(_obj("x"),))
    with pytest.raises(SceneFormatError) as info:
        Scene(id="s", source="t", rooms=(r1, r2))
    assert str(info.value) == "object 'x': field 'id': duplicate id"


def test_scene_rejects_door_to_unknown_room() -> None:
    room = Room(id="a", room_type="kitchen", label="K")
    door = Door(id="d", room_ids=("a", "zz"), segment=((0, 0), (1, 0)))
    with pytest.raises(SceneFormatError, match="unknown room 'zz'"):
        Scene(id="s", source="t", rooms=(room,), doors=(door,))


def test_door_width_and_exterior() -> None:
    door = Door(id="d", room_ids=("a",), segment=((0.0, 0.0), (0.0, 0.9)))
    assert door.width == pytest.approx(0.9)
    assert door.is_exterior
    with pytest.raises(SceneFormatError, match="segment"):
        Door(id="d", room_ids=("a",), segment=((0.0, 0.0), (0.0, 0.0)))


def test_scene_lookups() -> None:
    room = Room(id="a", room_type="kitchen", label="K", objects=(_obj("x"), _obj("y")))
    scene = Scene(id="s", source="t", rooms=(room,))
    assert scene.object("y").id == "y"
    assert scene.room_of("x").id == "a"
    assert [o.id for o in scene.objects()] == ["x", "y"]
    assert scene.is_single_room


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("CoffeeTable", "coffee table"),
        ("TVStand", "tv stand"),
        ("HousePlant", "house plant"),
        ("Dog_Bed", "dog bed"),
        ("chest_of_drawers", "chest of drawers"),
        ("shower#curtain", "shower curtain"),
    ],
)
def test_normalize_category(raw: str, expected: str) -> None:
    assert normalize_category(raw) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("LivingRoom", "living room"),
        ("Kitchen", "kitchen"),
        ("corridor", "hallway"),
        ("home_office", "office"),
        ("dining_room", "dining room"),
    ],
)
def test_normalize_room_type(raw: str, expected: str) -> None:
    assert normalize_room_type(raw) == expected
