"""``condvln benchmark``: generate (or reuse) datasets, run every baseline, evaluate, tabulate.

The benchmark has two source groups, as the paper reports Table 2 per source: the procedural
houses (multi-room, 1.0 m success radius) and the AI2-THOR group, the 120 iTHOR rooms read from
the ``procthor`` package's object metadata (single rooms, 0.5 m success radius). The default is
sized to finish in minutes on a 2-core laptop; ``full=True`` uses the paper-scale dataset of
``condvln generate`` and 75 instructions per iTHOR room. Every piece is the same code the individual commands run, so a
benchmark folder can be re-scored or extended with ``condvln run`` / ``condvln evaluate``.
Users' agents join every table as extra rows (:func:`user_runs`, ``--agent SPEC``).

Results folder::

    dataset/                 the procedural dataset (reused when its configuration matches)
    runs/<run>/              trajectories.jsonl, predictions.json, manifest.json per run
    eval/<run>/              episodes.jsonl, metrics.json, tables, manifest.json per run
    ithor/                   the iTHOR group: dataset/, runs/, eval/, results.json, report.html
    table2.md|csv            paper Table 2 layout, one row per run, a column group per source
    table3.md|csv            paper Table 3 layout (depth and chain sweeps), per source
    coverage.md|csv          episodes per source and Table-1 category / spatial composition
    results.json             the main numbers of every run and group
    report.html              the self-contained HTML report of the procedural group
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
from condvln.errors import ConfigError
from condvln.evaluation.metrics import DEFAULT_OPTIONS, MetricOptions
from condvln.io import atomic_write_bytes, output_lock, output_path, read_json
from condvln.parallel.executors import (
    Executor,
    PinnedProcesses,
    one_ray_session,
    ordered_map,
    pinned,
)
from condvln.provenance import provenance
from condvln.scene.sources.ithor import ROOM_KINDS, SCENES_PER_KIND
from condvln.vlnce import SPLITS, load_split

Progress = Callable[[str, int], Callable[[], None]]

SMALL = GenerateConfig(scenes=80, per_scene=50, unseen_share=0.5)
"""Default benchmark dataset: small enough for a laptop, half the scenes unseen."""

ITHOR_ROOMS: tuple[str, ...] = tuple(
    f"FloorPlan{first + i}" for i in range(SCENES_PER_KIND) for _, first, _ in ROOM_KINDS
)
"""The 120 iTHOR rooms, one of each room type in turn (FloorPlan1, 201, 301, 401, 2, …), so the
first N rooms (``scenes=N``) mix kitchens, living rooms, bedrooms and bathrooms."""

ITHOR_SMALL = GenerateConfig(
    source="ithor", scenes=len(ITHOR_ROOMS), inputs=ITHOR_ROOMS, per_scene=20, unseen_share=0.5
)
"""Default AI2-THOR group: every iTHOR room, 20 instructions each, half the rooms unseen."""

ITHOR_FULL = GenerateConfig(
    source="ithor", scenes=len(ITHOR_ROOMS), inputs=ITHOR_ROOMS, per_scene=75
)
"""AI2-THOR group of ``full=True``: the per-scene count and unseen share of ``condvln generate``."""

AUTO = "auto"
"""``ithor=AUTO``: :data:`ITHOR_FULL` with ``full``, else :data:`ITHOR_SMALL`."""

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

FULL_RUNS = (
    RunSpec("neurosymbolic_train_phrasing", "neurosymbolic", agent_args={"phrasing": "seen"}),
)
"""Rows of ``full=True`` only: the neurosymbolic agent reading with train's paraphrases only,
whose SR on held-out phrasings is 0 by construction (it cannot parse them), so the default
benchmark spends no time on it; the phrasing groups of Table 2 are there either way."""


def user_runs(
    agents: Iterable[str], agent_args: Mapping[str, Any] | None = None
) -> tuple[RunSpec, ...]:
    """Benchmark rows for users' agents (``condvln benchmark --agent SPEC``), named by class.

    >>> [r.name for r in user_runs(["my_agents:Mine", "x/y.py:Mine", "http://127.0.0.1:8000"])]
    ['Mine', 'Mine-2', '127.0.0.1-8000']
    """
    rows: list[RunSpec] = []
    taken = {r.name for r in (*RUNS, *PIXEL_RUNS, *FULL_RUNS)}
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
    ithor: GenerateConfig | str | None = AUTO,
    protocol: Mapping[str, Any] | None = None,
    options: MetricOptions = DEFAULT_OPTIONS,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Run the whole experiment into ``out`` and return the per-run records and tables.

    Args:
        out: Results folder (created; an interrupted benchmark resumes where it stopped).
        full: Use the paper-scale datasets instead of the small defaults.
        split: Split the agents are run and scored on.
        workers: Worker processes for generation, the agent runs and scoring, or an
            :class:`~condvln.parallel.Executor` (``Executor("ray", ...)`` runs all on Ray).
        runs: The rows of the benchmark (default: :data:`RUNS`, plus :data:`PIXEL_RUNS` with
            ``full`` or ``pixels`` and :data:`FULL_RUNS` with ``full``).
        pixels: Add the pixel-perception rows to the default rows.
        config: Dataset configuration of the procedural group (overrides ``full``).
        ithor: Dataset configuration of the AI2-THOR group (in ``out/ithor``): :data:`AUTO`
            for :data:`ITHOR_SMALL` / :data:`ITHOR_FULL`, ``None`` for no such group.
        protocol: Observation protocol of every run (a run's own settings go on top).
        options: Metric conventions and thresholds.
        progress: ``progress(label, total)`` returning an ``advance()`` callback.
    """
    out = output_path(out)
    config = config or (GenerateConfig() if full else SMALL)
    if ithor == AUTO:
        ithor = ITHOR_FULL if full else ITHOR_SMALL
    if isinstance(ithor, str):
        raise ConfigError(f"ithor must be {AUTO!r}, a dataset configuration or None")
    if split not in SPLITS:
        raise ConfigError(f"unknown split {split!r} (one of {', '.join(SPLITS)})")
    if isinstance(workers, int) and workers < 1:
        raise ConfigError(f"--workers must be at least 1, got {workers}")
    if runs is None:
        runs = RUNS + (PIXEL_RUNS if full or pixels else ()) + (FULL_RUNS if full else ())
    groups = [Group(config.source, out, config)]
    if ithor is not None:
        if config.source == "ithor":
            raise ConfigError("the main dataset is already an iTHOR one; drop the iTHOR group")
        groups.append(Group("ithor", out / "ithor", ithor))
    with output_lock(out), one_ray_session():
        return _benchmark(
            out, groups, split, Executor.of(workers), runs, protocol, options, progress
        )


@dataclass(frozen=True)
class Group:
    """A source group of the benchmark: its name, its results folder and its dataset."""

    name: str
    folder: Path
    config: GenerateConfig


def _group_dataset(
    group: Group, split: str, executor: Executor, progress: Progress | None
) -> tuple[Path, list[float]]:
    """The group's dataset folder (generated or reused) and the success radii of ``split``."""
    dataset = _dataset(group.folder, group.config, executor, progress)
    episodes = load_split(dataset, split)["episodes"]
    if not episodes:
        knobs = "--scenes / --per-scene" if group.name != "ithor" else "--ithor-rooms"
        raise ConfigError(
            f"split {split!r} of {dataset} has no episodes: the dataset is too small "
            f"(raise {knobs}, or remove the folder)"
        )
    return dataset, sorted({float(g["radius"]) for e in episodes for g in e.get("goals") or ()})


def _benchmark(
    out: Path,
    groups: list[Group],
    split: str,
    executor: Executor,
    runs: tuple[RunSpec, ...],
    protocol: Mapping[str, Any] | None,
    options: MetricOptions,
    progress: Progress | None,
) -> dict[str, Any]:
    from condvln.agents.runner.loop import keeping_scenes

    datasets = [_group_dataset(g, split, executor, progress) for g in groups]
    records: dict[str, list[dict[str, Any]]] = {spec.name: [] for spec in runs}
    summaries: dict[str, dict[str, Any]] = {g.name: {} for g in groups}
    notes: dict[str, str] = {}  # per group: how nDTW was computed (the same for every run)
    # each scene run and scored on one process (or this one), which keeps its fields for the
    # next agent; on Ray the actors are the runs' own
    with pinned(executor) as processes, keeping_scenes():
        runners = processes if isinstance(processes, PinnedProcesses) else executor
        context = _RunContext(out, split, runners, processes, protocol, options, progress)
        for spec in runs:
            for group, (dataset, _) in zip(groups, datasets, strict=True):
                result, summary, notes[group.name] = _run_and_score(spec, group, dataset, context)
                records[spec.name] += result["records"]
                summaries[group.name][spec.name] = summary
    tables = _write_tables(out, groups, datasets, runs, records, notes)
    common = {
        "condvln_version": __version__,
        "split": split,
        "protocol": dict(protocol or {}),
        "metric_options": dataclasses.asdict(options),
        "provenance": provenance(),
    }
    results = _write_results(out, groups, datasets, summaries, common, executor, progress)
    return {"results": results, "tables": tables, "records": records}


@dataclass(frozen=True)
class _RunContext:
    """What every run of a benchmark shares."""

    out: Path
    split: str
    runners: Executor | PinnedProcesses
    scorers: int | Executor | PinnedProcesses
    protocol: Mapping[str, Any] | None
    options: MetricOptions
    progress: Progress | None


def _run_and_score(
    spec: RunSpec, group: Group, dataset: Path, ctx: _RunContext
) -> tuple[dict[str, Any], dict[str, Any], str]:
    """Run one row on one group's dataset and score it: the evaluation, the run's summary and
    how nDTW was computed."""
    from condvln.agents.run import run_agent
    from condvln.evaluation.evaluate import evaluate_run, fidelity_note

    run_dir = group.folder / "runs" / spec.name
    label = spec.name if group.folder == ctx.out else f"{spec.name} ({group.name})"
    summary = run_agent(
        spec.agent,
        dataset,
        ctx.split,
        run_dir,
        agent_args=spec.agent_args,
        protocol={**(ctx.protocol or {}), **spec.protocol},
        executor=ctx.runners,
        progress=_episode_progress(ctx.progress, f"run {label}"),
    )
    scored = ctx.progress(f"score {label}", 1) if ctx.progress is not None else None
    result = evaluate_run(
        dataset,
        run_dir / "trajectories.jsonl",
        group.folder / "eval" / spec.name,
        split=ctx.split,
        options=ctx.options,
        run_name=spec.name,
        executor=ctx.scorers,
    )
    if scored is not None:
        scored()
    metrics = result["metrics"]
    summary_row = {
        "agent": spec.agent,
        "agent_args": spec.agent_args,
        "protocol": spec.protocol,
        "agent_failures": summary.failures,
        "episodes": summary.episodes,
        "seconds": round(summary.seconds, 2),
        "metrics": {k: v.get("mean") for k, v in metrics["metrics"].items()},
        "failure_categories": metrics.get("failure_categories"),
        "fidelity": metrics["fidelity"],
    }
    return result, summary_row, fidelity_note(metrics["fidelity"])


def _write_tables(
    out: Path,
    groups: list[Group],
    datasets: list[tuple[Path, list[float]]],
    runs: tuple[RunSpec, ...],
    records: dict[str, list[dict[str, Any]]],
    notes: dict[str, str],
) -> dict[str, Any]:
    """Tables 2 and 3 and the coverage table, written as Markdown and CSV."""
    from condvln.evaluation.tables import coverage_table, table2, table3
    from condvln.program.ast import CATEGORIES
    from condvln.synth.sampler import COMPOSITIONS

    scored = records[runs[0].name] if runs else []  # every run scores the same episodes
    note = next(iter(notes.values()), "")
    if len(groups) > 1:
        radii = ", ".join(
            f"{g.name} {'/'.join(f'{r:g}' for r in rs)} m"
            for g, (_, rs) in zip(groups, datasets, strict=True)
        )
        note = f"success radius: {radii}; " + "; ".join(f"{g}: {n}" for g, n in notes.items())
    tables = {
        "table2": dataclasses.replace(table2(list(records.items())), note=note),
        "table3": dataclasses.replace(table3(list(records.items())), note=note),
        "coverage": coverage_table(scored, list(CATEGORIES.values()), COMPOSITIONS),
    }
    for name, table in tables.items():
        atomic_write_bytes(out / f"{name}.md", table.to_markdown().encode())
        atomic_write_bytes(out / f"{name}.csv", table.to_csv().encode())
    return tables


def _write_results(
    out: Path,
    groups: list[Group],
    datasets: list[tuple[Path, list[float]]],
    summaries: dict[str, dict[str, Any]],
    common: dict[str, Any],
    executor: Executor,
    progress: Progress | None,
) -> dict[str, Any]:
    """``results.json`` and the HTML report, of the benchmark and of each other group."""
    results = {
        **common,
        "dataset": str(datasets[0][0]),
        "dataset_config_hash": groups[0].config.config_hash(),
        "dataset_config": groups[0].config.model_dump(mode="json"),
        "runs": summaries[groups[0].name],
        "groups": {},
    }
    for group, (dataset, radii) in zip(groups, datasets, strict=True):
        described: dict[str, Any] = {
            "folder": str(group.folder.relative_to(out)),
            "source": group.config.source,
            "dataset_config_hash": group.config.config_hash(),
            "success_radius_m": radii,
        }
        if group.folder != out:  # a benchmark folder of its own, with the group's runs
            own = {
                **common,
                "dataset": str(dataset),
                "dataset_config_hash": group.config.config_hash(),
                "dataset_config": group.config.model_dump(mode="json"),
                "success_radius_m": radii,
                "runs": summaries[group.name],
            }
            atomic_write_bytes(
                group.folder / "results.json", orjson.dumps(own, option=orjson.OPT_INDENT_2)
            )
            described["runs"] = summaries[group.name]
        results["groups"][group.name] = described
    atomic_write_bytes(out / "results.json", orjson.dumps(results, option=orjson.OPT_INDENT_2))
    folders = [g.folder for g in groups if g.folder != out] + [out]
    # on Ray, one after the other: forking a process that holds a Ray session is not safe
    _write_reports(folders, executor.workers if executor.kind == "local" else 1, progress)
    return results


def _write_reports(folders: list[Path], workers: int, progress: Progress | None) -> None:
    """Each folder's ``report.html``: one after the other, or up to ``workers`` at once in
    local processes (a report is one process's work; the iTHOR group's and the procedural
    one's take about as long)."""
    if workers < 2 or len(folders) < 2:
        for folder in folders:
            _write_report(folder, progress)
        return
    advance = progress("reports", len(folders)) if progress else None
    parallel = Executor("local", min(workers, len(folders)))
    for _ in ordered_map(_write_report, folders, parallel, on_done=advance):
        pass


def _write_report(folder: Path, progress: Progress | None = None) -> None:
    """``folder``'s HTML report, ``report.html`` (imported here: matplotlib is slow to load)."""
    from condvln.report.html import write_report

    write_report(folder, folder / "report.html", progress=progress)
