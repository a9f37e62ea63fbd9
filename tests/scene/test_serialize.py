"""CondVLN scene JSON: exact round trip, determinism and one-line errors."""

from __future__ import annotations

import orjson
import pytest

from condvln.errors import SceneFormatError
from condvln.scene.model import AABB, Door, Room, Scene, SceneObject
from condvln.scene.serialize import load_scene, save_scene, scene_from_dict, scene_to_json


def _scene() -> Scene:
    objects = (
        SceneObject(
            id="bed",
            category="bed",
            label="Bed",
            center=(1.1, 0.3, -2.0),
            size=(1.4, 0.6, 2.0),
            yaw=-1.5707963267948966,
            placement="floor",
        ),
        SceneObject(
            id="lamp",
            category="lamp",
            label="Lamp",
            center=(0.1, 0.7, -0.3),
            aabb=AABB((0.0, 0.5, -0.4), (0.2, 0.9, -0.2)),
            parent_id="bed",
        ),
        SceneObject(id="ball", category="ball", label="Ball", center=(2.0, 0.1, -1.0), radius=0.1),
    )
    room = Room(
        id="r0",
        room_type="bedroom",
        label="Bedroom",
        objects=objects,
        floor_polygon=((0.0, 0.0), (4.0, 0.0), (4.0, -3.0), (0.0, -3.0)),
        ceiling_height=2.6,
    )
    other = Room(id="r1", room_type="hallway", label="Hallway")
    door = Door(id="d0", room_ids=("r0", "r1"), segment=((4.0, -1.0), (4.0, -1.9)))
    return Scene(
        id="t/s", source="test", rooms=(room, other), doors=(door,), metadata={"note": "x"}
    )


def test_round_trip_is_exact(tmp_path) -> None:
    scene = _scene()
    path = tmp_path / "s.json"
    save_scene(scene, path)
    assert load_scene(path) == scene
    assert scene_from_dict(orjson.loads(scene_to_json(scene))) == scene


def test_same_scene_same_bytes() -> None:
    assert scene_to_json(_scene()) == scene_to_json(_scene())


@pytest.mark.parametrize(
    ("mutate", "needle"),
    [
        (lambda d: d.update(schema_version=99), "field 'schema_version'"),
        (lambda d: d.pop("format"), "field 'format'"),
        (lambda d: d["scene"]["rooms"][0].pop("objects"), "rooms[0]: field 'objects': missing"),
        (
            lambda d: d["scene"]["rooms"][0]["objects"][0].update(center=[0, None, 1]),
            "object 'bed': field 'center'",
        ),
        (
            lambda d: d["scene"]["rooms"][0]["objects"][0].update(size=[1, -2, 1]),
            "object 'bed': field 'size'",
        ),
        (
            lambda d: d["scene"]["rooms"][0]["objects"][1].update(id="bed"),
            "object 'bed': field 'id': duplicate id",
        ),
    ],
)
def test_bad_documents_give_one_line_errors(tmp_path, mutate, needle) -> None:
    doc = orjson.loads(scene_to_json(_scene()))
    mutate(doc)
    path = tmp_path / "bad.json"
    path.write_bytes(orjson.dumps(doc))
    with pytest.raises(SceneFormatError) as info:
        load_scene(path)
    message = str(info.value)
    assert message.startswith(str(path))
    assert needle in message
    assert "\n" not in message


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (b"", "file is empty"),
        (b'{"format": "condvln.scene", ', "not valid JSON"),
        (b"[1, 2", "not valid JSON"),
    ],
)
def test_unreadable_files(tmp_path, content, needle) -> None:
    path = tmp_path / "x.json"
    path.write_bytes(content)
    with pytest.raises(SceneFormatError, match=needle):
        load_scene(path)


def test_nan_literal_is_reported_by_record_and_field(tmp_path) -> None:
    text = (
        scene_to_json(_scene())
        .decode()
        .replace('"center":[1.1,0.3,-2.0]', '"center":[NaN,0.3,-2.0]')
    )
    assert "NaN" in text
    path = tmp_path / "nan.json"
    path.write_text(text)
    with pytest.raises(SceneFormatError, match=r"object 'bed': field 'center': must be 3 finite"):
        load_scene(path)


def test_directory_and_missing_file(tmp_path) -> None:
    with pytest.raises(SceneFormatError, match="is a directory"):
        load_scene(tmp_path)
    with pytest.raises(SceneFormatError, match="no such file"):
        load_scene(tmp_path / "nope.json")
