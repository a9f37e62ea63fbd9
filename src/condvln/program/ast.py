"""Conditional navigation programs: the AST every instruction is a rendering of.

A program is a sequence of steps; a step is :class:`Go` (navigate to a described object) or
:class:`If` (a condition, a then-arm and an else-arm, each a sequence of steps). An else-if chain
is an :class:`If` that is the only step of an else-arm. Targets and condition operands are
:class:`Ref` descriptions, never object ids: the interpreter grounds them in a scene graph, so a
program parsed back from its text is the same program.

``depth`` is the nesting of conditionals (an else-if link stays at its parent's level) and
``chain`` the number of conditions in the longest if / else-if ladder:

>>> x, y, z, w = (Go(Ref(c)) for c in ("sofa", "bed", "sink", "desk"))
>>> a, b, c = (Exists(k, "kitchen") for k in ("stool", "kettle", "toaster"))
>>> simple = Program((If(a, (x,), (y,)),))
>>> nested_chain = Program((If(a, (If(b, (x,), (y,)),), (If(c, (z,), (w,)),)),))
>>> (simple.depth, simple.chain, simple.category)
(1, 1, 'simple')
>>> (nested_chain.depth, nested_chain.chain, nested_chain.category)
(2, 2, 'nested_chain')
>>> program_from_dict(nested_chain.to_dict()) == nested_chain
True
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

from condvln.errors import FormatError

CATEGORIES: dict[tuple[int, int], str] = {
    (1, 1): "simple",
    (2, 1): "nested",
    (3, 1): "deep_nested",
    (1, 2): "chain",
    (1, 3): "long_chain",
    (2, 2): "nested_chain",
}
"""Table 1 of the paper: (depth, chain) → category name."""

CATEGORY_SHAPES: dict[str, tuple[int, int]] = {name: dc for dc, name in CATEGORIES.items()}


@dataclass(frozen=True, slots=True)
class Ref:
    """A referring expression: "the stool north of the dishwasher in the kitchen".

    Attributes:
        category: Object category ("stool").
        room: Room type stated in the text ("kitchen"), or ``None`` (scope: the whole scene).
        relation: Spatial qualifier predicate ("north of", "near"), or ``None``.
        anchor: Category of the qualifier's anchor object ("dishwasher"); with ``relation``.
    """

    category: str
    room: str | None = None
    relation: str | None = None
    anchor: str | None = None

    def __post_init__(self) -> None:
        if (self.relation is None) != (self.anchor is None):
            raise ValueError("a qualifier needs both a relation and an anchor")

    def to_dict(self) -> dict[str, Any]:
        """JSON form (keys with ``None`` values are kept, so the shape is fixed)."""
        return {
            "category": self.category,
            "room": self.room,
            "relation": self.relation,
            "anchor": self.anchor,
        }


@dataclass(frozen=True, slots=True)
class Exists:
    """Presence condition: "there is a {category} in the {room}"."""

    category: str
    room: str

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {"type": "exists", "category": self.category, "room": self.room}


@dataclass(frozen=True, slots=True)
class Relation:
    """Relation condition: "{subject} is {predicate} {target}" ("the lamp is near the bed")."""

    subject: Ref
    predicate: str
    target: Ref

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "type": "relation",
            "subject": self.subject.to_dict(),
            "predicate": self.predicate,
            "target": self.target.to_dict(),
        }


Condition: TypeAlias = Exists | Relation


@dataclass(frozen=True, slots=True)
class Go:
    """Navigate to the object ``target`` describes."""

    target: Ref

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {"type": "go", "target": self.target.to_dict()}


@dataclass(frozen=True, slots=True)
class If:
    """``IF condition THEN then ELSE orelse``; both arms are non-empty step sequences."""

    condition: Condition
    then: tuple[Step, ...]
    orelse: tuple[Step, ...]

    def __post_init__(self) -> None:
        if not self.then or not self.orelse:
            raise ValueError("both arms of an If need at least one step")

    @property
    def else_if(self) -> If | None:
        """The chained conditional when the else-arm is exactly one :class:`If`."""
        if len(self.orelse) == 1 and isinstance(self.orelse[0], If):
            return self.orelse[0]
        return None

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "type": "if",
            "condition": self.condition.to_dict(),
            "then": [s.to_dict() for s in self.then],
            "else": [s.to_dict() for s in self.orelse],
        }


Step: TypeAlias = Go | If


def _steps_depth(steps: tuple[Step, ...]) -> int:
    return max((_if_depth(s) for s in steps if isinstance(s, If)), default=0)


def _if_depth(node: If) -> int:
    link = node.else_if
    else_depth = _if_depth(link) if link is not None else 1 + _steps_depth(node.orelse)
    return max(1 + _steps_depth(node.then), else_depth)


def _ladder_length(node: If) -> int:
    link = node.else_if
    return 1 if link is None else 1 + _ladder_length(link)


def iter_ifs(steps: tuple[Step, ...]) -> Iterator[If]:
    """Every :class:`If` in ``steps``, pre-order (then-arm before else-arm)."""
    for step in steps:
        if isinstance(step, If):
            yield step
            yield from iter_ifs(step.then)
            yield from iter_ifs(step.orelse)


def leaf_paths(steps: tuple[Step, ...]) -> list[tuple[tuple[bool, ...], tuple[Go, ...]]]:
    """Every execution path of ``steps``: (branch decisions, navigation steps executed).

    Paths come in program order (then-arm before else-arm); the last :class:`Go` of a path is
    its leaf goal.
    """
    paths: list[tuple[tuple[bool, ...], tuple[Go, ...]]] = [((), ())]
    for step in steps:
        if isinstance(step, Go):
            paths = [(b, (*g, step)) for b, g in paths]
            continue
        extended = []
        for branches, goes in paths:
            for outcome, arm in ((True, step.then), (False, step.orelse)):
                for sub_b, sub_g in leaf_paths(arm):
                    extended.append(((*branches, outcome, *sub_b), goes + sub_g))
        paths = extended
    return paths


@dataclass(frozen=True, slots=True)
class Program:
    """A conditional navigation program: a non-empty sequence of steps."""

    steps: tuple[Step, ...]

    def __post_init__(self) -> None:
        if not self.steps:
            raise ValueError("a program needs at least one step")

    @property
    def depth(self) -> int:
        """Nesting depth of conditionals (0 for a linear program)."""
        return _steps_depth(self.steps)

    @property
    def chain(self) -> int:
        """Conditions in the longest if / else-if ladder (0 for a linear program)."""
        return max((_ladder_length(n) for n in iter_ifs(self.steps)), default=0)

    @property
    def category(self) -> str:
        """Table 1 category name, or ``"d{depth}c{chain}"`` outside the table."""
        return CATEGORIES.get((self.depth, self.chain), f"d{self.depth}c{self.chain}")

    @property
    def horizon(self) -> int:
        """Navigation steps before the first decision ("first go to the sofa, then if …")."""
        count = 0
        for step in self.steps:
            if isinstance(step, If):
                break
            count += 1
        return count

    def conditions(self) -> list[Condition]:
        """All conditions, pre-order."""
        return [node.condition for node in iter_ifs(self.steps)]

    def to_dict(self) -> dict[str, Any]:
        """JSON form: ``{"steps": [...]}``."""
        return {"steps": [s.to_dict() for s in self.steps]}


def _require(raw: Mapping[str, Any], key: str, where: str) -> Any:
    if not isinstance(raw, Mapping) or key not in raw:
        raise FormatError("missing", record=where, field=key)
    return raw[key]


def ref_from_dict(raw: Mapping[str, Any], where: str = "ref") -> Ref:
    """Inverse of :meth:`Ref.to_dict`."""
    try:
        return Ref(
            category=_require(raw, "category", where),
            room=raw.get("room"),
            relation=raw.get("relation"),
            anchor=raw.get("anchor"),
        )
    except ValueError as exc:
        raise FormatError(str(exc), record=where) from None


def condition_from_dict(raw: Mapping[str, Any], where: str = "condition") -> Condition:
    """Inverse of ``Exists.to_dict`` / ``Relation.to_dict``."""
    kind = _require(raw, "type", where)
    if kind == "exists":
        return Exists(_require(raw, "category", where), _require(raw, "room", where))
    if kind == "relation":
        return Relation(
            ref_from_dict(_require(raw, "subject", where), f"{where}.subject"),
            _require(raw, "predicate", where),
            ref_from_dict(_require(raw, "target", where), f"{where}.target"),
        )
    raise FormatError(f"unknown condition type {kind!r}", record=where, field="type")


def step_from_dict(raw: Mapping[str, Any], where: str = "step") -> Step:
    """Inverse of ``Go.to_dict`` / ``If.to_dict``."""
    kind = _require(raw, "type", where)
    if kind == "go":
        return Go(ref_from_dict(_require(raw, "target", where), f"{where}.target"))
    if kind == "if":
        try:
            return If(
                condition_from_dict(_require(raw, "condition", where), f"{where}.condition"),
                _steps_from_list(_require(raw, "then", where), f"{where}.then"),
                _steps_from_list(_require(raw, "else", where), f"{where}.else"),
            )
        except ValueError as exc:
            raise FormatError(str(exc), record=where) from None
    raise FormatError(f"unknown step type {kind!r}", record=where, field="type")


def _steps_from_list(raw: Any, where: str) -> tuple[Step, ...]:
    if not isinstance(raw, list):
        raise FormatError("must be a list of steps", record=where)
    return tuple(step_from_dict(s, f"{where}[{i}]") for i, s in enumerate(raw))


def program_from_dict(raw: Mapping[str, Any]) -> Program:
    """Inverse of :meth:`Program.to_dict`; malformed input raises :class:`FormatError`."""
    steps = _steps_from_list(_require(raw, "steps", "program"), "program.steps")
    if not steps:
        raise FormatError("a program needs at least one step", record="program", field="steps")
    return Program(steps)
