"""Planning a run: check the agent and the split, and describe the run before anything is
written (the agent's manifest fields, the worker settings, the episodes, the manifest)."""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from condvln import __version__
from condvln.agents.base import instruction_source, is_batched, is_remote
from condvln.agents.loader import agent_factory, load_agent
from condvln.agents.runner.episodes import EpisodeSpec, dataset_hash, episode_specs
from condvln.agents.runner.loop import WorkerConfig
from condvln.agents.runner.options import RunOptions
from condvln.errors import ConfigError
from condvln.parallel.executors import Executor, PinnedProcesses
from condvln.parallel.shards import Shard
from condvln.provenance import json_digest, provenance, source_digests
from condvln.sim.protocol import protocol_stamp


@dataclass(frozen=True)
class Plan:
    """A checked run before anything is written.

    Attributes:
        config: What every worker needs.
        agent: The agent instance built while describing it (``None`` if none was needed).
        executor: Where the workers run (:class:`PinnedProcesses`: processes that serve
            several runs).
        specs: The episodes of the run (of its shard).
        manifest: The run folder's ``manifest.json``.
    """

    config: WorkerConfig
    agent: Any
    executor: Executor | PinnedProcesses
    specs: list[EpisodeSpec]
    manifest: dict[str, Any]


def plan_run(
    agent_name: str,
    dataset_dir: Path,
    opts: RunOptions,
    executor: Executor | PinnedProcesses,
    shard: Shard | None,
) -> Plan:
    """Check the agent and the split, and describe the run (nothing is written yet).

    An agent class declaring ``reads_text = True`` is built here (once, and reused by an
    in-process run) so that its ``text_protocol`` — the stamp of the text rendering it reads the
    observations through — joins the manifest's ``protocol`` and ``protocol_hash``.
    """
    factory = agent_factory(agent_name)
    agent, agent_info = describe_agent(agent_name, factory, opts.agent_args, opts.step_timeout)
    if agent is None and getattr(factory, "reads_text", False):
        # its text rendering joins the stamp
        agent = load_agent(agent_name, opts.agent_args, step_timeout=opts.step_timeout)
    protocol, protocol_hash = protocol_stamp(opts.protocol, getattr(agent, "text_protocol", None))
    batched = is_batched(agent if agent is not None else factory)
    batch_size = opts.batch_size if batched else 1
    if is_remote(agent_name) and not batched:
        # a server without act_batch: one episode at a time
        executor = replace(executor, workers=1) if isinstance(executor, Executor) else Executor()
    specs = episode_specs(dataset_dir, opts.split, agent_info["instruction_source"], opts.limit)
    total = len(specs)
    specs = shard.select(specs) if shard else specs
    manifest = {
        "agent": agent_name,
        **agent_info,
        "batch_size": batch_size,
        "step_timeout": opts.step_timeout,
        "protocol": protocol,
        "protocol_hash": protocol_hash,
        "agent_hash": json_digest(
            [agent_info[k] for k in ("agent_code", "agent_server", "agent_args")]
            + [agent_name, protocol_hash]
        ),
        "dataset": str(dataset_dir),
        "dataset_hash": dataset_hash(dataset_dir, opts.split),
        "split": opts.split,
        "seed": opts.seed,
        "seeds": "per episode: numpy SeedSequence([seed, episode_id]) -> (perception, agent)",
        "episodes": len(specs),
        "condvln_version": __version__,
        "provenance": provenance(),
    }
    if shard is not None:
        manifest["shard"] = shard.to_json(total)
    config = WorkerConfig(
        agent_name,
        opts.agent_args,
        dataset_dir,
        opts.protocol,
        opts.seed,
        batch_size,
        opts.step_timeout,
        opts.fail_fast,
    )
    return Plan(config, agent, executor, specs, manifest)


def describe_agent(
    name: str, factory: Any, args: dict[str, Any], step_timeout: float | None
) -> tuple[Any, dict]:
    """An instance when one is needed to learn about the agent, and the manifest's agent fields
    (an agent server's first ``/info`` keeps to ``step_timeout``)."""
    agent = None
    source = getattr(factory, "instruction_source", None) if isinstance(factory, type) else None
    if source is None:
        agent = load_agent(name, args, step_timeout=step_timeout)
        source = instruction_source(agent)
    elif source not in ("original", "oracle"):
        raise ConfigError(
            f"agent instruction_source must be 'original' or 'oracle', got {source!r}"
        )
    module = getattr(factory, "__module__", None)
    remote = is_remote(name)
    info = {
        "agent_args": dict(args),
        "agent_class": None if remote else f"{module}.{factory.__qualname__}",
        "agent_code": None if remote else agent_sources(name, factory),
        "agent_server": getattr(agent, "info", None),
        "instruction_source": source,
    }
    return agent, info


def agent_sources(name: str, factory: Any) -> dict[str, str]:
    """Content hashes of an agent's source: the file of a ``file.py:Class`` spec, the module of
    a ``module:Class`` spec, and the module that defines the class or factory (by module name,
    or by the path as given for the spec's file)."""
    files: dict[str, Path] = {}
    where = name.rpartition(":")[0]
    if where.endswith(".py") or "/" in where:
        files[where] = Path(where)
    elif where in sys.modules:
        files[where] = Path(getattr(sys.modules[where], "__file__", None) or where)
    module = sys.modules.get(getattr(factory, "__module__", None) or "")
    path = getattr(module, "__file__", None)
    if path is not None and Path(path).resolve() not in {p.resolve() for p in files.values()}:
        files[module.__name__] = Path(path)  # type: ignore[union-attr]
    return source_digests(files)
