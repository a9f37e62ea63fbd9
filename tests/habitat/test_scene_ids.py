"""Episodes point at habitat scenes: composed GLBs in the dataset, the user's own assets for
Matterport3D / Gibson / ReplicaCAD; the CondVLN scene JSON stays reachable (issue: habitat-ready)."""

from __future__ import annotations

import gzip
from pathlib import Path

import orjson
import pytest

from condvln.dataset.generate import GenerateConfig, generate_dataset
from condvln.errors import FormatError
from condvln.habitat.layout import REPLICACAD_DATASET_CONFIG
from condvln.scene.serialize import load_scene
from condvln.synth.informative import ConditionConfig
from condvln.vlnce import SCENE_INDEX, SPLITS, load_scene_index, scene_json_path

DATA = Path(__file__).resolve().parents[1] / "data"


def _episodes(root: Path, split: str) -> list[dict]:
    path = root / split / f"{split}.json.gz"
    return orjson.loads(gzip.decompress(path.read_bytes()))["episodes"]


def test_composed_scene_ids_name_glbs_in_the_dataset(habitat_dataset: Path) -> None:
    index = load_scene_index(habitat_dataset)
    seen = 0
    for split in SPLITS:
        for ep in _episodes(habitat_dataset, split):
            seen += 1
            scene_id = ep["scene_id"]
            assert scene_id.startswith("scenes/") and scene_id.endswith(".glb")
            assert (habitat_dataset / scene_id).is_file()
            assert "scene_dataset_config" not in ep  # VLN-CE's habitat-lab 0.1.7 rejects it
            path = scene_json_path(habitat_dataset, ep, index)
            assert path == (habitat_dataset / scene_id).with_suffix(".json").resolve()
            if split != "test":
                assert ep["info"]["condvln"]["scene_file"] == scene_id.replace(".glb", ".json")
            assert load_scene(path).id.startswith("procedural/")
    used = {ep["scene_id"] for s in SPLITS for ep in _episodes(habitat_dataset, s)}
    assert seen and used <= set(index)
    assert all((habitat_dataset / v).is_file() and v.endswith(".json") for v in index.values())
    assert len(_episodes(habitat_dataset, "test")) > 0  # the test split resolves via the index


def _conditions(source: str) -> ConditionConfig:
    """The default rules, except for ReplicaCAD's six-object apartment, where only "a basket in
    the kitchen" lies in the presence band: too few conditions for any episode, so the band
    reaches 1.0 there ("a sofa in the living room")."""
    return ConditionConfig(presence_high=1.0) if source == "replicacad" else ConditionConfig()


@pytest.mark.parametrize(
    ("source", "path", "scene_id", "dataset_config"),
    [
        ("mp3d", DATA / "mp3d" / "tiny.house", "mp3d/tiny_house/tiny_house.glb", None),
        (
            "gibson",
            DATA / "gibson" / "3DSceneGraph_Tiny.npz",
            "gibson/Allensville.glb",
            None,
        ),  # the building name in the file
        (
            "replicacad",
            DATA / "replicacad/configs/scenes/tiny_apt.scene_instance.json",
            "replica_cad/configs/scenes/tiny_apt.scene_instance.json",
            REPLICACAD_DATASET_CONFIG,
        ),
    ],
)
def test_real_asset_sources_point_at_the_users_assets(
    source: str, path: Path, scene_id: str, dataset_config: str | None, tmp_path: Path
) -> None:
    config = GenerateConfig(
        source=source,
        inputs=(str(path),),
        scenes=None,
        per_scene=30,
        conditions=_conditions(source),
    )
    generate_dataset(config, tmp_path / "ds")
    root = tmp_path / "ds"
    episodes = [ep for s in SPLITS for ep in _episodes(root, s)]
    assert episodes
    assert {ep["scene_id"] for ep in episodes} == {scene_id}
    assert {ep.get("scene_dataset_config") for ep in episodes} == {dataset_config}
    assert not list(root.rglob("*.glb"))  # no mesh composed: the user's own is used
    index = load_scene_index(root)
    assert set(index) == {scene_id}
    for ep in episodes:
        assert load_scene(scene_json_path(root, ep, index)).source == source


def test_scene_files_outside_the_dataset_are_refused(habitat_dataset: Path) -> None:
    ep = {"episode_id": 7, "scene_id": "x", "info": {"condvln": {"scene_file": "../../etc/passwd"}}}
    with pytest.raises(FormatError, match="outside the dataset folder"):
        scene_json_path(habitat_dataset, ep, {})
    assert (habitat_dataset / SCENE_INDEX).is_file()
