"""``condvln run``: run an agent on a dataset split in the built-in simulator.

The runner is the harness: it reads the episodes (and, for the test split, the answers file for
the step budget and the oracle text — the agent never sees them), builds one simulator per scene,
and records every episode. A run folder holds::

    manifest.json        agent spec, arguments and class (or server /info), instruction source,
                         batch size, step timeout, protocol (+ hash), dataset path + hash, split,
                         seed, condvln version, episode count
    trajectories.jsonl   one line per episode: {"episode_id", "positions", "headings",
                         "actions", "stop", "steps", "agent", "status"} (+ "reason" when the
                         agent failed, + "agent_notes" when the agent has
                         ``episode_notes(episode_id)``); len(positions) == len(actions) + 1
    predictions.json     VLN-CE leaderboard form {"<episode_id>": [{"position", "heading",
                         "stop"}, ...]}
    videos/              with ``record=N``: ``episode_<id>.mp4`` (or ``.gif``) of the first N
                         episodes of the split (:mod:`condvln.sim.video`)

**Workers.** Each worker (this process, one pool process, or one Ray actor each —
:mod:`condvln.parallel.executors`) builds *one* agent for the
whole run (:class:`EpisodeWorker`) and resets it per episode; an executor only hands it lists of
:class:`EpisodeSpec`. Pool tasks are chunks of episodes of one scene, so a worker loads a scene
and builds its navigator once. Agents with ``act_batch`` step ``batch_size`` episodes in
lockstep. Every episode's seeds come from ``(seed, episode_id)``, so results depend neither on
the worker count nor on the batch size; at the end the trajectories are rewritten sorted by
episode id, so the files are byte-identical too.

**Faults.** An exception in ``reset`` / ``act`` (``SystemExit`` included), an invalid action or
a call slower than the step timeout ends that episode with ``status`` ``agent_error`` /
``invalid_action`` / ``timeout`` and a one-line ``reason`` (:func:`call_agent`,
:func:`valid_action`); the run goes on. Each finished episode is appended as one flushed line
the moment it ends (pool workers send each record at once), so an interrupted run — or one
whose worker process died — resumes where it stopped; a resume also re-runs failed episodes.
"""

from __future__ import annotations

import hashlib
import itertools
import multiprocessing
import os
import reprlib
import shutil
import signal
import threading
import time
import zlib
from collections import Counter
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np
import orjson

from condvln import __version__
from condvln.agents.base import (
    AgentTimeout,
    EpisodeView,
    agent_factory,
    instruction_source,
    is_batched,
    is_remote,
    load_agent,
    observation_format,
)
from condvln.agents.blind import prepare
from condvln.dataset.schema import load_checked_split
from condvln.dataset.vlnce import encode, load_scene_index, scene_json_path, split_path
from condvln.errors import CondVLNError, ConfigError, FormatError, ValidationError
from condvln.frames import quaternion_to_yaw
from condvln.io import (
    atomic_write_bytes,
    check_regular_file,
    dumps_json,
    output_lock,
    output_path,
    read_json,
)
from condvln.nav import GridNavigator
from condvln.parallel.executors import Executor, actor_map, follow_cwd
from condvln.parallel.shards import Shard
from condvln.provenance import provenance
from condvln.scene.serialize import load_scene
from condvln.sim.habitat_obs import habitat_observation
from condvln.sim.protocol import ObservationProtocol, parse_protocol, protocol_stamp
from condvln.sim.simulator import ACTIONS, DEFAULT_BUDGET, Simulator, Trajectory

CHUNK = 8
"""Episodes per parallel task (all of one scene)."""

TRAJECTORIES = "trajectories.jsonl"
PREDICTIONS = "predictions.json"
MANIFEST = "manifest.json"

_MANIFEST_KEYS = ("agent", "agent_args", "protocol", "dataset_hash", "split", "seed", "shard")
"""Manifest fields a resumed run must share with the interrupted one."""

Progress = Callable[[int, int], None]
"""``progress(done, total)``, called after each finished (or skipped) episode."""


@dataclass(frozen=True, slots=True)
class EpisodeSpec:
    """What the harness needs to run one episode (the agent sees only part of it).

    Attributes:
        episode_id: The id.
        scene_id: Scene file relative to the dataset folder.
        start_position: Start position.
        start_yaw: Start heading (radians).
        instruction: The text the agent reads.
        step_budget: Actions allowed.
        instruction_tokens: The text's token indices in the split's vocabulary.
        trajectory_id: The episode's ``trajectory_id`` (``None`` when it has none).
    """

    episode_id: int | str
    scene_id: str
    start_position: tuple[float, float, float]
    start_yaw: float
    instruction: str
    step_budget: int
    instruction_tokens: tuple[int, ...] = ()
    trajectory_id: int | None = None


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


def episode_seeds(seed: int, episode_id: int | str) -> tuple[int, int]:
    """``(perception_seed, agent_seed)`` of an episode, from the run seed and its id.

    >>> episode_seeds(0, 17) == episode_seeds(0, 17) != episode_seeds(1, 17)
    True
    """
    key = episode_id if isinstance(episode_id, int) else zlib.crc32(str(episode_id).encode())
    perception, agent = np.random.SeedSequence([seed, key]).generate_state(2)
    return int(perception), int(agent)


# --- reading the split ---------------------------------------------------------------------------


def episode_specs(
    dataset_dir: Path, split: str, source: str, limit: int | None = None
) -> list[EpisodeSpec]:
    """The split's episodes as harness specs, in file order (the first ``limit``).

    Every episode passes the shared schema check first
    (:func:`~condvln.dataset.schema.load_checked_split`). Budgets and oracle texts come from
    ``info.condvln`` (test: the answers file); the budget defaults to :data:`DEFAULT_BUDGET`.

    Raises:
        FormatError: a malformed episode (file, episode, field), or a scene outside the dataset.
        ValidationError: An oracle agent on an episode without an oracle instruction.
    """
    if limit is not None and limit < 0:
        raise ConfigError(f"--limit must be 0 or more, got {limit}")
    checked = load_checked_split(dataset_dir, split, labels=False)
    index = load_scene_index(dataset_dir)
    words = checked.doc["instruction_vocab"]["word_list"]
    vocab = {w: i for i, w in enumerate(words) if isinstance(w, str)}
    specs = []
    for ep in checked.episodes[:limit]:
        info = (ep.get("info") or {}).get("condvln") or {}
        scene_file = scene_json_path(dataset_dir, {**ep, "info": {"condvln": info}}, index)
        text = ep["instruction"]["instruction_text"]
        tokens = ep["instruction"].get("instruction_tokens") or []
        if source == "oracle":
            text = info.get("oracle_instruction")
            if not isinstance(text, str):
                raise ValidationError(f"{split}: episode {ep['episode_id']}: no oracle instruction")
            tokens = encode(text, vocab)
        trajectory_id = ep.get("trajectory_id")
        specs.append(
            EpisodeSpec(
                episode_id=ep["episode_id"],
                scene_id=scene_file.relative_to(dataset_dir.resolve()).as_posix(),
                start_position=tuple(float(c) for c in ep["start_position"]),  # type: ignore[arg-type]
                start_yaw=quaternion_to_yaw(ep["start_rotation"]),
                instruction=text,
                step_budget=int(info.get("step_budget", DEFAULT_BUDGET)),
                instruction_tokens=tuple(int(t) for t in tokens),
                trajectory_id=trajectory_id if isinstance(trajectory_id, int) else None,
            )
        )
    return specs


def dataset_hash(dataset_dir: Path, split: str) -> str:
    """First 16 hex digits of the SHA-256 of the split file (and its answers file, if any)."""
    digest = hashlib.sha256()
    for path in (split_path(dataset_dir, split), split_path(dataset_dir, split, "_answers")):
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


# --- running episodes ----------------------------------------------------------------------------

AgentStatus = Literal["ok", "agent_error", "invalid_action", "timeout"]
FAILURES: tuple[AgentStatus, ...] = ("agent_error", "invalid_action", "timeout")
"""How an episode can end by the agent's fault (``status`` of its record, with a ``reason``)."""

_REASON_CHARS = 300


class AgentFault(Exception):
    """An agent call that failed: the episode ends with ``status`` and a one-line ``reason``."""

    def __init__(self, status: AgentStatus, reason: str) -> None:
        self.status = status
        self.reason = " ".join(reason.split())[:_REASON_CHARS]
        super().__init__(f"{status}: {self.reason}")


@contextmanager
def _deadline(seconds: float | None) -> Iterator[None]:
    """Raise :class:`AgentTimeout` in the block after ``seconds`` (main thread; SIGALRM)."""
    usable = (
        seconds is not None
        and hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
    )
    if not usable:
        yield
        return

    def on_alarm(signum: int, frame: Any) -> None:
        raise AgentTimeout(f"no answer within the step timeout of {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0.0)
        signal.signal(signal.SIGALRM, previous)


def call_agent(method: str, fn: Callable[..., Any], *args: Any, timeout: float | None) -> Any:
    """``fn(*args)`` with fault isolation: any failure becomes an :class:`AgentFault`.

    Exceptions (``SystemExit`` included) become ``agent_error``; a call slower than
    ``timeout`` seconds becomes ``timeout`` (interrupted in the main thread, else detected
    when it returns). ``KeyboardInterrupt`` still stops the run.
    """
    started = time.perf_counter()
    try:
        with _deadline(timeout):
            result = fn(*args)
    except AgentTimeout as exc:
        raise AgentFault("timeout", f"{method}: {exc}") from None
    except (Exception, SystemExit) as exc:
        raise AgentFault("agent_error", f"{method}: {type(exc).__name__}: {exc}") from None
    elapsed = time.perf_counter() - started
    if timeout is not None and elapsed > timeout:
        raise AgentFault("timeout", f"{method}: took {elapsed:.3g} s (step timeout {timeout:g} s)")
    return result


def valid_action(action: Any) -> int:
    """``action`` as an action id, or :class:`AgentFault` ``invalid_action`` (bools are not)."""
    is_int = isinstance(action, (int, np.integer)) and not isinstance(action, (bool, np.bool_))
    if is_int and int(action) in ACTIONS:
        return int(action)
    raise AgentFault(
        "invalid_action",
        f"act returned {reprlib.repr(action)} ({type(action).__name__}); "
        "actions are the ints 0 STOP, 1 FORWARD, 2 LEFT, 3 RIGHT",
    )


@dataclass(frozen=True)
class WorkerConfig:
    """Everything a worker needs to run episodes (picklable, sent once per worker).

    Attributes:
        agent: The agent spec (name, ``module:Class``, ``file.py:Class`` or URL).
        agent_args: Constructor keyword arguments.
        dataset_dir: The dataset folder.
        protocol: The observation protocol.
        seed: Run seed.
        batch_size: Episodes stepped in lockstep (used when the agent has ``act_batch``).
        step_timeout: Seconds an agent call may take (``None``: no limit).
        fail_fast: Stop the worker at the first failed episode.
    """

    agent: str
    agent_args: Mapping[str, Any]
    dataset_dir: Path
    protocol: ObservationProtocol
    seed: int
    batch_size: int = 1
    step_timeout: float | None = None
    fail_fast: bool = False


class _Episode:
    """One running episode: its spec, simulator and latest observation."""

    def __init__(self, spec: EpisodeSpec, sim: Simulator, obs: Any) -> None:
        self.spec, self.sim, self.obs = spec, sim, obs


class EpisodeWorker:
    """One agent for the whole run and a simulator cache; runs episodes, B in lockstep.

    An executor creates one worker per process (or actor) and calls :meth:`run` with batches
    of episode specs; the agent is constructed once and reset per episode.

    Args:
        config: The worker's settings.
        agent: An existing agent instance (default: constructed from ``config``).
    """

    def __init__(self, config: WorkerConfig, agent: Any = None) -> None:
        self.config = config
        self.agent = agent if agent is not None else load_agent(config.agent, config.agent_args)
        prepare(self.agent, config.dataset_dir)
        self.batched = is_batched(self.agent)
        self.batch_size = config.batch_size if self.batched else 1
        self.habitat = observation_format(self.agent) == "habitat"
        self._navigators: dict[str, GridNavigator] = {}
        self._sims: dict[tuple[str, int], Simulator] = {}
        self.failed = False

    def simulator(self, scene_id: str, slot: int, keep: set[str]) -> Simulator:
        """The simulator of ``slot`` for ``scene_id`` (scenes not in ``keep`` are dropped)."""
        if scene_id not in self._navigators:
            for old in [s for s in self._navigators if s not in keep]:
                del self._navigators[old]
                self._sims = {k: v for k, v in self._sims.items() if k[0] != old}
            path = self.config.dataset_dir / scene_id
            try:
                self._navigators[scene_id] = GridNavigator(load_scene(path))
            except FormatError as exc:
                raise exc.with_file(str(path)) from None
        key = (scene_id, slot)
        if key not in self._sims:
            nav = self._navigators[scene_id]
            self._sims[key] = Simulator(nav.scene, self.config.protocol, navigator=nav)
        return self._sims[key]

    def start(self, spec: EpisodeSpec, sim: Simulator) -> _Episode:
        """Reset ``sim`` and the agent for ``spec`` (raises :class:`AgentFault`)."""
        perception_seed, agent_seed = episode_seeds(self.config.seed, spec.episode_id)
        obs = sim.reset(
            spec.start_position,
            spec.start_yaw,
            instruction=spec.instruction,
            step_budget=spec.step_budget,
            seed=perception_seed,
        )
        episode = _Episode(spec, sim, obs)
        view = EpisodeView(
            episode_id=spec.episode_id,
            scene_id=spec.scene_id,
            instruction=spec.instruction,
            step_budget=spec.step_budget,
            protocol=sim.protocol,
            map=sim.map_view() if sim.protocol.map_access else None,
            seed=agent_seed,
            semantics=sim.semantic_table() if "semantic" in sim.protocol.sensors else None,
            instruction_tokens=spec.instruction_tokens,
            trajectory_id=spec.trajectory_id,
        )
        call_agent("reset", self.agent.reset, view, timeout=self.config.step_timeout)
        return episode

    def actions(self, episodes: list[_Episode]) -> list[Any]:
        """One raw action per episode: ``act``, or one ``act_batch`` call for batched agents."""
        timeout = self.config.step_timeout
        observations = [self.observation(e) for e in episodes]
        if not self.batched:
            return [call_agent("act", self.agent.act, observations[0], timeout=timeout)]
        ids = [e.spec.episode_id for e in episodes]
        actions = call_agent("act_batch", self.agent.act_batch, observations, ids, timeout=timeout)
        try:
            actions = list(actions)
        except TypeError:
            actions = []
        if len(actions) != len(episodes):
            raise AgentFault(
                "invalid_action",
                f"act_batch returned {reprlib.repr(actions)} for {len(ids)} episodes",
            )
        return actions

    def observation(self, episode: _Episode) -> Any:
        """The latest observation in the agent's ``observation_format``."""
        if not self.habitat:
            return episode.obs
        spec = episode.spec
        start, start_yaw = episode.sim.start_pose
        return habitat_observation(
            episode.obs,
            start_position=start,
            start_yaw=start_yaw,
            tokens=spec.instruction_tokens,
            trajectory_id=spec.trajectory_id,
        )

    def run(self, specs: Iterable[EpisodeSpec]) -> Iterator[dict[str, Any]]:
        """Run ``specs`` in order, ``batch_size`` at a time in lockstep; yields each record."""
        queue = iter(specs)
        slots: list[_Episode | None] = [None] * self.batch_size
        exhausted = False
        while not self.stopped:
            if not exhausted:
                exhausted = yield from self._fill(slots, queue)
            active = [(i, e) for i, e in enumerate(slots) if e is not None]
            if not active:
                if exhausted:
                    return
                continue
            try:
                actions = self.actions([e for _, e in active])
            except AgentFault as fault:
                for i, e in active:
                    slots[i] = None
                    yield self._record(e, fault)
                continue
            for (i, e), raw in zip(active, actions, strict=True):
                try:
                    e.obs = e.sim.step(valid_action(raw))
                except AgentFault as fault:
                    slots[i] = None
                    yield self._record(e, fault)
                    continue
                if e.sim.done:
                    slots[i] = None
                    yield self._record(e, None)

    @property
    def stopped(self) -> bool:
        """Whether ``fail_fast`` stopped this worker."""
        return self.failed and self.config.fail_fast

    def _fill(
        self, slots: list[_Episode | None], queue: Iterator[EpisodeSpec]
    ) -> Generator[dict[str, Any], None, bool]:
        """Start episodes in the free slots (yields records of failed starts); True at the end."""
        for i in range(len(slots)):
            while slots[i] is None:
                spec = None if self.stopped else next(queue, None)
                if spec is None:
                    return True
                keep = {e.spec.scene_id for e in slots if e is not None}
                sim = self.simulator(spec.scene_id, i, keep)
                try:
                    slots[i] = self.start(spec, sim)
                except AgentFault as fault:
                    yield self._record(_Episode(spec, sim, None), fault)
        return False

    def _record(self, episode: _Episode, fault: AgentFault | None) -> dict[str, Any]:
        record = trajectory_record(
            episode.spec.episode_id, episode.sim.trajectory(), self.config.agent
        )
        notes = self._notes(episode.spec.episode_id)
        if fault is None:
            return record | {"status": "ok"} | notes
        self.failed = True
        return record | {"status": fault.status, "reason": fault.reason} | notes

    def _notes(self, episode_id: int | str) -> dict[str, Any]:
        """``{"agent_notes": ...}`` from an agent's ``episode_notes`` (JSON data), else ``{}``."""
        get = getattr(self.agent, "episode_notes", None)
        try:
            notes = get(episode_id) if callable(get) else None
            return {} if notes is None else {"agent_notes": orjson.loads(orjson.dumps(notes))}
        except Exception:
            return {}


def trajectory_record(episode_id: int | str, traj: Trajectory, agent_name: str) -> dict[str, Any]:
    """The JSONL record of one episode (the runner adds ``status`` and, on failure, ``reason``)."""
    return {
        "episode_id": episode_id,
        "positions": [list(p) for p in traj.positions],
        "headings": list(traj.headings),
        "actions": list(traj.actions),
        "stop": traj.stop,
        "steps": len(traj.actions),
        "agent": agent_name,
    }


_WORKER: EpisodeWorker | ConfigError | None = None
_RECORDS: Any = None
"""The pool worker's agent (created once by :func:`_init_pool_worker`) and its record queue."""


def _make_worker(config: WorkerConfig) -> EpisodeWorker | ConfigError:
    """A worker, or the error its agent raised at start (reported when it gets a task)."""
    try:
        return EpisodeWorker(config)
    except ConfigError as exc:
        return exc
    except Exception as exc:
        return ConfigError(f"agent {config.agent!r} failed to start: {type(exc).__name__}: {exc}")


def _init_pool_worker(config: WorkerConfig, records: Any) -> None:
    global _WORKER, _RECORDS
    _RECORDS = records
    _WORKER = _make_worker(config)


def _pool_task(specs: list[EpisodeSpec]) -> None:
    """Run a task in a pool worker; each record goes to the queue as soon as it is finished."""
    if not isinstance(_WORKER, EpisodeWorker):
        raise _WORKER or ConfigError("worker not initialised")
    for record in _WORKER.run(specs):
        _RECORDS.put(record)


class RayEpisodeWorker:
    """The state of one Ray actor: an :class:`EpisodeWorker` built once, fed whole tasks."""

    def __init__(self, config: WorkerConfig, cwd: str) -> None:
        follow_cwd(cwd)  # relative agent paths mean what they mean to the caller
        self.worker = _make_worker(config)

    def run_task(self, specs: list[EpisodeSpec]) -> list[dict[str, Any]]:
        """The records of one task's episodes."""
        if isinstance(self.worker, ConfigError):
            raise self.worker
        return list(self.worker.run(specs))


def _tasks(specs: Iterable[EpisodeSpec], batch: int) -> list[list[EpisodeSpec]]:
    """Pool tasks: chunks of one scene (``CHUNK`` episodes), or ``CHUNK × batch`` in scene order."""
    ordered = sorted(specs, key=lambda s: (s.scene_id, _id_key(s.episode_id)))
    if batch > 1:
        size = CHUNK * batch
        return [ordered[i : i + size] for i in range(0, len(ordered), size)]
    chunks = []
    for _, group in itertools.groupby(ordered, key=lambda s: s.scene_id):
        items = list(group)
        chunks.extend(items[i : i + CHUNK] for i in range(0, len(items), CHUNK))
    return chunks


def _execute(
    specs: list[EpisodeSpec], executor: Executor, config: WorkerConfig, agent: Any
) -> Iterator[dict[str, Any]]:
    """Records of every episode as they finish (one agent per worker, created once)."""
    workers = executor.workers
    if executor.kind == "ray":
        tasks = _tasks(specs, config.batch_size)
        for records in actor_map(
            RayEpisodeWorker, (config, os.getcwd()), "run_task", tasks, executor
        ):
            yield from records
        return
    if workers <= 1:
        ordered = sorted(specs, key=lambda s: (s.scene_id, _id_key(s.episode_id)))
        yield from EpisodeWorker(config, agent).run(ordered)
        return
    yield from _execute_pool(specs, workers, config)


def _execute_pool(
    specs: list[EpisodeSpec], workers: int, config: WorkerConfig
) -> Iterator[dict[str, Any]]:
    context = multiprocessing.get_context()
    records = context.SimpleQueue()
    pool = ProcessPoolExecutor(
        max_workers=workers,
        mp_context=context,
        initializer=_init_pool_worker,
        initargs=(config, records),
    )
    pending = {pool.submit(_pool_task, task) for task in _tasks(specs, config.batch_size)}
    try:
        while pending or not records.empty():
            while not records.empty():
                yield records.get()
            done, pending = wait(pending, timeout=0.05, return_when=FIRST_COMPLETED)
            for future in done:
                try:
                    future.result()
                except BrokenProcessPool:
                    while not records.empty():
                        yield records.get()
                    raise ConfigError(
                        "a worker process died (killed, or the agent ended the process); "
                        "every finished episode is kept: run the same command again to resume"
                    ) from None
    finally:
        for future in pending:
            future.cancel()
        while any(not f.done() for f in pending):
            while not records.empty():
                records.get()
            wait(pending, timeout=0.05)
        pool.shutdown(wait=True)


# --- the run folder ------------------------------------------------------------------------------


def _id_key(episode_id: int | str) -> tuple[int, int, str]:
    return (0, episode_id, "") if isinstance(episode_id, int) else (1, 0, str(episode_id))


_RECORD_KEYS = ("episode_id", "positions", "headings", "stop")


def read_trajectories(path: Path) -> list[dict[str, Any]]:
    """Records of a trajectories file; only a torn **last** line (interrupted write) is cut off.

    Raises:
        FormatError: a malformed line before the last one (nothing is truncated then), or a
            path that is not a regular file.
    """
    if not path.exists() and not path.is_symlink():
        return []
    check_regular_file(path)
    data = path.read_bytes()
    lines = data.splitlines(keepends=True)
    records, good = [], 0
    for number, line in enumerate(lines, start=1):
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            record = None
        ok = isinstance(record, dict) and all(k in record for k in _RECORD_KEYS)
        if ok and not isinstance(record["episode_id"], int | str):
            ok = False
        if not ok or not line.endswith(b"\n"):
            if number == len(lines):
                break
            raise FormatError(
                "not a trajectory record (a JSON object with episode_id, positions, headings, "
                "stop); fix or remove the line, or start over in a new folder",
                file=str(path),
                record=f"line {number}",
            )
        records.append(record)
        good += len(line)
    if good < len(data):
        with path.open("r+b") as fh:
            fh.truncate(good)
    return records


def _check_manifest(out_dir: Path, manifest: dict[str, Any]) -> None:
    path = out_dir / MANIFEST
    if not path.exists() and not path.is_symlink():
        return
    old = read_json(path, FormatError)
    if not isinstance(old, dict):
        raise FormatError("must be a JSON object (the run's manifest)", file=str(path))
    for key in _MANIFEST_KEYS:
        if old.get(key, {} if key == "agent_args" else None) != manifest.get(key):  # older runs: {}
            raise ConfigError(
                f"{out_dir}: cannot resume, '{key}' differs from the existing run "
                "(use a new folder or resume=False)"
            )


def predictions(records: Iterable[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """VLN-CE leaderboard predictions of trajectory records (STOP marked on the last entry)."""
    out = {}
    for rec in records:
        last = len(rec["positions"]) - 1
        out[str(rec["episode_id"])] = [
            {"position": p, "heading": h, "stop": bool(rec["stop"]) and i == last}
            for i, (p, h) in enumerate(zip(rec["positions"], rec["headings"], strict=True))
        ]
    return out


def _finalise(out_dir: Path) -> None:
    """Rewrite the trajectories sorted by id (the last record of an episode wins)."""
    latest = {str(r["episode_id"]): r for r in read_trajectories(out_dir / TRAJECTORIES)}
    records = sorted(latest.values(), key=lambda r: _id_key(r["episode_id"]))
    lines = b"".join(orjson.dumps(r) + b"\n" for r in records)
    atomic_write_bytes(out_dir / TRAJECTORIES, lines)
    atomic_write_bytes(out_dir / PREDICTIONS, dumps_json(predictions(records)))


def _check_video_format(video_format: str) -> None:
    if video_format not in ("mp4", "gif"):
        raise ConfigError(f"video format must be 'mp4' or 'gif', got {video_format!r}")


def record_videos(
    dataset_dir: Path,
    out_dir: Path,
    specs: list[EpisodeSpec],
    protocol: ObservationProtocol,
    video_format: str = "mp4",
) -> list[Path]:
    """Write ``videos/episode_<id>.<format>`` for the ``specs`` episodes of a finished run.

    Frames are re-rendered from the recorded poses with the protocol's RGB camera, so videos
    need no sensor in the protocol and do not change the run.
    """
    from condvln.nav import GridNavigator
    from condvln.scene.mesh import compose_scene_mesh
    from condvln.sim.render import Renderer
    from condvln.sim.video import episode_frames, write_video

    _check_video_format(video_format)
    records = {str(r["episode_id"]): r for r in read_trajectories(out_dir / TRAJECTORIES)}
    written = []
    scenes: dict[str, tuple[GridNavigator, Renderer]] = {}
    for spec in specs:
        if spec.scene_id not in scenes:
            scene = load_scene(dataset_dir / spec.scene_id)
            scenes = {spec.scene_id: (GridNavigator(scene), Renderer(compose_scene_mesh(scene)))}
        navigator, renderer = scenes[spec.scene_id]
        record = records[str(spec.episode_id)]
        frames = episode_frames(
            renderer,
            navigator,
            protocol.rgb,
            record["positions"],
            record["headings"],
            spec.instruction,
        )
        path = out_dir / "videos" / f"episode_{spec.episode_id}.{video_format}"
        written.append(write_video(frames, path))
    return written


def _finished(out_dir: Path) -> set[str]:
    """Ids of the episodes that ended without an agent failure (failed ones are re-run)."""
    latest = {str(r["episode_id"]): r for r in read_trajectories(out_dir / TRAJECTORIES)}
    return {k for k, r in latest.items() if r.get("status", "ok") == "ok"}


def _describe_agent(name: str, factory: Any, args: Mapping[str, Any]) -> tuple[Any, dict]:
    """An instance when one is needed to learn about the agent, and the manifest's agent fields."""
    agent = None
    source = getattr(factory, "instruction_source", None) if isinstance(factory, type) else None
    if source is None:
        agent = load_agent(name, args)
        source = instruction_source(agent)
    elif source not in ("original", "oracle"):
        raise ConfigError(
            f"agent instruction_source must be 'original' or 'oracle', got {source!r}"
        )
    module = getattr(factory, "__module__", None)
    info = {
        "agent_args": dict(args),
        "agent_class": None if is_remote(name) else f"{module}.{factory.__qualname__}",
        "agent_server": getattr(agent, "info", None),
        "instruction_source": source,
    }
    return agent, info


INCOMPLETE = "INCOMPLETE"
"""Marker file of a run folder whose run has not finished (removed when it does)."""

INCOMPLETE_TEXT = b"This run has not finished. Rerun the same `condvln run` command to resume it.\n"


def _manifest_bytes(out_dir: Path) -> bytes:
    path = out_dir / MANIFEST
    return path.read_bytes() if path.is_file() else b""


def _after_failure(out_dir: Path, fresh: bool) -> int:
    """A fresh run that recorded nothing leaves nothing; otherwise the folder stays resumable.

    Returns:
        The number of episode records kept in the folder.
    """
    trajectories = out_dir / TRAJECTORIES
    kept = trajectories.read_bytes().count(b"\n") if trajectories.is_file() else 0
    if fresh and not kept:
        shutil.rmtree(out_dir, ignore_errors=True)
    return kept


def run_agent(
    agent_name: str,
    dataset_dir: str | Path,
    split: str,
    out_dir: str | Path,
    *,
    agent_args: Mapping[str, Any] | None = None,
    protocol: ObservationProtocol | Mapping[str, Any] | None = None,
    seed: int = 0,
    workers: int = 1,
    batch_size: int = 1,
    step_timeout: float | None = None,
    fail_fast: bool = False,
    resume: bool = True,
    limit: int | None = None,
    progress: Progress | None = None,
    videos: int = 0,
    video_format: str = "mp4",
    executor: Executor | None = None,
    shard: Shard | None = None,
) -> RunSummary:
    """Run ``agent_name`` on ``split`` of the dataset at ``dataset_dir`` into ``out_dir``.

    One agent instance per worker serves the whole run (reset per episode). An exception in
    the agent, an invalid action or a call slower than ``step_timeout`` ends that episode with
    ``status`` ``agent_error`` / ``invalid_action`` / ``timeout`` and a one-line ``reason`` in
    its record; the run goes on (a resume re-runs the failed episodes).

    Args:
        agent_name: A registered name, ``"module:Class"``, ``"path/file.py:Class"`` or the
            URL of an agent server (``"http://127.0.0.1:8000"``).
        dataset_dir: The dataset folder (``condvln generate`` output).
        split: Split name.
        out_dir: The run folder (created).
        agent_args: Keyword arguments of the agent's constructor (of the HTTP client for a
            URL: ``connect_timeout``, ``read_timeout``, ``max_response_bytes``).
        protocol: The observation protocol (defaults when omitted).
        seed: Run seed; each episode's seeds derive from ``(seed, episode_id)``.
        workers: Parallel processes (1 runs in this process; always 1 for an agent server
            without ``act_batch``, which holds one episode at a time).
        batch_size: Episodes each worker steps in lockstep with one ``act_batch`` call
            (agents without ``act_batch`` run one at a time).
        step_timeout: Seconds one ``reset`` / ``act`` / ``act_batch`` call may take.
        fail_fast: Stop at the first failed episode (:class:`~condvln.errors.ConfigError`).
        resume: Skip episodes already finished in ``out_dir``; ``False`` starts over.
        limit: Run only the first ``limit`` episodes of the split.
        progress: Called as ``progress(done, total)`` after each episode.
        videos: Write a video of each of the first ``videos`` episodes into ``videos/``.
        video_format: ``"mp4"`` or ``"gif"``.
        executor: Where workers run (default: ``workers`` local processes); with Ray each
            worker is an actor holding one agent.
        shard: Run only this shard of the (limited) split; ``condvln merge`` joins shards.

    Returns:
        The :class:`RunSummary`.

    Raises:
        ConfigError: Unknown agent, invalid options, a resume whose settings differ, a dead
            worker process, (``fail_fast``) a failed episode, or an unknown video format.
        FormatError: Unreadable dataset files.
    """
    started = time.perf_counter()
    _check_video_format(video_format)
    dataset_dir, out_dir = Path(dataset_dir).resolve(), output_path(out_dir)
    if isinstance(workers, int) and workers < 1:
        raise ConfigError(f"--workers must be at least 1, got {workers}")
    if batch_size < 1:
        raise ConfigError(f"batch size must be at least 1, got {batch_size}")
    if step_timeout is not None and step_timeout <= 0:
        raise ConfigError(f"step timeout must be positive, got {step_timeout}")
    proto = parse_protocol(protocol)
    args = dict(agent_args or {})
    factory = agent_factory(agent_name)
    agent, agent_info = _describe_agent(agent_name, factory, args)
    if agent is None and getattr(factory, "reads_text", False):
        agent = load_agent(agent_name, args)  # its text rendering joins the protocol stamp
    protocol_dump, protocol_hash = protocol_stamp(proto, getattr(agent, "text_protocol", None))
    batched = is_batched(agent if agent is not None else factory)
    batch_size = batch_size if batched else 1
    executor = executor or Executor(workers=max(workers, 1))
    if is_remote(agent_name) and not batched:
        executor = replace(executor, workers=1)  # a server without act_batch: one episode at a time
    specs = episode_specs(dataset_dir, split, agent_info["instruction_source"], limit)
    total = len(specs)
    specs = shard.select(specs) if shard else specs
    manifest = {
        "agent": agent_name,
        **agent_info,
        "batch_size": batch_size,
        "step_timeout": step_timeout,
        "protocol": protocol_dump,
        "protocol_hash": protocol_hash,
        "dataset": str(dataset_dir),
        "dataset_hash": dataset_hash(dataset_dir, split),
        "split": split,
        "seed": seed,
        "seeds": "per episode: numpy SeedSequence([seed, episode_id]) -> (perception, agent)",
        "episodes": len(specs),
        "condvln_version": __version__,
        "provenance": provenance(),
    }
    if shard is not None:
        manifest["shard"] = shard.to_json(total)
    fresh = not out_dir.exists()
    with output_lock(out_dir):
        try:
            out_dir.mkdir(parents=True, exist_ok=True)
            if resume:
                _check_manifest(out_dir, manifest)
            else:
                for name in (TRAJECTORIES, PREDICTIONS):
                    (out_dir / name).unlink(missing_ok=True)
            done = _finished(out_dir)
            atomic_write_bytes(out_dir / INCOMPLETE, INCOMPLETE_TEXT)
            if not (out_dir / MANIFEST).is_file():  # a resume rewrites it only after success
                atomic_write_bytes(out_dir / MANIFEST, dumps_json(manifest, indent=True))
            pending = [s for s in specs if str(s.episode_id) not in done]
            skipped = len(specs) - len(pending)
            count, stopped, steps, failures, first = skipped, 0, 0, Counter[str](), None
            if progress is not None and skipped:
                progress(count, len(specs))
            config = WorkerConfig(
                agent_name, args, dataset_dir, proto, seed, batch_size, step_timeout, fail_fast
            )
            if executor.workers > 1 or executor.kind == "ray":
                agent = None  # each worker process builds its own, once
            elif agent is None:
                agent = load_agent(agent_name, args)
            with (out_dir / TRAJECTORIES).open("ab") as fh:
                records = _execute(pending, executor, config, agent)
                for record in records:
                    fh.write(orjson.dumps(record) + b"\n")
                    fh.flush()
                    count += 1
                    stopped += int(record["stop"])
                    steps += record["steps"]
                    if record["status"] != "ok":
                        failures[record["status"]] += 1
                        failure = f"episode {record['episode_id']}: {record['status']}: {record['reason']}"
                        first = first or failure
                        if fail_fast:
                            records.close()
                            raise ConfigError(
                                f"{failure} (--fail-fast; the finished episodes are kept)"
                            )
                    if progress is not None:
                        progress(count, len(specs))
            if _manifest_bytes(out_dir) != dumps_json(manifest, indent=True):
                atomic_write_bytes(out_dir / MANIFEST, dumps_json(manifest, indent=True))
            _finalise(out_dir)
            (out_dir / INCOMPLETE).unlink(missing_ok=True)
        except BaseException as exc:
            kept = _after_failure(out_dir, fresh)
            if kept and isinstance(exc, CondVLNError):
                exc.args = (
                    f"{exc} (run incomplete: {kept} episodes kept in {out_dir}; "
                    "fix the problem and rerun the same command to resume)",
                )
            raise
    if videos > 0:
        record_videos(dataset_dir, out_dir, specs[:videos], proto, video_format)
    return RunSummary(
        out_dir=out_dir,
        agent=agent_name,
        split=split,
        episodes=len(specs),
        ran=len(pending),
        skipped=skipped,
        stopped=stopped,
        steps=steps,
        seconds=round(time.perf_counter() - started, 3),
        failures=dict(failures),
        first_failure=first,
        batch_size=batch_size,
    )
