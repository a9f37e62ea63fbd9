"""``condvln validate``: check a dataset folder from its files alone.

For every split: the habitat-lab schema (exactly the ``VLNEpisode`` keys, extras only under
``info``), finite numbers everywhere, tokens that re-encode the text with the split's vocabulary,
every label re-derived by the independent checker (:mod:`condvln.program.verify`) from the
stored program, the scene file and the stamped relation config, goals and subgoals at their
objects' approach points (the goal within one forward step of its approach point, where the
ground-truth follower stops) and reachable, the stored geodesic distance re-measured with the
exact engine (it must agree to 1e-6 m), the reference path running start → goal no shorter than
the geodesic, the ground-truth actions' VLN-CE invariants, and ``phrasing_seen`` (the parser
of the seen paraphrases reads the text back exactly when it is set; no held-out paraphrase in
the seen houses' splits; not checked on an oracle transform, whose texts are the oracle's).
Each problem names the split, the episode and the field.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter, defaultdict
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
from condvln.dataset.follower import FORWARD_STEP
from condvln.dataset.schema import answer_problems, episode_problems, gt_problems
from condvln.errors import CondVLNError, FormatError
from condvln.graph import RelationConfig
from condvln.io import check_regular_file, read_json
from condvln.nav import ExactNavigator, GridNavigator
from condvln.program.ast import program_from_dict
from condvln.program.parse import InstructionParseError, parse
from condvln.program.verify import verify_labels
from condvln.scene.identity import scene_fingerprint
from condvln.scene.model import Scene
from condvln.scene.serialize import load_scene
from condvln.vlnce import (
    SPLITS,
    encode,
    load_scene_index,
    load_split,
    present_splits,
    scene_json_path,
    split_path,
)

POSITION_TOLERANCE = 1e-6
"""Stored goal positions must equal the recomputed approach points this closely (m)."""

GEODESIC_TOLERANCE = 1e-6
"""Re-measured geodesic distances may differ by this much (m): both come from the exact engine."""

GOAL_TOLERANCE = FORWARD_STEP + 0.01
"""The goal lies this close (m) to its object's approach point: the follower stops within half a
step of it, and a stop off the navigable area moves onto it."""


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
    """Dotted paths of every NaN / inf number inside ``value`` (iterative: any depth)."""
    stack = [(value, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                yield where or "value"
        elif isinstance(item, dict):
            stack.extend(
                (v, f"{where}.{k}" if where else str(k)) for k, v in reversed(item.items())
            )
        elif isinstance(item, list):
            stack.extend((v, f"{where}[{i}]") for i, v in reversed(list(enumerate(item))))


class _SceneCache:
    """Scenes and navigators of a dataset, loaded once each (load problems are remembered)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._index: dict[str, str] | None = None
        self._items: dict[Path, tuple[Scene, GridNavigator, ExactNavigator] | str] = {}
        self._fingerprints: dict[Path, str] = {}

    def path(self, ep: dict[str, Any]) -> Path | str:
        """The episode's scene JSON, or the one-line reason it cannot be used."""
        try:
            if self._index is None:
                self._index = load_scene_index(self.root)
            path = scene_json_path(self.root, ep, self._index)
            check_regular_file(path)
        except FormatError as exc:
            return exc.message
        return path

    def get(self, ep: dict[str, Any]) -> tuple[Scene, GridNavigator, ExactNavigator] | str:
        """The episode's scene and its navigators (grid: approach points as generation picks
        them; exact: geodesics), or the one-line reason it cannot be used."""
        path = self.path(ep)
        if isinstance(path, str):
            return path
        if path not in self._items:
            try:
                scene = load_scene(path)
                grid = GridNavigator(scene)
                self._items[path] = (scene, grid, ExactNavigator(scene, area=grid.area))
            except CondVLNError as exc:
                self._items[path] = f"{path}: {exc}" if str(path) not in str(exc) else str(exc)
        return self._items[path]

    def identity(self, ep: dict[str, Any]) -> tuple[str, str] | None:
        """The house of the episode's scene file: ``(fingerprint, file)``, or ``None`` when the
        scene cannot be loaded (reported per episode)."""
        loaded = self.get(ep)
        if isinstance(loaded, str):
            return None
        path = self.path(ep)
        if path not in self._fingerprints:
            self._fingerprints[path] = scene_fingerprint(loaded[0])
        return self._fingerprints[path], str(Path(path).relative_to(self.root.resolve()))


def _near(a: Any, b: Any, tol: float = POSITION_TOLERANCE) -> bool:
    return len(a) == len(b) and all(
        abs(float(x) - float(y)) <= tol for x, y in zip(a, b, strict=False)
    )


def _check_keys(ep: dict[str, Any], test: bool) -> list[tuple[str, str]]:
    """Exactly the habitat-lab keys (its attrs-based loader crashes on any other)."""
    keys = TEST_EPISODE_KEYS if test else EPISODE_KEYS
    problems = [
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


def _object(scene: Scene, object_id: str, field: str) -> tuple[Any, list[tuple[str, str]]]:
    try:
        return scene.object(object_id), []
    except KeyError:
        return None, [(field, f"names no object of the scene: {object_id!r}")]


def _check_labels(
    ep: dict[str, Any], scene: Scene, nav: GridNavigator, exact: ExactNavigator
) -> list[tuple[str, str]]:
    info = ep["info"]["condvln"]
    try:
        program = program_from_dict(info["program"])
    except (CondVLNError, KeyError, TypeError, ValueError, RecursionError) as exc:
        return [("info.condvln.program", f"not a valid program ({exc})")]
    try:
        config = RelationConfig(**info.get("config", {}).get("relations", {}))
    except (CondVLNError, TypeError, ValueError) as exc:
        reason = str(exc).splitlines()[0]
        return [("info.condvln.config.relations", f"not a valid relation config ({reason})")]
    problems: list[tuple[str, str]] = []
    named = [("info.condvln.goal", info["goal"])]
    named += [(f"info.condvln.subgoals[{i}]", g) for i, g in enumerate(info["subgoals"])]
    named += [(f"info.condvln.branch_goals[{i}]", g) for i, g in enumerate(info["branch_goals"])]
    in_branch = info.get("branch_subgoals", [])
    named += [(f"info.condvln.branch_subgoals[{i}]", g) for i, g in enumerate(in_branch)]
    objects = {}
    for field_name, goal in named:
        obj, missing = _object(scene, goal["object_id"], f"{field_name}.object_id")
        problems += missing
        objects[field_name] = obj
    if problems:
        return problems
    labels = {
        "branch_path": info["branch_path"],
        "goal": info["goal"]["object_id"],
        "subgoals": [g["object_id"] for g in info["subgoals"]],
        "branch_goals": [g["object_id"] for g in info["branch_goals"]],
    }
    if "branch_subgoals" in info:
        labels["branch_subgoals"] = [g["object_id"] for g in in_branch]
    if "branch_steps" in info:
        labels["branch_steps"] = info["branch_steps"]
    try:
        found = verify_labels(scene, config, program, labels)
    except (CondVLNError, KeyError, TypeError, ValueError, RecursionError) as exc:
        found = [f"program cannot be run on the scene ({exc})"]
    problems += [("info.condvln.program", p) for p in found]
    for k, (field_name, goal) in enumerate(named[: 1 + len(info["subgoals"])]):
        point = nav.approach_point(objects[field_name])
        tolerance = GOAL_TOLERANCE if k == 0 else POSITION_TOLERANCE
        if point is None or not _near(point, goal["position"], tolerance):
            problems.append((f"{field_name}.position", "not the object's approach point"))
    tail = info["subgoals"][len(info["subgoals"]) - len(in_branch) :] if in_branch else []
    if [g["position"] for g in tail] != [g["position"] for g in in_branch]:
        problems.append(("info.condvln.branch_subgoals", "not the last subgoals"))
    if not _near(ep["goals"][0]["position"], info["goal"]["position"]):
        problems.append(("goals[0].position", "differs from info.condvln.goal.position"))
    return problems + _check_paths(ep, exact)


def _check_paths(ep: dict[str, Any], nav: ExactNavigator) -> list[tuple[str, str]]:
    start, goal = ep["start_position"], ep["goals"][0]["position"]
    path = ep["reference_path"]
    problems = []
    if not path or not _near(path[0], start) or not _near(path[-1], goal):
        problems.append(("reference_path", "must start at start_position and end at the goal"))
    geodesic = nav.distance(start, goal)
    stored = ep["info"]["geodesic_distance"]
    if geodesic is None:
        return [*problems, ("goals[0].position", "unreachable from start_position")]
    if abs(geodesic - stored) > GEODESIC_TOLERANCE:
        problems.append(("info.geodesic_distance", f"stored {stored:.6f}, measured {geodesic:.6f}"))
    length = sum(math.dist(a, b) for a, b in itertools.pairwise(path))
    if length + GEODESIC_TOLERANCE < stored:
        problems.append(("reference_path", "shorter than the geodesic distance"))
    return problems


def _check_gt(ep: dict[str, Any], gt: dict[str, Any] | None) -> list[tuple[str, str]]:
    if gt is None:
        return [("gt", "missing ground-truth entry")]
    schema = gt_problems(gt)
    if schema:
        return schema
    actions, locations = gt["actions"], gt["locations"]
    problems = []
    if not _near(locations[0], ep["start_position"]):
        problems.append(("gt.locations", "must start at start_position"))
    if gt["forward_steps"] != actions.count(1) or len(locations) != actions.count(1) + 1:
        problems.append(("gt.forward_steps", "inconsistent with actions and locations"))
    if not actions or actions[-1] != 0 or actions.count(0) != 1:
        problems.append(("gt.actions", "must end with exactly one STOP"))
    return problems


def _episode_problems(
    ep: Any, test: bool, vocab: list[str], gt: Any, scenes: _SceneCache
) -> list[tuple[str, str]]:
    if not isinstance(ep, dict):
        return [("episode", "must be an object")]
    problems = _check_keys(ep, test) + episode_problems(ep, test=test)
    if test:  # the answers file holds what the public test episode hides
        answer = gt if isinstance(gt, dict) else {}
        problems += [(f"test_answers.{p}", "not finite") for p in _non_finite(answer)]
        problems += answer_problems(answer)
    if problems:
        return problems
    problems = _check_tokens(ep, vocab)
    if test:
        ep = {**ep, **{k: gt[k] for k in ("goals", "reference_path", "info")}}
        gt = gt.get("gt")
    loaded = scenes.get(ep)
    if isinstance(loaded, str):
        named = "scene_file" in ep["info"]["condvln"] if isinstance(ep.get("info"), dict) else False
        return [*problems, ("info.condvln.scene_file" if named else "scene_id", loaded)]
    scene, nav, exact = loaded
    return problems + _check_labels(ep, scene, nav, exact) + _check_gt(ep, gt)


SEEN_HOUSE_SPLITS = ("train", "val_seen", "pairs")
"""Splits of the seen houses: worded with the seen paraphrases only."""


def _phrasing_problems(ep: Any, gt: Any, split: str) -> list[tuple[str, str]]:
    """``phrasing_seen`` re-derived from the text (datasets before it have no such key)."""
    info = (gt if split == "test" else ep)["info"]["condvln"]
    if "phrasing_seen" not in info:
        return []
    text = ep["instruction"]["instruction_text"]
    try:
        seen = parse(text, "seen").to_dict() == info["program"]
    except InstructionParseError:
        seen = False
    if seen != info["phrasing_seen"]:
        reads = "reads back" if seen else "does not read back"
        return [
            (
                "info.condvln.phrasing_seen",
                f"is {info['phrasing_seen']}, but the text {reads} with the seen paraphrases",
            )
        ]
    if not seen and split in SEEN_HOUSE_SPLITS:
        return [("instruction.instruction_text", "a held-out paraphrase in a seen house's split")]
    return []


SHARING_ALLOWED = {frozenset(p) for p in itertools.combinations(("train", "val_seen", "pairs"), 2)}
"""Split pairs that may share houses (val_seen and pairs: other instructions in the training
houses)."""

PAIRLESS = ("val_seen", "val_unseen", "test")
"""Evaluation splits that hold no counterfactual pair member (a reader comparing siblings
would guess their branches): pairs live in ``pairs`` (and in train)."""


def _pair_id(ep: Any, answer: Any) -> str | None:
    """An episode's ``info.condvln.pair_id`` (a test episode's from its answer), if any."""
    for source in (ep, answer):
        if isinstance(source, dict) and isinstance(source.get("info"), dict):
            labels = source["info"].get("condvln")
            if isinstance(labels, dict) and labels.get("pair_id") is not None:
                return str(labels["pair_id"])
    return None


def _pair_problems(pairs: dict[str, dict[str, list[Any]]]) -> list[str]:
    """``pairs[split][pair_id]``: episode ids. No pair member in a :data:`PAIRLESS` split, a
    pair id in one split only, and every pair of ``pairs`` exactly two episodes."""
    problems = []
    owner: dict[str, str] = {}
    for split, members in pairs.items():
        for pair, ids in sorted(members.items()):
            if pair in owner:
                problems.append(f"pair {pair} is in splits {owner[pair]} and {split}")
            owner.setdefault(pair, split)
            if split in PAIRLESS:
                problems.append(
                    f"{split}: episode {ids[0]}: field 'info.condvln.pair_id': pair {pair} in "
                    "an evaluation split (pairs belong in the pairs split)"
                )
            elif split == "pairs" and len(ids) != 2:
                problems.append(f"pairs: pair {pair} has {len(ids)} member(s), not 2")
    return problems


def _scene_disjointness(root: Path, houses: dict[str, dict[str, str]]) -> list[str]:
    """Every pair of splits but train / val_seen must share no house: ``houses[split]`` maps
    each house key (content fingerprint, or ``id:`` + habitat scene id) to a file naming it."""
    problems = []
    for a, b in itertools.combinations(SPLITS, 2):
        if frozenset((a, b)) in SHARING_ALLOWED:
            continue
        left, right = houses.get(a, {}), houses.get(b, {})
        shared = [key for key in left if key in right]
        by_content = [k for k in shared if not k.startswith("id:")]
        if shared:
            key = (by_content or shared)[0]
            count = len(by_content or shared)
            problems.append(
                f"{root}: splits {a} and {b} share {count} house(s) (e.g. {left[key]} in {a} "
                f"and {right[key]} in {b}): unseen splits must be scene-disjoint"
            )
    return problems


def _houses(ep: Any, scenes: _SceneCache) -> dict[str, str]:
    """The house keys of an episode (see :func:`_scene_disjointness`)."""
    if not isinstance(ep, dict) or not isinstance(ep.get("scene_id"), str):
        return {}
    keys = {f"id:{ep['scene_id']}": ep["scene_id"]}
    identity = scenes.identity(ep)
    if identity is not None:
        keys[identity[0]] = identity[1]
    return keys


def validate_dataset(
    root: str | Path, progress: Callable[[str, int], Callable[[], None]] | None = None
) -> ValidationReport:
    """Check every split of the dataset at ``root``; never raises on bad content.

    Every split of :data:`~condvln.vlnce.SPLITS` but the optional ones must be present (a
    missing file, a folder or a dangling symlink in its place is a problem), and the seen,
    val_unseen and test splits must be scene-disjoint: no two splits but train, val_seen and
    pairs share a habitat scene id or a house
    (:func:`~condvln.scene.identity.scene_fingerprint` of the scene file). Counterfactual pairs
    are whole and only in train or ``pairs`` (:func:`_pair_problems`).
    ``progress(label, total)`` returns an ``advance()`` callback, called once per episode.
    """
    root = Path(root)
    report = ValidationReport()
    if not root.is_dir():
        report.problems.append(f"{root}: not a dataset folder")
        return report
    scenes = _SceneCache(root)
    oracle = (root / "oracle.json").is_file()  # texts replaced by the oracle's
    houses: dict[str, dict[str, str]] = {}
    pairs: dict[str, dict[str, list[Any]]] = defaultdict(lambda: defaultdict(list))
    for split in present_splits(root):
        try:
            doc = load_split(root, split)
            suffix = "_answers" if split == "test" else "_gt"
            side = read_json(split_path(root, split, suffix), FormatError)
            if not isinstance(side, dict):
                raise FormatError(
                    "must be an object {episode_id: entry}",
                    file=str(split_path(root, split, suffix)),
                )
        except FormatError as exc:
            report.problems.append(str(exc))
            continue
        vocab = [w for w in doc["instruction_vocab"]["word_list"] if isinstance(w, str)]
        seen: set[Any] = set()
        advance = progress(split, len(doc["episodes"])) if progress else None
        for ep in doc["episodes"]:
            if advance:
                advance()
            eid = ep.get("episode_id") if isinstance(ep, dict) else None
            key = eid if isinstance(eid, int | str) else repr(eid)
            report.episodes[split] += 1
            found = [] if key not in seen else [("episode_id", "duplicate")]
            seen.add(key)
            gt = side.get(str(eid))
            if split == "test" and gt is None:
                found.append(("test_answers", "no answer for this episode"))
            found += _episode_problems(ep, split == "test", vocab, gt, scenes)
            found += [] if found or oracle else _phrasing_problems(ep, gt, split)
            houses.setdefault(split, {}).update(_houses(ep, scenes))
            pair = _pair_id(ep, gt if split == "test" else None)
            if pair is not None:
                pairs[split][pair].append(eid)
            elif split == "pairs":
                found.append(("info.condvln.pair_id", "missing: the pairs split holds pairs only"))
            report.problems.extend(f"{split}: episode {eid}: field '{f}': {m}" for f, m in found)
    report.problems += _scene_disjointness(root, houses) + _pair_problems(pairs)
    return report
