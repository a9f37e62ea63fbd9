"""habitat-sim metadata of a composed scene: stage, scene instance, semantic config, descriptor.

Files per scene ``NAME`` (all beside ``NAME.glb`` in the dataset's ``scenes/`` folder), in the
formats habitat-sim's attribute managers and semantic-scene loaders read:

- ``NAME_semantic.txt`` — the semantic scene descriptor in HM3D's text format: the header line
  ``HM3D Semantic Annotations``, then one line per instance
  ``instance_id,RRGGBB,"category",region_index``. habitat-sim builds ``sim.semantic_scene.objects``
  from it (``semantic_id`` = our instance id, ``category.name()`` = our category) and maps the
  semantic mesh's vertex colours to those ids for the semantic sensor. Its name is the one
  habitat-sim looks for beside a bare ``NAME.glb`` (``*_semantic.txt``).
- ``NAME.semantic_config.json`` — semantic attributes: the semantic asset ``NAME.semantic.glb``,
  the descriptor, their frame, ``region_annotations`` (one region per room: the floor outline as
  ``poly_loop``, ``floor_height``, ``extrusion_height`` up to the ceiling, bounds, ``label`` = the
  room type), and ``user_defined.condvln_instances``: instance id → our object id, category, room
  and kind, so every object id appears exactly once.
- ``NAME.stage_config.json`` — the stage: render / collision asset ``NAME.glb``, semantic asset
  and descriptor, up / front of the Matterport convention the GLB's root node encodes (see
  :mod:`condvln.habitat.export`), and the navmesh ``NAME.navmesh`` once one exists.
- ``NAME.scene_instance.json`` — the scene: the stage, its semantic scene and (once it exists)
  navmesh handles.

and, once per dataset, ``condvln.scene_dataset_config.json`` at the dataset root, which points
habitat-sim's stage, scene-instance and semantic managers at ``scenes/``. Navmesh files are named
only where they exist: ``condvln generate`` writes none (habitat-sim then computes its own from
the agent's body, as habitat-lab asks it to), ``condvln habitat navmesh`` bakes them and names
them in these files (:func:`stage_config`, :func:`scene_instance`, :func:`dataset_config`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from shapely.geometry.base import BaseGeometry

from condvln.habitat.export import semantic_color
from condvln.scene.ground import room_floor
from condvln.scene.mesh import SceneMesh, ceiling_top
from condvln.scene.model import Scene

SSD_HEADER = "HM3D Semantic Annotations"
"""First line habitat-sim requires of an HM3D-format semantic scene descriptor."""

DATASET_CONFIG = "condvln.scene_dataset_config.json"
"""File name of the dataset-level scene dataset config (at the dataset root)."""

MP3D_UP = [0.0, 0.0, 1.0]
MP3D_FRONT = [0.0, 1.0, 0.0]
"""Up / front of the assets in their own space: the Matterport convention the GLB root encodes."""


def descriptor_text(scene: Scene, scene_mesh: SceneMesh) -> str:
    """The HM3D-format semantic scene descriptor (one line per instance, region = room index)."""
    rooms = {room.id: i for i, room in enumerate(scene.rooms)}
    lines = [SSD_HEADER]
    for inst in scene_mesh.instances:
        r, g, b = semantic_color(inst.instance_id)
        category = inst.category.replace('"', "'")
        region = rooms.get(inst.room_id, -1) if inst.room_id is not None else -1
        lines.append(f'{inst.instance_id},{r:02X}{g:02X}{b:02X},"{category}",{region}')
    return "\n".join(lines) + "\n"


def _outline(floor: BaseGeometry) -> list[tuple[float, float]]:
    """The exterior ring of a floor (its largest part), without the closing point."""
    parts = list(getattr(floor, "geoms", [floor]))
    largest = max(parts, key=lambda p: p.area)
    return [(float(x), float(z)) for x, z in list(largest.exterior.coords)[:-1]]


def region_annotations(scene: Scene) -> list[dict[str, Any]]:
    """One habitat-sim region annotation per room with floor geometry, in room order."""
    regions = []
    for room in scene.rooms:
        floor = room_floor(room)
        if floor is None or floor.is_empty:
            continue
        loop = _outline(floor)
        top = ceiling_top(room)
        xs = [p[0] for p in loop]
        zs = [p[1] for p in loop]
        regions.append(
            {
                "name": room.id,
                "label": room.room_type,
                "poly_loop": [[x, room.floor_height, z] for x, z in loop],
                "floor_height": room.floor_height,
                "extrusion_height": top - room.floor_height,
                "min_bounds": [min(xs), room.floor_height, min(zs)],
                "max_bounds": [max(xs), top, max(zs)],
            }
        )
    return regions


def semantic_config(name: str, scene: Scene, scene_mesh: SceneMesh) -> dict[str, Any]:
    """The ``NAME.semantic_config.json`` document."""
    instances = {
        str(inst.instance_id): {
            "object_id": inst.object_id,
            "category": inst.category,
            "room_id": inst.room_id,
            "kind": inst.kind,
        }
        for inst in scene_mesh.instances
    }
    return {
        "semantic_asset": f"{name}.semantic.glb",
        "semantic_descriptor_filename": f"{name}_semantic.txt",
        "semantic_up": MP3D_UP,
        "semantic_front": MP3D_FRONT,
        "has_semantic_textures": False,
        "region_annotations": region_annotations(scene),
        "user_defined": {"condvln_scene_id": scene.id, "condvln_instances": instances},
    }


def stage_config(name: str, navmesh: bool = False) -> dict[str, Any]:
    """The ``NAME.stage_config.json`` document (``navmesh``: name ``NAME.navmesh``)."""
    return {
        "render_asset": f"{name}.glb",
        "collision_asset": f"{name}.glb",
        "semantic_asset": f"{name}.semantic.glb",
        "semantic_descriptor_filename": f"{name}_semantic.txt",
        **({"nav_asset": f"{name}.navmesh"} if navmesh else {}),
        "up": MP3D_UP,
        "front": MP3D_FRONT,
        "semantic_up": MP3D_UP,
        "semantic_front": MP3D_FRONT,
        "units_to_meters": 1.0,
        "shader_type": "material",
    }


def scene_instance(name: str, navmesh: bool = False) -> dict[str, Any]:
    """The ``NAME.scene_instance.json`` document (the stage only: objects are part of it;
    ``navmesh``: name the dataset's navmesh instance ``NAME``)."""
    return {
        "stage_instance": {"template_name": name},
        "object_instances": [],
        **({"navmesh_instance": name} if navmesh else {}),
        "semantic_scene_instance": name,
    }


def dataset_config(names: list[str], navmeshes: Sequence[str] = ()) -> dict[str, Any]:
    """The dataset-level ``condvln.scene_dataset_config.json`` (paths relative to it); only
    the scenes in ``navmeshes`` (those with a ``scenes/NAME.navmesh`` file) get a navmesh."""
    return {
        "stages": {"paths": {".json": ["scenes/*.stage_config.json"]}},
        "objects": {"paths": {".json": []}},
        "light_setups": {"paths": {".json": []}},
        "scene_instances": {"paths": {".json": ["scenes/*.scene_instance.json"]}},
        "semantic_scene_descriptor_instances": {
            "paths": {".json": ["scenes/*.semantic_config.json"]}
        },
        "navmesh_instances": {
            name: f"scenes/{name}.navmesh" for name in sorted(names) if name in set(navmeshes)
        },
    }
