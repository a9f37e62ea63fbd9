"""``condvln run``: run an agent on a dataset split in the built-in simulator.

The runner is the harness: it reads the episodes (and, for the test split, the answers file for
the step budget and the oracle text — the agent never sees them), builds one simulator per scene,
and records every episode. A run folder holds::

    manifest.json        agent spec, arguments and class (or server /info), instruction source,
                         batch size, step timeout, protocol (+ the text rendering of an agent
                         that reads text) + hash, dataset path + hash, split, seed, condvln
                         version, episode count
    trajectories.jsonl   one line per episode: {"episode_id", "positions", "headings",
                         "actions", "stop", "steps", "agent", "status"} (+ "reason" when the
                         agent failed, + "agent_notes" when the agent has
                         ``episode_notes(episode_id)``); len(positions) == len(actions) + 1
    predictions.json     VLN-CE leaderboard form {"<episode_id>": [{"position", "heading",
                         "stop"}, ...]}
    videos/              with ``videos=N``: ``episode_<id>.mp4`` (or ``.gif``) of the first N
                         episodes of the split (:mod:`condvln.sim.video`)

This module ties the runner's parts together and is its public face; each part is a module of
:mod:`condvln.agents.runner`: the settings (:mod:`~condvln.agents.runner.options`), the split as
harness specs (:mod:`~condvln.agents.runner.episodes`), the episode loop with one agent per
worker (:mod:`~condvln.agents.runner.loop`), the run checked and described before it starts
(:mod:`~condvln.agents.runner.plan`), the worker pool and executor adapter
(:mod:`~condvln.agents.runner.pool`), fault isolation (:mod:`~condvln.agents.runner.faults`),
the resume store (:mod:`~condvln.agents.runner.resume`) and recording
(:mod:`~condvln.agents.runner.record`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from condvln.agents.loader import load_agent
from condvln.agents.runner.episodes import (
    EpisodeSpec,
    episode_seeds,
    episode_specs,
)
from condvln.agents.runner.faults import FAILURES, AgentFault, call_agent, valid_action
from condvln.agents.runner.loop import EpisodeWorker, WorkerConfig, trajectory_record
from condvln.agents.runner.options import Progress, RunOptions
from condvln.agents.runner.plan import Plan, plan_run
from condvln.agents.runner.pool import execute
from condvln.agents.runner.record import (
    Tally,
    append_records,
    finalise,
    predictions,
    record_videos,
)
from condvln.agents.runner.resume import (
    INCOMPLETE,
    MANIFEST,
    PREDICTIONS,
    TRAJECTORIES,
    after_failure,
    check_manifest,
    open_folder,
    read_trajectories,
    set_aside,
    write_manifest,
)
from condvln.errors import CondVLNError, ConfigError
from condvln.io import output_lock, output_path
from condvln.options import build
from condvln.parallel.executors import Executor, PinnedProcesses
from condvln.parallel.shards import Shard

__all__ = [
    "FAILURES",
    "MANIFEST",
    "PREDICTIONS",
    "TRAJECTORIES",
    "AgentFault",
    "EpisodeSpec",
    "EpisodeWorker",
    "RunOptions",
    "RunSummary",
    "WorkerConfig",
    "call_agent",
    "episode_seeds",
    "episode_specs",
    "predictions",
    "read_trajectories",
    "record_videos",
    "run_agent",
    "trajectory_record",
    "valid_action",
]


@dataclass(frozen=True, slots=True)
class RunSummary:
    """What a run did.

    Attributes:
        out_dir: The run folder.
        agent: Agent name.
        split: Split name.
        episodes: Episodes selected (after ``limit``).
        ran: Episodes run now.
        skipped: Episodes already in the run folder (resume).
        stopped: Episodes run now that ended with STOP.
        steps: Actions taken in the episodes run now.
        seconds: Wall-clock time.
        failures: Episodes run now that the agent failed, by status (see :data:`FAILURES`).
        first_failure: ``"episode ID: status: reason"`` of the first of them, if any.
        batch_size: Episodes stepped in lockstep per worker (1 for agents without
            ``act_batch``).
        set_aside: Where ``restart`` moved the old run folder (``None``: nothing moved).
    """

    out_dir: Path
    agent: str
    split: str
    episodes: int
    ran: int
    skipped: int
    stopped: int
    steps: int
    seconds: float
    failures: dict[str, int] = field(default_factory=dict)
    first_failure: str | None = None
    batch_size: int = 1
    set_aside: Path | None = None


def run_agent(
    agent_name: str,
    dataset_dir: str | Path,
    split: str,
    out_dir: str | Path,
    options: RunOptions | None = None,
    *,
    executor: Executor | PinnedProcesses | None = None,
    workers: int = 1,
    shard: Shard | None = None,
    progress: Progress | None = None,
    restart: bool = False,
    video_progress: Progress | None = None,
    **fields: Any,
) -> RunSummary:
    """Run ``agent_name`` on ``split`` of the dataset at ``dataset_dir`` into ``out_dir``.

    One agent instance per worker serves the whole run; a failing agent call ends only its
    episode (:mod:`~condvln.agents.runner.faults`; a resume re-runs the failed episodes).

    Args:
        agent_name: A registered name, ``"module:Class"``, ``"path/file.py:Class"`` or the
            URL of an agent server (``"http://127.0.0.1:8000"``).
        dataset_dir: The dataset folder (``condvln generate`` output).
        split: Split name (wins over ``options.split``).
        out_dir: The run folder (created).
        options: The run's settings (defaults when omitted).
        executor: Where workers run (default: ``workers`` local processes); with Ray each
            worker is an actor holding one agent; on :class:`PinnedProcesses` (processes
            serving several runs) each scene has a home process that keeps it for later runs.
        workers: Processes of the default executor (1: this process; always 1 for an agent
            server without ``act_batch``).
        shard: Run only this shard of the (limited) split; ``condvln merge`` joins shards.
        progress: Called as ``progress(done, total)`` after each episode.
        restart: Start over: an existing run folder is moved aside
            (``OUT.previous-K``, :attr:`RunSummary.set_aside`) instead of resumed.
        video_progress: Called as ``progress(done, total)`` after each video.
        **fields: Fields of :class:`RunOptions` replacing those of ``options``
            (``limit=8, protocol={"panoramic": True}``).

    Raises:
        ConfigError: Unknown agent, invalid options, a resume whose settings or agent differ
            (one line naming what changed; ``restart`` starts over instead), a dead worker
            process or (``fail_fast``) a failed episode.
        FormatError: Unreadable dataset files.
    """
    started = time.perf_counter()
    opts = build(RunOptions, options, split=split, **fields)
    dataset_dir, out_dir = Path(dataset_dir).resolve(), output_path(out_dir)
    if isinstance(workers, int) and workers < 1:
        raise ConfigError(f"--workers must be at least 1, got {workers}")
    plan = plan_run(agent_name, dataset_dir, opts, executor or Executor(workers=workers), shard)
    tally, ran, aside = _record_run(plan, out_dir, opts.resume, progress, restart)
    if opts.videos > 0:
        specs = plan.specs[: opts.videos]
        record_videos(dataset_dir, out_dir, specs, opts.protocol, opts.video_format, video_progress)
    summary = _summary(agent_name, out_dir, plan, tally, ran, time.perf_counter() - started)
    return replace(summary, set_aside=aside)


def _summary(
    agent_name: str, out_dir: Path, plan: Plan, tally: Tally, ran: int, seconds: float
) -> RunSummary:
    return RunSummary(
        out_dir=out_dir,
        agent=agent_name,
        split=plan.manifest["split"],
        episodes=len(plan.specs),
        ran=ran,
        skipped=len(plan.specs) - ran,
        stopped=tally.stopped,
        steps=tally.steps,
        seconds=round(seconds, 3),
        failures=dict(tally.failures),
        first_failure=tally.first_failure,
        batch_size=plan.config.batch_size,
    )


def _record_run(
    plan: Plan, out_dir: Path, resume: bool, progress: Progress | None, restart: bool = False
) -> tuple[Tally, int, Path | None]:
    """Run the pending episodes into the locked run folder; returns the tally, how many ran and
    where ``restart`` moved the old folder.

    On any failure a fresh folder that recorded nothing is removed; otherwise it stays
    resumable and a :class:`~condvln.errors.CondVLNError` says how many episodes it kept.
    """
    with output_lock(out_dir):
        aside = set_aside(out_dir) if restart and out_dir.exists() else None
        fresh = not out_dir.exists()
        if resume:
            check_manifest(out_dir, plan.manifest)
        try:
            done = open_folder(out_dir, plan.manifest, resume)
            pending = [s for s in plan.specs if str(s.episode_id) not in done]
            total = len(plan.specs)
            tally = Tally(done=total - len(pending))
            if progress is not None and tally.done:
                progress(tally.done, total)
            records = execute(pending, plan.executor, plan.config, _local_agent(plan))
            append_records(
                out_dir / TRAJECTORIES,
                records,
                tally,
                fail_fast=plan.config.fail_fast,
                on_record=None if progress is None else lambda: progress(tally.done, total),
            )
            write_manifest(out_dir, plan.manifest)
            finalise(out_dir)
            (out_dir / INCOMPLETE).unlink(missing_ok=True)
        except BaseException as exc:
            kept = after_failure(out_dir, fresh)
            if kept and isinstance(exc, CondVLNError):
                exc.args = (
                    f"{exc} (run incomplete: {kept} episodes kept in {out_dir}; "
                    "fix the problem and rerun the same command to resume)",
                )
            raise
    return tally, len(pending), aside


def _local_agent(plan: Plan) -> Any:
    """The agent of an in-process run (built once); ``None`` when worker processes or Ray
    actors build their own."""
    executor = plan.executor
    if isinstance(executor, PinnedProcesses) or executor.workers > 1 or executor.kind == "ray":
        return None
    if plan.agent is not None:
        return plan.agent
    config = plan.config
    return load_agent(config.agent, config.agent_args, step_timeout=config.step_timeout)
