"""Sampling conditional programs for one scene, bucket by bucket, gold leaf first.

A **bucket** is (category × spatial composition × evidence observability × horizon × branch
steps):

* *category*: a Table 1 shape (:data:`~condvln.synth.shapes.SKELETONS`);
* *composition*: ``in_room`` — presence conditions about the room that holds the gold goal;
  ``cross_room`` — presence conditions about another room than the gold goal's; ``relation`` —
  object–object relation conditions;
* *observability*: ``visible`` — all the evidence the gold path needs can be seen from where the
  decision is taken: the last pre-decision waypoint's approach point, or the start when there is
  none (true presence: an instance in line of sight within range; absence: that point is in the
  room; relation: both objects in sight); ``hidden`` — some of it cannot;
* *horizon*: waypoints to visit before the decision ("first go to the sofa, then if …");
* *branch steps*: targets in every arm ("if …, go to the sofa and then to the lamp; otherwise
  …"): the arm's last target is its leaf goal, the gold arm's earlier ones are in-branch
  subgoals. Programs are kept small (:data:`MAX_SIZE`): categories with more branches or deeper
  nesting take fewer branch steps, so every instruction fits the word limit.

For each attempt the gold leaf is chosen **first** (the caller balances it), then the conditions
are instantiated so that execution routes to it: true presence conditions name categories present
in the reference room, false ones categories present elsewhere in the scene but absent from it
(preferring categories plausible for that room type). All targets are distinct objects; the
leaf goals lie more than 2 × the success radius apart, and so do the targets of different arms
and an arm's targets and the waypoints, so walking a wrong arm reaches none of the gold arm's
targets. Every instance is run through the interpreter before it is kept, and every rejection
is counted by reason.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from condvln.graph import SEMANTIC_PREDICATES, SceneGraph
from condvln.nav import ExactNavigator, GridNavigator
from condvln.program.ast import CATEGORY_SHAPES, Condition, Exists, Program, Ref, Relation
from condvln.program.interpret import ProgramError, Resolution, ground, resolve, rooms_of_type
from condvln.program.render import MAX_WORDS, plain_words, renderable_name
from condvln.synth.groups import GroupStats, relation_allowed
from condvln.synth.informative import ConditionConfig, relatable
from condvln.synth.priors import GroupKey
from condvln.synth.refexpr import COMPASS_QUALIFIERS, describe
from condvln.synth.shapes import SKELETONS, Skeleton

Vec3 = tuple[float, float, float]
COMPOSITIONS = ("in_room", "cross_room", "relation")
OBSERVABILITIES = ("visible", "hidden")


@dataclass(frozen=True)
class Bucket:
    """One cell of the sampling design."""

    category: str
    composition: str
    observability: str
    horizon: int
    branch_steps: int = 1

    @property
    def key(self) -> str:
        """Stable text key, e.g. ``"nested/cross_room/hidden/h1"`` (``"…/h1/s2"`` for arms of
        two targets)."""
        key = f"{self.category}/{self.composition}/{self.observability}/h{self.horizon}"
        return key if self.branch_steps == 1 else f"{key}/s{self.branch_steps}"


@dataclass(frozen=True)
class SamplerSettings:
    """Knobs of the per-scene sampler (all stamped into the dataset configuration).

    Attributes:
        success_radius: Success radius τ of the scene (leaf goals lie > 2τ apart).
        view_range: How far evidence can be seen from the start (m).
        start_tries: Start positions tried per instance before giving up.
    """

    success_radius: float
    view_range: float = 5.0
    start_tries: int = 12


@dataclass(frozen=True)
class Instance:
    """A sampled conditional instruction with everything its episode needs."""

    scene_id: str
    bucket: Bucket
    program: Program
    resolution: Resolution
    gold_leaf: int
    n_leaves: int
    start: Vec3
    goal_points: dict[str, Vec3]
    gold_is_nearest: bool
    reference_room: str
    evidence_visible: bool
    pair_id: str | None = None
    leaf_rooms: tuple[str, ...] = ()
    start_room: str | None = None
    gold_length: float | None = None
    """Length (m) of the gold execution path, where a vetting stage measured it."""
    payload: Any = field(default=None, compare=False, repr=False)
    """What a vetting stage attached before balancing (the dataset's episode record)."""


class Rejected(Exception):
    """An attempt that could not be instantiated; ``reason`` is counted."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class SceneContext:
    """What the sampler needs to know about one scene, computed once.

    Attributes:
        graph: The scene graph.
        nav: The grid navigator (approach points, visibility, start positions).
        exact: The exact navigator on ``nav``'s navigable area (which leaf goal is nearest the
            start); its goal fields are the episodes' too (built when not given).
        targets: Usable navigation targets: object id → (description, approach point).
        groups: Truth counts per condition group over the run's scenes (``None``: ask any group,
            unweighted).
        conditions: Which conditions are worth asking (:mod:`condvln.synth.informative`).
        compass_targets: Targets only a compass qualifier describes ("north of the sink").
        sorted_targets: The target ids, sorted; ``plain_targets`` those not in
            ``compass_targets``.
        target_rooms: Target id → id of its room.
        compass_objects: Every object whose description has a compass qualifier.
    """

    def __init__(
        self,
        graph: SceneGraph,
        nav: GridNavigator,
        groups: GroupStats | None = None,
        conditions: ConditionConfig | None = None,
        exact: ExactNavigator | None = None,
    ) -> None:
        self.graph = graph
        self.nav = nav
        self.exact = exact or ExactNavigator(graph.scene, config=nav.config, area=nav.area)
        self.groups = groups
        self.conditions = conditions or ConditionConfig()
        self.scene = graph.scene
        self.descriptions = {o.id: _nameable(describe(graph, o.id)) for o in self.scene.objects()}
        self.targets: dict[str, tuple[Ref, Vec3]] = {}
        for obj in self.scene.objects():
            ref = self.descriptions[obj.id]
            point = nav.approach_point(obj) if ref is not None else None
            if ref is not None and point is not None:
                self.targets[obj.id] = (ref, tuple(float(c) for c in point))  # type: ignore[arg-type]
        self._target_index = {oid: i for i, oid in enumerate(self.targets)}
        self._target_points = np.array([p for _, p in self.targets.values()]).reshape(-1, 3)
        self.compass_targets = frozenset(
            oid for oid, (ref, _) in self.targets.items() if ref.relation in COMPASS_QUALIFIERS
        )
        self.sorted_targets = sorted(self.targets)
        self.plain_targets = [o for o in self.sorted_targets if o not in self.compass_targets]
        self.compass_objects = frozenset(
            oid
            for oid, ref in self.descriptions.items()
            if ref is not None and ref.relation in COMPASS_QUALIFIERS
        )
        self.target_rooms = {oid: graph.room_of(oid) for oid in self.targets}
        self.unique_rooms = [
            r.id
            for r in self.scene.rooms
            if len(rooms_of_type(graph, r.room_type)) == 1 and renderable_name(r.room_type)
        ]
        self.room_categories = {
            r.id: {o.category for o in r.objects if renderable_name(o.category)}
            for r in self.scene.rooms
        }
        self.scene_categories = set().union(*self.room_categories.values())
        self._cells = self._room_cells()
        self._facts: dict[str, list[tuple[str, str, str, bool, GroupKey, bool]]] = {}
        self._asked: dict[GroupKey, bool] = {}
        self._target_room_at: dict[str, str | None] = {}
        self._askable: dict[str, list[str]] = {}
        self._near: dict[float, tuple[np.ndarray, list[frozenset[int]]]] = {}

    def _room_cells(self) -> dict[str, np.ndarray]:
        area = self.nav.area
        cells = {}
        for index, room in enumerate(self.scene.rooms):
            rows, cols = np.nonzero(area.free & (area.room_index == index))
            cells[room.id] = area.frame.centres(rows, cols)
        return cells

    def far_apart(self, candidates: list[str], others: list[str], distance: float) -> np.ndarray:
        """Mask over ``candidates``: whose approach point lies more than ``distance`` from the
        approach points of all ``others`` (all true without others)."""
        if not others or not candidates:
            return np.ones(len(candidates), dtype=bool)
        rows = [self._target_index[c] for c in candidates]
        cols = [self._target_index[o] for o in others]
        return self._separation(distance)[0][rows][:, cols].all(axis=1)

    def is_apart(self, candidate: str, others: list[str], distance: float) -> bool:
        """:meth:`far_apart` of one candidate."""
        near = self._separation(distance)[1][self._target_index[candidate]]
        return not any(self._target_index[o] in near for o in others)

    def _separation(self, distance: float) -> tuple[np.ndarray, list[frozenset[int]]]:
        """Which approach points lie more than ``distance`` apart (a matrix over the targets)
        and, per target, the targets that do not (computed once per distance)."""
        if distance not in self._near:
            far = self._target_gaps > distance
            near = [frozenset(np.flatnonzero(~row).tolist()) for row in far]
            self._near[distance] = (far, near)
        return self._near[distance]

    @cached_property
    def _target_gaps(self) -> np.ndarray:
        """Distances between all approach points, once per scene (the sampler asks
        :meth:`far_apart` for every candidate of every attempt); the same arithmetic as a
        pairwise norm of the points asked, so the masks are identical."""
        points = self._target_points
        return np.linalg.norm(points[:, None, :] - points[None, :, :], axis=2)

    def asks(self, key: GroupKey) -> bool:
        """Whether conditions of this group may be asked: presence in the informative band or a
        relation worth asking (:func:`~condvln.synth.groups.relation_allowed`), its truth
        varying across scenes."""
        asked = self._asked.get(key)
        if asked is None:
            if key[0] == "exists":
                allowed = self.conditions.presence_informative(key[1], key[2])
            else:
                allowed = relation_allowed(*key)
            asked = self._asked[key] = allowed and (self.groups is None or self.groups.usable(key))
        return asked

    def askable_categories(self, room_type: str) -> list[str]:
        """The scene's categories, sorted, whose presence in a ``room_type`` may be asked."""
        if room_type not in self._askable:
            self._askable[room_type] = sorted(
                c for c in self.scene_categories if self.asks(("exists", c, room_type))
            )
        return self._askable[room_type]

    def relation_facts(self, room_id: str) -> list[tuple[str, str, str, bool, GroupKey, bool]]:
        """The room's decided semantic facts worth asking, computed once per room.

        Each is ``(subject, target, predicate, truth, group, plain)``: both objects describable,
        neither description leaning on the other's category, the two objects related
        (:func:`~condvln.synth.informative.relatable`), the group askable (:meth:`asks`);
        ``plain`` when neither description has a qualifier.
        """
        if room_id in self._facts:
            return self._facts[room_id]
        relations = self.graph.relations(room_id)
        ids = relations.object_ids
        related = relatable(self.graph, room_id, self.conditions)
        facts = []
        for p, predicate in enumerate(SEMANTIC_PREDICATES):
            rows, cols = np.nonzero((relations.truths[p] < 2) & related[p])
            for i, j in zip(rows.tolist(), cols.tolist(), strict=True):
                a, b = self.descriptions[ids[i]], self.descriptions[ids[j]]
                if i == j or a is None or b is None or not _independent(a, b):
                    continue
                key = (predicate, a.category, b.category)
                if self.asks(key):
                    value = bool(relations.truths[p, i, j])
                    plain = a.relation is None and b.relation is None
                    facts.append((ids[i], ids[j], predicate, value, key, plain))
        self._facts[room_id] = facts
        return facts

    def room_at(self, point: Vec3) -> str | None:
        """Id of the room whose floor holds ``point``, or ``None``."""
        area = self.nav.area
        frame = area.frame
        row = math.floor((point[2] - frame.origin[1]) / frame.cell_size)
        col = math.floor((point[0] - frame.origin[0]) / frame.cell_size)
        if not (0 <= row < frame.shape[0] and 0 <= col < frame.shape[1]):
            return None
        index = int(area.room_index[row, col])
        return self.scene.rooms[index].id if index >= 0 else None

    def target_room_at(self, target: str) -> str | None:
        """:meth:`room_at` of ``target``'s approach point (kept: the sampler asks it often)."""
        if target not in self._target_room_at:
            self._target_room_at[target] = self.room_at(self.targets[target][1])
        return self._target_room_at[target]

    def room_type(self, room_id: str) -> str:
        """Type of room ``room_id``."""
        return self.scene.room(room_id).room_type

    def sample_point(self, room_id: str, rng: np.random.Generator) -> Vec3 | None:
        """A random navigable point in ``room_id`` (floor height), or ``None``."""
        cells = self._cells[room_id]
        if len(cells) == 0:
            return None
        x, z = cells[int(rng.integers(len(cells)))]
        return (float(x), self.scene.room(room_id).floor_height, float(z))


def _nameable(ref: Ref | None) -> Ref | None:
    """``ref`` when every name in it can be rendered, else ``None``."""
    if ref is None:
        return None
    names = [n for n in (ref.category, ref.room, ref.anchor) if n is not None]
    return ref if all(renderable_name(n) for n in names) else None


def _choose_leaves(
    ctx: SceneContext,
    n: int,
    rng: np.random.Generator,
    radius: float,
    room: str | None,
    before: int = 0,
) -> list[tuple[str, ...]]:
    """``n`` arms of ``before + 1`` targets each: ``before`` in-branch targets, then the arm's
    separated leaf goal.

    With ``room``, a random one of the leaf goals (not the gold one in particular) lies in that
    room. Compass-described targets take part as leaf goals with probability
    :data:`COMPASS_KEEP` and are never in-branch targets. Every target of an arm lies more than
    2τ from every target of the other arms (so walking one arm reaches nothing of another); the
    targets of one arm may lie close together.
    """
    pool = ctx.sorted_targets
    keep = (rng.random(len(pool)) < COMPASS_KEEP).tolist()
    compass = ctx.compass_targets
    pool = [o for o, k in zip(pool, keep, strict=True) if k or o not in compass]
    first: list[str] = []
    if room is not None:
        inside = [o for o in pool if ctx.target_rooms[o] == room]
        if not inside:
            raise Rejected("no_target_in_room")
        first = [inside[int(rng.integers(len(inside)))]]
    chosen: list[str] = list(first)
    for k in rng.permutation(len(pool)).tolist():  # the draws of permuting ``pool`` itself
        oid = pool[k]
        if len(chosen) < n and oid not in chosen and _apart(ctx, oid, chosen, radius):
            chosen.append(oid)
    if len(chosen) < n:
        raise Rejected("not_enough_separated_goals")
    leaves = [chosen[i] for i in rng.permutation(n).tolist()]
    arm_of = {leaf: i for i, leaf in enumerate(leaves)}
    inner = ctx.plain_targets
    arms: list[list[str]] = [[] for _ in leaves]
    for i in (i for i in range(n) for _ in range(before)):
        rivals = [o for o, arm in arm_of.items() if arm != i]
        order = [inner[k] for k in rng.permutation(len(inner)).tolist()]
        order.sort(key=lambda o: ctx.targets[o][0].relation is not None)  # plain names first
        found = next(
            (o for o in order if o not in arm_of and _apart(ctx, o, rivals, radius)),
            None,
        )
        if found is None:
            raise Rejected("not_enough_separated_arm_targets")
        arm_of[found] = i
        arms[i].append(found)
    return [(*arm, leaf) for arm, leaf in zip(arms, leaves, strict=True)]


def _apart(ctx: SceneContext, oid: str, others: list[str], radius: float) -> bool:
    """Whether ``oid``'s approach point lies more than 2τ from those of ``others``."""
    return ctx.is_apart(oid, others, 2.0 * radius)


COMPASS_KEEP = 0.3
"""Chance that a target only a compass qualifier describes ("the stool north of the
dishwasher") may be a leaf goal in an attempt; such targets are never waypoints. People
rarely give directions by compass points, so these descriptions stay rare in the text."""


DRAW_REJECTION = "condition_draw"
"""Rejection reason of a condition candidate not kept (cheap; retried with a new attempt)."""


ROOM_ACCEPT = 0.5
"""Draw-success probability at which a room is always accepted (see :func:`_draw`)."""


def _acceptance(ctx: SceneContext, key: GroupKey, truth: bool) -> float:
    """``min(q, 1 − q) / q_truth``: keeping candidates of truth ``truth`` with this probability
    asks a group as often true as false whatever its base rate ``q`` across the run's scenes
    (1 without statistics)."""
    if ctx.groups is None:
        return 1.0
    q = ctx.groups.share(key, truth)
    return min(q, 1.0 - q) / q


def _draw(
    ctx: SceneContext,
    keys: list[GroupKey],
    truths: list[bool],
    truth: bool,
    rng: np.random.Generator,
    missing: str,
) -> int:
    """Index of the candidate to ask, or ``Rejected`` (the attempt starts over; with reason
    ``missing`` when no candidate has the wanted truth).

    Like drawing one candidate uniformly regardless of truth and keeping it when its truth is
    the wanted one with probability :func:`_acceptance` — which asks every group as often true
    as false — but ``1 / ROOM_ACCEPT`` times less often rejected: the room is kept with
    probability ``min(1, Z / ROOM_ACCEPT)`` (``Z`` the single draw's success probability), then
    a candidate is drawn among the kept ones. That is exact only while ``Z ≤ ROOM_ACCEPT``:
    a room with a larger ``Z`` (few candidates, most of the wanted truth) is kept every time
    instead of ``Z / ROOM_ACCEPT`` times as often as the others, so its candidates' groups are
    asked less often with that truth. ``ROOM_ACCEPT = 1`` would be exact at about 2.5 times the
    generation time; balancing evens the truths instead (:func:`~condvln.synth.balance.
    balance`).
    """
    weights = np.array(
        [
            _acceptance(ctx, k, truth) if t is truth else 0.0
            for k, t in zip(keys, truths, strict=True)
        ]
    )
    success = float(weights.sum()) / len(keys)
    if success <= 0.0:
        raise Rejected(missing)  # nothing here has that truth: retrying the same room is futile
    if rng.random() >= min(1.0, success / ROOM_ACCEPT):
        raise Rejected(DRAW_REJECTION)
    return int(rng.choice(len(keys), p=weights / weights.sum()))


def _presence(
    ctx: SceneContext, room: str, truth: bool, used: set[str], rng: np.random.Generator
) -> Exists:
    """A presence condition about ``room`` with the given truth, from a group whose truth varies.

    Candidates are the scene's categories the room type may be asked about, whatever their
    truth; one is drawn by :func:`_draw` among those whose truth in the room is the wanted one
    (present: true; present only elsewhere: false), so the categories asked true and asked
    false follow the same distribution.
    """
    present = ctx.room_categories[room]
    room_type = ctx.room_type(room)
    pool = [c for c in ctx.askable_categories(room_type) if c not in used]
    if not pool:
        raise Rejected("no_presence_category")
    keys = [("exists", c, room_type) for c in pool]
    missing = "no_presence_category" if truth else "no_absent_category"
    category = pool[_draw(ctx, keys, [c in present for c in pool], truth, rng, missing)]
    used.add(category)
    return Exists(category, room_type)


def _independent(a: Ref, b: Ref) -> bool:
    """Neither description leans on the other's category (else the relation is circular)."""
    return a.anchor != b.category and b.anchor != a.category and a.category != b.category


def _relation(
    ctx: SceneContext, room: str, truth: bool, used: set[str], rng: np.random.Generator
) -> Relation:
    """A relation condition in ``room`` with the given truth.

    The predicate is drawn uniformly among those the room can ask, then an ordered pair of
    describable objects whose group is worth asking (:func:`~condvln.synth.groups.
    relation_allowed`, truth varying across scenes) is drawn by :func:`_draw` as in
    :func:`_presence`. Descriptions without a qualifier are preferred, then those without a
    compass qualifier.
    """
    refs = ctx.descriptions
    compass = ctx.compass_objects.__contains__
    for plain_only, no_compass in ((True, True), (False, True), (False, False)):
        by_predicate: dict[str, list[tuple[str, str, GroupKey, bool]]] = {}
        for s, t, predicate, value, key, plain in ctx.relation_facts(room):
            if (plain or not plain_only) and s not in used and t not in used:
                if no_compass and (compass(s) or compass(t)):
                    continue
                by_predicate.setdefault(predicate, []).append((s, t, key, value))
        if not by_predicate:
            continue
        predicates = sorted(by_predicate)
        predicate = predicates[int(rng.integers(len(predicates)))]
        facts = by_predicate[predicate]
        chosen = _draw(
            ctx, [f[2] for f in facts], [f[3] for f in facts], truth, rng, "no_relation_pair"
        )
        s, t = facts[chosen][:2]
        used.update((s, t))
        return Relation(refs[s], predicate, refs[t])  # type: ignore[arg-type]
    raise Rejected("no_relation_pair")


def _reference_room(
    ctx: SceneContext,
    composition: str,
    skeleton: Skeleton,
    radius: float,
    rng: np.random.Generator,
    before: int = 0,
) -> tuple[str, list[tuple[str, ...]]]:
    """The room the conditions ask about and the arms (:func:`_choose_leaves`; each arm's last
    target is its leaf goal), chosen without regard to which leaf is gold.

    ``in_room``: a random uniquely typed room, with a random one of the leaf goals in it (so
    the gold goal is in it no more often than any other leaf); ``cross_room``: a uniquely typed
    room holding no leaf goal; ``relation``: any room with two or more objects.
    """
    if composition == "in_room":
        if not ctx.unique_rooms:
            raise Rejected("no_in_room_room")
        room = ctx.unique_rooms[int(rng.integers(len(ctx.unique_rooms)))]
        return room, _choose_leaves(ctx, skeleton.n_leaves, rng, radius, room, before)
    arms = _choose_leaves(ctx, skeleton.n_leaves, rng, radius, None, before)
    if composition == "cross_room":
        leaf_rooms = {ctx.target_rooms[arm[-1]] for arm in arms}
        pool = [r for r in ctx.unique_rooms if r not in leaf_rooms]
    else:
        pool = [r.id for r in ctx.scene.rooms if len(r.objects) >= 2]
    if not pool:
        raise Rejected(f"no_{composition}_room")
    return pool[int(rng.integers(len(pool)))], arms


def _mentioned(ctx: SceneContext, object_ids: list[str]) -> set[str]:
    """Object ids and the categories their descriptions name (category and anchor)."""
    names: set[str] = set(object_ids)
    for oid in object_ids:
        ref = ctx.targets[oid][0]
        names.update(n for n in (ref.category, ref.anchor) if n is not None)
    return names


def _conditions(
    ctx: SceneContext,
    skeleton: Skeleton,
    gold: int,
    composition: str,
    room: str,
    rng: np.random.Generator,
    avoid: set[str],
) -> list[Condition]:
    """Conditions routing to leaf ``gold``; none names what the targets' descriptions name
    (so "the plant near the coffee table" never meets "if there is no coffee table …")."""
    required = dict(zip(skeleton.on_path(gold), skeleton.decisions(gold), strict=True))
    used = set(avoid)
    make = _relation if composition == "relation" else _presence
    return [
        make(ctx, room, required.get(i, bool(rng.integers(2))), used, rng)
        for i in range(skeleton.n_conditions)
    ]


def decision_point(ctx: SceneContext, prefix_ids: list[str], start: Vec3) -> Vec3:
    """Where the agent stands when it must decide: the approach point of the last
    pre-decision waypoint, or ``start`` when there is none."""
    return ctx.targets[prefix_ids[-1]][1] if prefix_ids else start


def _evidence_visible(
    ctx: SceneContext, resolution: Resolution, start: Vec3, view_range: float
) -> bool:
    """Whether everything the gold path's conditions depend on can be seen from ``start``
    (pass the :func:`decision_point`)."""
    start_room = ctx.room_at(start)
    for condition, value in resolution.condition_truths:
        if isinstance(condition, Exists):
            (room,) = rooms_of_type(ctx.graph, condition.room)
            if not value:
                if start_room != room:
                    return False
                continue
            ids = [o.id for o in ctx.graph.objects_in(room, condition.category)]
        else:
            ids = [ground(ctx.graph, condition.subject), ground(ctx.graph, condition.target)]
        seen = [_sees(ctx, start, oid, view_range) for oid in ids]
        if (isinstance(condition, Exists) and not any(seen)) or (
            isinstance(condition, Relation) and not all(seen)
        ):
            return False
    return True


def _sees(ctx: SceneContext, start: Vec3, object_id: str, view_range: float) -> bool:
    centre = ctx.graph.object(object_id).center
    if math.dist((start[0], start[2]), (centre[0], centre[2])) > view_range:
        return False
    return ctx.nav.visible(start, centre)


def _start(
    ctx: SceneContext,
    bucket: Bucket,
    resolution: Resolution,
    room: str,
    goal_points: dict[str, Vec3],
    settings: SamplerSettings,
    rng: np.random.Generator,
    prefix_ids: list[str],
) -> tuple[Vec3, bool]:
    """A start position far enough from every goal; with no pre-decision waypoint, one whose
    view matches the bucket's observability (with waypoints that is judged at the last one)."""
    wanted = bucket.observability == "visible"
    if prefix_ids:
        point = decision_point(ctx, prefix_ids, (0.0, 0.0, 0.0))
        if _evidence_visible(ctx, resolution, point, settings.view_range) != wanted:
            raise Rejected("no_decision_point_for_observability")
        rooms = [r.id for r in ctx.scene.rooms]
    elif wanted:
        rooms = [room]
    else:  # any other room: excluding the gold goal's room would tell where it is not
        rooms = [r.id for r in ctx.scene.rooms if r.id != room]
    if not rooms:
        raise Rejected("no_start_room")
    points = np.array(list(goal_points.values()))
    for _ in range(settings.start_tries):
        start = ctx.sample_point(rooms[int(rng.integers(len(rooms)))], rng)
        if start is None:
            continue
        gaps = np.hypot(points[:, 0] - start[0], points[:, 2] - start[2])
        if gaps.min() <= 2.0 * settings.success_radius:
            continue
        if prefix_ids:
            return start, wanted
        if _evidence_visible(ctx, resolution, start, settings.view_range) == wanted:
            return start, wanted
    raise Rejected("no_start_for_observability")


def _prefix(
    ctx: SceneContext,
    bucket: Bucket,
    room: str,
    arms: list[tuple[str, ...]],
    rng: np.random.Generator,
    radius: float,
) -> list[str]:
    """``bucket.horizon`` pre-decision waypoints, each more than 2τ from every arm's targets (so
    walking them earns nothing of an arm); for a ``visible`` bucket the last one lies in the
    reference room, where the evidence can be seen."""
    taken = [o for arm in arms for o in arm]
    free = [o for o in ctx.targets if o not in taken and o not in ctx.compass_targets]
    far = ctx.far_apart(free, taken, 2.0 * radius)
    waypoints = [o for o, ok in zip(free, far, strict=True) if ok]
    shuffled = rng.permutation(len(waypoints))  # drawn whether or not waypoints are wanted
    if not bucket.horizon:
        return []
    order = [waypoints[i] for i in shuffled.tolist()]
    if bucket.observability == "visible":
        last = next((o for o in order if ctx.target_room_at(o) == room), None)
        if last is None:
            raise Rejected("no_waypoint_in_room")
        order = [*[o for o in order if o != last][: bucket.horizon - 1], last]
    prefix_ids = order[: bucket.horizon]
    if len(prefix_ids) < bucket.horizon:
        raise Rejected("not_enough_waypoints")
    return prefix_ids


def sample_instance(
    ctx: SceneContext,
    bucket: Bucket,
    gold: int,
    settings: SamplerSettings,
    rng: np.random.Generator,
) -> Instance:
    """Instantiate one program of ``bucket`` whose execution reaches leaf ``gold``.

    Raises:
        Rejected: with the reason when this attempt cannot be completed.
    """
    skeleton = SKELETONS[bucket.category]
    radius = settings.success_radius
    room, arms = _reference_room(
        ctx, bucket.composition, skeleton, radius, rng, bucket.branch_steps - 1
    )
    leaves = [arm[-1] for arm in arms]
    prefix_ids = _prefix(ctx, bucket, room, arms, rng, radius)
    every = [*(o for arm in arms for o in arm), *prefix_ids]
    avoid = _mentioned(ctx, every)
    conditions = _conditions(ctx, skeleton, gold, bucket.composition, room, rng, avoid)
    program = skeleton.build(
        conditions,
        [[ctx.targets[o][0] for o in arm] for arm in arms],
        [ctx.targets[o][0] for o in prefix_ids],
    )
    if plain_words(program) > MAX_WORDS:
        raise Rejected("instruction_too_long")
    try:
        resolution = resolve(ctx.graph, program)
    except ProgramError:
        raise Rejected("unresolvable") from None
    if (
        resolution.leaf_index != gold
        or resolution.branch_goals != tuple(leaves)
        or resolution.branch_targets != tuple(arms)
    ):
        raise Rejected("routing_mismatch")
    goal_points = {o: ctx.targets[o][1] for o in every}
    start, visible = _start(ctx, bucket, resolution, room, goal_points, settings, rng, prefix_ids)
    nearest = _gold_is_nearest(ctx, start, leaves, gold)
    if nearest is None:
        raise Rejected("unreachable_goal")
    return Instance(
        scene_id=ctx.scene.id,
        bucket=bucket,
        program=program,
        resolution=resolution,
        gold_leaf=gold,
        n_leaves=skeleton.n_leaves,
        start=start,
        goal_points=goal_points,
        gold_is_nearest=nearest,
        reference_room=room,
        evidence_visible=visible,
        leaf_rooms=tuple(ctx.graph.room_of(o) for o in leaves),
        start_room=ctx.room_at(start),
    )


def _gold_is_nearest(ctx: SceneContext, start: Vec3, leaves: list[str], gold: int) -> bool | None:
    """Whether leaf ``gold``'s approach point is the one nearest ``start`` by exact geodesic
    distance (the engine of the episode's stored distances), ``None`` when one is unreachable.
    Each leaf's field is solved once per scene and kept by the exact navigator, which the
    episode's step budget and reference path then read again."""
    distances = [ctx.exact.distance(start, ctx.targets[o][1]) for o in leaves]
    if any(d is None for d in distances):
        return None
    return int(np.argmin(distances)) == gold  # type: ignore[arg-type]


BRANCH_STEPS = (1,)
"""Targets per arm of the default design: one, because the deepest categories (four leaves,
depth 3) fit :data:`MAX_SIZE` only so, and every category is sampled with the same workload
design (:mod:`condvln.synth.workload`); ``all_buckets(branch_steps=(1, 2, 3))`` gives longer
arms where a shape allows them."""

MAX_SIZE = 11
"""Largest :func:`program_size` of a designed program (:func:`all_buckets`): the measured
shapes above it mostly have no rendering within :data:`~condvln.program.render.MAX_WORDS`."""


def all_buckets(
    horizons: tuple[int, ...] = (0, 1, 2), branch_steps: tuple[int, ...] = BRANCH_STEPS
) -> list[Bucket]:
    """Every bucket of the design, in a fixed order.

    Only shapes of :func:`program_size` at most :data:`MAX_SIZE` are designed: a category with
    more branches or deeper nesting takes fewer branch steps (simple 1–3; chain 1–2, or 3
    without waypoints; nested 1–2; long_chain 1, or 2 without waypoints; nested_chain and
    deep_nested 1), so its instruction
    fits :data:`~condvln.program.render.MAX_WORDS`. Branch steps vary fastest, so the rows a
    category takes in turn (:func:`synthesize_scene`) spread over its branch steps.
    """
    return [
        Bucket(category, composition, observability, horizon, steps)
        for category in SKELETONS
        for composition in COMPOSITIONS
        for observability in OBSERVABILITIES
        for horizon in horizons
        for steps in branch_steps
        if program_size(category, horizon, steps) <= MAX_SIZE
    ]


def program_size(category: str, horizon: int, branch_steps: int) -> int:
    """How much a program of this shape says: its targets (the waypoints plus every arm's),
    its conditions and its nesting levels below the first (each costs a "check whether …: if
    so" clause).

    >>> program_size("simple", 2, 3), program_size("deep_nested", 0, 2)
    (9, 13)
    """
    skeleton = SKELETONS[category]
    depth = CATEGORY_SHAPES[category][0]
    targets = horizon + skeleton.n_leaves * branch_steps
    return targets + skeleton.n_conditions + depth - 1


BUCKET_RETRIES = 2
"""Further attempts a (bucket, gold leaf) gets after a failed one."""

DRAW_FACTOR = 60
"""Condition draws not kept allowed per budgeted attempt (they do not use up the budget)."""

MAX_FAILED_ROWS = 40
"""Consecutive failed rows (each in the category's next bucket) after which a category stops
in a scene."""


def category_rows(quota: float, n_leaves: int, n_categories: int, rank: int) -> int:
    """Rows (one instance per gold leaf) a category is due in the scene of ``rank``.

    Each category's share is ``quota / n_categories`` instances per scene; rows are spread over
    the scenes by carrying the remainder, so any ``k`` consecutive ranks together get within one
    row of ``k`` times the share.

    >>> [category_rows(10, 4, 6, r) for r in range(6)]
    [0, 1, 0, 1, 0, 1]
    """
    share = quota / (n_categories * n_leaves)
    return math.floor((rank + 1) * share + 0.5) - math.floor(rank * share + 0.5)


def synthesize_scene(
    ctx: SceneContext,
    quota: float,
    settings: SamplerSettings,
    rng: np.random.Generator,
    *,
    buckets: list[Bucket] | None = None,
    leaf_offset: int = 0,
    max_attempts: int | None = None,
    persistence: int = 1,
) -> tuple[list[Instance], Counter[str]]:
    """Sample about ``quota`` instances from one scene in complete rows, to category quotas.

    A **row** is one instance of every gold leaf of one bucket (starting at leaf
    ``leaf_offset``), so gold leaves are balanced per bucket within the scene and global
    balancing has nothing to discard for them. Every category is first given the rows it is due
    (:func:`category_rows`, ``leaf_offset`` being the scene's rank in its stratum), one row per
    category in turn, its buckets taking turns from a random one; then rows are added to the
    categories still sampling until ``quota`` is reached. A leaf attempt is retried up to
    :data:`BUCKET_RETRIES` times (condition draws not kept are retried at once, bounded by
    :data:`DRAW_FACTOR`); a row with a leaf that fails is dropped whole and the category's next
    bucket is tried; a category stops in this scene after :data:`MAX_FAILED_ROWS` failed rows
    in a row (so a category the scene cannot hold does not use up the attempt budget,
    ``max_attempts``, ``12 × quota`` by default); ``persistence`` multiplies both, for a
    category the scene rarely holds. Top-up rows go to the category with the fewest instances
    so far.
    """
    sampler = _SceneSampler(
        ctx, settings, rng, buckets or all_buckets(), leaf_offset, persistence,
        persistence * (max_attempts or max(12 * math.ceil(quota), 24)),
    )  # fmt: skip
    sampler.fill(quota)
    return sampler.found, sampler.rejections


class _SceneSampler:
    """The state of one :func:`synthesize_scene` call: rows found, attempts spent, each
    category's bucket turn and failed rows in a row."""

    def __init__(
        self,
        ctx: SceneContext,
        settings: SamplerSettings,
        rng: np.random.Generator,
        buckets: list[Bucket],
        leaf_offset: int,
        persistence: int,
        budget: int,
    ) -> None:
        self.ctx, self.settings, self.rng = ctx, settings, rng
        self.leaf_offset, self.persistence, self.budget = leaf_offset, persistence, budget
        self.categories = list(dict.fromkeys(b.category for b in buckets))
        self.by_category = {c: [b for b in buckets if b.category == c] for c in self.categories}
        self.turn = {c: int(rng.integers(len(self.by_category[c]))) for c in self.categories}
        self.rejections: Counter[str] = Counter()
        self.found: list[Instance] = []
        self.spent = self.draws = 0
        self.made = dict.fromkeys(self.categories, 0)
        self.failures = dict.fromkeys(self.categories, 0)

    def fill(self, quota: float) -> None:
        """Every category's due rows, one per category in turn; then top-up rows, each to the
        category furthest behind its share, until ``quota`` instances."""
        n = len(self.categories)
        due = {
            c: category_rows(quota, SKELETONS[c].n_leaves, n, self.leaf_offset)
            for c in self.categories
        }
        while any(due[c] > 0 and self.live(c) for c in self.categories):
            for category in self.categories:
                if due[category] > 0 and self.live(category):
                    due[category] -= 1
                    self.add_row(category)
        shift = self.leaf_offset % n
        rotated = self.categories[shift:] + self.categories[:shift]
        while len(self.found) < quota:
            alive = [c for c in rotated if self.live(c)]
            if not alive:
                break
            self.add_row(min(alive, key=lambda c: self.made[c]))

    def live(self, category: str) -> bool:
        """Whether the category may still try rows in this scene."""
        limit = self.persistence * MAX_FAILED_ROWS
        return self.failures[category] < limit and self.spent < self.budget

    def add_row(self, category: str) -> bool:
        """One complete row of the category, its buckets taking turns until one succeeds."""
        options = self.by_category[category]
        while self.live(category):
            bucket = options[self.turn[category] % len(options)]
            self.turn[category] += 1
            row = self.row(bucket)
            if row is not None:
                self.failures[category] = 0
                self.made[category] += len(row)
                self.found.extend(row)
                return True
            self.failures[category] += 1
        return False

    def row(self, bucket: Bucket) -> list[Instance] | None:
        """One instance of every gold leaf of ``bucket`` (from :attr:`leaf_offset`), or None
        when a leaf fails."""
        n_leaves = SKELETONS[bucket.category].n_leaves
        row: list[Instance] = []
        for k in range(n_leaves):
            inst = self.leaf((self.leaf_offset + k) % n_leaves, bucket)
            if inst is None:
                self.rejections["incomplete_row"] += len(row)
                return None
            row.append(inst)
        return row

    def leaf(self, gold: int, bucket: Bucket) -> Instance | None:
        """An instance reaching leaf ``gold``: up to :data:`BUCKET_RETRIES` retries (draws not
        kept retried at once, bounded by :data:`DRAW_FACTOR`)."""
        tries = 0
        while (
            tries <= BUCKET_RETRIES
            and self.spent < self.budget
            and self.draws < DRAW_FACTOR * self.budget
        ):
            try:
                inst = sample_instance(self.ctx, bucket, gold, self.settings, self.rng)
            except Rejected as exc:
                self.rejections[exc.reason] += 1
                if exc.reason == DRAW_REJECTION:
                    self.draws += 1
                else:
                    self.spent, tries = self.spent + 1, tries + 1
                continue
            self.spent += 1
            return inst
        return None


def counterfactual(
    ctx: SceneContext, instance: Instance, settings: SamplerSettings, rng: np.random.Generator
) -> Instance:
    """A minimal-pair sibling: the first decisive condition replaced by one of opposite truth.

    Everything else (targets, start, other conditions) is kept, so the two instructions differ in
    one condition and their gold branches differ.

    Raises:
        Rejected: when no replacement condition exists or the sibling breaks its bucket.
    """
    bucket = instance.bucket
    skeleton = SKELETONS[bucket.category]
    slot = skeleton.on_path(instance.gold_leaf)[0]
    conditions = instance.program.conditions()
    value = instance.resolution.branch_path[0]
    arms = instance.resolution.branch_targets
    targets = [*instance.resolution.targets[: bucket.horizon], *(o for arm in arms for o in arm)]
    used = _used_by(ctx, [c for i, c in enumerate(conditions) if i != slot])
    used |= _mentioned(ctx, targets)
    make = _relation if bucket.composition == "relation" else _presence
    conditions[slot] = make(ctx, instance.reference_room, not value, used, rng)
    prefix = [step.target for step in instance.program.steps[: bucket.horizon]]  # type: ignore[union-attr]
    leaves = [[ctx.targets[o][0] for o in arm] for arm in arms]
    program = skeleton.build(conditions, leaves, prefix)
    if plain_words(program) > MAX_WORDS:
        raise Rejected("instruction_too_long")
    try:
        resolution = resolve(ctx.graph, program)
    except ProgramError:
        raise Rejected("counterfactual_unresolvable") from None
    point = decision_point(ctx, list(instance.resolution.targets[: bucket.horizon]), instance.start)
    visible = _evidence_visible(ctx, resolution, point, settings.view_range)
    nearest = _gold_is_nearest(
        ctx, instance.start, list(resolution.branch_goals), resolution.leaf_index
    )
    if nearest is None:
        raise Rejected("unreachable_goal")
    return Instance(
        scene_id=instance.scene_id,
        bucket=Bucket(
            bucket.category,
            bucket.composition,
            "visible" if visible else "hidden",
            bucket.horizon,
            bucket.branch_steps,
        ),
        program=program,
        resolution=resolution,
        gold_leaf=resolution.leaf_index,
        n_leaves=instance.n_leaves,
        start=instance.start,
        goal_points=instance.goal_points,
        gold_is_nearest=nearest,
        reference_room=instance.reference_room,
        evidence_visible=visible,
        leaf_rooms=instance.leaf_rooms,
        start_room=instance.start_room,
    )


def _used_by(ctx: SceneContext, conditions: list[Condition]) -> set[str]:
    """What other conditions already use: categories (presence) or object ids (relations)."""
    used: set[str] = set()
    for condition in conditions:
        if isinstance(condition, Exists):
            used.add(condition.category)
        else:
            used.update(ground(ctx.graph, r) for r in (condition.subject, condition.target))
    return used
