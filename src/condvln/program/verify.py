"""Independent re-derivation of an instruction's labels from the scene geometry alone.

This module deliberately shares no code with the scene-graph builder, the interpreter or the
sampler: it recomputes every predicate it needs pair by pair from the objects' boxes, radii and
centres with the thresholds of the stamped :class:`~condvln.graph.config.RelationConfig` (plain
scalar maths, written from the definitions in the paper and DESIGN), grounds every description,
runs the program, and compares what it finds with the stored labels. A disagreement is a bug in
one of the two paths, and is reported rather than resolved.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from condvln.graph.config import RelationConfig
from condvln.program.ast import Exists, Go, If, Program, Ref, Relation, Step, leaf_paths
from condvln.scene.model import Scene, SceneObject

TRUE, FALSE, UNKNOWN = "true", "false", "undecided"
_COMPASS = (
    "east",
    "north-east",
    "north",
    "north-west",
    "west",
    "south-west",
    "south",
    "south-east",
)


class Unverifiable(Exception):
    """A description or fact the independent check cannot settle (ambiguous, undecided)."""


def _box(obj: SceneObject) -> tuple[tuple[float, ...], tuple[float, ...]] | None:
    if obj.aabb is not None:
        return obj.aabb.min, obj.aabb.max
    if obj.size is not None:
        lo = tuple(c - s / 2 for c, s in zip(obj.center, obj.size, strict=True))
        hi = tuple(c + s / 2 for c, s in zip(obj.center, obj.size, strict=True))
        return lo, hi
    return None


def _radius(obj: SceneObject) -> float | None:
    if obj.radius is not None:
        return obj.radius
    box = _box(obj)
    if box is None:
        return None
    return 0.5 * math.dist(box[0], box[1])


def _used_distance(s: SceneObject, t: SceneObject) -> float:
    bs, bt = _box(s), _box(t)
    if bs is not None and bt is not None:
        gaps = [max(bs[0][a] - bt[1][a], bt[0][a] - bs[1][a], 0.0) for a in range(3)]
        return math.sqrt(sum(g * g for g in gaps))
    rs, rt = _radius(s), _radius(t)
    centre = math.dist(s.center, t.center)
    if rs is not None and rt is not None:
        return max(0.0, centre - rs - rt)
    return centre


def _band(value: float, holds: float, fails: float) -> str:
    """TRUE beyond ``holds``, FALSE beyond ``fails`` (either direction), else undecided."""
    if holds >= fails:
        return TRUE if value >= holds else FALSE if value <= fails else UNKNOWN
    return TRUE if value <= holds else FALSE if value >= fails else UNKNOWN


def _and(a: str, b: str) -> str:
    if FALSE in (a, b):
        return FALSE
    return TRUE if a == b == TRUE else UNKNOWN


def _over(s: SceneObject, t: SceneObject, cfg: RelationConfig) -> str:
    bs, bt = _box(s), _box(t)
    if bs is None or bt is None:
        horizontal = math.hypot(s.center[0] - t.center[0], s.center[2] - t.center[2])
        return _band(horizontal, cfg.stack_horizontal_holds, cfg.stack_horizontal_fails)
    width = min(bs[1][0], bt[1][0]) - max(bs[0][0], bt[0][0])
    depth = min(bs[1][2], bt[1][2]) - max(bs[0][2], bt[0][2])
    areas = [(b[1][0] - b[0][0]) * (b[1][2] - b[0][2]) for b in (bs, bt)]
    smaller = min(areas)
    ratio = max(width, 0.0) * max(depth, 0.0) / smaller if smaller > 0 else 0.0
    return _band(ratio, cfg.overlap_holds, cfg.overlap_fails)


def _compass(s: SceneObject, t: SceneObject, name: str, cfg: RelationConfig) -> str:
    dx, dy, dz = (a - b for a, b in zip(s.center, t.center, strict=True))
    horizontal = math.hypot(dx, dz)
    if horizontal < cfg.min_horizontal:
        return FALSE
    level = abs(dy) <= math.tan(math.radians(cfg.level_angle)) * horizontal
    azimuth = math.degrees(math.atan2(-dz, dx))  # north = −Z is 90°
    sector = _COMPASS[int(((azimuth + 22.5) % 360.0) // 45.0)]
    return TRUE if level and f"{sector} of" == name else FALSE


def relation_truth(s: SceneObject, predicate: str, t: SceneObject, cfg: RelationConfig) -> str:
    """Truth of "s PREDICATE t" computed from geometry: ``"true"``, ``"false"``, ``"undecided"``."""
    higher = _band(s.center[1] - t.center[1], cfg.higher_holds, cfg.higher_fails)
    lower = _band(t.center[1] - s.center[1], cfg.higher_holds, cfg.higher_fails)
    if predicate == "near":
        return _band(_used_distance(s, t), cfg.near_holds, cfg.near_fails)
    if predicate == "far from":
        return _band(_used_distance(s, t), cfg.far_holds, cfg.far_fails)
    if predicate == "higher than":
        return higher
    if predicate == "lower than":
        return lower
    if predicate == "above":
        return _and(higher, _over(s, t, cfg))
    if predicate == "below":
        return _and(lower, _over(t, s, cfg))
    if predicate.removesuffix(" of") in _COMPASS:
        return _compass(s, t, predicate, cfg)
    raise Unverifiable(f"predicate {predicate!r} is not checked independently")


class _World:
    """The scene seen by the checker: rooms by type, objects by id."""

    def __init__(self, scene: Scene, cfg: RelationConfig) -> None:
        self.scene, self.cfg = scene, cfg
        self.room_of = {o.id: r for r in scene.rooms for o in r.objects}

    def scope(self, room_type: str | None) -> list:
        rooms = [r for r in self.scene.rooms if room_type is None or r.room_type == room_type]
        if room_type is not None and len(rooms) != 1:
            raise Unverifiable(f"room type {room_type!r} names {len(rooms)} rooms")
        return rooms

    def denote(self, ref: Ref) -> str:
        rooms = self.scope(ref.room)
        found = [o for r in rooms for o in r.objects if o.category == ref.category]
        if ref.relation is not None:
            anchors = [o for r in rooms for o in r.objects if o.category == ref.anchor]
            if len(anchors) != 1:
                raise Unverifiable(f"anchor {ref.anchor!r} is not unique")
            anchor = anchors[0]
            same_room = [
                o
                for o in found
                if o.id != anchor.id and self.room_of[o.id].id == self.room_of[anchor.id].id
            ]
            truths = {o.id: relation_truth(o, ref.relation, anchor, self.cfg) for o in same_room}
            if UNKNOWN in truths.values():
                raise Unverifiable(f"qualifier of {ref} is undecided for a candidate")
            found = [o for o in same_room if truths[o.id] == TRUE]
        if len(found) != 1:
            raise Unverifiable(f"{ref} denotes {len(found)} objects")
        return found[0].id

    def holds(self, condition: Exists | Relation) -> bool:
        if isinstance(condition, Exists):
            (room,) = self.scope(condition.room)
            return any(o.category == condition.category for o in room.objects)
        s = self.scene.object(self.denote(condition.subject))
        t = self.scene.object(self.denote(condition.target))
        if self.room_of[s.id].id != self.room_of[t.id].id:
            raise Unverifiable("relation between objects of different rooms")
        truth = relation_truth(s, condition.predicate, t, self.cfg)
        if truth == UNKNOWN:
            raise Unverifiable(f"{condition} is undecided")
        return truth == TRUE


def _execute(world: _World, steps: tuple[Step, ...], out: dict[str, list]) -> None:
    for step in steps:
        if isinstance(step, Go):
            out["targets"].append(world.denote(step.target))
        else:
            assert isinstance(step, If)
            value = world.holds(step.condition)
            if not out["branch_path"]:
                out["decided_after"].append(len(out["targets"]))
            out["branch_path"].append(value)
            _execute(world, step.then if value else step.orelse, out)


def _leaf_goals(world: _World, steps: tuple[Step, ...]) -> list[str]:
    """Goal of every execution path, then-arm first (the last Go of each path)."""
    goals: list[str] = []
    for index, step in enumerate(steps):
        if isinstance(step, If):
            rest = steps[index + 1 :]
            for arm in (step.then, step.orelse):
                arm_goals = _leaf_goals(world, arm + rest)
                goals.extend(arm_goals)
            return goals
    last = steps[-1]
    assert isinstance(last, Go)
    return [world.denote(last.target)]


def verify_labels(
    scene: Scene, config: RelationConfig, program: Program, labels: Mapping[str, Any]
) -> list[str]:
    """Re-derive the labels of ``program`` on ``scene`` and list every disagreement.

    Args:
        scene: The scene the episode was generated from.
        config: The relation thresholds stamped into the dataset.
        program: The recorded program.
        labels: Stored labels with keys ``branch_path``, ``goal``, ``subgoals`` and
            ``branch_goals`` (object ids), as written by the generator, and optionally
            ``branch_subgoals`` (the gold arm's targets after the first decision, before the
            goal) and ``branch_steps`` (targets in the gold arm), checked when present.

    Returns:
        Human-readable problems; empty when every label is re-derived exactly.
    """
    world = _World(scene, config)
    found: dict[str, list] = {"targets": [], "branch_path": [], "decided_after": []}
    try:
        _execute(world, program.steps, found)
        branch_goals = _leaf_goals(world, program.steps)
    except Unverifiable as exc:
        return [f"cannot re-derive: {exc}"]
    targets = found["targets"]
    shared = found["decided_after"][0] if found["decided_after"] else len(targets)
    derived = {
        "branch_path": found["branch_path"],
        "goal": targets[-1],
        "subgoals": targets[:-1],
        "branch_goals": branch_goals,
        "branch_subgoals": targets[shared:-1],
        "branch_steps": len(targets) - shared,
    }
    optional = ("branch_subgoals", "branch_steps")
    arms = sorted({len(goes) - program.horizon for _, goes in leaf_paths(program.steps)})
    uneven = [f"branch_steps: arms hold {arms} targets, not all the same"] * (
        "branch_steps" in labels and len(arms) > 1
    )
    return uneven + [
        f"{key}: stored {labels.get(key)!r}, re-derived {value!r}"
        for key, value in derived.items()
        if (key not in optional or key in labels) and _as_list(labels.get(key)) != _as_list(value)
    ]


def _as_list(value: Any) -> Any:
    return list(value) if isinstance(value, (list, tuple)) else value
