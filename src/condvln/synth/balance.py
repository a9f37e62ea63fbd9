"""Global balancing of gold branches (CLEVR-style rejection) and the balance audit.

Within every bucket the same number of instances is kept for each gold leaf (the smallest
count), so a condition-blind agent that always takes branch ``k`` scores exactly
``1 / branches``; among each leaf's kept instances the share whose gold goal is also the goal
nearest the start is steered to ``1 / branches`` too, so "go to the nearest candidate" is no
shortcut either. Row trimming also holds "the gold goal is (not) in the condition's room /
the start room" at chance per composition (:func:`_room_keys`). Members of counterfactual
pairs are preferred, and a pair that loses a member loses its pair id. The result depends only on the instances and the seed, never on the order
workers finished in (callers pass instances in scene order).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np
from scipy import stats

from condvln.synth.priors import (
    CommonsensePrior,
    ConditionPrior,
    FrequencyPrior,
    condition_type,
    group_of,
    group_text,
    guess,
    predicted_leaf,
)
from condvln.synth.sampler import Instance
from condvln.synth.workload import match_workload


def _pick(group: list[Instance], quota: int, n_leaves: int) -> list[Instance]:
    """``quota`` instances of one (bucket, leaf), paired first, nearest-gold share ≈ 1/n."""
    ordered = sorted(group, key=lambda i: i.pair_id is None)  # stable: keeps the shuffle
    nearest = [i for i in ordered if i.gold_is_nearest]
    other = [i for i in ordered if not i.gold_is_nearest]
    want = min(round(quota / n_leaves), len(nearest))
    take = nearest[:want] + other[: quota - want]
    if len(take) < quota:
        take += nearest[want : want + quota - len(take)]
    return take


TRUTH_SLACK = 0.1
"""Per group of ``n ≥ MIN_GROUP`` uses, ``|true − false| ≤ max(2, TRUTH_SLACK × n)`` (majority
share ≤ 0.6 from 10 uses on, ≤ 0.55 from 20 on)."""

MIN_GROUP = 5
"""Groups used fewer times are left alone (their type's pooled balance still holds)."""

POOLED_SLACK = 0.02
"""Per condition type (pooled over groups), ``|true − false| ≤ max(2, POOLED_SLACK × n)``."""

PROBE_SLACK = 4.0
"""Per stratum and Table-1 category, how far a blind prior's weighted hits may sit from chance
(a hit of an ``n``-branch episode weighs ``n − 1``, a miss 1, so 4 ≈ one episode)."""

MAX_TRIM = 0.2
"""Largest share of a stratum's leaf-balanced instances that truth balancing may drop."""

SECOND_TRIM = 0.1
"""Largest share of a stratum the second pass (the learned frequency prior) may drop."""

FINAL_TRIM = 0.2
"""Largest share of a stratum the last pass may drop to even out the truths (groups, condition
types, rooms) and the blind priors that the capped passes and workload matching left skewed."""

STRATUM = "#"
"""Prefix of a stratum label inside a balance key."""

PROBE = "!"
"""Marker of a blind-probe key (second element, after the stratum)."""

Key = tuple[str, ...]


def _truth_keys(inst: Instance) -> list[tuple[Key, bool]]:
    """The balance keys of the conditions the gold path evaluates, each with its truth: the
    group and the pooled condition type."""
    keys: list[tuple[Key, bool]] = []
    for condition, truth in inst.resolution.condition_truths:
        group = group_of(condition)
        keys += [(group, truth), (("*", group[0]), truth)]
    return keys


def _probe_keys(inst: Instance, name: str, prior: ConditionPrior) -> list[tuple[Key, bool]]:
    """Keys that hold a blind prior at chance: its branch hits in the instance's category
    (a hit weighs ``n − 1`` true, a miss one false, equal at chance ``1 / n``) and its truth
    guesses per condition type (right / wrong)."""
    hit = predicted_leaf(inst.program, prior) == inst.gold_leaf
    category = (PROBE, name, inst.bucket.category)
    keys: list[tuple[Key, bool]] = [(category, True)] * (inst.n_leaves - 1) if hit else []
    keys += [] if hit else [(category, False)]
    for condition, truth in inst.resolution.condition_truths:
        keys.append(
            ((PROBE, name + " truth", condition_type(condition)), guess(prior, condition) == truth)
        )
    return keys


def _room_keys(inst: Instance) -> list[tuple[Key, bool]]:
    """Keys that hold "the gold goal is (not) in the condition's room / the start room" at
    chance: per room, composition and branch count, a gold goal in the room counts ``n − 1``
    true and every other leaf goal in it one false (equal when the gold goal is in the room as
    often as each other leaf goal)."""
    keys: list[tuple[Key, bool]] = []
    for kind, room in (("condition room", inst.reference_room), ("start room", inst.start_room)):
        inside = [r == room for r in inst.leaf_rooms]
        if not any(inside):
            continue
        key = (PROBE, kind, inst.bucket.composition, str(inst.n_leaves))
        gold = inside[inst.gold_leaf]
        keys += [(key, True)] * (inst.n_leaves - 1 if gold else 0)
        keys += [(key, False)] * (sum(inside) - gold)
    return keys


GROUP, POOLED, PROBE_HITS, PROBE_TRUTH = range(4)
"""Kinds of balance key (:func:`_kind`): a condition group, a condition type pooled over its
groups, a blind prior's branch hits (or a room probe's), a blind prior's truth guesses."""


def _kind(key: Key) -> int:
    """Which slack rule of :func:`_allowed` a balance key follows."""
    if key[1:2] == (PROBE,):
        return PROBE_TRUTH if key[2].endswith(" truth") else PROBE_HITS
    return POOLED if "*" in key[:2] else GROUP


def _allowed(kind: int, n: int) -> float:
    """Largest ``|true − false|`` tolerated for a balance key of ``kind`` used ``n`` times.

    Pooled types: :data:`POOLED_SLACK`; blind probes: :data:`PROBE_SLACK` (truth guesses:
    the pooled slack). Groups: :data:`TRUTH_SLACK` from :data:`MIN_GROUP` uses on. Keys are
    counted within a stratum only: balancing a group over the whole run as well would push the
    strata's leans apart (train leaning true makes the others lean false), so a prior learned on
    train, or its mirror image, would predict the other splits.
    """
    if kind == PROBE_HITS:
        return PROBE_SLACK
    if kind == GROUP:
        return float(n) if n < MIN_GROUP else max(2.0, TRUTH_SLACK * n)
    return max(2.0, POOLED_SLACK * n)


GUARANTEED_GROUP = (10, 3.0, 0.2)
"""What a dataset promises per condition group of a split group (docs/datasets.md): from 10
uses on, ``|true − false| ≤ max(3, 0.2 n)`` — looser than the slack balancing aims at
(:data:`TRUTH_SLACK`), which the capped passes and the workload matching cannot always
reach."""

GUARANTEED_POOLED = (6.0, 0.02)
"""What a dataset promises per condition type of a split group: ``|true − false| ≤ max(6,
0.02 n)``."""


def _guaranteed(kind: int, n: int) -> float:
    """Largest ``|true − false|`` a finished dataset keeps for a balance key of ``kind`` used
    ``n`` times: :data:`GUARANTEED_GROUP`, :data:`GUARANTEED_POOLED`; for the blind priors the
    balancing slack itself (:func:`_allowed`), so keeping a truth promise never buys a prior's
    lead."""
    if kind == GROUP:
        least, floor, share = GUARANTEED_GROUP
        return float(n) if n < least else max(floor, share * n)
    if kind == POOLED:
        return max(GUARANTEED_POOLED[0], GUARANTEED_POOLED[1] * n)
    return _allowed(kind, n)


SWEEPS = 3
"""Passes over the instances, worst first, when rows are dropped."""

PROBE_WEIGHT = 5.0
"""How much a blind prior's lead over chance counts when rows are dropped."""


def _excess(kind: int, agree: int, other: int) -> float:
    """How far a truth counted ``agree`` times outnumbers the other truth of its key (counted
    ``other`` times) beyond the slack (≤ 0: fine), weighted by :data:`PROBE_WEIGHT` for
    blind-probe keys."""
    excess = agree - other - _allowed(kind, agree + other)
    return PROBE_WEIGHT * excess if kind in (PROBE_HITS, PROBE_TRUTH) else excess


class _Tally:
    """True and false counts of the balance keys of a list of instances, for truth balancing.

    Keys are interned once: key ``k`` counts a truth ``t`` in slot ``2 k + t``, and every slot
    keeps its excess clipped at 0 (:func:`_excess`), refreshed when its key's counts change.
    """

    def __init__(self, keys: list[list[tuple[Key, bool]]]) -> None:
        ids: dict[Key, int] = {}
        self.slots = [[2 * ids.setdefault(k, len(ids)) + t for k, t in item] for item in keys]
        self.keys = list(ids)
        self.kinds = [_kind(k) for k in ids]
        self.counts = [0] * (2 * len(ids))
        for item in self.slots:
            for slot in item:
                self.counts[slot] += 1
        self.clipped = [self._clip(slot) for slot in range(len(self.counts))]

    def _clip(self, slot: int) -> float:
        """The slot's excess over the slack, at least 0."""
        count = self.counts
        return max(0.0, _excess(self.kinds[slot >> 1], count[slot], count[slot ^ 1]))

    def badness(self, j: int) -> float:
        """How much instance ``j`` contributes to skew beyond the slack."""
        return sum(map(self.clipped.__getitem__, self.slots[j]))

    def skew(self, keys: Iterable[int]) -> float:
        """The summed excess of ``keys`` (ids) over both truths, exactly rounded
        (:func:`math.fsum`), so it does not depend on the order a set of keys is iterated in:
        a plain sum could break a tie differently in another process."""
        return math.fsum(self.clipped[2 * k + t] for k in keys for t in (0, 1))

    def drop_if_better(self, row: list[int]) -> bool:
        """Take the keys of the row's instances out of the counts when that lowers the skew of
        the keys they touch (and say so); otherwise leave the counts as they were."""
        touched = {slot >> 1 for m in row for slot in self.slots[m]}
        before = self.skew(touched)
        self._count(row, -1)
        after = {s: self._clip(s) for k in touched for s in (2 * k, 2 * k + 1)}
        if math.fsum(after.values()) < before:  # exactly rounded, as in :meth:`skew`
            for slot, value in after.items():
                self.clipped[slot] = value
            return True
        self._count(row, 1)
        return False

    def broken_by(self, row: list[int]) -> list[int]:
        """The keys that taking the row's instances out of the counts would take beyond
        :func:`_guaranteed` (as their uses fall, an unchanged gap can cross it) or further
        beyond it, each as the slot of its majority truth after that drop (the counts are left
        as they are)."""
        touched = sorted({slot >> 1 for m in row for slot in self.slots[m]})
        before = [self._promise_gap(k) for k in touched]
        self._count(row, -1)
        broken = []
        for k, (gap, over) in zip(touched, before, strict=True):
            new_gap, new_over = self._promise_gap(k)
            if new_over > 0 and (over <= 0 or new_gap > gap):
                broken.append(2 * k + (self.counts[2 * k + 1] > self.counts[2 * k]))
        self._count(row, 1)
        return broken

    def _promise_gap(self, k: int) -> tuple[int, float]:
        """Key ``k``'s ``|true − false|`` and how far that is beyond :func:`_guaranteed`."""
        true, false = self.counts[2 * k + 1], self.counts[2 * k]
        gap = abs(true - false)
        return gap, gap - _guaranteed(self.kinds[k], true + false)

    def drop_unless_breaking(self, row: list[int]) -> bool:
        """Take the keys of the row's instances out of the counts unless that takes a key
        beyond :func:`_guaranteed` or further beyond it (:meth:`broken_by`; and say whether
        it did)."""
        if self.broken_by(row):
            return False
        self._count(row, -1)
        for k in {slot >> 1 for m in row for slot in self.slots[m]}:
            for slot in (2 * k, 2 * k + 1):
                self.clipped[slot] = self._clip(slot)
        return True

    def _count(self, row: list[int], step: int) -> None:
        """Count the keys of the row's instances ``step`` times more."""
        for m in row:
            for slot in self.slots[m]:
                self.counts[slot] += step


def cell_key(inst: Instance) -> str:
    """The cell gold leaves are balanced in: the instance's whole bucket (category,
    composition, evidence observability at the decision point, horizon)."""
    return inst.bucket.key


def _leaf_balance(items: list[Instance], rng: np.random.Generator) -> list[Instance]:
    """Equal gold-leaf counts per bucket (the smallest count).

    Within each (bucket, leaf) the instances kept are those adding least to truth skew, then
    members of counterfactual pairs, in random order otherwise; the share whose gold goal is
    the nearest leaf goal is steered to ``1 / branches``.
    """
    distinct = list({id(i): i for i in items}.values())  # each instance counted once
    index = {id(i): j for j, i in enumerate(distinct)}
    tally = _Tally([_truth_keys(i) for i in distinct])
    by_bucket: dict[str, list[Instance]] = defaultdict(list)
    for inst in items:
        by_bucket[cell_key(inst)].append(inst)
    chosen: list[Instance] = []
    for key in sorted(by_bucket):
        group_items = by_bucket[key]
        n_leaves = group_items[0].n_leaves
        groups = [[i for i in group_items if i.gold_leaf == leaf] for leaf in range(n_leaves)]
        quota = min(len(g) for g in groups)
        for group in groups:
            shuffled = [group[j] for j in rng.permutation(len(group))]
            shuffled.sort(key=lambda i: tally.badness(index[id(i)]))
            chosen.extend(_pick(shuffled, quota, n_leaves))
    return chosen


def _balance_keys(
    inst: Instance, label: str, priors: dict[str, ConditionPrior]
) -> list[tuple[Key, bool]]:
    """Every key an instance counts towards in truth balancing, all within its stratum: its
    groups and condition types, and the blind priors' hits."""
    keys = _truth_keys(inst)
    for name, prior in priors.items():
        keys += _probe_keys(inst, name, prior)
    stratum = STRATUM + label
    return [((stratum, *k), t) for k, t in keys + _room_keys(inst)]


def _complete_row(
    j: int,
    inst: Instance,
    cell: dict[int, list[int]],
    removed: set[int],
    rank: Callable[[int], tuple[float, ...]],
) -> list[int] | None:
    """Instance ``j`` and, for every other gold leaf of its cell, the kept member ranked
    highest (None when a leaf has none left)."""
    row = [j]
    for leaf in range(inst.n_leaves):
        if leaf == inst.gold_leaf:
            continue
        members = [m for m in cell[leaf] if m not in removed]
        if not members:
            return None
        row.append(max(members, key=rank))
    return row


def _other_rows(
    j: int,
    inst: Instance,
    cell: dict[int, list[int]],
    removed: set[int],
    rank: Callable[[int], tuple[float, ...]],
) -> Iterator[list[int]]:
    """Instance ``j`` with other kept members of the other gold leaves of its cell than
    :func:`_complete_row` picks: up to :data:`REPAIR_ALTERNATIVES` rows, best-ranked members
    first."""
    leaves = [leaf for leaf in range(inst.n_leaves) if leaf != inst.gold_leaf]
    members = [
        sorted((m for m in cell[leaf] if m not in removed), key=rank, reverse=True)
        for leaf in leaves
    ]
    combos = itertools.islice(itertools.product(*members), 1, 1 + REPAIR_ALTERNATIVES)
    return ([j, *combo] for combo in combos)


def _trim_rows(  # long: one greedy loop whose guards share its counters
    items: list[Instance],
    labels: list[str],
    rng: np.random.Generator,
    priors: dict[str, dict[str, ConditionPrior]],
    cap: float = MAX_TRIM,
    frozen: set[str] = frozenset(),  # type: ignore[assignment]
) -> list[Instance]:
    """Drop whole rows (one instance of every gold leaf of a cell and stratum) while that
    reduces truth skew, counted per stratum, and the blind priors' lead
    over chance (``priors``: stratum label → probe name → prior).

    The worst instances (largest :meth:`_Tally.badness`) seed the rows; each other leaf of the
    cell gives up its own worst instance. Leaf balance is kept exactly; at most ``cap`` of a
    stratum is dropped, none of the strata in ``frozen``, and every Table-1 category keeps at
    least half its instances in each stratum (and at least one).
    """
    tally, cells = _tally(items, labels, priors), _row_cells(items, labels)
    removed: set[int] = set()
    ties = rng.random(len(items))
    near = [float(i.gold_is_nearest) - 1.0 / i.n_leaves for i in items]
    nearest_excess: Counter[str] = Counter()  # per stratum: "gold is nearest" above chance
    sizes = Counter(labels)
    budget = {label: cap * n for label, n in sizes.items()}
    per_category = Counter((labels[j], i.bucket.category) for j, i in enumerate(items))
    floor = {k: max(n / 2, 1) for k, n in per_category.items()}  # no category is trimmed away
    for j, value in enumerate(near):
        nearest_excess[labels[j]] += value
    for _ in range(SWEEPS):
        seeds = sorted(range(len(items)), key=lambda j: (-tally.badness(j), ties[j]))
        for j in seeds:
            if j in removed or labels[j] in frozen or tally.badness(j) <= 0.0:
                continue
            inst = items[j]
            category = (labels[j], inst.bucket.category)
            if budget[labels[j]] < inst.n_leaves:
                continue
            if per_category[category] - inst.n_leaves < floor[category]:
                continue
            cell = cells[f"{labels[j]}|{cell_key(inst)}"]
            lean = nearest_excess[labels[j]]
            rank = lambda m, lean=lean: (tally.badness(m), near[m] * lean, ties[m])  # noqa: E731
            row = _complete_row(j, inst, cell, removed, rank)
            if row is None:
                continue
            shifted = nearest_excess[labels[j]] - sum(near[m] for m in row)
            limit = max(2.0, 0.01 * sizes[labels[j]])
            if abs(shifted) > limit and abs(shifted) > abs(nearest_excess[labels[j]]):
                continue  # would make "the gold goal is the nearest" a shortcut
            if tally.drop_if_better(row):
                removed.update(row)
                sizes[labels[j]] -= len(row)
                budget[labels[j]] -= len(row)
                per_category[category] -= len(row)
                nearest_excess[labels[j]] = shifted
    return [inst for j, inst in enumerate(items) if j not in removed]


def _kept(
    items: list[Instance],
    labels: list[str],
    rng: np.random.Generator,
    priors: dict[str, dict[str, ConditionPrior]],
    cap: float = MAX_TRIM,
    frozen: set[str] = frozenset(),  # type: ignore[assignment]
) -> tuple[list[Instance], list[str]]:
    """:func:`_trim_rows`, with the stratum labels of what it keeps."""
    kept_ids = {id(i) for i in _trim_rows(items, labels, rng, priors, cap, frozen)}
    pairs = [(i, lab) for i, lab in zip(items, labels, strict=True) if id(i) in kept_ids]
    return [i for i, _ in pairs], [lab for _, lab in pairs]


MIN_REPAIRED = 500
"""Strata smaller than this are left as the capped passes and matching leave them: there a
dropped row moves a category's workload by as much as its limit (40 × 30 seed 4242: the test
split's length gap went from within 10 % to 10.3 %), and the truth promise is checked at the
benchmark's size (80 × 50, strata of 800 and more)."""

REPAIR_TRIES = 400
"""Holders of a key's majority truth whose rows :func:`_keep_promises` tries, per step, to bring
the key back within its promise."""

REPAIR_ALTERNATIVES = 64
"""Further completions of one holder's row :func:`_keep_promises` tries when no holder's first
one can be dropped (one key of the row's other members may block it where another would not)."""


PAIR_TRIES = 64
"""Rows :func:`_keep_promises` tries as the first of two dropped together when no row alone may
go, and as the second, per key the first takes beyond its promise."""


def _tally(
    items: list[Instance], labels: list[str], priors: dict[str, dict[str, ConditionPrior]]
) -> _Tally:
    """The balance keys of every instance (:func:`_balance_keys`), counted."""
    return _Tally(
        [_balance_keys(i, labels[j], priors.get(labels[j], {})) for j, i in enumerate(items)]
    )


def _row_cells(items: list[Instance], labels: list[str]) -> dict[str, dict[int, list[int]]]:
    """Stratum and cell → gold leaf → indices of the instances: where rows are made."""
    cells: dict[str, dict[int, list[int]]] = defaultdict(lambda: defaultdict(list))
    for j, inst in enumerate(items):
        cells[f"{labels[j]}|{cell_key(inst)}"][inst.gold_leaf].append(j)
    return cells


def _keep_promises(
    items: list[Instance],
    labels: list[str],
    rng: np.random.Generator,
    priors: dict[str, dict[str, ConditionPrior]],
    min_size: int = MIN_REPAIRED,
) -> tuple[list[Instance], list[str]]:
    """Bring every condition group and type beyond what a dataset keeps (:func:`_guaranteed`)
    back within it where whole rows allow: drop a row holding the key's majority truth, one at
    a time, each only when no other key goes beyond (or further beyond) its promise. Where
    every such row would take another key (often a blind prior at its slack) beyond, it goes
    together with a row holding that key's majority truth (:data:`PAIR_TRIES`). What the
    capped passes and the last workload matching leave is rare and small (a group of 11 uses
    at 3 / 8), so this drops a few rows; strata of fewer than ``min_size`` instances are left
    alone. Returns the kept instances and their labels."""
    tally, cells = _tally(items, labels, priors), _row_cells(items, labels)
    order, ties = rng.permutation(len(items)).tolist(), rng.random(len(items))
    removed: set[int] = set()
    sizes = Counter(labels)

    def rank(m: int) -> tuple[float, float]:
        return tally.badness(m), ties[m]

    def rows(slot: int, gone: set[int]) -> Iterator[list[int]]:
        """Rows of instances not in ``gone``, seeded by the holders of ``slot``, in random
        order, each completed by the other leaves' members adding most skew; then, when none
        of those could be dropped, the holders' other completions
        (:data:`REPAIR_ALTERNATIVES` each)."""
        holders = [j for j in order if j not in gone and slot in tally.slots[j]][:REPAIR_TRIES]
        for j in holders:
            cell = cells[f"{labels[j]}|{cell_key(items[j])}"]
            row = _complete_row(j, items[j], cell, gone, rank)
            yield from [row] if row else []
        for j in holders:
            cell = cells[f"{labels[j]}|{cell_key(items[j])}"]
            yield from _other_rows(j, items[j], cell, gone, rank)

    def row_pairs(slot: int) -> Iterator[list[int]]:
        """Two rows to drop together: one of the first :data:`PAIR_TRIES` rows of ``slot``
        that takes other keys beyond their promise, and one of the first :data:`PAIR_TRIES`
        rows holding the majority truth of such a key after the first row went."""
        for first in itertools.islice(rows(slot, removed), PAIR_TRIES):
            gone = removed | set(first)
            for broken in tally.broken_by(first):
                for second in itertools.islice(rows(broken, gone), PAIR_TRIES):
                    yield first + second

    for key, kind in enumerate(tally.kinds):
        while kind in (GROUP, POOLED) and sizes[tally.keys[key][0][len(STRATUM) :]] >= min_size:
            false, true = tally.counts[2 * key], tally.counts[2 * key + 1]
            if abs(true - false) <= _guaranteed(kind, true + false):
                break
            slot = 2 * key + (true > false)
            candidates = itertools.chain(rows(slot, removed), row_pairs(slot))  # pairs last
            row = next((r for r in candidates if tally.drop_unless_breaking(r)), None)
            if row is None:
                break
            removed.update(row)
    kept = [j for j in range(len(items)) if j not in removed]
    return [items[j] for j in kept], [labels[j] for j in kept]


def balance(  # long: the docstring states every pass in the order it runs
    instances: Sequence[Instance],
    seed: int,
    strata: Sequence[str] | None = None,
    train: Callable[[Instance, str], bool] | None = None,
) -> list[Instance]:
    """Subsample ``instances``: equal gold-leaf counts per cell, truths balanced per group,
    blind priors held at chance.

    Gold leaves are balanced exactly per :func:`cell_key` — within every stratum when
    ``strata`` gives one label per instance (e.g. the split group of its scene); truths of the
    gold paths' conditions are balanced per condition group and per condition type within each
    stratum, never over the whole run (slack :data:`TRUTH_SLACK`, :data:`POOLED_SLACK`; see
    :func:`_allowed`), and the catalogue prior's branch hits per category and truth guesses per
    condition type are held at chance within each stratum. With ``train``
    (``train(instance, stratum)``: whether blind probes are trained on it) a second pass does
    the same, in the strata holding no training instance, for the frequency prior learned on
    the kept training instances; strata with training instances are left as they are then, so
    that prior stays the one the probes learn. Then the categories' navigation workload is
    evened within each stratum (:func:`~condvln.synth.workload.match_workload`), a last pass
    (at most :data:`FINAL_TRIM` of a stratum) evens the truths and holds the same priors at
    chance again, since matching drops rows without looking at them, and the workload is
    matched once more, since that pass drops rows without looking at the workload. Last, whole
    rows are dropped where a condition group or type is left beyond what a dataset keeps
    (:func:`_keep_promises`, in strata of :data:`MIN_REPAIRED` instances or more; a few rows,
    so the workload barely moves). The order of ``instances`` is preserved.
    """
    rng = np.random.default_rng(seed)
    position = {id(inst): i for i, inst in enumerate(instances)}
    labels = list(strata) if strata is not None else [""] * len(instances)
    by_stratum: dict[str, list[Instance]] = defaultdict(list)
    for inst, label in zip(instances, labels, strict=True):
        by_stratum[label].append(inst)
    chosen: list[Instance] = []
    chosen_labels: list[str] = []
    for label in sorted(by_stratum):
        kept = _leaf_balance(by_stratum[label], rng)
        chosen += kept
        chosen_labels += [label] * len(kept)
    commonsense: dict[str, ConditionPrior] = {"commonsense": CommonsensePrior()}
    priors = {label: commonsense for label in by_stratum}
    chosen, chosen_labels = _kept(chosen, chosen_labels, rng, priors)
    if train is not None:
        used = [train(i, lab) for i, lab in zip(chosen, chosen_labels, strict=True)]
        training = {lab for lab, u in zip(chosen_labels, used, strict=True) if u}
        learned = FrequencyPrior(
            (c, t)
            for i, u in zip(chosen, used, strict=True)
            if u
            for c, t in i.resolution.condition_truths
        )
        priors = {
            label: {**commonsense, "text": learned} for label in by_stratum if label not in training
        }
        chosen, chosen_labels = _kept(chosen, chosen_labels, rng, priors, SECOND_TRIM, training)
    chosen, chosen_labels = match_workload(chosen, chosen_labels, rng)
    chosen, chosen_labels = _kept(chosen, chosen_labels, rng, priors, FINAL_TRIM)
    chosen, chosen_labels = match_workload(chosen, chosen_labels, rng)
    chosen, chosen_labels = _keep_promises(chosen, chosen_labels, rng, priors)
    chosen.sort(key=lambda inst: position[id(inst)])
    members = Counter(i.pair_id for i in chosen if i.pair_id is not None)
    return [
        dataclasses.replace(i, pair_id=None) if i.pair_id and members[i.pair_id] < 2 else i
        for i in chosen
    ]


def balance_report(instances: Sequence[Instance]) -> dict[str, Any]:
    """Per-bucket gold-leaf counts, χ² test of uniformity, max/min ratio and chance checks.

    Returns:
        ``{"buckets": {key: {"counts", "chi2", "p_value", "max_min_ratio", "nearest_rate"}},
        "constant_branch": {leaf: {"accuracy", "chance", "n"}}, "nearest_gold_rate",
        "worst_ratio"}``; ``worst_ratio`` is the largest max/min gold-leaf count ratio of a
        balanced cell (:func:`cell_key`; the per-bucket rows also split by observability); accuracy of an agent that always picks branch ``leaf`` (among
        instances that have that branch) next to the chance level ``mean(1 / branches)``.
    """
    by_bucket: dict[str, list[Instance]] = defaultdict(list)
    for inst in instances:
        by_bucket[inst.bucket.key].append(inst)
    buckets = {}
    for key in sorted(by_bucket):
        items = by_bucket[key]
        counts = [sum(i.gold_leaf == k for i in items) for k in range(items[0].n_leaves)]
        chi2, p_value = stats.chisquare(counts) if sum(counts) else (0.0, 1.0)
        buckets[key] = {
            "counts": counts,
            "chi2": float(chi2),
            "p_value": float(p_value),
            "max_min_ratio": max(counts) / min(counts) if min(counts) else None,
            "nearest_rate": float(np.mean([i.gold_is_nearest for i in items])),
        }
    constant = {}
    for leaf in range(max((i.n_leaves for i in instances), default=0)):
        eligible = [i for i in instances if i.n_leaves > leaf]
        constant[str(leaf)] = {
            "accuracy": float(np.mean([i.gold_leaf == leaf for i in eligible])),
            "chance": float(np.mean([1.0 / i.n_leaves for i in eligible])),
            "n": len(eligible),
        }
    report_truths = truth_report(instances)
    by_cell: dict[str, list[Instance]] = defaultdict(list)
    for inst in instances:
        by_cell[cell_key(inst)].append(inst)
    ratios = []
    for items in by_cell.values():
        counts = [sum(i.gold_leaf == k for i in items) for k in range(items[0].n_leaves)]
        if min(counts):
            ratios.append(max(counts) / min(counts))
    return {
        "buckets": buckets,
        "constant_branch": constant,
        "nearest_gold_rate": float(np.mean([i.gold_is_nearest for i in instances]))
        if instances
        else 0.0,
        "nearest_gold_chance": float(np.mean([1.0 / i.n_leaves for i in instances]))
        if instances
        else 0.0,
        "worst_ratio": max(ratios, default=None),
        **report_truths,
        "room_shortcuts": room_report(instances),
    }


def truth_report(instances: Sequence[Instance], top: int = 10) -> dict[str, Any]:
    """Truth counts of the gold paths' conditions per group and per condition type.

    Returns:
        ``{"truth_groups": {"type: subject / target": [true, false]}, "truth_types": {type:
        {"true", "false", "true_share"}}, "most_skewed": [{"group", "true", "false",
        "majority_share"}, ...]}``; the most skewed groups are those used ≥ 10 times with the
        largest majority share.
    """
    counts: Counter[tuple[tuple[str, ...], bool]] = Counter()
    for inst in instances:
        counts.update(_truth_keys(inst))
    keys = sorted({k for k, _ in counts})
    groups = {k: (counts[k, True], counts[k, False]) for k in keys if k[0][0] not in "*@"}
    types = {
        k[1]: {
            "true": counts[k, True],
            "false": counts[k, False],
            "true_share": counts[k, True] / (counts[k, True] + counts[k, False]),
        }
        for k in keys
        if k[0] == "*"
    }
    used = [(k, t, f) for k, (t, f) in groups.items() if t + f >= 10]
    used.sort(key=lambda x: (-max(x[1], x[2]) / (x[1] + x[2]), x[0]))
    return {
        "truth_groups": {group_text(k): [t, f] for k, (t, f) in groups.items()},  # type: ignore[arg-type]
        "truth_types": types,
        "most_skewed": [
            {"group": group_text(k), "true": t, "false": f, "majority_share": max(t, f) / (t + f)}  # type: ignore[arg-type]
            for k, t, f in used[:top]
        ],
    }


def room_report(instances: Sequence[Instance]) -> dict[str, dict[str, float]]:
    """Per composition: how often the gold goal vs the other leaf goals lie in the condition's
    room and in the start room (equal rates mean the rooms reveal nothing)."""
    out = {}
    for composition in sorted({i.bucket.composition for i in instances}):
        items = [i for i in instances if i.bucket.composition == composition and i.leaf_rooms]
        if not items:
            continue
        rows = {}
        for name, room_of in (
            ("condition_room", lambda i: i.reference_room),
            ("start_room", lambda i: i.start_room),
        ):
            gold = [i.leaf_rooms[i.gold_leaf] == room_of(i) for i in items]
            other = [
                r == room_of(i)
                for i in items
                for k, r in enumerate(i.leaf_rooms)
                if k != i.gold_leaf
            ]
            rows[f"gold_in_{name}"] = float(np.mean(gold))
            rows[f"other_in_{name}"] = float(np.mean(other))
        out[composition] = rows
    return out
