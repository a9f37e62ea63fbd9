"""Issue #15 item 1: the branch-steps axis of the bucket design and the arms it samples."""

from __future__ import annotations

import math

import numpy as np

from condvln.graph import build_scene_graph
from condvln.nav import GridNavigator
from condvln.program.render import MAX_WORDS, compact_words
from condvln.scene.sources import load
from condvln.synth.driver import GENERATION_GRID, success_radius
from condvln.synth.sampler import (
    MAX_SIZE,
    Bucket,
    Rejected,
    SamplerSettings,
    SceneContext,
    all_buckets,
    program_size,
    sample_instance,
)
from condvln.synth.shapes import SKELETONS


def test_default_design_gives_every_category_the_same_workload() -> None:
    """Issue 26 item 4: one branch step and horizons 0-2 for every Table-1 category."""
    design: dict[str, set[tuple[int, int]]] = {}
    for bucket in all_buckets():
        design.setdefault(bucket.category, set()).add((bucket.horizon, bucket.branch_steps))
    assert set(design) == set(SKELETONS)
    assert all(cells == {(0, 1), (1, 1), (2, 1)} for cells in design.values()), design


def test_longer_arms_go_to_smaller_programs_only() -> None:
    steps: dict[str, set[int]] = {}
    for bucket in all_buckets(branch_steps=(1, 2, 3)):
        steps.setdefault(bucket.category, set()).add(bucket.branch_steps)
        assert program_size(bucket.category, bucket.horizon, bucket.branch_steps) <= MAX_SIZE
    assert steps == {
        "simple": {1, 2, 3},
        "chain": {1, 2, 3},
        "nested": {1, 2},
        "long_chain": {1, 2},
        "nested_chain": {1},
        "deep_nested": {1},
    }
    # by hand: targets (waypoints + branches × steps) + conditions + levels below the first
    assert program_size("chain", 0, 3) == 0 + 3 * 3 + 2 + 0 == 11
    assert program_size("chain", 1, 3) == 12
    assert program_size("nested", 2, 2) == 2 + 3 * 2 + 2 + 1 == 11
    assert program_size("deep_nested", 2, 1) == 2 + 4 + 3 + 2 == 11
    keys = {b.key for b in all_buckets(branch_steps=(1, 2, 3))}
    assert "simple/in_room/hidden/h2/s3" in keys and "simple/in_room/hidden/h2" in keys


def test_sampled_arms_hold_their_targets_and_fit_the_word_limit() -> None:
    scene = load("procedural", "2")
    ctx = SceneContext(build_scene_graph(scene), GridNavigator(scene, config=GENERATION_GRID))
    radius = success_radius(scene)
    settings = SamplerSettings(success_radius=radius)
    rng = np.random.default_rng(0)
    made = 0
    for bucket in (
        Bucket("simple", "cross_room", "hidden", 1, 3),
        Bucket("nested", "relation", "hidden", 0, 2),
    ):
        for attempt in range(40):
            try:
                inst = sample_instance(ctx, bucket, attempt % 2, settings, rng)
            except Rejected:
                continue
            made += 1
            res = inst.resolution
            assert all(len(arm) == bucket.branch_steps for arm in res.branch_targets)
            assert res.branch_subgoals == res.branch_targets[res.leaf_index][:-1]
            assert res.subgoals[: bucket.horizon] == res.targets[: bucket.horizon]
            assert compact_words(inst.program) <= MAX_WORDS
            gold = res.branch_targets[res.leaf_index]
            others = [
                o for i, arm in enumerate(res.branch_targets) if i != res.leaf_index for o in arm
            ]
            others += list(res.targets[: bucket.horizon])
            for a in gold:
                for b in others:
                    gap = np.subtract(inst.goal_points[a], inst.goal_points[b])
                    assert np.hypot(gap[0], gap[2]) > 2 * radius, (a, b)
    assert made >= 4


def test_far_apart_is_the_pairwise_distance_rule() -> None:
    """The vectorised separation mask equals "more than d from each other approach point",
    checked pair by pair on every target of a house against a few others."""
    scene = load("procedural", "2")
    ctx = SceneContext(build_scene_graph(scene), GridNavigator(scene, config=GENERATION_GRID))
    ids = sorted(ctx.targets)
    others = ids[:: max(1, len(ids) // 4)][:4]
    for distance in (0.5, 2.0, 4.0):
        mask = ctx.far_apart(ids, others, distance)
        expected = [
            all(math.dist(ctx.targets[o][1], ctx.targets[c][1]) > distance for c in others)
            for o in ids
        ]
        assert mask.tolist() == expected
        assert 0 < sum(expected) < len(ids) or distance == 0.5
    assert ctx.far_apart(ids[:3], [], 1.0).tolist() == [True] * 3


def test_far_apart_masks_equal_the_per_call_norm() -> None:
    """The once-per-scene distance table gives the masks the per-call pairwise norm gave, bit
    for bit (datasets stay byte-identical), on random candidate and other sets."""
    scene = load("procedural", "3")
    ctx = SceneContext(build_scene_graph(scene), GridNavigator(scene, config=GENERATION_GRID))
    ids = sorted(ctx.targets)
    points = {o: np.array(ctx.targets[o][1]) for o in ids}
    rng = np.random.default_rng(7)
    for _ in range(50):
        candidates = list(rng.choice(ids, int(rng.integers(1, len(ids))), replace=False))
        others = list(rng.choice(ids, int(rng.integers(1, 6)), replace=False))
        a = np.array([points[o] for o in candidates])
        b = np.array([points[o] for o in others])
        norms = np.linalg.norm(a[:, None, :] - b[None, :, :], axis=2)
        for distance in (1.0, 2.0, float(rng.uniform(0.5, 4.0))):
            mask = ctx.far_apart(candidates, others, distance)
            assert mask.tolist() == (norms > distance).all(axis=1).tolist()
