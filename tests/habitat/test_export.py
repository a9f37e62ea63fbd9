"""GLB export: the Khronos glTF validator, node names, materials, the semantic mesh's colours."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pygltflib
import pytest
import trimesh

from condvln.habitat.export import (
    HABITAT_TO_MP3D,
    ROOT_NODE,
    render_glb,
    semantic_color,
    semantic_glb,
)
from condvln.scene.mesh import compose_scene_mesh
from condvln.scene.sources import load

HERE = Path(__file__).resolve().parent
DATA = HERE.parent / "data"
SCENES = [
    ("procedural", "3"),
    ("procedural", "40"),
    ("procthor", str(DATA / "procthor/houses/1310.json")),
    ("ithor", str(DATA / "ai2thor/ithor_FloorPlan1_objects_raw.json")),
]


def _validator_env() -> dict[str, str] | None:
    """Environment in which ``node`` resolves ``gltf-validator`` (NODE_PATH or ./node_modules)."""
    node = shutil.which("node")
    if node is None:
        return None
    paths = [p for p in os.environ.get("NODE_PATH", "").split(os.pathsep) if p]
    paths.append(str(HERE.parents[1] / "node_modules"))
    env = {**os.environ, "NODE_PATH": os.pathsep.join(paths)}
    probe = subprocess.run(
        [node, "-e", "require.resolve('gltf-validator')"], env=env, capture_output=True
    )
    return env if probe.returncode == 0 else None


@pytest.fixture(scope="module")
def validator_env() -> dict[str, str]:
    env = _validator_env()
    if env is None:
        reason = "node with the npm package gltf-validator is not available (NODE_PATH)"
        if os.environ.get("CONDVLN_REQUIRE_GLTF_VALIDATOR"):
            pytest.fail(reason)
        pytest.skip(reason)
    return env


@pytest.fixture(scope="module", params=SCENES, ids=lambda p: f"{p[0]}-{Path(p[1]).stem}")
def scene_mesh(request):
    scene = load(*request.param)
    return scene, compose_scene_mesh(scene)


def test_khronos_validator_reports_no_errors_and_no_warnings(
    scene_mesh, validator_env, tmp_path: Path
) -> None:
    import json

    _, mesh = scene_mesh
    files = [tmp_path / "scene.glb", tmp_path / "scene.semantic.glb"]
    files[0].write_bytes(render_glb(mesh))
    files[1].write_bytes(semantic_glb(mesh))
    run = subprocess.run(
        ["node", str(HERE / "gltf_validate.cjs"), *map(str, files)],
        env=validator_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    reports = [json.loads(line) for line in run.stdout.splitlines()]
    assert run.returncode == 0, (run.stdout, run.stderr)
    assert [r["file"] for r in reports] == [str(f) for f in files]
    for report in reports:
        assert report["numErrors"] == 0, report["messages"]
        assert report["numWarnings"] == 0, report["messages"]


def test_nodes_carry_object_ids_and_materials_are_per_category(scene_mesh) -> None:
    scene, mesh = scene_mesh
    gltf = pygltflib.GLTF2.load_from_bytes(render_glb(mesh))
    (root,) = [gltf.nodes[i] for i in gltf.scenes[gltf.scene or 0].nodes]
    assert root.name == ROOT_NODE
    np.testing.assert_array_equal(np.array(root.matrix).reshape(4, 4).T, HABITAT_TO_MP3D)
    children = [gltf.nodes[i] for i in root.children]
    names = [node.name for node in children]
    objects = [o.id for o in scene.objects()]
    assert len(names) == len(set(names))
    assert set(objects) <= set(names)  # every object (all have boxes here) exactly once
    by_id = {inst.object_id: inst for inst in mesh.instances}
    materials = {m.name: m for m in gltf.materials}
    assert set(materials) == {by_id[n].category for n in names}
    for node in children:
        inst = by_id[node.name]
        (primitive,) = gltf.meshes[node.mesh].primitives
        material = gltf.materials[primitive.material]
        assert material.name == inst.category
        expected = [c / 255 for c in inst.color] + [1.0]
        np.testing.assert_allclose(material.pbrMetallicRoughness.baseColorFactor, expected)


def test_semantic_mesh_colours_decode_to_instances(scene_mesh) -> None:
    scene, mesh = scene_mesh
    loaded = trimesh.load(io.BytesIO(semantic_glb(mesh)), file_type="glb", force="scene")
    (node,) = loaded.graph.nodes_geometry
    transform, name = loaded.graph[node]
    flat = loaded.geometry[name].copy()
    flat.apply_transform(np.linalg.inv(HABITAT_TO_MP3D) @ transform)
    rgb = np.asarray(flat.visual.vertex_colors)[:, :3].astype(np.int64)
    ids = (rgb[:, 0] << 16) | (rgb[:, 1] << 8) | rgb[:, 2]
    faces = np.asarray(flat.faces)
    assert (ids[faces[:, 0]] == ids[faces[:, 1]]).all() and (
        ids[faces[:, 1]] == ids[faces[:, 2]]
    ).all()
    assert len(faces) == len(mesh.mesh.faces)
    by_object = {inst.object_id: inst.instance_id for inst in mesh.instances}
    for obj in scene.objects():
        corners = flat.vertices[ids == by_object[obj.id]]
        np.testing.assert_allclose(corners.min(axis=0), obj.box.min, atol=1e-3)
        np.testing.assert_allclose(corners.max(axis=0), obj.box.max, atol=1e-3)
    assert set(np.unique(ids)) == {inst.instance_id for inst in mesh.instances}


def test_semantic_colours_are_the_ids_in_24_bits() -> None:
    assert semantic_color(0x123456) == (0x12, 0x34, 0x56)
    with pytest.raises(ValueError, match="24 bits"):
        semantic_color(1 << 24)
