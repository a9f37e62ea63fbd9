"""Where habitat finds each scene: episode ``scene_id`` s and the files written per composed scene.

``scene_id`` is relative to the scenes folder habitat-lab / VLN-CE join it with (``SCENES_DIR``;
the readers strip a leading ``data/scene_datasets/`` first):

| source | ``scene_id`` | ``SCENES_DIR`` |
|---|---|---|
| ``mp3d`` | ``mp3d/{scan}/{scan}.glb`` | the user's scene datasets folder (VLN-CE: ``data/scene_datasets``) |
| ``gibson`` | ``gibson/{name}.glb`` | the same |
| ``replicacad`` | ``replica_cad/configs/scenes/{name}.scene_instance.json`` (episodes also carry ``scene_dataset_config``) | the same |
| every other source | ``scenes/{stem}.glb`` — the composed GLB CondVLN writes | the dataset folder |

The CondVLN scene JSON stays at ``scenes/{stem}.json`` and each episode names it in
``info.condvln.scene_file`` (test episodes, which carry no ``info``, find it through
``scenes/index.json``; see :func:`condvln.vlnce.scene_json_path`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath

import orjson

from condvln.habitat.export import render_glb, semantic_glb
from condvln.habitat.semantics import (
    descriptor_text,
    scene_instance,
    semantic_config,
    stage_config,
)
from condvln.scene.mesh import compose_scene_mesh
from condvln.scene.model import Scene

DEFAULT_SCENES_DIR = "data/scene_datasets"
"""VLN-CE's and habitat-lab's default scenes folder."""

REPLICACAD_DATASET_CONFIG = "data/scene_datasets/replica_cad/replicaCAD.scene_dataset_config.json"
"""The ReplicaCAD scene dataset config an episode names (relative to where habitat-lab runs)."""

REAL_ASSET_SOURCES = ("mp3d", "gibson", "replicacad")
"""Sources whose scenes have meshes of their own: episodes point at the user's assets."""


@dataclass(frozen=True, slots=True)
class HabitatScene:
    """How habitat loads one scene.

    Attributes:
        scene_id: The episode's ``scene_id`` (relative to ``SCENES_DIR``).
        scene_dataset_config: The episode's ``scene_dataset_config`` when one is needed.
        composed: True when CondVLN writes the mesh (``scene_id`` is in the dataset folder).
    """

    scene_id: str
    scene_dataset_config: str | None
    composed: bool


def habitat_scene(scene: Scene, scene_file: str) -> HabitatScene:
    """Where habitat finds ``scene``, whose CondVLN JSON is ``scene_file`` (dataset-relative).

    >>> from condvln.scene.model import Room, Scene
    >>> room = Room(id="r", room_type="kitchen", label="k", floor_polygon=((0, 0), (1, 0), (1, 1)))
    >>> habitat_scene(Scene(id="mp3d/17DRP5sb8fy", source="mp3d", rooms=(room,)), "x").scene_id
    'mp3d/17DRP5sb8fy/17DRP5sb8fy.glb'
    >>> habitat_scene(Scene(id="procedural/seed-3", source="procedural", rooms=(room,)),
    ...               "scenes/procedural__seed-3.json").scene_id
    'scenes/procedural__seed-3.glb'
    """
    name = scene.id.split("/", 1)[1] if "/" in scene.id else scene.id
    if scene.source == "mp3d":
        return HabitatScene(f"mp3d/{name}/{name}.glb", None, composed=False)
    if scene.source == "gibson":
        return HabitatScene(f"gibson/{name}.glb", None, composed=False)
    if scene.source == "replicacad":
        scene_id = f"replica_cad/configs/scenes/{name}.scene_instance.json"
        return HabitatScene(scene_id, REPLICACAD_DATASET_CONFIG, composed=False)
    return HabitatScene(str(PurePosixPath(scene_file).with_suffix(".glb")), None, composed=True)


def composed_scene_files(scene: Scene, scene_file: str) -> dict[str, bytes]:
    """Every habitat file of a composed scene, keyed by dataset-relative path.

    The GLB and semantic GLB (:mod:`condvln.habitat.export`), the semantic descriptor, semantic
    config, stage config and scene instance (:mod:`condvln.habitat.semantics`), all beside
    ``scene_file``.
    """
    path = PurePosixPath(scene_file)
    name = path.stem
    folder = path.parent
    scene_mesh = compose_scene_mesh(scene)

    def doc(value: object) -> bytes:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2)

    return {
        str(folder / f"{name}.glb"): render_glb(scene_mesh),
        str(folder / f"{name}.semantic.glb"): semantic_glb(scene_mesh),
        str(folder / f"{name}_semantic.txt"): descriptor_text(scene, scene_mesh).encode(),
        str(folder / f"{name}.semantic_config.json"): doc(semantic_config(name, scene, scene_mesh)),
        str(folder / f"{name}.stage_config.json"): doc(stage_config(name)),
        str(folder / f"{name}.scene_instance.json"): doc(scene_instance(name)),
    }
