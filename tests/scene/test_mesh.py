"""The composed scene mesh: object boxes, floors, walls with door openings, instances, colours."""

from __future__ import annotations

import math

import numpy as np
import pytest
import trimesh

from condvln.scene.mesh import (
    WALL_THICKNESS,
    category_color,
    compose_scene_mesh,
)
from condvln.scene.model import Door, Room, Scene, SceneObject
from condvln.scene.sources import load

SEEDS = ("0", "3", "11", "42")


@pytest.fixture(scope="module", params=SEEDS)
def scene_and_mesh(request):
    scene = load("procedural", request.param)
    return scene, compose_scene_mesh(scene)


def test_every_object_is_its_box_to_a_millimetre(scene_and_mesh):
    scene, sm = scene_and_mesh
    objects = list(scene.objects())
    assert objects
    for obj in objects:
        part = sm.instance_mesh(sm.index_of(obj.id))
        assert len(part.faces) == 12, obj.id
        np.testing.assert_allclose(part.bounds[0], obj.box.min, atol=1e-3)
        np.testing.assert_allclose(part.bounds[1], obj.box.max, atol=1e-3)


def test_instances_cover_every_face_once_and_name_every_object_once(scene_and_mesh):
    scene, sm = scene_and_mesh
    assert sm.face_instance.dtype == np.int32
    assert len(sm.face_instance) == len(sm.mesh.faces)
    assert set(np.unique(sm.face_instance)) == set(range(len(sm.instances)))
    ids = [inst.object_id for inst in sm.instances]
    assert len(ids) == len(set(ids))
    objects = {inst.object_id for inst in sm.instances if inst.kind == "object"}
    assert objects == {o.id for o in scene.objects()}
    assert [inst.instance_id for inst in sm.instances] == list(range(1, len(sm.instances) + 1))
    for inst in sm.instances:
        assert inst.color == category_color(inst.category)
        room = scene.room(inst.room_id)
        if inst.kind == "object":
            assert scene.room_of(inst.object_id).id == room.id


def test_floors_face_up_and_ceilings_down(scene_and_mesh):
    scene, sm = scene_and_mesh
    for i, inst in enumerate(sm.instances):
        if inst.kind in ("floor", "ceiling"):
            normals = sm.instance_mesh(i).face_normals
            expected = 1.0 if inst.kind == "floor" else -1.0
            np.testing.assert_allclose(normals[:, 1], expected, atol=1e-9)
            if inst.kind == "floor":
                room = scene.room(inst.room_id)
                assert math.isclose(sm.instance_mesh(i).area, room.area, rel_tol=1e-9)


def _horizontal_hits(sm, origin, direction, kinds):
    hits, _rays, faces = sm.mesh.ray.intersects_location([origin], [direction], multiple_hits=True)
    keep = [k for k, f in enumerate(faces) if sm.instances[sm.face_instance[f]].kind in kinds]
    return np.linalg.norm(hits[keep] - np.asarray(origin), axis=1)


def test_doors_are_open_and_walls_beside_them_are_closed(scene_and_mesh):
    scene, sm = scene_and_mesh
    assert scene.doors
    for door in scene.doors:
        (ax, az), (bx, bz) = door.segment
        ux, uz = (bx - ax) / door.width, (bz - az) / door.width
        normal = (-uz, 0.0, ux)
        room = scene.room(door.room_ids[0])
        y = room.floor_height + 1.0
        for t in (0.1, 0.5, 0.9):  # through the opening: no wall within 0.3 m either side
            px, pz = ax + t * (bx - ax), az + t * (bz - az)
            origin = (px - 0.3 * normal[0], y, pz - 0.3 * normal[2])
            dist = _horizontal_hits(sm, origin, normal, {"wall"})
            assert not (dist < 0.6).any(), (door.id, t)
        # 5 cm beyond the door's end the wall stands, its face half a thickness from the outline
        px, pz = bx + 0.05 * ux, bz + 0.05 * uz
        origin = (px - 0.3 * normal[0], y, pz - 0.3 * normal[2])
        dist = _horizontal_hits(sm, origin, normal, {"wall"})
        assert np.isclose(dist.min(), 0.3 - WALL_THICKNESS / 2, atol=1e-6), door.id


def test_radius_only_and_centre_only_objects():
    floor = ((0.0, 0.0), (4.0, 0.0), (4.0, 3.0), (0.0, 3.0))
    ball = SceneObject(id="ball", category="ball", label="Ball", center=(1.0, 0.3, 1.0), radius=0.3)
    dot = SceneObject(id="dot", category="sticker", label="Sticker", center=(2.0, 1.0, 2.0))
    room = Room(
        id="r", room_type="bedroom", label="Bedroom", objects=(ball, dot), floor_polygon=floor
    )
    scene = Scene(
        id="t",
        source="condvln",
        rooms=(room,),
        doors=(Door(id="d", room_ids=("r",), segment=((1.0, 0.0), (2.0, 0.0))),),
    )
    sm = compose_scene_mesh(scene)
    part = sm.instance_mesh(sm.index_of("ball"))
    np.testing.assert_allclose(part.bounds, [[0.7, 0.0, 0.7], [1.3, 0.6, 1.3]], atol=1e-3)
    assert len(sm.instance_mesh(sm.index_of("dot")).faces) == 0
    ceiling = sm.instance_mesh(sm.index_of("r/ceiling"))
    assert np.allclose(ceiling.vertices[:, 1], 2.5)
    walls = sm.instance_mesh(sm.index_of("r/wall"))
    # 4 walls, the south one split by the exterior door into 2 pieces: 5 slabs of 12 triangles
    assert len(walls.faces) == 5 * 12
    assert isinstance(sm.mesh, trimesh.Trimesh)


def test_category_colours_are_stable():
    assert category_color("sofa") == category_color("sofa")
    assert category_color("sofa") != category_color("bed")
