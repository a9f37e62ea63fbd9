"""``--shard i/N`` and ``condvln merge``: merged shards equal an unsharded run byte for byte."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from condvln.agents import run_agent
from condvln.cli import app
from condvln.errors import ConfigError
from condvln.evaluation.evaluate import evaluate_run
from condvln.io import dumps_json, read_json
from condvln.merge import merge_shards
from condvln.parallel import Shard, parse_shard

pytestmark = pytest.mark.slow

RUN_FILES = ("trajectories.jsonl", "predictions.json")


def same_manifest(a: Path, b: Path) -> bool:
    """Whether two run folders' manifests agree apart from ``provenance`` (the command line)."""
    drop = ("provenance",)
    left, right = (read_json(d / "manifest.json") for d in (a, b))
    return {k: v for k, v in left.items() if k not in drop} == {
        k: v for k, v in right.items() if k not in drop
    }


EVAL_FILES = (
    "episodes.jsonl",
    "metrics.json",
    "table2.md",
    "table2.csv",
    "table3.md",
    "table3.csv",
)


def test_shards_partition_any_length() -> None:
    for n in range(0, 12):
        for count in (1, 2, 3, 5):
            parts = [Shard(i, count).select(list(range(n))) for i in range(count)]
            assert [x for p in parts for x in p] == list(range(n))
            assert max(map(len, parts)) - min(map(len, parts)) <= 1


@pytest.mark.parametrize("text", ["3/3", "-1/2", "1", "a/b", "0/0", "1/2/3"])
def test_bad_shard_is_a_config_error(text: str) -> None:
    with pytest.raises(ConfigError, match="shard"):
        parse_shard(text)


@pytest.fixture(scope="module")
def runs(dataset: Path, sleepy: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``full/`` (unsharded, 2 workers) and ``s0..s2`` (shards 0/3..2/3, one process each)."""
    root = tmp_path_factory.mktemp("runs")
    run_agent(sleepy, dataset, "train", root / "full", workers=2, protocol={"miss_rate": 0.3})
    for i in range(3):
        run_agent(
            sleepy, dataset, "train", root / f"s{i}", shard=Shard(i, 3), protocol={"miss_rate": 0.3}
        )
    return root


def test_merged_run_equals_unsharded(runs: Path, tmp_path: Path) -> None:
    sizes = [read_json(runs / f"s{i}" / "manifest.json")["episodes"] for i in range(3)]
    total = read_json(runs / "full" / "manifest.json")["episodes"]
    assert sum(sizes) == total and min(sizes) > 0
    summary = merge_shards([runs / "s2", runs / "s0", runs / "s1"], tmp_path / "m")
    assert (summary.kind, summary.shards, summary.episodes) == ("run", 3, total)
    for name in RUN_FILES:
        assert (tmp_path / "m" / name).read_bytes() == (runs / "full" / name).read_bytes(), name
    assert same_manifest(tmp_path / "m", runs / "full")


def test_merged_evaluation_equals_unsharded(dataset: Path, runs: Path, tmp_path: Path) -> None:
    preds = runs / "full" / "trajectories.jsonl"
    full = evaluate_run(dataset, preds, tmp_path / "full", split="train", run_name="x")
    for i in range(2):
        evaluate_run(
            dataset, preds, tmp_path / f"e{i}", split="train", run_name="x", shard=Shard(i, 2)
        )
    shard0 = read_json(tmp_path / "e0" / "metrics.json")["counts"]
    assert 0 < shard0["episodes"] < full["metrics"]["counts"]["episodes"]
    merge_shards([tmp_path / "e0", tmp_path / "e1"], tmp_path / "m")
    for name in EVAL_FILES:
        assert (tmp_path / "m" / name).read_bytes() == (tmp_path / "full" / name).read_bytes(), name


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def test_merge_checks(runs: Path, dataset: Path, sleepy: str, tmp_path: Path) -> None:
    s0, s1, s2 = (runs / f"s{i}" for i in range(3))
    out = tmp_path / "out"
    with pytest.raises(ConfigError, match=r"missing shard 1/3"):
        merge_shards([s0, s2], out)
    with pytest.raises(ConfigError, match=r"shard 0/3 given twice"):
        merge_shards([s0, s0, s1, s2], out)
    with pytest.raises(ConfigError, match="not a shard"):
        merge_shards([runs / "full"], out)
    torn = _copy(s1, tmp_path / "torn")
    lines = (torn / "trajectories.jsonl").read_bytes().splitlines(keepends=True)
    (torn / "trajectories.jsonl").write_bytes(b"".join(lines[:-1]))
    with pytest.raises(ConfigError, match=r"shard 1/3 is incomplete"):
        merge_shards([s0, torn, s2], out)
    other = tmp_path / "other"
    run_agent(
        sleepy,
        dataset,
        "train",
        other,
        shard=Shard(1, 3),
        agent_args={"steps": 5},
        protocol={"miss_rate": 0.3},
    )
    with pytest.raises(ConfigError, match="'agent_args' differs"):
        merge_shards([s0, other, s2], out)
    fake = _copy(s1, tmp_path / "fake")
    manifest = read_json(fake / "manifest.json") | {"dataset_hash": "0" * 16}
    (fake / "manifest.json").write_bytes(dumps_json(manifest, indent=True))
    with pytest.raises(ConfigError, match="dataset_hash differs"):
        merge_shards([s0, fake, s2], out)
    dup = _copy(s1, tmp_path / "dup")
    first = (s0 / "trajectories.jsonl").read_bytes().splitlines(keepends=True)[0]
    rest = (dup / "trajectories.jsonl").read_bytes().splitlines(keepends=True)[1:]
    (dup / "trajectories.jsonl").write_bytes(first + b"".join(rest))
    episode = orjson.loads(first)["episode_id"]
    with pytest.raises(ConfigError, match=f"episode {episode} is in two shards"):
        merge_shards([s0, dup, s2], out)
    assert not out.exists()  # nothing half-written
    out.mkdir()
    with pytest.raises(ConfigError, match="exists"):
        merge_shards([s0, s1, s2], out)


def test_cli_shard_and_merge(cli, dataset: Path, tmp_path: Path) -> None:
    args = ["run", "--agent", "goal_only", "--dataset", str(dataset), "--split", "train"]
    done = cli(*args, "-q", "--out", str(tmp_path / "c1"), "--shard", "1/2", "-j", "1")
    assert done.returncode == 0, done.stderr
    run_agent("goal_only", dataset, "train", tmp_path / "c0", shard=Shard(0, 2))
    run_agent("goal_only", dataset, "train", tmp_path / "full", workers=2)
    merged = cli("merge", str(tmp_path / "c0"), str(tmp_path / "c1"), "--out", str(tmp_path / "m"))
    assert merged.returncode == 0 and "run of" in merged.stdout, merged.stderr
    for name in RUN_FILES:
        assert (tmp_path / "m" / name).read_bytes() == (tmp_path / "full" / name).read_bytes()
    assert same_manifest(tmp_path / "m", tmp_path / "full")
    bad = cli("merge", str(tmp_path / "c0"), "--out", str(tmp_path / "m2"))
    assert bad.returncode == 2 and "missing shard 1/2" in bad.stderr
    assert "Traceback" not in bad.stderr and not (tmp_path / "m2").exists()
    bad = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "x"), "--shard", "2/2"])
    assert isinstance(bad.exception, ConfigError) and "shard 2/2" in str(bad.exception)
