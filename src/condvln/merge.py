"""``condvln merge``: join the folders of ``--shard i/N`` runs or evaluations into one.

It sits above both the runner and the evaluation (the low-level ``--shard`` selection is
:mod:`condvln.parallel.shards`).

Checks before anything is written: every shard ``0..N-1`` present exactly once, each shard
complete (as many episodes as its manifest lists), no episode in two shards, the union equal to
the whole split, and the manifests agreeing on what was run — for runs the dataset hash, agent
spec, arguments, class, protocol, seed, split, batch size and step timeout; for evaluations the
dataset and predictions SHA-256, split, seed, metric options and run name. Runs are merged by
writing the union sorted by episode id; evaluations by concatenating the records in dataset
order and aggregating them again. The merged folder is built aside and renamed into place, and
equals an unsharded run byte for byte, except in the manifests: ``provenance`` (the command
line) is shard 0's, and an evaluation's ``manifest.json`` has its own timestamp and a
``merged_shards`` count.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from condvln.agents.run import (
    MANIFEST,
    PREDICTIONS,
    TRAJECTORIES,
    predictions,
    read_trajectories,
)
from condvln.agents.runner.episodes import id_key
from condvln.errors import ConfigError, FormatError
from condvln.evaluation.evaluate import _write_outputs, metrics_and_tables, record_counts
from condvln.evaluation.metrics import MetricOptions
from condvln.io import atomic_directory, atomic_write_bytes, dumps_json, read_json

RUN_LOCAL_KEYS = ("shard", "episodes", "dataset", "provenance")
"""Run manifest keys that may differ between shards (dataset path and command line, git state
and versions may differ by machine); the merged manifest keeps shard 0's."""

EVAL_KEYS = ("seed", "metric_options", "navigator", "run")
"""Evaluation manifest keys every shard must share (plus the dataset and predictions hashes)."""


@dataclass(frozen=True)
class MergeSummary:
    """What a merge wrote: ``kind`` (``"run"`` or ``"evaluation"``), shards and episodes."""

    kind: str
    out_dir: Path
    shards: int
    episodes: int


@dataclass(frozen=True)
class _Shard:
    folder: Path
    manifest: dict[str, Any]
    index: int
    count: int
    of_episodes: int


def _read_shards(folders: Sequence[Path]) -> list[_Shard]:
    """The shard folders sorted by index, checked to be exactly shards ``0..N-1`` of one split."""
    if not folders:
        raise ConfigError("merge: no shard folders given")
    shards = []
    for folder in folders:
        path = Path(folder) / MANIFEST
        if not path.is_file():
            raise ConfigError(f"{folder}: no {MANIFEST} (not a run or evaluation folder)")
        manifest = read_json(path, FormatError)
        entry = manifest.get("shard") if isinstance(manifest, dict) else None
        if not isinstance(entry, dict):
            raise ConfigError(f"{path}: not a shard (run it with --shard i/N)")
        shards.append(
            _Shard(Path(folder), manifest, entry["index"], entry["count"], entry["of_episodes"])
        )
    count = shards[0].count
    for shard in shards:
        if (shard.count, shard.of_episodes) != (count, shards[0].of_episodes):
            raise ConfigError(
                f"{shard.folder}: shard {shard.index}/{shard.count} of {shard.of_episodes} "
                f"episodes does not belong with {shards[0].folder} "
                f"(shard {shards[0].index}/{count} of {shards[0].of_episodes})"
            )
    seen: dict[int, Path] = {}
    for shard in shards:
        if shard.index in seen:
            raise ConfigError(
                f"shard {shard.index}/{count} given twice: {seen[shard.index]} and {shard.folder}"
            )
        seen[shard.index] = shard.folder
    missing = [f"{i}/{count}" for i in range(count) if i not in seen]
    if missing:
        raise ConfigError(f"merge: missing shard {', '.join(missing)}")
    return sorted(shards, key=lambda s: s.index)


def _same(shards: list[_Shard], what: str, value: Any) -> None:
    """All shards agree on ``value(manifest)`` (else a one-line error naming both folders)."""
    first = value(shards[0].manifest)
    for shard in shards[1:]:
        if value(shard.manifest) != first:
            raise ConfigError(
                f"{shard.folder}: {what} differs from {shards[0].folder}; "
                "shards of different runs cannot be merged"
            )


def _unique_ids(parts: list[tuple[_Shard, list[Any]]], expected: int) -> None:
    owner: dict[str, Path] = {}
    for shard, ids in parts:
        for episode_id in ids:
            key = str(episode_id)
            if key in owner:
                raise ConfigError(
                    f"episode {episode_id} is in two shards: {owner[key]} and {shard.folder}"
                )
            owner[key] = shard.folder
    if len(owner) != expected:
        raise ConfigError(f"merge: {len(owner)} episodes in the shards, the split has {expected}")


def merge_shards(
    folders: Sequence[str | Path], out: str | Path, *, overwrite: bool = False
) -> MergeSummary:
    """Merge shard folders (all runs, or all evaluations) into ``out``.

    Raises:
        ConfigError: A failed check (missing, repeated or incomplete shard, duplicate or
            missing episode, different dataset, agent or settings), or ``out`` exists.
    """
    out = Path(out)
    if out.exists() and not overwrite:
        raise ConfigError(f"{out} exists; pass --overwrite to replace it")
    shards = _read_shards([Path(f) for f in folders])
    kinds = {"evaluation" if s.manifest.get("command") == "evaluate" else "run" for s in shards}
    if len(kinds) > 1:
        raise ConfigError("merge: the folders mix runs and evaluations")
    if kinds == {"run"}:
        episodes = _merge_runs(shards, out, overwrite)
        return MergeSummary("run", out, len(shards), episodes)
    episodes = _merge_evaluations(shards, out, overwrite)
    return MergeSummary("evaluation", out, len(shards), episodes)


def _merge_runs(shards: list[_Shard], out: Path, overwrite: bool) -> int:
    _same(shards, "dataset_hash", lambda m: m.get("dataset_hash"))
    _same(shards, "the agent spec", lambda m: (m.get("agent"), m.get("agent_class")))
    keys = sorted({k for s in shards for k in s.manifest} - set(RUN_LOCAL_KEYS))
    for key in keys:
        _same(shards, f"'{key}'", lambda m, key=key: m.get(key))
    parts = []
    for shard in shards:
        latest = {str(r["episode_id"]): r for r in read_trajectories(shard.folder / TRAJECTORIES)}
        if len(latest) != shard.manifest["episodes"]:
            raise ConfigError(
                f"{shard.folder}: shard {shard.index}/{shard.count} is incomplete "
                f"({len(latest)} of {shard.manifest['episodes']} episodes); resume it first"
            )
        parts.append((shard, list(latest.values())))
    _unique_ids([(s, [r["episode_id"] for r in recs]) for s, recs in parts], shards[0].of_episodes)
    records = sorted((r for _, recs in parts for r in recs), key=lambda r: id_key(r["episode_id"]))
    manifest = {k: v for k, v in shards[0].manifest.items() if k != "shard"}
    manifest["episodes"] = len(records)
    with atomic_directory(out, replace=overwrite) as tmp:
        atomic_write_bytes(tmp / TRAJECTORIES, b"".join(orjson.dumps(r) + b"\n" for r in records))
        atomic_write_bytes(tmp / PREDICTIONS, dumps_json(predictions(records)))
        atomic_write_bytes(tmp / MANIFEST, dumps_json(manifest, indent=True))
    return len(records)


def _merge_evaluations(shards: list[_Shard], out: Path, overwrite: bool) -> int:
    _same(shards, "the split", lambda m: m["dataset"].get("split"))
    _same(shards, "the dataset (split file SHA-256)", lambda m: m["dataset"].get("sha256"))
    _same(shards, "the test answers SHA-256", lambda m: m["dataset"].get("answers_sha256"))
    _same(shards, "the predictions (SHA-256)", lambda m: m["predictions"]["sha256"])
    for key in EVAL_KEYS:
        _same(shards, f"'{key}'", lambda m, key=key: m.get(key))
    parts, shard_counts = [], []
    for shard in shards:
        metrics = read_json(shard.folder / "metrics.json", FormatError)
        lines = (shard.folder / "episodes.jsonl").read_bytes().splitlines()
        records = [orjson.loads(line) for line in lines if line.strip()]
        if len(records) != metrics["counts"]["episodes"]:
            raise ConfigError(
                f"{shard.folder}: episodes.jsonl holds {len(records)} records, metrics.json "
                f"counts {metrics['counts']['episodes']}"
            )
        parts.append((shard, records))
        shard_counts.append(metrics["counts"])
    _unique_ids([(s, [r["episode_id"] for r in recs]) for s, recs in parts], shards[0].of_episodes)
    records = [r for _, recs in parts for r in recs]
    first = shard_counts[0]
    counts = {
        "episodes": len(records),
        "predicted": first["predicted"],
        "scored": sum(c["scored"] for c in shard_counts),
        "missing": sum(c["missing"] for c in shard_counts),
        "extra": first["extra"],
        "extra_ids": first["extra_ids"],
        **record_counts(records),
    }
    manifest = shards[0].manifest
    name, split, seed = manifest["run"], manifest["dataset"]["split"], manifest["seed"]
    options = MetricOptions(**manifest["metric_options"])
    gt_file = read_json(shards[0].folder / "metrics.json", FormatError)["fidelity"]["gt_file"]
    metrics, tables = metrics_and_tables(name, split, records, counts, options, gt_file, seed)
    merged = {k: v for k, v in manifest.items() if k != "shard"} | {"merged_shards": len(shards)}
    result = {
        "records": records,
        "metrics": metrics,
        "tables": tables,
        "manifest": merged,
    }
    with atomic_directory(out, replace=overwrite) as tmp:
        _write_outputs(tmp, result)
    return len(records)
