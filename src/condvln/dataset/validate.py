"""``condvln validate``: check a dataset folder from its files alone.

For every split: the habitat-lab schema (exactly the ``VLNEpisode`` keys, extras only under
``info``), finite numbers everywhere, tokens that re-encode the text with the split's vocabulary,
every label re-derived by the independent checker (:mod:`condvln.program.verify`) from the
stored program, the scene file and the stamped relation config, goals and subgoals at their
objects' approach points and reachable, the stored geodesic distance re-measured, the reference
path running start → goal no shorter than the geodesic, and the ground-truth actions' VLN-CE
invariants. Each problem names the split, the episode and the field.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from condvln.dataset.episode import (
    EPISODE_KEYS,
    INSTRUCTION_KEYS,
    OPTIONAL_EPISODE_KEYS,
    TEST_EPISODE_KEYS,
)
from condvln.dataset.vlnce import (
    available_splits,
    encode,
    load_scene_index,
    load_split,
    scene_json_path,
    split_path,
)
from condvln.errors import CondVLNError, FormatError
from condvln.graph import RelationConfig
from condvln.io import read_json
from condvln.nav import GridNavigator
from condvln.program.ast import program_from_dict
from condvln.program.verify import verify_labels
from condvln.scene.model import Scene
from condvln.scene.serialize import load_scene

POSITION_TOLERANCE = 1e-6
"""Stored goal positions must equal the recomputed approach points this closely (m)."""

GEODESIC_TOLERANCE = 0.05
"""Re-measured geodesic distances may differ by this much (m) or 1 %, whichever is larger."""


@dataclass
class ValidationReport:
    """Problems found and what was checked."""

    problems: list[str] = field(default_factory=list)
    episodes: Counter[str] = field(default_factory=Counter)

    @property
    def ok(self) -> bool:
        """True when nothing is wrong."""
        return not self.problems


def _non_finite(value: Any, path: str = "") -> Iterator[str]:
    """Dotted paths of every NaN / inf number inside ``value``."""
    if isinstance(value, float):
        if not math.isfinite(value):
            yield path or "value"
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _non_finite(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _non_finite(item, f"{path}[{i}]")


class _SceneCache:
    """Scenes and navigators of a dataset, loaded once each."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._index: dict[str, str] | None = None
        self._items: dict[Path, tuple[Scene, GridNavigator]] = {}

    def get(self, ep: dict[str, Any]) -> tuple[Scene, GridNavigator]:
        if self._index is None:
            self._index = load_scene_index(self.root)
        path = scene_json_path(self.root, ep, self._index)
        if path not in self._items:
            scene = load_scene(path)
            self._items[path] = (scene, GridNavigator(scene))
        return self._items[path]


def _near(a: Any, b: Any, tol: float = POSITION_TOLERANCE) -> bool:
    return len(a) == len(b) and all(
        abs(float(x) - float(y)) <= tol for x, y in zip(a, b, strict=False)
    )


def _check_schema(ep: dict[str, Any], test: bool) -> list[tuple[str, str]]:
    keys = TEST_EPISODE_KEYS if test else EPISODE_KEYS
    problems = [(k, "missing") for k in keys if k not in ep]
    problems += [
        (k, "not a habitat-lab VLNEpisode field")
        for k in ep
        if k not in keys and k not in OPTIONAL_EPISODE_KEYS
    ]
    if test:  # the answers live in test_answers.json.gz only
        problems += [(k, "must be an empty list") for k in ("goals", "reference_path") if ep.get(k)]
    instruction = ep.get("instruction")
    if isinstance(instruction, dict):
        problems += [
            (f"instruction.{k}", "not an InstructionData field")
            for k in instruction
            if k not in INSTRUCTION_KEYS
        ]
    problems += [(p, "not finite") for p in _non_finite(ep)]
    return problems


def _check_tokens(ep: dict[str, Any], vocab: list[str]) -> list[tuple[str, str]]:
    instruction = ep.get("instruction") or {}
    tokens = instruction.get("instruction_tokens")
    index = {w: i for i, w in enumerate(vocab)}
    expected = encode(str(instruction.get("instruction_text", "")), index)
    if tokens != expected:
        return [("instruction.instruction_tokens", "do not re-encode the instruction text")]
    return []


def _check_labels(ep: dict[str, Any], scenes: _SceneCache) -> list[tuple[str, str]]:
    info = ep["info"]["condvln"]
    scene, nav = scenes.get(ep)
    program = program_from_dict(info["program"])
    config = RelationConfig(**info["config"]["relations"])
    labels = {
        "branch_path": info["branch_path"],
        "goal": info["goal"]["object_id"],
        "subgoals": [g["object_id"] for g in info["subgoals"]],
        "branch_goals": [g["object_id"] for g in info["branch_goals"]],
    }
    problems = [("info.condvln", p) for p in verify_labels(scene, config, program, labels)]
    goal_pos = ep["goals"][0]["position"]
    for name, goal in [("goal", info["goal"])] + [
        (f"subgoals[{i}]", g) for i, g in enumerate(info["subgoals"])
    ]:
        point = nav.approach_point(scene.object(goal["object_id"]))
        if point is None or not _near(point, goal["position"]):
            problems.append((f"info.condvln.{name}.position", "not the object's approach point"))
    if not _near(goal_pos, info["goal"]["position"]):
        problems.append(("goals[0].position", "differs from info.condvln.goal.position"))
    problems += _check_paths(ep, nav)
    return problems


def _check_paths(ep: dict[str, Any], nav: GridNavigator) -> list[tuple[str, str]]:
    start, goal = ep["start_position"], ep["goals"][0]["position"]
    path = ep["reference_path"]
    problems = []
    if not path or not _near(path[0], start) or not _near(path[-1], goal):
        problems.append(("reference_path", "must start at start_position and end at the goal"))
    geodesic = nav.distance(start, goal)
    stored = ep["info"]["geodesic_distance"]
    if geodesic is None:
        return [*problems, ("goals[0].position", "unreachable from start_position")]
    if abs(geodesic - stored) > max(GEODESIC_TOLERANCE, 0.01 * geodesic):
        problems.append(("info.geodesic_distance", f"stored {stored:.3f}, measured {geodesic:.3f}"))
    length = sum(math.dist(a, b) for a, b in itertools.pairwise(path))
    if length + GEODESIC_TOLERANCE < stored:
        problems.append(("reference_path", "shorter than the geodesic distance"))
    return problems


def _check_gt(ep: dict[str, Any], gt: dict[str, Any] | None) -> list[tuple[str, str]]:
    if gt is None:
        return [("gt", "missing ground-truth entry")]
    actions, locations = gt.get("actions", []), gt.get("locations", [])
    problems = []
    if not locations or not _near(locations[0], ep["start_position"]):
        problems.append(("gt.locations", "must start at start_position"))
    if gt.get("forward_steps") != actions.count(1) or len(locations) != actions.count(1) + 1:
        problems.append(("gt.forward_steps", "inconsistent with actions and locations"))
    if not actions or actions[-1] != 0 or actions.count(0) != 1:
        problems.append(("gt.actions", "must end with exactly one STOP"))
    return problems


def _episode_problems(
    ep: dict[str, Any], test: bool, vocab: list[str], gt: dict | None, scenes: _SceneCache
) -> list[tuple[str, str]]:
    problems = _check_schema(ep, test) + _check_tokens(ep, vocab)
    if problems:
        return problems
    if test:  # the answers file holds what the public test episode hides
        answer = gt or {}
        ep = {**ep, **{k: answer.get(k) for k in ("goals", "reference_path", "info")}}
        problems = [(f"test_answers.{p}", "not finite") for p in _non_finite(answer)]
        gt = answer.get("gt")
    try:
        return problems + _check_labels(ep, scenes) + _check_gt(ep, gt)
    except (CondVLNError, KeyError, TypeError, ValueError) as exc:
        return [("info.condvln", f"cannot be checked: {exc}")]


def validate_dataset(
    root: str | Path, progress: Callable[[str, int], Callable[[], None]] | None = None
) -> ValidationReport:
    """Check every split of the dataset at ``root``; never raises on bad content.

    ``progress(label, total)`` returns an ``advance()`` callback, called once per episode.
    """
    root = Path(root)
    report = ValidationReport()
    splits = available_splits(root)
    if not splits:
        report.problems.append(f"{root}: no split files ({{split}}/{{split}}.json.gz) found")
        return report
    scenes = _SceneCache(root)
    for split in splits:
        try:
            doc = load_split(root, split)
            suffix = "_answers" if split == "test" else "_gt"
            side = read_json(split_path(root, split, suffix), FormatError)
        except FormatError as exc:
            report.problems.append(str(exc))
            continue
        vocab = doc["instruction_vocab"]["word_list"]
        seen: set[Any] = set()
        advance = progress(split, len(doc["episodes"])) if progress else None
        for ep in doc["episodes"]:
            if advance:
                advance()
            eid = ep.get("episode_id")
            report.episodes[split] += 1
            found = [] if eid not in seen else [("episode_id", "duplicate")]
            seen.add(eid)
            gt = side.get(str(eid)) if isinstance(side, dict) else None
            if split == "test" and gt is None:
                found.append(("test_answers", "no answer for this episode"))
            found += _episode_problems(ep, split == "test", vocab, gt, scenes)
            report.problems.extend(f"{split}: episode {eid}: field '{f}': {m}" for f, m in found)
    return report
