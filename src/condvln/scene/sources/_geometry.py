"""Ground-plane helpers shared by the ``mp3d``, ``gibson`` and ``replicacad`` sources.

* :func:`rectangle` — a counter-clockwise ``(x, z)`` rectangle (positive shoelace area);
* :func:`enclosing_room` — the one room of a scene without room annotations: the bounding
  rectangle of its objects' footprints, padded;
* :func:`openings` — ``kind="opening"`` doors where room outlines touch or overlap, so that
  scanned houses whose rooms come as boxes (Matterport3D regions, 3D Scene Graph rooms) are
  navigable from room to room (the navigable area treats every room outline as a wall except
  where a door lies on it).

>>> rectangle(0.0, 0.0, 2.0, 1.0)
((0.0, 0.0), (2.0, 0.0), (2.0, 1.0), (0.0, 1.0))
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import shapely
from shapely.geometry import LineString, Polygon

from condvln.scene.model import Door, Point2, Room, SceneObject, polygon_area

TOUCH_TOLERANCE = 0.1
"""Room outlines closer than this (m) count as touching."""

MIN_OPENING_WIDTH = 0.5
"""Shared boundary pieces shorter than this (m) do not become openings (corners, slivers)."""

LEVEL_TOLERANCE = 0.5
"""Rooms whose floor heights differ by more than this (m) are on different levels: no openings."""

ROOM_PADDING = 0.5
"""The enclosing room of an unannotated scene extends this far (m) beyond its objects."""


def rectangle(x0: float, z0: float, x1: float, z1: float) -> tuple[Point2, ...]:
    """The rectangle ``[x0, x1] × [z0, z1]`` as a counter-clockwise ``(x, z)`` polygon."""
    return ((x0, z0), (x1, z0), (x1, z1), (x0, z1))


def counter_clockwise(points: Sequence[Point2]) -> tuple[Point2, ...]:
    """``points`` ordered so that their shoelace area is positive.

    >>> counter_clockwise([(0.0, 0.0), (0.0, 1.0), (1.0, 0.0)])
    ((1.0, 0.0), (0.0, 1.0), (0.0, 0.0))
    """
    ordered = tuple(points)
    return ordered[::-1] if polygon_area(ordered) < 0.0 else ordered


def footprint(obj: SceneObject) -> tuple[float, float, float, float]:
    """``(x0, z0, x1, z1)`` of an object: its box, else its disc, else its centre."""
    box = obj.box
    if box is not None:
        return box.min[0], box.min[2], box.max[0], box.max[2]
    r = obj.radius or 0.0
    x, _, z = obj.center
    return x - r, z - r, x + r, z + r


def enclosing_room(
    room_id: str,
    room_type: str,
    label: str,
    objects: Sequence[SceneObject],
    padding: float = ROOM_PADDING,
) -> Room:
    """One room holding ``objects``: their footprints' bounding rectangle grown by ``padding``.

    The floor height is the lowest box bottom (0 when no object has a box).

    Args:
        room_id: Id of the room.
        room_type: Normalised room type.
        label: Raw label.
        objects: At least one object.
        padding: Margin around the footprints in metres.

    Returns:
        The room.
    """
    prints = [footprint(o) for o in objects]
    x0 = min(p[0] for p in prints) - padding
    z0 = min(p[1] for p in prints) - padding
    x1 = max(p[2] for p in prints) + padding
    z1 = max(p[3] for p in prints) + padding
    bottoms = [o.box.min[1] for o in objects if o.box is not None]
    return Room(
        id=room_id,
        room_type=room_type,
        label=label,
        objects=tuple(objects),
        floor_polygon=rectangle(x0, z0, x1, z1),
        floor_height=min(bottoms) if bottoms else 0.0,
    )


def _segments(lines: shapely.Geometry) -> list[tuple[Point2, Point2]]:
    """The straight pieces of a (multi)line, collinear runs merged, at least the minimum width."""
    merged = shapely.line_merge(shapely.union_all([lines])).simplify(1e-6)
    out = []
    for part in getattr(merged, "geoms", [merged]):
        if not isinstance(part, LineString):
            continue
        coords = [(float(x), float(z)) for x, z in part.coords]
        for a, b in itertools.pairwise(coords):
            if math.dist(a, b) >= MIN_OPENING_WIDTH:
                out.append((a, b))
    return out


def _shared_boundary(a: Polygon, b: Polygon, tolerance: float) -> list[tuple[Point2, Point2]]:
    """Pieces of the two outlines that lie on or inside the other room.

    Exact first (coincident walls, walls inside an overlap); only when that yields nothing are
    outlines within ``tolerance`` of the other room taken (such pieces may overrun the other
    room's corner by up to ``tolerance``).
    """
    exact = _segments(shapely.union_all([a.boundary.intersection(b), b.boundary.intersection(a)]))
    if exact:
        return exact
    near = [
        a.boundary.intersection(b.buffer(tolerance)),
        b.boundary.intersection(a.buffer(tolerance)),
    ]
    return _segments(shapely.union_all(near))


def openings(rooms: Sequence[Room], tolerance: float = TOUCH_TOLERANCE) -> list[Door]:
    """Openings between every pair of rooms on one level whose outlines touch or overlap.

    Each straight piece of one room's outline that lies on or inside the other room (or, for
    rooms separated by a gap up to ``tolerance``, within ``tolerance`` of it) becomes one
    ``Door(kind="opening")`` joining the two rooms (pieces shorter than
    :data:`MIN_OPENING_WIDTH` are skipped). Rooms without a floor polygon get none.

    Args:
        rooms: The rooms, in scene order (door ids follow it).
        tolerance: Distance (m) under which two outlines count as touching.

    Returns:
        The openings, ids ``opening|<room a>|<room b>|<k>``.
    """
    shapes = [(r, Polygon(r.floor_polygon)) for r in rooms if r.floor_polygon is not None]
    doors = []
    for i, (room_a, poly_a) in enumerate(shapes):
        for room_b, poly_b in shapes[i + 1 :]:
            if abs(room_a.floor_height - room_b.floor_height) > LEVEL_TOLERANCE:
                continue
            if poly_a.distance(poly_b) > tolerance:
                continue
            for k, segment in enumerate(_shared_boundary(poly_a, poly_b, tolerance)):
                doors.append(
                    Door(
                        f"opening|{room_a.id}|{room_b.id}|{k}",
                        (room_a.id, room_b.id),
                        segment,
                        kind="opening",
                    )
                )
    return doors
