"""Truth balancing's arithmetic does not depend on the order a set is iterated in."""

from __future__ import annotations

import itertools
import math

from condvln.synth.balance import GROUP, _excess, _Tally


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
