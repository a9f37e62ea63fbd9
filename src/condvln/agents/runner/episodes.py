"""The split as the harness sees it: one :class:`EpisodeSpec` per episode, and its seeds.

The harness reads what the agent must not see — the test split's answers file for the step
budget and the oracle text — and hands the agent only part of each spec
(:class:`~condvln.agents.base.EpisodeView`). Every episode's seeds come from the run seed and
its id, so results depend neither on the worker count nor on the batch size.
"""

from __future__ import annotations

import hashlib
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from condvln.agents.base import EpisodeView
from condvln.dataset.schema import load_checked_split
from condvln.errors import ConfigError, ValidationError
from condvln.frames import quaternion_to_yaw
from condvln.sim.simulator import DEFAULT_BUDGET, Simulator
from condvln.vlnce import encode, split_path


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


def episode_seeds(seed: int, episode_id: int | str) -> tuple[int, int]:
    """``(perception_seed, agent_seed)`` of an episode, from the run seed and its id.

    >>> episode_seeds(0, 17) == episode_seeds(0, 17) != episode_seeds(1, 17)
    True
    """
    key = episode_id if isinstance(episode_id, int) else zlib.crc32(str(episode_id).encode())
    perception, agent = np.random.SeedSequence([seed, key]).generate_state(2)
    return int(perception), int(agent)


def episode_view(spec: EpisodeSpec, sim: Simulator, agent_seed: int) -> EpisodeView:
    """What the agent is told at ``reset``: the spec's public part and, as the simulator's
    protocol allows, the navigable map and the semantic table."""
    return EpisodeView(
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
    words = checked.doc["instruction_vocab"]["word_list"]
    vocab = {w: i for i, w in enumerate(words) if isinstance(w, str)}
    specs = []
    for ep, scene_file in zip(checked.episodes[:limit], checked.scene_files, strict=False):
        info = (ep.get("info") or {}).get("condvln") or {}
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


def id_key(episode_id: int | str) -> tuple[int, int, str]:
    """Sort key of episode ids: integers in order, then strings.

    >>> sorted([10, "b", 2, "a"], key=id_key)
    [2, 10, 'a', 'b']
    """
    return (0, episode_id, "") if isinstance(episode_id, int) else (1, 0, str(episode_id))
