"""``condvln benchmark``: generate (or reuse) a dataset, run every baseline, evaluate, tabulate.

The default is sized to finish in minutes on a 2-core laptop; ``full=True`` uses the paper-scale
dataset of ``condvln generate``. Every piece is the same code the individual commands run, so a
benchmark folder can be re-scored or extended with ``condvln run`` / ``condvln evaluate``.
Users' agents join every table as extra rows (:func:`user_runs`, ``--agent SPEC``).

Results folder::

    dataset/                 the generated dataset (reused when its configuration matches)
    runs/<run>/              trajectories.jsonl, predictions.json, manifest.json per run
    eval/<run>/              episodes.jsonl, metrics.json, tables, manifest.json per run
    table2.md|csv            paper Table 2 layout, one row per run
    table3.md|csv            paper Table 3 layout (depth and chain sweeps)
    results.json             the main numbers of every run
    report.html              the self-contained HTML report (``condvln report``)
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from condvln import __version__
from condvln.dataset.generate import GenerateConfig, generate_dataset
from condvln.dataset.vlnce import SPLITS, load_split
from condvln.errors import ConfigError
from condvln.evaluation.metrics import DEFAULT_OPTIONS, MetricOptions
from condvln.io import atomic_write_bytes, output_lock, output_path, read_json
from condvln.parallel.executors import Executor
from condvln.provenance import provenance

Progress = Callable[[str, int], Callable[[], None]]

SMALL = GenerateConfig(scenes=80, per_scene=50, unseen_share=0.5)
"""Default benchmark dataset: small enough for a laptop, half the scenes unseen."""

NOISE = {"miss_rate": 0.3, "confusion_rate": 0.1, "false_detection_rate": 0.05}
"""Perception noise of the ``neurosymbolic+noise`` run."""


@dataclass(frozen=True)
class RunSpec:
    """One row of the benchmark: a name, an agent, its protocol overrides and constructor args."""

    name: str
    agent: str
    protocol: dict[str, Any] = field(default_factory=dict)
    agent_args: dict[str, Any] = field(default_factory=dict)


PIXELS = {"sensors": ["depth", "semantic"], "detections": False}
"""Protocol of the pixel-perception rows: rendered depth + semantic images, no symbolic
detections."""


def benchmark_runs(noise: Mapping[str, float] = NOISE) -> tuple[RunSpec, ...]:
    """The baselines, from the weakest reference to the paper's oracle; ``noise`` is the
    perception noise of the ``neurosymbolic+noise`` run."""
    return (
        RunSpec("random", "random"),
        RunSpec("goal_only", "goal_only"),
        RunSpec("condition_blind", "condition_blind"),
        RunSpec("text_prior", "text_prior"),
        RunSpec("commonsense_prior", "commonsense_prior"),
        RunSpec("neurosymbolic", "neurosymbolic"),
        RunSpec("neurosymbolic+noise", "neurosymbolic", dict(noise)),
        RunSpec("oracle_linear", "oracle_linear"),
    )


RUNS = benchmark_runs()
"""The default rows of the benchmark."""

PIXEL_RUNS = (
    RunSpec("neurosymbolic_pixels", "neurosymbolic_pixels", PIXELS),
    RunSpec("neurosymbolic_pixels+noise", "neurosymbolic_pixels_noisy", PIXELS),
)
"""The neurosymbolic agent perceiving from pixels, clean and with pixel noise. They render
256×256 depth + semantic images at every step (≈ 20× the CPU per step of a symbolic row), so they run
with ``full=True`` or ``pixels=True`` only."""


def user_runs(
    agents: Iterable[str], agent_args: Mapping[str, Any] | None = None
) -> tuple[RunSpec, ...]:
    """Benchmark rows for users' agents (``condvln benchmark --agent SPEC``), named by class.

    >>> [r.name for r in user_runs(["my_agents:Mine", "x/y.py:Mine", "http://127.0.0.1:8000"])]
    ['Mine', 'Mine-2', '127.0.0.1-8000']
    """
    rows: list[RunSpec] = []
    taken = {r.name for r in RUNS}
    for agent in agents:
        base = agent.split("//", 1)[1] if "://" in agent else agent.rpartition(":")[2] or agent
        base = re.sub(r"[^A-Za-z0-9_.+-]+", "-", base).strip("-") or "agent"
        name, k = base, 1
        while name in taken:
            k += 1
            name = f"{base}-{k}"
        taken.add(name)
        rows.append(RunSpec(name, agent, agent_args=dict(agent_args or {})))
    return tuple(rows)


def _dataset(
    out: Path, config: GenerateConfig, workers: Executor, progress: Progress | None
) -> Path:
    """The benchmark dataset: reused when ``stats.json`` carries the same config hash."""
    folder = out / "dataset"
    stats_file = folder / "stats.json"
    if stats_file.is_file():
        stats = read_json(stats_file)
        if isinstance(stats, dict) and stats.get("config_hash") == config.config_hash():
            return folder
        raise ConfigError(
            f"{folder} holds a dataset with another configuration; remove it or pick another --out"
        )
    generate_dataset(config, folder, workers=workers, progress=progress)
    return folder


def _episode_progress(progress: Progress | None, label: str) -> Callable[[int, int], None] | None:
    """Adapt a bar factory to the runner's ``progress(done, total)`` callback."""
    if progress is None:
        return None
    state: dict[str, Any] = {"done": 0}

    def update(done: int, total: int) -> None:
        if "advance" not in state:
            state["advance"] = progress(label, total)
        while state["done"] < done:
            state["advance"]()
            state["done"] += 1

    return update


def run_benchmark(
    out: str | Path,
    *,
    full: bool = False,
    split: str = "val_unseen",
    workers: int | Executor = 1,
    runs: tuple[RunSpec, ...] | None = None,
    pixels: bool = False,
    config: GenerateConfig | None = None,
    protocol: Mapping[str, Any] | None = None,
    options: MetricOptions = DEFAULT_OPTIONS,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Run the whole experiment into ``out`` and return the per-run records and tables.

    Args:
        out: Results folder (created; an interrupted benchmark resumes where it stopped).
        full: Use the paper-scale dataset instead of the small default.
        split: Split the agents are run and scored on.
        workers: Worker processes for generation, the agent runs and scoring, or an
            :class:`~condvln.parallel.Executor` (``Executor("ray", ...)`` runs all on Ray).
        runs: The rows of the benchmark (default: :data:`RUNS`, plus :data:`PIXEL_RUNS` with
            ``full`` or ``pixels``).
        pixels: Add the pixel-perception rows to the default rows.
        config: Dataset configuration (overrides ``full``; for custom or test runs).
        protocol: Observation protocol of every run (a run's own settings go on top).
        options: Metric conventions and thresholds.
        progress: ``progress(label, total)`` returning an ``advance()`` callback.
    """
    out = output_path(out)
    config = config or (GenerateConfig() if full else SMALL)
    if split not in SPLITS:
        raise ConfigError(f"unknown split {split!r} (one of {', '.join(SPLITS)})")
    if isinstance(workers, int) and workers < 1:
        raise ConfigError(f"--workers must be at least 1, got {workers}")
    if runs is None:
        runs = RUNS + PIXEL_RUNS if full or pixels else RUNS
    with output_lock(out):
        return _benchmark(
            out, config, split, Executor.of(workers), runs, protocol, options, progress
        )


def _benchmark(
    out: Path,
    config: GenerateConfig,
    split: str,
    executor: Executor,
    runs: tuple[RunSpec, ...],
    protocol: Mapping[str, Any] | None,
    options: MetricOptions,
    progress: Progress | None,
) -> dict[str, Any]:
    from condvln.agents.run import run_agent
    from condvln.evaluation.evaluate import evaluate_run, fidelity_note
    from condvln.evaluation.tables import table2, table3
    from condvln.report.html import write_report

    dataset = _dataset(out, config, executor, progress)
    if not load_split(dataset, split)["episodes"]:
        raise ConfigError(
            f"split {split!r} of {dataset} has no episodes: the dataset is too small "
            "(raise --scenes / --per-scene, or remove the folder)"
        )
    records: dict[str, list[dict[str, Any]]] = {}
    summaries: dict[str, Any] = {}
    note = ""  # how nDTW was computed: the same dataset, split and d_th for every run
    for spec in runs:
        run_dir = out / "runs" / spec.name
        summary = run_agent(
            spec.agent,
            dataset,
            split,
            run_dir,
            agent_args=spec.agent_args,
            protocol={**(protocol or {}), **spec.protocol},
            executor=executor,
            progress=_episode_progress(progress, f"run {spec.name}"),
        )
        result = evaluate_run(
            dataset,
            run_dir / "trajectories.jsonl",
            out / "eval" / spec.name,
            split=split,
            options=options,
            run_name=spec.name,
            executor=executor,
        )
        records[spec.name] = result["records"]
        summaries[spec.name] = {
            "agent": spec.agent,
            "agent_args": spec.agent_args,
            "protocol": spec.protocol,
            "agent_failures": summary.failures,
            "episodes": summary.episodes,
            "seconds": round(summary.seconds, 2),
            "metrics": {k: v.get("mean") for k, v in result["metrics"]["metrics"].items()},
            "failure_categories": result["metrics"].get("failure_categories"),
            "fidelity": result["metrics"]["fidelity"],
        }
        note = fidelity_note(result["metrics"]["fidelity"])
    tables = {
        "table2": dataclasses.replace(table2(list(records.items())), note=note),
        "table3": dataclasses.replace(table3(list(records.items())), note=note),
    }
    for name, table in tables.items():
        atomic_write_bytes(out / f"{name}.md", table.to_markdown().encode())
        atomic_write_bytes(out / f"{name}.csv", table.to_csv().encode())
    results = {
        "condvln_version": __version__,
        "dataset": str(dataset),
        "dataset_config_hash": config.config_hash(),
        "dataset_config": config.model_dump(mode="json"),
        "split": split,
        "protocol": dict(protocol or {}),
        "metric_options": dataclasses.asdict(options),
        "provenance": provenance(),
        "runs": summaries,
    }
    atomic_write_bytes(out / "results.json", orjson.dumps(results, option=orjson.OPT_INDENT_2))
    write_report(out, out / "report.html", progress=progress)
    return {"results": results, "tables": tables, "records": records}
