"""Executors: run independent tasks in local processes or on a Ray cluster, in a fixed order.

The shapes of work in the pipeline:

* :func:`ordered_map` — a pure function over items (generation: one task per scene; evaluation:
  one task per scene's episodes). Results come back in input order for every executor, so the
  outputs are byte-identical to a one-process run.
* :class:`PinnedProcesses` — local processes kept for several :func:`ordered_map` calls, each
  item always on the same process (by a key), so a process can keep what it computed for its
  items between calls (generation's sampling rounds keep each scene's distance fields).
* :func:`in_background` — one call started in another local process while the caller goes on
  (``evaluate`` reads the predictions there while it reads the split).
* :func:`actor_map` — stateful workers built once (``condvln run``: one agent per worker, Ray
  actors with ``--agent-resources``) that each take tasks; results come back as tasks finish and
  the caller sorts them.

Ray is optional (``pip install "condvln[ray]"``) and imported only when asked for. Without
``address`` a private local cluster of ``workers`` CPUs is started and shut down afterwards;
``address="auto"`` or ``"HOST:PORT"`` joins an existing one (``ray start --head`` on the head
node, ``ray start --address HEAD:6379`` on the others). Inside :func:`one_ray_session` (every
``condvln`` command, :func:`~condvln.benchmark.run_benchmark`) the stages share one session,
started by the first and shut down when the block ends, so a command pays Ray's start-up and
its workers' imports once, not once per stage. An already initialised Ray session (for
example one a test or notebook opened with ``ray.init``) is reused and left running. Tasks and
actors killed with their node are retried (:data:`RETRIES`). Ray tasks and actors work in the
caller's current folder when it exists on their node, so relative paths (``--input``,
``file.py:Class`` agents, ``module:Class`` agents of the current folder) mean the same there.
"""

from __future__ import annotations

import importlib
import logging
import multiprocessing
import os
import signal
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal, TypeVar

import orjson

from condvln.errors import ConfigError

T = TypeVar("T")
R = TypeVar("R")

KINDS = ("local", "ray")
RETRIES = 3
"""Times a Ray task (or a dead actor's task, after the actor restarts) is retried."""

RESOURCE_KEYS = ("num_cpus", "num_gpus", "memory", "resources", "accelerator_type")
"""Keys ``--agent-resources`` may set (Ray actor options)."""


@dataclass(frozen=True)
class Executor:
    """Where tasks run.

    Attributes:
        kind: ``"local"`` (this process, or a process pool) or ``"ray"``.
        workers: Parallel workers (processes, or Ray actors / CPUs of a private cluster).
        address: Ray cluster to join (``"auto"``, ``"HOST:PORT"``); ``None`` starts a private
            local one.
        agent_resources: Ray options of each agent actor (default ``{"num_cpus": 1}``), e.g.
            ``{"num_gpus": 1}`` so one model sits on each GPU.
    """

    kind: Literal["local", "ray"] = "local"
    workers: int = 1
    address: str | None = None
    agent_resources: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ConfigError(f"unknown executor {self.kind!r}; choose one of {', '.join(KINDS)}")
        if self.workers < 1:
            raise ConfigError(f"workers must be at least 1, got {self.workers}")
        unknown = sorted(set(self.agent_resources) - set(RESOURCE_KEYS))
        if unknown:
            raise ConfigError(
                f"agent resources: unknown key {unknown[0]!r} (allowed: {', '.join(RESOURCE_KEYS)})"
            )
        if self.kind == "local" and (self.address or self.agent_resources):
            raise ConfigError("--ray-address and --agent-resources need --executor ray")

    @classmethod
    def of(cls, value: int | Executor) -> Executor:
        """``value`` itself, or a local executor of ``value`` workers."""
        return value if isinstance(value, Executor) else cls(workers=max(int(value), 1))


def default_workers() -> int:
    """All cores this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def parse_resources(text: str | None) -> dict[str, Any]:
    """``--agent-resources`` JSON (an object of Ray actor options), or ``{}``.

    >>> parse_resources('{"num_gpus": 1}')
    {'num_gpus': 1}
    """
    if not text:
        return {}
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise ConfigError(f"--agent-resources is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ConfigError(f"--agent-resources must be a JSON object, got {text!r}")
    return value


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ConfigError('the Ray executor needs Ray: pip install "condvln[ray]"') from None
    return ray


class _EarlyStart:
    """A Ray session that a background thread starts (:func:`start_ray_early`).

    The thread lives as long as the session: Ray ties the life of the processes it starts to
    the thread that started them (``PR_SET_PDEATHSIG``), so a thread that ended would take the
    cluster down with it. :meth:`end` lets it finish once the session is shut down.
    """

    def __init__(self, executor: Executor, modules: Sequence[str]) -> None:
        self.key = (executor.address, executor.workers)
        self.started = False
        self._warming: list[Any] = []  # the workers' imports (kept until the session ends)
        self._ready = threading.Event()
        self._released = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(executor, modules), name="condvln-ray-start", daemon=True
        )
        self._thread.start()

    def _run(self, executor: Executor, modules: Sequence[str]) -> None:
        try:
            ray = _import_ray()
            logging.getLogger("ray._private.worker").addFilter(_NotMainThreadWarning())
            try:
                _start_ray(ray, executor)
            except Exception:  # tried again by the first stage, which reports it
                ray.shutdown()
                raise
            if modules:  # not awaited: the stages' first tasks queue behind these
                task = ray.remote(num_cpus=1, max_retries=0)(_import_modules)
                self._warming = [task.remote(modules) for _ in range(executor.workers)]
            self.started = True
        except Exception:  # a failed start is retried in the main thread
            pass
        finally:
            self._ready.set()
        if self.started:
            self._released.wait()

    def wait(self) -> bool:
        """Wait until the session is up; whether it started."""
        self._ready.wait()
        return self.started

    def end(self) -> None:
        """Let the thread finish (after the session was shut down, or failed to start)."""
        self._released.set()
        self._thread.join()


def _import_modules(names: Sequence[str]) -> None:
    """Import ``names`` (in a Ray worker, before the stages' tasks need them)."""
    for name in names:
        importlib.import_module(name)


class _NotMainThreadWarning(logging.Filter):
    """Drops Ray's warning that ``ray.init`` outside the main thread set no SIGTERM handler
    (:func:`start_ray_early` sets one)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("SIGTERM handler is not set")


@dataclass
class _Held:
    """The session :func:`one_ray_session` keeps: how deep the blocks are nested, the
    ``(address, workers)`` of the session this module started inside them (``None``: none), and
    the start :func:`start_ray_early` began."""

    depth: int = 0
    key: tuple[str | None, int] | None = None
    early: _EarlyStart | None = None


_HELD = _Held()


def start_ray_early(executor: Executor, modules: Sequence[str] = ()) -> None:
    """Begin starting ``executor``'s Ray session in a background thread, inside
    :func:`one_ray_session`.

    The command goes on meanwhile (importing its modules, reading its settings and input) while
    Ray's processes come up, which is most of Ray's fixed cost; its first Ray stage waits for the
    session and takes it over. Each of its workers imports ``modules`` meanwhile, the modules
    the stages' tasks need, which the first tasks would otherwise wait for. A session started
    for other settings is shut down by that stage; a start that failed is tried again there,
    where its error is reported. Outside the block, for a local executor, or with a session
    already held or starting, this does nothing.
    """
    if executor.kind != "ray" or not _HELD.depth or _HELD.key or _HELD.early:
        return
    if threading.current_thread() is threading.main_thread():
        # what ray.init does in the main thread: SIGTERM unwinds, so the session is shut down
        signal.signal(signal.SIGTERM, _exit_on_sigterm)
    _HELD.early = _EarlyStart(executor, modules)


def _exit_on_sigterm(signum: int, frame: object) -> None:
    sys.exit(signum)


def _take_early_start() -> None:
    """Hold the session :func:`start_ray_early` started, once it is up (or forget a failed one)."""
    early = _HELD.early
    if early is None or _HELD.key is not None:
        return
    if early.wait():
        _HELD.key = early.key
    else:
        early.end()
        _HELD.early = None


def _shut_down_held(ray: Any) -> None:
    """Shut the held session down (and end the thread that started it, if one did)."""
    _HELD.key = None
    _shut_down(ray)
    if _HELD.early is not None:
        _HELD.early.end()
        _HELD.early = None


def _shut_down(ray: Any) -> None:
    """``ray.shutdown()``, the private cluster's autoscaler monitor stopped first.

    Ray stops the GCS before the monitor, whose SIGTERM handler then waits to report to the
    stopped GCS until Ray kills it a second later (1 s of every command's 1.3 s shutdown on
    Ray 2.60). Killing it first ends the same way without the wait. Joining a running cluster
    started no monitor here, so nothing is killed.
    """
    _kill_monitor()
    ray.shutdown()


def _kill_monitor() -> None:
    """SIGKILL the autoscaler monitor ``ray.init`` started in this process, if any. It reads
    Ray's internal node record; anything unexpected there leaves it to ``ray.shutdown()``."""
    try:
        from ray._private import worker

        node = worker._global_node
        monitors = node.all_processes.get("monitor", []) if node and node.is_head() else []
        for info in monitors:
            info.process.kill()
            info.process.wait(timeout=1)
    except Exception:  # Ray's internals moved: the normal shutdown still stops it
        return


@contextmanager
def one_ray_session() -> Iterator[None]:
    """Let every Ray stage inside this block share one session.

    The first stage on Ray starts it (or takes over the one :func:`start_ray_early` started);
    the stages after it with the same address and workers reuse it (and its worker processes,
    which have already imported CondVLN); the end of the outermost block shuts it down. Without
    Ray stages inside, this does nothing.
    """
    _HELD.depth += 1
    try:
        yield
    finally:
        _HELD.depth -= 1
        if _HELD.depth == 0:
            _take_early_start()
            if _HELD.key is not None:
                _shut_down_held(_import_ray())


def _start_ray(ray: Any, executor: Executor) -> None:
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
    try:
        if executor.address:
            ray.init(address=executor.address, **options)
        else:
            ray.init(num_cpus=executor.workers, **options)
    except (ConnectionError, ValueError, RuntimeError) as exc:
        where = executor.address or "a local cluster"
        raise ConfigError(f"cannot start Ray on {where}: {' '.join(str(exc).split())}") from None


@contextmanager
def ray_session(executor: Executor) -> Iterator[Any]:
    """The ``ray`` module with a connected session: one already open (left running), the one
    :func:`one_ray_session` holds, or one started here and shut down afterwards."""
    _take_early_start()
    ray = _import_ray()
    key = (executor.address, executor.workers)
    if ray.is_initialized() and _HELD.key not in (None, key):
        _shut_down_held(ray)  # the held session was started for another cluster or size
    if ray.is_initialized():
        yield ray
        return
    _start_ray(ray, executor)
    if _HELD.depth:
        _HELD.key = key
        yield ray
        return
    try:
        yield ray
    finally:
        _shut_down(ray)


def _raise_ray_error(ray: Any, exc: Exception) -> None:
    """Turn a Ray failure into a :class:`ConfigError` (a task's own error keeps its message)."""
    if isinstance(exc, ray.exceptions.RayTaskError) and exc.cause is not None:
        cause = exc.cause
        if isinstance(cause, ConfigError):
            raise ConfigError(str(cause)) from None
        raise ConfigError(f"a Ray task failed: {type(cause).__name__}: {cause}") from None
    raise ConfigError(
        f"a Ray worker died {RETRIES + 1} times ({type(exc).__name__}); "
        "finished work is kept: run the same command again to resume"
    ) from None


class PinnedProcesses:
    """``workers`` local processes that outlive one :func:`ordered_map` call: an item whose
    key is ``k`` always runs on process ``k % workers``, so state a process keeps for an item
    (a module-level cache) is found again by the item's next task. Use as a context manager;
    the processes end with the block.

    The price is static load balance: a process takes its items whatever the others have
    left (a plain process pool hands the next item to whichever process is free).
    """

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._pools = [ProcessPoolExecutor(max_workers=1) for _ in range(workers)]

    def __enter__(self) -> PinnedProcesses:
        return self

    def __exit__(self, *exc: object) -> None:
        for pool in self._pools:
            pool.shutdown(wait=True, cancel_futures=True)

    def map(
        self,
        function: Callable[[T], R],
        items: Sequence[T],
        key: Callable[[T], int] | None = None,
        on_done: Callable[[], None] | None = None,
    ) -> Iterator[R]:
        """``map(function, items)`` in input order, ``item`` on process ``key(item) % workers``
        (default key: the item's position)."""
        futures = deque(
            self._pools[(i if key is None else key(item)) % self.workers].submit(function, item)
            for i, item in enumerate(items)
        )
        try:
            while futures:
                result = futures[0].result()
                futures.popleft()  # a result is held no longer than the caller holds it
                yield result
                if on_done:
                    on_done()
        finally:
            for future in futures:  # stopped early (an error, a closed generator)
                future.cancel()

    def dispatch(
        self, function: Callable[[T], R], items: Sequence[T], home: Callable[[T], int]
    ) -> Iterator[R]:
        """``function(item)`` for every item, results in the order they finish.

        Each process works through its own items (``home(item) % workers``, in input order),
        then takes over the last items of whichever process has the most left, so an item
        meets the state its home process kept unless that process fell behind.

        >>> with PinnedProcesses(2) as processes:
        ...     sorted(processes.dispatch(abs, [-3, 1, -2, 4], home=lambda x: x > 0))
        [1, 2, 3, 4]
        """
        queues: list[deque[T]] = [deque() for _ in self._pools]
        for item in items:
            queues[home(item) % self.workers].append(item)
        running: dict[Future[R], int] = {}

        def feed(process: int) -> None:
            own = queues[process]
            other = max(queues, key=len)
            if own or other:
                item = own.popleft() if own else other.pop()
                running[self._pools[process].submit(function, item)] = process

        try:
            for process in range(self.workers):
                feed(process)
            while running:
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    result = future.result()
                    feed(running.pop(future))
                    yield result
        finally:  # stopped early: each process finishes its item before it serves another call
            for future in running:
                future.cancel()
            wait(running)


@contextmanager
def pinned(
    executor: int | Executor | PinnedProcesses,
) -> Iterator[int | Executor | PinnedProcesses]:
    """:class:`PinnedProcesses` for the block when ``executor`` means several local processes;
    otherwise ``executor`` itself (one process, Ray, or processes already pinned)."""
    workers = fresh_local_workers(executor)
    if not workers:
        yield executor
        return
    with PinnedProcesses(workers) as processes:
        yield processes


def fresh_local_workers(executor: int | Executor | PinnedProcesses) -> int:
    """The local processes ``executor`` would start afresh: its workers when it means two or
    more local processes, else 0 (one process, Ray, or processes already pinned).

    >>> fresh_local_workers(2), fresh_local_workers(1), fresh_local_workers(Executor("ray", 2))
    (2, 0, 0)
    """
    if isinstance(executor, PinnedProcesses):
        return 0
    plain = Executor.of(executor)
    return plain.workers if plain.kind == "local" and plain.workers > 1 else 0


@contextmanager
def in_background(
    function: Callable[[T], R], item: T, executor: int | Executor | PinnedProcesses
) -> Iterator[Callable[[], R]]:
    """A getter of ``function(item)``, which starts at once in another local process when
    ``executor`` means several local processes (so the caller's own work overlaps it) and
    elsewhere runs in this process when first asked for. The getter returns the result, or
    raises what ``function`` raised; a forked process ends with the block.

    >>> with in_background(sorted, [3, 1, 2], 1) as result:
    ...     result()
    [1, 2, 3]
    """
    if isinstance(executor, PinnedProcesses):
        several = executor.workers > 1
    else:
        several = fresh_local_workers(executor) > 0
    if not several:
        computed: list[R] = []

        def here() -> R:
            if not computed:
                computed.append(function(item))
            return computed[0]

        yield here
        return
    with ProcessPoolExecutor(max_workers=1) as process:
        yield process.submit(function, item).result


def ordered_map(
    function: Callable[[T], R],
    items: Sequence[T],
    executor: int | Executor | PinnedProcesses = 1,
    on_done: Callable[[], None] | None = None,
    key: Callable[[T], int] | None = None,
) -> Iterator[R]:
    """``map(function, items)`` on ``executor``, yielding results in input order.

    ``function`` must be importable by module and name (a module-level function), and results
    picklable. Forked local workers inherit the items (a task names an item by its position);
    elsewhere each item is pickled to the worker that takes it, so it must be picklable. On
    :class:`PinnedProcesses`, ``key(item)`` chooses the process (default: the item's position).
    """
    if isinstance(executor, PinnedProcesses):
        yield from executor.map(function, items, key, on_done)
        return
    executor = Executor.of(executor)
    if executor.kind == "ray":
        yield from _ray_ordered_map(function, items, executor, on_done)
        return
    if executor.workers <= 1:
        results: Iterator[R] = map(function, items)
        for result in results:
            yield result
            if on_done:
                on_done()
        return
    forked = multiprocessing.get_start_method() == "fork"
    with ProcessPoolExecutor(
        max_workers=executor.workers,
        initializer=_keep_items if forked else None,
        initargs=(items,) if forked else (),
    ) as pool:
        if forked:
            results = pool.map(partial(_call_on_kept, function), range(len(items)), chunksize=1)
        else:
            results = pool.map(function, items, chunksize=1)
        for result in results:
            yield result
            if on_done:
                on_done()


_KEPT: Sequence[Any] = ()
"""A forked pool worker's items (:func:`ordered_map`)."""


def _keep_items(items: Sequence[Any]) -> None:
    """Keep ``items`` in this pool worker (its initializer, given them when it forked)."""
    global _KEPT
    _KEPT = items


def _call_on_kept(function: Callable[[T], R], index: int) -> R:
    """``function`` of the kept item ``index`` (a forked pool worker's task)."""
    return function(_KEPT[index])


def follow_cwd(cwd: str) -> None:
    """Work in the caller's folder ``cwd`` (in a Ray worker; skipped where it does not exist)."""
    if os.path.isdir(cwd):
        os.chdir(cwd)


def _call_in(cwd: str, function: Callable[[T], R], item: T) -> R:
    """``function(item)`` in the folder ``cwd`` (the Ray task of :func:`ordered_map`)."""
    follow_cwd(cwd)
    return function(item)


def _ray_ordered_map(
    function: Callable[[T], R],
    items: Sequence[T],
    executor: Executor,
    on_done: Callable[[], None] | None,
) -> Iterator[R]:
    with ray_session(executor) as ray:
        remote = ray.remote(_call_in).options(num_cpus=1, max_retries=RETRIES)
        cwd = os.getcwd()
        refs = [remote.remote(cwd, function, item) for item in items]
        done = 0
        try:
            for index, ref in enumerate(refs):
                done = index + 1
                try:
                    result = ray.get(ref)
                except ray.exceptions.RayError as exc:
                    _raise_ray_error(ray, exc)
                yield result
                if on_done:
                    on_done()
        finally:
            for ref in refs[done:]:  # stopped early: drop the tasks not gathered (no force)
                ray.cancel(ref)


def actor_map(
    worker_class: type,
    init_args: tuple[Any, ...],
    method: str,
    tasks: Sequence[Any],
    executor: Executor,
) -> Iterator[Any]:
    """Results of ``worker.method(task)`` for every task, as tasks finish, on Ray actors.

    ``executor.workers`` actors of ``worker_class(*init_args)`` are created once, or one per
    task when there are fewer tasks (an actor no task would reach is never started: each
    builds an agent, which may load a model). Call :func:`follow_cwd` first in ``__init__``
    with the caller's folder among its arguments; options ``executor.agent_resources``, default
    one CPU each. Actors are fed tasks two at a time, so each stays busy. An actor whose process
    dies is restarted and its tasks retried (:data:`RETRIES`); the actors are killed at the end.
    """
    with ray_session(executor) as ray:
        resources = dict(executor.agent_resources) or {"num_cpus": 1}
        actor_class = ray.remote(worker_class).options(
            max_restarts=RETRIES, max_task_retries=RETRIES, **resources
        )
        actors = [actor_class.remote(*init_args) for _ in range(min(executor.workers, len(tasks)))]
        queue = deque(tasks)
        inflight: dict[Any, Any] = {}

        def submit(actor: Any) -> None:
            if queue:
                inflight[getattr(actor, method).remote(queue.popleft())] = actor

        try:
            for actor in actors * 2:
                submit(actor)
            while inflight:
                ready, _ = ray.wait(list(inflight), num_returns=1)
                actor = inflight.pop(ready[0])
                try:
                    result = ray.get(ready[0])
                except ray.exceptions.RayError as exc:
                    _raise_ray_error(ray, exc)
                submit(actor)
                yield result
        finally:
            for actor in actors:
                ray.kill(actor, no_restart=True)
