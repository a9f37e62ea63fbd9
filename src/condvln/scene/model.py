"""The unified scene hierarchy: :class:`Scene` → :class:`Room` → :class:`SceneObject`.

All coordinates are in the Habitat frame (metres, Y up, north = −Z, east = +X). Floor polygons and
door segments live in the ground plane as ``(x, z)`` pairs. Every constructor validates its input
and raises :class:`~condvln.errors.SceneFormatError` naming the record and the field; source
adapters add the file name.

Geometry follows the paper's fallback: an explicit AABB is used directly; otherwise a size gives
the AABB ``centre ± size / 2``; otherwise a radius is the only extent.

>>> lamp = SceneObject(id="lamp_1", category="floor lamp", label="FloorLamp",
...                    center=(1.0, 0.8, -2.0), size=(0.4, 1.6, 0.4))
>>> lamp.box.min, lamp.box.max
((0.8, 0.0, -2.2), (1.2, 1.6, -1.8))
>>> round(lamp.bounding_radius, 4)
0.8485
>>> SceneObject(id="x", category="cup", label="Cup", center=(0.0, float("nan"), 0.0))
Traceback (most recent call last):
...
condvln.errors.SceneFormatError: object 'x': field 'center': must be 3 finite numbers, got (0.0, nan, 0.0)
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from condvln.errors import SceneFormatError
from condvln.io import LIMITS

Vec3 = tuple[float, float, float]
Point2 = tuple[float, float]


def _finite_vector(value: Any, n: int, record: str, field_name: str) -> tuple[float, ...]:
    """Coerce ``value`` to ``n`` finite floats within ±``LIMITS.max_coordinate``, or raise."""
    try:
        out = tuple(float(v) for v in value if not isinstance(v, bool | str))
        ok = len(out) == len(value) == n
    except (TypeError, ValueError, OverflowError):
        ok, out = False, ()
    if not ok or not all(math.isfinite(v) for v in out):
        raise SceneFormatError(
            f"must be {n} finite numbers, got {value!r}"[:200], record=record, field=field_name
        )
    limit = LIMITS.max_coordinate
    if any(abs(v) > limit for v in out):
        raise SceneFormatError(
            f"must be within ±{limit:g} m (no indoor scene is larger), got {value!r}"[:200],
            record=record,
            field=field_name,
        )
    return out


def _nonempty_text(value: Any, record: str, field_name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise SceneFormatError(
            f"must be a non-empty string, got {value!r}", record=record, field=field_name
        )
    return value


@dataclass(frozen=True, slots=True)
class AABB:
    """Axis-aligned box given by its ``min`` and ``max`` corners (``max >= min`` per axis)."""

    min: Vec3
    max: Vec3

    @classmethod
    def from_center_size(cls, center: Sequence[float], size: Sequence[float]) -> AABB:
        """Box of extent ``size`` centred on ``center``."""
        lo = tuple(float(c) - 0.5 * float(s) for c, s in zip(center, size, strict=True))
        hi = tuple(float(c) + 0.5 * float(s) for c, s in zip(center, size, strict=True))
        return cls(lo, hi)  # type: ignore[arg-type]

    @property
    def center(self) -> Vec3:
        """Centre of the box."""
        return tuple(0.5 * (a + b) for a, b in zip(self.min, self.max, strict=True))  # type: ignore[return-value]

    @property
    def size(self) -> Vec3:
        """Extent of the box along x, y, z."""
        return tuple(b - a for a, b in zip(self.min, self.max, strict=True))  # type: ignore[return-value]

    def overlaps(self, other: AABB, tolerance: float = 0.0) -> bool:
        """True when the boxes' interiors intersect by more than ``tolerance`` on every axis."""
        return all(
            min(a_hi, b_hi) - max(a_lo, b_lo) > tolerance
            for a_lo, a_hi, b_lo, b_hi in zip(self.min, self.max, other.min, other.max, strict=True)
        )


@dataclass(frozen=True, slots=True)
class SceneObject:
    """One object instance: identity, semantics and optional geometry.

    Attributes:
        id: Unique within the scene.
        category: Normalised category ("coffee table").
        label: The raw label of the source ("CoffeeTable").
        center: 3D centre in the Habitat frame.
        size: Optional full extent along x, y, z (world-aligned, after any rotation).
        aabb: Optional explicit box; used as is when given.
        radius: Optional bounding radius, the fallback geometry.
        yaw: Heading about +Y in radians (informational; boxes are world-aligned).
        parent_id: Id of the object this one rests on or in (a receptacle), if known.
        placement: How it stands: ``"floor"``, ``"surface"``, ``"wall"`` or ``None`` (unknown).
    """

    id: str
    category: str
    label: str
    center: Vec3
    size: Vec3 | None = None
    aabb: AABB | None = None
    radius: float | None = None
    yaw: float = 0.0
    parent_id: str | None = None
    placement: str | None = None

    def __post_init__(self) -> None:
        record = f"object {self.id!r}"
        _nonempty_text(self.id, record, "id")
        _nonempty_text(self.category, record, "category")
        _nonempty_text(self.label, record, "label")
        object.__setattr__(self, "center", _finite_vector(self.center, 3, record, "center"))
        if self.size is not None:
            size = _finite_vector(self.size, 3, record, "size")
            if min(size) <= 0.0:
                raise SceneFormatError(
                    f"must be positive on every axis, got {size}", record=record, field="size"
                )
            object.__setattr__(self, "size", size)
        if self.aabb is not None:
            lo = _finite_vector(self.aabb.min, 3, record, "aabb.min")
            hi = _finite_vector(self.aabb.max, 3, record, "aabb.max")
            if any(h < low for low, h in zip(lo, hi, strict=True)):
                raise SceneFormatError(
                    f"max must be >= min on every axis, got min {lo} max {hi}",
                    record=record,
                    field="aabb",
                )
            object.__setattr__(self, "aabb", AABB(lo, hi))  # type: ignore[arg-type]
        if self.radius is not None:
            (r,) = _finite_vector((self.radius,), 1, record, "radius")
            if r <= 0.0:
                raise SceneFormatError(
                    f"must be a positive finite number, got {self.radius!r}",
                    record=record,
                    field="radius",
                )
            object.__setattr__(self, "radius", r)
        (yaw,) = _finite_vector((self.yaw,), 1, record, "yaw")
        object.__setattr__(self, "yaw", yaw)

    @property
    def box(self) -> AABB | None:
        """The object's AABB: the explicit one, else ``center ± size / 2``, else ``None``."""
        if self.aabb is not None:
            return self.aabb
        if self.size is not None:
            return AABB.from_center_size(self.center, self.size)
        return None

    @property
    def bounding_radius(self) -> float | None:
        """The given radius, else half the diagonal of the box, else ``None``."""
        if self.radius is not None:
            return self.radius
        box = self.box
        if box is None:
            return None
        return 0.5 * math.sqrt(sum(s * s for s in box.size))


def polygon_area(points: Sequence[Point2]) -> float:
    """Signed area of a ground-plane polygon (shoelace; positive when counter-clockwise in x–z).

    >>> polygon_area([(0, 0), (2, 0), (2, 1), (0, 1)])
    2.0
    """
    total = 0.0
    n = len(points)
    for i in range(n):
        x0, z0 = points[i]
        x1, z1 = points[(i + 1) % n]
        total += x0 * z1 - x1 * z0
    return 0.5 * total


@dataclass(frozen=True, slots=True)
class Room:
    """A room: a normalised type, an optional floor polygon and the objects inside it.

    Attributes:
        id: Unique within the scene.
        room_type: Normalised type ("kitchen", "living room", …).
        label: The raw label of the source.
        objects: Objects assigned to this room.
        floor_polygon: Optional ground-plane outline as ``(x, z)`` points (≥ 3, non-zero area).
        floor_height: Height of the floor (y) in metres.
        ceiling_height: Optional height of the ceiling above the floor.
    """

    id: str
    room_type: str
    label: str
    objects: tuple[SceneObject, ...] = ()
    floor_polygon: tuple[Point2, ...] | None = None
    floor_height: float = 0.0
    ceiling_height: float | None = None

    def __post_init__(self) -> None:
        record = f"room {self.id!r}"
        _nonempty_text(self.id, record, "id")
        _nonempty_text(self.room_type, record, "room_type")
        _nonempty_text(self.label, record, "label")
        object.__setattr__(self, "objects", tuple(self.objects))
        if self.floor_polygon is not None:
            points = tuple(
                _finite_vector(p, 2, record, "floor_polygon") for p in self.floor_polygon
            )
            if len(points) < 3 or abs(polygon_area(points)) <= 1e-9:  # type: ignore[arg-type]
                raise SceneFormatError(
                    "must have at least 3 points and a non-zero area",
                    record=record,
                    field="floor_polygon",
                )
            object.__setattr__(self, "floor_polygon", points)
        (floor,) = _finite_vector((self.floor_height,), 1, record, "floor_height")
        object.__setattr__(self, "floor_height", floor)
        if self.ceiling_height is not None:
            (ceiling,) = _finite_vector((self.ceiling_height,), 1, record, "ceiling_height")
            if ceiling <= 0.0:
                raise SceneFormatError(
                    f"must be positive, got {ceiling}", record=record, field="ceiling_height"
                )
            object.__setattr__(self, "ceiling_height", ceiling)

    @property
    def area(self) -> float | None:
        """Floor area in m² when the room has a polygon."""
        if self.floor_polygon is None:
            return None
        return abs(polygon_area(self.floor_polygon))


@dataclass(frozen=True, slots=True)
class Door:
    """An opening between two rooms (or between a room and the outside).

    Attributes:
        id: Unique within the scene.
        room_ids: The one (exterior door) or two rooms it joins.
        segment: The opening in the ground plane, two ``(x, z)`` end points on the wall.
        kind: ``"door"`` for a doorway, ``"opening"`` for a wall-less boundary.
    """

    id: str
    room_ids: tuple[str, ...]
    segment: tuple[Point2, Point2]
    kind: str = "door"

    def __post_init__(self) -> None:
        record = f"door {self.id!r}"
        _nonempty_text(self.id, record, "id")
        room_ids = tuple(self.room_ids)
        if not 1 <= len(room_ids) <= 2:
            raise SceneFormatError(
                f"must name one or two rooms, got {room_ids!r}", record=record, field="room_ids"
            )
        for rid in room_ids:
            _nonempty_text(rid, record, "room_ids")
        object.__setattr__(self, "room_ids", room_ids)
        pair = isinstance(self.segment, Sequence) and len(self.segment) == 2
        a = _finite_vector(self.segment[0], 2, record, "segment") if pair else ()
        b = _finite_vector(self.segment[1], 2, record, "segment") if pair else ()
        if not a or math.dist(a, b) <= 1e-6:
            raise SceneFormatError(
                "must be two distinct (x, z) end points", record=record, field="segment"
            )
        object.__setattr__(self, "segment", (a, b))
        if self.kind not in ("door", "opening"):
            raise SceneFormatError(
                f"must be 'door' or 'opening', got {self.kind!r}", record=record, field="kind"
            )

    @property
    def width(self) -> float:
        """Length of the opening in metres."""
        return math.dist(self.segment[0], self.segment[1])

    @property
    def is_exterior(self) -> bool:
        """True for a door that leads outside the house (joins a single room)."""
        return len(self.room_ids) == 1


@dataclass(frozen=True, slots=True)
class Scene:
    """A scene: rooms with their objects, and the doors between rooms.

    Attributes:
        id: Scene identifier (e.g. ``"procedural/seed-0007"``).
        source: Name of the source that produced it.
        rooms: The rooms, in source order.
        doors: Door openings.
        metadata: Free JSON-compatible information from the source (never used for labels).
    """

    id: str
    source: str
    rooms: tuple[Room, ...]
    doors: tuple[Door, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        record = f"scene {self.id!r}"
        _nonempty_text(self.id, record, "id")
        _nonempty_text(self.source, record, "source")
        object.__setattr__(self, "rooms", tuple(self.rooms))
        object.__setattr__(self, "doors", tuple(self.doors))
        if not self.rooms:
            raise SceneFormatError("a scene needs at least one room", record=record, field="rooms")
        _require_unique((r.id for r in self.rooms), "room")
        _require_unique((o.id for o in self.objects()), "object")
        _require_unique((d.id for d in self.doors), "door")
        room_ids = {r.id for r in self.rooms}
        for door in self.doors:
            for rid in door.room_ids:
                if rid not in room_ids:
                    raise SceneFormatError(
                        f"names unknown room {rid!r}", record=f"door {door.id!r}", field="room_ids"
                    )

    def objects(self) -> Iterator[SceneObject]:
        """All objects of all rooms, room by room."""
        for room in self.rooms:
            yield from room.objects

    def room(self, room_id: str) -> Room:
        """The room with id ``room_id`` (``KeyError`` if absent)."""
        for room in self.rooms:
            if room.id == room_id:
                return room
        raise KeyError(room_id)

    def room_of(self, object_id: str) -> Room:
        """The room that holds object ``object_id`` (``KeyError`` if absent)."""
        for room in self.rooms:
            if any(o.id == object_id for o in room.objects):
                return room
        raise KeyError(object_id)

    def object(self, object_id: str) -> SceneObject:
        """The object with id ``object_id`` (``KeyError`` if absent)."""
        for obj in self.objects():
            if obj.id == object_id:
                return obj
        raise KeyError(object_id)

    @property
    def is_single_room(self) -> bool:
        """True for single-room scenes (they get the 0.5 m success radius, paper §5.1)."""
        return len(self.rooms) == 1


def _require_unique(ids: Iterator[str], kind: str) -> None:
    seen: set[str] = set()
    for item in ids:
        if item in seen:
            raise SceneFormatError("duplicate id", record=f"{kind} {item!r}", field="id")
        seen.add(item)
