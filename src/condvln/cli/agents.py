"""Agents: ``condvln run``, ``check-agent`` and ``agents``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from condvln.cli.common import (
    SEED_MAX,
    AgentArgOption,
    AgentResourcesOption,
    AllowFailuresOption,
    ConfigOption,
    ExecutorOption,
    MultiProgress,
    OverridesArgument,
    QuietOption,
    RayAddressOption,
    ShardOption,
    WorkersOption,
    console,
    executor_of,
    exit_on_failures,
    parse_resources,
    required,
    settings,
)

app = typer.Typer()

AgentOption = Annotated[
    str | None,
    typer.Option(
        help="Agent (required; or `agent:` in --config): a name (see `condvln agents`), "
        "package.module:Class, path/to/file.py:Class or http://HOST:PORT (an agent server)."
    ),
]
RunDatasetOption = Annotated[
    Path | None,
    typer.Option(help="Dataset folder written by `condvln generate` (required; or `dataset:`)."),
]
RunOutOption = Annotated[
    Path | None,
    typer.Option("--out", "-o", help="Run folder, resumed if present (required; or `out:`)."),
]
RestartOption = Annotated[
    bool,
    typer.Option(
        "--restart",
        help="Start over: move an existing run folder aside (OUT.previous-K) instead of "
        "resuming it.",
    ),
]
SplitOption = Annotated[str, typer.Option(help="Split to run.")]
LimitOption = Annotated[int | None, typer.Option(min=0, help="Run only the first N episodes.")]
RunSeedOption = Annotated[
    int, typer.Option(min=0, max=SEED_MAX, help="Seed of agents and perception noise.")
]
PanoramicOption = Annotated[bool, typer.Option(help="360° detections instead of a 90° view.")]
MissRateOption = Annotated[float, typer.Option(help="Perception noise: missed detections.")]
ConfusionOption = Annotated[float, typer.Option(help="Perception noise: label swaps.")]
FalseDetectionOption = Annotated[
    float, typer.Option(help="Perception noise: spurious detections per step.")
]
MapAccessOption = Annotated[bool, typer.Option(help="Give the agent the navigable map.")]
SensorOption = Annotated[
    list[str] | None,
    typer.Option(help="Pixel sensor rendered every step: rgb, depth, semantic (repeatable)."),
]
DetectionsOption = Annotated[
    bool, typer.Option(help="Give the symbolic detections (off: perceive from pixels only).")
]
RecordOption = Annotated[
    int, typer.Option(help="Write a video of each of the first N episodes into OUT/videos.")
]
RecordFormatOption = Annotated[str, typer.Option(help="Video format: mp4 or gif.")]
BatchSizeOption = Annotated[
    int, typer.Option(help="Episodes per worker stepped in lockstep (agents with act_batch).")
]
StepTimeoutOption = Annotated[
    float | None,
    typer.Option(
        help="Seconds an agent call (reset, act, act_batch; one HTTP request to an agent server, "
        "/info included) may take; a slower call ends its episode as timeout. Default 60; "
        "0: no limit."
    ),
]
FailFastOption = Annotated[bool, typer.Option(help="Stop at the first episode the agent fails.")]

RUN_KEYS = {
    "split": "split",
    "limit": "limit",
    "seed": "seed",
    "panoramic": "protocol.panoramic",
    "miss_rate": "protocol.miss_rate",
    "confusion_rate": "protocol.confusion_rate",
    "false_detection_rate": "protocol.false_detection_rate",
    "map_access": "protocol.map_access",
    "sensor": "protocol.sensors",
    "detections": "protocol.detections",
    "record": "videos",
    "record_format": "video_format",
    "batch_size": "batch_size",
    "step_timeout": "step_timeout",
    "fail_fast": "fail_fast",
    "agent": "agent",
    "dataset": "dataset",
    "out": "out",
    "workers": "workers",
    "shard": "shard",
    "executor": "executor",
    "ray_address": "ray_address",
    "allow_failures": "allow_failures",
}
"""``condvln run`` options → keys of :class:`~condvln.config.RunSettings` (the runner's
:class:`~condvln.agents.runner.options.RunOptions` and the command's own options)."""


@app.command("run", epilog="Exit code 3 when an episode failed, unless --allow-failures.")
def run_command(  # long: one line per command-line option of the most configurable command
    ctx: typer.Context,
    agent: AgentOption = None,
    dataset: RunDatasetOption = None,
    out: RunOutOption = None,
    overrides: OverridesArgument = None,
    config_file: ConfigOption = None,
    split: SplitOption = "val_unseen",
    limit: LimitOption = None,
    seed: RunSeedOption = 0,
    panoramic: PanoramicOption = False,
    miss_rate: MissRateOption = 0.0,
    confusion_rate: ConfusionOption = 0.0,
    false_detection_rate: FalseDetectionOption = 0.0,
    map_access: MapAccessOption = True,
    sensor: SensorOption = None,
    detections: DetectionsOption = True,
    record: RecordOption = 0,
    record_format: RecordFormatOption = "mp4",
    agent_arg: AgentArgOption = None,
    batch_size: BatchSizeOption = 1,
    step_timeout: StepTimeoutOption = None,
    fail_fast: FailFastOption = False,
    workers: WorkersOption = None,
    shard: ShardOption = None,
    executor: ExecutorOption = None,
    ray_address: RayAddressOption = None,
    agent_resources: AgentResourcesOption = None,
    restart: RestartOption = False,
    allow_failures: AllowFailuresOption = False,
    quiet: QuietOption = False,
) -> None:
    """Run an agent in the built-in simulator; writes trajectories and VLN-CE predictions.

    An exception in the agent, an invalid action or a step slower than --step-timeout ends
    that episode (status agent_error / invalid_action / timeout, with a reason); the run goes
    on, running the command again retries those episodes, and the command exits 3. A resume
    whose agent (spec, source files or server /info, arguments) or settings differ stops with
    one line naming what changed (exit 2); --restart starts over instead.
    """
    from condvln.agents.loader import parse_agent_args
    from condvln.agents.run import RunOptions, run_agent
    from condvln.config import library_part
    from condvln.parallel.shards import parse_shard

    given: dict[str, Any] = {}
    if agent_arg:
        given["agent_args"] = _verbatim(parse_agent_args(agent_arg))
    if agent_resources:
        given["agent_resources"] = parse_resources(agent_resources)
    s = settings(ctx, "run", config_file, overrides, RUN_KEYS, given=given)
    agent_name, dataset_dir, out_dir = required(s, "agent", "dataset", "out")
    with MultiProgress(quiet) as bars:
        summary = run_agent(
            agent_name,
            dataset_dir,
            s.split,
            out_dir,
            library_part(s, RunOptions),
            executor=executor_of(s.executor, s.workers, s.ray_address, s.agent_resources),
            shard=parse_shard(s.shard),
            progress=bars.done_total(f"run {agent_name} on {s.split}"),
            restart=restart,
            video_progress=bars.done_total("videos") if s.videos else None,
        )
    if summary.set_aside is not None:
        console.print(f"moved the old run aside to {summary.set_aside}", markup=False)
    console.print(
        f"wrote {out_dir}: {summary.ran} episodes run, {summary.skipped} resumed, "
        f"{summary.stopped} stopped, {summary.steps} steps in {summary.seconds:.1f} s",
        markup=False,
    )
    if summary.failures:
        counts = ", ".join(f"{n} {status}" for status, n in sorted(summary.failures.items()))
        console.print(
            f"agent failures: {counts}; first: {summary.first_failure} "
            "(all reasons in trajectories.jsonl; run again to retry them)",
            markup=False,
        )
    exit_on_failures(summary.failures, s.allow_failures, summary.episodes)


def _verbatim(value: Any) -> Any:
    """``value`` with ``${`` escaped in its strings: agent arguments given on the command line
    are not config interpolations.

    >>> _verbatim({"prompt": "Say ${name}", "ids": [1, "${x}"]})
    {'prompt': 'Say \\\\${name}', 'ids': [1, '\\\\${x}']}
    """
    if isinstance(value, str):  # backslashes before ${ are doubled, as OmegaConf's grammar has it
        return re.sub(r"(\\*)\$\{", lambda m: m.group(1) * 2 + "\\${", value)
    if isinstance(value, dict):
        return {k: _verbatim(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_verbatim(v) for v in value]
    return value


@app.command("check-agent")
def check_agent_command(
    agent: Annotated[
        str,
        typer.Argument(help="Agent spec: name, module:Class, file.py:Class or http://HOST:PORT."),
    ],
    dataset: Annotated[
        Path | None, typer.Option(help="Dataset folder (default: a small generated one).")
    ] = None,
    split: Annotated[str, typer.Option(help="Split whose first episodes are used.")] = "train",
    episodes: Annotated[int, typer.Option(help="Episodes per check run.")] = 3,
    agent_arg: AgentArgOption = None,
    step_timeout: Annotated[float, typer.Option(help="Seconds an agent call may take.")] = 30.0,
) -> None:
    """Check an agent: interface, valid actions, determinism, no label access (exit 1 on FAIL)."""
    from condvln.agents.check import check_agent
    from condvln.agents.loader import parse_agent_args

    checks = check_agent(
        agent,
        dataset=dataset,
        split=split,
        episodes=episodes,
        agent_args=parse_agent_args(agent_arg or ()),
        step_timeout=step_timeout,
    )
    table = Table(title=f"check-agent {agent}")
    table.add_column("check")
    table.add_column("result")
    table.add_column("detail")
    styles = {"ok": "green", "warn": "yellow", "FAIL": "bold red", "skip": "dim"}
    for check in checks:
        table.add_row(check.name, f"[{styles[check.level]}]{check.level}[/]", escape(check.detail))
    console.print(table)
    failed = [c.name for c in checks if c.level == "FAIL"]
    if failed:
        console.print(f"FAILED: {', '.join(failed)}", markup=False)
        raise typer.Exit(1)
    console.print("all checks passed", markup=False)


@app.command("agents")
def agents_command() -> None:
    """List the agents (entry points of condvln.agents) and the packages they come from."""
    from condvln.agents.loader import AGENTS

    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("agent", no_wrap=True)
    table.add_column("package", no_wrap=True)
    table.add_column("object", overflow="fold")
    for name in AGENTS.names():
        origin = AGENTS.origin(name)
        if origin is None:
            table.add_row(name, "—", "—")
        else:
            table.add_row(name, str(origin), escape(origin.value))
    console.print(table)
