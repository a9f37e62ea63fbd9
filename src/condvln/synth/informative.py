"""Which conditions a person would find worth asking: one versioned, frozen, hashable setting.

Two rules narrow what the sampler may ask (issue 32), on top of the groups whose truth varies
across scenes (:mod:`condvln.synth.groups`):

* **informative presence** — "is there a mug in the kitchen" is asked only when the catalogue's
  probability that a room of that type holds the category lies in
  ``[presence_low, presence_high]``: nobody asks whether a room has a light switch (0.9) or a
  kitchen a fridge (1.0). A category the catalogue does not know counts as 0.5 (asked).
* **related objects** — a relation is asked only between two objects a person would relate:

  - *height* (higher than, lower than): the two are compared at a glance — one rests on the
    other or both on one receptacle (*support*), the catalogue places them together, directly
    or through what they rest on (*furniture group*: a nightstand beside the bed, the cup on
    it and the bed), or they stand side by side (surface gap ≤ ``side_by_side``);
  - *proximity* and *stacking* (near, far from, above, below): the two are in *line of
    sight* — the straight line between their centres stays on the room's floor (the outline
    grown by ``wall_tolerance``, so a painting on the wall sees its room). Above / below are
    moreover only asked between an object and a receptacle it can rest on
    (:func:`~condvln.synth.groups.relation_allowed`).

Both the sampler and the group scan apply the rules (:func:`relatable`), so the truth balance
holds over what is asked.

>>> cfg = ConditionConfig()
>>> cfg.presence_informative("light switch", "kitchen"), cfg.presence_informative("mug", "kitchen")
(False, True)
>>> cfg.config_hash == ConditionConfig().config_hash
True
>>> ConditionConfig(presence_low=0.9)
Traceback (most recent call last):
...
pydantic_core._pydantic_core.ValidationError: 1 validation error for ConditionConfig
  Value error, presence_low must be below presence_high (got 0.9 and 0.85) ...
"""

from __future__ import annotations

import functools
import hashlib

import numpy as np
import shapely
from pydantic import BaseModel, ConfigDict, Field, model_validator

from condvln.graph import SEMANTIC_PREDICATES, SceneGraph
from condvln.io import dumps_json
from condvln.scene.catalogue import load_catalogue
from condvln.scene.model import SceneObject

CONDITION_CONFIG_VERSION = 1
"""Version of the rules; bump it when a default or a rule changes meaning."""

HEIGHT_PREDICATES = frozenset({"higher than", "lower than"})
"""Predicates asked only between objects compared at a glance (support, group, side by side)."""


class ConditionConfig(BaseModel):
    """What makes a condition worth asking (see the module docstring).

    Attributes:
        version: Version of the rules (:data:`CONDITION_CONFIG_VERSION`).
        presence_low: Presence is asked when the catalogue probability is ≥ this …
        presence_high: … and ≤ this.
        side_by_side: Two objects this close (surface gap, metres) are compared at a glance.
            1 m is the relation config's default ``near_fails``: beyond it "near" no longer holds.
        wall_tolerance: The room outline grows by this (metres) before the line of sight is
            tested, so objects on or in a wall (centres up to a wall's thickness outside the
            floor) see their own room, and a line through another room does not pass.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int = CONDITION_CONFIG_VERSION
    presence_low: float = Field(0.15, ge=0.0, le=1.0)
    presence_high: float = Field(0.85, ge=0.0, le=1.0)
    side_by_side: float = Field(1.0, ge=0.0)
    wall_tolerance: float = Field(0.3, ge=0.0)

    @model_validator(mode="after")
    def _check(self) -> ConditionConfig:
        """The band must be non-empty and the version current."""
        if self.presence_low >= self.presence_high:
            raise ValueError(
                "presence_low must be below presence_high "
                f"(got {self.presence_low} and {self.presence_high})"
            )
        if self.version != CONDITION_CONFIG_VERSION:
            raise ValueError(f"version must be {CONDITION_CONFIG_VERSION}, got {self.version}")
        return self

    @property
    def config_hash(self) -> str:
        """First 16 hex digits of the SHA-256 of the canonical JSON."""
        return hashlib.sha256(dumps_json(self.model_dump(mode="json"))).hexdigest()[:16]

    def presence_informative(self, category: str, room_type: str) -> bool:
        """Whether the catalogue's probability that a ``room_type`` holds ``category`` lies in
        the band (0.5 for a category the catalogue does not know)."""
        rooms = _room_probabilities().get(category)
        probability = 0.5 if rooms is None else rooms.get(room_type, 0.0)
        return self.presence_low <= probability <= self.presence_high


@functools.cache
def _room_probabilities() -> dict[str, dict[str, float]]:
    return {c.name: dict(c.rooms) for c in load_catalogue().categories}


@functools.cache
def _placed_together() -> frozenset[tuple[str, str]]:
    """Category pairs the catalogue places next to each other, both ways round."""
    pairs = set()
    for c in load_catalogue().categories:
        for anchor in c.near.anchors if c.near else ():
            pairs.update({(c.name, anchor), (anchor, c.name)})
    return frozenset(pairs)


def relatable(graph: SceneGraph, room_id: str, config: ConditionConfig) -> np.ndarray:
    """Which ordered pairs of the room's objects a relation may be asked about, per predicate.

    Returns:
        A boolean ``(len(SEMANTIC_PREDICATES), n, n)`` array aligned with the room's
        :class:`~condvln.graph.scene_graph.RoomRelations` (``truths``, ``object_ids``).
    """
    relations = graph.relations(room_id)
    objects = [graph.object(o) for o in relations.object_ids]
    n = len(objects)
    sight = _line_of_sight(graph, room_id, config)
    support = np.array([[_share_support(a, b) for b in objects] for a in objects]).reshape(n, n)
    units = [_unit_categories(graph, o.category, o.parent_id) for o in objects]
    together = _placed_together()
    group = np.array(
        [[any((x, y) in together for x in units[i] for y in units[j]) for j in range(n)]
         for i in range(n)]
    ).reshape(n, n)  # fmt: skip
    close = relations.metrics.used_distance <= config.side_by_side  # NaN compares False
    height = support | group | close
    masks = np.stack([height if p in HEIGHT_PREDICATES else sight for p in SEMANTIC_PREDICATES])
    masks[:, range(n), range(n)] = False  # no object is related to itself
    return masks


def _share_support(a: SceneObject, b: SceneObject) -> bool:
    """One rests on the other, or both rest on one receptacle."""
    return (a.parent_id is not None and a.parent_id in (b.parent_id, b.id)) or b.parent_id == a.id


def _unit_categories(graph: SceneGraph, category: str, parent: str | None) -> tuple[str, ...]:
    """The object's category and that of the receptacle it rests on, if known."""
    if parent is None or parent not in graph.object_ids:
        return (category,)
    return (category, graph.object(parent).category)


def _line_of_sight(graph: SceneGraph, room_id: str, config: ConditionConfig) -> np.ndarray:
    """``(n, n)``: the segment between two objects' centres stays on the grown room outline
    (all true for a room without an outline)."""
    relations = graph.relations(room_id)
    n = len(relations.object_ids)
    outline = graph.scene.room(room_id).floor_polygon
    if outline is None:
        return np.ones((n, n), dtype=bool)
    floor = shapely.Polygon(outline).buffer(config.wall_tolerance)
    centres = np.array([graph.object(o).center for o in relations.object_ids]).reshape(n, 3)
    xz = centres[:, [0, 2]]
    rows, cols = np.triu_indices(n, k=1)
    segments = shapely.linestrings(np.stack([xz[rows], xz[cols]], axis=1))
    seen = np.ones((n, n), dtype=bool)
    covered = shapely.covers(floor, segments) if len(segments) else np.zeros(0, dtype=bool)
    seen[rows, cols] = covered
    seen[cols, rows] = covered
    return seen


__all__ = ["CONDITION_CONFIG_VERSION", "HEIGHT_PREDICATES", "ConditionConfig", "relatable"]
