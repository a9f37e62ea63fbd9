"""Source ``procthor``: ProcTHOR house JSON files (schema ``0.0.1`` / ``1.0.0``).

A house holds ``rooms`` (floor polygon + room type), ``walls``, ``doors``, ``windows`` and
``objects`` (each with nested ``children`` resting on it), all in AI2-THOR's left-handed Unity
frame with y = 0 at the floor. The adapter maps everything to the Habitat frame with
:func:`~condvln.frames.habitat_from_thor` (``(x, y, z) → (x, y, −z)``, yaw → −yaw):

* rooms keep their ids; floor polygons become ``(x, −z)`` points, re-ordered counter-clockwise
  (the z flip reverses the file's orientation); the ceiling height is the top of the room's walls;
* objects get the size of their asset, rotated by the object's yaw
  (``sx' = |cos ψ|·sx + |sin ψ|·sz``, ``sz' = |sin ψ|·sx + |cos ψ|·sz``) and centred on the
  object's ``position`` (ProcTHOR places floor objects by their box centre; for tilted or
  physics-settled children the box is an approximation). Children get ``parent_id`` and placement
  ``"surface"``; top-level objects standing on the floor get ``"floor"``, wall-mounted types
  above it ``"wall"``, anything else ``None``;
* every top-level object goes to the room whose floor polygon holds its centre (the nearest room
  when it sits on a boundary, e.g. a painting on a wall); its children follow it. Objects farther
  than :data:`BOUNDARY_TOLERANCE` from every room are left out and listed in
  ``scene.metadata["objects_outside_rooms"]``;
* each door becomes a :class:`~condvln.scene.model.Door` spanning its hole: the bottom edge of its
  ``wall0`` polygon, from the wall's first point, between the x-range of ``holePolygon``
  (``boundingBox`` in schema 0.0.1; ProcTHOR measures both from ``wall0.polygon[0]``); an
  exterior door names one room. Walls marked ``"empty"`` (open boundaries, listed once per side)
  become one ``kind="opening"`` door each, spanning the wall. Windows are not doors.

Object sizes come from :data:`ASSET_TABLE`, shipped with the package: every asset of the ProcTHOR
asset database (PyPI ``procthor==0.0.1.dev2``, ``procthor/databases/asset-database.json``,
Apache-2.0, Allen Institute for AI) reduced to ``assetId → {objectType, size}``; its ``_source``
entry records the provenance.

The field helpers (:func:`as_mapping`, :func:`as_vec3`, …) are shared with the ``ithor`` source.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from condvln.errors import SceneFormatError
from condvln.frames import habitat_from_thor, habitat_yaw_from_thor
from condvln.io import LIMITS, read_json
from condvln.scene.labels import normalize_category, normalize_room_type
from condvln.scene.model import Door, Point2, Room, Scene, SceneObject, Vec3, polygon_area
from condvln.scene.sources import SceneSource

ASSET_TABLE = "procthor_asset_sizes.json"
"""Packaged asset-size table (file name inside ``condvln/data``)."""

WALL_MOUNTED = frozenset({"Painting", "Television", "LightSwitch", "Mirror"})
"""Object types that hang on a wall when they are not standing on the floor."""

FLOOR_TOLERANCE = 0.05
"""An object whose box bottom is at most this high (m) stands on the floor."""

BOUNDARY_TOLERANCE = 0.25
"""Objects within this distance (m) of a room's outline belong to the nearest such room."""


# --- field helpers (shared with the ithor source) ------------------------------------------------


def get_field(record_data: Mapping[str, Any], key: str, record: str) -> Any:
    """``record_data[key]``, or a :class:`SceneFormatError` when the key is missing or null."""
    value = record_data.get(key)
    if value is None:
        raise SceneFormatError("missing", record=record, field=key)
    return value


def as_mapping(value: Any, record: str, field: str) -> Mapping[str, Any]:
    """``value`` if it is a JSON object, else a :class:`SceneFormatError`."""
    if not isinstance(value, Mapping):
        raise SceneFormatError(
            f"must be an object, got {type(value).__name__}", record=record, field=field
        )
    return value


def as_list(value: Any, record: str, field: str) -> list[Any]:
    """``value`` if it is a JSON array, else a :class:`SceneFormatError`."""
    if not isinstance(value, list):
        raise SceneFormatError(
            f"must be a list, got {type(value).__name__}", record=record, field=field
        )
    return value


def as_text(value: Any, record: str, field: str) -> str:
    """``value`` if it is a non-empty string, else a :class:`SceneFormatError`."""
    if not isinstance(value, str) or not value:
        raise SceneFormatError(
            f"must be a non-empty string, got {value!r}", record=record, field=field
        )
    return value


def as_number(value: Any, record: str, field: str) -> float:
    """``value`` as a float if it is a finite JSON number (not a string, bool or null).

    >>> as_number(2, "object 'a'", "position.x")
    2.0
    >>> as_number("nan", "object 'a'", "position.x")
    Traceback (most recent call last):
    ...
    condvln.errors.SceneFormatError: object 'a': field 'position.x': must be a finite number, got 'nan'
    """
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise SceneFormatError(
            f"must be a finite number, got {value!r}"[:200], record=record, field=field
        )
    if abs(value) > LIMITS.max_coordinate:
        raise SceneFormatError(
            f"must be within ±{LIMITS.max_coordinate:g}, got {value!r}"[:200],
            record=record,
            field=field,
        )
    return float(value)


def as_vec3(value: Any, record: str, field: str) -> Vec3:
    """An ``{"x", "y", "z"}`` JSON object as a tuple of three finite floats (THOR frame)."""
    mapping = as_mapping(value, record, field)
    return (
        as_number(mapping.get("x"), record, f"{field}.x"),
        as_number(mapping.get("y"), record, f"{field}.y"),
        as_number(mapping.get("z"), record, f"{field}.z"),
    )


# --- asset sizes ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AssetSize:
    """An asset's object type and its unrotated bounding-box size (x, y, z) in metres."""

    object_type: str
    size: Vec3


def parse_asset_sizes(table: Any) -> dict[str, AssetSize]:
    """Validate an ``assetId → {"objectType", "size": [x, y, z]}`` table (``_``-keys skipped)."""
    entries = as_mapping(table, "asset table", "assets")
    out: dict[str, AssetSize] = {}
    for asset_id, entry in entries.items():
        if asset_id.startswith("_"):
            continue
        record = f"asset {asset_id!r}"
        data = as_mapping(entry, record, "entry")
        size = tuple(
            as_number(v, record, "size") for v in as_list(data.get("size"), record, "size")
        )
        if len(size) != 3 or min(size) <= 0.0:
            raise SceneFormatError(
                f"must be 3 positive numbers, got {list(size)}", record=record, field="size"
            )
        object_type = as_text(data.get("objectType"), record, "objectType")
        out[asset_id] = AssetSize(object_type, size)  # type: ignore[arg-type]
    return out


def read_asset_sizes(path: str | Path) -> dict[str, AssetSize]:
    """Read and validate an asset-size table file (same layout as :data:`ASSET_TABLE`)."""
    try:
        return parse_asset_sizes(read_json(path, SceneFormatError))
    except SceneFormatError as exc:
        raise exc.with_file(str(path)) from None


@functools.cache
def packaged_asset_sizes() -> dict[str, AssetSize]:
    """The asset-size table shipped with CondVLN (parsed once per process)."""
    with resources.as_file(resources.files("condvln").joinpath("data", ASSET_TABLE)) as path:
        return read_asset_sizes(path)


def rotated_size(size: Sequence[float], yaw_degrees: float) -> Vec3:
    """World-aligned extent of a box of local ``size`` turned by ``yaw_degrees`` about +Y.

    >>> [round(v, 6) for v in rotated_size((2.0, 1.0, 0.5), 90.0)]
    [0.5, 1.0, 2.0]
    """
    c = abs(math.cos(math.radians(yaw_degrees)))
    s = abs(math.sin(math.radians(yaw_degrees)))
    sx, sy, sz = size
    return (c * sx + s * sz, sy, s * sx + c * sz)


# --- walls, doors and openings -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Wall:
    room_id: str
    start: Point2  # bottom edge, THOR (x, z), in polygon order
    end: Point2
    top: float
    empty: bool


def _wall(raw: Any, index: int) -> tuple[str, _Wall]:
    data = as_mapping(raw, f"wall #{index}", "wall")
    wall_id = as_text(data.get("id"), f"wall #{index}", "id")
    record = f"wall {wall_id!r}"
    points = [
        as_vec3(p, record, "polygon")
        for p in as_list(get_field(data, "polygon", record), record, "polygon")
    ]
    if len(points) < 3:
        raise SceneFormatError("needs at least 3 points", record=record, field="polygon")
    low = min(p[1] for p in points)
    bottom = list(dict.fromkeys((p[0], p[2]) for p in points if p[1] <= low + 1e-6))
    if len(bottom) != 2:
        raise SceneFormatError(
            "needs exactly two distinct bottom points", record=record, field="polygon"
        )
    room_id = as_text(data.get("roomId"), record, "roomId")
    top = max(p[1] for p in points)
    return wall_id, _Wall(room_id, bottom[0], bottom[1], top, data.get("empty") is True)


def _to_habitat_xz(p: Point2) -> Point2:
    return (p[0], -p[1])


def _hole_range(data: Mapping[str, Any], record: str) -> tuple[float, float, str]:
    """The door's x-range along its wall and the field it came from.

    Schema 1.0.0 gives ``holePolygon``; schema 0.0.1 gives the door asset's ``boundingBox``
    instead (shifted by the asset's offset, a few millimetres).
    """
    if "holePolygon" not in data and "boundingBox" in data:
        box = as_mapping(data["boundingBox"], record, "boundingBox")
        corners, field = [box.get("min"), box.get("max")], "boundingBox"
    else:
        field = "holePolygon"
        corners = as_list(get_field(data, field, record), record, field)
    if len(corners) < 2:
        raise SceneFormatError("needs two corner points", record=record, field=field)
    xs = [as_vec3(p, record, field)[0] for p in corners]
    return min(xs), max(xs), field


def _door(raw: Any, index: int, walls: Mapping[str, _Wall]) -> Door:
    data = as_mapping(raw, f"door #{index}", "door")
    door_id = as_text(data.get("id"), f"door #{index}", "id")
    record = f"door {door_id!r}"
    wall_id = as_text(data.get("wall0"), record, "wall0")
    wall = walls.get(wall_id)
    if wall is None:
        raise SceneFormatError(f"names unknown wall {wall_id!r}", record=record, field="wall0")
    lo, hi, field = _hole_range(data, record)
    length = math.dist(wall.start, wall.end)
    if lo < -1e-3 or hi > length + 1e-3:
        raise SceneFormatError(
            f"hole {lo:.3f}..{hi:.3f} m lies outside the {length:.3f} m wall {wall_id!r}",
            record=record,
            field=field,
        )
    ux, uz = ((e - s) / length for s, e in zip(wall.start, wall.end, strict=True))
    a = (wall.start[0] + ux * lo, wall.start[1] + uz * lo)
    b = (wall.start[0] + ux * hi, wall.start[1] + uz * hi)
    room0 = as_text(data.get("room0"), record, "room0")
    # An exterior door repeats room0 as room1 (schema 0.0.1 files may leave room1 null).
    room1 = room0 if data.get("room1") is None else as_text(data["room1"], record, "room1")
    rooms = (room0,) if room0 == room1 else (room0, room1)
    return Door(door_id, rooms, (_to_habitat_xz(a), _to_habitat_xz(b)), kind="door")


def _segment_key(wall: _Wall) -> tuple[Point2, ...]:
    return tuple(sorted((round(p[0], 3), round(p[1], 3)) for p in (wall.start, wall.end)))


def _openings(walls: Mapping[str, _Wall]) -> list[Door]:
    """One ``opening`` per wall segment marked empty (the file lists it once per side)."""
    groups: dict[tuple[Point2, ...], list[_Wall]] = {}
    for wall in walls.values():
        if wall.empty and wall.room_id != "exterior":
            groups.setdefault(_segment_key(wall), []).append(wall)
    doors = []
    for (p, q), sides in groups.items():
        rooms = tuple(dict.fromkeys(w.room_id for w in sides))
        segment = (_to_habitat_xz(sides[0].start), _to_habitat_xz(sides[0].end))
        doors.append(
            Door(
                f"opening|{p[0]:.2f}|{p[1]:.2f}|{q[0]:.2f}|{q[1]:.2f}",
                rooms,
                segment,
                kind="opening",
            )
        )
    return doors


# --- rooms ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _RoomSpec:
    id: str
    label: str
    polygon: tuple[Point2, ...]


def _room_spec(raw: Any, index: int) -> _RoomSpec:
    data = as_mapping(raw, f"room #{index}", "room")
    room_id = as_text(data.get("id"), f"room #{index}", "id")
    record = f"room {room_id!r}"
    label = as_text(data.get("roomType"), record, "roomType")
    raw_points = as_list(get_field(data, "floorPolygon", record), record, "floorPolygon")
    points = [as_vec3(p, record, "floorPolygon") for p in raw_points]
    polygon = [_to_habitat_xz((p[0], p[2])) for p in points]
    if polygon_area(polygon) < 0.0:
        polygon.reverse()
    return _RoomSpec(room_id, label, tuple(polygon))


def _contains(polygon: Sequence[Point2], point: Point2) -> bool:
    """Even-odd rule point-in-polygon test."""
    x, z = point
    inside = False
    for (x0, z0), (x1, z1) in zip(polygon, [*polygon[1:], polygon[0]], strict=True):
        if (z0 > z) != (z1 > z) and x < x0 + (z - z0) * (x1 - x0) / (z1 - z0):
            inside = not inside
    return inside


def _distance_to_outline(polygon: Sequence[Point2], point: Point2) -> float:
    best = math.inf
    for a, b in zip(polygon, [*polygon[1:], polygon[0]], strict=True):
        dx, dz = b[0] - a[0], b[1] - a[1]
        length2 = dx * dx + dz * dz
        t = 0.0 if length2 == 0.0 else ((point[0] - a[0]) * dx + (point[1] - a[1]) * dz) / length2
        t = min(1.0, max(0.0, t))
        best = min(best, math.dist(point, (a[0] + t * dx, a[1] + t * dz)))
    return best


def _room_of(point: Point2, rooms: Sequence[_RoomSpec]) -> str | None:
    """Id of the room holding ``point``, else of the nearest one within the tolerance."""
    for room in rooms:
        if _contains(room.polygon, point):
            return room.id
    distance, room_id = min((_distance_to_outline(r.polygon, point), r.id) for r in rooms)
    return room_id if distance <= BOUNDARY_TOLERANCE else None


# --- objects -------------------------------------------------------------------------------------


def _placement(object_type: str, center_y: float, height: float) -> str | None:
    if center_y - 0.5 * height <= FLOOR_TOLERANCE:
        return "floor"
    return "wall" if object_type in WALL_MOUNTED else None


def _object_tree(
    raw: Any,
    record: str,
    sizes: Mapping[str, AssetSize],
    parent_id: str | None,
    out: list[SceneObject],
) -> None:
    """Append the object described by ``raw`` and, recursively, its children to ``out``."""
    data = as_mapping(raw, record, "object")
    object_id = as_text(data.get("id"), record, "id")
    record = f"object {object_id!r}"
    asset_id = as_text(data.get("assetId"), record, "assetId")
    asset = sizes.get(asset_id)
    if asset is None:
        raise SceneFormatError(f"unknown asset {asset_id!r}", record=record, field="assetId")
    position = as_vec3(get_field(data, "position", record), record, "position")
    rotation = data.get("rotation")
    yaw = 0.0 if rotation is None else as_vec3(rotation, record, "rotation")[1]
    size = rotated_size(asset.size, yaw)
    placement = "surface" if parent_id else _placement(asset.object_type, position[1], size[1])
    out.append(
        SceneObject(
            id=object_id,
            category=normalize_category(asset.object_type),
            label=asset.object_type,
            center=habitat_from_thor(position),
            size=size,
            yaw=habitat_yaw_from_thor(yaw),
            parent_id=parent_id,
            placement=placement,
        )
    )
    children = data.get("children") or []
    for i, child in enumerate(as_list(children, record, "children")):
        _object_tree(child, f"child #{i} of {record}", sizes, object_id, out)


def _assign_objects(
    raw_objects: list[Any], sizes: Mapping[str, AssetSize], rooms: Sequence[_RoomSpec]
) -> tuple[dict[str, list[SceneObject]], list[str]]:
    """Objects per room id (children follow their top-level object) and the ids left outside."""
    by_room: dict[str, list[SceneObject]] = {room.id: [] for room in rooms}
    outside: list[str] = []
    seen: set[str] = set()
    for i, raw in enumerate(raw_objects):
        tree: list[SceneObject] = []
        _object_tree(raw, f"object #{i}", sizes, None, tree)
        for obj in tree:
            if obj.id in seen:
                raise SceneFormatError("duplicate id", record=f"object {obj.id!r}", field="id")
            seen.add(obj.id)
        room_id = _room_of((tree[0].center[0], tree[0].center[2]), rooms)
        if room_id is None:
            outside.extend(obj.id for obj in tree)
        else:
            by_room[room_id].extend(tree)
    return by_room, outside


# --- house ---------------------------------------------------------------------------------------


def _optional_list(house: Mapping[str, Any], key: str) -> list[Any]:
    value = house.get(key)
    return [] if value is None else as_list(value, "house", key)


def _wall_tops(walls: Mapping[str, _Wall]) -> dict[str, float]:
    """Highest wall top per room id: the room's ceiling height above the floor (y = 0)."""
    tops: dict[str, float] = {}
    for wall in walls.values():
        tops[wall.room_id] = max(tops.get(wall.room_id, 0.0), wall.top)
    return tops


def _house_info(house: Mapping[str, Any]) -> dict[str, str | None]:
    """The house's schema version and room-spec id, when the file states them."""
    meta = house.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    return {
        "schema": meta.get("schema") if isinstance(meta.get("schema"), str) else None,
        "room_spec_id": meta.get("roomSpecId") if isinstance(meta.get("roomSpecId"), str) else None,
    }


def house_to_scene(house: Any, scene_id: str, sizes: Mapping[str, AssetSize]) -> Scene:
    """Build a :class:`Scene` from a parsed ProcTHOR house dictionary.

    Args:
        house: The parsed house JSON.
        scene_id: Id of the resulting scene.
        sizes: Asset-size table (see :func:`packaged_asset_sizes`).

    Returns:
        The scene in the Habitat frame.

    Raises:
        SceneFormatError: naming the record and field of the first problem (no file name).
    """
    data = as_mapping(house, "house", "house")
    specs = [
        _room_spec(r, i)
        for i, r in enumerate(as_list(get_field(data, "rooms", "house"), "house", "rooms"))
    ]
    if not specs:
        raise SceneFormatError("a house needs at least one room", record="house", field="rooms")
    walls = dict(_wall(w, i) for i, w in enumerate(_optional_list(data, "walls")))
    by_room, outside = _assign_objects(_optional_list(data, "objects"), sizes, specs)
    tops = _wall_tops(walls)
    rooms = [
        Room(
            id=spec.id,
            room_type=normalize_room_type(spec.label),
            label=spec.label,
            objects=tuple(by_room[spec.id]),
            floor_polygon=spec.polygon,
            ceiling_height=tops.get(spec.id) or None,
        )
        for spec in specs
    ]
    doors = [_door(d, i, walls) for i, d in enumerate(_optional_list(data, "doors"))]
    metadata = {**_house_info(data), "objects_outside_rooms": outside}
    return Scene(scene_id, "procthor", tuple(rooms), tuple(doors + _openings(walls)), metadata)


def load(reference: str, asset_sizes: str | None = None) -> Scene:
    """Load a ProcTHOR house JSON file as a :class:`Scene` with id ``procthor/<file stem>``.

    Args:
        reference: Path to the house ``.json`` (or ``.json.gz``) file.
        asset_sizes: Optional path to an alternative asset-size table (same layout as the
            packaged :data:`ASSET_TABLE`), e.g. for houses built from newer asset databases.

    Returns:
        The house as a scene in the Habitat frame.

    Raises:
        SceneFormatError: a one-line message naming the file, record and field.
    """
    path = Path(reference)
    sizes = packaged_asset_sizes() if asset_sizes is None else read_asset_sizes(asset_sizes)
    house = read_json(path, SceneFormatError)
    stem = path.name.removesuffix(".gz").removesuffix(".json")
    try:
        return house_to_scene(house, f"procthor/{stem}", sizes)
    except SceneFormatError as exc:
        raise exc.with_file(str(path)) from None


SOURCE = SceneSource(
    name="procthor",
    description="ProcTHOR house JSON (rooms, objects with children, doors; AI2-THOR frame)",
    reference="path to a ProcTHOR house .json file",
    load=load,
)
