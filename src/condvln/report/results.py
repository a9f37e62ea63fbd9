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
        runs = read_json(summary)
        order = (
            list(runs["runs"])
            if isinstance(runs, dict) and isinstance(runs.get("runs"), dict)
            else []
        )
        found.sort(key=lambda p: order.index(p.name) if p.name in order else len(order))
    return found


def _existing(*candidates: Path | None) -> Path | None:
    return next((c for c in candidates if c is not None and c.exists()), None)


def _number(value: Any) -> bool:
    return value is None or (isinstance(value, int | float) and not isinstance(value, bool))


def check_metrics(metrics: Any, file: Path) -> dict[str, Any]:
    """``metrics.json`` as the report reads it: ``metrics`` maps names to aggregates whose
    ``mean`` / ``ci_low`` / ``ci_high`` are numbers or null; ``counts`` holds whole numbers.

    Raises:
        FormatError: naming the file and the first bad field.
    """
    if not isinstance(metrics, dict) or not isinstance(metrics.get("metrics"), dict):
        raise FormatError("expected an object with 'metrics'", file=str(file))
    for name, aggregate in metrics["metrics"].items():
        if not isinstance(aggregate, dict):
            raise FormatError("must be an object", file=str(file), field=f"metrics.{name}")
        for key in ("mean", "ci_low", "ci_high", "n"):
            if not _number(aggregate.get(key)):
                raise FormatError(
                    f"must be a number or null, got {aggregate[key]!r}"[:200],
                    file=str(file),
                    field=f"metrics.{name}.{key}",
                )
    counts = metrics.get("counts", {})
    if not isinstance(counts, dict) or not all(
        type(counts.get(k, 0)) is int for k in ("episodes", "missing")
    ):
        raise FormatError("must be an object of whole numbers", file=str(file), field="counts")
    return metrics


def _path(section: Any) -> Path | None:
    """The ``path`` of a manifest section, when it is a string."""
    path = section.get("path") if isinstance(section, dict) else None
    return Path(path) if isinstance(path, str) and path and "\x00" not in path else None


def _load_run(results: Path, eval_dir: Path) -> RunResult:
    metrics = check_metrics(read_json(eval_dir / METRICS), eval_dir / METRICS)
    manifest_file = eval_dir / MANIFEST
    manifest = read_json(manifest_file) if manifest_file.is_file() else {}
    if not isinstance(manifest, dict):
        raise FormatError(
            "must be a JSON object (the evaluation manifest)", file=str(manifest_file)
        )
    name = str(metrics.get("run") or eval_dir.name)
    dataset, predictions = _path(manifest.get("dataset")), _path(manifest.get("predictions"))
    return RunResult(
        name=name,
        eval_dir=eval_dir,
        records=read_records(eval_dir / EPISODES),
        metrics=metrics,
        dataset_dir=_existing(dataset, results / "dataset"),
        predictions=_existing(predictions, results / "runs" / eval_dir.name / "trajectories.jsonl"),
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
