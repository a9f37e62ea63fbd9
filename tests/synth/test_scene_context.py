"""The sampler's per-scene look-ups answer as the computations they stand in for."""

from __future__ import annotations

import itertools

import numpy as np

from condvln.graph import build_scene_graph
from condvln.nav import GridNavigator
from condvln.scene.sources import load
from condvln.synth.driver import GENERATION_GRID
from condvln.synth.groups import GroupStats, relation_allowed
from condvln.synth.sampler import SceneContext


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


def test_fields_to_targets_are_solved_once_with_the_navigator_values() -> None:
    ctx = _context(5)
    start = next(iter(ctx.targets.values()))[1]
    fresh = GridNavigator(ctx.scene, config=GENERATION_GRID)
    for target in itertools.islice(ctx.targets, 5):
        field = ctx.field_to(target)
        assert field is ctx.field_to(target)
        expected = fresh.distance_field(ctx.targets[target][1]).distance(start)
        assert field is not None and field.distance(start) == expected
