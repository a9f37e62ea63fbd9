"""Source ``ithor``: single-room iTHOR scenes from AI2-THOR object metadata.

The input is ``event.metadata["objects"]`` — a list of object dictionaries — in one of three
forms (see :func:`load`): a JSON file with one scene's objects, a multi-scene file
``{"scenes": {name: [objects]}}`` (full records or the compact ``aabb_center``/``aabb_size``
subset), or a bare iTHOR scene name read from the 120 iTHOR rooms in
``procthor/databases/ai2thor-object-metadata.json`` of the ``procthor`` package (a dependency
of CondVLN; the JSON is read as data, the package is never imported).

Each scene becomes one room. Its floor polygon is the rectangle of the ``Floor`` object's
axis-aligned box and its floor height the top of that box; the room type comes from the scene
number (FloorPlan1–30 kitchen, 201–230 living room, 301–330 bedroom, 401–430 bathroom), else from
tell-tale objects (toilet → bathroom, stove → kitchen, bed → bedroom, sofa → living room), else
``"room"``. Every object except the ``Floor`` is kept (windows, light switches and other fixtures
included); its box is ``axisAlignedBoundingBox`` mapped to Habitat (centre ``z`` negated, size
unchanged) — ``position`` is only the pivot. Real boxes can be flat on one axis (the shelves of
FloorPlan302 and FloorPlan306 have size z = 0); that is kept as is. ``parent_id`` is the first
receptacle in ``parentReceptacles`` other than the floor; placement is ``"surface"`` with such a
parent, ``"floor"`` when the floor is the only receptacle, else ``None``.

RoboTHOR apartments (``FloorPlan_Train*``, ``FloorPlan_Val*``, …, or any object list without a
``Floor``) have no room or floor annotations and are rejected rather than guessed.
"""

from __future__ import annotations

import functools
import importlib.util
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from condvln.errors import ConfigError, SceneFormatError
from condvln.frames import habitat_from_thor, habitat_yaw_from_thor
from condvln.io import read_json
from condvln.scene.labels import normalize_category, normalize_room_type
from condvln.scene.model import AABB, Room, Scene, SceneObject
from condvln.scene.sources import SceneSource
from condvln.scene.sources.procthor import as_list, as_mapping, as_text, as_vec3

ITHOR_NAME = re.compile(r"FloorPlan(\d+)")
ROBOTHOR_NAME = re.compile(r"FloorPlan_[A-Za-z]+\d+_\d+")
ROBOTHOR_MESSAGE = (
    "RoboTHOR apartments have no room or floor annotations; CondVLN does not guess them"
)

ROOM_KINDS: tuple[tuple[str, int, str], ...] = (
    ("Kitchen", 1, "kitchens"),
    ("LivingRoom", 201, "living_rooms"),
    ("Bedroom", 301, "bedrooms"),
    ("Bathroom", 401, "bathrooms"),
)
"""(room type label, first scene number, key in the procthor metadata file); 30 scenes each."""

SCENES_PER_KIND = 30

ROOM_MARKERS: tuple[tuple[str, frozenset[str]], ...] = (
    ("Bathroom", frozenset({"Toilet", "ShowerHead", "Bathtub"})),
    ("Kitchen", frozenset({"StoveBurner", "Fridge", "Microwave"})),
    ("Bedroom", frozenset({"Bed"})),
    ("LivingRoom", frozenset({"Sofa"})),
)
"""Object types that give away the room type of an unnamed scene, checked in this order."""

METADATA_FILE = ("databases", "ai2thor-object-metadata.json")


# --- scene names and the procthor metadata file --------------------------------------------------


def _scene_slot(name: str) -> tuple[str, str, int] | None:
    """(room label, metadata key, list index) of an iTHOR scene name, or None if unknown."""
    match = ITHOR_NAME.fullmatch(name)
    if match is None:
        return None
    number = int(match.group(1))
    for label, first, key in ROOM_KINDS:
        if first <= number < first + SCENES_PER_KIND:
            return label, key, number - first
    return None


def ithor_scene_names() -> list[str]:
    """The 120 iTHOR scene names, kitchens first.

    >>> names = ithor_scene_names()
    >>> len(names), names[0], names[30], names[-1]
    (120, 'FloorPlan1', 'FloorPlan201', 'FloorPlan430')
    """
    return [f"FloorPlan{first + i}" for _, first, _ in ROOM_KINDS for i in range(SCENES_PER_KIND)]


def metadata_path() -> Path:
    """Location of ``ai2thor-object-metadata.json`` in the installed ``procthor`` package.

    Raises:
        ConfigError: when the package is not installed.
    """
    spec = importlib.util.find_spec("procthor")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(
            "iTHOR scene names are read from the procthor package's metadata: "
            'pip install "procthor>=0.0.1.dev2"'
        )
    return Path(next(iter(spec.submodule_search_locations))).joinpath(*METADATA_FILE)


@functools.cache
def _metadata() -> tuple[Path, Mapping[str, Any]]:
    path = metadata_path()
    data = read_json(path, SceneFormatError)
    if not isinstance(data, Mapping):
        raise SceneFormatError("must be an object of scene lists", file=str(path))
    return path, data


def _database_scene(name: str) -> tuple[Any, str]:
    """The object list of a named iTHOR scene and the file it came from."""
    if ROBOTHOR_NAME.fullmatch(name):
        raise SceneFormatError(ROBOTHOR_MESSAGE, record=f"scene {name!r}")
    slot = _scene_slot(name)
    if slot is None:
        raise ConfigError(
            f"unknown iTHOR scene {name!r} (known: FloorPlan1-30, FloorPlan201-230, "
            "FloorPlan301-330, FloorPlan401-430)"
        )
    _, key, index = slot
    path, data = _metadata()
    try:
        scenes = as_list(data.get(key), f"scene {name!r}", key)
        if index >= len(scenes):
            raise SceneFormatError(f"holds {len(scenes)} scenes, {name!r} is missing", field=key)
    except SceneFormatError as exc:
        raise exc.with_file(str(path)) from None
    return scenes[index], str(path)


# --- files ---------------------------------------------------------------------------------------


def _split_reference(reference: str, scene: str | None) -> tuple[Path | None, str | None]:
    """(file path or None for a bare scene name, scene name or None)."""
    if "#" in reference and not Path(reference).exists():
        reference, fragment = reference.rsplit("#", 1)
        scene = scene or fragment
    if not Path(reference).exists() and (
        ITHOR_NAME.fullmatch(reference) or ROBOTHOR_NAME.fullmatch(reference)
    ):
        return None, reference
    return Path(reference), scene


def _file_scene(path: Path, name: str | None) -> tuple[Any, str]:
    """The object list of the chosen scene in ``path`` and the scene's name."""
    data = read_json(path, SceneFormatError)
    if isinstance(data, Mapping) and "scenes" in data:
        scenes = data["scenes"]
        if not isinstance(scenes, Mapping):
            raise SceneFormatError(
                "must be an object {name: [objects]}", file=str(path), field="scenes"
            )
        known = ", ".join(scenes)
        if name is None:
            raise SceneFormatError(
                f"holds {len(scenes)} scenes; choose one with scene=NAME or PATH#NAME ({known})",
                file=str(path),
            )
        if name not in scenes:
            raise SceneFormatError(
                f"no such scene in this file (known: {known})",
                file=str(path),
                record=f"scene {name!r}",
            )
        return scenes[name], name
    objects = data.get("objects") if isinstance(data, Mapping) else data
    return objects, name or path.name.removesuffix(".gz").removesuffix(".json")


# --- objects -> scene ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _ThorObject:
    id: str
    object_type: str
    box: AABB  # Habitat frame
    yaw: float  # Habitat radians
    receptacles: tuple[str, ...]


def _box(data: Mapping[str, Any], record: str) -> AABB:
    if "axisAlignedBoundingBox" in data:
        box = as_mapping(data["axisAlignedBoundingBox"], record, "axisAlignedBoundingBox")
        center = as_vec3(box.get("center"), record, "axisAlignedBoundingBox.center")
        size_field = "axisAlignedBoundingBox.size"
        size = as_vec3(box.get("size"), record, size_field)
    elif "aabb_center" in data:
        center = as_vec3(data["aabb_center"], record, "aabb_center")
        size_field = "aabb_size"
        size = as_vec3(data.get("aabb_size"), record, size_field)
    else:
        raise SceneFormatError("missing", record=record, field="axisAlignedBoundingBox")
    if min(size) < 0.0:
        raise SceneFormatError(
            f"must be >= 0 on every axis, got {list(size)}", record=record, field=size_field
        )
    cx, cy, cz = habitat_from_thor(center)
    half = tuple(0.5 * s for s in size)
    return AABB(
        (cx - half[0], cy - half[1], cz - half[2]), (cx + half[0], cy + half[1], cz + half[2])
    )


def _thor_object(raw: Any, index: int) -> _ThorObject:
    data = as_mapping(raw, f"object #{index}", "object")
    object_id = as_text(data.get("objectId"), f"object #{index}", "objectId")
    record = f"object {object_id!r}"
    object_type = as_text(data.get("objectType"), record, "objectType")
    rotation = data.get("rotation")
    yaw = 0.0 if rotation is None else as_vec3(rotation, record, "rotation")[1]
    parents = data.get("parentReceptacles") or []
    receptacles = tuple(
        as_text(p, record, "parentReceptacles")
        for p in as_list(parents, record, "parentReceptacles")
    )
    return _ThorObject(
        object_id, object_type, _box(data, record), habitat_yaw_from_thor(yaw), receptacles
    )


def _scene_object(obj: _ThorObject, floor_id: str) -> SceneObject:
    parents = [p for p in obj.receptacles if p != floor_id]
    parent = parents[0] if parents else None
    placement = "surface" if parent else ("floor" if obj.receptacles else None)
    return SceneObject(
        id=obj.id,
        category=normalize_category(obj.object_type),
        label=obj.object_type,
        center=obj.box.center,
        aabb=obj.box,
        yaw=obj.yaw,
        parent_id=parent,
        placement=placement,
    )


def _room_label(name: str, objects: list[_ThorObject]) -> str:
    slot = _scene_slot(name)
    if slot is not None:
        return slot[0]
    types = {obj.object_type for obj in objects}
    for label, markers in ROOM_MARKERS:
        if types & markers:
            return label
    return "Room"


def objects_to_scene(objects: Any, name: str) -> Scene:
    """Build a one-room :class:`Scene` ``ithor/<name>`` from an AI2-THOR object list.

    Args:
        objects: The list of object-metadata dictionaries of one scene.
        name: Scene name (``"FloorPlan1"``); it fixes the room type when it is an iTHOR name.

    Returns:
        The scene in the Habitat frame.

    Raises:
        SceneFormatError: bad records, a RoboTHOR scene, or no single ``Floor`` object.
    """
    record = f"scene {name!r}"
    if ROBOTHOR_NAME.fullmatch(name):
        raise SceneFormatError(ROBOTHOR_MESSAGE, record=record)
    parsed = [_thor_object(raw, i) for i, raw in enumerate(as_list(objects, record, "objects"))]
    floors = [obj for obj in parsed if obj.object_type == "Floor"]
    if not floors:
        raise SceneFormatError(f"no Floor object: {ROBOTHOR_MESSAGE}", record=record)
    if len(floors) > 1:
        raise SceneFormatError(
            f"expected one Floor object, found {len(floors)}", record=record, field="objects"
        )
    floor = floors[0]
    label = _room_label(name, parsed)
    (x0, _, z0), (x1, top, z1) = floor.box.min, floor.box.max
    room = Room(
        id=name,
        room_type=normalize_room_type(label),
        label=label,
        objects=tuple(_scene_object(obj, floor.id) for obj in parsed if obj is not floor),
        floor_polygon=((x0, z0), (x1, z0), (x1, z1), (x0, z1)),
        floor_height=top,
    )
    return Scene(
        f"ithor/{name}", "ithor", (room,), metadata={"scene": name, "floor_object": floor.id}
    )


def load(reference: str, scene: str | None = None) -> Scene:
    """Load one iTHOR scene as a one-room :class:`Scene`.

    Args:
        reference: One of: a JSON file with one scene's object list (a bare list, or an object
            with an ``"objects"`` list); a multi-scene file ``{"scenes": {name: [objects]}}``,
            optionally as ``PATH#SCENE``; or a bare iTHOR scene name such as ``"FloorPlan201"``
            (read from the ``procthor`` package).
        scene: The scene to take from a multi-scene file (or the name of a single-scene file's
            scene, which fixes its room type); defaults to the ``#SCENE`` part of ``reference``.

    Returns:
        The scene ``ithor/<name>`` in the Habitat frame.

    Raises:
        SceneFormatError: a one-line message naming the file, record and field.
        ConfigError: an unknown scene name, or the ``procthor`` package is missing.
    """
    path, name = _split_reference(reference, scene)
    if path is None:
        objects, file = _database_scene(str(name))
    else:
        objects, name = _file_scene(path, name)
        file = str(path)
    try:
        return objects_to_scene(objects, name)
    except SceneFormatError as exc:
        raise exc.with_file(file) from None


SOURCE = SceneSource(
    name="ithor",
    description="iTHOR rooms from AI2-THOR object metadata (one room per scene)",
    reference="object-metadata .json file ([#SCENE]) or an iTHOR scene name like FloorPlan1",
    load=load,
)
