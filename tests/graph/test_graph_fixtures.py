"""Graphs build for every fixture scene and for 1,000 procedural houses; JSON round trips exact."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from condvln.graph import (
    SceneGraph,
    build_scene_graph,
    graph_from_dict,
    graph_to_dict,
    load_graph,
    save_graph,
    summarize,
)
from condvln.scene import sources

FIXTURES = Path(__file__).resolve().parents[1] / "data"
PROCTHOR_HOUSES = sorted((FIXTURES / "procthor" / "houses").glob("*.json"))
ITHOR_RAW = FIXTURES / "ai2thor" / "ithor_FloorPlan1_objects_raw.json"
ITHOR_COMPACT = FIXTURES / "ai2thor" / "ithor_robothor_5scenes_compact.json"


def check_graph(graph: SceneGraph) -> None:
    """Structural invariants every built graph satisfies."""
    summary = summarize(graph)
    sizes = [len(r.objects) for r in graph.scene.rooms]
    assert summary["objects"] == sum(sizes)
    assert summary["ordered_pairs"] == sum(n * (n - 1) for n in sizes)
    assert summary["edges_per_predicate"]["in"] == sum(sizes)
    for rid in graph.room_ids:
        m = graph.relations(rid).metrics
        for name in ("center_distance", "used_distance", "azimuth_deg", "elevation_deg"):
            assert np.all(np.isfinite(getattr(m, name)))


def check_file_round_trip(graph: SceneGraph, path: Path) -> None:
    save_graph(graph, path)
    data = path.read_bytes()
    assert b"NaN" not in data
    loaded = load_graph(path)
    assert loaded == graph
    save_graph(loaded, path)
    assert path.read_bytes() == data


@pytest.mark.parametrize("house", PROCTHOR_HOUSES, ids=lambda p: p.stem)
def test_procthor_fixture_houses(house, tmp_path):
    graph = build_scene_graph(sources.load("procthor", str(house)))
    check_graph(graph)
    check_file_round_trip(graph, tmp_path / "g.json")


def test_there_are_procthor_fixtures():
    assert len(PROCTHOR_HOUSES) >= 10


@pytest.mark.parametrize(
    ("path", "options"),
    [(ITHOR_RAW, {})] + [(ITHOR_COMPACT, {"scene": f"FloorPlan{n}"}) for n in (1, 201, 301, 401)],
    ids=["raw-FloorPlan1", "FloorPlan1", "FloorPlan201", "FloorPlan301", "FloorPlan401"],
)
def test_ithor_fixture_scenes(path, options, tmp_path):
    graph = build_scene_graph(sources.load("ithor", str(path), **options))
    check_graph(graph)
    assert summarize(graph)["objects"] > 30
    check_file_round_trip(graph, tmp_path / "g.json")


def test_ithor_kitchen_has_expected_stacking_facts():
    graph = build_scene_graph(sources.load("ithor", str(ITHOR_RAW)))
    summary = summarize(graph)
    assert summary["edges_per_predicate"]["above"] == summary["edges_per_predicate"]["below"] > 0
    assert summary["undecided_per_predicate"]["near"] > 0  # the dead band is populated


@pytest.mark.slow
def test_one_thousand_procedural_houses(tmp_path):
    totals = {"objects": 0, "pairs": 0}
    for seed in range(1000):
        graph = build_scene_graph(sources.load("procedural", str(seed)))
        check_graph(graph)
        assert graph_from_dict(graph_to_dict(graph)) == graph
        if seed % 100 == 0:
            check_file_round_trip(graph, tmp_path / f"g{seed}.json")
        summary = summarize(graph)
        totals["objects"] += summary["objects"]
        totals["pairs"] += summary["ordered_pairs"]
    assert totals["objects"] > 10_000
    assert totals["pairs"] > totals["objects"]
