"""CondVLN's own versioned scene JSON: exact export → load round trip.

The document is ``{"format": "condvln.scene", "schema_version": 1, "scene": {...}}``. Floats are
written in their shortest round-trip form, so ``scene_from_dict(scene_to_dict(s)) == s`` exactly,
and keys are sorted, so one scene always gives the same bytes.

>>> from condvln.scene.model import Room, Scene, SceneObject
>>> s = Scene(id="demo", source="manual", rooms=(Room(id="r0", room_type="kitchen",
...     label="Kitchen", objects=(SceneObject(id="o1", category="cup", label="Cup",
...     center=(0.1, 0.9, -0.3), size=(0.1, 0.1, 0.1)),)),))
>>> scene_from_dict(scene_to_dict(s)) == s
True
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from condvln.errors import SceneFormatError
from condvln.io import atomic_write_bytes, dumps_json, json_depth_exceeds, read_json
from condvln.scene.model import AABB, Door, Room, Scene, SceneObject

FORMAT_NAME = "condvln.scene"
METADATA_DEPTH = 32
"""Deepest nesting accepted in a scene's ``metadata`` (it must be written back as JSON)."""
SCHEMA_VERSION = 1


def scene_to_dict(scene: Scene) -> dict[str, Any]:
    """The JSON document for ``scene``."""
    return {
        "format": FORMAT_NAME,
        "schema_version": SCHEMA_VERSION,
        "scene": {
            "id": scene.id,
            "source": scene.source,
            "metadata": dict(scene.metadata),
            "rooms": [_room_to_dict(r) for r in scene.rooms],
            "doors": [
                {
                    "id": d.id,
                    "room_ids": list(d.room_ids),
                    "segment": [list(d.segment[0]), list(d.segment[1])],
                    "kind": d.kind,
                }
                for d in scene.doors
            ],
        },
    }


def _room_to_dict(room: Room) -> dict[str, Any]:
    return {
        "id": room.id,
        "room_type": room.room_type,
        "label": room.label,
        "floor_polygon": None
        if room.floor_polygon is None
        else [list(p) for p in room.floor_polygon],
        "floor_height": room.floor_height,
        "ceiling_height": room.ceiling_height,
        "objects": [_object_to_dict(o) for o in room.objects],
    }


def _object_to_dict(obj: SceneObject) -> dict[str, Any]:
    return {
        "id": obj.id,
        "category": obj.category,
        "label": obj.label,
        "center": list(obj.center),
        "size": None if obj.size is None else list(obj.size),
        "aabb": None
        if obj.aabb is None
        else {"min": list(obj.aabb.min), "max": list(obj.aabb.max)},
        "radius": obj.radius,
        "yaw": obj.yaw,
        "parent_id": obj.parent_id,
        "placement": obj.placement,
    }


def _field(record: Mapping[str, Any], key: str, where: str) -> Any:
    if not isinstance(record, Mapping):
        raise SceneFormatError(f"must be an object, got {type(record).__name__}", record=where)
    if key not in record:
        raise SceneFormatError("missing", record=where, field=key)
    return record[key]


def _list(value: Any, where: str, key: str) -> list[Any]:
    if not isinstance(value, list):
        raise SceneFormatError(
            f"must be a list, got {type(value).__name__}", record=where, field=key
        )
    return value


def scene_from_dict(doc: Mapping[str, Any]) -> Scene:
    """Build a :class:`Scene` from a document written by :func:`scene_to_dict`."""
    if not isinstance(doc, Mapping) or doc.get("format") != FORMAT_NAME:
        raise SceneFormatError(f"not a {FORMAT_NAME} document", record="document", field="format")
    version = doc.get("schema_version")
    if version != SCHEMA_VERSION:
        raise SceneFormatError(
            f"unsupported schema version {version!r} (this CondVLN reads {SCHEMA_VERSION})",
            record="document",
            field="schema_version",
        )
    body = _field(doc, "scene", "document")
    rooms = tuple(
        _room_from_dict(r, i)
        for i, r in enumerate(_list(_field(body, "rooms", "scene"), "scene", "rooms"))
    )
    doors = tuple(
        _door_from_dict(d, i)
        for i, d in enumerate(_list(_field(body, "doors", "scene"), "scene", "doors"))
    )
    metadata = body.get("metadata") or {}
    if not isinstance(metadata, Mapping):
        raise SceneFormatError(
            f"must be an object, got {type(metadata).__name__}", record="scene", field="metadata"
        )
    if json_depth_exceeds(metadata, METADATA_DEPTH):
        raise SceneFormatError(
            f"nested deeper than {METADATA_DEPTH} levels", record="scene", field="metadata"
        )
    return Scene(
        id=_field(body, "id", "scene"),
        source=_field(body, "source", "scene"),
        rooms=rooms,
        doors=doors,
        metadata=metadata,
    )


def _room_from_dict(raw: Any, index: int) -> Room:
    where = f"rooms[{index}]"
    objects = tuple(
        _object_from_dict(o, f"{where}.objects[{j}]")
        for j, o in enumerate(_list(_field(raw, "objects", where), where, "objects"))
    )
    polygon = _field(raw, "floor_polygon", where)
    return Room(
        id=_field(raw, "id", where),
        room_type=_field(raw, "room_type", where),
        label=_field(raw, "label", where),
        objects=objects,
        floor_polygon=None
        if polygon is None
        else tuple(
            tuple(_list(p, where, "floor_polygon")) for p in _list(polygon, where, "floor_polygon")
        ),
        floor_height=_field(raw, "floor_height", where),
        ceiling_height=_field(raw, "ceiling_height", where),
    )


def _object_from_dict(raw: Any, where: str) -> SceneObject:
    aabb_raw = _field(raw, "aabb", where)
    aabb = None
    if aabb_raw is not None:
        aabb = AABB(
            tuple(_list(_field(aabb_raw, "min", f"{where}.aabb"), where, "aabb.min")),  # type: ignore[arg-type]
            tuple(_list(_field(aabb_raw, "max", f"{where}.aabb"), where, "aabb.max")),  # type: ignore[arg-type]
        )
    size = _field(raw, "size", where)
    return SceneObject(
        id=_field(raw, "id", where),
        category=_field(raw, "category", where),
        label=_field(raw, "label", where),
        center=tuple(_list(_field(raw, "center", where), where, "center")),  # type: ignore[arg-type]
        size=None if size is None else tuple(_list(size, where, "size")),  # type: ignore[arg-type]
        aabb=aabb,
        radius=_field(raw, "radius", where),
        yaw=_field(raw, "yaw", where),
        parent_id=_field(raw, "parent_id", where),
        placement=_field(raw, "placement", where),
    )


def _door_from_dict(raw: Any, index: int) -> Door:
    where = f"doors[{index}]"
    segment = _list(_field(raw, "segment", where), where, "segment")
    if len(segment) != 2:
        raise SceneFormatError("must hold two end points", record=where, field="segment")
    return Door(
        id=_field(raw, "id", where),
        room_ids=tuple(_list(_field(raw, "room_ids", where), where, "room_ids")),
        segment=(
            tuple(_list(segment[0], where, "segment")),
            tuple(_list(segment[1], where, "segment")),
        ),  # type: ignore[arg-type]
        kind=_field(raw, "kind", where),
    )


def scene_to_json(scene: Scene) -> bytes:
    """Deterministic JSON bytes of ``scene`` (same scene → same bytes)."""
    return dumps_json(scene_to_dict(scene))


def save_scene(scene: Scene, path: str | os.PathLike[str]) -> None:
    """Write ``scene`` to ``path`` atomically."""
    atomic_write_bytes(path, scene_to_json(scene))


def load_scene(path: str | os.PathLike[str]) -> Scene:
    """Load a scene written by :func:`save_scene`; bad content raises :class:`SceneFormatError`."""
    doc = read_json(path, SceneFormatError)
    try:
        return scene_from_dict(doc)
    except SceneFormatError as exc:
        raise exc.with_file(str(path)) from None
    except (TypeError, ValueError) as exc:
        raise SceneFormatError(f"malformed scene document ({exc})", file=str(path)) from None
