"""The composed triangle mesh of a scene: floors, walls with door openings, ceilings, object boxes.

One mesh serves the GLB export for habitat-sim (:mod:`condvln.habitat.export`) and the built-in
renderer. It is built in the Habitat frame (metres, Y up) from the same floor and wall geometry as
the navigable area (:func:`condvln.scene.ground.room_floor`,
:func:`condvln.scene.ground.wall_lines`), so the two agree by construction:

- **floor** — each room's floor polygon (or the fallback extent of its objects), triangulated at
  ``room.floor_height``, facing up;
- **ceiling** — the same polygon at ``floor_height + ceiling_height`` facing down (rooms without a
  ceiling height get :data:`DEFAULT_CEILING`, raised above their tallest object when needed);
- **wall** — every room outline minus the door openings, as slabs :data:`WALL_THICKNESS` thick
  centred on the outline, from the lowest adjacent floor to the highest adjacent ceiling (doors
  are full-height openings);
- **object** — every object as its box (12 triangles); an object with only a radius as a vertical
  cylinder of that radius spanning ``centre ± radius`` (the disc the navigable area uses); an
  object with only a centre has no triangles but still gets an instance.

Each triangle belongs to one :class:`MeshInstance`; ``instance_id`` is the instance's index + 1,
so 0 can mean "nothing" in a semantic image. Colours are per category, derived from a hash of the
category name, so the same category has the same colour in every scene and every run.

>>> from condvln.scene.sources import load
>>> scene_mesh = compose_scene_mesh(load("procedural", "3"))
>>> kinds = {inst.kind for inst in scene_mesh.instances}
>>> sorted(kinds)
['ceiling', 'floor', 'object', 'wall']
>>> len(scene_mesh.face_instance) == len(scene_mesh.mesh.faces)
True
"""

from __future__ import annotations

import hashlib
import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

import numpy as np
import shapely
import trimesh
from numpy.typing import NDArray
from shapely.geometry import LineString, Point
from shapely.geometry.base import BaseGeometry

from condvln.scene.ground import room_floor, wall_lines
from condvln.scene.model import Room, Scene, SceneObject

WALL_THICKNESS = 0.01
"""Thickness (m) of the wall slabs; the navigable area treats walls as lines at their centre."""

DEFAULT_CEILING = 2.5
"""Ceiling height (m) above the floor for rooms whose source gives none."""

CEILING_CLEARANCE = 0.05
"""A default ceiling stays at least this far (m) above the room's tallest object."""

CYLINDER_SECTIONS = 32
"""Segments of the cylinder that stands in for a radius-only object."""

Kind = Literal["object", "floor", "wall", "ceiling"]

_Part = tuple[NDArray[np.float64], NDArray[np.int64]]
"""A piece of mesh: vertices ``(V, 3)`` and triangles ``(F, 3)``."""

_UNIT_BOX = trimesh.creation.box()
_BOX_VERTICES = np.asarray(_UNIT_BOX.vertices) + 0.5  # the unit cube [0, 1]³, outward winding
_BOX_FACES = np.asarray(_UNIT_BOX.faces, dtype=np.int64)
_NO_PART: _Part = (np.zeros((0, 3)), np.zeros((0, 3), dtype=np.int64))


@dataclass(frozen=True, slots=True)
class MeshInstance:
    """One semantic instance of the composed mesh.

    Attributes:
        instance_id: Semantic id (index in :attr:`SceneMesh.instances` + 1; 0 is "nothing").
        object_id: The scene object's id, or ``"{room_id}/floor"`` / ``"/wall"`` / ``"/ceiling"``.
        category: The object's category, or ``"floor"`` / ``"wall"`` / ``"ceiling"``.
        room_id: The room it belongs to (the first adjacent room for a shared wall).
        kind: ``"object"``, ``"floor"``, ``"wall"`` or ``"ceiling"``.
        color: Material colour of its category (RGB, 0–255).
    """

    instance_id: int
    object_id: str
    category: str
    room_id: str | None
    kind: Kind
    color: tuple[int, int, int]


@dataclass(frozen=True, eq=False)
class SceneMesh:
    """Every triangle of a scene with the instance each one belongs to.

    Attributes:
        mesh: All triangles, Habitat frame (Y up, metres); faces grouped by instance, in
            instance order.
        face_instance: Per face, the index into :attr:`instances` (int32).
        instances: The semantic instances: per room floor, wall (when it has any), ceiling, then
            its objects, room by room.
    """

    mesh: trimesh.Trimesh
    face_instance: NDArray[np.int32]
    instances: tuple[MeshInstance, ...]

    def instance_mesh(self, index: int) -> trimesh.Trimesh:
        """The triangles of ``instances[index]`` as their own mesh (empty when it has none)."""
        faces = np.asarray(self.mesh.faces)[self.face_instance == index]
        if faces.size == 0:
            return trimesh.Trimesh()
        used, corners = np.unique(faces, return_inverse=True)
        vertices = np.asarray(self.mesh.vertices)[used]
        return trimesh.Trimesh(vertices, corners.reshape(-1, 3), process=False)

    def index_of(self, object_id: str) -> int:
        """Index in :attr:`instances` of the instance named ``object_id`` (``KeyError`` if none)."""
        for i, inst in enumerate(self.instances):
            if inst.object_id == object_id:
                return i
        raise KeyError(object_id)


def category_color(category: str) -> tuple[int, int, int]:
    """Deterministic material colour of a category (RGB, each channel in 40–239).

    >>> category_color("sofa") == category_color("sofa")
    True
    >>> all(40 <= c <= 239 for c in category_color("wall"))
    True
    """
    digest = hashlib.sha256(category.encode("utf-8")).digest()
    return (40 + digest[0] % 200, 40 + digest[1] % 200, 40 + digest[2] % 200)


def ceiling_top(room: Room) -> float:
    """Absolute height (y) of the room's ceiling."""
    if room.ceiling_height is not None:
        return room.floor_height + room.ceiling_height
    tops = [box.max[1] for box in (o.box for o in room.objects) if box is not None]
    tops += [o.center[1] + o.radius for o in room.objects if o.box is None and o.radius]
    highest = max(tops, default=room.floor_height)
    return max(room.floor_height + DEFAULT_CEILING, highest + CEILING_CLEARANCE)


def compose_scene_mesh(scene: Scene) -> SceneMesh:
    """Compose the triangle mesh of ``scene`` (see the module notes for what it holds).

    Args:
        scene: The scene.

    Returns:
        The :class:`SceneMesh`.
    """
    floors = [room_floor(room) for room in scene.rooms]
    known = [f for f in floors if f is not None and not f.is_empty]
    walls_by_room = _walls_by_room(scene, floors, wall_lines(known, scene.doors) if known else None)
    parts: list[_Part] = []
    instances: list[MeshInstance] = []

    def add(object_id: str, category: str, room: Room, kind: Kind, part: _Part) -> None:
        instances.append(
            MeshInstance(
                instance_id=len(instances) + 1,
                object_id=object_id,
                category=category,
                room_id=room.id,
                kind=kind,
                color=category_color(category),
            )
        )
        parts.append(part)

    for room, floor in zip(scene.rooms, floors, strict=True):
        if floor is not None and not floor.is_empty:
            add(
                f"{room.id}/floor",
                "floor",
                room,
                "floor",
                _sheet(floor, room.floor_height, up=True),
            )
        if walls_by_room[room.id]:
            add(f"{room.id}/wall", "wall", room, "wall", _concat(walls_by_room[room.id]))
        if floor is not None and not floor.is_empty:
            top = ceiling_top(room)
            add(f"{room.id}/ceiling", "ceiling", room, "ceiling", _sheet(floor, top, up=False))
        for obj in room.objects:
            add(obj.id, obj.category, room, "object", _object_mesh(obj))

    face_instance = np.concatenate(
        [np.full(len(faces), i, dtype=np.int32) for i, (_, faces) in enumerate(parts)]
    )
    vertices, faces = _concat(parts)
    mesh = trimesh.Trimesh(vertices, faces, process=False)
    return SceneMesh(mesh=mesh, face_instance=face_instance, instances=tuple(instances))


def _concat(parts: list[_Part]) -> _Part:
    """Concatenate pieces keeping every face in order (no vertex merging)."""
    if not parts:
        return _NO_PART
    offsets = np.cumsum([0] + [len(v) for v, _ in parts[:-1]])
    vertices = np.concatenate([v for v, _ in parts])
    faces = np.concatenate([f + o for (_, f), o in zip(parts, offsets, strict=True)])
    return vertices, faces


def _sheet(polygon: BaseGeometry, height: float, *, up: bool) -> _Part:
    """A horizontal triangulated copy of ``polygon`` at ``height``, facing up or down."""
    triangles = [
        np.asarray(t.exterior.coords)[:3]
        for t in shapely.constrained_delaunay_triangles(polygon).geoms
        if t.area > 1e-12
    ]
    if not triangles:
        return _NO_PART
    xz = np.asarray(triangles, dtype=np.float64)  # (T, 3, 2)
    # With y up, a triangle counter-clockwise in (x, z) has a normal pointing down (−Y).
    ccw = (xz[:, 1, 0] - xz[:, 0, 0]) * (xz[:, 2, 1] - xz[:, 0, 1]) - (
        xz[:, 1, 1] - xz[:, 0, 1]
    ) * (xz[:, 2, 0] - xz[:, 0, 0]) > 0.0
    flip = ccw if up else ~ccw
    xz[flip] = xz[flip][:, ::-1]
    vertices = np.column_stack(
        [xz[..., 0].ravel(), np.full(xz.shape[0] * 3, height), xz[..., 1].ravel()]
    )
    return vertices, np.arange(len(vertices), dtype=np.int64).reshape(-1, 3)


def _walls_by_room(
    scene: Scene, floors: list[BaseGeometry | None], walls: BaseGeometry | None
) -> dict[str, list[_Part]]:
    """Wall slabs per room: each straight wall piece goes to the first room it bounds."""
    out: dict[str, list[_Part]] = {room.id: [] for room in scene.rooms}
    if walls is None:
        return out
    outlines = [f.boundary if f is not None and not f.is_empty else None for f in floors]
    for a, b in _segments(walls):
        mid = Point(0.5 * (a[0] + b[0]), 0.5 * (a[1] + b[1]))
        adjacent = [
            room
            for room, outline in zip(scene.rooms, outlines, strict=True)
            if outline is not None and outline.distance(mid) < 1e-6
        ]
        if not adjacent:  # cannot happen: every wall piece comes from a room outline
            continue
        bottom = min(room.floor_height for room in adjacent)
        top = max(ceiling_top(room) for room in adjacent)
        out[adjacent[0].id].append(_slab(a, b, bottom, top))
    return out


def _segments(lines: BaseGeometry) -> Iterator[tuple[tuple[float, float], tuple[float, float]]]:
    """The straight pieces of a (multi-)line geometry, zero-length pieces skipped."""
    if isinstance(lines, LineString):
        coords = list(lines.coords)
        for a, b in itertools.pairwise(coords):
            if math.dist(a, b) > 1e-9:
                yield (a[0], a[1]), (b[0], b[1])
        return
    for part in getattr(lines, "geoms", ()):
        yield from _segments(part)


def _slab(a: tuple[float, float], b: tuple[float, float], bottom: float, top: float) -> _Part:
    """A wall box along ``a → b`` (extended by half the thickness at both ends)."""
    length = math.dist(a, b)
    ux, uz = (b[0] - a[0]) / length, (b[1] - a[1]) / length
    local = (_BOX_VERTICES - 0.5) * [length + WALL_THICKNESS, top - bottom, WALL_THICKNESS]
    # local x runs along the wall and local z across it: (x, z) → x·(u_x, u_z) + z·(−u_z, u_x)
    x = 0.5 * (a[0] + b[0]) + local[:, 0] * ux - local[:, 2] * uz
    z = 0.5 * (a[1] + b[1]) + local[:, 0] * uz + local[:, 2] * ux
    return np.column_stack([x, local[:, 1] + 0.5 * (bottom + top), z]), _BOX_FACES


def _object_mesh(obj: SceneObject) -> _Part:
    """The box of ``obj``, else its radius cylinder, else no triangles."""
    box = obj.box
    if box is not None:
        lo, hi = np.asarray(box.min), np.asarray(box.max)
        return lo + _BOX_VERTICES * (hi - lo), _BOX_FACES
    if obj.radius is not None:
        cylinder = trimesh.creation.cylinder(
            radius=obj.radius, height=2.0 * obj.radius, sections=CYLINDER_SECTIONS
        )
        # trimesh builds cylinders along +Z; stand it up along +Y and move it to the centre.
        transform = trimesh.transformations.rotation_matrix(-math.pi / 2.0, [1.0, 0.0, 0.0])
        transform[:3, 3] = obj.center
        cylinder.apply_transform(transform)
        return np.asarray(cylinder.vertices), np.asarray(cylinder.faces, dtype=np.int64)
    return _NO_PART
