"""``condvln check-agent``: a conformance check of an agent, in the spirit of ``check_env``.

:func:`check_agent` loads the agent once and runs a few episodes through the same worker the
runner uses (:class:`~condvln.agents.run.EpisodeWorker`), then reports one :class:`Check` per
property:

* ``loads`` — the spec resolves and the constructor accepts the arguments;
* ``interface`` — ``reset(episode)`` and ``act(observation)`` (and ``act_batch(observations,
  episode_ids)`` when present) accept those arguments; ``instruction_source`` is valid;
* ``episodes`` — every episode ends without an exception or a timeout;
* ``actions`` — every action is an int in 0..3 (``bool`` is not an action);
* ``stops`` — the agent calls STOP itself in some episode (a warning otherwise);
* ``deterministic`` — a second instance, and the same instance again, repeat every action under
  the same seed (state is reset per episode);
* ``batched`` — with ``act_batch``, a lockstep batch of every episode repeats the actions of
  batches of one;
* ``no labels`` — while the agent runs, it opens nothing in the dataset folder (the files hold
  goals, reference paths and answers; an audit hook watches ``open``). Skipped for remote agents.
"""

from __future__ import annotations

import inspect
import os
import sys
import tempfile
from collections.abc import Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from condvln.agents.base import is_batched, is_remote, observation_format
from condvln.agents.loader import load_agent
from condvln.agents.run import EpisodeSpec, EpisodeWorker, WorkerConfig, episode_specs
from condvln.errors import CondVLNError
from condvln.sim.protocol import parse_protocol

Level = Literal["ok", "warn", "FAIL", "skip"]


@dataclass(frozen=True)
class Check:
    """One checked property: its name, the outcome and a one-line detail."""

    name: str
    level: Level
    detail: str


_WATCHED: list[Path] = []
_OPENED: list[str] = []
_HOOKED = False


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if not _WATCHED or event not in ("open", "os.listdir", "os.scandir"):
        return
    target = args[0] if args else None
    if not isinstance(target, (str, bytes, os.PathLike)):
        return
    path = os.path.abspath(os.fsdecode(target))
    if any(path.startswith(str(root)) for root in _WATCHED):
        _OPENED.append(path)


@contextmanager
def _watch(root: Path) -> Any:
    """Record files under ``root`` opened inside the block."""
    global _HOOKED
    if not _HOOKED:
        sys.addaudithook(_audit)
        _HOOKED = True
    _WATCHED.append(root.resolve())
    try:
        yield
    finally:
        _WATCHED.pop()


class _Watched:
    """An agent whose calls are watched for dataset file access; every other attribute
    (``observation_format``, ``needs_training_data`` / ``fit``, ``max_batch_size``, …) is the
    agent's own, so the worker treats it exactly as the runner treats the agent."""

    def __init__(self, agent: Any, root: Path) -> None:
        self.agent, self.root = agent, root
        if callable(getattr(agent, "act", None)):
            self.act = self._act
        if callable(getattr(agent, "act_batch", None)):
            self.act_batch = self._act_batch

    def __getattr__(self, name: str) -> Any:
        if name == "agent":  # not set yet (copying, unpickling)
            raise AttributeError(name)
        return getattr(self.agent, name)

    def reset(self, episode: Any) -> None:
        with _watch(self.root):
            self.agent.reset(episode)

    def fit(self, dataset_dir: Path) -> None:
        """Training data is the agent's to read: ``fit`` is not watched."""
        self.agent.fit(dataset_dir)

    def _act(self, observation: Any) -> Any:
        with _watch(self.root):
            return self.agent.act(observation)

    def _act_batch(self, observations: Sequence[Any], ids: Sequence[Any]) -> Any:
        with _watch(self.root):
            return self.agent.act_batch(observations, ids)


def _accepts(fn: Any, n: int) -> str | None:
    """Why ``fn`` cannot be called with ``n`` positional arguments (``None`` when it can)."""
    if not callable(fn):
        return "missing"
    try:
        inspect.signature(fn).bind(*([None] * n))
    except TypeError as exc:
        return str(exc)
    except ValueError:
        return None  # no signature (builtins): assume it is fine
    return None


def _interface(agent: Any) -> Check:
    """``reset(episode)`` and ``act(observation)`` or ``act_batch(observations, episode_ids)``
    (either is enough, as for the runner), a valid ``instruction_source`` and
    ``observation_format``."""
    problems = []
    methods = [("reset", 1)]
    methods += [("act", 1)] if hasattr(agent, "act") or not hasattr(agent, "act_batch") else []
    methods += [("act_batch", 2)] if hasattr(agent, "act_batch") else []
    for method, n in methods:
        why = _accepts(getattr(agent, method, None), n)
        if why:
            arguments = "observations, episode_ids" if n == 2 else "1 argument"
            problems.append(f"{method}({arguments}): {why}")
    source = getattr(agent, "instruction_source", "original")
    if source not in ("original", "oracle"):
        problems.append(f"instruction_source must be 'original' or 'oracle', got {source!r}")
    try:
        form = observation_format(agent)
    except CondVLNError as exc:
        problems.append(str(exc))
        form = "condvln"
    if problems:
        return Check("interface", "FAIL", "; ".join(problems))
    acts = "/".join(name for name, _ in methods[1:])
    detail = f"reset, {acts}; instruction_source {source!r}; observations {form!r}"
    return Check("interface", "ok", detail)


def _run(agent: Any, config: WorkerConfig, specs: list[EpisodeSpec]) -> dict[str, dict[str, Any]]:
    return {str(r["episode_id"]): r for r in EpisodeWorker(config, agent).run(specs)}


def _same(a: Mapping[str, dict[str, Any]], b: Mapping[str, dict[str, Any]]) -> list[str]:
    return [k for k in a if a[k]["actions"] != b.get(k, {}).get("actions")]


def _small_dataset(folder: Path) -> Path:
    from condvln.dataset.generate import GenerateConfig, generate_dataset

    out = folder / "dataset"
    generate_dataset(GenerateConfig(scenes=4, per_scene=12), out, workers=1)
    return out


def check_agent(
    spec: str,
    *,
    dataset: str | Path | None = None,
    split: str = "train",
    episodes: int = 3,
    agent_args: Mapping[str, Any] | None = None,
    seed: int = 0,
    step_timeout: float = 30.0,
) -> list[Check]:
    """Check the agent ``spec`` on ``episodes`` episodes of ``split`` (see the module notes).

    Args:
        spec: The agent spec (as for ``condvln run --agent``).
        dataset: A dataset folder (default: a small generated one in a temporary folder).
        split: Split whose first episodes are used.
        episodes: Episodes per run.
        agent_args: Constructor arguments.
        seed: Run seed.
        step_timeout: Seconds an agent call may take.
    """
    with tempfile.TemporaryDirectory(prefix="condvln-check-") as tmp:
        root = Path(dataset) if dataset is not None else _small_dataset(Path(tmp))
        return _checks(
            spec, root.resolve(), split, episodes, dict(agent_args or {}), seed, step_timeout
        )


def _checks(
    spec: str,
    root: Path,
    split: str,
    episodes: int,
    args: dict[str, Any],
    seed: int,
    step_timeout: float,
) -> list[Check]:
    try:
        agent = load_agent(spec, args, step_timeout=step_timeout)
    except CondVLNError as exc:
        return [Check("loads", "FAIL", str(exc))]
    except Exception as exc:
        return [Check("loads", "FAIL", f"constructor raised {type(exc).__name__}: {exc}")]
    checks = [Check("loads", "ok", f"{spec} → {type(agent).__qualname__}"), _interface(agent)]
    if checks[-1].level == "FAIL":
        return checks
    source = getattr(agent, "instruction_source", "original")
    specs = episode_specs(root, split, source, episodes)
    config = WorkerConfig(spec, args, root, parse_protocol(None), seed, 1, step_timeout)
    remote = is_remote(spec)
    watched = agent if remote else _Watched(agent, root)
    first = _run(watched, config, specs)
    checks += _episode_checks(first, len(specs))
    checks += _repeat_checks(first, watched, config, specs, is_batched(agent))
    checks.append(_label_check(remote))
    return checks


def _episode_checks(first: dict[str, dict[str, Any]], total: int) -> list[Check]:
    """Whether the episodes ran, the actions were valid and the agent ever stopped."""
    failed = {k: r for k, r in first.items() if r["status"] != "ok"}
    invalid = {k: r for k, r in failed.items() if r["status"] == "invalid_action"}
    other = {k: r for k, r in failed.items() if r["status"] != "invalid_action"}
    checks = []
    if other:
        k, r = next(iter(other.items()))
        detail = f"{len(other)} of {total} failed; episode {k}: {r['status']}: {r['reason']}"
        checks.append(Check("episodes", "FAIL", detail))
    else:
        steps = sum(r["steps"] for r in first.values())
        checks.append(Check("episodes", "ok", f"{total} episodes, {steps} steps"))
    if invalid:
        k, r = next(iter(invalid.items()))
        checks.append(Check("actions", "FAIL", f"episode {k}: {r['reason']}"))
    else:
        checks.append(Check("actions", "ok", "every action is an int in 0..3"))
    stops = sum(bool(r["stop"]) for r in first.values())
    checks.append(
        Check("stops", "ok", f"STOP called in {stops} of {total} episodes")
        if stops
        else Check("stops", "warn", "never called STOP: every episode ran out of budget")
    )
    return checks


def _repeat_checks(
    first: dict[str, dict[str, Any]],
    watched: Any,
    config: WorkerConfig,
    specs: list[EpisodeSpec],
    batched: bool,
) -> list[Check]:
    """Whether a new instance, a second pass and (batched agents) a lockstep batch repeat
    every action of the first pass."""
    fresh = _run(_reload(config), config, specs)
    again = _run(watched, config, specs)
    differ = sorted(set(_same(first, fresh)) | set(_same(first, again)))
    checks = [
        Check(
            "deterministic",
            "FAIL",
            f"actions differ under the same seed in episodes {', '.join(differ)}",
        )
        if differ
        else Check("deterministic", "ok", "a new instance and a second pass repeat every action")
    ]
    if batched:
        batch = replace(config, batch_size=len(specs))
        lockstep = _run(_reload(config), batch, specs)
        differ = _same(first, lockstep)
        checks.append(
            Check("batched", "FAIL", f"lockstep actions differ in episodes {', '.join(differ)}")
            if differ
            else Check("batched", "ok", f"a lockstep batch of {len(specs)} repeats every action")
        )
    return checks


def _reload(config: WorkerConfig) -> Any:
    """A new instance of the checked agent."""
    return load_agent(config.agent, config.agent_args, step_timeout=config.step_timeout)


def _label_check(remote: bool) -> Check:
    """Whether the agent opened a file of the dataset folder (not observable over HTTP)."""
    if remote:
        return Check("no labels", "skip", "remote agent: file access is not observable")
    if _OPENED:
        opened = _OPENED[0]
        _OPENED.clear()
        return Check(
            "no labels", "FAIL", f"the agent opened {opened} (dataset files hold the labels)"
        )
    return Check("no labels", "ok", "opened nothing in the dataset folder")
