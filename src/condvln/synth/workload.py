"""Equal navigation workload across Table-1 categories (the depth and chain axes controlled).

Every category is sampled from the same design of evidence horizons and branch steps
(:func:`~condvln.synth.sampler.all_buckets`), but categories fail in different buckets, so what
survives differs: deeper programs would be shorter to walk. :func:`match_workload` drops
instances, within each stratum, until every category's mean number of targets on the gold path
and mean gold-path length sit near the stratum's common target (the mean over its categories),
so that a difference between categories in a results table is one of logic, not of walking.

>>> workload_gaps([])
{'targets': 0.0, 'length': 0.0}
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

import numpy as np

from condvln.synth.sampler import Instance

LIMITS = {"targets": 0.2, "length": 0.10}
"""Largest gap between two Table-1 categories of a split in mean gold-path targets (a
difference) and in mean gold-path length (ratio − 1) at which depth and chain are read apart
from walking (issue 26): :func:`workload_gaps` beyond either sends an unseen stratum to more
sampling (:mod:`condvln.synth.pipeline`), and the dataset card warns."""

TARGET_TOLERANCE = 0.06
"""How far a category's mean gold-path target count may sit from the stratum's target."""

LENGTH_TOLERANCE = 0.03
"""How far (relative) a category's mean gold-path length may sit from the stratum's target."""

MAX_DROP = 0.3
"""Largest share of a category (in one stratum) matching may drop."""


def gold_targets(inst: Instance) -> int:
    """Navigation targets on the gold path: the waypoints and the gold arm's targets."""
    return len(inst.resolution.targets)


def _means(items: Sequence[Instance]) -> tuple[float, float]:
    targets = float(np.mean([gold_targets(i) for i in items]))
    lengths = [i.gold_length for i in items if i.gold_length is not None]
    return targets, float(np.mean(lengths)) if lengths else 0.0


def mean_gaps(means: Iterable[tuple[float, float]]) -> dict[str, float]:
    """The gaps :data:`LIMITS` bounds, from each group's (mean gold-path targets, mean gold-path
    length): the largest difference of the targets and the largest ratio − 1 of the lengths
    (zeros for fewer than two groups or a zero length).

    >>> mean_gaps([(2.0, 8.0), (1.5, 10.0), (1.75, 9.0)])
    {'targets': 0.5, 'length': 0.25}
    """
    pairs = list(means)
    if len(pairs) < 2:
        return {"targets": 0.0, "length": 0.0}
    targets = [t for t, _ in pairs]
    lengths = [m for _, m in pairs]
    gap = max(lengths) / min(lengths) - 1.0 if min(lengths) > 0 else 0.0
    return {"targets": max(targets) - min(targets), "length": gap}


def workload_gaps(items: Sequence[Instance]) -> dict[str, float]:
    """:func:`mean_gaps` of the Table-1 categories of ``items``."""
    by_category: dict[str, list[Instance]] = defaultdict(list)
    for inst in items:
        by_category[inst.bucket.category].append(inst)
    return mean_gaps(_means(group) for group in by_category.values())


def _excess(targets: float, length: float, goal: tuple[float, float]) -> tuple[float, float]:
    """Signed distance of a category's means from the goal, in tolerances."""
    dl = (length / goal[1] - 1.0) / LENGTH_TOLERANCE if goal[1] > 0 else 0.0
    return (targets - goal[0]) / TARGET_TOLERANCE, dl


def _cost(excess: tuple[float, float]) -> float:
    """How far outside both tolerances (0: within both)."""
    return sum(max(abs(e) - 1.0, 0.0) ** 2 for e in excess)


_Cells = dict[str, list[tuple[list[int], list[int]]]]
"""Bucket → gold leaf → (instances whose gold goal is not the nearest, those whose it is)."""


def _match_category(
    items: list[Instance], goal: tuple[float, float], rng: np.random.Generator, budget: int
) -> list[Instance]:
    """Drop whole rows (one instance of every gold leaf of one bucket, so gold leaves stay
    balanced, one of them nearest the start: :func:`_worst_row`) while that brings the category's means nearer the goal, at most ``budget``
    instances: each time the row whose members pull the means furthest the wrong way, ties at
    random."""
    targets = np.array([gold_targets(i) for i in items], dtype=float)
    lengths = np.array([i.gold_length or 0.0 for i in items])
    keep = np.ones(len(items), dtype=bool)
    ties = rng.random(len(items)) * 1e-9
    cells: _Cells = defaultdict(lambda: [([], []) for _ in range(items[0].n_leaves)])
    for j, inst in enumerate(items):
        cells[inst.bucket.key][inst.gold_leaf][bool(inst.gold_is_nearest)].append(j)
    while budget >= items[0].n_leaves:
        excess = _excess(targets[keep].mean(), lengths[keep].mean(), goal)
        if _cost(excess) == 0.0:
            break
        pull = excess[0] * (targets - targets[keep].mean()) / TARGET_TOLERANCE + ties
        if goal[1] > 0:
            pull += excess[1] * (lengths - lengths[keep].mean()) / (goal[1] * LENGTH_TOLERANCE)
        row = _worst_row(cells, keep, np.where(keep, pull, -np.inf))
        if row is None:
            break
        trial = keep.copy()
        trial[row] = False
        if _cost(_excess(targets[trial].mean(), lengths[trial].mean(), goal)) >= _cost(excess):
            break
        keep, budget = trial, budget - len(row)
    return [inst for inst, k in zip(items, keep, strict=True) if k]


def _worst_row(cells: _Cells, keep: np.ndarray, pull: np.ndarray) -> list[int] | None:
    """The kept row with the largest positive pull: in one cell, one instance per gold leaf,
    exactly one of them with its gold goal nearest the start — a row at chance, so dropping
    it leaves "go to the nearest candidate" where balancing put it."""
    alive, pulls = keep.tolist(), pull.tolist()  # Python floats compare as numpy's do
    best, best_pull = None, 0.0
    for leaves in cells.values():
        far = [_strongest(members, alive, pulls) for members, _ in leaves]
        near = [_strongest(members, alive, pulls) for _, members in leaves]
        for lead, chosen in enumerate(near):
            row = [chosen if k == lead else m for k, m in enumerate(far)]
            if any(m is None for m in row):
                continue
            total = float(pull[row].sum())
            if total > best_pull:
                best, best_pull = row, total
    return best


def _strongest(members: list[int], alive: list[bool], pulls: list[float]) -> int | None:
    """The kept member with the largest pull (the first of equals; None when none is kept)."""
    return max((m for m in members if alive[m]), key=pulls.__getitem__, default=None)


ROUNDS = 3
"""Matching rounds: each aims at the mean of the categories' means as the last round left
them, so categories that cannot move pull the goal towards themselves."""


def match_workload(
    items: Sequence[Instance], labels: Sequence[str], rng: np.random.Generator
) -> tuple[list[Instance], list[str]]:
    """Within each stratum (``labels``, one per instance), bring every category's mean gold-path
    targets and length (:attr:`Instance.gold_length`; 0 where unmeasured) to a common goal,
    dropping at most :data:`MAX_DROP` of a category; returns the kept instances and their
    labels, order preserved."""
    groups: dict[tuple[str, str], list[Instance]] = defaultdict(list)
    for inst, label in zip(items, labels, strict=True):
        groups[label, inst.bucket.category].append(inst)
    budget = {key: int(MAX_DROP * len(group)) for key, group in groups.items()}
    for _ in range(ROUNDS):
        for label in sorted({lab for lab, _ in groups}):
            members = sorted(key for key in groups if key[0] == label)
            means = [_means(groups[key]) for key in members]
            goal = (float(np.mean([m[0] for m in means])), float(np.mean([m[1] for m in means])))
            for key in members:
                kept = _match_category(groups[key], goal, rng, budget[key])
                budget[key] -= len(groups[key]) - len(kept)
                groups[key] = kept
    kept_ids = {id(i) for group in groups.values() for i in group}
    pairs = [(i, lab) for i, lab in zip(items, labels, strict=True) if id(i) in kept_ids]
    return [i for i, _ in pairs], [lab for _, lab in pairs]


def excess(items: Sequence[Instance]) -> float:
    """The larger of :func:`workload_gaps` of ``items`` in units of its :data:`LIMITS` (above 1:
    beyond them).

    >>> excess([])
    0.0
    """
    gaps = workload_gaps(items)
    return max(gaps[key] / limit for key, limit in LIMITS.items())


def beyond_limits(items: Sequence[Instance]) -> bool:
    """Whether the categories of ``items`` differ in workload beyond :data:`LIMITS`."""
    return excess(items) > 1.0


def off_target(items: Sequence[Instance]) -> dict[str, int]:
    """Categories whose mean gold-path targets, or else mean length, sit more than half of
    :data:`LIMITS` from the mean over the categories: ``+1`` above it, ``-1`` below it."""
    by_category: dict[str, list[Instance]] = defaultdict(list)
    for inst in items:
        by_category[inst.bucket.category].append(inst)
    means = {c: _means(g) for c, g in sorted(by_category.items())}
    if not means:
        return {}
    goal = np.mean(list(means.values()), axis=0)
    off = {}
    for category, (targets, length) in means.items():
        if abs(targets - goal[0]) > LIMITS["targets"] / 2:
            off[category] = 1 if targets > goal[0] else -1
        elif goal[1] > 0 and abs(length / goal[1] - 1.0) > LIMITS["length"] / 2:
            off[category] = 1 if length > goal[1] else -1
    return off
