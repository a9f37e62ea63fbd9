"""How often each condition group is true across the scenes of a run (the scene distribution).

Before sampling, every scene of a run is scanned once (:func:`scene_group_counts`, summed in
scene order into :class:`GroupStats`): for presence groups ``("exists", category, room type)``
each uniquely typed room counts once per category of its house — true when the room holds the
category, false when only another room does (exactly the false conditions the sampler may
ask); for relation groups ``(predicate, subject category, target category)`` every ordered pair
of same-room objects of two categories the sampler may relate
(:func:`~condvln.synth.informative.relatable`) counts once per decided predicate, where
above / below are only considered between an object and a receptacle it can rest on
(:func:`~condvln.synth.priors.can_stack`).

The sampler then asks only groups whose truth varies (:meth:`GroupStats.usable`) and picks among
candidates with weight ``1 / P(truth | group)`` (:meth:`GroupStats.weight`), so that a group is
asked true about as often as false; :mod:`condvln.synth.balance` removes what skew remains.

>>> stats = GroupStats({("exists", "sofa", "living room"): (9, 1), ("near", "a", "b"): (3, 3)})
>>> stats.usable(("exists", "sofa", "living room")), stats.usable(("near", "a", "b"))
(False, True)
>>> round(stats.weight(("near", "a", "b"), True), 2)
2.0
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

from condvln.graph import SEMANTIC_PREDICATES, SceneGraph
from condvln.program.interpret import rooms_of_type
from condvln.program.render import renderable_name
from condvln.synth.informative import ConditionConfig, relatable
from condvln.synth.priors import GroupKey, can_stack

MIN_SHARE = 0.15
"""A group is asked only when its rarer truth has at least this share in the scene distribution."""

_STACKED = {"above": True, "below": False}  # predicate → subject is the upper object


@dataclass(frozen=True)
class GroupStats:
    """Truth counts per condition group over the scenes of a run.

    Attributes:
        counts: Group → ``(true, false)`` counts.
    """

    counts: Mapping[GroupKey, tuple[int, int]] = field(default_factory=dict)

    @classmethod
    def total(cls, parts: Iterable[Counter[tuple[GroupKey, bool]]]) -> GroupStats:
        """Sum per-scene counts (:func:`scene_group_counts`) into one table."""
        total: Counter[tuple[GroupKey, bool]] = Counter()
        for part in parts:
            total.update(part)
        keys = sorted({k for k, _ in total})
        return cls({k: (total[k, True], total[k, False]) for k in keys})

    def share(self, key: GroupKey, truth: bool) -> float:
        """Smoothed probability that the group has truth ``truth`` (0.5 for unseen groups)."""
        true, false = self.counts.get(key, (0, 0))
        return ((true if truth else false) + 1) / (true + false + 2)

    def usable(self, key: GroupKey) -> bool:
        """Whether the group's truth varies: both truths seen, the rarer ≥ :data:`MIN_SHARE`."""
        true, false = self.counts.get(key, (0, 0))
        return min(true, false) >= 1 and min(true, false) >= MIN_SHARE * (true + false)

    def n_usable(self) -> int:
        """How many groups may be asked."""
        return sum(self.usable(k) for k in self.counts)

    def weight(self, key: GroupKey, truth: bool) -> float:
        """Sampling weight of a candidate of this group with truth ``truth``."""
        return 1.0 / self.share(key, truth)


def relation_allowed(predicate: str, subject: str, target: str) -> bool:
    """Whether a relation is worth asking between these categories at all.

    above / below only between an object and a receptacle it can rest on (the upper one is the
    subject of above, the target of below); every other predicate between distinct categories.

    >>> relation_allowed("above", "cup", "dining table"), relation_allowed("above", "sofa", "cup")
    (True, False)
    """
    if subject == target:
        return False
    if predicate in _STACKED:
        top, bottom = (subject, target) if _STACKED[predicate] else (target, subject)
        return can_stack(top, bottom)
    return True


def scene_group_counts(
    graph: SceneGraph, conditions: ConditionConfig | None = None
) -> Counter[tuple[GroupKey, bool]]:
    """Truth counts of every presence and relation group one scene can ask (relations only
    between the objects ``conditions`` lets the sampler relate,
    :func:`~condvln.synth.informative.relatable`)."""
    conditions = conditions or ConditionConfig()
    counts: Counter[tuple[GroupKey, bool]] = Counter()
    scene = graph.scene
    house = {o.category for o in scene.objects() if renderable_name(o.category)}
    for room in scene.rooms:
        if not renderable_name(room.room_type) or len(rooms_of_type(graph, room.room_type)) != 1:
            continue
        present = {o.category for o in room.objects}
        for category in house:
            counts[("exists", category, room.room_type), category in present] += 1
    for room in scene.rooms:
        relations = graph.relations(room.id)
        categories = [graph.object(o).category for o in relations.object_ids]
        names = sorted(set(categories))
        code = np.array([names.index(c) for c in categories])
        ok = np.array([renderable_name(c) for c in names])[code]
        pair = (code[:, None] != code[None, :]) & ok[:, None] & ok[None, :]
        related = relatable(graph, room.id, conditions)
        for p, predicate in enumerate(SEMANTIC_PREDICATES):
            truths = relations.truths[p]
            for value in (0, 1):
                rows, cols = np.nonzero(pair & related[p] & (truths == value))
                pairs = zip(code[rows].tolist(), code[cols].tolist(), strict=True)
                for key, n in Counter(pairs).items():
                    s, t = names[key[0]], names[key[1]]
                    if relation_allowed(predicate, s, t):
                        counts[(predicate, s, t), bool(value)] += n
    return counts
