"""The episode loop: one agent per worker for the whole run, B episodes stepped in lockstep.

An executor creates one :class:`EpisodeWorker` per process (or Ray actor) and hands it lists of
:class:`~condvln.agents.runner.episodes.EpisodeSpec`; the worker keeps a simulator per scene
and batch slot, resets the agent per episode and yields one trajectory record per finished
episode. Agent calls go through :mod:`~condvln.agents.runner.faults`, so a failing agent ends
only its episode. An agent with ``episode_notes(episode_id)`` adds what it returns (JSON data:
token usage, branch decisions, ...) to the episode's record as ``agent_notes``; records of other
agents are unchanged.

A process that serves several runs over the same scenes (the benchmark's) keeps its scenes'
navigators and distance fields between runs in a :class:`SceneCache`: every agent asks for the
same goals' fields, and most fields from where an agent stands are asked for again by the next
agent, which starts from the same place and often takes the same first steps.
"""

from __future__ import annotations

import reprlib
from collections import OrderedDict
from collections.abc import Generator, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from condvln.agents.base import (
    DEFAULT_STEP_TIMEOUT,
    is_batched,
    observation_format,
    prepare,
)
from condvln.agents.loader import load_agent
from condvln.agents.runner.episodes import EpisodeSpec, episode_seeds, episode_view
from condvln.agents.runner.faults import AgentFault, call_agent, valid_action
from condvln.errors import FormatError
from condvln.nav import GridNavigator
from condvln.nav.geodesic import FieldStore
from condvln.scene.serialize import load_scene
from condvln.sim.habitat_obs import habitat_observation
from condvln.sim.protocol import ObservationProtocol
from condvln.sim.simulator import Simulator, Trajectory


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
        step_timeout: Seconds an agent call may take (``None``: no limit; default 60).
        fail_fast: Stop the worker at the first failed episode.
    """

    agent: str
    agent_args: Mapping[str, Any]
    dataset_dir: Path
    protocol: ObservationProtocol
    seed: int
    batch_size: int = 1
    step_timeout: float | None = DEFAULT_STEP_TIMEOUT
    fail_fast: bool = False


FIELD_MEMORY = 768 << 20
"""Bytes of distance fields a :class:`SceneCache` keeps: about 3,000 fields of a procedural
house (0.25 MB each), what one of two processes asks for in the default benchmark's runs."""
KEPT_SCENES = 128
"""Navigators a :class:`SceneCache` keeps."""


class SceneCache:
    """Scenes' navigators that outlive a run, their fields in one :class:`FieldStore`.

    A field is a pure function of the scene and its seed, so reusing one changes no result.
    Scenes are known by their file (path, size and modification time); the least recently used
    navigator goes beyond ``scenes``, its fields with it.
    """

    def __init__(self, fields: int = FIELD_MEMORY, scenes: int = KEPT_SCENES) -> None:
        self.store = FieldStore(fields)
        self.scenes = scenes
        self._navigators: OrderedDict[tuple[str, int, int], GridNavigator] = OrderedDict()

    def navigator(self, path: Path) -> GridNavigator:
        """The navigator of the scene file at ``path`` (built on first use)."""
        stat = path.stat() if path.is_file() else None  # a missing file fails in load_scene
        key = (str(path), stat.st_size, stat.st_mtime_ns) if stat else (str(path), -1, -1)
        navigator = self._navigators.get(key)
        if navigator is None:
            navigator = self._navigators[key] = GridNavigator(load_scene(path), store=self.store)
            if len(self._navigators) > self.scenes:
                self.store.discard(self._navigators.popitem(last=False)[1])
        self._navigators.move_to_end(key)
        return navigator


_KEPT: SceneCache | None = None
"""This process's scene cache while :func:`keeping_scenes` is active (for good in a process
that serves many runs)."""


def kept_scenes() -> SceneCache | None:
    """The scene cache of this process's runs, or ``None`` (each run prepares its scenes)."""
    return _KEPT


@contextmanager
def keeping_scenes() -> Iterator[SceneCache]:
    """Within the block, runs in this process keep their scenes' navigators and distance fields
    for the next run (:class:`SceneCache`); they are dropped at the end."""
    global _KEPT
    outer = _KEPT
    _KEPT = outer or SceneCache()
    try:
        yield _KEPT
    finally:
        _KEPT = outer


def keep_scenes_for_good() -> SceneCache:
    """This process's scene cache from now on (a process that serves many runs)."""
    global _KEPT
    _KEPT = _KEPT or SceneCache()
    return _KEPT


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
        scenes: Where navigators come from and stay after the run (default: built per run).
    """

    def __init__(
        self, config: WorkerConfig, agent: Any = None, scenes: SceneCache | None = None
    ) -> None:
        self.config = config
        if agent is None:
            agent = load_agent(config.agent, config.agent_args, step_timeout=config.step_timeout)
        self.agent = agent
        prepare(self.agent, config.dataset_dir)
        self.batched = is_batched(self.agent)
        self.batch_size = config.batch_size if self.batched else 1
        self.habitat = observation_format(self.agent) == "habitat"
        self.scenes = scenes
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
                self._navigators[scene_id] = (
                    self.scenes.navigator(path) if self.scenes else GridNavigator(load_scene(path))
                )
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
        view = episode_view(spec, sim, agent_seed)
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
    """The JSONL record of one episode (the runner adds ``status``, on failure ``reason``, and
    ``agent_notes`` when the agent has ``episode_notes``)."""
    return {
        "episode_id": episode_id,
        "positions": [list(p) for p in traj.positions],
        "headings": list(traj.headings),
        "actions": list(traj.actions),
        "stop": traj.stop,
        "steps": len(traj.actions),
        "agent": agent_name,
    }
