"""The ``gibson`` source: 3D Scene Graph ``.npz`` files built here from the published field list,
a ``.scn`` written in the layout of habitat-sim's ``GibsonTestScene.scn``, and the refusal of
pickles that would run code.

The Allensville-like fixture (Gibson Z-up coordinates; Habitat = ``(x, z, −y)``, sizes
``(sx, sz, sy)``):

* room 1 kitchen: centre (2, 1.5, 1.25), size (4, 3, 2.5) → Habitat x 0..4, z −3..0, floor 0;
* room 2 living_room: centre (6.5, 2, 1.3), size (5, 4, 2.6) → x 4..9, z −4..0 (touches room 1);
* room 3 bathroom: centre (1, 4.5, 1.2), size (2, 3, 2.4) → x 0..2, z −6..−3 (touches room 1);
* objects 10 microwave, 11 oven (room 1), 12 couch, 13 tv (room 2), 14 toilet, 15 sink (room 3),
  16 chair whose ``parent_room`` 99 names no room.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from condvln.errors import SceneFormatError
from condvln.graph import build_scene_graph
from condvln.scene.sources import load as load_source
from condvln.scene.sources.gibson import load, read_npz_member

SCN_SAMPLE = Path(__file__).resolve().parents[1] / "data" / "gibson" / "format_sample.scn"

ROOMS = {
    1: ("kitchen", (2.0, 1.5, 1.25), (4.0, 3.0, 2.5)),
    2: ("living_room", (6.5, 2.0, 1.3), (5.0, 4.0, 2.6)),
    3: ("bathroom", (1.0, 4.5, 1.2), (2.0, 3.0, 2.4)),
}
OBJECTS = {
    10: ("microwave", (3.5, 2.8, 1.0), (0.5, 0.4, 0.3), 1),
    11: ("oven", (3.5, 2.6, 0.45), (0.6, 0.6, 0.9), 1),
    12: ("couch", (6.5, 3.5, 0.4), (2.0, 0.9, 0.8), 2),
    13: ("tv", (8.9, 2.0, 1.2), (0.1, 1.2, 0.7), 2),
    14: ("toilet", (0.5, 5.5, 0.37), (0.4, 0.7, 0.74), 3),
    15: ("sink", (1.5, 5.7, 0.85), (0.5, 0.4, 0.2), 3),
    16: ("chair", (5.0, 1.0, 0.45), (0.5, 0.5, 0.9), 99),
}


def scene_graph_dict() -> dict[str, Any]:
    """The ``output`` dict of a 3D Scene Graph file, with numpy arrays and scalars as in the real ones."""
    rooms = {
        rid: {
            "id": rid,
            "scene_category": cat,
            "location": np.array(loc),
            "size": np.array(size),
            "floor_area": np.float64(size[0] * size[1]),
            "floor_number": "A",
            "volume": np.float64(np.prod(size)),
            "parent_building": 0,
        }
        for rid, (cat, loc, size) in ROOMS.items()
    }
    objects = {
        oid: {
            "id": oid,
            "class_": cls,
            "location": np.array(loc),
            "size": np.array(size),
            "parent_room": room,
            "action_affordance": ["clean"],
            "material": None,
            "volume": np.float32(np.prod(size)),
        }
        for oid, (cls, loc, size, room) in OBJECTS.items()
    }
    building = {
        "name": "Allensville",
        "num_rooms": 3,
        "size": np.array([9.0, 6.0, 2.6]),
        "object_inst_segmentation": np.zeros((4, 1), dtype=np.int16),
    }
    return {"building": building, "room": rooms, "object": objects, "camera": {}, "panorama": {}}


def flat(points: Any) -> list[float]:
    """Points as one flat list, for ``pytest.approx``."""
    return [float(c) for p in points for c in p]


def write_npz(path: Path, data: Any) -> Path:
    np.savez(path, output=np.array(data, dtype=object))
    return path


@pytest.fixture
def npz(tmp_path: Path) -> Path:
    return write_npz(tmp_path / "3DSceneGraph_Allensville.npz", scene_graph_dict())


def test_rooms_from_scene_categories_and_boxes(npz: Path) -> None:
    scene = load(str(npz))
    assert scene.id == "gibson/Allensville" and scene.source == "gibson"
    assert [(r.id, r.room_type, r.label) for r in scene.rooms] == [
        ("room_1", "kitchen", "kitchen"),
        ("room_2", "living room", "living_room"),
        ("room_3", "bathroom", "bathroom"),
    ]
    kitchen, living, bathroom = scene.rooms
    assert flat(kitchen.floor_polygon) == pytest.approx([0, -3, 4, -3, 4, 0, 0, 0])
    assert flat(living.floor_polygon) == pytest.approx([4, -4, 9, -4, 9, 0, 4, 0])
    assert flat(bathroom.floor_polygon) == pytest.approx([0, -6, 2, -6, 2, -3, 0, -3])
    assert [r.floor_height for r in scene.rooms] == pytest.approx([0.0, 0.0, 0.0])
    assert [r.ceiling_height for r in scene.rooms] == pytest.approx([2.5, 2.6, 2.4])


def test_objects_counts_and_room_assignment(npz: Path) -> None:
    scene = load(str(npz))
    assert {r.id: [o.id for o in r.objects] for r in scene.rooms} == {
        "room_1": ["object_10", "object_11"],
        "room_2": ["object_12", "object_13"],
        "room_3": ["object_14", "object_15"],
    }
    assert scene.metadata == {"objects_without_location": 0, "objects_without_room": 1}
    assert scene.object("object_12").category == "couch"


def test_known_boxes_in_habitat_frame(npz: Path) -> None:
    scene = load(str(npz))
    microwave = scene.object("object_10").box
    assert microwave is not None
    # centre (3.5, 2.8, 1.0) → (3.5, 1.0, −2.8); size (0.5, 0.4, 0.3) → (0.5, 0.3, 0.4)
    assert microwave.min == pytest.approx((3.25, 0.85, -3.0))
    assert microwave.max == pytest.approx((3.75, 1.15, -2.6))
    toilet = scene.object("object_14")
    assert toilet.center == pytest.approx((0.5, 0.37, -5.5))  # z = 0.37 becomes the height


def test_openings_between_touching_rooms(npz: Path) -> None:
    doors = {d.room_ids: d.segment for d in load(str(npz)).doors}
    assert doors.keys() == {("room_1", "room_2"), ("room_1", "room_3")}
    assert flat(doors["room_1", "room_2"]) == pytest.approx([4.0, -3.0, 4.0, 0.0])
    assert flat(sorted(doors["room_1", "room_3"])) == pytest.approx([0.0, -3.0, 2.0, -3.0])


def test_scn_written_like_npz2scn_gives_the_same_scene(npz: Path, tmp_path: Path) -> None:
    """habitat-sim's ``npz2scn.py`` copies the records into ``{"objects": [...], "rooms": [...]}``."""

    def plain(record: dict[str, Any]) -> dict[str, Any]:
        return {
            k: v.tolist() if isinstance(v, np.ndarray | np.generic) else v
            for k, v in record.items()
        }

    data = scene_graph_dict()
    scn = tmp_path / "Allensville.scn"
    scn.write_text(
        json.dumps(
            {
                "objects": [plain(o) for o in data["object"].values()],
                "rooms": [plain(r) for r in data["room"].values()],
            }
        )
    )
    from_scn, from_npz = load(str(scn)), load(str(npz))
    assert from_scn.id == "gibson/Allensville"
    assert from_scn.rooms == from_npz.rooms and from_scn.doors == from_npz.doors


def test_scn_in_the_habitat_sim_test_scene_layout() -> None:
    """Laid out like habitat-sim's ``GibsonTestScene.scn`` (objects only, two without location;
    ``GibsonSceneTest.cpp`` loads a stored ``[x, y, z]`` at ``(x, z, −y)``): the refrigerator
    stored at [1.25, −0.75, 0.9] with size [0.8, 0.7, 1.8] stands at (1.25, 0.9, 0.75) on y = 0."""
    scene = load_source("gibson", str(SCN_SAMPLE))
    (room,) = scene.rooms
    (fridge,) = room.objects
    assert fridge.id == "object_1" and fridge.category == "refrigerator"
    assert fridge.center == pytest.approx((1.25, 0.9, 0.75))
    assert fridge.size == pytest.approx((0.8, 1.8, 0.7))
    assert scene.metadata == {"objects_without_location": 2, "objects_without_room": 0}
    assert scene.is_single_room and room.floor_height == pytest.approx(0.0)
    build_scene_graph(scene)


def test_scene_graph_builds(npz: Path) -> None:
    graph = build_scene_graph(load(str(npz)))
    assert len(graph.scene.rooms) == 3


# --- refusing code in pickles ---------------------------------------------------------------------


class _Reduce:
    """Pickles as ``func(*args)``: what a malicious file would hold."""

    def __init__(self, func: Any, *args: Any) -> None:
        self.func, self.args = func, args

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return self.func, self.args


def _npz_with_payload(path: Path, payload: Any) -> Path:
    """An ``.npz`` whose ``output.npy`` has a valid object-array header and ``payload`` pickled."""
    npy = io.BytesIO()
    np.lib.format.write_array_header_1_0(npy, {"descr": "|O", "fortran_order": False, "shape": ()})
    npy.write(pickle.dumps(payload, protocol=3))
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("output.npy", npy.getvalue())
    return path


@pytest.mark.parametrize(
    ("make", "refused"),
    [
        (lambda marker: _Reduce(os.system, f"touch {marker}"), "system"),
        (lambda marker: _Reduce(eval, f"open({str(marker)!r}, 'w').close()"), "builtins.eval"),
        (
            lambda marker: {"room": {}, "object": [_Reduce(exec, f"open({str(marker)!r}, 'w')")]},
            "builtins.exec",
        ),
    ],
)
def test_malicious_pickle_is_refused_and_runs_nothing(
    tmp_path: Path, make: Any, refused: str
) -> None:
    marker = tmp_path / "pwned"
    path = _npz_with_payload(tmp_path / "evil.npz", make(marker))
    with pytest.raises(SceneFormatError) as info:
        load(str(path))
    message = str(info.value)
    assert "refused pickled global" in message and refused in message and str(path) in message
    assert not marker.exists()


def test_malicious_pickle_viacli(cli, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    path = _npz_with_payload(tmp_path / "evil.npz", _Reduce(os.system, f"touch {marker}"))
    out = cli("scenes", "show", str(path), "--source", "gibson")
    assert out.returncode == 2
    assert len(out.stderr.strip().splitlines()) == 1 and "refused pickled global" in out.stderr
    assert not marker.exists()


def test_plain_numeric_member_is_read_without_pickle(tmp_path: Path) -> None:
    path = tmp_path / "plain.npz"
    np.savez(path, output=np.arange(3.0))
    assert read_npz_member(path.read_bytes()).tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(SceneFormatError, match="0-d object array"):
        load(str(path))


# --- malformed files -------------------------------------------------------------------------------


def _assert_error(path: Path, *parts: str) -> None:
    with pytest.raises(SceneFormatError) as info:
        load(str(path))
    message = str(info.value)
    assert "\n" not in message and message.startswith(str(path))
    for part in parts:
        assert part in message


def test_truncated_npz(npz: Path, tmp_path: Path) -> None:
    cut = tmp_path / "cut.npz"
    cut.write_bytes(npz.read_bytes()[: npz.stat().st_size // 2])
    _assert_error(cut, "not a valid .npz")


def test_truncated_pickle_payload(tmp_path: Path) -> None:
    path = _npz_with_payload(tmp_path / "short.npz", scene_graph_dict())
    raw = zipfile.ZipFile(path).read("output.npy")
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("output.npy", raw[: len(raw) - 40])
    _assert_error(path, "corrupt pickle")


def test_missing_output_member(tmp_path: Path) -> None:
    path = tmp_path / "other.npz"
    np.savez(path, something=np.zeros(2))
    _assert_error(path, "field 'output'", "no 'output.npy' member")


def test_bad_records_name_record_and_field(tmp_path: Path) -> None:
    data = scene_graph_dict()
    data["room"][2]["size"] = np.array([5.0, np.nan, 2.6])
    _assert_error(write_npz(tmp_path / "a.npz", data), "room 2: field 'size'", "finite")
    data = scene_graph_dict()
    del data["object"][13]["class_"]
    _assert_error(write_npz(tmp_path / "b.npz", data), "object 13: field 'class_'")
    data = scene_graph_dict()
    data["object"][11]["location"] = np.array([1.0, 2.0])
    _assert_error(write_npz(tmp_path / "c.npz", data), "object 11: field 'location'")


def test_bad_scn_json(tmp_path: Path) -> None:
    path = tmp_path / "bad.scn"
    path.write_text('{"objects": [')
    _assert_error(path, "not valid JSON")


def test_cli_show_npz(cli, npz: Path) -> None:
    out = cli("scenes", "show", str(npz), "--source", "gibson")
    assert out.returncode == 0, out.stderr
    assert "3 rooms, 2 doors, 6 objects" in out.stdout


def test_openings_across_a_small_gap(tmp_path: Path) -> None:
    """A 5 cm gap (bathroom moved to y 3.05..6.05) is bridged: both facing walls open up."""
    data = scene_graph_dict()
    data["room"][3]["location"] = np.array([1.0, 4.55, 1.2])
    doors = [
        d for d in load(str(write_npz(tmp_path / "gap.npz", data))).doors if "room_3" in d.room_ids
    ]
    assert len(doors) == 2 and all(d.room_ids == ("room_1", "room_3") for d in doors)
    assert sorted({z for d in doors for _, z in d.segment}) == pytest.approx([-3.05, -3.0])
    assert all(1.9 < d.width < 2.1 for d in doors)


@pytest.mark.parametrize("protocol", [2, 3])
def test_pickles_written_by_numpy_1_are_accepted(tmp_path: Path, protocol: int) -> None:
    """numpy 1.x names ``numpy.core.multiarray`` (2.x: ``numpy._core``); protocol 2 adds ``_codecs``."""
    payload = pickle.dumps(np.array(scene_graph_dict(), dtype=object), protocol=protocol)
    legacy = payload.replace(b"numpy._core.", b"numpy.core.")
    assert b"numpy.core.multiarray" in legacy
    npy = io.BytesIO()
    np.lib.format.write_array_header_1_0(npy, {"descr": "|O", "fortran_order": False, "shape": ()})
    path = tmp_path / "legacy.npz"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("output.npy", npy.getvalue() + legacy)
    scene = load(str(path))
    assert sum(len(r.objects) for r in scene.rooms) == 6
