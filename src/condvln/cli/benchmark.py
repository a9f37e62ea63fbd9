"""The main job and its settings: ``condvln benchmark`` and ``condvln config``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from condvln.cli.common import (
    AgentArgOption,
    AgentResourcesOption,
    AllowFailuresOption,
    ConfigOption,
    ExecutorOption,
    MultiProgress,
    OverridesArgument,
    QuietOption,
    RayAddressOption,
    WorkersOption,
    console,
    executor_of,
    exit_on_failures,
    parse_resources,
    required,
    settings,
)

app = typer.Typer()

ResultsOption = Annotated[
    Path | None, typer.Option("--out", "-o", help="Results folder [default: results/benchmark].")
]
FullOption = Annotated[
    bool,
    typer.Option(help="Paper-scale dataset (200 houses × 75 instructions; about 11,000 episodes)."),
]
HousesOption = Annotated[
    int | None, typer.Option(help="Procedural houses (default 80; 200 with --full).")
]
PerHouseOption = Annotated[
    int | None,
    typer.Option(help="Instructions sampled per house (default 50; 75 with --full)."),
]
ScoredSplitOption = Annotated[str, typer.Option(help="Split the agents are scored on.")]
IthorOption = Annotated[
    bool,
    typer.Option(help="Add the AI2-THOR group: the 120 iTHOR rooms (0.5 m success radius)."),
]
IthorRoomsOption = Annotated[
    int | None,
    typer.Option(min=1, max=120, help="Use the first N iTHOR rooms (types in turn)."),
]
PixelsOption = Annotated[
    bool,
    typer.Option(help="Add the pixel-perception rows (always on with --full; slow)."),
]
ExtraAgentOption = Annotated[
    list[str] | None,
    typer.Option(
        "--agent",
        help="Also run this agent (module:Class, file.py:Class or http://HOST:PORT; repeatable).",
    ),
]

BENCHMARK_KEYS = {
    "scenes": "dataset.scenes",
    "per_scene": "dataset.per_scene",
    "split": "split",
    "ithor_rooms": "ithor.scenes",
    "out": "out",
    "full": "full",
    "pixels": "pixels",
    "agent": "agents",
    "workers": "workers",
    "executor": "executor",
    "ray_address": "ray_address",
    "allow_failures": "allow_failures",
}
"""``condvln benchmark`` options → keys of :class:`~condvln.config.BenchmarkSettings`."""


@app.command("benchmark", epilog="Exit code 3 when an episode failed, unless --allow-failures.")
def benchmark_command(
    ctx: typer.Context,
    overrides: OverridesArgument = None,
    config_file: ConfigOption = None,
    out: ResultsOption = None,
    full: FullOption = False,
    scenes: HousesOption = None,
    per_scene: PerHouseOption = None,
    split: ScoredSplitOption = "val_unseen",
    ithor: IthorOption = True,
    ithor_rooms: IthorRoomsOption = None,
    pixels: PixelsOption = False,
    agent: ExtraAgentOption = None,
    agent_arg: AgentArgOption = None,
    workers: WorkersOption = None,
    executor: ExecutorOption = None,
    ray_address: RayAddressOption = None,
    agent_resources: AgentResourcesOption = None,
    allow_failures: AllowFailuresOption = False,
    quiet: QuietOption = False,
) -> None:
    """The main job: generate (or reuse) data, run every baseline, evaluate, print the tables.

    Exits 3 when an agent failed episodes (agent_error / invalid_action / timeout; counts per
    run on stderr), unless --allow-failures.
    """
    from condvln.agents.loader import parse_agent_args
    from condvln.benchmark import ITHOR_FULL, run_benchmark
    from condvln.dataset.generate import GenerateConfig

    given: dict[str, Any] = {}
    if agent_arg:
        given["agent_args"] = parse_agent_args(agent_arg)
    if agent_resources:
        given["agent_resources"] = parse_resources(agent_resources)
    s = settings(ctx, "benchmark", config_file, overrides, BENCHMARK_KEYS, given=given)
    if s.full:  # the paper-scale datasets under the file, options and overrides
        base = {"dataset": GenerateConfig(), "ithor": ITHOR_FULL}
        s = settings(ctx, "benchmark", config_file, overrides, BENCHMARK_KEYS, base, given)
    (out_dir,) = required(s, "out")
    with MultiProgress(quiet) as bars:
        outcome = run_benchmark(
            out_dir,
            config=s.dataset,
            ithor=s.ithor if ithor else None,
            split=s.split,
            workers=executor_of(s.executor, s.workers, s.ray_address, s.agent_resources),
            runs=_runs(s),
            protocol=s.protocol.model_dump(),
            options=s.metrics,
            progress=bars.add,
        )
    from condvln.evaluation.tables import coverage_terminal, terminal_tables

    for part in terminal_tables(outcome["tables"]["table2"], outcome["tables"]["table3"]):
        console.print(part)
    console.print(coverage_terminal(outcome["tables"]["coverage"]))
    console.print(f"wrote {out_dir}: per-run results in runs/ and eval/, report.html")
    _exit_on_failures(outcome["results"], s.allow_failures)


def _exit_on_failures(results: dict[str, Any], allow: bool) -> None:
    """Each run's failed episodes on stderr (per group), then exit 3 unless ``allow``."""
    import sys

    totals: dict[str, int] = {}
    episodes = 0
    for group, described in results["groups"].items():
        for name, run in described.get("runs", results["runs"]).items():  # the first: at the top
            failed = {k: n for k, n in (run.get("agent_failures") or {}).items() if n}
            episodes += run.get("episodes", 0)
            if failed:
                listed = ", ".join(f"{n} {k}" for k, n in sorted(failed.items()))
                print(f"condvln: {name} ({group}): {listed}", file=sys.stderr)
            for status, n in failed.items():
                totals[status] = totals.get(status, 0) + n
    exit_on_failures(totals, allow, episodes)


def _runs(s: Any) -> tuple[Any, ...]:
    """The benchmark's runs: the baselines (+ pixel rows, + the full-only rows) and the user's
    agents."""
    from condvln.benchmark import FULL_RUNS, PIXEL_RUNS, benchmark_runs, user_runs

    return (
        benchmark_runs(s.noise.model_dump())
        + (PIXEL_RUNS if s.full or s.pixels else ())
        + (FULL_RUNS if s.full else ())
        + user_runs(s.agents, s.agent_args)
    )


@app.command("config")
def config_command(
    command: Annotated[str, typer.Argument(help="generate, run, evaluate or benchmark.")],
    overrides: OverridesArgument = None,
    config_file: ConfigOption = None,
) -> None:
    """Print a command's settings as YAML: the defaults, or the effective ones for a
    --config file and overrides (a starting point for your own file)."""
    from condvln.config import SETTINGS, defaults_yaml, resolve
    from condvln.registry import Registry

    commands: Registry[type] = Registry("configurable command")
    for name, model in SETTINGS.items():
        commands.add(name, model)
    model = commands.get(command)
    effective = resolve(model, config_file=config_file, overrides=overrides or ())
    print(defaults_yaml(model, effective), end="")
