"""``condvln run``: run an agent on a dataset split in the built-in simulator.

The runner is the harness: it reads the episodes (and, for the test split, the answers file for
the step budget and the oracle text — the agent never sees them), builds one simulator per scene,
and records every episode. A run folder holds::

    manifest.json        agent, instruction source, protocol (+ hash), dataset path + hash,
                         split, seed, condvln version, episode count
    trajectories.jsonl   one line per episode: {"episode_id", "positions", "headings",
                         "actions", "stop", "steps", "agent"}; len(positions) == len(actions) + 1
    predictions.json     VLN-CE leaderboard form {"<episode_id>": [{"position", "heading",
                         "stop"}, ...]}

Episodes run in parallel (processes; tasks are chunks of episodes of one scene, so a worker
loads a scene and builds its navigator once). Every episode's seeds come from ``(seed,
episode_id)``, so results do not depend on the worker count; at the end the trajectories are
rewritten sorted by episode id, so the files are byte-identical too. Each finished episode is
appended as one flushed line: an interrupted run resumes where it stopped.
"""

from __future__ import annotations

import hashlib
import itertools
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from condvln import __version__
from condvln.agents.base import EpisodeView, agent_factory, instruction_source
from condvln.agents.blind import prepare
from condvln.dataset.vlnce import load_split, split_path
from condvln.errors import ConfigError, FormatError, ValidationError
from condvln.frames import quaternion_to_yaw
from condvln.io import atomic_write_bytes, dumps_json, read_json
from condvln.scene.serialize import load_scene
from condvln.sim.protocol import ObservationProtocol, parse_protocol
from condvln.sim.simulator import DEFAULT_BUDGET, Simulator, Trajectory

CHUNK = 8
"""Episodes per parallel task (all of one scene)."""

TRAJECTORIES = "trajectories.jsonl"
PREDICTIONS = "predictions.json"
MANIFEST = "manifest.json"

_MANIFEST_KEYS = ("agent", "protocol", "dataset_hash", "split", "seed")
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
    """

    episode_id: int | str
    scene_id: str
    start_position: tuple[float, float, float]
    start_yaw: float
    instruction: str
    step_budget: int


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


def episode_seeds(seed: int, episode_id: int | str) -> tuple[int, int]:
    """``(perception_seed, agent_seed)`` of an episode, from the run seed and its id.

    >>> episode_seeds(0, 17) == episode_seeds(0, 17) != episode_seeds(1, 17)
    True
    """
    key = episode_id if isinstance(episode_id, int) else zlib.crc32(str(episode_id).encode())
    perception, agent = np.random.SeedSequence([seed, key]).generate_state(2)
    return int(perception), int(agent)


# --- reading the split ---------------------------------------------------------------------------


def _condvln_info(episode: Mapping[str, Any], answers: Mapping[str, Any]) -> Mapping[str, Any]:
    info = episode.get("info") or answers.get(str(episode["episode_id"]), {}).get("info") or {}
    return info.get("condvln") or {}


def episode_specs(
    dataset_dir: Path, split: str, source: str, limit: int | None = None
) -> list[EpisodeSpec]:
    """The split's episodes as harness specs, in file order (the first ``limit``).

    Budgets and oracle texts come from ``info.condvln`` (test: the answers file); the budget
    defaults to :data:`DEFAULT_BUDGET`.

    Raises:
        ValidationError: An oracle agent on an episode without an oracle instruction.
    """
    episodes = load_split(dataset_dir, split)["episodes"][:limit]
    answers_file = split_path(dataset_dir, split, "_answers")
    answers = read_json(answers_file, FormatError) if answers_file.is_file() else {}
    specs = []
    for ep in episodes:
        info = _condvln_info(ep, answers)
        text = ep["instruction"]["instruction_text"]
        if source == "oracle":
            text = info.get("oracle_instruction")
            if not isinstance(text, str):
                raise ValidationError(f"{split}: episode {ep['episode_id']}: no oracle instruction")
        specs.append(
            EpisodeSpec(
                episode_id=ep["episode_id"],
                scene_id=ep["scene_id"],
                start_position=tuple(float(c) for c in ep["start_position"]),  # type: ignore[arg-type]
                start_yaw=quaternion_to_yaw(ep["start_rotation"]),
                instruction=text,
                step_budget=int(info.get("step_budget", DEFAULT_BUDGET)),
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


def run_episode(
    sim: Simulator, agent: Any, spec: EpisodeSpec, seed: int, agent_name: str
) -> dict[str, Any]:
    """Run one episode of ``agent`` in ``sim``; returns its trajectory record."""
    perception_seed, agent_seed = episode_seeds(seed, spec.episode_id)
    obs = sim.reset(
        spec.start_position,
        spec.start_yaw,
        instruction=spec.instruction,
        step_budget=spec.step_budget,
        seed=perception_seed,
    )
    protocol = sim.protocol
    agent.reset(
        EpisodeView(
            episode_id=spec.episode_id,
            scene_id=spec.scene_id,
            instruction=spec.instruction,
            step_budget=spec.step_budget,
            protocol=protocol,
            map=sim.map_view() if protocol.map_access else None,
            seed=agent_seed,
        )
    )
    while not sim.done:
        obs = sim.step(agent.act(obs))
    return trajectory_record(spec.episode_id, sim.trajectory(), agent_name)


def trajectory_record(episode_id: int | str, traj: Trajectory, agent_name: str) -> dict[str, Any]:
    """The JSONL record of one episode."""
    return {
        "episode_id": episode_id,
        "positions": [list(p) for p in traj.positions],
        "headings": list(traj.headings),
        "actions": list(traj.actions),
        "stop": traj.stop,
        "steps": len(traj.actions),
        "agent": agent_name,
    }


_SIMULATORS: dict[str, Simulator] = {}
"""Per-process cache: the simulator of the scene this worker ran last."""


def _simulator(dataset_dir: Path, scene_id: str, protocol: ObservationProtocol) -> Simulator:
    key = f"{dataset_dir}|{scene_id}|{protocol.protocol_hash()}"
    if key not in _SIMULATORS:
        _SIMULATORS.clear()
        _SIMULATORS[key] = Simulator(load_scene(dataset_dir / scene_id), protocol)
    return _SIMULATORS[key]


def run_chunk(
    agent_name: str,
    dataset_dir: Path,
    protocol: ObservationProtocol,
    seed: int,
    specs: list[EpisodeSpec],
) -> list[dict[str, Any]]:
    """Run episodes of one scene (a parallel task)."""
    agent = agent_factory(agent_name)()
    prepare(agent, dataset_dir)
    sim = _simulator(dataset_dir, specs[0].scene_id, protocol)
    return [run_episode(sim, agent, spec, seed, agent_name) for spec in specs]


def _chunks(specs: Iterable[EpisodeSpec]) -> list[list[EpisodeSpec]]:
    ordered = sorted(specs, key=lambda s: (s.scene_id, _id_key(s.episode_id)))
    chunks = []
    for _, group in itertools.groupby(ordered, key=lambda s: s.scene_id):
        items = list(group)
        chunks.extend(items[i : i + CHUNK] for i in range(0, len(items), CHUNK))
    return chunks


def _execute(
    chunks: list[list[EpisodeSpec]], workers: int, args: tuple[Any, ...]
) -> Iterator[dict[str, Any]]:
    """Records of every chunk's episodes, as they finish."""
    if workers <= 1:
        agent_name, dataset_dir, protocol, seed = args
        agent = agent_factory(agent_name)()
        prepare(agent, dataset_dir)
        for chunk in chunks:
            sim = _simulator(dataset_dir, chunk[0].scene_id, protocol)
            for spec in chunk:
                yield run_episode(sim, agent, spec, seed, agent_name)
        return
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(run_chunk, *args, chunk) for chunk in chunks]
        for future in as_completed(futures):
            yield from future.result()


# --- the run folder ------------------------------------------------------------------------------


def _id_key(episode_id: int | str) -> tuple[int, int, str]:
    return (0, episode_id, "") if isinstance(episode_id, int) else (1, 0, str(episode_id))


def read_trajectories(path: Path) -> list[dict[str, Any]]:
    """Records of a trajectories file; a torn last line (interrupted write) is cut off."""
    if not path.is_file():
        return []
    data = path.read_bytes()
    records, good = [], 0
    for line in data.splitlines(keepends=True):
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            break
        if not line.endswith(b"\n"):
            break
        records.append(record)
        good += len(line)
    if good < len(data):
        with path.open("r+b") as fh:
            fh.truncate(good)
    return records


def _check_manifest(out_dir: Path, manifest: dict[str, Any]) -> None:
    path = out_dir / MANIFEST
    if not path.is_file():
        return
    old = read_json(path, FormatError)
    for key in _MANIFEST_KEYS:
        if old.get(key) != manifest[key]:
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
    records = sorted(
        read_trajectories(out_dir / TRAJECTORIES), key=lambda r: _id_key(r["episode_id"])
    )
    lines = b"".join(orjson.dumps(r) + b"\n" for r in records)
    atomic_write_bytes(out_dir / TRAJECTORIES, lines)
    atomic_write_bytes(out_dir / PREDICTIONS, dumps_json(predictions(records)))


def run_agent(
    agent_name: str,
    dataset_dir: str | Path,
    split: str,
    out_dir: str | Path,
    *,
    protocol: ObservationProtocol | Mapping[str, Any] | None = None,
    seed: int = 0,
    workers: int = 1,
    resume: bool = True,
    limit: int | None = None,
    progress: Progress | None = None,
) -> RunSummary:
    """Run ``agent_name`` on ``split`` of the dataset at ``dataset_dir`` into ``out_dir``.

    Args:
        agent_name: A registered agent name or ``"module:Class"``.
        dataset_dir: The dataset folder (``condvln generate`` output).
        split: Split name.
        out_dir: The run folder (created).
        protocol: The observation protocol (defaults when omitted).
        seed: Run seed; each episode's seeds derive from ``(seed, episode_id)``.
        workers: Parallel processes (1 runs in this process).
        resume: Skip episodes already in ``out_dir``; ``False`` starts over.
        limit: Run only the first ``limit`` episodes of the split.
        progress: Called as ``progress(done, total)`` after each episode.

    Returns:
        The :class:`RunSummary`.

    Raises:
        ConfigError: Unknown agent, invalid protocol, or a resume whose settings differ.
        FormatError: Unreadable dataset files.
    """
    started = time.perf_counter()
    dataset_dir, out_dir = Path(dataset_dir).resolve(), Path(out_dir)
    proto = parse_protocol(protocol)
    source = instruction_source(agent_factory(agent_name)())
    specs = episode_specs(dataset_dir, split, source, limit)
    manifest = {
        "agent": agent_name,
        "instruction_source": source,
        "protocol": proto.model_dump(mode="json"),
        "protocol_hash": proto.protocol_hash(),
        "dataset": str(dataset_dir),
        "dataset_hash": dataset_hash(dataset_dir, split),
        "split": split,
        "seed": seed,
        "seeds": "per episode: numpy SeedSequence([seed, episode_id]) -> (perception, agent)",
        "episodes": len(specs),
        "condvln_version": __version__,
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    if resume:
        _check_manifest(out_dir, manifest)
    else:
        for name in (TRAJECTORIES, PREDICTIONS):
            (out_dir / name).unlink(missing_ok=True)
    atomic_write_bytes(out_dir / MANIFEST, dumps_json(manifest, indent=True))
    done = {str(r["episode_id"]) for r in read_trajectories(out_dir / TRAJECTORIES)}
    pending = [s for s in specs if str(s.episode_id) not in done]
    skipped = len(specs) - len(pending)
    count, stopped, steps = skipped, 0, 0
    if progress is not None and skipped:
        progress(count, len(specs))
    args = (agent_name, dataset_dir, proto, seed)
    with (out_dir / TRAJECTORIES).open("ab") as fh:
        for record in _execute(_chunks(pending), workers, args):
            fh.write(orjson.dumps(record) + b"\n")
            fh.flush()
            count += 1
            stopped += int(record["stop"])
            steps += record["steps"]
            if progress is not None:
                progress(count, len(specs))
    _finalise(out_dir)
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
    )
