"""One schema check per record type of a dataset folder, shared by every command that reads it.

``validate`` collects the problems; ``run``, ``evaluate`` and ``oracle`` stop at the first one
with a one-line :class:`~condvln.errors.FormatError` naming the file, the episode and the field
(:func:`load_checked_split`). Record types:

* **episode** (:func:`episode_problems`): habitat-lab ``VLNEpisode`` fields with VLN-CE types —
  integer ids, a ``scene_id`` path inside the dataset, a finite start position, a unit
  ``[x, y, z, w]`` start rotation, goals, reference path, instruction text and tokens, and the
  ``info.condvln`` labels the commands read;
* **ground truth** (:func:`gt_problems`): a ``_gt`` entry (``locations``, ``actions``,
  ``forward_steps``);
* **test answer** (:func:`answer_problems`): what the public test episode hides;
* **scene**: :func:`condvln.scene.serialize.scene_from_dict` (scene files are checked when they
  are loaded).

Numbers must be JSON numbers (not booleans or strings), finite, and coordinates within
``±LIMITS.max_coordinate``.

>>> episode_problems({"episode_id": "ep1"}, test=True)[:2]
[('episode_id', "must be an integer (VLN-CE ids are integers), got 'ep1'"), ('trajectory_id', 'missing')]
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import Any

from condvln.errors import FormatError
from condvln.io import LIMITS, check_regular_file, inside, read_json
from condvln.vlnce import load_scene_index, load_split, scene_json_path, scene_relative, split_path

Problem = tuple[str, str]
"""``(field, message)``."""

QUATERNION_TOLERANCE = 1e-6
"""``start_rotation`` must have unit length within this tolerance."""

N_ACTIONS = 4
"""VLN-CE action ids ``0 .. 3``: STOP, FORWARD, LEFT, RIGHT."""

DESIGN_FIELDS = (
    "category",
    "depth",
    "chain",
    "composition",
    "observability",
    "horizon",
    "branch_steps",
)
"""The design cell of an episode: the fields of ``info.condvln`` the dataset card counts
episodes by and evaluation records carry."""

_MISSING = object()


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def is_int(value: Any) -> bool:
    """A JSON integer (``bool`` is not one)."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    """A finite JSON number (``bool`` is not one)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def number_problem(value: Any, *, coordinate: bool = True) -> str | None:
    """Why ``value`` is not an acceptable number (``None`` when it is)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"must be a number, got {_show(value)}"
    if not math.isfinite(value):
        return f"must be finite, got {value!r}"
    if coordinate and abs(value) > LIMITS.max_coordinate:
        return f"must be within ±{LIMITS.max_coordinate:g} m, got {value!r}"
    return None


def vector_problem(value: Any, n: int) -> str | None:
    """Why ``value`` is not ``n`` acceptable coordinates."""
    if not isinstance(value, list) or len(value) != n:
        return f"must be a list of {n} numbers, got {_show(value)}"
    for item in value:
        problem = number_problem(item)
        if problem:
            return problem
    return None


def _vector(value: Any, n: int, field: str) -> list[Problem]:
    problem = vector_problem(value, n)
    return [(field, problem)] if problem else []


def _acceptable_points(points: list[Any]) -> bool:
    """Whether every item of ``points`` is three acceptable coordinates, checked a level at a
    time without a call per number (a path has hundreds); :func:`_points` then finds what is
    wrong, point by point, only when something is."""
    if set(map(type, points)) != {list} or set(map(len, points)) != {3}:
        return False
    flat = list(chain.from_iterable(points))
    try:
        return (
            set(map(type, flat)) <= {int, float}
            and all(map(math.isfinite, flat))
            and max(map(abs, flat)) <= LIMITS.max_coordinate
        )
    except OverflowError:  # an integer beyond float range
        return False


def _points(value: Any, field: str, *, empty: bool = False) -> list[Problem]:
    if not isinstance(value, list) or (not value and not empty):
        return [(field, f"must be a non-empty list of [x, y, z] points, got {_show(value)}")]
    if _acceptable_points(value):
        return []
    for i, point in enumerate(value):
        problem = vector_problem(point, 3)
        if problem:
            return [(f"{field}[{i}]", problem)]
    return []


def _positive(value: Any, field: str) -> list[Problem]:
    problem = number_problem(value)
    if problem:
        return [(field, problem)]
    return [] if value > 0 else [(field, f"must be positive, got {value!r}")]


def _get(record: Mapping[str, Any], key: str, field: str, problems: list[Problem]) -> Any:
    value = record.get(key, _MISSING)
    if value is _MISSING:
        problems.append((field, "missing"))
    return value


def rotation_problems(value: Any, field: str = "start_rotation") -> list[Problem]:
    """A unit quaternion ``[x, y, z, w]`` (length 1 within :data:`QUATERNION_TOLERANCE`)."""
    problem = vector_problem(value, 4)
    if problem:
        return [(field, f"{problem} (a quaternion [x, y, z, w])")]
    norm = math.sqrt(sum(float(c) * float(c) for c in value))
    if abs(norm - 1.0) > QUATERNION_TOLERANCE:
        return [(field, f"must be a unit quaternion, has length {norm:.9g}")]
    return []


def _goal_record(value: Any, field: str, *, object_id: bool) -> list[Problem]:
    if not isinstance(value, Mapping):
        return [(field, f"must be an object, got {_show(value)}")]
    problems: list[Problem] = []
    if object_id:
        oid = _get(value, "object_id", f"{field}.object_id", problems)
        if oid is not _MISSING and not isinstance(oid, str):
            problems.append((f"{field}.object_id", f"must be a string, got {_show(oid)}"))
    position = _get(value, "position", f"{field}.position", problems)
    if position is not _MISSING:
        problems += _vector(position, 3, f"{field}.position")
    radius = _get(value, "radius", f"{field}.radius", problems)
    if radius is not _MISSING:
        problems += _positive(radius, f"{field}.radius")
    return problems


def _goal_list(value: Any, field: str, *, object_id: bool, empty: bool) -> list[Problem]:
    if not isinstance(value, list) or (not value and not empty):
        return [(field, f"must be a {'' if empty else 'non-empty '}list, got {_show(value)}")]
    problems: list[Problem] = []
    for i, goal in enumerate(value):
        problems += _goal_record(goal, f"{field}[{i}]", object_id=object_id)
    return problems


def labels_problems(labels: Any, field: str = "info.condvln") -> list[Problem]:
    """The CondVLN labels the commands read (``info.condvln``)."""
    if not isinstance(labels, Mapping):
        return [(field, f"must be an object, got {_show(labels)}")]
    problems: list[Problem] = []
    program = _get(labels, "program", f"{field}.program", problems)
    if program is not _MISSING and not isinstance(program, Mapping):
        problems.append((f"{field}.program", f"must be an object, got {_show(program)}"))
    n_branches = _get(labels, "n_branches", f"{field}.n_branches", problems)
    if n_branches is not _MISSING and not (is_int(n_branches) and n_branches >= 1):
        problems.append((f"{field}.n_branches", f"must be an integer ≥ 1, got {_show(n_branches)}"))
        n_branches = _MISSING
    leaf = _get(labels, "leaf_index", f"{field}.leaf_index", problems)
    if leaf is not _MISSING:
        top = n_branches if is_int(n_branches) else math.inf
        if not (is_int(leaf) and 0 <= leaf < top):
            problems.append(
                (f"{field}.leaf_index", f"must be an integer in 0..n_branches-1, got {_show(leaf)}")
            )
    budget = labels.get("step_budget", 1)
    if not (is_int(budget) and 1 <= budget <= 1_000_000):
        problems.append(
            (f"{field}.step_budget", f"must be an integer in 1..1e6, got {_show(budget)}")
        )
    oracle = labels.get("oracle_instruction", "")
    if not isinstance(oracle, str):
        problems.append((f"{field}.oracle_instruction", f"must be a string, got {_show(oracle)}"))
    phrasing_seen = labels.get("phrasing_seen", True)  # datasets before it have no such key
    if not isinstance(phrasing_seen, bool):
        problems.append(
            (f"{field}.phrasing_seen", f"must be a boolean, got {_show(phrasing_seen)}")
        )
    path = labels.get("branch_path", [])
    if not (isinstance(path, list) and all(isinstance(b, bool) for b in path)):
        problems.append((f"{field}.branch_path", f"must be a list of booleans, got {_show(path)}"))
    goal = _get(labels, "goal", f"{field}.goal", problems)
    if goal is not _MISSING:
        problems += _goal_record(goal, f"{field}.goal", object_id=True)
    for key, empty in (("subgoals", True), ("branch_goals", False)):
        value = _get(labels, key, f"{field}.{key}", problems)
        if value is not _MISSING:
            problems += _goal_list(value, f"{field}.{key}", object_id=True, empty=empty)
    problems += _branch_labels(labels, field)
    config = labels.get("config", {})
    if not isinstance(config, Mapping) or not isinstance(config.get("relations", {}), Mapping):
        problems.append((f"{field}.config.relations", "must be an object"))
    return problems


def _branch_labels(labels: Mapping[str, Any], field: str) -> list[Problem]:
    """The optional in-branch labels (datasets older than them have neither key)."""
    problems: list[Problem] = []
    if "branch_subgoals" in labels:
        value = labels["branch_subgoals"]
        problems += _goal_list(value, f"{field}.branch_subgoals", object_id=True, empty=True)
        subgoals = labels.get("subgoals")
        if not problems and isinstance(subgoals, list) and len(value) > len(subgoals):
            problems.append((f"{field}.branch_subgoals", "longer than subgoals"))
    steps = labels.get("branch_steps", 1)
    if not (is_int(steps) and 1 <= steps <= 100):
        problems.append(
            (f"{field}.branch_steps", f"must be an integer in 1..100, got {_show(steps)}")
        )
    return problems


def _instruction(value: Any) -> list[Problem]:
    if not isinstance(value, Mapping):
        return [("instruction", f"must be an object, got {_show(value)}")]
    problems: list[Problem] = []
    text = _get(value, "instruction_text", "instruction.instruction_text", problems)
    if text is not _MISSING and not isinstance(text, str):
        problems.append(("instruction.instruction_text", f"must be a string, got {_show(text)}"))
    tokens = value.get("instruction_tokens", [])
    if not (isinstance(tokens, list) and all(is_int(t) and t >= 0 for t in tokens)):
        problems.append(
            ("instruction.instruction_tokens", "must be a list of non-negative integers")
        )
    return problems


def _hidden_parts(record: Mapping[str, Any], prefix: str, labels: bool) -> list[Problem]:
    """``goals``, ``reference_path`` and ``info`` (of an episode, or of a test answer)."""
    problems: list[Problem] = []
    goals = _get(record, "goals", f"{prefix}goals", problems)
    if goals is not _MISSING:
        problems += _goal_list(goals, f"{prefix}goals", object_id=False, empty=False)
    path = _get(record, "reference_path", f"{prefix}reference_path", problems)
    if path is not _MISSING:
        problems += _points(path, f"{prefix}reference_path")
    info = _get(record, "info", f"{prefix}info", problems)
    if info is _MISSING:
        return problems
    if not isinstance(info, Mapping):
        return [*problems, (f"{prefix}info", f"must be an object, got {_show(info)}")]
    geodesic = info.get("geodesic_distance", 0.0)
    problem = number_problem(geodesic)
    if problem or geodesic < 0:
        problems.append((f"{prefix}info.geodesic_distance", problem or "must not be negative"))
    if labels or "condvln" in info:
        condvln = _get(info, "condvln", f"{prefix}info.condvln", problems)
        if condvln is not _MISSING:
            problems += labels_problems(condvln, f"{prefix}info.condvln")
    return problems


def episode_problems(ep: Any, *, test: bool, labels: bool = True) -> list[Problem]:
    """Schema problems of one episode record (a test episode has no goals / path / info).

    Args:
        ep: The record.
        test: A public test-split episode (its hidden parts are checked by
            :func:`answer_problems`).
        labels: Require ``info.condvln`` (``False``: check it only when present).
    """
    if not isinstance(ep, Mapping):
        return [("episode", f"must be an object, got {_show(ep)}")]
    problems: list[Problem] = []
    for key in ("episode_id", "trajectory_id"):
        value = _get(ep, key, key, problems)
        if value is not _MISSING and not is_int(value):
            problems.append(
                (key, f"must be an integer (VLN-CE ids are integers), got {_show(value)}")
            )
    scene_id = _get(ep, "scene_id", "scene_id", problems)
    if scene_id is not _MISSING and not (isinstance(scene_id, str) and scene_id):
        problems.append(("scene_id", f"must be a non-empty path string, got {_show(scene_id)}"))
    position = _get(ep, "start_position", "start_position", problems)
    if position is not _MISSING:
        problems += _vector(position, 3, "start_position")
    rotation = _get(ep, "start_rotation", "start_rotation", problems)
    if rotation is not _MISSING:
        problems += rotation_problems(rotation)
    instruction = _get(ep, "instruction", "instruction", problems)
    if instruction is not _MISSING:
        problems += _instruction(instruction)
    if not test:
        problems += _hidden_parts(ep, "", labels)
    return problems


def gt_problems(gt: Any, field: str = "gt") -> list[Problem]:
    """Schema problems of a ``_gt`` entry: ``locations``, ``actions``, ``forward_steps``."""
    if not isinstance(gt, Mapping):
        return [(field, f"must be an object, got {_show(gt)}")]
    problems: list[Problem] = []
    locations = _get(gt, "locations", f"{field}.locations", problems)
    if locations is not _MISSING:
        problems += _points(locations, f"{field}.locations")
    actions = _get(gt, "actions", f"{field}.actions", problems)
    if actions is not _MISSING and not (
        isinstance(actions, list) and all(is_int(a) and 0 <= a < N_ACTIONS for a in actions)
    ):
        problems.append((f"{field}.actions", f"must be a list of action ids 0..{N_ACTIONS - 1}"))
    steps = _get(gt, "forward_steps", f"{field}.forward_steps", problems)
    if steps is not _MISSING and not (is_int(steps) and steps >= 0):
        problems.append(
            (f"{field}.forward_steps", f"must be a non-negative integer, got {_show(steps)}")
        )
    return problems


def answer_problems(answer: Any, *, labels: bool = True) -> list[Problem]:
    """Schema problems of a ``test_answers`` entry (goals, reference path, info, gt)."""
    if not isinstance(answer, Mapping):
        return [("test_answers", f"must be an object, got {_show(answer)}")]
    problems = _hidden_parts(answer, "test_answers.", labels)
    if "gt" in answer:
        problems += gt_problems(answer["gt"], "test_answers.gt")
    return problems


def scene_file(root: Path, scene_id: str, file: str, record: str) -> Path:
    """The scene file an episode names: inside the dataset folder and a regular file."""
    path = inside(root, scene_id, file=file, record=record, field="scene_id")
    try:
        check_regular_file(path)
    except FormatError as exc:
        raise FormatError(
            f"{exc.message} ({path})", file=file, record=record, field="scene_id"
        ) from None
    return path


@dataclass(frozen=True)
class CheckedSplit:
    """A split whose every record passed its schema check.

    Attributes:
        doc: The split document as read.
        episodes: Its episodes; for ``test`` merged with their answers (goals, path, info).
        file: The split file.
        scene_files: Each episode's scene JSON, checked (inside the dataset, a regular file).
    """

    doc: dict[str, Any]
    episodes: list[dict[str, Any]]
    file: Path
    scene_files: list[Path]


def load_checked_split(root: str | Path, split: str, *, labels: bool = True) -> CheckedSplit:
    """Read a split (and, for ``test``, its answers) and check every record's schema.

    Raises:
        FormatError: the first problem, naming the file, the episode and the field.
    """
    root = Path(root)
    file = split_path(root, split)
    doc = load_split(root, split)
    answers: Mapping[str, Any] = {}
    answers_file = split_path(root, split, "_answers")
    if split == "test" and (labels or answers_file.exists()):
        answers = read_json(answers_file)
        if not isinstance(answers, Mapping):
            raise FormatError("must be an object {episode_id: answer}", file=str(answers_file))
    scene_index = load_scene_index(root)
    episodes, seen, scene_files = [], set(), []
    checked: dict[str, Path] = {}  # relative scene JSON → its checked path (once per scene)
    for index, ep in enumerate(doc["episodes"]):
        eid = ep.get("episode_id", f"#{index}") if isinstance(ep, Mapping) else f"#{index}"
        record = f"episode {eid}"
        problems = episode_problems(ep, test=split == "test", labels=labels)
        if problems:
            raise FormatError(problems[0][1], file=str(file), record=record, field=problems[0][0])
        if eid in seen:
            raise FormatError("duplicate id", file=str(file), record=record, field="episode_id")
        seen.add(eid)
        if split == "test" and answers:
            answer = answers.get(str(eid))
            if answer is None:
                raise FormatError(
                    "no answer for this episode", file=str(answers_file), record=record
                )
            found = answer_problems(answer, labels=labels)
            if found:
                field = found[0][0].removeprefix("test_answers.")
                raise FormatError(found[0][1], file=str(answers_file), record=record, field=field)
            ep = {
                **ep,
                **{k: answer[k] for k in ("goals", "reference_path", "info") if k in answer},
            }
        relative = scene_relative(ep, scene_index)
        if relative not in checked:
            checked[relative] = _scene_json(root, ep, scene_index, str(file), record)
        scene_files.append(checked[relative])
        episodes.append(ep)
    return CheckedSplit(doc, episodes, file, scene_files)


def _scene_json(
    root: Path, ep: Mapping[str, Any], index: Mapping[str, str], file: str, record: str
) -> Path:
    """The episode's CondVLN scene JSON (``info.condvln.scene_file``, the index, or ``scene_id``):
    inside the dataset folder and a regular file."""
    info = ep.get("info")
    named = (
        isinstance(info, Mapping)
        and isinstance(info.get("condvln"), Mapping)
        and "scene_file" in info["condvln"]
    )
    field = "info.condvln.scene_file" if named else "scene_id"
    try:
        path = scene_json_path(root, dict(ep), dict(index))
        relative = str(path.relative_to(Path(root).resolve()))
        return scene_file(root, relative, file, record)
    except FormatError as exc:
        raise FormatError(exc.message, file=file, record=record, field=field) from None
