"""Benchmark the navigators: grid field solve and queries, exact-engine speed, grid excess.

Runs on the largest of the first ``--seeds`` procedural houses and on a synthetic 20 × 20 m
four-room house with furniture (the target size: one field ≤ 50 ms, ≥ 100,000 point queries/s
from a cached field). Then measures shortest paths, distances, ``visible`` and ``line_of_sight``
per second between object approach points, with the goals' fields cached (target: ≥ 1,000
paths/s), on procedural house 7 and the synthetic house. ``--excess`` compares the grid with the
exact engine (the geodesic of data and metrics) on random start / goal pairs of free cells over
procedural houses and iTHOR rooms: the grid's string-pulled path length and its fast-marching
field value against the exact distance (max / mean excess, pairs over 1 %, reachability
disagreements), and both engines' time per pair::

    PYTHONPATH=src python benchmarks/bench_nav.py [--seeds 200] [--solver fmm|dijkstra]
    PYTHONPATH=src python benchmarks/bench_nav.py --queries-only
    PYTHONPATH=src python benchmarks/bench_nav.py --excess [--pairs 500] [--houses 20 --rooms 20]
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable

import numpy as np

from condvln.nav import ExactNavigator, GridConfig, GridNavigator, approach_points
from condvln.scene.model import Door, Room, Scene, SceneObject
from condvln.scene.sources import load


def synthetic_house(size: float = 20.0, seed: int = 0) -> Scene:
    """Four square rooms of ``size / 2`` with doors between neighbours and 12 boxes each."""
    rng = np.random.default_rng(seed)
    half = size / 2.0
    rooms = []
    for i, (x0, z0) in enumerate([(0.0, 0.0), (half, 0.0), (0.0, half), (half, half)]):
        objects = []
        for k in range(12):
            sx, sz = rng.uniform(0.4, 1.6, size=2)
            cx = rng.uniform(x0 + 0.3 + sx / 2, x0 + half - 0.3 - sx / 2)
            cz = rng.uniform(z0 + 0.3 + sz / 2, z0 + half - 0.3 - sz / 2)
            objects.append(
                SceneObject(
                    id=f"r{i}_box{k}",
                    category="box",
                    label="Box",
                    center=(cx, 0.4, cz),
                    size=(sx, 0.8, sz),
                )
            )
        polygon = ((x0, z0), (x0 + half, z0), (x0 + half, z0 + half), (x0, z0 + half))
        rooms.append(
            Room(
                id=f"r{i}",
                room_type="living room",
                label="LivingRoom",
                objects=tuple(objects),
                floor_polygon=polygon,
            )
        )
    mid, lo, hi = half, half / 2 - 0.5, half / 2 + 0.5
    doors = (
        Door(id="d01", room_ids=("r0", "r1"), segment=((mid, lo), (mid, hi))),
        Door(id="d23", room_ids=("r2", "r3"), segment=((mid, half + lo), (mid, half + hi))),
        Door(id="d02", room_ids=("r0", "r2"), segment=((lo, mid), (hi, mid))),
        Door(id="d13", room_ids=("r1", "r3"), segment=((half + lo, mid), (half + hi, mid))),
    )
    return Scene(id=f"synthetic/{size:g}m", source="benchmark", rooms=tuple(rooms), doors=doors)


def largest_procedural(seeds: int) -> Scene:
    """The procedural house with the largest floor among seeds ``0 .. seeds - 1``."""
    best, best_area = None, -1.0
    for seed in range(seeds):
        scene = load("procedural", str(seed))
        area = sum(room.area or 0.0 for room in scene.rooms)
        if area > best_area:
            best, best_area = scene, area
    assert best is not None
    return best


def _timed(fn: Callable[[], object], repeat: int) -> float:
    """Median wall time of ``fn`` in seconds."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def bench(scene: Scene, solver: str, n_queries: int = 1_000_000) -> None:
    """Print build, field, query, path and approach-point timings for one scene."""
    config = GridConfig(solver=solver)  # type: ignore[arg-type]
    build = _timed(lambda: GridNavigator(scene, config=config), 3)
    nav = GridNavigator(scene, config=config)
    rows, cols = nav.area.frame.shape
    c = nav.area.frame.cell_size
    xs, zs = nav.area.frame.all_centres()
    free = np.column_stack([xs[nav.area.free], zs[nav.area.free]])
    rng = np.random.default_rng(0)
    goals = free[rng.choice(len(free), size=10, replace=False)]
    field_times = []
    for gx, gz in goals:
        fresh = GridNavigator(scene, config=config, area=nav.area)
        field_times.append(_timed(lambda g=(gx, 0.0, gz), n=fresh: n.distance_field(g), 1))
    field = nav.distance_field((goals[0][0], 0.0, goals[0][1]))
    lo, hi = free.min(axis=0), free.max(axis=0)
    pts = np.zeros((n_queries, 3))
    pts[:, [0, 2]] = rng.uniform(lo, hi, size=(n_queries, 2))
    query = _timed(lambda: field.query(pts), 3)
    pairs = [
        ((a[0], 0.0, a[1]), (b[0], 0.0, b[1])) for a, b in free[rng.choice(len(free), (20, 2))]
    ]
    path_new = _timed(lambda: [nav.shortest_path(a, b) for a, b in pairs], 1)
    path_cached = _timed(lambda: [nav.shortest_path(a, b) for a, b in pairs], 1)
    approach = _timed(lambda: approach_points(nav, scene), 1)
    n_objects = sum(len(room.objects) for room in scene.rooms)
    print(
        f"{scene.id}: {cols * c:.1f} × {rows * c:.1f} m grid ({rows}×{cols} cells), "
        f"navigable {nav.area.area:.1f} m², solver {nav.solver}"
    )
    print(f"  build navigable area     {build * 1e3:8.1f} ms")
    print(
        f"  distance field (median)  {np.median(field_times) * 1e3:8.1f} ms"
        f"   (min {min(field_times) * 1e3:.1f}, max {max(field_times) * 1e3:.1f})"
    )
    print(f"  cached field queries     {n_queries / query:12,.0f} points/s")
    print(
        f"  shortest path, new goal  {path_new / 20 * 1e3:8.2f} ms per path (field solve included)"
    )
    print(f"  shortest path, cached    {path_cached / 20 * 1e3:8.2f} ms per path")
    print(f"  approach points          {approach * 1e3:8.1f} ms for {n_objects} objects")


def bench_queries(scene: Scene, solver: str, n_goals: int = 20, per_goal: int = 10) -> None:
    """Print paths, distances, visibility and line-of-sight checks per second for one scene.

    End points are object approach points; every goal's field is solved before timing, so the
    numbers are the per-query cost of the generator's path/distance calls with cached fields.
    """
    nav = GridNavigator(scene, config=GridConfig(solver=solver))  # type: ignore[arg-type]
    points = [p for p in approach_points(nav, scene).values() if p is not None]
    rng = np.random.default_rng(0)
    goals = [points[i] for i in rng.choice(len(points), min(n_goals, len(points)), replace=False)]
    for goal in goals:
        nav.distance_field(goal)
    pairs = [(points[i], goal) for goal in goals for i in rng.integers(0, len(points), per_goal)]
    nav.shortest_path(*pairs[0])  # compile / load any JIT kernels outside the timing
    nav.visible(*pairs[0])
    paths = _timed(lambda: [nav.shortest_path(a, b) for a, b in pairs], 1)
    dists = _timed(lambda: [nav.distance(a, b) for a, b in pairs], 1)
    views = [(points[i], points[j]) for i, j in rng.integers(0, len(points), (5000, 2))]
    visible = _timed(lambda: [nav.visible(a, b) for a, b in views], 3)
    sight = _timed(lambda: [nav.line_of_sight(a, b) for a, b in views], 3)
    print(f"{scene.id}: {len(points)} approach points, {len(pairs)} pairs, fields cached")
    print(
        f"  shortest paths           {len(pairs) / paths:12,.0f} /s ({paths / len(pairs) * 1e3:.3f} ms)"
    )
    print(
        f"  distances                {len(pairs) / dists:12,.0f} /s ({dists / len(pairs) * 1e3:.3f} ms)"
    )
    print(f"  visible checks           {len(views) / visible:12,.0f} /s")
    print(f"  line-of-sight checks     {len(views) / sight:12,.0f} /s")


def excess_scenes(houses: int, rooms: int) -> list[Scene]:
    """Procedural houses ``0 .. houses - 1`` and iTHOR rooms spread over the four room types."""
    scenes = [load("procedural", str(seed)) for seed in range(houses)]
    plans = [base + k for k in range(30) for base in (1, 201, 301, 401)][:rooms]
    return scenes + [load("ithor", f"FloorPlan{n}") for n in sorted(plans)]


def _relative_excess(values: list[tuple[float | None, float | None]]) -> np.ndarray:
    return np.array([(g - e) / e for g, e in values if g is not None and e is not None and e > 0])


def bench_excess(scenes: list[Scene], pairs: int, seed: int = 0) -> None:
    """Print the grid's excess over the exact engine on ``pairs`` random free-cell pairs."""
    rng = np.random.default_rng(seed)
    per_scene = np.bincount(rng.integers(len(scenes), size=pairs), minlength=len(scenes))
    path_vals, field_vals, mismatch = [], [], 0
    t_grid = t_exact = 0.0
    for scene, n in zip(scenes, per_scene, strict=True):
        grid = GridNavigator(scene)
        rows, cols = np.nonzero(grid.area.free)
        pick = rng.integers(len(rows), size=(n, 2))
        xz = grid.area.frame.centres(rows[pick.ravel()], cols[pick.ravel()]).reshape(n, 2, 2)
        points = [(grid.point(*a), grid.point(*b)) for a, b in xz]
        start = time.perf_counter()
        exact = ExactNavigator(scene, area=grid.area)
        d_exact = [exact.distance(a, b) for a, b in points]
        t_exact += time.perf_counter() - start
        start = time.perf_counter()
        d_path = [grid.distance(a, b) for a, b in points]
        d_field = [grid.distance_field(b).distance(a) for a, b in points]
        t_grid += time.perf_counter() - start
        path_vals += list(zip(d_path, d_exact, strict=True))
        field_vals += list(zip(d_field, d_exact, strict=True))
        mismatch += sum((g is None) != (e is None) for g, e in zip(d_path, d_exact, strict=True))
    load_avg = os.getloadavg()
    print(
        f"{pairs} random free-cell pairs over {len(scenes)} scenes "
        f"(load average {load_avg[0]:.2f} {load_avg[1]:.2f} {load_avg[2]:.2f})"
    )
    for name, vals in (("grid path (distance)", path_vals), ("grid field (FMM)", field_vals)):
        rel = _relative_excess(vals)
        print(
            f"  {name:22s} excess over exact: max {100 * rel.max():6.2f} %, "
            f"mean {100 * rel.mean():5.2f} %, min {100 * rel.min():6.2f} %, "
            f"> 1 %: {np.mean(rel > 0.01):.1%} of {rel.size}"
        )
    print(f"  reachability disagreements (grid path vs exact): {mismatch}")
    print(
        f"  time per pair: exact {1e3 * t_exact / pairs:.2f} ms (engine built per scene), "
        f"grid path + field {1e3 * t_grid / pairs:.2f} ms; ratio {t_grid / t_exact:.1f}×"
    )


def main() -> None:
    """Parse options and run the benchmark."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=200, help="procedural seeds to scan")
    parser.add_argument("--solver", choices=("fmm", "dijkstra"), default="fmm")
    parser.add_argument(
        "--queries-only", action="store_true", help="only the path / visibility measurements"
    )
    parser.add_argument("--excess", action="store_true", help="only grid vs exact")
    parser.add_argument("--pairs", type=int, default=500)
    parser.add_argument("--houses", type=int, default=20)
    parser.add_argument("--rooms", type=int, default=20)
    args = parser.parse_args()
    if args.excess:
        bench_excess(excess_scenes(args.houses, args.rooms), args.pairs)
        return
    if not args.queries_only:
        bench(largest_procedural(args.seeds), args.solver)
        bench(synthetic_house(20.0), args.solver)
    bench_queries(load("procedural", "7"), args.solver)
    bench_queries(synthetic_house(20.0), args.solver)


if __name__ == "__main__":
    main()
