"""The sampler's per-scene look-ups answer as the computations they stand in for."""

from __future__ import annotations

import numpy as np

from condvln.graph import build_scene_graph
from condvln.nav import ExactNavigator, GridNavigator
from condvln.scene.sources import load
from condvln.synth.driver import GENERATION_GRID
from condvln.synth.groups import GroupStats, relation_allowed
from condvln.synth.sampler import SceneContext, _gold_is_nearest


def _context(seed: int) -> SceneContext:
    scene = load("procedural", str(seed))
    return SceneContext(build_scene_graph(scene), GridNavigator(scene, config=GENERATION_GRID))


def test_separation_masks_equal_a_pairwise_norm() -> None:
    ctx = _context(3)
    ids = list(ctx.targets)
    points = {o: np.asarray(ctx.targets[o][1]) for o in ids}
    rng = np.random.default_rng(0)
    for distance in (0.5, 2.0, 4.0):
        for _ in range(40):
            others = [ids[k] for k in rng.choice(len(ids), size=3, replace=False)]
            expected = [
                all(np.linalg.norm(points[c] - points[o]) > distance for o in others) for c in ids
            ]
            assert ctx.far_apart(ids, others, distance).tolist() == expected
            assert [ctx.is_apart(c, others, distance) for c in ids] == expected
    assert sum(ctx.far_apart(ids, ids[:1], 2.0)) not in (0, len(ids))  # both answers occur


def test_askable_categories_follow_the_group_statistics() -> None:
    scene = load("procedural", "5")
    plain = _context(5)
    room_type = plain.scene.rooms[0].room_type
    categories = sorted(plain.scene_categories)
    informative = [c for c in categories if plain.conditions.presence_informative(c, room_type)]
    assert 0 < len(informative) < len(categories)
    assert plain.askable_categories(room_type) == informative  # no statistics: the band only
    varied, constant = informative[::2], informative[1::2]
    counts = {("exists", c, room_type): (5, 5) for c in varied}
    counts |= {("exists", c, room_type): (3, 0) for c in constant}  # never false: not asked
    nav = GridNavigator(scene, config=GENERATION_GRID)
    ctx = SceneContext(build_scene_graph(scene), nav, GroupStats(counts))
    assert ctx.askable_categories(room_type) == varied
    assert ctx.askable_categories("no such room type") == []  # unseen groups never vary
    key = ("above", "lamp", "table")
    assert plain.asks(key) == relation_allowed(*key)


def test_gold_is_nearest_follows_exact_geodesics() -> None:
    ctx = _context(5)
    fresh = ExactNavigator(ctx.scene, config=GENERATION_GRID)
    ids = list(ctx.targets)
    rng = np.random.default_rng(1)
    answers = set()
    for _ in range(30):
        start = ctx.targets[ids[int(rng.integers(len(ids)))]][1]
        leaves = [ids[k] for k in rng.choice(len(ids), size=3, replace=False)]
        distances = [fresh.distance(start, ctx.targets[o][1]) for o in leaves]
        nearest = int(np.argmin(distances))
        for gold in range(3):
            answers.add(_gold_is_nearest(ctx, start, leaves, gold))
            assert _gold_is_nearest(ctx, start, leaves, gold) is (gold == nearest)
    assert answers == {True, False}
    assert ctx.exact.field_bytes() > 0  # the leaves' fields are kept for the episodes


def test_gold_is_nearest_is_none_for_an_unreachable_start() -> None:
    ctx = _context(5)
    leaves = list(ctx.targets)[:2]
    assert _gold_is_nearest(ctx, (1e3, 0.0, 1e3), leaves, 0) is None
