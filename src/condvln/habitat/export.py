"""GLB files of a composed scene mesh: the render mesh and the semantic (instance-colour) mesh.

Both are glTF 2.0 binaries written with trimesh. The vertex data is in the Habitat frame
(metres, Y up) — exactly the coordinates of :class:`~condvln.scene.mesh.SceneMesh`. habitat-sim
treats every ``.glb`` it loads without a config as a Matterport3D mesh with gravity along −Z and
rotates it by ``R_x(−90°)``; so that a bare ``scene_id`` pointing at our file (the way VLN-CE loads
``mp3d/{scan}/{scan}.glb``) lands in the same frame as the episodes, both files have one root node,
:data:`ROOT_NODE`, whose matrix :data:`HABITAT_TO_MP3D` rotates the Habitat frame into the
Matterport convention. Loading the file and applying the root matrix's inverse gives back our
coordinates exactly (every entry of the matrix is 0 or ±1).

The render mesh has one node and one mesh per :class:`~condvln.scene.mesh.MeshInstance`, named by
its ``object_id`` (``"{room}/floor"``, ``"{room}/wall"``, ``"{room}/ceiling"`` for structure), with
one PBR material per category (its ``color``). The semantic mesh is a single mesh whose vertex
colours encode each triangle's instance id (:func:`semantic_color`), the form habitat-sim reads
for HM3D-style semantic assets together with the ``*_semantic.txt`` descriptor of
:mod:`condvln.habitat.semantics`.
"""

from __future__ import annotations

import numpy as np
import trimesh
from trimesh.visual.material import PBRMaterial

from condvln.scene.mesh import SceneMesh

ROOT_NODE = "habitat_to_mp3d"
"""Name of the root node that carries :data:`HABITAT_TO_MP3D`."""

HABITAT_TO_MP3D = np.array(
    [[1.0, 0.0, 0.0, 0.0], [0.0, 0.0, -1.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0]]
)
"""``(x, y, z)`` Habitat → ``(x, −z, y)`` Matterport (Z up); habitat-sim's default ``.glb``
frame maps it back."""


def semantic_color(instance_id: int) -> tuple[int, int, int]:
    """The vertex colour of ``instance_id`` in the semantic mesh (its 24-bit big-endian bytes).

    >>> semantic_color(1), semantic_color(258)
    ((0, 0, 1), (0, 1, 2))
    """
    if not 0 <= instance_id < 1 << 24:
        raise ValueError(f"instance id {instance_id} does not fit in 24 bits")
    return ((instance_id >> 16) & 255, (instance_id >> 8) & 255, instance_id & 255)


def _scene_with_root() -> trimesh.Scene:
    scene = trimesh.Scene()
    scene.graph.update(
        frame_from=scene.graph.base_frame, frame_to=ROOT_NODE, matrix=HABITAT_TO_MP3D
    )
    return scene


def render_glb(scene_mesh: SceneMesh) -> bytes:
    """The render GLB: a node and a mesh per instance with triangles, one material per category."""
    gltf = _scene_with_root()
    materials: dict[str, PBRMaterial] = {}
    for index, inst in enumerate(scene_mesh.instances):
        part = scene_mesh.instance_mesh(index)
        if len(part.faces) == 0:
            continue
        material = materials.get(inst.category)
        if material is None:
            material = PBRMaterial(
                name=inst.category,
                baseColorFactor=[*inst.color, 255],
                metallicFactor=0.0,
                roughnessFactor=0.9,
                doubleSided=inst.kind != "object",
            )
            materials[inst.category] = material
        part.visual = trimesh.visual.TextureVisuals(material=material)
        part.metadata.clear()
        gltf.add_geometry(
            part, node_name=inst.object_id, geom_name=inst.object_id, parent_node_name=ROOT_NODE
        )
    return gltf.export(file_type="glb")


def semantic_glb(scene_mesh: SceneMesh) -> bytes:
    """The semantic GLB: every triangle once, vertex colours = :func:`semantic_color` of its id."""
    mesh = scene_mesh.mesh
    faces = np.asarray(mesh.faces)
    ids = np.array([inst.instance_id for inst in scene_mesh.instances], dtype=np.int64)
    colors = np.array([(*semantic_color(int(i)), 255) for i in ids], dtype=np.uint8)
    # One vertex per face corner, so every vertex carries exactly its face's instance colour.
    vertices = np.asarray(mesh.vertices)[faces.ravel()]
    vertex_colors = np.repeat(colors[scene_mesh.face_instance], 3, axis=0)
    flat = trimesh.Trimesh(
        vertices,
        np.arange(len(vertices)).reshape(-1, 3),
        vertex_colors=vertex_colors,
        process=False,
    )
    gltf = _scene_with_root()
    gltf.add_geometry(flat, node_name="semantic", geom_name="semantic", parent_node_name=ROOT_NODE)
    return gltf.export(file_type="glb")
