"""Issue 26 item 4: categories matched on gold-path targets and length within each stratum."""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace
from typing import Any

import numpy as np

from condvln.synth.pipeline import WORKLOAD_MIN_SCENES, WORKLOAD_ROUNDS, _Run
from condvln.synth.workload import (
    LENGTH_TOLERANCE,
    MAX_DROP,
    TARGET_TOLERANCE,
    beyond_limits,
    excess,
    match_workload,
    off_target,
    workload_gaps,
)


def _instance(
    category: str, leaves: int, leaf: int, horizon: int, length: float, nearest: bool
) -> Any:
    """What matching reads of an instance: category, bucket key, gold leaf, targets, length,
    whether the gold goal is the one nearest the start."""
    bucket = SimpleNamespace(category=category, key=f"{category}/h{horizon}")
    targets = tuple(f"t{k}" for k in range(horizon + 1))
    return SimpleNamespace(
        bucket=bucket,
        n_leaves=leaves,
        gold_leaf=leaf,
        resolution=SimpleNamespace(targets=targets),
        gold_length=length,
        gold_is_nearest=nearest,
    )


def _rows(category: str, leaves: int, horizons: list[int], rng: np.random.Generator) -> list[Any]:
    """One row (every gold leaf) per horizon; length grows with the horizon, plus noise; the
    gold goal is the nearest one in a random member of each row (chance)."""
    rows = []
    for h in horizons:
        nearest = int(rng.integers(leaves))
        rows += [
            _instance(
                category, leaves, leaf, h, 4.0 + 3.0 * h + rng.uniform(-1, 1), leaf == nearest
            )
            for leaf in range(leaves)
        ]
    return rows


def test_matching_brings_categories_to_a_common_workload() -> None:
    rng = np.random.default_rng(0)
    short = _rows("simple", 2, [0] * 30 + [1] * 20 + [2] * 10, rng)  # mean horizon 0.67
    long = _rows("nested", 3, [0] * 10 + [1] * 20 + [2] * 30, rng)  # mean horizon 1.33
    items = short + long
    before = workload_gaps(items)
    assert before["targets"] > 0.6 and before["length"] > 0.3
    kept, labels = match_workload(items, ["seen"] * len(items), np.random.default_rng(1))
    after = workload_gaps(kept)
    assert after["targets"] <= 2 * TARGET_TOLERANCE + 1e-9, after
    assert after["length"] <= 2.2 * LENGTH_TOLERANCE, after
    assert labels == ["seen"] * len(kept)
    for category, group in (("simple", short), ("nested", long)):
        left = [i for i in kept if i.bucket.category == category]
        assert len(left) >= (1 - MAX_DROP) * len(group)
        assert sum(i.gold_is_nearest for i in left) * left[0].n_leaves == len(left)
        per_cell = Counter((i.bucket.key, i.gold_leaf) for i in left)
        for key in {i.bucket.key for i in left}:  # whole rows dropped: gold leaves stay even
            assert len({per_cell[key, leaf] for leaf in range(left[0].n_leaves)}) == 1


def test_matching_keeps_order_strata_and_is_deterministic() -> None:
    rng = np.random.default_rng(2)
    items = _rows("simple", 2, [0] * 20 + [2] * 5, rng) + _rows("chain", 3, [2] * 20, rng)
    labels = ["a" if k % 2 else "b" for k in range(len(items))]
    first = match_workload(items, labels, np.random.default_rng(3))
    second = match_workload(items, labels, np.random.default_rng(3))
    assert [id(i) for i in first[0]] == [id(i) for i in second[0]]
    position = {id(i): k for k, i in enumerate(items)}
    assert [position[id(i)] for i in first[0]] == sorted(position[id(i)] for i in first[0])
    assert first[1] == [labels[position[id(i)]] for i in first[0]]


def test_matched_categories_are_left_alone() -> None:
    rng = np.random.default_rng(4)
    items = _rows("simple", 2, [0, 1, 2] * 10, rng) + _rows("nested", 3, [0, 1, 2] * 10, rng)
    for inst in items:  # identical workload by construction
        inst.gold_length = 5.0 + len(inst.resolution.targets)
    kept, _ = match_workload(items, [""] * len(items), np.random.default_rng(5))
    assert len(kept) == len(items)


def test_off_target_names_the_categories_a_workload_round_moves_and_which_way() -> None:
    """What :meth:`~condvln.synth.pipeline._Run.restore_workload` samples more of: categories
    whose mean targets sit more than 0.1 from the categories' mean (or else whose mean length
    sits more than 5 % off it), +1 above, -1 below; within the limits nothing is wanted."""
    rng = np.random.default_rng(6)
    light = _rows("simple", 2, [0] * 20, rng)  # 1 target
    middle = _rows("chain", 3, [1] * 20, rng)  # 2 targets
    heavy = _rows("nested", 3, [2] * 20, rng)  # 3 targets
    items = light + middle + heavy
    assert beyond_limits(items)
    assert off_target(items) == {"simple": -1, "nested": 1}
    for inst in items:  # equal targets, lengths apart: judged on length
        inst.resolution.targets = ("t0",)
        inst.gold_length = {"simple": 10.0, "chain": 11.0, "nested": 12.0}[inst.bucket.category]
    assert beyond_limits(items)
    assert off_target(items) == {"simple": -1, "nested": 1}
    for inst in items:
        inst.gold_length = 10.0
    assert not beyond_limits(items) and off_target(items) == {}


class _ScriptedRun(_Run):
    """A run whose rebalancing hands out scripted kept sets, one per round, and whose sampling
    only counts its calls: what :meth:`_Run.restore_workload` decides from the gaps alone."""

    def __init__(self, kept_per_round: list[list[Any]]) -> None:
        self.labels = ["val_unseen"] * WORKLOAD_MIN_SCENES
        self.stratum_of = {"house": "val_unseen"}
        self.kept, self.script, self.samples = kept_per_round[0], kept_per_round[1:], 0

    def sample(self, *args: Any, **kwargs: Any) -> None:
        self.samples += 1

    def rebalance(self) -> None:
        self.kept = self.script.pop(0)


def _length_gap(gap: float) -> list[Any]:
    """Two categories with equal targets whose mean lengths differ by ``gap`` (ratio − 1)."""
    rng = np.random.default_rng(7)
    items = _rows("simple", 2, [0] * 4, rng) + _rows("nested", 3, [0] * 4, rng)
    for inst in items:
        inst.scene_id = "house"
        inst.gold_length = 10.0 * (1.0 + gap if inst.bucket.category == "nested" else 1.0)
    return items


def test_workload_rounds_keep_the_round_nearest_the_limits() -> None:
    """Balancing redraws the whole union each round, so a later round can be worse: the rounds
    end on the kept set of least excess over the limits, and stop once one is within them."""
    later = [0.25, 0.40, 0.20] * WORKLOAD_ROUNDS
    gaps = [0.30, 0.15, *later[: WORKLOAD_ROUNDS - 1]]  # before the rounds, then after each
    rounds = [_length_gap(g) for g in gaps]
    assert [round(excess(r), 6) for r in rounds[:5]] == [3.0, 1.5, 2.5, 4.0, 2.0]
    run = _ScriptedRun(rounds)
    run.restore_workload(["val_unseen"])
    assert run.kept is rounds[1] and not run.script
    assert run.samples == 2 * WORKLOAD_ROUNDS  # both categories sit off the mean each round
    within = [_length_gap(0.30), _length_gap(0.05), _length_gap(0.40)]
    run = _ScriptedRun(within)
    run.restore_workload(["val_unseen"])
    assert run.kept is within[1] and len(run.script) == 1  # stopped within the limits
