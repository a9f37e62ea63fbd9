"""The ground plan of a scene, in the ``(x, z)`` plane: room floors, object footprints, walls.

Every room outline is a wall, except where a door lies on it: wall pieces within
:data:`DOOR_TOLERANCE` of a door segment (and between its end points) are cut away, so rooms
that share a boundary connect only through their doors. The navigable area
(:mod:`condvln.nav.area`) and the scene mesh (:mod:`condvln.scene.mesh`) are both built from
these shapes, so the rendered walls are the walls the agent collides with.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import numpy as np
import shapely
from shapely.geometry import LineString, Point, Polygon, box
from shapely.geometry.base import BaseGeometry

from condvln.scene.model import Door, Room, SceneObject

DOOR_TOLERANCE = 0.05
"""Wall pieces within this distance (m) of a door segment are cut away by the door."""

_DOOR_END_INSET = 1e-3
"""Door cuts stop this short (m) of the door end points so that walls meeting there stay whole."""


def room_floor(room: Room) -> BaseGeometry | None:
    """The floor of ``room``: its polygon, else the ``(x, z)`` extent of its objects, else None.

    >>> from condvln.scene.model import SceneObject
    >>> cup = SceneObject(id="c", category="cup", label="Cup", center=(1, 0, 2), size=(2, 1, 4))
    >>> room_floor(Room(id="r", room_type="kitchen", label="K", objects=(cup,))).bounds
    (0.0, 0.0, 2.0, 4.0)
    """
    if room.floor_polygon is not None:
        return shapely.make_valid(Polygon(room.floor_polygon)).buffer(0)
    shapes = [footprint(obj) for obj in room.objects]
    if not shapes:
        return None
    xmin, zmin, xmax, zmax = shapely.GeometryCollection(shapes).bounds
    if xmax - xmin <= 0.0 or zmax - zmin <= 0.0:
        return None
    return box(xmin, zmin, xmax, zmax)


def footprint(obj: SceneObject) -> BaseGeometry:
    """Ground footprint of an object: its box rectangle, else its radius disc, else its centre."""
    bbox = obj.box
    x, _, z = obj.center
    if bbox is not None:
        (x0, _, z0), (x1, _, z1) = bbox.min, bbox.max
        if x1 > x0 and z1 > z0:
            return box(x0, z0, x1, z1)
        return LineString([(x0, z0), (x1, z1)]) if (x1, z1) != (x0, z0) else Point(x, z)
    if obj.radius is not None:
        return Point(x, z).buffer(obj.radius)
    return Point(x, z)


def wall_lines(floors: Sequence[BaseGeometry], doors: Sequence[Door]) -> BaseGeometry:
    """Room outlines as lines, with every door segment cut out of them."""
    rings = [ring for poly in floors for ring in _rings(poly)]
    lines = shapely.unary_union([LineString(r.coords) for r in rings])
    cuts = [_door_cut(door) for door in doors]
    cuts = [c for c in cuts if c is not None]
    if cuts:
        lines = lines.difference(shapely.unary_union(cuts))
    return lines


def _rings(poly: BaseGeometry) -> list[BaseGeometry]:
    parts = getattr(poly, "geoms", [poly])
    return [ring for p in parts for ring in (p.exterior, *p.interiors)]


def _door_cut(door: Door) -> Polygon | None:
    a, b = (np.asarray(p, dtype=np.float64) for p in door.segment)
    length = float(np.hypot(*(b - a)))
    if length <= 2.0 * _DOOR_END_INSET:
        return None
    unit = (b - a) / length
    a_in, b_in = a + unit * _DOOR_END_INSET, b - unit * _DOOR_END_INSET
    return cast(Polygon, LineString([a_in, b_in]).buffer(DOOR_TOLERANCE, cap_style="flat"))
