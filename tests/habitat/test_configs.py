"""``condvln habitat config``: the YAML loads in VLN-CE's and habitat-lab's config systems and
every path in it resolves (issue: habitat-ready)."""

from __future__ import annotations

import gzip
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from yacs.config import CfgNode

from condvln.vlnce import SPLITS

HERE = Path(__file__).resolve().parent
VLNCE_TASK = HERE.parent / "data" / "vlnce" / "vlnce_task.yaml"
SCENE_PREFIX = "data/scene_datasets/"  # VLN-CE and habitat-lab strip it before joining SCENES_DIR


def _episodes(root: Path, split: str) -> list[dict]:
    return orjson.loads(gzip.decompress((root / split / f"{split}.json.gz").read_bytes()))[
        "episodes"
    ]


def _budgets(root: Path) -> list[int]:
    out = []
    for split in SPLITS:
        for ep in _episodes(root, split):
            out.append(ep["info"]["condvln"]["step_budget"] if "info" in ep else None)
    answers = orjson.loads(gzip.decompress((root / "test" / "test_answers.json.gz").read_bytes()))
    out += [a["info"]["condvln"]["step_budget"] for a in answers.values()]
    return [b for b in out if b is not None]


def vlnce_base() -> CfgNode:
    """VLN-CE's task config schema: its ``vlnce_task.yaml`` plus the measure keys its
    ``habitat_extensions/config/default.py`` adds (NDTW, SDTW, ORACLE_SUCCESS)."""
    base = CfgNode.load_cfg(VLNCE_TASK.read_text())
    base.defrost()
    base.TASK.NDTW.TYPE = "NDTW"
    base.TASK.NDTW.SPLIT = "val_seen"
    base.TASK.NDTW.FDTW = True
    base.TASK.NDTW.SUCCESS_DISTANCE = 3.0
    base.TASK.SDTW = CfgNode({"TYPE": "SDTW"})
    base.TASK.ORACLE_SUCCESS = CfgNode({"TYPE": "OracleSuccess", "SUCCESS_DISTANCE": 3.0})
    base.set_new_allowed(False)
    return base


@pytest.fixture(scope="module")
def configs(habitat_dataset: Path, tmp_path_factory, cli) -> Path:
    out = tmp_path_factory.mktemp("configs")
    run = cli("habitat", "config", str(habitat_dataset), "--out", str(out))
    assert run.returncode == 0, run.stderr
    return out


def test_vlnce_task_config_merges_into_vlnce_schema_and_paths_resolve(
    configs: Path, habitat_dataset: Path
) -> None:
    config = vlnce_base()
    config.merge_from_file(str(configs / "vlnce_task.yaml"))  # unknown keys raise
    assert config.DATASET.TYPE == "VLN-CE-v1"
    assert config.TASK.SUCCESS_DISTANCE == config.TASK.SUCCESS.SUCCESS_DISTANCE == 1.0
    assert config.TASK.SPL.SUCCESS_DISTANCE == config.TASK.ORACLE_SUCCESS.SUCCESS_DISTANCE == 1.0
    assert config.TASK.NDTW.FDTW is False and config.TASK.NDTW.SUCCESS_DISTANCE == 3.0
    assert "SDTW" in config.TASK.MEASUREMENTS
    assert max(_budgets(habitat_dataset)) == config.ENVIRONMENT.MAX_EPISODE_STEPS
    assert config.SIMULATOR.FORWARD_STEP_SIZE == 0.25 and config.SIMULATOR.TURN_ANGLE == 15
    scenes_dir = Path(config.DATASET.SCENES_DIR)
    assert scenes_dir.is_dir()
    for split in SPLITS:
        assert Path(config.DATASET.DATA_PATH.format(split=split)).is_file()
        if split != "test":
            gt = Path(config.TASK.NDTW.GT_PATH.format(split=split))
            ids = {str(e["episode_id"]) for e in _episodes(habitat_dataset, split)}
            assert ids <= set(json.loads(gzip.decompress(gt.read_bytes())))
        for ep in _episodes(habitat_dataset, split):
            scene = ep["scene_id"].removeprefix(SCENE_PREFIX)
            assert (scenes_dir / scene).is_file(), scene  # VLN-CE: join(SCENES_DIR, scene_id)
            assert scene.endswith(".glb")


def test_habitat_lab_loads_the_hydra_config_and_every_split(
    configs: Path, habitat_dataset: Path
) -> None:
    if importlib.util.find_spec("habitat") is None:  # importing it needs the stand-ins
        pytest.skip("habitat-lab is not installed (it is in the `test` extra)")
    splits = ["train", "val_seen", "val_unseen"]
    run = subprocess.run(
        [
            sys.executable,
            str(HERE / "habitat_lab_load.py"),
            str(configs / "condvln_vln.yaml"),
            *splits,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    loaded = json.loads(run.stdout.strip().splitlines()[-1])
    assert loaded["dataset"]["type"] == "R2RVLN-v1"
    assert loaded["success_distance"] == 1.0
    assert loaded["max_episode_steps"] == max(_budgets(habitat_dataset))
    assert (loaded["forward_step_size"], loaded["turn_angle"]) == (0.25, 15)
    # the dataset's scene dataset config (semantics, regions, navmeshes once baked) ...
    assert loaded["scene_dataset"] == str(habitat_dataset / "condvln.scene_dataset_config.json")
    assert Path(loaded["scene_dataset"]).is_file()
    # ... and VLN-CE's body, from which habitat-sim computes the navmesh no file provides
    assert loaded["default_agent_navmesh"] is True
    assert loaded["agent"] == {"radius": 0.1, "height": 1.5, "max_climb": 0.2}
    for split in splits:
        found = loaded["splits"][split]
        assert found["episodes"] == len(_episodes(habitat_dataset, split))
        for scene_id in found["scene_ids"]:
            assert Path(scene_id).is_file(), scene_id
        assert found["goal_radii"] in ([], [1.0])
    assert sum(loaded["splits"][s]["episodes"] for s in splits) > 0


def test_vlnce_test_config_points_at_the_answers_file(
    habitat_dataset: Path, tmp_path: Path, cli
) -> None:
    """The test split hides its ground truth: nDTW's GT_PATH is the answers file, which exists
    and holds every test episode."""
    run = cli("habitat", "config", str(habitat_dataset), "--out", str(tmp_path), "--split", "test")
    assert run.returncode == 0, run.stderr
    config = vlnce_base()
    config.merge_from_file(str(tmp_path / "vlnce_task.yaml"))
    gt = Path(config.TASK.NDTW.GT_PATH.format(split="test"))
    assert gt == habitat_dataset.resolve() / "test" / "test_answers.json.gz" and gt.is_file()
    ids = {str(e["episode_id"]) for e in _episodes(habitat_dataset, "test")}
    answers = json.loads(gzip.decompress(gt.read_bytes()))
    assert ids and ids <= set(answers)
    for key in ids:  # what VLN-CE's NDTW measure reads: gt_json[str(episode_id)]["locations"]
        assert answers[key]["locations"] == answers[key]["gt"]["locations"]


def test_bad_options_are_one_line_errors(habitat_dataset: Path, tmp_path: Path, cli) -> None:
    run = cli(
        "habitat",
        "config",
        str(habitat_dataset),
        "--out",
        str(tmp_path / "c"),
        "--success-distance",
        "-1",
    )
    assert run.returncode == 2
    assert run.stderr.count("\n") == 1 and "success-distance" in run.stderr
    run = cli("habitat", "config", str(tmp_path / "nothing"), "--out", str(tmp_path / "c"))
    assert run.returncode == 2 and "no split files" in run.stderr
    assert "Traceback" not in run.stderr
    assert not (tmp_path / "c").exists()
