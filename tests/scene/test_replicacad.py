"""The ``replicacad`` source: habitat-sim scene instances, object configs, GLB bounds, regions.

``tests/data/replicacad/`` is our own ReplicaCAD-layout slice (``configs/scenes``,
``configs/objects``, ``configs/semantics``); the chair mesh ``objects/frl_apartment_chair_01.glb``
is built by :func:`chair_glb` into a temporary copy. Its POSITION accessor spans
(−0.25, −0.5, −0.2)..(0.25, 0.5, 0.2); the mesh node scales x by 2 and its parent node lifts it by
0.5, so the asset box is (−0.5, 0, −0.2)..(0.5, 1, 0.2), centre (0, 0.5, 0). Instances:

* 0 chair at (1, 0.5, −1), origin COM → box centred there;
* 1 chair at (3, 0.5, −1) turned 90° about +Y (``[w, x, y, z] = [c45, 0, s45, 0]``);
* 2 chair at (1, 0, 2), ``asset_local`` origin, uniform scale 2;
* 3 sofa (no config: catalogue size 2.1 × 0.85 × 0.92) at (2, 0.425, 3);
* 4 basket (no config, not in the catalogue: radius 0.25) at (4, 0.8, −1.5);
* 5 bowl at (20, 0.5, 0), outside both regions;
* 6 articulated fridge (catalogue 0.8 × 1.84 × 0.72) at (0.5, 0.92, −2.5).

Regions: kitchen x 0..5, z −3..0 and living room x 0..5, z 0..4 (floor 0, 2.5 m high).
"""

from __future__ import annotations

import json
import math
import shutil
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from condvln.errors import SceneFormatError
from condvln.graph import build_scene_graph
from condvln.scene.sources import load as load_source
from condvln.scene.sources.replicacad import gltf_bounds, load, template_category

DATA = Path(__file__).resolve().parents[1] / "data" / "replicacad"
HABITAT_SIM = Path(__file__).resolve().parents[1] / "data" / "habitat_sim"
SCENE = Path("configs") / "scenes" / "tiny_apt.scene_instance.json"
C45 = math.sqrt(0.5)


def glb_bytes(gltf: dict[str, Any], binary: bytes = b"") -> bytes:
    """A binary glTF: 12-byte header, JSON chunk (space-padded), optional BIN chunk."""
    text = json.dumps(gltf).encode()
    text += b" " * (-len(text) % 4)
    chunks = struct.pack("<II", len(text), 0x4E4F534A) + text
    if binary:
        binary += b"\0" * (-len(binary) % 4)
        chunks += struct.pack("<II", len(binary), 0x004E4942) + binary
    return struct.pack("<4sII", b"glTF", 2, 12 + len(chunks)) + chunks


def box_mesh_gltf(
    lo: list[float], hi: list[float], nodes: list[dict[str, Any]]
) -> tuple[dict[str, Any], bytes]:
    """A glTF with one mesh: the 8 corners of ``[lo, hi]`` as float32 positions."""
    corners = [[(lo, hi)[i >> k & 1][k] for k in range(3)] for i in range(8)]
    binary = np.array(corners, dtype="<f4").tobytes()
    gltf = {
        "asset": {"version": "2.0"},
        "scene": 0,
        "scenes": [{"nodes": [0]}],
        "nodes": nodes,
        "meshes": [{"primitives": [{"attributes": {"POSITION": 0}}]}],
        "accessors": [
            {
                "bufferView": 0,
                "componentType": 5126,
                "count": 8,
                "type": "VEC3",
                "min": lo,
                "max": hi,
            }
        ],
        "bufferViews": [{"buffer": 0, "byteLength": len(binary)}],
        "buffers": [{"byteLength": len(binary)}],
    }
    return gltf, binary


def chair_glb() -> bytes:
    nodes = [{"children": [1], "translation": [0, 0.5, 0]}, {"mesh": 0, "scale": [2, 1, 1]}]
    return glb_bytes(*box_mesh_gltf([-0.25, -0.5, -0.2], [0.25, 0.5, 0.2], nodes))


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    root = tmp_path / "replica_cad"
    shutil.copytree(DATA, root)
    (root / "objects").mkdir()
    (root / "objects" / "frl_apartment_chair_01.glb").write_bytes(chair_glb())
    return root


def _box(scene: Any, object_id: str) -> list[float]:
    box = scene.object(object_id).box
    assert box is not None
    return [*box.min, *box.max]


def test_template_names_to_categories() -> None:
    assert template_category("objects/frl_apartment_basket") == ("basket", "frl_apartment_basket")
    assert template_category("objects/frl_apartment_remote-control_01")[0] == "remote control"
    assert template_category("chestOfDrawers_01")[0] == "chest of drawers"
    assert template_category("door1")[0] == "door"


def test_objects_rooms_and_counts(dataset: Path) -> None:
    scene = load(str(dataset / SCENE))
    assert scene.id == "replicacad/tiny_apt" and scene.source == "replicacad"
    assert [(r.id, r.room_type, r.label) for r in scene.rooms] == [
        ("kitchen_region", "kitchen", "kitchen"),
        ("living_region", "living room", "living room"),
    ]
    assert {r.id: [o.id for o in r.objects] for r in scene.rooms} == {
        "kitchen_region": [
            "frl_apartment_chair_01|0",
            "frl_apartment_chair_01|1",
            "frl_apartment_basket|4",
            "fridge|6",
        ],
        "living_region": ["frl_apartment_chair_01|2", "frl_apartment_sofa|3"],
    }
    assert scene.metadata["objects_outside_regions"] == 1
    assert scene.metadata["object_sizes"] == {"mesh": 3, "catalogue": 3, "default_radius": 1}
    assert scene.metadata["stage"] == "stages/frl_apartment_stage"
    assert scene.metadata["semantic_config"].endswith("tiny_apt.semantic_config.json")
    assert {o.category for o in scene.objects()} == {"chair", "sofa", "basket", "fridge"}


def test_glb_boxes_com_rotation_and_scale(dataset: Path) -> None:
    scene = load(str(dataset / SCENE))
    assert _box(scene, "frl_apartment_chair_01|0") == pytest.approx(
        [0.5, 0.0, -1.2, 1.5, 1.0, -0.8]
    )
    turned = scene.object("frl_apartment_chair_01|1")
    assert _box(scene, turned.id) == pytest.approx([2.8, 0.0, -1.5, 3.2, 1.0, -0.5])
    assert turned.yaw == pytest.approx(math.pi / 2)
    # asset_local: the asset origin (bottom centre of the box) sits at the translation.
    assert _box(scene, "frl_apartment_chair_01|2") == pytest.approx([0.0, 0.0, 1.6, 2.0, 2.0, 2.4])


def test_catalogue_sizes_and_default_radius(dataset: Path) -> None:
    scene = load(str(dataset / SCENE))
    assert _box(scene, "frl_apartment_sofa|3") == pytest.approx([0.95, 0.0, 2.54, 3.05, 0.85, 3.46])
    assert _box(scene, "fridge|6") == pytest.approx([0.1, 0.0, -2.86, 0.9, 1.84, -2.14])
    basket = scene.object("frl_apartment_basket|4")
    assert basket.box is None and basket.radius == 0.25 and basket.center == (4.0, 0.8, -1.5)


def test_missing_mesh_falls_back_to_the_catalogue() -> None:
    """Without ``objects/*.glb`` the chair config names a missing asset: catalogue chair size."""
    scene = load(str(DATA / SCENE))
    assert _box(scene, "frl_apartment_chair_01|0") == pytest.approx(
        [1.0 - 0.24, 0.5 - 0.44, -1.0 - 0.26, 1.0 + 0.24, 0.5 + 0.44, -1.0 + 0.26]
    )
    assert scene.metadata["object_sizes"] == {"mesh": 0, "catalogue": 6, "default_radius": 1}


def test_region_polygons_and_opening(dataset: Path) -> None:
    scene = load(str(dataset / SCENE))
    kitchen, living = scene.rooms
    assert kitchen.floor_polygon == ((5.0, -3.0), (5.0, 0.0), (0.0, 0.0), (0.0, -3.0))
    assert kitchen.area == 15.0 and living.area == 20.0
    assert (kitchen.floor_height, kitchen.ceiling_height) == (0.0, 2.5)
    ((door_id, rooms, segment),) = [(d.id, d.room_ids, d.segment) for d in scene.doors]
    assert door_id == "opening|kitchen_region|living_region|0"
    assert rooms == ("kitchen_region", "living_region")
    assert sorted(segment) == [(0.0, 0.0), (5.0, 0.0)]


def test_without_regions_one_room_encloses_the_objects(dataset: Path) -> None:
    (dataset / "configs" / "semantics" / "tiny_apt.semantic_config.json").unlink()
    scene = load(str(dataset / SCENE))
    (room,) = scene.rooms
    assert scene.is_single_room and room.room_type == "room" and len(room.objects) == 7
    # Footprints span x 0..20.1 (bowl: 20 ± 0.1), z −2.86..3.46; padded by 0.5 m.
    xs = sorted({p[0] for p in room.floor_polygon or ()})
    zs = sorted({p[1] for p in room.floor_polygon or ()})
    assert xs == pytest.approx([-0.5, 20.6]) and zs == pytest.approx([-3.36, 3.96])
    assert room.floor_height == 0.0


def test_explicit_semantic_config(dataset: Path) -> None:
    scene_file = dataset / SCENE
    regions = HABITAT_SIM / "test_regions.semantic_config.json"
    scene = load(str(scene_file), semantic=str(regions))
    assert [(r.id, r.room_type) for r in scene.rooms] == [
        ("test_region_negativeX", "bedroom"),
        ("test_region_positiveX", "bathroom"),
    ]
    # The hexagons span x −25..−5 and 5..25: only the bowl at (20, 0.5, 0) lies in one.
    assert [len(r.objects) for r in scene.rooms] == [0, 1]
    assert scene.rooms[1].objects[0].category == "bowl"
    assert scene.metadata["objects_outside_regions"] == 6


def test_habitat_sim_region_annotations(tmp_path: Path) -> None:
    """``test_regions.semantic_config.json``: two hexagons, floor −2, 4 m high, area 300 m² each."""
    shutil.copy(
        HABITAT_SIM / "test_regions.semantic_config.json", tmp_path / "probe.semantic_config.json"
    )
    instances = [
        {"template_name": "bed", "translation": [-15.0, -1.5, 0.0]},
        {"template_name": "toilet", "translation": [15.0, -1.6, 5.0]},
        {"template_name": "toilet", "translation": [15.0, 3.0, 5.0]},  # above the region
    ]
    path = tmp_path / "probe.scene_instance.json"
    path.write_text(json.dumps({"object_instances": instances}))
    scene = load(str(path))
    bedroom, bathroom = scene.rooms
    assert (bedroom.label, bedroom.area, bedroom.floor_height, bedroom.ceiling_height) == (
        "bedroom",
        300.0,
        -2.0,
        4.0,
    )
    assert bathroom.area == 300.0 and scene.doors == ()
    assert [o.category for o in bedroom.objects] == ["bed"]
    assert [o.category for o in bathroom.objects] == ["toilet"]
    assert scene.metadata["objects_outside_regions"] == 1


def test_habitat_sim_scene_instance() -> None:
    scene = load_source("replicacad", str(HABITAT_SIM / "dataset_test_scene.scene_instance.json"))
    (room,) = scene.rooms
    assert [(o.label, o.center, o.radius) for o in room.objects] == [
        ("dataset_test_object1", (0.1, 0.2, 0.3), 0.25),
        ("dataset_test_object2", (0.3, 0.4, 0.5), 0.25),
    ]
    assert scene.metadata["stage"] == "modified_test_stage"
    build_scene_graph(scene)


def test_replicacad_apt_0_doc_excerpt() -> None:
    scene = load(str(HABITAT_SIM / "replicacad_apt_0_scene_instance_DOC_EXCERPT.json"))
    basket = scene.object("frl_apartment_basket|0")
    assert basket.category == "basket"
    assert basket.center == (-1.9956579525706273, 1.0839370509764081, 0.057981376432922185)
    assert basket.yaw == pytest.approx(2 * math.asin(0.17428532242774963), abs=1e-6)  # ≈ 20.07°
    fridge = scene.object("fridge|1")
    assert fridge.box is not None and fridge.box.size == pytest.approx((0.8, 1.84, 0.72))
    assert scene.metadata["stage"] == "stages/frl_apartment_stage"
    build_scene_graph(scene)


def test_habitat_sim_chair_object_config(tmp_path: Path) -> None:
    """``chair.object_config.json`` (render_asset ``chair.glb``) next to a scene naming ``chair``."""
    shutil.copy(HABITAT_SIM / "chair.object_config.json", tmp_path)
    node = [{"mesh": 0}]
    (tmp_path / "chair.glb").write_bytes(
        glb_bytes(*box_mesh_gltf([-0.3, 0.0, -0.25], [0.3, 0.9, 0.25], node))
    )
    path = tmp_path / "room.scene_instance.json"
    path.write_text(
        json.dumps(
            {
                "object_instances": [
                    {
                        "template_name": "chair",
                        "translation": [1, 0.45, 1],
                        "translation_origin": "asset_local",
                    }
                ]
            }
        )
    )
    scene = load(str(path))
    assert _box(scene, "chair|0") == pytest.approx([0.7, 0.45, 0.75, 1.3, 1.35, 1.25])


def test_not_a_scene_instance() -> None:
    with pytest.raises(SceneFormatError, match="scene dataset config"):
        load(str(HABITAT_SIM / "test_dataset_0.scene_dataset_config.json"))
    with pytest.raises(SceneFormatError, match="semantic config"):
        load(str(HABITAT_SIM / "test_regions.semantic_config.json"))


def test_gltf_bounds_with_matrix_and_rotation() -> None:
    """A 90° turn about +Y (quaternion) swaps x and z; a column-major matrix translates by (1, 2, 3)."""
    rotation = [0.0, C45, 0.0, C45]
    matrix = [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 1, 2, 3, 1]
    gltf, _ = box_mesh_gltf(
        [-1.0, 0.0, -0.5],
        [1.0, 1.0, 0.5],
        [{"matrix": matrix, "children": [1]}, {"mesh": 0, "rotation": rotation}],
    )
    lo, hi = gltf_bounds(gltf)
    assert [*lo, *hi] == pytest.approx([0.5, 2.0, 2.0, 1.5, 3.0, 4.0])


# --- malformed input ---------------------------------------------------------------------------------


def _assert_error(path: Path, *parts: str, **kwargs: Any) -> None:
    with pytest.raises(SceneFormatError) as info:
        load(str(path), **kwargs)
    message = str(info.value)
    assert "\n" not in message
    for part in parts:
        assert part in message


def _write_scene(tmp_path: Path, instance: dict[str, Any]) -> Path:
    path = tmp_path / "bad.scene_instance.json"
    path.write_text(json.dumps({"object_instances": [instance]}))
    return path


def test_bad_instances_name_record_and_field(tmp_path: Path) -> None:
    path = _write_scene(
        tmp_path, {"template_name": "objects/x", "translation": [1, 2], "rotation": [1, 0, 0, 0]}
    )
    _assert_error(
        path, str(path), "object_instances[0] 'objects/x'", "field 'translation'", "3 numbers"
    )
    path.write_text('{"object_instances": [{"template_name": "a", "rotation": [1, 0, 0, NaN]}]}')
    _assert_error(path, "object_instances[0] 'a'", "field 'rotation'", "finite")
    path = _write_scene(tmp_path, {"template_name": "a", "rotation": [0, 0, 0, 0]})
    _assert_error(path, "field 'rotation'", "non-zero")
    path = _write_scene(tmp_path, {"translation": [0, 0, 0]})
    _assert_error(path, "object_instances[0]", "field 'template_name'")


@pytest.mark.parametrize(
    ("mutate", "parts"),
    [
        (lambda b: b"glTF" + b[4:40], ["truncated GLB"]),
        (lambda b: b"PK\x03\x04" + b[4:], ["not a GLB file"]),
        (lambda b: b[:4] + struct.pack("<I", 1) + b[8:], ["unsupported glTF version 1"]),
        (
            lambda b: b[:16] + struct.pack("<I", 0x004E4942) + b[20:],
            ["field 'chunk 0'", "must be JSON"],
        ),
        (lambda b: b.replace(b'"min"', b'"MIN"'), ["accessor 0", "field 'min'"]),
    ],
)
def test_malformed_glb(dataset: Path, mutate: Any, parts: list[str]) -> None:
    glb = dataset / "objects" / "frl_apartment_chair_01.glb"
    glb.write_bytes(mutate(glb.read_bytes()))
    _assert_error(dataset / SCENE, str(glb), *parts)


def test_malformed_region(dataset: Path) -> None:
    path = dataset / "configs" / "semantics" / "tiny_apt.semantic_config.json"
    data = json.loads(path.read_text())
    data["region_annotations"][1]["poly_loop"] = [[0, 0, 0], [1, 0, 0]]
    path.write_text(json.dumps(data))
    _assert_error(dataset / SCENE, str(path), "region 'living_region'", "field 'poly_loop'")


def test_cli_show_and_bad_file(cli, dataset: Path, tmp_path: Path) -> None:
    good = cli("scenes", "show", str(dataset / SCENE), "--source", "replicacad")
    assert good.returncode == 0, good.stderr
    assert "2 rooms, 1 doors, 6 objects" in good.stdout
    bad = tmp_path / "broken.scene_instance.json"
    bad.write_text('{"object_instances": [')
    out = cli("scenes", "show", str(bad), "--source", "replicacad")
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "broken.scene_instance.json: not valid JSON" in lines[0]
