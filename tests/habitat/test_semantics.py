"""habitat-sim semantics of a composed scene, checked against habitat-sim's own formats.

The semantic descriptor is parsed with the rules of habitat-sim's HM3D reader
(``SemanticScene::buildHM3DHouse``: header line, then per line the id and hex colour before the
quoted category and the region after it); the JSON configs are compared key by key with
habitat-sim's test fixtures in ``tests/data/habitat_sim`` (MIT).
"""

from __future__ import annotations

import fnmatch
from pathlib import Path

import orjson
import pytest

from condvln.habitat.export import semantic_color
from condvln.habitat.layout import composed_scene_files
from condvln.habitat.semantics import DATASET_CONFIG, SSD_HEADER, dataset_config
from condvln.scene.mesh import compose_scene_mesh
from condvln.scene.sources import load

DATA = Path(__file__).resolve().parents[1] / "data" / "habitat_sim"

STAGE_KEYS = {  # StageAttributes JSON tags (habitat-sim docs/pages/attributesJSON.rst)
    "render_asset",
    "collision_asset",
    "semantic_asset",
    "nav_asset",
    "semantic_descriptor_filename",
    "up",
    "front",
    "semantic_up",
    "semantic_front",
    "origin",
    "scale",
    "units_to_meters",
    "shader_type",
}


def _fixture(name: str) -> dict:
    return orjson.loads((DATA / name).read_bytes())


def parse_hm3d_descriptor(text: str) -> list[tuple[int, tuple[int, int, int], str, int]]:
    lines = text.splitlines()
    assert SSD_HEADER in lines[0]
    out = []
    for line in lines[1:]:
        if not line:
            continue
        tokens = [t for t in line.split('"') if t]
        ident, color = [t.strip() for t in tokens[0].split(",") if t.strip()]
        value = int(color, 16)
        region = int(tokens[-1].strip(" ,"))
        out.append(
            (int(ident), (value >> 16 & 255, value >> 8 & 255, value & 255), tokens[1], region)
        )
    return out


@pytest.fixture(scope="module", params=["2", "9"])
def files(request):
    scene = load("procedural", request.param)
    return scene, compose_scene_mesh(scene), composed_scene_files(scene, "scenes/house.json")


def test_descriptor_lists_every_instance_with_its_colour_category_and_room(files) -> None:
    scene, mesh, out = files
    rows = parse_hm3d_descriptor(out["scenes/house_semantic.txt"].decode())
    rooms = [room.id for room in scene.rooms]
    assert [r[0] for r in rows] == [inst.instance_id for inst in mesh.instances]
    for (ident, color, category, region), inst in zip(rows, mesh.instances, strict=True):
        assert color == semantic_color(ident)
        assert category == inst.category
        assert rooms[region] == inst.room_id


def test_semantic_config_regions_and_object_ids(files) -> None:
    scene, mesh, out = files
    config = orjson.loads(out["scenes/house.semantic_config.json"])
    reference = _fixture("test_regions.semantic_config.json")["region_annotations"][0]
    regions = config["region_annotations"]
    assert [r["name"] for r in regions] == [room.id for room in scene.rooms]
    for region, room in zip(regions, scene.rooms, strict=True):
        assert set(region) == set(reference)  # exactly habitat-sim's region annotation keys
        assert region["label"] == room.room_type
        loop = sorted((p[0], p[2]) for p in region["poly_loop"])  # the same corners
        assert loop == sorted(room.floor_polygon)
        assert all(p[1] == room.floor_height for p in region["poly_loop"])
        assert region["extrusion_height"] == pytest.approx(room.ceiling_height)
    instances = config["user_defined"]["condvln_instances"]
    object_ids = [v["object_id"] for v in instances.values() if v["kind"] == "object"]
    assert sorted(object_ids) == sorted(o.id for o in scene.objects())  # each exactly once
    assert len(object_ids) == len(set(object_ids))
    for key, value in instances.items():
        inst = mesh.instances[int(key) - 1]
        assert (value["object_id"], value["category"], value["room_id"]) == (
            inst.object_id,
            inst.category,
            inst.room_id,
        )
    assert config["semantic_asset"] == "house.semantic.glb"
    assert config["semantic_descriptor_filename"] == "house_semantic.txt"


def test_stage_and_scene_instance_use_habitat_sim_keys(files) -> None:
    _, _, out = files
    stage = orjson.loads(out["scenes/house.stage_config.json"])
    assert set(stage) <= STAGE_KEYS
    assert stage["render_asset"] == "house.glb"
    instance = orjson.loads(out["scenes/house.scene_instance.json"])
    reference = _fixture("dataset_test_scene.scene_instance.json")
    assert set(instance) <= set(reference) | {"semantic_scene_instance"}
    assert instance["stage_instance"] == {"template_name": "house"}


def test_dataset_config_has_habitat_sim_sections() -> None:
    config = dataset_config(["a", "b"])
    reference = _fixture("test_dataset_0.scene_dataset_config.json")
    assert set(config) <= set(reference)
    for key in ("stages", "objects", "light_setups", "scene_instances"):
        assert list(config[key]["paths"]) == [".json"]
    assert config["navmesh_instances"] == {}  # only navmeshes that exist are named
    assert dataset_config(["a", "b"], ["b"])["navmesh_instances"] == {"b": "scenes/b.navmesh"}


def test_generated_dataset_files_reference_each_other(habitat_dataset: Path) -> None:
    config = orjson.loads((habitat_dataset / DATASET_CONFIG).read_bytes())
    scenes = habitat_dataset / "scenes"
    names = sorted(
        p.name.removesuffix(".stage_config.json") for p in scenes.glob("*.stage_config.json")
    )
    assert names and config["navmesh_instances"] == {}  # no navmesh is baked yet
    assert not list(scenes.glob("*.navmesh"))
    for section, suffix in (
        ("stages", ".stage_config.json"),
        ("scene_instances", ".scene_instance.json"),
        ("semantic_scene_descriptor_instances", ".semantic_config.json"),
    ):
        (pattern,) = config[section]["paths"][".json"]
        found = [p.name for p in scenes.iterdir() if fnmatch.fnmatch(f"scenes/{p.name}", pattern)]
        assert sorted(found) == sorted(n + suffix for n in names)
    for name in names:
        stage = orjson.loads((scenes / f"{name}.stage_config.json").read_bytes())
        semantic = orjson.loads((scenes / f"{name}.semantic_config.json").read_bytes())
        for asset in (stage["render_asset"], semantic["semantic_asset"]):
            assert (scenes / asset).is_file()
        assert "nav_asset" not in stage  # habitat-sim computes its own until one is baked
        instance = orjson.loads((scenes / f"{name}.scene_instance.json").read_bytes())
        assert "navmesh_instance" not in instance
        assert (scenes / semantic["semantic_descriptor_filename"]).is_file()
