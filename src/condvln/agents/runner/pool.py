"""The worker pool: episode workers in this process, in local processes or as Ray actors.

Each worker builds its agent once (:class:`~condvln.agents.runner.loop.EpisodeWorker`); a task
is a scene's episodes, whole unless the scene is a large share of the run (``CHUNK × batch`` in
scene order for batched agents), so a worker loads a scene, builds its navigator and solves each
goal's distance field once. Records come back as episodes finish (pool workers send each one at
once), and the caller sorts them; a dead worker process ends the run with every finished episode
kept.

On :class:`~condvln.parallel.executors.PinnedProcesses` (the benchmark's workers, which serve
all its runs) each scene has a home process and the processes keep their scenes between runs
(:class:`~condvln.agents.runner.loop.SceneCache`), so the next agent finds the fields the last
one solved; a task there is up to ``CHUNK`` episodes of a scene.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
from collections import Counter
from collections.abc import Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from condvln.agents.runner.episodes import EpisodeSpec, id_key
from condvln.agents.runner.loop import (
    EpisodeWorker,
    SceneCache,
    WorkerConfig,
    keep_scenes_for_good,
    kept_scenes,
)
from condvln.errors import ConfigError
from condvln.parallel.executors import Executor, PinnedProcesses, actor_map, follow_cwd

CHUNK = 8
"""The smallest cap on a task's episodes (a batched agent's task: ``CHUNK × batch`` episodes)."""
SPREAD = 4
"""A task holds at most a ``SPREAD``-th of a worker's share of the run (or ``CHUNK`` episodes), so
the run's last tasks are short."""

_WORKER: EpisodeWorker | ConfigError | None = None
_RECORDS: Any = None
"""The pool worker's agent (created once by :func:`_init_pool_worker`) and its record queue."""
_PINNED: tuple[int, EpisodeWorker | ConfigError] | None = None
"""A pinned process's current run (its number) and worker."""
_RUNS = itertools.count()
"""Numbers the runs on pinned processes, so each run's agent is built afresh."""


def _make_worker(
    config: WorkerConfig, scenes: SceneCache | None = None
) -> EpisodeWorker | ConfigError:
    """A worker, or the error its agent raised at start (reported when it gets a task)."""
    try:
        return EpisodeWorker(config, scenes=scenes)
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


def _pinned_task(task: tuple[int, WorkerConfig, list[EpisodeSpec]]) -> list[dict[str, Any]]:
    """Run a task of run ``task[0]`` in a pinned process, whose scenes stay for the next run."""
    global _PINNED
    run, config, specs = task
    if _PINNED is None or _PINNED[0] != run:
        _PINNED = None  # the last run's agent goes before this one's is built
        _PINNED = (run, _make_worker(config, keep_scenes_for_good()))
    worker = _PINNED[1]
    if isinstance(worker, ConfigError):
        raise worker
    return list(worker.run(specs))


def _homes(specs: Iterable[EpisodeSpec], workers: int) -> dict[str, int]:
    """Each scene's home process: scenes by episodes, largest first, to the least loaded one
    (the same homes for every run of a split).

    >>> pose = ((0.0, 0.0, 0.0), 0.0)
    >>> specs = [EpisodeSpec(i, s, *pose, "", 9) for s, n in (("a", 5), ("b", 3), ("c", 3)) for i in range(n)]
    >>> _homes(specs, workers=2)
    {'a': 0, 'b': 1, 'c': 1}
    """
    counts = Counter(spec.scene_id for spec in specs)
    load = [0] * workers
    homes = {}
    for scene, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        home = min(range(workers), key=load.__getitem__)
        homes[scene] = home
        load[home] += count
    return homes


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


def _tasks(specs: Iterable[EpisodeSpec], batch: int, workers: int) -> list[list[EpisodeSpec]]:
    """Pool tasks, largest first: each scene's episodes whole, or in near-equal pieces when a
    scene holds more than a ``SPREAD``-th of a worker's share (at least ``CHUNK``); for batched
    agents ``CHUNK × batch`` episodes in scene order.

    A worker keeps one scene's navigator and its distance fields while the scene lasts, so a
    scene split over two workers is prepared twice; largest first keeps the last tasks short.

    >>> pose = ((0.0, 0.0, 0.0), 0.0)
    >>> specs = [EpisodeSpec(i, s, *pose, "", 9) for s, n in (("a", 3), ("b", 30)) for i in range(n)]
    >>> [(t[0].scene_id, len(t)) for t in _tasks(specs, batch=1, workers=2)]
    [('b', 8), ('b', 8), ('b', 7), ('b', 7), ('a', 3)]
    """
    ordered = sorted(specs, key=lambda s: (s.scene_id, id_key(s.episode_id)))
    if batch > 1:
        size = CHUNK * batch
        return [ordered[i : i + size] for i in range(0, len(ordered), size)]
    most = max(CHUNK, -(-len(ordered) // (workers * SPREAD)))
    pieces = []
    for _, group in itertools.groupby(ordered, key=lambda s: s.scene_id):
        items = list(group)
        count = -(-len(items) // most)
        bounds = [len(items) * k // count for k in range(count + 1)]
        pieces.extend(items[a:b] for a, b in itertools.pairwise(bounds))
    return sorted(pieces, key=len, reverse=True)


def execute(
    specs: list[EpisodeSpec],
    executor: Executor | PinnedProcesses,
    config: WorkerConfig,
    agent: Any,
) -> Iterator[dict[str, Any]]:
    """Records of every episode as they finish (one agent per worker, created once)."""
    workers = executor.workers
    if isinstance(executor, PinnedProcesses):
        yield from _execute_pinned(specs, executor, config)
        return
    if executor.kind == "ray":
        tasks = _tasks(specs, config.batch_size, workers)
        for records in actor_map(
            RayEpisodeWorker, (config, os.getcwd()), "run_task", tasks, executor
        ):
            yield from records
        return
    if workers <= 1:
        ordered = sorted(specs, key=lambda s: (s.scene_id, id_key(s.episode_id)))
        yield from EpisodeWorker(config, agent, kept_scenes()).run(ordered)
        return
    yield from _execute_pool(specs, workers, config)


def _execute_pinned(
    specs: list[EpisodeSpec], processes: PinnedProcesses, config: WorkerConfig
) -> Iterator[dict[str, Any]]:
    ordered = sorted(specs, key=lambda s: (s.scene_id, id_key(s.episode_id)))
    size = CHUNK * config.batch_size
    run = next(_RUNS)
    tasks = []
    for _, group in itertools.groupby(ordered, key=lambda s: s.scene_id):
        items = list(group)
        tasks += [(run, config, items[i : i + size]) for i in range(0, len(items), size)]
    homes = _homes(ordered, processes.workers)
    try:
        for records in processes.dispatch(_pinned_task, tasks, lambda t: homes[t[2][0].scene_id]):
            yield from records
    except BrokenProcessPool:
        raise ConfigError(_DIED) from None


_DIED = (
    "a worker process died (killed, or the agent ended the process); "
    "every finished episode is kept: run the same command again to resume"
)


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
    pending = {pool.submit(_pool_task, task) for task in _tasks(specs, config.batch_size, workers)}
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
                    raise ConfigError(_DIED) from None
    finally:
        for future in pending:
            future.cancel()
        while any(not f.done() for f in pending):
            while not records.empty():
                records.get()
            wait(pending, timeout=0.05)
        pool.shutdown(wait=True)
