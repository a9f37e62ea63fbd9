"""Scene identity by content: one house under other ids, room names, key order or float
spelling is one scene — ``generate`` uses it once (decided before any work) and ``validate``
finds it in any two splits that must not share a house."""

from __future__ import annotations

import gzip
import json
import re
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest

from condvln.dataset import generate as generate_module
from condvln.dataset.generate import GenerateConfig, generate_dataset
from condvln.dataset.validate import validate_dataset
from condvln.errors import ConfigError
from condvln.scene.identity import scene_fingerprint
from condvln.scene.serialize import load_scene, save_scene, scene_from_dict
from condvln.scene.sources import load
from condvln.vlnce import SPLITS, split_path


def _read(path: Path) -> dict:
    return orjson.loads(gzip.decompress(path.read_bytes()))


def _write(path: Path, doc: dict) -> None:
    path.write_bytes(gzip.compress(orjson.dumps(doc), mtime=0))


def _reversed_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _reversed_keys(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [_reversed_keys(v) for v in value]
    return value


def disguise(doc: dict, tag: str = "copy") -> bytes:
    """The same house under a new scene id, new room / object / door ids, rooms and objects in
    reverse order, keys in reverse order, indented, every decimal written with a trailing 0."""
    scene = doc["scene"]
    rooms = {r["id"]: f"{tag}-room-{k}" for k, r in enumerate(scene["rooms"])}
    objects = {o["id"]: f"{tag}-obj-{k}" for k, o in enumerate(o for r in scene["rooms"]
                                                                 for o in r["objects"])}  # fmt: skip
    scene["id"] = f"{tag}/house"
    scene["source"] = "elsewhere"
    scene["metadata"] = {"note": "renamed"}
    for room in scene["rooms"]:
        room["id"], room["label"] = rooms[room["id"]], room["label"].upper()
        for obj in room["objects"]:
            obj["id"] = objects[obj["id"]]
            obj["parent_id"] = objects.get(obj["parent_id"])
        room["objects"].reverse()
    scene["rooms"].reverse()
    for k, door in enumerate(scene["doors"]):
        door["id"], door["room_ids"] = f"{tag}-door-{k}", [rooms[r] for r in door["room_ids"]]
    text = json.dumps(_reversed_keys(doc), indent=3)
    return re.sub(r"(?<=\d\.)(\d+)", r"\g<1>0", text).encode()


def _doc(seed: int) -> dict:
    from condvln.scene.serialize import scene_to_dict

    return scene_to_dict(load("procedural", str(seed)))


def test_fingerprint_ignores_ids_order_and_formatting(tmp_path: Path) -> None:
    doc = _doc(3)
    original = scene_from_dict(doc)
    (tmp_path / "copy.json").write_bytes(disguise(json.loads(json.dumps(doc))))
    copy = load_scene(tmp_path / "copy.json")
    assert copy.id != original.id and {r.id for r in copy.rooms} != {r.id for r in original.rooms}
    assert scene_fingerprint(copy) == scene_fingerprint(original)
    assert scene_fingerprint(original) != scene_fingerprint(load("procedural", "4"))


@pytest.mark.parametrize(
    "edit",
    [
        "moved object",
        "other category",
        "no door",
        "door between other rooms",
        "smaller room",
        "extra object",
    ],
)
def test_fingerprint_sees_content_changes(edit: str) -> None:
    doc = _doc(3)
    scene = doc["scene"]
    room = next(r for r in scene["rooms"] if r["objects"])
    obj = room["objects"][0]
    if edit == "moved object":
        obj["center"][0] += 0.05
        obj["aabb"]["min"][0] += 0.05
        obj["aabb"]["max"][0] += 0.05
    elif edit == "other category":
        obj["category"] = "piano" if obj["category"] != "piano" else "sofa"
    elif edit == "no door":
        scene["doors"].pop()
    elif edit == "door between other rooms":
        door = scene["doors"][0]
        others = [r["id"] for r in scene["rooms"] if r["id"] not in door["room_ids"]]
        door["room_ids"] = [door["room_ids"][0], others[0]]
    elif edit == "smaller room":
        room["floor_polygon"][1][0] -= 0.2
    else:
        room["objects"].append({**obj, "id": "twin"})
    assert scene_fingerprint(scene_from_dict(doc)) != scene_fingerprint(scene_from_dict(_doc(3))), (
        edit
    )


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """house0..3, five byte-identical copies of house0 and a disguised copy of house2."""
    folder = tmp_path_factory.mktemp("inputs")
    for seed in range(4):
        save_scene(load("procedural", str(seed)), folder / f"house{seed}.json")
    for k in range(5):
        shutil.copyfile(folder / "house0.json", folder / f"copy{k}.json")
    (folder / "disguised.json").write_bytes(
        disguise(json.loads((folder / "house2.json").read_text()))
    )
    return folder


def test_duplicate_inputs_are_used_once_and_reported(inputs: Path, tmp_path: Path) -> None:
    config = GenerateConfig(source="condvln", inputs=(str(inputs),), scenes=None, per_scene=30)
    stats = generate_dataset(config, tmp_path / "ds", workers=1)
    assert stats["scenes"] == 4
    pairs = sorted(
        (d["skipped"].rsplit("/", 1)[-1], d["same_as"].rsplit("/", 1)[-1])
        for d in stats["duplicate_inputs"]
    )
    assert pairs == [("copy1.json", "copy0.json"), ("copy2.json", "copy0.json"),
                     ("copy3.json", "copy0.json"), ("copy4.json", "copy0.json"),
                     ("house0.json", "copy0.json"), ("house2.json", "disguised.json")]  # fmt: skip
    used = {
        split: {e["scene_id"] for e in _read(split_path(tmp_path / "ds", split))["episodes"]}
        for split in SPLITS
    }
    seen = used["train"] | used["val_seen"]
    assert not seen & used["val_unseen"] and not seen & used["test"]
    assert not used["val_unseen"] & used["test"]
    assert validate_dataset(tmp_path / "ds").ok


def test_cli_names_both_inputs_of_a_duplicate(cli, inputs: Path, tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    for name in ("house1.json", "house2.json", "disguised.json"):
        shutil.copyfile(inputs / name, folder / name)
    result = cli("generate", "--source", "condvln", "--input", str(folder), "--scenes", "2",
                 "--per-scene", "5", "--out", str(tmp_path / "ds"), "-j", "1", "-q")  # fmt: skip
    assert result.returncode == 0, result.stderr
    line = f"skipped {folder / 'house2.json'}: same content as {folder / 'disguised.json'}"
    assert [x for x in result.stdout.splitlines() if x.startswith("skipped")] == [line]
    assert "2 scenes" in result.stdout  # --scenes counts distinct houses


def test_two_houses_with_one_scene_id_are_refused_before_any_work(
    inputs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copyfile(inputs / "house1.json", folder / "a.json")
    other = json.loads((inputs / "house3.json").read_text())
    other["scene"]["id"] = "procedural/seed-1"  # another house under house1's id
    (folder / "b.json").write_text(json.dumps(other))

    def no_work(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("sampling started before the scene check")

    monkeypatch.setattr(generate_module, "run_synthesis", no_work)
    config = GenerateConfig(source="condvln", inputs=(str(folder),), scenes=None, per_scene=5)
    with pytest.raises(ConfigError, match="both give scene 'procedural/seed-1'"):
        generate_dataset(config, tmp_path / "ds", workers=1)  # before any work: no_work
    assert not (tmp_path / "ds").exists()


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("identity") / "ds"
    generate_dataset(GenerateConfig(scenes=10, per_scene=30, seed=0), out, workers=1)
    return out


def _labels(root: Path, split: str) -> tuple[Path, dict, dict]:
    """The file holding the first episode's ``info``, its document and that ``info``."""
    path = split_path(root, split, "_answers" if split == "test" else "")
    doc = _read(path)
    if split == "test":
        return path, doc, doc[min(doc, key=int)]["info"]
    return path, doc, doc["episodes"][0]["info"]


def _share(copy: Path, source: str, target: str, how: str) -> None:
    """Point ``target``'s first episode at the house of ``source``'s first episode: the same
    scene, a byte copy or a disguised copy of its scene file."""
    scene_id = _read(split_path(copy, source))["episodes"][0]["scene_id"]
    scene_file = original = _labels(copy, source)[2]["condvln"]["scene_file"]
    if how == "same content":
        scene_id = scene_file = "scenes/renamed_copy.json"
        shutil.copyfile(copy / original, copy / scene_file)
    elif how == "disguised copy":
        scene_id = scene_file = "scenes/disguised_copy.json"
        (copy / scene_file).write_bytes(disguise(json.loads((copy / original).read_text())))
    doc = _read(split_path(copy, target))
    doc["episodes"][0]["scene_id"] = scene_id
    _write(split_path(copy, target), doc)
    path, doc, info = _labels(copy, target)
    info["condvln"]["scene_file"] = scene_file
    _write(path, doc)


@pytest.mark.parametrize(
    ("source", "target", "how"),
    [
        ("val_unseen", "train", "same path"),
        ("val_unseen", "train", "same content"),
        ("val_unseen", "train", "disguised copy"),
        ("train", "val_unseen", "disguised copy"),
        ("val_seen", "test", "disguised copy"),
        ("test", "val_unseen", "disguised copy"),
    ],
)
@pytest.mark.slow
def test_validate_catches_a_house_shared_by_two_splits(
    dataset: Path, tmp_path: Path, source: str, target: str, how: str
) -> None:
    copy = tmp_path / "ds"
    shutil.copytree(dataset, copy)
    _share(copy, source, target, how)
    problems = validate_dataset(copy).problems
    pair = " and ".join(sorted((source, target), key=SPLITS.index))
    wanted = f"splits {pair} share 1 house(s)"
    assert [p for p in problems if "share" in p and wanted in p], problems[-3:]


@pytest.mark.slow
def test_train_and_val_seen_may_share_houses(dataset: Path) -> None:
    train = {e["scene_id"] for e in _read(split_path(dataset, "train"))["episodes"]}
    val_seen = {e["scene_id"] for e in _read(split_path(dataset, "val_seen"))["episodes"]}
    assert train & val_seen  # by design: val_seen holds other instructions in seen houses
    assert validate_dataset(dataset).ok
