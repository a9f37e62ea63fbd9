"""Benchmark the scene-graph builder.

Prints the all-pairs time (metrics + semantic truths) of one 200-object room (target ≤ 50 ms) and
the number of procedural-house graphs built per second (scene generation excluded).

Run: ``PYTHONPATH=src python benchmarks/bench_graph.py [--houses 200] [--objects 200]``
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from condvln.graph import RelationConfig, build_scene_graph
from condvln.graph.scene_graph import room_relations
from condvln.scene import sources
from condvln.scene.model import SceneObject


def random_room(n: int, seed: int = 0) -> list[SceneObject]:
    """``n`` objects in a 10 m × 3 m × 10 m room: boxes, radius-only and point objects mixed."""
    rng = np.random.default_rng(seed)
    objects = []
    for i in range(n):
        center = tuple(float(v) for v in rng.uniform((0.0, 0.0, 0.0), (10.0, 3.0, 10.0)))
        kind = i % 3
        objects.append(
            SceneObject(
                id=f"o{i}",
                category="thing",
                label="Thing",
                center=center,
                size=tuple(float(v) for v in rng.uniform(0.05, 1.5, 3)) if kind == 0 else None,
                radius=float(rng.uniform(0.05, 0.8)) if kind == 1 else None,
            )
        )
    return objects


def best_of(fn, repeats: int) -> float:
    """Best wall time of ``repeats`` calls, in seconds."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=200, help="objects in the synthetic room")
    parser.add_argument("--houses", type=int, default=200, help="procedural houses to build")
    args = parser.parse_args()

    config = RelationConfig()
    objects = random_room(args.objects)
    seconds = best_of(lambda: room_relations("bench", objects, config), repeats=20)
    pairs = args.objects * (args.objects - 1)
    verdict = "OK" if seconds <= 0.050 else "SLOW"
    print(
        f"all pairs, {args.objects}-object room ({pairs} ordered pairs): "
        f"{seconds * 1e3:.2f} ms [{verdict}, target <= 50 ms]"
    )

    scenes = [sources.load("procedural", str(seed)) for seed in range(args.houses)]
    start = time.perf_counter()
    for scene in scenes:
        build_scene_graph(scene, config)
    elapsed = time.perf_counter() - start
    n_objects = sum(len(r.objects) for s in scenes for r in s.rooms)
    print(
        f"procedural houses: {args.houses / elapsed:.0f} graphs/s "
        f"({elapsed / args.houses * 1e3:.2f} ms per house, {n_objects / args.houses:.1f} objects "
        "per house, scene generation excluded)"
    )


if __name__ == "__main__":
    main()
