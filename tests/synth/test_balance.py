"""Truth balancing's arithmetic does not depend on the order a set is iterated in."""

from __future__ import annotations

import itertools
import math
from collections import Counter

from condvln.synth.balance import _excess, _skew


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
