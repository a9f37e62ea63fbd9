"""Egocentric RGB, depth and semantic images ray-cast from the composed scene mesh (headless).

The renderer casts one ray per pixel through the scene's composed mesh
(:func:`condvln.scene.mesh.compose_scene_mesh`, the same trimesh mesh as the habitat GLB
export) with Embree through ``embreex``, the wheels trimesh's own ray caster uses (no GL
context, no system libraries). Embree is called directly (one call gives every pixel's hit
triangle); one compiled pass (:mod:`condvln.sim._shading`) then reads the images off the hits.
One cast serves every sensor with the same optics; sensors differ only in what they read off
the hit:

* ``rgb``: the hit surface's material, Lambert-shaded (uint8 H×W×3; black where a ray leaves the
  scene; see *Shading* below);
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

**Shading.** A pixel's colour is ``albedo · light · pattern`` (clipped to 255):

* ``light = AMBIENT + KEY · max(0, n·k) + FILL · max(0, n·f)`` with the face normal ``n`` turned
  towards the camera (both sides of a face are lit as seen), the unit key light ``k`` (from
  above, +X and +Z) and a weaker fill ``f`` from the opposite side (:data:`KEY_LIGHT`,
  :data:`FILL_LIGHT`). Walls facing +X, −X, +Z and −Z therefore get four different levels
  (0.75, 0.44, 0.52, 0.63 of their albedo), floors 0.89 and ceilings 0.40.
* ``albedo`` per category: object categories keep the mesh's colour
  (:func:`~condvln.scene.mesh.category_color`); floors are wood (:data:`WOOD_ALBEDO`) or, in
  kitchens, bathrooms and similar rooms (:data:`TILED_ROOMS`), tile; walls take one of the
  :data:`PAINTS` chosen by the room id; ceilings :data:`CEILING_ALBEDO`.
* ``pattern``, procedural from the hit point's world coordinates
  (:mod:`condvln.sim._shading`): staggered planks with a tint each and dark seams, square tiles
  with grout lines, faint vertical wallpaper stripes with a dark baseboard at the foot of the
  wall; the pattern's contrast fades with depth so thin lines do not alias far away.

A camera inside a wall or outside the house still gets a defined image: rays from inside a solid
hit its inner faces (Embree intersects both sides), rays that leave the scene read background.
The same pose always renders the same bytes.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from embreex import rtcore_scene
from embreex.mesh_construction import TriangleMesh

from condvln.sim import _shading
from condvln.sim.protocol import CameraConfig, DepthConfig, ObservationProtocol

if TYPE_CHECKING:
    from condvln.scene.mesh import MeshInstance, SceneMesh
    from condvln.scene.model import Scene

BACKGROUND = 0
"""Semantic id of pixels whose ray hits nothing (mesh instance ids start at 1)."""

KEY_LIGHT = (0.6, 0.7, 0.2)
"""Direction towards the key light (normalised before use)."""

FILL_LIGHT = (-0.15, 0.3, -0.9)
"""Direction towards the fill light, from the key's opposite side (normalised before use)."""

AMBIENT, KEY, FILL = 0.4, 0.55, 0.25
"""Ambient level and the strengths of the key and fill lights."""

WOOD_ALBEDO = (156, 108, 70)
TILE_ALBEDO = (206, 204, 198)
CEILING_ALBEDO = (238, 238, 234)
PAINTS = ((222, 214, 198), (205, 212, 200), (200, 208, 216), (226, 206, 188), (214, 206, 222))
"""Albedos (RGB 0–255) of wooden and tiled floors, ceilings and the wall paints."""

TILED_ROOMS = frozenset({"kitchen", "bathroom", "laundry room", "utility room", "garage"})
"""Room types whose floor is tiled (other rooms have wooden floors)."""


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
    """One cast of a camera: the hit face of every pixel (row-major, H × W) and the geometry to
    read the images off it.

    Attributes:
        face: Hit face index, ``-1`` where the ray hits nothing.
        origin: The camera position (world frame).
        yaw: The camera heading.
        turned: Per face its normal in the camera frame, plus a last ``(0, 0, 1)`` for "no hit".
        gap: Per face ``c − n·o`` of its plane ``n·p = c`` (negative: the camera sees its front),
            plus a last 0 for "no hit".
    """

    face: np.ndarray
    origin: np.ndarray
    yaw: float
    turned: np.ndarray
    gap: np.ndarray


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
    x, y, z = camera.position
    c, s = math.cos(yaw), math.sin(yaw)  # the offset turned as rotate_yaw turns it
    return np.array([position[0] + (c * x + s * z), position[1] + y, position[2] + (c * z - s * x)])


class Renderer:
    """Renders a scene's composed mesh from agent poses.

    Args:
        scene_mesh: The composed mesh with one instance per face.
        room_types: Room id → room type, for the floor materials (wood when not given).
    """

    def __init__(self, scene_mesh: SceneMesh, room_types: Mapping[str, str] | None = None) -> None:
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
        triangles = np.asarray(mesh.triangles, dtype=np.float64).reshape(-1, 3, 3)
        normals = np.ascontiguousarray(
            np.asarray(mesh.face_normals, dtype=np.float64).reshape(-1, 3)
        )
        self._normals = normals
        self._offsets = np.einsum("ij,ij->i", normals, triangles[:, 0, :])
        albedo, material = _materials(instances, room_types or {})
        self._albedo = np.vstack([albedo[slot], np.zeros((1, 3))])  # and black: no hit
        self._material = np.ascontiguousarray(material[slot])
        self._light = np.stack([_light(normals), _light(-normals)])  # seen from front, back
        self._base = np.ascontiguousarray(triangles[:, :, 1].min(axis=1))
        self._face_semantic = np.append(ids[slot], BACKGROUND).astype(np.int32)
        self._rays: dict[tuple[int, int, float], tuple[np.ndarray, np.ndarray]] = {}
        self._casts: tuple[object, dict[tuple[object, ...], Hits]] = (None, {})

    @classmethod
    def from_scene(cls, scene: Scene) -> Renderer:
        """The renderer of ``scene``'s composed mesh, with its rooms' floor materials."""
        from condvln.scene.mesh import compose_scene_mesh  # trimesh: only when rendering

        return cls(compose_scene_mesh(scene), {room.id: room.room_type for room in scene.rooms})

    def _optics(self, camera: CameraConfig) -> tuple[np.ndarray, np.ndarray]:
        """Camera-frame ray components of a camera: x per column, y per row."""
        key = (camera.width, camera.height, camera.hfov)
        if key not in self._rays:
            focal = 0.5 * camera.width / math.tan(math.radians(0.5 * camera.hfov))
            cols = (np.arange(camera.width, dtype=np.float64) + 0.5 - 0.5 * camera.width) / focal
            rows = -(np.arange(camera.height, dtype=np.float64) + 0.5 - 0.5 * camera.height)
            self._rays[key] = (cols, rows / focal)
        return self._rays[key]

    def cast(self, position: Sequence[float], yaw: float, camera: CameraConfig) -> Hits:
        """Cast the camera's pixel rays from the agent pose ``(position, yaw)``.

        Embree finds the first triangle of each ray; :meth:`images` then solves the depth
        exactly on that triangle's plane in float64. Ray directions keep a camera-frame z
        component of −1, so the ray parameter of the hit is the z-depth itself.
        """
        origin = camera_origin(position, yaw, camera)
        cols, rows = self._optics(camera)
        c, s = math.cos(yaw), math.sin(yaw)
        directions = _shading.world_rays(cols, rows, c, s)
        # every ray starts at the camera: one origin row repeated (stride 0) for Embree
        start = (origin - self._frame).astype(np.float32)
        face = self._scene.run(np.broadcast_to(start, directions.shape), directions)
        # plane n·p = c of each face: depth = (c − n·o) / (n·d), n turned into the camera frame
        turned, gap = _shading.face_planes(self._normals, self._offsets, origin, c, s)
        return Hits(face, origin, yaw, turned, gap)

    def images(self, hits: Hits, cameras: Mapping[str, CameraConfig]) -> dict[str, np.ndarray]:
        """The images of ``cameras`` (sensor name → camera, all with the cast's optics)."""
        camera = next(iter(cameras.values()))
        cols, rows = self._optics(camera)
        shape, count = (camera.height, camera.width), len(hits.face)
        rgb = np.empty((count if "rgb" in cameras else 0, 3), dtype=np.uint8)
        depth = np.empty(count if "depth" in cameras else 0, dtype=np.float32)
        semantic = np.empty(count if "semantic" in cameras else 0, dtype=np.int32)
        sensor = cameras.get("depth")
        if isinstance(sensor, DepthConfig):
            span = (sensor.min_depth, sensor.max_depth, sensor.normalize_depth)
        else:
            span = (0.0, 1.0, False)
        surfaces = (
            (math.cos(hits.yaw), math.sin(hits.yaw)),
            hits.origin,
            self._light,
            self._albedo,
            self._material,
            self._normals,
            self._base,
            hits.gap,
        )
        _shading.pixels(
            hits.face,
            cols,
            rows,
            hits.turned,
            surfaces,
            span,
            self._face_semantic,
            rgb,
            depth,
            semantic,
        )
        out = {"rgb": rgb, "depth": depth, "semantic": semantic}
        return {name: out[name].reshape(*shape, -1) for name in cameras}

    def render(
        self, position: Sequence[float], yaw: float, protocol: ObservationProtocol
    ) -> dict[str, np.ndarray]:
        """The protocol's sensors at the agent pose, keyed by sensor name (one cast per optics).

        The casts of the previous call are kept: at the same pose (a turn-free step that did not
        move, a blocked move) the images are read off them again without casting.
        """
        groups: dict[tuple[object, ...], dict[str, CameraConfig]] = {}
        for name in protocol.sensors:
            camera = getattr(protocol, name)
            groups.setdefault(camera.optics, {})[name] = camera
        pose = (tuple(position), yaw)
        casts = self._casts[1] if self._casts[0] == pose else {}
        images: dict[str, np.ndarray] = {}
        for optics, cameras in groups.items():
            if optics not in casts:
                casts[optics] = self.cast(position, yaw, next(iter(cameras.values())))
            images.update(self.images(casts[optics], cameras))
        self._casts = (pose, casts)
        return {name: images[name] for name in protocol.sensors}


def _light(normals: np.ndarray) -> np.ndarray:
    """Lambert light factor per face normal: ambient plus the key and fill lights."""
    key = np.asarray(KEY_LIGHT) / np.linalg.norm(KEY_LIGHT)
    fill = np.asarray(FILL_LIGHT) / np.linalg.norm(FILL_LIGHT)
    lit = KEY * np.maximum(normals @ key, 0.0) + FILL * np.maximum(normals @ fill, 0.0)
    return np.ascontiguousarray(AMBIENT + lit)


def _paint(room_id: str | None) -> tuple[int, int, int]:
    """The wall paint of a room, chosen by a hash of its id (the same in every run)."""
    digest = hashlib.sha256((room_id or "").encode("utf-8")).digest()
    return PAINTS[digest[0] % len(PAINTS)]


def _materials(
    instances: Sequence[MeshInstance], room_types: Mapping[str, str]
) -> tuple[np.ndarray, np.ndarray]:
    """Albedo ``(n, 3)`` float64 and material code ``(n,)`` of every mesh instance."""
    albedo = np.zeros((len(instances), 3))
    material = np.full(len(instances), _shading.PLAIN, dtype=np.int64)
    for k, inst in enumerate(instances):
        if inst.kind == "floor":
            tiled = room_types.get(inst.room_id or "") in TILED_ROOMS
            albedo[k] = TILE_ALBEDO if tiled else WOOD_ALBEDO
            material[k] = _shading.TILE if tiled else _shading.WOOD
        elif inst.kind == "wall":
            albedo[k], material[k] = _paint(inst.room_id), _shading.PAINT
        elif inst.kind == "ceiling":
            albedo[k] = CEILING_ALBEDO
        else:
            albedo[k] = inst.color
    return albedo, material
