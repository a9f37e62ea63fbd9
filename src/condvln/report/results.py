"""Find and read the evaluated runs of a results folder (the report's only input).

A results folder is either one ``condvln evaluate`` output (``episodes.jsonl`` +
``metrics.json`` + ``manifest.json``) or a folder of them: a ``condvln benchmark`` folder
(``eval/<run>/``, in the order of ``results.json``) or any folder whose sub-folders are
evaluation outputs. Each run's evaluation manifest names its dataset and predictions file; when
those absolute paths no longer exist (a moved folder), the benchmark layout is tried instead:
``<results>/dataset`` and ``<results>/runs/<run>/trajectories.jsonl``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from condvln.errors import ConfigError, FormatError
from condvln.io import read_bytes, read_json

EPISODES = "episodes.jsonl"
METRICS = "metrics.json"
MANIFEST = "manifest.json"


@dataclass(frozen=True)
class RunResult:
    """One evaluated run.

    Attributes:
        name: run name (``metrics.json`` ``run``, else the folder name).
        eval_dir: the evaluation folder.
        records: the lines of ``episodes.jsonl``.
        metrics: the ``metrics.json`` content.
        dataset_dir: the dataset the run was scored on (``None`` when not found).
        predictions: the scored predictions file (``None`` when not found).
    """

    name: str
    eval_dir: Path
    records: list[dict[str, Any]]
    metrics: dict[str, Any]
    dataset_dir: Path | None
    predictions: Path | None

    @property
    def split(self) -> str:
        """The split the run was scored on."""
        return str(self.metrics.get("split", "?"))


def read_records(path: Path) -> list[dict[str, Any]]:
    """The records of an ``episodes.jsonl`` file (one JSON object per line).

    Raises:
        FormatError: unreadable file or a line that is not a JSON object with an ``episode_id``.
    """
    records = []
    for number, line in enumerate(read_bytes(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            raise FormatError("not valid JSON", file=str(path), record=f"line {number}") from None
        if not isinstance(record, dict) or "episode_id" not in record:
            raise FormatError(
                "expected an object with an episode_id",
                file=str(path),
                record=f"line {number}",
                field="episode_id",
            )
        records.append(record)
    return records


def _is_eval_dir(folder: Path) -> bool:
    return (folder / EPISODES).is_file() and (folder / METRICS).is_file()


def _eval_dirs(results: Path) -> list[Path]:
    if _is_eval_dir(results):
        return [results]
    parent = results / "eval" if (results / "eval").is_dir() else results
    found = sorted(p for p in parent.iterdir() if p.is_dir() and _is_eval_dir(p))
    summary = results / "results.json"
    if summary.is_file():  # the benchmark's row order
        order = list(read_json(summary).get("runs", {}))
        found.sort(key=lambda p: order.index(p.name) if p.name in order else len(order))
    return found


def _existing(*candidates: Path | None) -> Path | None:
    return next((c for c in candidates if c is not None and c.exists()), None)


def _load_run(results: Path, eval_dir: Path) -> RunResult:
    metrics = read_json(eval_dir / METRICS)
    if not isinstance(metrics, dict) or not isinstance(metrics.get("metrics"), dict):
        raise FormatError("expected an object with 'metrics'", file=str(eval_dir / METRICS))
    manifest_file = eval_dir / MANIFEST
    manifest = read_json(manifest_file) if manifest_file.is_file() else {}
    name = str(metrics.get("run") or eval_dir.name)
    dataset = (manifest.get("dataset") or {}).get("path")
    predictions = (manifest.get("predictions") or {}).get("path")
    return RunResult(
        name=name,
        eval_dir=eval_dir,
        records=read_records(eval_dir / EPISODES),
        metrics=metrics,
        dataset_dir=_existing(dataset and Path(dataset), results / "dataset"),
        predictions=_existing(
            predictions and Path(predictions),
            results / "runs" / eval_dir.name / "trajectories.jsonl",
        ),
    )


def load_results(results: str | Path) -> list[RunResult]:
    """Every evaluated run in ``results``, in table order.

    Raises:
        ConfigError: ``results`` is not a folder or holds no evaluation output.
        FormatError: an unreadable ``episodes.jsonl`` / ``metrics.json`` / manifest.
    """
    results = Path(results)
    if not results.is_dir():
        raise ConfigError(f"{results}: not a results folder")
    dirs = _eval_dirs(results)
    if not dirs:
        raise ConfigError(
            f"{results}: no evaluation output found ({EPISODES} + {METRICS}, "
            "or eval/<run>/ folders of them)"
        )
    return [_load_run(results, d) for d in dirs]
