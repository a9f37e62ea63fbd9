"""The ``mp3d`` source on ``tests/data/mp3d/tiny.house``, our own file written from the spec.

The fixture (Matterport Z-up coordinates; Habitat = ``(x, z, −y)``):

* region 0 ``k`` box x 0..4, y 0..3, z 0..2.6 → Habitat rectangle x 0..4, z −3..0;
* region 1 ``l`` box x 4..9, y 0..5, z 0.02..2.8 with an L-shaped floor surface
  (4,0) (9,0) (9,5) (6,5) (6,3) (4,3) → area 21 m²;
* region 2 ``-`` box x −2..0.1, y 0..1.5 (overlaps the kitchen by 0.1 m in x);
* objects 0–8: 0 cabinet (axis-aligned), 1 chair turned 45° about Z, 2 sofa turned 90°, 3 tv
  (axes along y and z), 4 night stand, 5 a wall (structural), 6 region −1, 7 category −1,
  8 a second chair.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest

from condvln.errors import SceneFormatError
from condvln.graph import build_scene_graph
from condvln.nav.area import build_nav_area
from condvln.scene.sources import load as load_source
from condvln.scene.sources.mp3d import load, mpcat40_names

HOUSE = Path(__file__).resolve().parents[1] / "data" / "mp3d" / "tiny.house"
UPSTREAM_MPCAT40 = Path(__file__).resolve().parents[1] / "data" / "mp3d" / "mpcat40.tsv"
S45 = math.sqrt(0.5)


def _box(scene, object_id: str) -> tuple[tuple[float, ...], tuple[float, ...]]:
    box = scene.object(object_id).box
    assert box is not None
    return box.min, box.max


def test_rooms_types_and_floors() -> None:
    scene = load(str(HOUSE))
    assert scene.id == "mp3d/tiny_house" and scene.source == "mp3d"
    assert [(r.id, r.room_type, r.label) for r in scene.rooms] == [
        ("region_0", "kitchen", "kitchen"),
        ("region_1", "living room", "living room"),
        ("region_2", "room", "no label"),
    ]
    kitchen, living, unlabeled = scene.rooms
    assert kitchen.floor_polygon == ((0.0, -3.0), (4.0, -3.0), (4.0, 0.0), (0.0, 0.0))
    assert kitchen.floor_height == 0.0 and kitchen.ceiling_height == 2.6
    # The L-shaped S/V surface, (x, y) → (x, −y), re-ordered counter-clockwise.
    assert living.floor_polygon == (
        (4.0, -3.0),
        (6.0, -3.0),
        (6.0, -5.0),
        (9.0, -5.0),
        (9.0, 0.0),
        (4.0, 0.0),
    )
    assert living.area == pytest.approx(21.0)
    assert living.floor_height == pytest.approx(0.02) and living.ceiling_height == 2.78
    assert unlabeled.area == pytest.approx(2.1 * 1.5)


def test_object_counts_room_assignment_and_metadata() -> None:
    scene = load(str(HOUSE))
    assert {r.id: [o.id for o in r.objects] for r in scene.rooms} == {
        "region_0": ["object_0", "object_1", "object_8"],
        "region_1": ["object_2", "object_3"],
        "region_2": ["object_4"],
    }
    assert scene.metadata == {
        "house": "tiny_house",
        "levels": 1,
        "objects_without_region": 1,
        "objects_without_category": 1,
        "structural_objects": 1,
    }


def test_categories_are_normalised_mpcat40_names() -> None:
    scene = load(str(HOUSE))
    got = {o.id: (o.category, o.label) for o in scene.objects()}
    assert got == {
        "object_0": ("cabinet", "kitchen cabinet"),
        "object_1": ("chair", "chair"),
        "object_8": ("chair", "chair"),
        "object_2": ("sofa", "sofa"),
        "object_3": ("tv monitor", "tv"),
        "object_4": ("chest of drawers", "night stand"),
    }


def test_axis_aligned_box_maps_zup_to_habitat() -> None:
    """Cabinet: centre (1, 2.7, 0.45), radii (0.6, 0.3, 0.45) → Z-up box x .4..1.6, y 2.4..3."""
    lo, hi = _box(load(str(HOUSE)), "object_0")
    assert lo == pytest.approx((0.4, 0.0, -3.0))
    assert hi == pytest.approx((1.6, 0.9, -2.4))


def test_obb_turned_45_degrees() -> None:
    """Chair: axes (c, s, 0), (−s, c, 0), radii (0.3, 0.2, 0.45): half x = half y = s·0.5."""
    scene = load(str(HOUSE))
    lo, hi = _box(scene, "object_1")
    h = S45 * 0.5
    assert lo == pytest.approx((2 - h, 0.0, -1 - h), abs=1e-6)
    assert hi == pytest.approx((2 + h, 0.9, -1 + h), abs=1e-6)
    assert scene.object("object_1").center == pytest.approx((2.0, 0.45, -1.0))


def test_obb_turned_90_degrees_and_tilted_axes() -> None:
    scene = load(str(HOUSE))
    # Sofa: axis0 = +y (radius 1), axis1 = −x (radius 0.45) → Z-up half sizes (0.45, 1, 0.42).
    lo, hi = _box(scene, "object_2")
    assert lo == pytest.approx((6.05, 0.0, -2.0))
    assert hi == pytest.approx((6.95, 0.84, 0.0))
    # TV: axis0 = +y (0.6), axis1 = +z (0.35), axis2 = +x (0.05) → half sizes (0.05, 0.6, 0.35).
    lo, hi = _box(scene, "object_3")
    assert lo == pytest.approx((8.75, 0.85, -3.1))
    assert hi == pytest.approx((8.85, 1.55, -1.9))


def test_openings_between_touching_and_overlapping_regions() -> None:
    scene = load(str(HOUSE))
    doors = {d.id: (d.room_ids, d.segment, d.kind) for d in scene.doors}
    assert doors == {
        # kitchen | living room share the wall x = 4 for z in −3..0
        "opening|region_0|region_1|0": (
            ("region_0", "region_1"),
            ((4.0, -3.0), (4.0, 0.0)),
            "opening",
        ),
        # the unlabeled region overlaps the kitchen: both walls inside the overlap open up
        "opening|region_0|region_2|0": (
            ("region_0", "region_2"),
            ((0.1, -1.5), (0.1, 0.0)),
            "opening",
        ),
        "opening|region_0|region_2|1": (
            ("region_0", "region_2"),
            ((0.0, 0.0), (0.0, -1.5)),
            "opening",
        ),
    }


def test_openings_make_the_house_navigable() -> None:
    scene = load(str(HOUSE))
    area = build_nav_area(scene)
    assert area.islands == ()
    assert all(((area.room_index == i) & area.free).any() for i in range(3))
    closed = build_nav_area(dataclasses.replace(scene, doors=()))
    assert len(closed.islands) == 2  # without openings the kitchen and region 2 are cut off


def test_scene_graph_builds_and_registry_knows_the_source() -> None:
    scene = load_source("mp3d", str(HOUSE))
    graph = build_scene_graph(scene)
    assert graph.scene is scene
    assert sum(1 for _ in scene.objects()) == 6


def test_packaged_mpcat40_table_is_the_published_one() -> None:
    names = mpcat40_names()
    rows = [line.split("\t") for line in UPSTREAM_MPCAT40.read_text().splitlines()[1:]]
    assert names == {int(r[0]): r[1] for r in rows}
    assert (names[0], names[22], names[40], names[41]) == (
        "void",
        "tv_monitor",
        "misc",
        "unlabeled",
    )


def _edit(tmp_path: Path, old: str, new: str) -> Path:
    text = HOUSE.read_text()
    assert old in text
    path = tmp_path / "bad.house"
    path.write_text(text.replace(old, new, 1))
    return path


@pytest.mark.parametrize(
    ("old", "new", "parts"),
    [
        ("ASCII 1.1", "ASCII 1.0", ["line 1", "field 'header'", "must be 'ASCII 1.1'"]),
        (
            "O  8  0  1  3 2 0.45  1 0 0  0 1 0  0.25 0.25 0.45",
            "O  8  0  1  3 2",
            ["line 29 (O)", "needs 15 fields"],
        ),
        ("O  8  0  1  3 2 0.45", "O  8  0  1  3 x 0.45", ["line 29 (O)", "field 'center'"]),
        (
            "O  8  0  1  3 2 0.45",
            "O  8  7  1  3 2 0.45",
            ["line 29 (O)", "field 'region_index'", "unknown region 7"],
        ),
        ("O  8  0  1", "O  8  0  9", ["field 'category_index'", "unknown category 9"]),
        ("C  5  22  tv  22", "C  5  22  tv  57", ["line 20 (C)", "field 'mpcat40_index'"]),
        (
            "R  2  0  0 0  -  -1 0.75 0  -2 0 0 0.1",
            "R  2  0  0 0  -  -1 0.75 0  -2 0 0 nan",
            ["line 6 (R)", "field 'bbox'"],
        ),
        (
            "O  1  0  1  2 1 0.45  0.707107 0.707107 0",
            "O  1  0  1  2 1 0.45  0 0 0",
            ["field 'axis0'", "non-zero"],
        ),
    ],
)
def test_malformed_lines_give_one_line_errors(
    tmp_path: Path, old: str, new: str, parts: list[str]
) -> None:
    path = _edit(tmp_path, old, new)
    with pytest.raises(SceneFormatError) as info:
        load(str(path))
    message = str(info.value)
    assert "\n" not in message and message.startswith(str(path))
    for part in parts:
        assert part in message


def test_truncated_file_without_regions(tmp_path: Path) -> None:
    path = tmp_path / "cut.house"
    path.write_text("".join(HOUSE.read_text().splitlines(keepends=True)[:3]))
    with pytest.raises(SceneFormatError, match="no region"):
        load(str(path))


def test_cli_show_and_bad_file(cli, tmp_path: Path) -> None:
    good = cli("scenes", "show", str(HOUSE), "--source", "mp3d")
    assert good.returncode == 0, good.stderr
    assert "3 rooms, 3 doors, 6 objects" in good.stdout
    bad = cli("scenes", "show", str(_edit(tmp_path, "ASCII 1.1", "PLY")), "--source", "mp3d")
    assert bad.returncode == 2
    lines = bad.stderr.strip().splitlines()
    assert len(lines) == 1 and "bad.house: line 1: field 'header'" in lines[0]
