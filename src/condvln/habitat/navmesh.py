"""``condvln habitat navmesh``: bake habitat-sim navmeshes and re-measure every geodesic distance.

For each scene of a dataset, habitat-sim loads the episode's ``scene_id`` (the composed GLB in the
dataset, or the user's Matterport3D / Gibson / ReplicaCAD asset under ``scenes_dir``), recomputes
its navmesh with VLN-CE's agent body (radius 0.1 m, height 1.5 m, max climb 0.2 m — the
:class:`~condvln.nav.agent.AgentSpec` defaults) and saves it:

- composed scenes: ``scenes/NAME.navmesh`` beside ``NAME.glb`` (the name habitat-sim looks for
  next to a bare GLB); the stage config (``nav_asset``), the scene instance and the dataset's
  scene dataset config (``navmesh_instances``) then name it — before baking they name none;
- real assets: ``navmeshes/<scene_id without its extension>.navmesh`` inside the dataset (the
  user's dataset folders are never written).

Then every episode with a stored ``info.geodesic_distance`` (test episodes: from the answers
file) is re-measured start → goal with habitat-sim's path finder through
:class:`~condvln.nav.habitat.HabitatNavigator`, and the differences from ours are summarised in
``navmesh_report.json`` (ours come from the exact engine on the navigable polygon, habitat-sim's
from its voxelised navmesh). Without habitat-sim the command stops before doing anything, with one
line naming what to install.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np
import orjson

from condvln.errors import ConfigError, FormatError
from condvln.habitat.layout import DEFAULT_SCENES_DIR
from condvln.habitat.semantics import DATASET_CONFIG, dataset_config, scene_instance, stage_config
from condvln.io import atomic_write_bytes, read_json
from condvln.nav.agent import AgentSpec
from condvln.nav.habitat import INSTALL_HINT, HabitatNavigator, import_habitat_sim
from condvln.scene.serialize import load_scene
from condvln.vlnce import (
    available_splits,
    load_scene_index,
    load_split,
    scene_json_path,
    split_path,
)

MISSING = f"`condvln habitat navmesh` needs habitat-sim, which is not installed; {INSTALL_HINT}"

REPORT_FILE = "navmesh_report.json"


@dataclass
class NavmeshReport:
    """What was baked and how habitat-sim's geodesic distances compare with ours.

    Attributes:
        navmeshes: Dataset-relative navmesh files written.
        differences: Per re-measured episode, habitat-sim's distance minus ours (m).
        unreachable: Episodes habitat-sim finds no path for.
    """

    navmeshes: list[str] = field(default_factory=list)
    differences: list[float] = field(default_factory=list)
    unreachable: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """Counts and statistics of the differences (JSON-ready, no NaN)."""
        diffs = np.abs(np.asarray(self.differences, dtype=np.float64))
        stats = {}
        if diffs.size:
            stats = {
                "mean_abs_difference": float(diffs.mean()),
                "median_abs_difference": float(np.median(diffs)),
                "max_abs_difference": float(diffs.max()),
                "within_0.25m": float((diffs <= 0.25).mean()),
            }
        return {
            "navmeshes": self.navmeshes,
            "episodes_measured": len(self.differences),
            "episodes_unreachable": len(self.unreachable),
            "unreachable": self.unreachable,
            **stats,
        }


def navmesh_path(scene_id: str, composed: bool) -> str:
    """Dataset-relative file the navmesh of ``scene_id`` is written to.

    >>> navmesh_path("scenes/procedural__seed-3.glb", True)
    'scenes/procedural__seed-3.navmesh'
    >>> navmesh_path("mp3d/17DRP5sb8fy/17DRP5sb8fy.glb", False)
    'navmeshes/mp3d/17DRP5sb8fy/17DRP5sb8fy.navmesh'
    """
    path = PurePosixPath(scene_id)
    name = path.name.removesuffix(".scene_instance.json").removesuffix(".glb")
    stem = path.with_name(f"{name}.navmesh")
    return str(stem if composed else PurePosixPath("navmeshes") / stem)


def _episodes_by_scene(root: Path) -> dict[str, list[dict[str, Any]]]:
    """Every episode (test: merged with its answer), grouped by ``scene_id``."""
    grouped: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for split in available_splits(root):
        answers_file = split_path(root, split, "_answers")
        answers = read_json(answers_file, FormatError) if answers_file.is_file() else {}
        for ep in load_split(root, split)["episodes"]:
            hidden = answers.get(str(ep.get("episode_id")), {}) if isinstance(answers, dict) else {}
            # the answers (goals, reference path, info) win over the public split's empty ones
            merged = {**ep, **hidden, "_split": split}
            grouped[str(ep["scene_id"])].append(merged)
    return grouped


def _simulator(hs: Any, scene_path: Path, dataset_config: str | None, agent: AgentSpec) -> Any:
    backend = hs.SimulatorConfiguration()
    backend.scene_id = str(scene_path)
    if dataset_config is not None:
        backend.scene_dataset_config_file = dataset_config
    backend.enable_physics = False
    body = hs.agent.AgentConfiguration(height=agent.height, radius=agent.radius)
    return hs.Simulator(hs.Configuration(backend, [body]))


def _settings(hs: Any, agent: AgentSpec) -> Any:
    settings = hs.NavMeshSettings()
    settings.set_defaults()
    settings.agent_radius = agent.radius
    settings.agent_height = agent.height
    settings.agent_max_climb = agent.max_climb
    settings.include_static_objects = True
    return settings


def bake_navmeshes(
    dataset: str | Path,
    *,
    scenes_dir: str | Path | None = None,
    agent: AgentSpec | None = None,
    progress: Callable[[str, int], Callable[[], None]] | None = None,
) -> NavmeshReport:
    """Bake a navmesh per scene with habitat-sim and re-measure every episode's geodesic.

    Args:
        dataset: The dataset folder.
        scenes_dir: Where real-asset ``scene_id`` s live (default ``data/scene_datasets``);
            composed scenes are always read from the dataset.
        agent: The body the navmesh is baked for (VLN-CE's by default).
        progress: ``progress(label, total)`` returning an ``advance()`` callback.

    Raises:
        ConfigError: Without habitat-sim (one line naming what to install), or when a scene
            cannot be loaded.
    """
    hs = import_habitat_sim(MISSING)
    agent = agent or AgentSpec()
    root = Path(dataset).resolve()
    real_root = Path(scenes_dir or DEFAULT_SCENES_DIR).resolve()
    grouped = _episodes_by_scene(root)
    index = load_scene_index(root)
    report = NavmeshReport()
    advance = progress("scenes", len(grouped)) if progress else (lambda: None)
    for scene_id, episodes in sorted(grouped.items()):
        composed = scene_id.startswith("scenes/")
        scene_path = (root if composed else real_root) / scene_id
        if not scene_path.is_file():
            raise ConfigError(f"{scene_path}: scene not found (set --scenes-dir)")
        sim = _simulator(hs, scene_path, episodes[0].get("scene_dataset_config"), agent)
        try:
            if not sim.recompute_navmesh(sim.pathfinder, _settings(hs, agent)):
                raise ConfigError(f"{scene_path}: habitat-sim could not build a navmesh")
            relative = navmesh_path(scene_id, composed)
            (root / relative).parent.mkdir(parents=True, exist_ok=True)
            sim.pathfinder.save_nav_mesh(str(root / relative))
            report.navmeshes.append(relative)
            scene = load_scene(scene_json_path(root, episodes[0], index))
            navigator = HabitatNavigator(sim.pathfinder, scene, agent)
            for ep in episodes:
                _measure(navigator, ep, report)
        finally:
            sim.close()
        advance()
    _name_navmeshes(root, sorted(grouped), report.navmeshes)
    atomic_write_bytes(
        root / REPORT_FILE, orjson.dumps(report.summary(), option=orjson.OPT_INDENT_2)
    )
    return report


def _name_navmeshes(root: Path, scene_ids: list[str], baked: list[str]) -> None:
    """Name the baked navmeshes of composed scenes in their stage and scene-instance configs and
    in the dataset's scene dataset config (until then those name none)."""
    composed = [PurePosixPath(s).stem for s in scene_ids if s.startswith("scenes/")]
    with_navmesh = [PurePosixPath(b).stem for b in baked if b.startswith("scenes/")]
    if not composed:
        return

    def doc(value: object) -> bytes:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2)

    for name in with_navmesh:
        atomic_write_bytes(
            root / "scenes" / f"{name}.stage_config.json", doc(stage_config(name, True))
        )
        atomic_write_bytes(
            root / "scenes" / f"{name}.scene_instance.json", doc(scene_instance(name, True))
        )
    atomic_write_bytes(root / DATASET_CONFIG, doc(dataset_config(composed, with_navmesh)))


def _measure(navigator: HabitatNavigator, ep: dict[str, Any], report: NavmeshReport) -> None:
    info = ep.get("info") or {}
    ours = info.get("geodesic_distance")
    goals = ep.get("goals") or []
    if not isinstance(ours, int | float) or not goals:
        return
    theirs = navigator.distance(ep["start_position"], goals[0]["position"])
    name = f"{ep['_split']}/{ep['episode_id']}"
    if theirs is None or not math.isfinite(theirs):
        report.unreachable.append(name)
        return
    report.differences.append(float(theirs) - float(ours))
