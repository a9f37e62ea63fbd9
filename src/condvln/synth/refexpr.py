"""Referring expressions: the shortest description that picks out exactly one object.

Descriptions are tried from short to long — category; category + room; category + a semantic
qualifier ("near", "far from", "above", "below") to a unique anchor, without and then with the
room; only then compass qualifiers ("north of"), so compass words appear only when no room or
semantic qualifier singles the object out — and the first one the interpreter grounds to exactly
the object wins (:func:`condvln.program.interpret.denote` is the single definition of what a
description means). Objects no description can single out are not used.

Two rules keep descriptions the ones a person would give: a qualifier without a room must also
fail clearly for every object of the category in the other rooms (:func:`unique_house_wide`:
the interpreter only looks in the anchor's room, a reader looks in the whole house), and an anchor is never a smaller movable item
(one resting on a surface), nor anything resting on the described object (:func:`fair_anchor`).

Spatial qualifiers must be robust, not merely true: semantic predicates are three-valued already
(an UNDECIDED fact about any candidate rules the qualifier out), and compass qualifiers ("north
of") are only used when the described object lies at least ``margin_deg`` inside the sector and
every other candidate at least ``margin_deg`` outside it, with a clear horizontal separation.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from condvln.graph import COMPASS, SEMANTIC_PREDICATES, SceneGraph, Truth
from condvln.graph.scene_graph import EdgeMetrics, room_relations
from condvln.program.ast import Ref
from condvln.program.interpret import ProgramError, denote, rooms_of_type
from condvln.scene.model import SceneObject

SEMANTIC_QUALIFIERS = ("near", "far from", "above", "below")
COMPASS_QUALIFIERS = tuple(f"{c} of" for c in COMPASS)


@dataclass(frozen=True)
class QualifierPolicy:
    """How cautious compass qualifiers are.

    Attributes:
        margin_deg: Minimum angular distance from a sector edge (and from the ±30° level edge).
        min_horizontal: Minimum horizontal distance between object and anchor (m).
        level_angle_deg: The graph's level half-angle (elevation bins).
    """

    margin_deg: float = 7.5
    min_horizontal: float = 0.5
    level_angle_deg: float = 30.0


def _angle_gap(a: float, b: float) -> float:
    return abs((a - b + 180.0) % 360.0 - 180.0)


def compass_truth(
    graph: SceneGraph, subject: str, predicate: str, target: str, policy: QualifierPolicy
) -> Truth:
    """Robust truth of a level compass predicate ("north of") as a reader judges it.

    TRUE: the bearing is well inside the sector, the pair is level and clearly apart
    horizontally. FALSE: the bearing is well outside the sector and clearly apart horizontally
    — an object below a wall mirror but on its north-west is not "clearly not north-west of"
    it, whatever the graph's elevation bins say. Anything else is UNDECIDED."""
    return _compass_truth(graph.metrics(subject, target), predicate, policy)


def _compass_truth(m: EdgeMetrics, predicate: str, policy: QualifierPolicy) -> Truth:
    centre = 45.0 * COMPASS.index(predicate.removesuffix(" of"))
    off = _angle_gap(m.azimuth_deg, centre)
    level_gap = policy.level_angle_deg - abs(m.elevation_deg)
    clear_in = off <= 22.5 - policy.margin_deg and level_gap >= policy.margin_deg
    if clear_in and m.horizontal_distance >= policy.min_horizontal:
        return Truth.TRUE
    if off >= 22.5 + policy.margin_deg and m.horizontal_distance >= policy.min_horizontal:
        return Truth.FALSE  # a reader judges the bearing, not the height: both must be clear
    return Truth.UNDECIDED


def _qualifier_robust(
    graph: SceneGraph, object_id: str, ref: Ref, anchor: str, policy: QualifierPolicy
) -> bool:
    """True when a compass qualifier holds robustly for ``object_id`` and fails for the rest."""
    if ref.relation not in COMPASS_QUALIFIERS:
        return True  # semantic predicates carry their own dead band
    room = graph.room_of(anchor)
    for other in graph.objects_in(room, ref.category):
        if other.id == anchor:
            continue
        truth = compass_truth(graph, other.id, ref.relation, anchor, policy)
        expected = Truth.TRUE if other.id == object_id else Truth.FALSE
        if truth is not expected:
            return False
    return True


def _volume(obj: SceneObject) -> float | None:
    box = obj.box
    return None if box is None else math.prod(box.size)


def fair_anchor(graph: SceneGraph, obj: SceneObject, anchor: SceneObject) -> bool:
    """Whether ``anchor`` may locate ``obj``: it does not rest on ``obj`` (directly or on
    something resting on it), and it is not a smaller movable item (one resting on a surface)
    — people locate things by landmarks, not "the sink beneath the dish sponge"."""
    seen: set[str] = set()
    parent = anchor.parent_id
    while parent is not None and parent not in seen:
        if parent == obj.id:
            return False
        seen.add(parent)
        parent = graph.object(parent).parent_id if parent in graph.object_ids else None
    movable = anchor.placement == "surface" or anchor.parent_id is not None
    size, anchor_size = _volume(obj), _volume(anchor)
    return not (movable and size is not None and anchor_size is not None and anchor_size < size)


def unique_house_wide(graph: SceneGraph, ref: Ref, anchor: str, policy: QualifierPolicy) -> bool:
    """Whether ``ref``'s qualifier is FALSE, computed on the pair's geometry with the graph's
    thresholds, for every object of its category outside the anchor's room."""
    room = graph.room_of(anchor)
    anchor_obj = graph.object(anchor)
    for rid in graph.room_ids:
        if rid == room:
            continue
        for other in graph.objects_in(rid, ref.category):
            pair = room_relations("pair", (other, anchor_obj), graph.config)
            if ref.relation in COMPASS_QUALIFIERS:
                truth = _compass_truth(pair.edge_metrics(0, 1), ref.relation, policy)
            else:
                index = SEMANTIC_PREDICATES.index(ref.relation)
                truth = Truth.from_code(pair.truths[index, 0, 1])
            if truth is not Truth.FALSE:
                return False
    return True


def _candidates(graph: SceneGraph, object_id: str) -> Iterator[Ref]:
    """Descriptions of ``object_id`` in the order they are tried (lazily; not yet checked).

    Category; category + room; then semantic qualifiers (without, then with the room), and only
    then compass ones, each over the anchors nearest first.
    """
    obj = graph.object(object_id)
    room = graph.scene.room(graph.room_of(object_id))
    scopes: list[str | None] = [None]
    if len(rooms_of_type(graph, room.room_type)) == 1:
        scopes.append(room.room_type)
    for scope in scopes:
        yield Ref(obj.category, scope)
    others = sorted(
        (o for o in room.objects if o.category != obj.category and fair_anchor(graph, obj, o)),
        key=lambda o: (math.dist(o.center, obj.center), o.id),
    )
    for predicates in (SEMANTIC_QUALIFIERS, COMPASS_QUALIFIERS):
        for scope in scopes:
            pool = graph.scene.objects() if scope is None else iter(room.objects)
            counts = Counter(o.category for o in pool)
            for anchor in (o.category for o in others if counts[o.category] == 1):
                for predicate in predicates:
                    yield Ref(obj.category, scope, predicate, anchor)


def describe(
    graph: SceneGraph, object_id: str, policy: QualifierPolicy | None = None
) -> Ref | None:
    """The shortest robust description of ``object_id``, or ``None`` when there is none."""
    policy = policy or QualifierPolicy()
    room_id = graph.room_of(object_id)
    for ref in _candidates(graph, object_id):
        try:
            if denote(graph, ref) != [object_id]:
                continue
        except ProgramError:
            continue
        if ref.anchor is None:
            return ref
        (anchor,) = (o.id for o in graph.objects_in(room_id, ref.anchor))
        if _qualifier_robust(graph, object_id, ref, anchor, policy) and (
            ref.room is not None or unique_house_wide(graph, ref, anchor, policy)
        ):
            return ref
    return None
