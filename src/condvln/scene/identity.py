"""Scene identity by content: one fingerprint for every copy of one house.

Two scene files describe the same house when they hold the same rooms, objects and doors,
whatever their ids say. :func:`scene_fingerprint` hashes a canonical form that keeps

* the geometry, rounded to :data:`GRID` (1 cm): floor outlines (any start vertex, either
  winding), floor and ceiling heights, object centres, boxes and radii, door segments;
* the object categories and door kinds;

(an absent value is an empty list, so any two canonical forms compare)

and ignores the scene, room, object and door ids (doors are tied to rooms by the rooms'
content, so renaming a room id changes nothing), the source name, raw labels, room types,
metadata, the order of rooms, objects and doors, and everything about the file itself (key
order, whitespace, how a float is written). Values that differ by float noise can still fall on
the two sides of a 1 cm rounding step; copies of a file (re-serialised, re-indented, renamed)
never do, since their numbers are equal.

>>> from condvln.scene.model import Room, Scene, SceneObject
>>> cup = SceneObject(id="o1", category="cup", label="Cup", center=(0.1, 0.9, -0.3))
>>> room = Room(id="r0", room_type="kitchen", label="Kitchen", objects=(cup,),
...             floor_polygon=((0, 0), (2, 0), (2, 2), (0, 2)))
>>> a = Scene(id="a", source="manual", rooms=(room,))
>>> renamed = Room(id="kitchen-7", room_type="kitchen", label="K", objects=(cup,),
...                floor_polygon=((2, 2), (0, 2), (0, 0), (2.0001, 0)))
>>> scene_fingerprint(a) == scene_fingerprint(Scene(id="b", source="other", rooms=(renamed,)))
True
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import orjson

from condvln.scene.model import Door, Room, Scene, SceneObject

T = TypeVar("T")

GRID = 0.01
"""Rounding step (m) of every coordinate in the fingerprint."""


def _q(values: Iterable[float]) -> list[int]:
    return [round(v / GRID) for v in values]


def _outline(points: Sequence[tuple[float, float]] | None) -> list[list[int]]:
    """A floor polygon as the smallest of its rotations in both windings (start-independent)."""
    if points is None:
        return []
    ring = [tuple(_q(p)) for p in points]
    lowest = min(ring)
    rotations = [
        order[i:] + order[:i]
        for order in (ring, ring[::-1])
        for i, point in enumerate(order)
        if point == lowest
    ]
    return [list(p) for p in min(rotations)]


def _object(obj: SceneObject) -> list[Any]:
    box = obj.box
    return [
        obj.category,
        _q(obj.center),
        [] if box is None else _q(box.min) + _q(box.max),
        [] if obj.radius is None else _q([obj.radius]),
    ]


def _room(room: Room) -> list[Any]:
    return [
        _outline(room.floor_polygon),
        _q([room.floor_height]),
        [] if room.ceiling_height is None else _q([room.ceiling_height]),
        sorted(_object(o) for o in room.objects),
    ]


def _digest(value: Any) -> str:
    return hashlib.sha256(orjson.dumps(value)).hexdigest()


def _door(door: Door, rooms: dict[str, str]) -> list[Any]:
    ends = sorted(_q(p) for p in door.segment)
    return [door.kind, ends, sorted(rooms[r] for r in door.room_ids)]


def scene_fingerprint(scene: Scene) -> str:
    """SHA-256 (hex) of the scene's canonical content (see the module docstring)."""
    rooms = {room.id: _digest(_room(room)) for room in scene.rooms}
    return _digest(
        {
            "rooms": sorted(rooms.values()),
            "doors": sorted(_door(d, rooms) for d in scene.doors),
        }
    )


def first_of_each(
    items: Sequence[T], fingerprints: Sequence[str], name: Callable[[T], str] = str
) -> tuple[list[T], list[tuple[str, str]]]:
    """``items`` without those whose fingerprint an earlier item has, and the dropped pairs.

    Returns:
        The kept items (in order) and ``(dropped, same_as)`` name pairs.

    >>> first_of_each(["a", "b", "c"], ["1", "2", "1"])
    (['a', 'b'], [('c', 'a')])
    """
    first: dict[str, T] = {}
    kept, dropped = [], []
    for item, fingerprint in zip(items, fingerprints, strict=True):
        if fingerprint in first:
            dropped.append((name(item), name(first[fingerprint])))
            continue
        first[fingerprint] = item
        kept.append(item)
    return kept, dropped
