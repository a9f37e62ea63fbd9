"""Episodes parked on disk while a run balances, and split files written episode by episode."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import orjson
import pytest

from condvln.dataset.generate import GenerateConfig, generate_dataset, vet_instances
from condvln.dataset.spill import Parked, PayloadSpill
from condvln.io import atomic_gzip_writer
from condvln.synth.driver import synthesize
from condvln.synth.pipeline import SceneSpec


def test_chunks_compress_to_the_bytes_of_one_whole_document(tmp_path: Path) -> None:
    chunks = [b'{"episodes":[', *(orjson.dumps({"id": i, "x": i / 7}) + b"," for i in range(999))]
    chunks.append(b'{"id":999}]}')
    with atomic_gzip_writer(tmp_path / "a.json.gz") as write:
        for chunk in chunks:
            write(chunk)
    expected = gzip.compress(b"".join(chunks), compresslevel=6, mtime=0)
    assert (tmp_path / "a.json.gz").read_bytes() == expected


def test_a_failed_write_leaves_neither_file_nor_temporary(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError), atomic_gzip_writer(tmp_path / "b.json.gz") as write:
        write(b"{")
        raise RuntimeError("stop")
    assert os.listdir(tmp_path) == []


def test_parked_payloads_come_back_equal_and_the_parent_keeps_handles(tmp_path: Path) -> None:
    spec = SceneSpec("procedural", "2")
    scene = spec.load()
    found = synthesize(scene, seed=3, quota=6).instances
    config = GenerateConfig(scenes=1, per_scene=6)
    built, _ = vet_instances(spec, config, scene, 0, 0, found)
    assert built and all(isinstance(i.payload, tuple) for i in built)
    with PayloadSpill(tmp_path) as spill:
        parked = spill.park(built)
        assert all(isinstance(i.payload, Parked) for i in parked)
        assert [(i.scene_id, i.program) for i in parked] == [(i.scene_id, i.program) for i in built]
        for before, after in zip(built, parked, strict=True):
            assert orjson.dumps(spill.fetch(after)) == orjson.dumps(before.payload)
        assert os.listdir(tmp_path) == []  # an unnamed file


def test_generated_folders_do_not_depend_on_the_workers(tmp_path: Path) -> None:
    config = GenerateConfig(scenes=4, per_scene=8, seed=5)
    one, two = tmp_path / "one", tmp_path / "two"
    generate_dataset(config, one, workers=1)
    generate_dataset(config, two, workers=2)
    files = sorted(p.relative_to(one) for p in one.rglob("*") if p.is_file())
    assert files and files == sorted(p.relative_to(two) for p in two.rglob("*") if p.is_file())
    assert all((one / f).read_bytes() == (two / f).read_bytes() for f in files)
    assert sorted(os.listdir(tmp_path)) == ["one", "two"]  # no spill or temporary left
