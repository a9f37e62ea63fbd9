"""Every scene source runs through the whole pipeline: generate → validate (issue: sources)."""

from __future__ import annotations

import gzip
from pathlib import Path

import orjson
import pytest

from condvln.dataset.generate import GenerateConfig, generate_dataset
from condvln.dataset.validate import validate_dataset
from condvln.synth.informative import ConditionConfig

DATA = Path(__file__).resolve().parents[1] / "data"


def _conditions(source: str) -> ConditionConfig:
    """The default rules, except for ReplicaCAD's six-object apartment, where only "a basket in
    the kitchen" lies in the presence band: too few conditions for any episode, so the band
    reaches 1.0 there ("a sofa in the living room")."""
    return ConditionConfig(presence_high=1.0) if source == "replicacad" else ConditionConfig()


@pytest.mark.parametrize(
    ("source", "path", "radius"),
    [
        ("mp3d", DATA / "mp3d" / "tiny.house", 1.0),
        ("gibson", DATA / "gibson" / "3DSceneGraph_Tiny.npz", 1.0),
        ("replicacad", DATA / "replicacad/configs/scenes/tiny_apt.scene_instance.json", 1.0),
        ("procthor", "procthor/houses/house_3703.json", 1.0),
        ("ithor", "ai2thor/ithor_FloorPlan1_objects_raw.json", 0.5),
    ],
)
def test_generated_episodes_validate(
    source: str, path: Path | str, radius: float, tmp_path: Path, fixtures_dir: Path
) -> None:
    scene_file = path if isinstance(path, Path) else fixtures_dir / path
    config = GenerateConfig(
        source=source,
        inputs=(str(scene_file),),
        scenes=None,
        per_scene=40,
        conditions=_conditions(source),
    )
    stats = generate_dataset(config, tmp_path / "ds")
    assert stats["episodes"] > 0
    report = validate_dataset(tmp_path / "ds")
    assert report.ok, report.problems[:3]
    for split in ("train", "val_seen"):
        doc = orjson.loads(
            gzip.decompress((tmp_path / "ds" / split / f"{split}.json.gz").read_bytes())
        )
        assert all(e["goals"][0]["radius"] == radius for e in doc["episodes"])
