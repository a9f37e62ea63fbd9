"""``condvln habitat config``: VLN-CE (YACS) and habitat-lab (Hydra) task configs for a dataset.

Two files, both pointing at the dataset's own split files (absolute paths, so they work from any
working directory):

- ``vlnce_task.yaml`` — a VLN-CE task config in the layout of VLN-CE's
  ``habitat_extensions/config/vlnce_task.yaml`` (habitat-lab 0.1.7 YACS keys): ``DATASET.TYPE``
  ``VLN-CE-v1``, ``DATA_PATH``, ``SCENES_DIR``, ``TASK.NDTW.GT_PATH`` on the ``_gt`` files,
  success distances of the episodes (1.0 m multi-room, 0.5 m single-room), ``MAX_EPISODE_STEPS``
  the largest step budget of the dataset, and nDTW with exact DTW (``FDTW: False``) and the
  VLN-CE threshold ``NDTW.SUCCESS_DISTANCE: 3.0``. Use it as ``BASE_TASK_CONFIG_PATH`` of a
  VLN-CE experiment config.
- ``condvln_vln.yaml`` — a habitat-lab ≥ 0.3 Hydra config: habitat-lab's ``benchmark/nav/vln_r2r``
  with the dataset type ``R2RVLN-v1``, ``data_path``, ``scenes_dir``, ``max_episode_steps`` and the
  success distance replaced; for composed scenes ``simulator.scene_dataset`` is the dataset's
  ``condvln.scene_dataset_config.json`` (semantic scene, regions, navmeshes once baked), and the
  agent is VLN-CE's body (radius 0.1 m, height 1.5 m, max climb 0.2 m), from which habitat-sim
  computes the navmesh of a scene that has none (habitat-lab's ``default_agent_navmesh``). Load
  it with ``habitat.get_config(path)``.

The test split's ground truth is in ``test/test_answers.json.gz`` (the public split hides it),
so ``TASK.NDTW.GT_PATH`` of a VLN-CE config for ``test`` points there.

``SCENES_DIR`` is the dataset folder for composed scenes (``scene_id = scenes/NAME.glb``) and the
user's scene datasets folder (``--scenes-dir``) for Matterport3D, Gibson and ReplicaCAD episodes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from condvln.errors import ConfigError, FormatError
from condvln.habitat.layout import DEFAULT_SCENES_DIR
from condvln.habitat.semantics import DATASET_CONFIG
from condvln.io import atomic_write_bytes, read_json
from condvln.nav.agent import AgentSpec
from condvln.vlnce import SPLITS, available_splits, load_split, split_path

VLNCE_FILE = "vlnce_task.yaml"
HYDRA_FILE = "condvln_vln.yaml"

NDTW_DISTANCE = 3.0
"""nDTW threshold ``d_th`` (VLN-CE's ``TASK.NDTW.SUCCESS_DISTANCE``)."""

FORWARD_STEP = 0.25
TURN_ANGLE = 15

BODY = AgentSpec()
"""VLN-CE's agent body (habitat-lab's agent defaults too): the navmesh habitat-sim computes."""


@dataclass(frozen=True, slots=True)
class DatasetFacts:
    """What the configs need to know about a dataset.

    Attributes:
        root: The dataset folder (absolute).
        splits: Splits present.
        radii: Distinct goal radii of all episodes.
        max_budget: The largest ``info.condvln.step_budget``.
        scene_ids: Every episode ``scene_id``.
        composed: True when the episodes point at GLBs inside the dataset (``scenes/…``).
    """

    root: Path
    splits: tuple[str, ...]
    radii: tuple[float, ...]
    max_budget: int
    scene_ids: tuple[str, ...]
    composed: bool


def dataset_facts(root: str | Path) -> DatasetFacts:
    """Read the splits (and the test answers) of the dataset at ``root``.

    Raises:
        FormatError: When the folder has no split files or an episode lacks a needed field.
    """
    base = Path(root).resolve()
    splits = tuple(available_splits(base))
    if not splits:
        raise FormatError("no split files ({split}/{split}.json.gz) found", file=str(base))
    radii: set[float] = set()
    budgets: list[int] = []
    scene_ids: set[str] = set()
    for split in splits:
        episodes = load_split(base, split)["episodes"]
        answers_file = split_path(base, split, "_answers")
        answers = read_json(answers_file, FormatError) if answers_file.is_file() else {}
        for ep in episodes:
            hidden = answers.get(str(ep.get("episode_id")), {}) if isinstance(answers, dict) else {}
            try:
                scene_ids.add(str(ep["scene_id"]))
                goals = ep.get("goals") or hidden.get("goals") or []
                radii.update(float(g["radius"]) for g in goals)
                info = ep.get("info") or hidden.get("info") or {}
                budget = (info.get("condvln") or {}).get("step_budget")
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                raise FormatError(
                    f"missing or malformed field ({exc!r})",
                    file=str(split_path(base, split)),
                    record=f"episode {ep.get('episode_id')}",
                ) from None
            if isinstance(budget, int):
                budgets.append(budget)
    if not scene_ids:
        raise FormatError("the dataset has no episodes", file=str(base))
    composed = all(s.startswith("scenes/") for s in scene_ids)
    return DatasetFacts(
        root=base,
        splits=splits,
        radii=tuple(sorted(radii)),
        max_budget=max(budgets, default=500),
        scene_ids=tuple(sorted(scene_ids)),
        composed=composed,
    )


def _success_distance(facts: DatasetFacts, override: float | None) -> float:
    if override is not None:
        if not override > 0.0:
            raise ConfigError(f"--success-distance must be positive, got {override}")
        return float(override)
    if len(facts.radii) == 1:
        return facts.radii[0]
    if not facts.radii:
        raise ConfigError(f"{facts.root}: no episode has a goal radius; pass --success-distance")
    shown = ", ".join(f"{r:g}" for r in facts.radii)
    raise ConfigError(
        f"{facts.root}: episodes use several success radii ({shown}); pass --success-distance"
    )


def gt_file(root: Path, split: str) -> Path:
    """The ground-truth file VLN-CE's NDTW measure reads for ``split`` (``{split}`` kept as a
    placeholder for the other splits, as VLN-CE formats it; the test split's answers file).

    >>> gt_file(Path("/d"), "test").as_posix(), gt_file(Path("/d"), "val_seen").as_posix()
    ('/d/test/test_answers.json.gz', '/d/{split}/{split}_gt.json.gz')
    """
    if split == "test":
        return split_path(root, "test", "_answers")
    return root / "{split}" / "{split}_gt.json.gz"


def vlnce_task_config(
    facts: DatasetFacts, scenes_dir: Path, split: str, success: float
) -> dict[str, Any]:
    """The VLN-CE task config (YACS keys of VLN-CE's ``vlnce_task.yaml``)."""
    root = facts.root
    return {
        "ENVIRONMENT": {"MAX_EPISODE_STEPS": facts.max_budget},
        "SIMULATOR": {
            "ACTION_SPACE_CONFIG": "v0",
            "AGENT_0": {"SENSORS": ["RGB_SENSOR", "DEPTH_SENSOR"]},
            "FORWARD_STEP_SIZE": FORWARD_STEP,
            "TURN_ANGLE": TURN_ANGLE,
            "HABITAT_SIM_V0": {"GPU_DEVICE_ID": 0, "ALLOW_SLIDING": True},
            "RGB_SENSOR": {"WIDTH": 224, "HEIGHT": 224, "HFOV": 90, "TYPE": "HabitatSimRGBSensor"},
            "DEPTH_SENSOR": {"WIDTH": 256, "HEIGHT": 256},
        },
        "TASK": {
            "TYPE": "VLN-v0",
            "SUCCESS_DISTANCE": success,
            "SENSORS": ["INSTRUCTION_SENSOR", "SHORTEST_PATH_SENSOR", "VLN_ORACLE_PROGRESS_SENSOR"],
            "INSTRUCTION_SENSOR_UUID": "instruction",
            "POSSIBLE_ACTIONS": ["STOP", "MOVE_FORWARD", "TURN_LEFT", "TURN_RIGHT"],
            "MEASUREMENTS": [
                "DISTANCE_TO_GOAL",
                "SUCCESS",
                "SPL",
                "NDTW",
                "SDTW",
                "PATH_LENGTH",
                "ORACLE_SUCCESS",
                "STEPS_TAKEN",
            ],
            "SUCCESS": {"SUCCESS_DISTANCE": success},
            "SPL": {"SUCCESS_DISTANCE": success},
            "ORACLE_SUCCESS": {"SUCCESS_DISTANCE": success},
            "NDTW": {
                "SPLIT": split,
                "FDTW": False,
                "GT_PATH": str(gt_file(root, split)),
                "SUCCESS_DISTANCE": NDTW_DISTANCE,
            },
        },
        "DATASET": {
            "TYPE": "VLN-CE-v1",
            "SPLIT": split,
            "DATA_PATH": str(root / "{split}" / "{split}.json.gz"),
            "SCENES_DIR": str(scenes_dir),
        },
    }


def habitat_lab_config(
    facts: DatasetFacts, scenes_dir: Path, split: str, success: float
) -> dict[str, Any]:
    """The habitat-lab Hydra config (habitat-lab's ``benchmark/nav/vln_r2r`` with our paths)."""
    simulator: dict[str, Any] = {
        "forward_step_size": FORWARD_STEP,
        "turn_angle": TURN_ANGLE,
        "default_agent_navmesh": True,
        "agents": {
            "main_agent": {
                "radius": BODY.radius,
                "height": BODY.height,
                "max_climb": BODY.max_climb,
            }
        },
    }
    scene_dataset = facts.root / DATASET_CONFIG
    if facts.composed and scene_dataset.is_file():
        simulator["scene_dataset"] = str(scene_dataset)
    return {
        "defaults": [{"/benchmark/nav": "vln_r2r"}, "_self_"],
        "habitat": {
            "environment": {"max_episode_steps": facts.max_budget},
            "simulator": simulator,
            "task": {"measurements": {"success": {"success_distance": success}}},
            "dataset": {
                "type": "R2RVLN-v1",
                "split": split,
                "data_path": str(facts.root / "{split}" / "{split}.json.gz"),
                "scenes_dir": str(scenes_dir),
            },
        },
    }


def write_configs(
    dataset: str | Path,
    out: str | Path,
    *,
    scenes_dir: str | Path | None = None,
    split: str = "val_unseen",
    success_distance: float | None = None,
) -> tuple[Path, Path, list[str]]:
    """Write both configs into ``out``.

    Args:
        dataset: The dataset folder.
        out: Folder for the two YAML files (created).
        scenes_dir: ``SCENES_DIR``; default: the dataset folder for composed scenes, else
            ``data/scene_datasets``.
        split: The split the configs select.
        success_distance: Override of the episodes' success radius.

    Returns:
        The VLN-CE file, the habitat-lab file, and the ``scene_id`` s not found under
        ``scenes_dir`` (the user's Matterport3D / Gibson / ReplicaCAD assets may live elsewhere).
    """
    facts = dataset_facts(dataset)
    if split not in SPLITS:
        raise ConfigError(f"unknown split {split!r}; expected one of {', '.join(SPLITS)}")
    if split not in facts.splits:
        raise ConfigError(f"{facts.root}: has no {split} split")
    success = _success_distance(facts, success_distance)
    if scenes_dir is None:
        scenes_dir = facts.root if facts.composed else Path(DEFAULT_SCENES_DIR)
    scenes = Path(scenes_dir).resolve()
    missing = [s for s in facts.scene_ids if not (scenes / s).is_file()]
    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    vlnce = out_dir / VLNCE_FILE
    hydra = out_dir / HYDRA_FILE
    vlnce_text = yaml.safe_dump(vlnce_task_config(facts, scenes, split, success), sort_keys=False)
    hydra_text = yaml.safe_dump(habitat_lab_config(facts, scenes, split, success), sort_keys=False)
    vlnce_head = f"# VLN-CE task config for the CondVLN dataset {facts.root}\n"
    hydra_head = f"# @package _global_\n# habitat-lab config for the CondVLN dataset {facts.root}\n"
    atomic_write_bytes(vlnce, (vlnce_head + vlnce_text).encode())
    atomic_write_bytes(hydra, (hydra_head + hydra_text).encode())
    return vlnce, hydra, missing
