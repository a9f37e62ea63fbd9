"""``condvln merge``: join the folders of ``--shard i/N`` runs or evaluations into one.

It sits above both the runner and the evaluation (the low-level ``--shard`` selection is
:mod:`condvln.parallel.shards`).

Checks before anything is written: every manifest well formed (a corrupt one is a one-line
error naming the file and the field), every shard ``0..N-1`` present exactly once, each shard
complete (as many episodes as its manifest lists), no episode in two shards, each shard holding
exactly its part of the split — read from the dataset the manifests name, whose split file must
still hash as recorded — and the manifests agreeing on what was run — for runs the dataset hash,
agent spec, arguments, class, protocol, seed, split, batch size and step timeout; for evaluations the
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
from condvln.agents.runner.episodes import dataset_hash, id_key
from condvln.dataset.schema import load_checked_split
from condvln.errors import ConfigError, FormatError
from condvln.evaluation.evaluate import (
    _write_outputs,
    metrics_and_tables,
    record_counts,
    sha256_file,
)
from condvln.evaluation.metrics import MetricOptions
from condvln.evaluation.specs import METRICS
from condvln.io import (
    atomic_directory,
    atomic_write_bytes,
    dumps_json,
    parse_json,
    read_bytes,
    read_json,
)
from condvln.parallel.shards import Shard
from condvln.vlnce import SPLITS, split_path

RUN_LOCAL_KEYS = ("shard", "episodes", "dataset", "provenance")
"""Run manifest keys that may differ between shards (dataset path and command line, git state
and versions may differ by machine); the merged manifest keeps shard 0's."""

EVAL_KEYS = ("seed", "metric_options", "navigator", "run")
"""Evaluation manifest keys every shard must share (plus the dataset and predictions hashes)."""

_NUMERIC = {*METRICS.names(), "off_map_positions", "steps", "n_branches", "branch_chance"}
"""Record keys whose values are numbers (or null): they are re-aggregated."""


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


def _whole(value: Any, low: int = 0) -> bool:
    return type(value) is int and value >= low


def _require(manifest: dict[str, Any], path: Path, key: str, check: Any, what: str) -> Any:
    """``manifest[key]`` (dotted) when ``check(value)``, else a one-line FormatError."""
    value: Any = manifest
    for part in key.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    if not check(value):
        raise FormatError(f"must be {what}, got {value!r}"[:200], file=str(path), field=key)
    return value


def _read_shard(folder: Path) -> _Shard:
    path = folder / MANIFEST
    if not path.is_file():
        raise ConfigError(f"{folder}: no {MANIFEST} (not a run or evaluation folder)")
    manifest = read_json(path, FormatError)
    if not isinstance(manifest, dict):
        raise FormatError("must be a JSON object (a run or evaluation manifest)", file=str(path))
    if not isinstance(manifest.get("shard"), dict):
        raise ConfigError(f"{path}: not a shard (run it with --shard i/N)")
    count = _require(manifest, path, "shard.count", lambda v: _whole(v, 1), "a whole number ≥ 1")
    index = _require(
        manifest, path, "shard.index", lambda v: _whole(v) and v < count, f"in 0..{count - 1}"
    )
    of = _require(manifest, path, "shard.of_episodes", _whole, "a whole number ≥ 0")
    text = lambda v: isinstance(v, str) and bool(v)  # noqa: E731
    if manifest.get("command") == "evaluate":
        for key in ("dataset.path", "dataset.split", "dataset.sha256", "predictions.sha256", "run"):
            _require(manifest, path, key, text, "a non-empty string")
        _require(manifest, path, "seed", _whole, "a whole number ≥ 0")
        _require(manifest, path, "metric_options", lambda v: isinstance(v, dict), "an object")
    else:
        for key in ("dataset", "split", "dataset_hash"):
            _require(manifest, path, key, text, "a non-empty string")
        _require(manifest, path, "episodes", _whole, "a whole number ≥ 0")
    return _Shard(folder, manifest, index, count, of)


def _read_shards(folders: Sequence[Path]) -> list[_Shard]:
    """The shard folders sorted by index, checked to be exactly shards ``0..N-1`` of one split."""
    if not folders:
        raise ConfigError("merge: no shard folders given")
    shards = [_read_shard(Path(folder)) for folder in folders]
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


def _split_ids(shards: list[_Shard]) -> list[Any]:
    """The episode ids of the split the shards were run on (or scored against), in file order,
    from the first named dataset whose split file still hashes as recorded."""
    tried = []
    for shard in shards:
        manifest = shard.manifest
        if manifest.get("command") == "evaluate":
            root, split = Path(manifest["dataset"]["path"]), manifest["dataset"]["split"]
            recorded, current = manifest["dataset"]["sha256"], _sha256
        else:
            root, split = Path(manifest["dataset"]), manifest["split"]
            recorded, current = manifest["dataset_hash"], dataset_hash
        if str(root) in tried:
            continue
        tried.append(str(root))
        if split not in SPLITS or not split_path(root, split).is_file():
            continue
        if current(root, split) == recorded:
            return [e["episode_id"] for e in load_checked_split(root, split, labels=False).episodes]
    raise ConfigError(
        f"merge: cannot check the shards' episode ids: the dataset they name "
        f"({', '.join(tried)}) is not there or its split file has changed"
    )


def _sha256(root: Path, split: str) -> str:
    return sha256_file(split_path(root, split))


def _check_split_ids(parts: list[tuple[_Shard, list[Any]]]) -> None:
    """Each shard holds exactly its part of the split (of its first ``of_episodes`` ids)."""
    shards = [shard for shard, _ in parts]
    expected = _split_ids(shards)[: shards[0].of_episodes]
    if len(expected) != shards[0].of_episodes:
        raise ConfigError(
            f"merge: the shards cover {shards[0].of_episodes} episodes, the split has "
            f"{len(expected)}"
        )
    owner = {str(e): i for i in range(shards[0].count)
             for e in Shard(i, shards[0].count).select(expected)}  # fmt: skip
    split = shards[0].manifest.get("split") or shards[0].manifest["dataset"]["split"]
    for shard, ids in parts:
        for episode_id in ids:
            where = owner.get(str(episode_id))
            if where is None:
                raise ConfigError(
                    f"{shard.folder}: episode {episode_id!r} is not in split {split!r} "
                    "of the dataset"
                )
            if where != shard.index:
                raise ConfigError(
                    f"{shard.folder}: episode {episode_id!r} belongs to shard "
                    f"{where}/{shard.count}, not {shard.index}/{shard.count}"
                )


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


_COUNT_KEYS = ("episodes", "predicted", "scored", "missing", "extra")


def _shard_counts(path: Path) -> dict[str, Any]:
    """The ``counts`` of a shard's ``metrics.json``, checked."""
    metrics = read_json(path, FormatError)
    if not isinstance(metrics, dict):
        raise FormatError("must be a JSON object", file=str(path))
    for key in _COUNT_KEYS:
        _require(metrics, path, f"counts.{key}", _whole, "a whole number ≥ 0")
    _require(metrics, path, "counts.extra_ids", lambda v: isinstance(v, list), "a list")
    return metrics["counts"]


def _gt_file(path: Path) -> str | None:
    metrics = read_json(path, FormatError)
    check = lambda v: v is None or isinstance(v, str)  # noqa: E731
    return _require(metrics, path, "fidelity.gt_file", check, "a path or null")


def _options(path: Path, options: dict[str, Any]) -> MetricOptions:
    try:
        return MetricOptions(**options)
    except (TypeError, ConfigError) as exc:
        raise FormatError(str(exc), file=str(path), field="metric_options") from None


def _records(path: Path) -> list[dict[str, Any]]:
    """The per-episode records of a shard's ``episodes.jsonl``: flat objects with an id and
    numeric (or null) metric values."""
    records = []
    for number, line in enumerate(read_bytes(path).splitlines(), start=1):
        if not line.strip():
            continue
        record = parse_json(line, str(path), record=f"line {number}")
        if not isinstance(record, dict) or not isinstance(record.get("episode_id"), int | str):
            raise FormatError("must be an object with an episode_id", file=str(path),
                              record=f"line {number}")  # fmt: skip
        for key, value in record.items():
            numeric = key in _NUMERIC
            if isinstance(value, list | dict) or (numeric and isinstance(value, str)):
                raise FormatError(f"not a metric value: {value!r}"[:200], file=str(path),
                                  record=f"line {number}", field=key)  # fmt: skip
        records.append(record)
    return records


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
    ids = [(s, [r["episode_id"] for r in recs]) for s, recs in parts]
    _unique_ids(ids, shards[0].of_episodes)
    _check_split_ids(ids)
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
        counts = _shard_counts(shard.folder / "metrics.json")
        records = _records(shard.folder / "episodes.jsonl")
        if len(records) != counts["episodes"]:
            raise ConfigError(
                f"{shard.folder}: episodes.jsonl holds {len(records)} records, metrics.json "
                f"counts {counts['episodes']}"
            )
        parts.append((shard, records))
        shard_counts.append(counts)
    ids = [(s, [r["episode_id"] for r in recs]) for s, recs in parts]
    _unique_ids(ids, shards[0].of_episodes)
    _check_split_ids(ids)
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
    options = _options(shards[0].folder / MANIFEST, manifest["metric_options"])
    gt_file = _gt_file(shards[0].folder / "metrics.json")
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
