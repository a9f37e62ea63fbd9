"""Scene identity by content: duplicate ``--input`` files are used once, splits stay
scene-disjoint, and ``validate`` proves it (by scene path and by scene file content)."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import orjson
import pytest

from condvln.dataset.generate import GenerateConfig, generate_dataset
from condvln.dataset.validate import validate_dataset
from condvln.dataset.vlnce import SPLITS, split_path
from condvln.errors import ConfigError
from condvln.scene.serialize import save_scene
from condvln.scene.sources import load


def _read(path: Path) -> dict:
    return orjson.loads(gzip.decompress(path.read_bytes()))


def _write(path: Path, doc: dict) -> None:
    path.write_bytes(gzip.compress(orjson.dumps(doc), mtime=0))


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("inputs")
    for seed in range(4):
        save_scene(load("procedural", str(seed)), folder / f"house{seed}.json")
    for k in range(5):  # five byte-identical copies of house0 under other names
        shutil.copyfile(folder / "house0.json", folder / f"copy{k}.json")
    return folder


def test_duplicate_inputs_are_used_once_and_reported(inputs: Path, tmp_path: Path) -> None:
    config = GenerateConfig(source="condvln", inputs=(str(inputs),), scenes=None, per_scene=30)
    stats = generate_dataset(config, tmp_path / "ds", workers=1)
    assert stats["scenes"] == 4
    skipped = sorted(d["skipped"].rsplit("/", 1)[-1] for d in stats["duplicate_inputs"])
    assert skipped == ["copy1.json", "copy2.json", "copy3.json", "copy4.json", "house0.json"]
    assert {d["same_as"].rsplit("/", 1)[-1] for d in stats["duplicate_inputs"]} == {"copy0.json"}
    used = {
        split: {e["scene_id"] for e in _read(split_path(tmp_path / "ds", split))["episodes"]}
        for split in SPLITS
    }
    seen = used["train"] | used["val_seen"]
    assert not seen & used["val_unseen"] and not seen & used["test"]
    assert not used["val_unseen"] & used["test"]
    assert validate_dataset(tmp_path / "ds").ok


def test_two_files_with_one_scene_id_are_refused(inputs: Path, tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copyfile(inputs / "house1.json", folder / "a.json")
    text = (inputs / "house1.json").read_bytes()
    (folder / "b.json").write_bytes(
        text.replace(b'"label":', b'"label": ', 1)
    )  # same id, new bytes
    config = GenerateConfig(source="condvln", inputs=(str(folder),), scenes=None, per_scene=5)
    with pytest.raises(ConfigError, match="both give scene 'procedural/seed-1'"):
        generate_dataset(config, tmp_path / "ds", workers=1)
    assert not (tmp_path / "ds").exists()


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("identity") / "ds"
    generate_dataset(GenerateConfig(scenes=10, per_scene=30, seed=0), out, workers=1)
    return out


@pytest.mark.parametrize("how", ["same path", "same content"])
def test_validate_catches_a_scene_shared_by_seen_and_unseen_splits(
    dataset: Path, tmp_path: Path, how: str
) -> None:
    copy = tmp_path / "ds"
    shutil.copytree(dataset, copy)
    unseen_scene = _read(split_path(copy, "val_unseen"))["episodes"][0]["scene_id"]
    shared = unseen_scene
    if how == "same content":
        shared = "scenes/renamed_copy.json"
        shutil.copyfile(copy / unseen_scene, copy / shared)
    doc = _read(split_path(copy, "train"))
    doc["episodes"][0]["scene_id"] = shared
    _write(split_path(copy, "train"), doc)
    problems = validate_dataset(copy).problems
    assert any("splits seen and val_unseen share 1 scene(s)" in p for p in problems), problems[-3:]
