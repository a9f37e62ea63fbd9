"""Truth balancing's arithmetic does not depend on the order a set is iterated in."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from types import SimpleNamespace
from typing import Any

import numpy as np

from condvln.program.ast import Exists
from condvln.synth.balance import GROUP, _excess, _keep_promises, _Tally


def test_skew_is_the_same_in_every_key_order() -> None:
    """Groups of 21–26 uses each lean by a fractional excess over their slack (0.1 n). A plain
    float sum of those excesses changes with the order of the keys, which a set of keys does not
    fix (for strings it changes with ``PYTHONHASHSEED``); the skew that decides whether a row is
    dropped must not."""
    uses = range(21, 27)
    keys = [("#seen", "exists", f"category-{n}", "kitchen") for n in uses]
    tally = _Tally(
        [[(k, True)] * (n - 4) + [(k, False)] * 4 for k, n in zip(keys, uses, strict=True)]
    )
    excesses = [_excess(GROUP, n - 4, 4) for n in uses]
    assert all(e > 0 and e != round(e) for e in excesses)
    orders = list(itertools.permutations(range(len(keys))))  # key ids, in interning order
    plain = {sum(excesses[k] for k in order) for order in orders}
    assert len(plain) > 1  # the case has teeth: naive sums disagree in the last bit
    assert {tally.skew(order) for order in orders} == {math.fsum(excesses)}


def test_a_drop_is_refused_only_when_it_breaks_the_promise() -> None:
    """The guard of promise keeping (:func:`~condvln.synth.balance._keep_promises`): a drop
    goes through unless it takes a group beyond max(3, 0.2 n) from 10 uses on, or further
    beyond it; a refused drop leaves the counts alone."""
    lean = ("#seen", "exists", "book", "office")  # 7 true / 4 false: within max(3, 2.2)
    even = ("#seen", "exists", "vase", "office")  # 6 / 6
    items = [[(lean, True)]] * 7 + [[(lean, False)]] * 4 + [[(even, True)]] * 6
    items += [[(even, False)]] * 6
    tally = _Tally(items)
    assert tally.drop_unless_breaking([17])  # even 6 / 5: fine
    assert not tally.drop_unless_breaking([7])  # lean 7 / 3 of 10: 4 > max(3, 2)
    assert tally.counts == [4, 7, 5, 6]  # the refused drop left the counts alone
    assert tally.drop_unless_breaking([0])  # lean 6 / 4: closer
    assert tally.drop_unless_breaking([16, 15])  # even 6 / 3 of 9: below 10 uses, no promise


def test_a_drop_that_shrinks_a_key_past_its_promise_is_refused() -> None:
    """A group at 12 true / 8 false is at its promise (4 ≤ 0.2 · 20); dropping one use of each
    truth keeps the gap at 4 but takes it beyond 0.2 · 18 = 3.6, so the drop is refused; the
    key is reported with its majority truth's slot (true: ``2 k + 1``)."""
    key = ("#seen", "exists", "book", "office")
    tally = _Tally([[(key, True)]] * 12 + [[(key, False)]] * 8)
    assert tally.broken_by([0, 12]) == [1]
    assert not tally.drop_unless_breaking([0, 12])
    assert tally.counts == [8, 12]
    assert tally.broken_by([0]) == [] and tally.drop_unless_breaking([0])  # 11 / 8: closer


def _row(truth: bool, other: str, row: int) -> list[Any]:
    """One row of a two-leaf cell (what promise keeping reads of an instance): leaf 0 asks
    whether the office has a book (``truth``), leaf 1 asks about ``other``."""
    bucket = SimpleNamespace(key="simple/in_room/visible/h0", category="simple", composition="")
    asks = [(Exists("book", "office"), truth), (Exists(other, "office"), row % 2 == 0)]
    return [
        SimpleNamespace(
            bucket=bucket,
            gold_leaf=leaf,
            n_leaves=2,
            resolution=SimpleNamespace(condition_truths=(condition,)),
            reference_room="r",
            leaf_rooms=(),
            start_room=None,
        )
        for leaf, condition in enumerate(asks)
    ]


def test_broken_promises_are_repaired_by_whole_rows() -> None:
    """A group at 9 true / 3 false (beyond max(3, 0.2 n)) loses rows holding its true until it
    is within, and each drop is a whole row (both leaves)."""
    items = [i for k in range(9) for i in _row(True, f"vase {k % 3}", k)]
    items += [i for k in range(3) for i in _row(False, f"vase {k % 3}", k)]
    labels = ["seen"] * len(items)
    untouched, _ = _keep_promises(items, labels, np.random.default_rng(0), {})
    assert untouched == items  # 24 instances: below MIN_REPAIRED, left alone
    kept, kept_labels = _keep_promises(items, labels, np.random.default_rng(0), {}, min_size=0)
    books = Counter(
        t for i in kept for c, t in i.resolution.condition_truths if c.category == "book"
    )
    assert books[True] - books[False] == 3 and books[False] == 3  # 6 / 3: max(3, 1.8)
    assert Counter(i.gold_leaf for i in kept) == {0: 9, 1: 9}  # whole rows went
    assert kept_labels == ["seen"] * len(kept)


def _member(bucket: str, leaf: int, category: str, truth: bool) -> Any:
    """One instance of a two-leaf cell asking whether the office has ``category``."""
    return SimpleNamespace(
        bucket=SimpleNamespace(key=bucket, category="simple", composition=""),
        gold_leaf=leaf,
        n_leaves=2,
        resolution=SimpleNamespace(condition_truths=((Exists(category, "office"), truth),)),
        reference_room="r",
        leaf_rooms=(),
        start_room=None,
    )


def _truths(kept: list[Any], category: str) -> Counter[bool]:
    """How often ``kept`` asks about ``category`` with each truth."""
    return Counter(
        t for i in kept for c, t in i.resolution.condition_truths if c.category == category
    )


def test_a_blocked_row_is_completed_another_way(monkeypatch: Any) -> None:
    """Every holder's first row takes the same leaf-1 member, whose drop would take the lamp
    group from 4 / 7 (at its promise) to 3 / 7; other leaf-1 members can go instead, and the
    book group (9 / 3) is repaired with them. The pooled type stays within its promise (22 of
    44 true)."""
    main = "simple/in_room/visible/h0"
    items = [_member(main, 0, "book", k < 9) for k in range(12)]
    items += [_member(main, 1, f"vase {k}", k % 2 == 0) for k in range(12)]
    pad = "simple/in_room/hidden/h0"  # the rest of the lamp group, in a cell of its own
    items += [_member(pad, 0, "lamp", k < 3) for k in range(10)]
    items += [_member(pad, 1, f"cup {k}", k < 3) for k in range(10)]
    rng = np.random.default_rng(0)  # the draws _keep_promises makes: order, then ties
    rng.permutation(len(items))
    ties = rng.random(len(items))
    first = 12 + int(np.argmax(ties[12:24]))  # the leaf-1 member every first row takes
    items[first] = _member(main, 1, "lamp", True)
    labels = ["seen"] * len(items)
    assert sum(t for i in items for _, t in i.resolution.condition_truths) == 22  # of 44

    monkeypatch.setattr("condvln.synth.balance.REPAIR_ALTERNATIVES", 0)
    monkeypatch.setattr("condvln.synth.balance.PAIR_TRIES", 0)
    stuck, _ = _keep_promises(items, labels, np.random.default_rng(0), {}, min_size=0)
    assert stuck == items  # no first row could be dropped
    monkeypatch.undo()
    kept, _ = _keep_promises(items, labels, np.random.default_rng(0), {}, min_size=0)
    assert _truths(kept, "book") == {True: 6, False: 3}  # within max(3, 1.8)
    assert _truths(kept, "lamp") == {True: 4, False: 7}  # the blocking member stayed
    assert items[first] in kept and len(kept) == len(items) - 6


def test_rows_that_each_break_a_promise_go_in_pairs(monkeypatch: Any) -> None:
    """The book group (8 true / 4 false) is beyond its promise, and every row holding a true
    book also holds a true lamp, whose group (12 / 17) dropping it would take beyond (6 >
    0.2 · 28). No row alone may go; a book row dropped with a row holding a false lamp keeps the
    lamp group within (11 / 16) and brings the book group to 7 / 4, within max(3, 0.2 · 11)."""
    main, pad = "simple/in_room/visible/h0", "simple/in_room/hidden/h0"
    items = [_member(main, 0, "book", k < 8) for k in range(12)]
    items += [_member(main, 1, "lamp", True) for _ in range(12)]
    items += [_member(pad, 0, "lamp", False) for _ in range(17)]
    items += [_member(pad, 1, f"cup {k}", k < 9) for k in range(17)]
    labels = ["seen"] * len(items)
    assert sum(t for i in items for _, t in i.resolution.condition_truths) == 29  # of 58

    monkeypatch.setattr("condvln.synth.balance.PAIR_TRIES", 0)
    stuck, _ = _keep_promises(items, labels, np.random.default_rng(0), {}, min_size=0)
    assert stuck == items  # every row alone takes the lamp group beyond its promise
    monkeypatch.undo()
    kept, _ = _keep_promises(items, labels, np.random.default_rng(0), {}, min_size=0)
    assert _truths(kept, "book") == {True: 7, False: 4}
    assert _truths(kept, "lamp") == {True: 11, False: 16}
    cells = Counter((i.bucket.key, i.gold_leaf) for i in kept)
    assert cells == {(main, 0): 11, (main, 1): 11, (pad, 0): 16, (pad, 1): 16}  # two whole rows
