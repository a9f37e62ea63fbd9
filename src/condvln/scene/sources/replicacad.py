"""Source ``replicacad``: habitat-sim scene instances (``*.scene_instance.json``), e.g. ReplicaCAD.

ReplicaCAD is authored in the Habitat frame (Y up, −Z forward), so positions are used as they
are. A scene instance lists ``object_instances`` and ``articulated_object_instances``, each with
a ``template_name``, a ``translation``, a ``rotation`` quaternion **``[w, x, y, z]``**, and
optional ``uniform_scale`` / ``non_uniform_scale`` and ``translation_origin``. For each instance:

* **category** — from the template name: its last path part, without ``frl_apartment_`` and a
  trailing number (``objects/frl_apartment_bowl_01`` → ``"bowl"``, ``kitchenCupboard_01`` →
  ``"kitchen cupboard"``), normalised; the label is the last path part as written;
* **yaw** — :func:`~condvln.frames.quaternion_to_yaw` of the quaternion reordered with
  :func:`~condvln.frames.xyzw_from_wxyz`;
* **box** — the world AABB of the instance's local box, scaled by the instance scale, rotated by
  its quaternion and translated. The local box, first found wins:

  1. the ``.glb`` render asset of the object's ``*.object_config.json`` (or a ``.glb`` named after
     the template): the union of the POSITION accessors' ``min`` / ``max`` of every mesh node,
     transformed by the node matrices (read from the GLB's JSON chunk only; no vertex is
     decoded), scaled by the config's ``scale``. habitat-sim places rigid objects by their
     centre of mass unless ``translation_origin`` is ``asset_local``: the box is then shifted by
     the config's ``COM``, or centred when it gives none (habitat-sim derives the COM from the
     bounding box);
  2. the size of the category in the procedural catalogue (``condvln/data/catalogue.json``, via
     :data:`CATALOGUE_ALIASES`), centred on the translation;
  3. otherwise no box: the object gets the radius :data:`DEFAULT_RADIUS` around its translation.

  Config files are looked up next to the scene instance and in its two parent folders, in
  ``<template>.object_config.json``, ``configs/<template>…``, ``objects/<name>…`` and
  ``configs/objects/<name>…`` (the ReplicaCAD layout: ``configs/scenes/``, ``configs/objects/``,
  ``objects/*.glb``). Articulated objects (URDF) always use steps 2–3. Config ``up`` / ``front``
  overrides are not applied (ReplicaCAD objects use the defaults).

**Rooms.** When a semantic config with ``region_annotations`` is given (``semantic=PATH``) or
found (``<scene>.semantic_config.json`` next to the scene instance, or the scene's
``semantic_scene_instance`` name in ``.``, ``semantics/`` or ``configs/semantics/`` of the same
folders), every region becomes a room: ``poly_loop`` → floor polygon (``x``, ``z``),
``floor_height``, ``extrusion_height`` → ceiling height, ``label`` → room type; an object
belongs to the first region whose outline holds its centre and whose height range holds the
centre's ``y`` (within :data:`VERTICAL_TOLERANCE`); others are kept out and counted
(``objects_outside_regions``). Touching regions get ``kind="opening"`` doors. Without regions the
scene is **one room** enclosing all objects (their footprints' rectangle padded by 0.5 m, floor
at the lowest box bottom), which gives single-room apartments the 0.5 m success radius.
The stage is recorded in ``scene.metadata`` only.
"""

from __future__ import annotations

import math
import os
import re
import struct
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from shapely.geometry import Point, Polygon

from condvln.errors import SceneFormatError
from condvln.frames import quaternion_to_yaw, xyzw_from_wxyz
from condvln.io import inside, parse_json, read_bytes, read_json
from condvln.scene.catalogue import load_catalogue
from condvln.scene.labels import normalize_category, normalize_room_type
from condvln.scene.model import AABB, Room, Scene, SceneObject, Vec3
from condvln.scene.sources import SceneSource
from condvln.scene.sources._geometry import counter_clockwise, enclosing_room, openings
from condvln.scene.sources.procthor import as_list, as_mapping, as_number, as_text

DEFAULT_RADIUS = 0.25
"""Bounding radius (m) of an object with neither a mesh nor a catalogue size."""

VERTICAL_TOLERANCE = 0.25
"""An object's centre may lie this far (m) below a region's floor and above its top."""

CATALOGUE_ALIASES: dict[str, str] = {
    "bin": "garbage can",
    "chest of drawers": "dresser",
    "choppingboard": "cutting board",
    "clock": "wall clock",
    "cushion": "pillow",
    "indoor plant": "house plant",
    "kitchen counter": "counter top",
    "kitchen cupboard": "wall cabinet",
    "picture": "painting",
    "refrigerator": "fridge",
    "sponge dish": "dish sponge",
    "tv object": "television",
    "tvstand": "tv stand",
}
"""ReplicaCAD category → catalogue category, for sizes only (the category itself is kept)."""

GLB_MAGIC = b"glTF"
GLB_JSON_CHUNK = 0x4E4F534A
TEMPLATE_PREFIX = "frl_apartment_"
_TRAILING_NUMBER = re.compile(r"[_\-\s]*\d+$")


def template_category(template: str) -> tuple[str, str]:
    """(category, label) of a template name.

    >>> template_category("objects/frl_apartment_bowl_01")
    ('bowl', 'frl_apartment_bowl_01')
    >>> template_category("kitchenCupboard_01")
    ('kitchen cupboard', 'kitchenCupboard_01')
    """
    label = template.rstrip("/").rsplit("/", 1)[-1]
    name = label.removeprefix(TEMPLATE_PREFIX)
    name = _TRAILING_NUMBER.sub("", name) or name
    return normalize_category(name) or label, label


# --- small geometry ------------------------------------------------------------------------------


def _numbers(value: Any, n: int, record: str, field: str) -> tuple[float, ...]:
    items = as_list(value, record, field)
    if len(items) != n:
        raise SceneFormatError(
            f"must have {n} numbers, got {len(items)}", record=record, field=field
        )
    return tuple(as_number(v, record, field) for v in items)


def rotation_matrix(x: float, y: float, z: float, w: float) -> np.ndarray:
    """3×3 rotation of a (normalised) ``[x, y, z, w]`` quaternion.

    >>> (rotation_matrix(0.0, math.sqrt(0.5), 0.0, math.sqrt(0.5)).round(6) + 0.0).tolist()
    [[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]]
    """
    q = np.array([x, y, z, w], dtype=np.float64)
    x, y, z, w = q / np.linalg.norm(q)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def _corners(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The 8 corners of the box ``[lo, hi]`` as a ``(8, 3)`` array."""
    return np.array([[(lo, hi)[i >> k & 1][k] for k in range(3)] for i in range(8)])


# --- glTF / GLB bounds ---------------------------------------------------------------------------


def _node_matrix(node: Mapping[str, Any], record: str) -> np.ndarray:
    """The 4×4 local transform of a glTF node (``matrix``, else translation · rotation · scale)."""
    if "matrix" in node:
        return np.array(_numbers(node["matrix"], 16, record, "matrix")).reshape(4, 4).T
    out = np.eye(4)
    rotation = _numbers(node.get("rotation", [0, 0, 0, 1]), 4, record, "rotation")
    if math.hypot(*rotation) <= 1e-12:
        raise SceneFormatError("must be a non-zero quaternion", record=record, field="rotation")
    scale = _numbers(node.get("scale", [1, 1, 1]), 3, record, "scale")
    out[:3, :3] = rotation_matrix(*rotation) @ np.diag(scale)
    out[:3, 3] = _numbers(node.get("translation", [0, 0, 0]), 3, record, "translation")
    return out


def _mesh_corners(gltf: Mapping[str, Any], mesh_index: Any, matrix: np.ndarray) -> np.ndarray:
    meshes = as_list(gltf.get("meshes"), "glTF", "meshes")
    accessors = as_list(gltf.get("accessors"), "glTF", "accessors")
    if not isinstance(mesh_index, int) or not 0 <= mesh_index < len(meshes):
        raise SceneFormatError(
            f"names unknown mesh {mesh_index!r}", record="glTF node", field="mesh"
        )
    record = f"mesh {mesh_index}"
    out = []
    for primitive in as_list(
        as_mapping(meshes[mesh_index], record, "mesh").get("primitives"), record, "primitives"
    ):
        attributes = as_mapping(
            as_mapping(primitive, record, "primitives").get("attributes"), record, "attributes"
        )
        index = attributes.get("POSITION")
        if not isinstance(index, int) or not 0 <= index < len(accessors):
            raise SceneFormatError(
                f"names unknown accessor {index!r}", record=record, field="POSITION"
            )
        accessor = as_mapping(accessors[index], f"accessor {index}", "accessor")
        lo = np.array(_numbers(accessor.get("min"), 3, f"accessor {index}", "min"))
        hi = np.array(_numbers(accessor.get("max"), 3, f"accessor {index}", "max"))
        corners = np.c_[_corners(lo, hi), np.ones(8)] @ matrix.T
        out.append(corners[:, :3])
    return np.concatenate(out) if out else np.zeros((0, 3))


def _root_nodes(gltf: Mapping[str, Any], nodes: list[Any]) -> list[Any]:
    scenes = gltf.get("scenes")
    if scenes:
        index = gltf.get("scene", 0)
        if not isinstance(index, int) or not 0 <= index < len(scenes):
            raise SceneFormatError(f"names unknown scene {index!r}", record="glTF", field="scene")
        return as_list(
            as_mapping(scenes[index], "glTF scene", "scene").get("nodes", []), "glTF scene", "nodes"
        )
    children = set()
    for i, node in enumerate(nodes):
        listed = node.get("children", []) if isinstance(node, Mapping) else []
        for child in as_list(listed, f"node {i}", "children"):
            if isinstance(child, bool) or not isinstance(child, int):
                raise SceneFormatError(
                    f"must list node indices, got {child!r}", record=f"node {i}", field="children"
                )
            children.add(child)
    return [i for i in range(len(nodes)) if i not in children]


def _walk(gltf: Mapping[str, Any]) -> Iterator[np.ndarray]:
    """Corner points of every mesh node in world (asset) coordinates."""
    nodes = as_list(gltf.get("nodes", []), "glTF", "nodes")
    if not nodes:
        for mesh_index in range(len(as_list(gltf.get("meshes", []), "glTF", "meshes"))):
            yield _mesh_corners(gltf, mesh_index, np.eye(4))
        return
    stack = [(index, np.eye(4)) for index in _root_nodes(gltf, nodes)]
    seen: set[int] = set()
    while stack:
        index, parent = stack.pop()
        if not isinstance(index, int) or not 0 <= index < len(nodes) or index in seen:
            raise SceneFormatError(
                f"bad or repeated node index {index!r}", record="glTF", field="nodes"
            )
        seen.add(index)
        record = f"node {index}"
        node = as_mapping(nodes[index], record, "node")
        world = parent @ _node_matrix(node, record)
        if "mesh" in node:
            yield _mesh_corners(gltf, node["mesh"], world)
        stack.extend(
            (child, world) for child in as_list(node.get("children", []), record, "children")
        )


def gltf_bounds(gltf: Any) -> tuple[np.ndarray, np.ndarray]:
    """Asset-space AABB ``(lo, hi)`` of a glTF document's meshes, from accessor bounds only.

    Raises:
        SceneFormatError: malformed structure or no mesh with a POSITION accessor.
    """
    gltf = as_mapping(gltf, "glTF", "document")
    points = [p for p in _walk(gltf) if len(p)]
    if not points:
        raise SceneFormatError("no mesh with a POSITION accessor", record="glTF", field="meshes")
    stacked = np.concatenate(points)
    return stacked.min(axis=0), stacked.max(axis=0)


def read_glb_json(path: Path) -> Any:
    """The JSON chunk of a binary glTF (``.glb``) file: magic, version 2, length, chunk 0.

    Raises:
        SceneFormatError: not a GLB, wrong version, truncated, or a chunk that is not JSON.
    """
    data = read_bytes(path, SceneFormatError)
    if len(data) < 20:
        raise SceneFormatError(f"truncated GLB ({len(data)} bytes)", file=str(path), field="header")
    magic, version, length = struct.unpack_from("<4sII", data, 0)
    chunk_length, chunk_type = struct.unpack_from("<II", data, 12)
    problem = None
    if magic != GLB_MAGIC:
        problem = ("header", f"not a GLB file (magic {magic!r})")
    elif version != 2:
        problem = ("header", f"unsupported glTF version {version}")
    elif length > len(data) or 20 + chunk_length > len(data):
        problem = (
            "header",
            f"truncated GLB: header says {max(length, 20 + chunk_length)} bytes, file has {len(data)}",
        )
    elif chunk_type != GLB_JSON_CHUNK:
        problem = ("chunk 0", "first chunk must be JSON")
    if problem is not None:
        raise SceneFormatError(problem[1], file=str(path), field=problem[0])
    try:
        return parse_json(data[20 : 20 + chunk_length], str(path), "chunk 0", SceneFormatError)
    except SceneFormatError as exc:
        raise SceneFormatError(
            f"JSON chunk: {exc.message}", file=str(path), field="chunk 0"
        ) from None


# --- object assets -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LocalBox:
    """An asset's box in its own (config-scaled) frame and its centre of mass, if configured."""

    lo: np.ndarray
    hi: np.ndarray
    com: np.ndarray | None


@dataclass(slots=True)
class _Assets:
    """Finds object configs and ``.glb`` files near the scene instance (cached per template)."""

    roots: tuple[Path, ...]
    cache: dict[str, LocalBox | None] = field(default_factory=dict)

    def find(self, names: Sequence[str]) -> Path | None:
        """The first existing ``root / name``; one that resolves outside the scene tree (the
        last root) through a symlink is refused."""
        for root in self.roots:
            for name in names:
                path = root / name
                if path.is_file():
                    inside(
                        self.roots[-1],
                        str(path.relative_to(self.roots[-1])),
                        record="asset",
                        field=name,
                        error=SceneFormatError,
                    )
                    return path
        return None

    def box(self, template: str) -> LocalBox | None:
        if template not in self.cache:
            self.cache[template] = self._load(template)
        return self.cache[template]

    def _load(self, template: str) -> LocalBox | None:
        base = template.rsplit("/", 1)[-1]
        config_name = f"{template}.object_config.json"
        config = self.find(
            [
                config_name,
                f"configs/{config_name}",
                f"objects/{base}.object_config.json",
                f"configs/objects/{base}.object_config.json",
            ]
        )
        if config is None:
            glb = self.find([f"{template}.glb", f"objects/{base}.glb"])
            return None if glb is None else _glb_box(glb, (1.0, 1.0, 1.0), None)
        try:
            return _config_box(config)
        except SceneFormatError as exc:
            raise exc.with_file(str(config)) from None


def _glb_box(path: Path, scale: Sequence[float], com: np.ndarray | None) -> LocalBox:
    try:
        lo, hi = gltf_bounds(read_glb_json(path))
    except SceneFormatError as exc:
        raise exc.with_file(str(path)) from None
    s = np.array(scale)
    a, b = lo * s, hi * s
    return LocalBox(np.minimum(a, b), np.maximum(a, b), None if com is None else com * s)


def _config_box(path: Path) -> LocalBox | None:
    config = as_mapping(read_json(path, SceneFormatError), "object config", "config")
    render = config.get("render_asset")
    if render is None:
        return None
    glb = Path(os.path.normpath(path.parent / as_text(render, "object config", "render_asset")))
    if glb.suffix.lower() != ".glb" or not glb.is_file():
        return None
    scale = _numbers(config.get("scale", [1, 1, 1]), 3, "object config", "scale")
    com = config.get("COM")
    com_array = None if com is None else np.array(_numbers(com, 3, "object config", "COM"))
    return _glb_box(glb, scale, com_array)


def _catalogue_size(category: str) -> Vec3 | None:
    try:
        return load_catalogue().category(CATALOGUE_ALIASES.get(category, category)).size
    except KeyError:
        return None


# --- instances -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Instance:
    template: str
    translation: np.ndarray
    rotation: np.ndarray  # 3×3
    yaw: float
    scale: np.ndarray
    asset_local: bool
    articulated: bool


def _instance(raw: Any, record: str, default_origin: Any, articulated: bool) -> _Instance:
    data = as_mapping(raw, record, "instance")
    template = as_text(data.get("template_name"), record, "template_name")
    if (
        template.startswith(("/", "~", "\\"))
        or ".." in re.split(r"[/\\]", template)
        or "\0" in template
    ):
        raise SceneFormatError(
            f"must be a relative asset name inside the scene folder, got {template!r}",
            record=record,
            field="template_name",
        )
    record = f"{record} {template!r}"
    translation = _numbers(data.get("translation", [0, 0, 0]), 3, record, "translation")
    w, x, y, z = _numbers(data.get("rotation", [1, 0, 0, 0]), 4, record, "rotation")
    if math.hypot(w, x, y, z) <= 1e-12:
        raise SceneFormatError(
            "must be a non-zero quaternion [w, x, y, z]", record=record, field="rotation"
        )
    uniform = as_number(data.get("uniform_scale", 1.0), record, "uniform_scale")
    non_uniform = _numbers(data.get("non_uniform_scale", [1, 1, 1]), 3, record, "non_uniform_scale")
    origin = data.get("translation_origin", default_origin)
    return _Instance(
        template=template,
        translation=np.array(translation),
        rotation=rotation_matrix(x, y, z, w),
        yaw=quaternion_to_yaw(xyzw_from_wxyz((w, x, y, z))),
        scale=uniform * np.array(non_uniform),
        asset_local=isinstance(origin, str) and origin.lower() == "asset_local",
        articulated=articulated,
    )


def _world_box(inst: _Instance, lo: np.ndarray, hi: np.ndarray) -> AABB:
    a, b = lo * inst.scale, hi * inst.scale
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    center = inst.rotation @ (0.5 * (lo + hi)) + inst.translation
    half = np.abs(inst.rotation) @ (0.5 * (hi - lo))
    return AABB(tuple(center - half), tuple(center + half))  # type: ignore[arg-type]


def _scene_object(
    inst: _Instance, index: int, assets: _Assets, sources: dict[str, int]
) -> SceneObject:
    category, label = template_category(inst.template)
    local = None if inst.articulated else assets.box(inst.template)
    if local is not None:
        offset = (
            0.0
            if inst.asset_local
            else (local.com if local.com is not None else 0.5 * (local.lo + local.hi))
        )
        box, how = _world_box(inst, local.lo - offset, local.hi - offset), "mesh"
    elif (size := _catalogue_size(category)) is not None:
        half = 0.5 * np.array(size)
        box, how = _world_box(inst, -half, half), "catalogue"
    else:
        box, how = None, "default_radius"
    sources[how] += 1
    return SceneObject(
        id=f"{label}|{index}",
        category=category,
        label=label,
        center=box.center if box is not None else tuple(inst.translation),
        aabb=box,
        radius=DEFAULT_RADIUS if box is None else None,
        yaw=inst.yaw,
    )


# --- regions -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Region:
    room: Room
    shape: Polygon
    top: float


def _region(raw: Any, index: int) -> _Region:
    data = as_mapping(raw, f"region #{index}", "region")
    name = as_text(data.get("name"), f"region #{index}", "name")
    record = f"region {name!r}"
    label = as_text(data.get("label"), record, "label")
    loop = [
        _numbers(p, 3, record, "poly_loop")
        for p in as_list(data.get("poly_loop"), record, "poly_loop")
    ]
    if len(loop) < 3:
        raise SceneFormatError("needs at least 3 points", record=record, field="poly_loop")
    floor = as_number(data.get("floor_height", min(p[1] for p in loop)), record, "floor_height")
    extrusion = data.get("extrusion_height")
    height = None if extrusion is None else as_number(extrusion, record, "extrusion_height")
    room = Room(
        id=name,
        room_type=normalize_room_type(label),
        label=label,
        floor_polygon=counter_clockwise([(p[0], p[2]) for p in loop]),
        floor_height=floor,
        ceiling_height=height,
    )
    top = math.inf if height is None else floor + height
    return _Region(room, Polygon(room.floor_polygon), top)


def _region_of(obj: SceneObject, regions: Sequence[_Region]) -> int | None:
    x, y, z = obj.center
    for i, region in enumerate(regions):
        inside_height = (
            region.room.floor_height - VERTICAL_TOLERANCE <= y <= region.top + VERTICAL_TOLERANCE
        )
        if inside_height and region.shape.covers(Point(x, z)):
            return i
    return None


def _semantic_config(path: Path, data: Mapping[str, Any], roots: Sequence[Path]) -> Path | None:
    stem = path.name.removesuffix(".json").removesuffix(".scene_instance")
    beside = path.with_name(f"{stem}.semantic_config.json")
    if beside.is_file():
        return beside
    name = data.get("semantic_scene_instance")
    if not isinstance(name, str) or not name:
        return None
    base = f"{name.rsplit('/', 1)[-1]}.semantic_config.json"
    return _Assets(tuple(roots)).find([base, f"semantics/{base}", f"configs/semantics/{base}"])


def read_regions(path: Path) -> list[_Region]:
    """The ``region_annotations`` of a ``*.semantic_config.json`` (empty when it has none)."""
    try:
        data = as_mapping(read_json(path, SceneFormatError), "semantic config", "config")
        raw = as_list(data.get("region_annotations", []), "semantic config", "region_annotations")
        return [_region(r, i) for i, r in enumerate(raw)]
    except SceneFormatError as exc:
        raise exc.with_file(str(path)) from None


# --- scene ---------------------------------------------------------------------------------------


def _check_scene_instance(data: Any) -> Mapping[str, Any]:
    data = as_mapping(data, "scene instance", "document")
    if "object_instances" in data or "articulated_object_instances" in data:
        return data
    if "region_annotations" in data:
        kind = "a semantic config (region annotations): pass it as semantic=PATH with its scene instance"
    elif "stages" in data or "objects" in data:
        kind = "a scene dataset config: load one of its *.scene_instance.json files"
    else:
        kind = "not a *.scene_instance.json"
    raise SceneFormatError(f"no object_instances: {kind}", field="object_instances")


def _instances(data: Mapping[str, Any]) -> Iterator[_Instance]:
    origin = data.get("translation_origin")
    for key, articulated in (("object_instances", False), ("articulated_object_instances", True)):
        for i, raw in enumerate(as_list(data.get(key, []), "scene instance", key)):
            yield _instance(raw, f"{key}[{i}]", origin, articulated)


def _rooms(
    objects: list[SceneObject], regions: list[_Region], counts: dict[str, int]
) -> list[Room]:
    if not regions:
        if not objects:
            raise SceneFormatError(
                "no objects and no region annotations: nothing to build a room from"
            )
        return [enclosing_room("room_0", "room", "apartment", objects)]
    members: list[list[SceneObject]] = [[] for _ in regions]
    for obj in objects:
        index = _region_of(obj, regions)
        if index is None:
            counts["objects_outside_regions"] += 1
        else:
            members[index].append(obj)
    return [
        Room(
            r.room.id,
            r.room.room_type,
            r.room.label,
            tuple(m),
            r.room.floor_polygon,
            r.room.floor_height,
            r.room.ceiling_height,
        )
        for r, m in zip(regions, members, strict=True)
    ]


def load(reference: str, semantic: str | None = None) -> Scene:
    """Load a habitat-sim ``*.scene_instance.json`` (ReplicaCAD) as a :class:`Scene`.

    Args:
        reference: Path of the scene instance.
        semantic: Optional ``*.semantic_config.json`` with ``region_annotations`` (rooms); by
            default one is looked for next to the scene instance (see the module notes).

    Returns:
        The scene ``replicacad/<name>`` (Habitat frame, as authored).

    Raises:
        SceneFormatError: a one-line message naming the file, the record and the field.
    """
    path = Path(reference)
    try:
        return _load(path, None if semantic is None else Path(semantic))
    except SceneFormatError as exc:
        raise exc.with_file(str(path)) from None


def _load(path: Path, semantic: Path | None) -> Scene:
    roots = tuple(dict.fromkeys([path.parent, path.parent.parent, path.parent.parent.parent]))
    data = _check_scene_instance(read_json(path, SceneFormatError))
    sources = {"mesh": 0, "catalogue": 0, "default_radius": 0}
    assets = _Assets(roots)
    objects = [_scene_object(inst, i, assets, sources) for i, inst in enumerate(_instances(data))]
    semantic = semantic if semantic is not None else _semantic_config(path, data, roots)
    regions = [] if semantic is None else read_regions(semantic)
    counts = {"objects_outside_regions": 0}
    rooms = _rooms(objects, regions, counts)
    stage = data.get("stage_instance")
    stage_name = stage.get("template_name") if isinstance(stage, Mapping) else None
    metadata = {
        "stage": stage_name if isinstance(stage_name, str) else None,
        "semantic_config": None if semantic is None else str(semantic),
        "object_sizes": sources,
        **counts,
    }
    name = path.name.removesuffix(".json").removesuffix(".scene_instance")
    return Scene(f"replicacad/{name}", "replicacad", tuple(rooms), tuple(openings(rooms)), metadata)


SOURCE = SceneSource(
    name="replicacad",
    description="habitat-sim scene instances (ReplicaCAD): objects, glTF sizes, optional regions",
    reference="path of a *.scene_instance.json (+ semantic config / object configs nearby)",
    load=load,
)
