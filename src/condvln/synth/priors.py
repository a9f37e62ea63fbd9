"""Condition groups and blind priors: what could be guessed about a condition without looking.

A condition's **group** is what a text-only reader knows about it: ``("exists", category, room
type)`` for presence, ``(predicate, subject category, target category)`` for relations. The
generator balances truths per group (:mod:`condvln.synth.balance`); the blind baselines and the
leakage audit try to beat that balance with two kinds of prior:

* :class:`FrequencyPrior` — per-group truth frequencies counted on training episodes (backing off
  to the condition type's frequency for unseen groups);
* :class:`CommonsensePrior` — world knowledge only, from the packaged catalogue: how often a room
  type holds a category, how high categories stand, which objects rest on which receptacles.

:func:`predicted_leaf` runs a program with a prior's guesses instead of scene evidence.

>>> from condvln.program.ast import Ref, Relation
>>> prior = CommonsensePrior()
>>> prior.probability(Exists("toilet", "bathroom")) > 0.9
True
>>> prior.probability(Relation(Ref("cup"), "above", Ref("counter top"))) > 0.5
True
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Iterable, Mapping
from importlib import resources
from typing import Any, Protocol

import orjson

from condvln.program.ast import (
    Condition,
    Exists,
    If,
    Program,
    Step,
    condition_from_dict,
    leaf_paths,
)
from condvln.scene.catalogue import load_catalogue

GroupKey = tuple[str, str, str]


def group_of(condition: Condition) -> GroupKey:
    """The condition's group: what its text says, without the scene.

    >>> group_of(Exists("sofa", "living room"))
    ('exists', 'sofa', 'living room')
    """
    if isinstance(condition, Exists):
        return ("exists", condition.category, condition.room)
    return (condition.predicate, condition.subject.category, condition.target.category)


def condition_type(condition: Condition) -> str:
    """``"exists"`` or the relation's predicate."""
    return group_of(condition)[0]


def group_text(key: GroupKey) -> str:
    """A readable form of a group key, e.g. ``"exists: sofa / living room"``."""
    return f"{key[0]}: {key[1]} / {key[2]}"


class ConditionPrior(Protocol):
    """Anything that guesses the probability that a condition holds without seeing the scene."""

    def probability(self, condition: Condition) -> float:
        """Probability that ``condition`` is true."""
        ...


def guess(prior: ConditionPrior, condition: Condition) -> bool:
    """The prior's guess: true when it thinks the condition at least as likely true as false."""
    return prior.probability(condition) >= 0.5


def predicted_leaf(program: Program, prior: ConditionPrior) -> int:
    """Index (among :func:`~condvln.program.ast.leaf_paths`) of the path the guesses lead to."""
    decisions: list[bool] = []

    def run(steps: tuple[Step, ...]) -> None:
        for step in steps:
            if isinstance(step, If):
                value = guess(prior, step.condition)
                decisions.append(value)
                run(step.then if value else step.orelse)

    run(program.steps)
    paths = leaf_paths(program.steps)
    return next(i for i, (branches, _) in enumerate(paths) if branches == tuple(decisions))


def labelled_conditions(episodes: Iterable[Mapping[str, Any]]) -> list[tuple[Condition, bool]]:
    """Every evaluated condition of ``episodes`` (dataset episode dicts) with its truth label."""
    return [
        (condition_from_dict(item["condition"]), bool(item["truth"]))
        for episode in episodes
        for item in episode["info"]["condvln"]["condition_truths"]
    ]


class FrequencyPrior:
    """Per-group truth frequencies from labelled conditions (Laplace-smoothed, with backoff).

    A group seen in training gets ``(true + 1) / (n + 2)``; an unseen group its condition type's
    frequency; an unseen type 0.5.

    >>> from condvln.program.ast import Ref, Relation
    >>> prior = FrequencyPrior([(Exists("sofa", "living room"), True)] * 3)
    >>> round(prior.probability(Exists("sofa", "living room")), 2)
    0.8
    >>> prior.probability(Relation(Ref("cup"), "near", Ref("sink")))
    0.5
    """

    def __init__(self, labelled: Iterable[tuple[Condition, bool]]) -> None:
        self.groups: Counter[tuple[GroupKey, bool]] = Counter()
        self.types: Counter[tuple[str, bool]] = Counter()
        for condition, truth in labelled:
            key = group_of(condition)
            self.groups[key, truth] += 1
            self.types[key[0], truth] += 1

    def probability(self, condition: Condition) -> float:
        """Smoothed training frequency of the condition's group (or of its type)."""
        key = group_of(condition)
        true, false = self.groups[key, True], self.groups[key, False]
        if true + false == 0:
            true, false = self.types[key[0], True], self.types[key[0], False]
            if true + false == 0:
                return 0.5
            return true / (true + false)
        return (true + 1) / (true + false + 2)


HEIGHT_SCALE = 0.1
"""Metres of expected centre-height difference that make "higher than" about 73 % likely."""


@functools.cache
def stacking() -> dict[str, frozenset[str]]:
    """Receptacle category → the object categories that can rest on it (packaged data)."""
    data = resources.files("condvln").joinpath("data/stacking.json").read_bytes()
    return {k: frozenset(v) for k, v in orjson.loads(data)["receptacles"].items()}


def can_stack(top: str, bottom: str) -> bool:
    """Whether an object of category ``top`` can rest on one of category ``bottom``.

    >>> can_stack("cup", "dining table"), can_stack("sofa", "cup")
    (True, False)
    """
    return top in stacking().get(bottom, frozenset())


class CommonsensePrior:
    """World knowledge an LLM brings, from the packaged catalogue; no training data.

    * presence: the catalogue's probability that a room type holds the category;
    * higher / lower: a logistic of the categories' typical centre heights (floor objects at half
      their height, surface objects on their receptacles' tops, wall-mounted ones at their mount
      height);
    * above / below: likely when the upper object can rest on the lower one, unlikely otherwise;
    * near: likely when the catalogue places one next to the other; far from: no knowledge.
    """

    def __init__(self) -> None:
        catalogue = load_catalogue()
        self.rooms = {c.name: c.rooms for c in catalogue.categories}
        sizes = {c.name: c.size for c in catalogue.categories}
        self.heights: dict[str, float] = {}
        for c in catalogue.categories:
            if c.mount_height is not None:
                base = c.mount_height
            elif c.on:
                base = sum(sizes[r][1] for r in c.on) / len(c.on)
            else:
                base = 0.0
            self.heights[c.name] = base + c.size[1] / 2.0
        self.anchors = {c.name: set(c.near.anchors) for c in catalogue.categories if c.near}

    def probability(self, condition: Condition) -> float:
        """The catalogue's estimate that ``condition`` holds (0.5 where it knows nothing)."""
        if isinstance(condition, Exists):
            spec = self.rooms.get(condition.category)
            return 0.5 if spec is None else spec.get(condition.room, 0.0)
        s, t = condition.subject.category, condition.target.category
        predicate = condition.predicate
        if predicate in ("higher than", "lower than"):
            if s not in self.heights or t not in self.heights:
                return 0.5
            gap = self.heights[s] - self.heights[t]
            gap = gap if predicate == "higher than" else -gap
            return 1.0 / (1.0 + math.exp(-gap / HEIGHT_SCALE))
        if predicate in ("above", "below"):
            top, bottom = (s, t) if predicate == "above" else (t, s)
            return 0.8 if can_stack(top, bottom) else 0.1
        if predicate == "near":
            linked = t in self.anchors.get(s, ()) or s in self.anchors.get(t, ())
            return 0.8 if linked else 0.5
        return 0.5


__all__ = [
    "CommonsensePrior",
    "ConditionPrior",
    "FrequencyPrior",
    "GroupKey",
    "can_stack",
    "condition_type",
    "group_of",
    "group_text",
    "guess",
    "labelled_conditions",
    "predicted_leaf",
    "stacking",
]
