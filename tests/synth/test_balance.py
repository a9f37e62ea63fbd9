"""Truth balancing: its arithmetic does not depend on the order a set is iterated in, and
workload matching cannot undo it (:func:`~condvln.synth.balance._truth_guard`) but in a
stratum left beyond the workload limits (:func:`~condvln.synth.balance._unmatched`)."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from types import SimpleNamespace
from typing import Any

from condvln.program.ast import Exists
from condvln.synth.balance import _excess, _skew, _truth_guard, _unmatched


def test_skew_is_the_same_in_every_key_order() -> None:
    """Groups of 21–26 uses each lean by a fractional excess over their slack (0.1 n). A plain
    float sum of those excesses changes with the order of the keys, which for a set of strings
    changes with ``PYTHONHASHSEED``; the skew that decides whether a row is dropped must not."""
    counts: Counter = Counter()
    keys = [("#seen", "exists", f"category-{n}", "kitchen") for n in range(21, 27)]
    for key, n in zip(keys, range(21, 27), strict=True):
        counts[key, True], counts[key, False] = n - 4, 4
    excesses = [_excess(counts, key, True) for key in keys]
    assert all(e > 0 and e != round(e) for e in excesses)
    orders = list(itertools.permutations(keys))
    plain = {sum(_excess(counts, key, True) for key in order) for order in orders}
    assert len(plain) > 1  # the case has teeth: naive sums disagree in the last bit
    assert {_skew(counts, order) for order in orders} == {math.fsum(excesses)}


def _instance(truth: bool) -> Any:
    """An instance whose gold path checks "is there a sofa in the kitchen" with ``truth``, its
    goals in no room that a room key counts."""
    return SimpleNamespace(
        resolution=SimpleNamespace(condition_truths=[(Exists("sofa", "kitchen"), truth)]),
        reference_room="kitchen",
        start_room="hall",
        leaf_rooms=["bedroom", "bathroom"],
        bucket=SimpleNamespace(composition="exists"),
        n_leaves=2,
        gold_leaf=0,
    )


def test_the_truth_guard_refuses_a_drop_that_breaks_a_groups_slack() -> None:
    """6 true / 6 false: dropping two false answers leaves 6 / 4 (within max(2, 0.1 n)), two
    more would leave 6 / 2 and is refused (the counts stay), two true ones are fine again."""
    true = [_instance(True) for _ in range(6)]
    false = [_instance(False) for _ in range(6)]
    may_drop = _truth_guard(true + false, ["val_unseen"] * 12, {})
    assert may_drop(false[:2])
    assert not may_drop(false[2:4])
    assert not may_drop(false[2:4])
    assert may_drop(true[:2])
    assert may_drop(false[2:4])


def _walk(category: str, targets: int) -> Any:
    """An instance of ``category`` whose gold path has ``targets`` targets over 10 m."""
    return SimpleNamespace(
        bucket=SimpleNamespace(category=category),
        resolution=SimpleNamespace(targets=("t",) * targets),
        gold_length=10.0,
    )


def test_only_asked_strata_beyond_the_workload_limits_are_matched_again() -> None:
    """The unguarded second matching may drop rows of a stratum it is asked for whose
    categories differ by 1 target (beyond the 0.2 limit), never of one whose categories carry
    the same workload, nor of one it is not asked for."""
    apart = [_walk("simple", 1), _walk("nested", 2)]
    even = [_walk("simple", 2), _walk("nested", 2)]
    assert _unmatched(even, ["test"] * 2, {"test"}) is None
    assert _unmatched(apart, ["seen"] * 2, {"test"}) is None
    may_drop = _unmatched(apart + even, ["val_unseen"] * 2 + ["test"] * 2, {"val_unseen", "test"})
    assert may_drop is not None
    assert may_drop(apart[:1]) and may_drop(apart[1:])
    assert not may_drop(even[:1]) and not may_drop(even[1:])
