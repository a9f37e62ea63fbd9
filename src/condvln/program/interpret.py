"""Ground referring expressions and run programs on a scene graph — labels come from here.

The interpreter never reads text: it takes a :class:`~condvln.program.ast.Program` and a
:class:`~condvln.graph.SceneGraph` and computes the resolution (branch path, the truth of every
condition evaluated, the navigation targets executed, the leaf goal and the subgoals). A fact that
is UNDECIDED, a description that does not denote exactly one object, or a room type that names
no room or several rooms is an error, never a guess.

**Denotation of a description** ``Ref(category, room, relation, anchor)``: the scope is the rooms
of type ``room`` (or the whole scene); the candidates are the scope's objects of ``category``;
with a qualifier, the anchor is the scope's only object of category ``anchor`` and the
candidates are those in the anchor's room for which ``relation(candidate, anchor)`` is TRUE (an
UNDECIDED fact about any candidate makes the description unusable).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from condvln.errors import CondVLNError
from condvln.graph import SceneGraph, Truth
from condvln.program.ast import Condition, Exists, Go, If, Program, Ref, Step, leaf_paths


class ProgramError(CondVLNError):
    """A program that cannot be run on a scene: ambiguous reference or undecided fact."""


def rooms_of_type(graph: SceneGraph, room_type: str) -> list[str]:
    """Ids of the rooms whose type is ``room_type``, in scene order."""
    return [r.id for r in graph.scene.rooms if r.room_type == room_type]


def _scope(graph: SceneGraph, room_type: str | None) -> list[str]:
    if room_type is None:
        return list(graph.room_ids)
    rooms = rooms_of_type(graph, room_type)
    if len(rooms) != 1:
        what = "no room" if not rooms else f"{len(rooms)} rooms"
        raise ProgramError(f"'the {room_type}' names {what} in scene {graph.scene.id}")
    return rooms


def denote(graph: SceneGraph, ref: Ref) -> list[str]:
    """Ids of the objects ``ref`` describes (any number); ``ProgramError`` when unusable."""
    rooms = _scope(graph, ref.room)
    candidates = [o.id for rid in rooms for o in graph.objects_in(rid, ref.category)]
    if ref.relation is None:
        return candidates
    anchors = [o.id for rid in rooms for o in graph.objects_in(rid, ref.anchor)]
    if len(anchors) != 1:
        raise ProgramError(f"anchor 'the {ref.anchor}' denotes {len(anchors)} objects")
    anchor = anchors[0]
    anchor_room = graph.room_of(anchor)
    chosen = []
    for cid in candidates:
        if cid == anchor or graph.room_of(cid) != anchor_room:
            continue
        truth = graph.truth(cid, ref.relation, anchor)
        if truth is Truth.UNDECIDED:
            raise ProgramError(f"'{cid} {ref.relation} {anchor}' is undecided")
        if truth is Truth.TRUE:
            chosen.append(cid)
    return chosen


def ground(graph: SceneGraph, ref: Ref) -> str:
    """The one object ``ref`` describes; ``ProgramError`` unless exactly one."""
    ids = denote(graph, ref)
    if len(ids) != 1:
        raise ProgramError(f"{_ref_words(ref)} denotes {len(ids)} objects, expected exactly one")
    return ids[0]


def _ref_words(ref: Ref) -> str:
    words = f"'the {ref.category}"
    if ref.relation is not None:
        words += f" {ref.relation} the {ref.anchor}"
    if ref.room is not None:
        words += f" in the {ref.room}"
    return words + "'"


def evaluate(graph: SceneGraph, condition: Condition) -> bool:
    """Truth of ``condition``; ``ProgramError`` when it is undecided or ill-formed."""
    if isinstance(condition, Exists):
        (room,) = _scope(graph, condition.room)
        return bool(graph.objects_in(room, condition.category))
    subject = ground(graph, condition.subject)
    target = ground(graph, condition.target)
    if graph.room_of(subject) != graph.room_of(target):
        raise ProgramError(f"'{subject}' and '{target}' are in different rooms")
    truth = graph.truth(subject, condition.predicate, target)
    if truth is Truth.UNDECIDED:
        raise ProgramError(f"'{subject} {condition.predicate} {target}' is undecided")
    return truth is Truth.TRUE


@dataclass(frozen=True, slots=True)
class Resolution:
    """What running a program on a scene gives.

    Attributes:
        branch_path: The decision taken at each conditional evaluated, in execution order.
        condition_truths: Each evaluated condition with its truth, in execution order.
        targets: Object ids of the executed :class:`Go` steps, in order.
        leaf_index: Index of the executed path among :func:`~condvln.program.ast.leaf_paths`.
        branch_goals: Leaf goal object id of every path, in program order.
        waypoints: How many of ``targets`` come before the first decision (shared by every
            branch).
        branch_targets: Every path's targets after its first decision (its arm: in-branch
            subgoals, then the leaf goal), in program order.
    """

    branch_path: tuple[bool, ...]
    condition_truths: tuple[tuple[Condition, bool], ...]
    targets: tuple[str, ...]
    leaf_index: int
    branch_goals: tuple[str, ...]
    waypoints: int = 0
    branch_targets: tuple[tuple[str, ...], ...] = ()

    @property
    def goal(self) -> str:
        """The leaf goal: the last navigation target executed."""
        return self.targets[-1]

    @property
    def subgoals(self) -> tuple[str, ...]:
        """Navigation targets executed before the leaf goal (waypoints, then in-branch)."""
        return self.targets[:-1]

    @property
    def branch_subgoals(self) -> tuple[str, ...]:
        """The gold arm's targets before its leaf goal (after the first decision)."""
        return self.targets[self.waypoints : -1]

    def to_dict(self) -> dict[str, Any]:
        """JSON form (conditions as their AST dicts)."""
        return {
            "branch_path": list(self.branch_path),
            "condition_truths": [
                {"condition": c.to_dict(), "truth": t} for c, t in self.condition_truths
            ],
            "targets": list(self.targets),
            "leaf_index": self.leaf_index,
            "branch_goals": list(self.branch_goals),
            "goal": self.goal,
            "subgoals": list(self.subgoals),
            "waypoints": self.waypoints,
            "branch_subgoals": list(self.branch_subgoals),
            "branch_targets": [list(arm) for arm in self.branch_targets],
        }


def _run(
    graph: SceneGraph,
    steps: tuple[Step, ...],
    decisions: list[bool],
    truths: list[tuple[Condition, bool]],
    targets: list[str],
) -> None:
    for step in steps:
        if isinstance(step, Go):
            targets.append(ground(graph, step.target))
            continue
        assert isinstance(step, If)
        value = evaluate(graph, step.condition)
        decisions.append(value)
        truths.append((step.condition, value))
        _run(graph, step.then if value else step.orelse, decisions, truths, targets)


def resolve(graph: SceneGraph, program: Program) -> Resolution:
    """Run ``program`` on ``graph``; every label of an episode comes from this function."""
    decisions: list[bool] = []
    truths: list[tuple[Condition, bool]] = []
    targets: list[str] = []
    _run(graph, program.steps, decisions, truths, targets)
    paths = leaf_paths(program.steps)
    leaf_index = next(i for i, (branches, _) in enumerate(paths) if branches == tuple(decisions))
    branch_goals = tuple(ground(graph, goes[-1].target) for _, goes in paths)
    shared = program.horizon
    arms = tuple(tuple(ground(graph, g.target) for g in goes[shared:]) for _, goes in paths)
    return Resolution(
        tuple(decisions), tuple(truths), tuple(targets), leaf_index, branch_goals, shared, arms
    )
