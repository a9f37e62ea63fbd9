"""The exported GLB and our navigable grid describe the same geometry (issue: habitat-ready).

The GLB is read back with trimesh from its bytes (node transforms applied, then the documented
root matrix undone), so these checks see what habitat-sim sees, not our in-memory mesh:

- for ≥ 1,000 random grid cells per scene, our grid says free ⇔ vertical rays through the GLB
  at the cell centre and across the agent's disc (96 on its rim, 24 at half its radius) all meet
  a floor, and no other instance
  (walls, objects; ceilings excluded) spans any part of the body band
  ``(floor + max_climb, floor + height)`` on them — ≥ 99 % agreement;
- every object's GLB node has the bounds of its box to 1 mm;
- every door opening is open in both: no wall across it in the grid's wall lines, no wall hit by
  a horizontal ray through it in the GLB, and (procedural houses, which keep door clearances)
  the midpoint of every interior door navigable in both.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import trimesh
from shapely.geometry import LineString

from condvln.habitat.export import HABITAT_TO_MP3D, render_glb
from condvln.nav.agent import AgentSpec
from condvln.nav.area import NavArea, build_nav_area
from condvln.scene.mesh import compose_scene_mesh
from condvln.scene.model import Scene
from condvln.scene.serialize import load_scene, scene_to_json
from condvln.scene.sources import load

DATA = Path(__file__).resolve().parents[1] / "data"
SAMPLES = 1200
RIM_RAYS = 96


def _scenes() -> list[tuple[str, str]]:
    return [
        ("procedural", "0"),
        ("procedural", "7"),
        ("procedural", "23"),
        ("procthor", str(DATA / "procthor/houses/house_3703.json")),
        ("procthor", str(DATA / "procthor/houses/1310.json")),
        ("ithor", str(DATA / "ai2thor/ithor_FloorPlan1_objects_raw.json")),
        ("condvln", "json:procedural:11"),
    ]


def _load(source: str, reference: str, tmp_path: Path) -> Scene:
    if source == "condvln":  # a CondVLN scene JSON written by `condvln scenes export`
        _, inner, seed = reference.split(":")
        path = tmp_path / "scene.json"
        path.write_bytes(scene_to_json(load(inner, seed)))
        return load_scene(path)
    return load(source, reference)


@dataclass
class GlbScene:
    """Triangles of a GLB in the Habitat frame, each labelled with its node name."""

    mesh: trimesh.Trimesh
    node_of_face: np.ndarray
    nodes: list[str]
    node_bounds: dict[str, np.ndarray]


def read_glb(data: bytes) -> GlbScene:
    loaded = trimesh.load(io.BytesIO(data), file_type="glb", force="scene")
    undo = np.linalg.inv(HABITAT_TO_MP3D)
    parts, labels, nodes, bounds = [], [], [], {}
    for node in loaded.graph.nodes_geometry:
        transform, geometry = loaded.graph[node]
        mesh = loaded.geometry[geometry].copy()
        mesh.apply_transform(undo @ transform)
        labels.append(np.full(len(mesh.faces), len(nodes)))
        nodes.append(node)
        bounds[node] = mesh.bounds
        parts.append(mesh)
    return GlbScene(trimesh.util.concatenate(parts), np.concatenate(labels), nodes, bounds)


def _kinds(scene: Scene, glb: GlbScene) -> np.ndarray:
    """Per node: 0 floor, 1 ceiling, 2 blocker (walls and objects)."""
    floors = {f"{r.id}/floor" for r in scene.rooms}
    ceilings = {f"{r.id}/ceiling" for r in scene.rooms}
    return np.array([0 if n in floors else 1 if n in ceilings else 2 for n in glb.nodes])


def _ray_hits(mesh: trimesh.Trimesh, origins: np.ndarray) -> tuple[np.ndarray, ...]:
    directions = np.tile([0.0, -1.0, 0.0], (len(origins), 1))
    hits, rays, faces = mesh.ray.intersects_location(origins, directions, multiple_hits=True)
    order = np.argsort(rays, kind="stable")
    starts = np.searchsorted(rays[order], np.arange(len(origins) + 1))
    return hits[order, 1], faces[order], starts


def glb_free(scene: Scene, glb: GlbScene, xz: np.ndarray, agent: AgentSpec) -> np.ndarray:
    """Whether the agent's centre may stand at each ``(x, z)`` according to the GLB alone.

    Floors and blockers (walls, objects) are cast against separately: a ray caster reports one
    of two coplanar faces only, and box bottoms lie in the floor plane (wall tops in the ceiling
    plane, which is left out: it can hide nothing in the body band).
    """
    kinds = _kinds(scene, glb)
    face_kind = kinds[glb.node_of_face]
    floors = glb.mesh.submesh([np.flatnonzero(face_kind == 0)], append=True)
    blocker_faces = np.flatnonzero(face_kind == 2)
    blockers = glb.mesh.submesh([blocker_faces], append=True)
    blocker_node = glb.node_of_face[blocker_faces]
    angles = np.linspace(0.0, 2.0 * math.pi, RIM_RAYS, endpoint=False)
    ring = np.column_stack([np.cos(angles), np.sin(angles)])
    offsets = np.vstack([[0.0, 0.0], 0.5 * agent.radius * ring[::4], agent.radius * ring])
    ground = (xz[:, None, :] + offsets[None, :, :]).reshape(-1, 2)
    top = glb.mesh.bounds[1][1] + 1.0
    origins = np.column_stack([ground[:, 0], np.full(len(ground), top), ground[:, 1]])
    floor_y, _, floor_starts = _ray_hits(floors, origins)
    block_y, block_faces, block_starts = _ray_hits(blockers, origins)
    ok = np.zeros(len(ground), dtype=bool)
    for ray in range(len(ground)):
        below = floor_y[floor_starts[ray] : floor_starts[ray + 1]]
        if below.size == 0:
            continue
        base = below.max()
        lo, hi = base + agent.max_climb, base + agent.height
        y = block_y[block_starts[ray] : block_starts[ray + 1]]
        nodes = blocker_node[block_faces[block_starts[ray] : block_starts[ray + 1]]]
        blocked = False
        for node in np.unique(nodes):
            span = y[nodes == node]
            # A closed box is entered and left; an odd count means one face coincided with a
            # face of a box stacked on it or below it, so the box reaches that neighbour.
            bottom = min(span.min(), base) if span.size % 2 else span.min()
            if bottom < hi and span.max() > lo:
                blocked = True
                break
        ok[ray] = not blocked
    return ok.reshape(-1, len(offsets)).all(axis=1)


def _sample_cells(area: NavArea, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    rows = rng.integers(0, area.frame.shape[0], SAMPLES)
    cols = rng.integers(0, area.frame.shape[1], SAMPLES)
    return area.frame.centres(rows, cols), area.free_any[rows, cols]


@pytest.fixture(scope="module", params=_scenes(), ids=lambda p: f"{p[0]}-{Path(p[1]).stem}")
def exported(request, tmp_path_factory):
    scene = _load(*request.param, tmp_path_factory.mktemp("scene"))
    glb = read_glb(render_glb(compose_scene_mesh(scene)))
    return scene, glb, build_nav_area(scene)


def test_navigable_grid_agrees_with_vertical_rays_through_the_glb(exported) -> None:
    scene, glb, area = exported
    xz, grid_free = _sample_cells(area, np.random.default_rng(18))
    ray_free = glb_free(scene, glb, xz, area.agent)
    agreement = float((ray_free == grid_free).mean())
    assert len(xz) >= 1000
    assert grid_free.mean() > 0.1 and (~grid_free).mean() > 0.1  # both answers are exercised
    assert agreement >= 0.99, (scene.id, agreement, int((ray_free != grid_free).sum()))


def test_every_object_node_has_its_box_bounds(exported) -> None:
    scene, glb, _ = exported
    boxed = [o for o in scene.objects() if o.box is not None]
    assert boxed
    for obj in boxed:
        np.testing.assert_allclose(glb.node_bounds[obj.id][0], obj.box.min, atol=1e-3)
        np.testing.assert_allclose(glb.node_bounds[obj.id][1], obj.box.max, atol=1e-3)


def test_door_openings_are_open_in_both(exported) -> None:
    scene, glb, area = exported
    kinds = _kinds(scene, glb)
    for door in scene.doors:
        (ax, az), (bx, bz) = door.segment
        inner = (
            LineString([(ax, az), (bx, bz)]).interpolate(0.1, normalized=True),
            LineString([(ax, az), (bx, bz)]).interpolate(0.9, normalized=True),
        )
        core = LineString([(inner[0].x, inner[0].y), (inner[1].x, inner[1].y)])
        assert area.walls.intersection(core).length < 1e-6, door.id
        ux, uz = (bx - ax) / door.width, (bz - az) / door.width
        normal = np.array([-uz, 0.0, ux])
        floor = min(scene.room(r).floor_height for r in door.room_ids)
        for t in (0.2, 0.5, 0.8):
            point = np.array([ax + t * (bx - ax), floor + 1.0, az + t * (bz - az)])
            hits, _, faces = glb.mesh.ray.intersects_location(
                [point - 0.5 * normal], [normal], multiple_hits=True
            )
            walls = [
                h
                for h, f in zip(hits, faces, strict=True)
                if kinds[glb.node_of_face[f]] == 2
                and glb.nodes[glb.node_of_face[f]].endswith("/wall")
            ]
            assert all(np.linalg.norm(h - (point - 0.5 * normal)) > 1.0 for h in walls), door.id
        if scene.source == "procedural" and not door.is_exterior:
            mid = np.array([[0.5 * (ax + bx), 0.5 * (az + bz)]])
            assert area.navigable(mid)[0], door.id
            assert glb_free(scene, glb, mid, area.agent)[0], door.id
