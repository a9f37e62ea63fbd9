"""Approach points on every fixture scene and on 1,000 procedural houses.

Every object gets an approach point, or is reported unreachable (``None``) by id; both answers
are checked independently: an approach point must be navigable and within reach of the
object's footprint, and an unreachable object must have no main-region cell within reach.
"""

from __future__ import annotations

import itertools
import math
import multiprocessing
import os
from pathlib import Path

import numpy as np
import pytest

from condvln.nav import GridNavigator, approach_points
from condvln.nav.area import footprint_distance
from condvln.scene.model import Scene
from condvln.scene.sources import load

ITHOR_COMPACT_SCENES = ("FloorPlan1", "FloorPlan201", "FloorPlan301", "FloorPlan401")
PROCEDURAL_SEEDS = 1000


def _fixture_scenes(fixtures: Path) -> list[Scene]:
    houses = sorted((fixtures / "procthor" / "houses").glob("*.json"))
    scenes = [load("procthor", str(p)) for p in houses]
    scenes.append(load("ithor", str(fixtures / "ai2thor" / "ithor_FloorPlan1_objects_raw.json")))
    compact = str(fixtures / "ai2thor" / "ithor_robothor_5scenes_compact.json")
    scenes += [load("ithor", compact, scene=name) for name in ITHOR_COMPACT_SCENES]
    return scenes


def _check_scene(scene: Scene) -> tuple[int, list[str], list[str]]:
    """``(objects, unreachable ids, problems)`` for one scene."""
    nav = GridNavigator(scene)
    report = approach_points(nav, scene)
    xs, zs = nav.area.frame.all_centres()
    free_xz = np.column_stack([xs[nav.area.free], zs[nav.area.free]])
    problems, unreachable = [], []
    for obj in scene.objects():
        point = report[obj.id]
        if point is None:
            unreachable.append(obj.id)
            if footprint_distance(obj, free_xz).min() <= nav.config.reach:
                problems.append(f"{scene.id}: {obj.id} reported unreachable but is in reach")
            continue
        gap = float(footprint_distance(obj, [(point[0], point[2])])[0])
        if not (nav.is_navigable(point) and gap <= nav.config.reach and math.isfinite(point[1])):
            problems.append(f"{scene.id}: {obj.id} approach point {point} is invalid")
    if set(report) != {obj.id for obj in scene.objects()}:
        problems.append(f"{scene.id}: report does not cover every object")
    return len(report), unreachable, problems


def test_fixture_scenes_have_approach_points_or_report_unreachable(fixtures_dir: Path) -> None:
    scenes = _fixture_scenes(fixtures_dir)
    assert len(scenes) == 16
    total = reachable = 0
    for scene in scenes:
        count, unreachable, problems = _check_scene(scene)
        assert problems == []
        total += count
        reachable += count - len(unreachable)
        # Objects too far from free floor: deep (L-shaped) counters, paintings above furniture.
        assert count - len(unreachable) >= 0.85 * count, (scene.id, unreachable)
    assert reachable >= 0.96 * total


def test_fixture_paths_between_approach_points_stay_on_the_grid(fixtures_dir: Path) -> None:
    rng = np.random.default_rng(0)
    for scene in _fixture_scenes(fixtures_dir)[::3]:
        nav = GridNavigator(scene)
        points = [p for p in approach_points(nav, scene).values() if p is not None]
        for i, j in rng.integers(0, len(points), size=(4, 2)):
            path = nav.shortest_path(points[i], points[j])
            assert path is not None
            assert all(nav.line_of_sight(p, q) for p, q in itertools.pairwise(path))
            length = sum(math.dist(p, q) for p, q in itertools.pairwise(path))
            field_value = nav.distance_field(points[j]).distance(points[i])
            assert length == pytest.approx(field_value, rel=0.04, abs=0.05)


def _check_seeds(seeds: range) -> list[tuple[int, int, list[str], list[str]]]:
    results = []
    for seed in seeds:
        count, unreachable, problems = _check_scene(load("procedural", str(seed)))
        results.append((seed, count, unreachable, problems))
    return results


@pytest.mark.slow
def test_procedural_houses_have_approach_points_or_report_unreachable() -> None:
    workers = max(1, min(2, os.cpu_count() or 1))
    chunks = [range(start, PROCEDURAL_SEEDS, workers) for start in range(workers)]
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        results = [r for part in pool.map(_check_seeds, chunks) for r in part]
    assert sorted(seed for seed, *_ in results) == list(range(PROCEDURAL_SEEDS))
    assert [p for *_, problems in results for p in problems] == []
    unreachable = sorted((seed, oid) for seed, _, ids, _ in results for oid in ids)
    # The generator promises every object reachable.
    assert unreachable == [], unreachable[:20]
