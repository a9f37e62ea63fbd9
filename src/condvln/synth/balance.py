"""Global balancing of gold branches (CLEVR-style rejection) and the balance audit.

Within every bucket the same number of instances is kept for each gold leaf (the smallest
count), so a condition-blind agent that always takes branch ``k`` scores exactly
``1 / branches``; among each leaf's kept instances the share whose gold goal is also the goal
nearest the start is steered to ``1 / branches`` too, so "go to the nearest candidate" is no
shortcut either. Members of counterfactual pairs are preferred, and a pair that loses a member
loses its pair id. The result depends only on the instances and the seed, never on the order
workers finished in (callers pass instances in scene order).
"""

from __future__ import annotations

import dataclasses
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import stats

from condvln.synth.sampler import Instance


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


def balance(instances: Sequence[Instance], seed: int) -> list[Instance]:
    """Subsample ``instances`` so every bucket has equal gold-leaf counts (order preserved)."""
    rng = np.random.default_rng(seed)
    position = {id(inst): i for i, inst in enumerate(instances)}
    by_bucket: dict[str, list[Instance]] = defaultdict(list)
    for inst in instances:
        by_bucket[inst.bucket.key].append(inst)
    chosen: list[Instance] = []
    for key in sorted(by_bucket):
        items = by_bucket[key]
        n_leaves = items[0].n_leaves
        groups = [[i for i in items if i.gold_leaf == leaf] for leaf in range(n_leaves)]
        quota = min(len(g) for g in groups)
        for group in groups:
            shuffled = [group[j] for j in rng.permutation(len(group))]
            chosen.extend(_pick(shuffled, quota, n_leaves))
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
        "worst_ratio"}``; accuracy of an agent that always picks branch ``leaf`` (among
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
    ratios = [b["max_min_ratio"] for b in buckets.values() if b["max_min_ratio"] is not None]
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
    }
