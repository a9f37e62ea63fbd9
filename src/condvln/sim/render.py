"""Egocentric RGB, depth and semantic images ray-cast from the composed scene mesh (headless).

The renderer casts one ray per pixel through the scene's composed mesh
(:func:`condvln.scene.mesh.compose_scene_mesh`, the same trimesh mesh as the habitat GLB
export) with Embree through ``embreex``, the wheels trimesh's own ray caster uses (no GL
context, no system libraries). Embree is called directly so that one call returns both the hit
triangle and its distance. One cast serves every sensor with the same optics; sensors differ
only in what they read off the hit:

* ``rgb``: the hit instance's colour, Lambert-shaded by the face normal against a fixed light
  (uint8 H×W×3; black where a ray leaves the scene);
* ``depth``: z-depth along the optical axis (what habitat's depth sensor gives), computed exactly
  on the hit triangle's plane in float64, clipped to ``[min_depth, max_depth]`` and optionally
  normalised (float32 H×W×1; a ray that hits nothing reads 0 before clipping, as in habitat);
* ``semantic``: the hit instance's ``instance_id`` (int32 H×W×1, the ids of the habitat export's
  semantic annotations; :data:`BACKGROUND` where nothing is hit); :class:`SemanticTable` maps
  ids to our object ids, categories and kinds.

**Camera.** A pinhole with square pixels: focal length ``(W / 2) / tan(hfov / 2)``, principal
point at the image centre, pixel centres at half-integers; image row 0 is the top. The camera
sits at the agent's base plus its ``position`` offset rotated by the heading, looking along the
heading (−Z at yaw 0) with no pitch, like habitat's default sensors.

A camera inside a wall or outside the house still gets a defined image: rays from inside a solid
hit its inner faces (Embree intersects both sides), rays that leave the scene read background.
The same pose always renders the same bytes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from embreex import rtcore_scene
from embreex.mesh_construction import TriangleMesh

from condvln.sim.protocol import CameraConfig, DepthConfig, ObservationProtocol

if TYPE_CHECKING:
    from condvln.scene.mesh import SceneMesh

BACKGROUND = 0
"""Semantic id of pixels whose ray hits nothing (mesh instance ids start at 1)."""

LIGHT = (0.35, 0.8, 0.48)
"""Direction towards the (directional) light used for RGB shading."""

AMBIENT = 0.45
"""Share of the colour kept on faces turned away from the light."""


@dataclass(frozen=True, slots=True)
class SemanticTable:
    """What each semantic id denotes (habitat's semantic annotations, as plain tuples).

    Index ``k`` describes semantic id ``k``; id :data:`BACKGROUND` is ``("", "", "background")``.

    Attributes:
        object_ids: Our object id (floors and walls carry their mesh instance's id).
        categories: Category of the instance ("sofa", "floor", "wall", …).
        kinds: ``"object"``, ``"floor"``, ``"wall"``, … (from the mesh).
    """

    object_ids: tuple[str, ...]
    categories: tuple[str, ...]
    kinds: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.object_ids)


@dataclass(frozen=True, slots=True)
class Hits:
    """One cast of a camera: the hit face and z-depth of every pixel (row-major, H × W).

    Attributes:
        face: Hit face index, ``-1`` where the ray hits nothing.
        depth: z-depth in metres, ``0`` where the ray hits nothing.
    """

    face: np.ndarray
    depth: np.ndarray


def camera_rays(width: int, height: int, hfov: float) -> np.ndarray:
    """Ray directions of every pixel in the camera frame, ``(H·W, 3)``, z component −1.

    >>> np.round(camera_rays(2, 2, 90.0), 12).tolist()
    [[-0.5, 0.5, -1.0], [0.5, 0.5, -1.0], [-0.5, -0.5, -1.0], [0.5, -0.5, -1.0]]
    """
    focal = 0.5 * width / math.tan(math.radians(0.5 * hfov))
    cols = (np.arange(width, dtype=np.float64) + 0.5 - 0.5 * width) / focal
    rows = -(np.arange(height, dtype=np.float64) + 0.5 - 0.5 * height) / focal
    x, y = np.meshgrid(cols, rows)
    return np.column_stack([x.ravel(), y.ravel(), np.full(x.size, -1.0)])


def rotate_yaw(vectors: np.ndarray, yaw: float, dtype: type = np.float64) -> np.ndarray:
    """``vectors`` ``(N, 3)`` rotated about +Y by ``yaw`` (counter-clockwise seen from above).

    Element-wise on purpose: a BLAS matrix product would start threads that compete with the
    renderer for the core.

    >>> np.round(rotate_yaw(np.array([[0.0, 0.0, -1.0]]), math.pi / 2), 12).tolist()
    [[-1.0, 0.0, -0.0]]
    """
    c, s = math.cos(yaw), math.sin(yaw)
    out = np.empty(vectors.shape, dtype=dtype)
    x, z = vectors[:, 0], vectors[:, 2]
    out[:, 0] = c * x + s * z
    out[:, 1] = vectors[:, 1]
    out[:, 2] = c * z - s * x
    return out


def camera_origin(position: Sequence[float], yaw: float, camera: CameraConfig) -> np.ndarray:
    """World position of the camera: the agent's base plus its offset turned by the heading."""
    offset = rotate_yaw(np.asarray([camera.position], dtype=np.float64), yaw)[0]
    return np.asarray(position, dtype=np.float64) + offset


class Renderer:
    """Renders a scene's composed mesh from agent poses.

    Args:
        scene_mesh: The composed mesh with one instance per face.
    """

    def __init__(self, scene_mesh: SceneMesh) -> None:
        mesh = scene_mesh.mesh
        self.scene_mesh = scene_mesh
        vertices = np.asarray(mesh.vertices, dtype=np.float64)
        # Embree works in float32: cast in a frame whose origin is the mesh's lower corner
        self._frame = vertices.min(axis=0) if len(vertices) else np.zeros(3)
        self._scene = rtcore_scene.EmbreeScene()
        if len(mesh.faces):
            TriangleMesh(
                scene=self._scene,
                vertices=(vertices - self._frame).astype(np.float32),
                indices=np.asarray(mesh.faces, dtype=np.int32),
            )
        instances = scene_mesh.instances
        ids = np.array([inst.instance_id for inst in instances], dtype=np.int64)
        size = int(ids.max()) + 1 if ids.size else 1
        object_ids, categories, kinds = [""] * size, [""] * size, ["background"] * size
        for inst in instances:
            object_ids[inst.instance_id] = inst.object_id
            categories[inst.instance_id] = inst.category
            kinds[inst.instance_id] = inst.kind
        self.table = SemanticTable(tuple(object_ids), tuple(categories), tuple(kinds))
        slot = np.asarray(scene_mesh.face_instance, dtype=np.intp)  # index into instances
        colours = np.array([inst.color for inst in instances], dtype=np.float64).reshape(-1, 3)
        light = np.asarray(LIGHT) / np.linalg.norm(LIGHT)
        normals = np.asarray(mesh.face_normals, dtype=np.float64).reshape(-1, 3)
        self._normals = normals
        self._offsets = np.einsum("ij,ij->i", normals, np.asarray(mesh.triangles)[:, 0, :])
        shade = AMBIENT + (1.0 - AMBIENT) * np.abs(normals @ light)
        face_rgb = np.clip(np.rint(colours[slot] * shade[:, None]), 0, 255)
        # a last row for "no hit": face index -1 reads black / background
        self._face_rgb = np.vstack([face_rgb, np.zeros((1, 3))]).astype(np.uint8)
        self._face_semantic = np.append(ids[slot], BACKGROUND).astype(np.int32)
        self._rays: dict[tuple[int, int, float], np.ndarray] = {}

    def _camera_rays(self, camera: CameraConfig) -> np.ndarray:
        key = (camera.width, camera.height, camera.hfov)
        if key not in self._rays:
            self._rays[key] = camera_rays(*key)
        return self._rays[key]

    def cast(self, position: Sequence[float], yaw: float, camera: CameraConfig) -> Hits:
        """Cast the camera's pixel rays from the agent pose ``(position, yaw)``.

        Embree finds the first triangle of each ray; the depth is then solved exactly on that
        triangle's plane in float64. Ray directions keep a camera-frame z component of −1, so
        the ray parameter of the hit is the z-depth itself.
        """
        origin = camera_origin(position, yaw, camera)
        rays = self._camera_rays(camera)
        directions = rotate_yaw(rays, yaw, np.float32)
        origins = np.empty_like(directions)
        origins[:] = origin - self._frame
        face = np.asarray(self._scene.run(origins, directions), dtype=np.intp)
        # plane n·p = c of the hit face: depth = (c − n·o) / (n·d), n turned into the camera
        # frame (d = (x, y, −1) there); index −1 (no hit) reads an appended face with gap 0
        normals = rotate_yaw(self._normals, -yaw)
        gap = np.append(self._offsets - np.einsum("ij,j->i", self._normals, origin), 0.0)
        nx, ny = np.append(normals[:, 0], 0.0), np.append(normals[:, 1], 0.0)
        nz = np.append(normals[:, 2], 1.0)
        facing = nx[face] * rays[:, 0] + ny[face] * rays[:, 1] - nz[face]
        facing[np.abs(facing) < 1e-12] = -1.0
        depth = np.maximum(gap[face] / facing, 0.0)
        return Hits(face, depth)

    def rgb(self, hits: Hits, camera: CameraConfig) -> np.ndarray:
        """The RGB image of a cast (uint8 H×W×3)."""
        return self._face_rgb[hits.face].reshape(camera.height, camera.width, 3)

    def depth(self, hits: Hits, camera: DepthConfig) -> np.ndarray:
        """The depth image of a cast as habitat's depth sensor gives it (float32 H×W×1)."""
        depth = np.clip(hits.depth, camera.min_depth, camera.max_depth)
        if camera.normalize_depth:
            depth = (depth - camera.min_depth) / (camera.max_depth - camera.min_depth)
        return depth.astype(np.float32).reshape(camera.height, camera.width, 1)

    def semantic(self, hits: Hits, camera: CameraConfig) -> np.ndarray:
        """The semantic image of a cast (int32 H×W×1 semantic ids)."""
        return self._face_semantic[hits.face].reshape(camera.height, camera.width, 1)

    def render(
        self, position: Sequence[float], yaw: float, protocol: ObservationProtocol
    ) -> dict[str, np.ndarray]:
        """The protocol's sensors at the agent pose, keyed by sensor name (one cast per optics)."""
        casts: dict[tuple[object, ...], Hits] = {}
        images: dict[str, np.ndarray] = {}
        for name in protocol.sensors:
            camera = getattr(protocol, name)
            if camera.optics not in casts:
                casts[camera.optics] = self.cast(position, yaw, camera)
            hits = casts[camera.optics]
            images[name] = getattr(self, name)(hits, camera)
        return images
