"""Benchmark the per-episode metrics and exact nDTW against fastdtw.

Synthetic VLN-CE-like episodes: trajectories of ``--positions`` recorded positions from random
actions (FORWARD 0.25 m, LEFT / RIGHT 15°; turns repeat the position), followed noisily along
dense references as long as a real dataset's ``_gt`` paths (nDTW / SDTW / CLS align with the
``_gt`` locations, one point per 0.25 m step, as VLN-CE's NDTW measure does): their lengths are
drawn from the ``_gt`` files of ``--dataset`` (default: a sample of houses generated with the
default ``condvln generate`` configuration) and their distribution is printed. A third of the
agents take a wrong branch half-way; 0–3 subgoals on the reference and 2–4 leaf goals. The
geodesic distance is the Euclidean distance — a stand-in for a navmesh geodesic in obstacle-free
space, so the timings exclude geodesic queries; d_th = 3.0 m.

Part 1 times :func:`score_episode` (every metric and diagnostic) and the aggregation of all
records, ``--repeats`` times (median printed); the workers inherit the episodes when the pool forks
them (none are pickled inside the timing). Part 1b does the same with real geodesics, as
``condvln evaluate`` measures them: ``--episodes`` episodes spread over ``--geodesic-scenes``
procedural houses, goals / subgoals / leaf goals at object approach points, references along the
exact shortest paths (0.25 m apart, like ``_gt``), trajectories that follow them noisily (some
leave the navigable area); each is scored with the exact engine
(:class:`condvln.evaluation.evaluate.SceneGeodesic`: navigator, fields and queries inside the
timing) and with the grid engine (5 cm fast-marching fields, every position queried), scenes split
over ``--workers`` processes; the wall time of one engine is the slowest worker's. With ``--repeats
N`` the exact engine is timed N times over the same episodes (a fresh navigator each time) and the
grid engine once (it takes minutes); the median, every repeat and the load average before and after
are printed. Part 2 compares exact nDTW (this package: Euclidean cost matrix + compiled DTW) with
``fastdtw`` (radius=1, Euclidean, as VLN-CE's NDTW measure uses it) on the same deduplicated
trajectories. fastdtw is not a dependency of condvln: ``pip install fastdtw`` to run part 2.

Run: ``PYTHONPATH=src python benchmarks/bench_metrics.py [--episodes 10000] [--workers 2]
[--dataset DIR] [--geodesic-scenes 20] [--repeats 5] [--skip-grid]``; ``--skip-grid`` times the
exact engine of part 1b alone.
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import math
import os
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from condvln.dataset.generate import GenerateConfig, generate_dataset
from condvln.evaluation import ContinuousSpace, score_episode
from condvln.evaluation.aggregate import aggregate, breakdown, check_invariants
from condvln.evaluation.dtw import dedup_mask, dtw
from condvln.evaluation.evaluate import SceneGeodesic
from condvln.evaluation.spaces import pairwise_euclidean
from condvln.nav import ExactNavigator, GridNavigator
from condvln.scene.sources import load
from condvln.vlnce import SPLITS, split_path

RADIUS = 1.0
D_TH = 3.0  # nDTW threshold (score_episode's default, VLN-CE's NDTW measure)
SAMPLE_HOUSES = 10
Episode = dict[str, Any]


def gt_lengths(dataset: Path) -> np.ndarray:
    """Number of ``_gt`` locations of every episode of every split of ``dataset``."""
    lengths = []
    for split in SPLITS:
        gt_file = split_path(dataset, split, "_answers" if split == "test" else "_gt")
        if gt_file.is_file():
            with gzip.open(gt_file, "rt") as f:
                doc = json.load(f)
            entries = [v.get("gt", v) for v in doc.values()]
            lengths += [len(e["locations"]) for e in entries]
    if not lengths:
        raise SystemExit(f"no _gt locations found under {dataset}")
    return np.asarray(lengths)


def sample_gt_lengths() -> np.ndarray:
    """``_gt`` lengths of a sample of houses generated with the default configuration."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "ds"
        generate_dataset(GenerateConfig(scenes=SAMPLE_HOUSES), out, workers=2)
        return gt_lengths(out)


def _random_polyline(rng: np.random.Generator, start: np.ndarray, n: int) -> np.ndarray:
    """A smooth random walk on the floor: n points 0.25 m apart (like ``_gt`` locations)."""
    heading = rng.uniform(0, 2 * math.pi) + np.cumsum(rng.normal(scale=0.4, size=n - 1))
    steps = np.full((n - 1, 1), 0.25)
    moves = steps * np.stack([np.sin(heading), np.zeros(n - 1), -np.cos(heading)], axis=1)
    return np.vstack([start, start + np.cumsum(moves, axis=0)])


def _along(polyline: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Points at arc lengths ``s`` along ``polyline`` (clipped to its ends)."""
    cum = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(polyline, axis=0), axis=1))])
    return np.stack([np.interp(s, cum, polyline[:, k]) for k in range(3)], axis=1), cum[-1]


def _follow(rng: np.random.Generator, path: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """n recorded positions of an agent following ``path`` noisily, and its actions.

    60 % of the actions are 0.25 m forward moves, the rest 15° turns (position repeated); the
    agent drifts sideways and gives up or overshoots at 70–110 % of the path length.
    """
    forward = rng.random(n - 1) < 0.6
    _, length = _along(path, np.zeros(1))
    s = np.minimum(
        np.concatenate([[0.0], np.cumsum(0.25 * forward)]), length * rng.uniform(0.7, 1.1)
    )
    drift = np.cumsum(
        rng.normal(scale=0.03, size=(n, 3)) * [1, 0, 1] * np.append(1, forward)[:, None], axis=0
    )
    points, _ = _along(path, s)
    turns = rng.choice([2, 3], size=n - 1)
    return points + drift, np.append(np.where(forward, 1, turns), 0)


def make_episodes(
    n_episodes: int, n_positions: int, seed: int, lengths: np.ndarray
) -> list[Episode]:
    """Synthetic episodes (see the module docstring); a third take a wrong branch half-way.

    Reference lengths (points, 0.25 m apart like ``_gt`` locations) are drawn from ``lengths``.
    """
    rng = np.random.default_rng(seed)
    episodes = []
    for n_ref in rng.choice(np.maximum(lengths, 2), size=n_episodes):
        reference = _random_polyline(rng, np.zeros(3), int(n_ref))
        half = len(reference) // 2
        wrong = _random_polyline(rng, reference[half], len(reference) - half)
        leaves = np.vstack(
            [reference[-1:], wrong[-1:], rng.normal(scale=5.0, size=(rng.integers(0, 3), 3))]
        )
        followed = np.vstack([reference[:half], wrong]) if rng.random() < 1 / 3 else reference
        trajectory, actions = _follow(rng, followed, n_positions)
        subgoals = reference[np.sort(rng.choice(len(reference) - 1, rng.integers(0, 4), False))]
        episodes.append(
            {
                "trajectory": trajectory,
                "reference_path": reference,
                "subgoals": subgoals,
                "branch_goals": leaves,
                "actions": actions,
                "depth": int(rng.integers(1, 4)),
            }
        )
    return episodes


def score_all(episodes: list[Episode]) -> list[dict[str, Any]]:
    """Score every episode (Euclidean geodesic stand-in)."""
    space = ContinuousSpace()
    return [
        {
            "depth": e["depth"],
            **score_episode(
                e["trajectory"],
                space=space,
                radius=RADIUS,
                reference_path=e["reference_path"],
                subgoals=e["subgoals"],
                branch_goals=e["branch_goals"],
                gold_branch=0,
                actions=e["actions"],
            ),
        }
        for e in episodes
    ]


_EPISODES: list[Episode] = []
"""A worker's episodes (:func:`_share`)."""


def _share(episodes: list[Episode]) -> None:
    """Pool initializer: keep the episodes (inherited, not pickled, when the pool forks)."""
    _EPISODES[:] = episodes


def _score_every(task: tuple[int, int]) -> list[dict[str, Any]]:
    """:func:`score_all` of every ``step``-th shared episode from ``start``."""
    start, step = task
    return score_all(_EPISODES[start::step])


def score_parallel(episodes: list[Episode], workers: int) -> list[dict[str, Any]]:
    """:func:`score_all` in ``workers`` processes (order kept)."""
    if workers == 1:
        return score_all(episodes)
    with ProcessPoolExecutor(workers, initializer=_share, initargs=(episodes,)) as pool:
        parts = list(pool.map(_score_every, [(i, workers) for i in range(workers)]))
    out: list[dict[str, Any]] = [{}] * len(episodes)
    for i, part in enumerate(parts):
        out[i::workers] = part
    return out


def _densify(path: np.ndarray, step: float = 0.25) -> np.ndarray:
    """Points every ``step`` metres along ``path`` (its end included), like ``_gt`` locations."""
    _, length = _along(path, np.zeros(1))
    s = np.append(np.arange(0.0, length, step), length)
    points, _ = _along(path, s)
    return points


def scene_episodes(seed: int, n_episodes: int, n_positions: int) -> list[Episode]:
    """Episodes in procedural house ``seed`` (see part 1b in the module docstring)."""
    scene = load("procedural", str(seed))
    grid = GridNavigator(scene)
    nav = ExactNavigator(scene, area=grid.area)
    targets = [p for o in scene.objects() if (p := nav.approach_point(o)) is not None]
    rows, cols = np.nonzero(grid.area.free)
    rng = np.random.default_rng(seed)
    episodes: list[Episode] = []
    while len(episodes) < n_episodes:
        r = int(rng.integers(len(rows)))
        start = grid.point(*grid.area.frame.centres(rows[[r]], cols[[r]])[0])
        picks = rng.choice(len(targets), size=int(rng.integers(3, 8)), replace=False)
        n_sub = int(rng.integers(0, 4))
        chain = [start, *(targets[i] for i in picks[: n_sub + 1])]
        legs = [nav.shortest_path(a, b) for a, b in itertools.pairwise(chain)]
        if any(leg is None for leg in legs):
            continue
        path = np.array([chain[0], *(p for leg in legs for p in leg[1:])])
        reference = _densify(path)
        trajectory, actions = _follow(rng, reference, n_positions)
        episodes.append(
            {
                "trajectory": trajectory,
                "reference_path": reference,
                "goal": np.asarray(chain[-1]),
                "subgoals": np.array(chain[1:-1]).reshape(-1, 3),
                "branch_goals": np.array([chain[-1], *(targets[i] for i in picks[n_sub + 1 :])]),
                "actions": actions,
                "geodesic": nav.distance(start, chain[-1]),
                "depth": int(rng.integers(1, 4)),
            }
        )
    return episodes


def _score_with(rows: Any, episodes: list[Episode]) -> list[dict[str, Any]]:
    space = ContinuousSpace(rows=rows)
    return [
        {
            "depth": e["depth"],
            **score_episode(
                e["trajectory"],
                space=space,
                radius=RADIUS,
                reference_path=e["reference_path"],
                goal=e["goal"],
                subgoals=e["subgoals"],
                branch_goals=e["branch_goals"],
                gold_branch=0,
                actions=e["actions"],
                shortest_path_length=e["geodesic"],
            ),
        }
        for e in episodes
    ]


def _grid_distances(scene_seed: int) -> Any:
    """The grid engine's ``distances(points, target)``: fast-marching fields, every point."""
    nav = GridNavigator(load("procedural", str(scene_seed)))
    fields: dict[tuple[float, ...], Any] = {}

    def distances(points: np.ndarray, target: np.ndarray) -> np.ndarray:
        key = tuple(target.tolist())
        if key not in fields:
            fields[key] = nav.distance_field(key)
        result = fields[key].query(points)
        fallback = np.maximum(np.linalg.norm(points - target, axis=-1), np.nextafter(RADIUS, 2))
        return np.where(np.ma.getmaskarray(result), fallback, result.data)

    return distances


def _time_scene(
    seed: int, episodes: list[Episode], with_grid: bool
) -> tuple[float, float, list, list]:
    """The exact engine (and the grid engine) on one scene: seconds and records of each."""
    start = time.perf_counter()
    geo = SceneGeodesic(load("procedural", str(seed)))
    records = _score_with(lambda p, ts, g=geo: g.rows(p, ts, RADIUS), episodes)
    t_exact = time.perf_counter() - start
    if not with_grid:
        return t_exact, 0.0, records, []
    start = time.perf_counter()
    grid = _grid_distances(seed)
    rows = lambda p, ts, d=grid: np.stack([d(p, t) for t in ts])  # noqa: E731
    grid_records = _score_with(rows, episodes)
    return t_exact, time.perf_counter() - start, records, grid_records


def score_scenes(task: tuple[list[int], int, int, int, bool]) -> dict[str, Any]:
    """One worker: build every scene's episodes (untimed), then time the exact engine over all
    its scenes ``repeats`` times (a fresh navigator each time; records of the last repeat) and,
    with ``grid``, the grid engine once."""
    seeds, per_scene, n_positions, repeats, grid = task
    episodes = {seed: scene_episodes(seed, per_scene, n_positions) for seed in seeds}
    out: dict[str, Any] = {"exact": [], "grid": [], "grid_records": []}
    for repeat in range(repeats):
        times, out["records"] = np.zeros(2), []
        for seed in seeds:
            t_exact, t_grid, records, grid_records = _time_scene(
                seed, episodes[seed], grid and repeat == 0
            )
            times += (t_exact, t_grid)
            out["records"] += records
            out["grid_records"] += grid_records
        out["exact"].append(times[0])
        if repeat == 0:
            out["grid"].append(times[1])
    return out


def _load() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def bench_geodesic(
    n_scenes: int, n_episodes: int, n_positions: int, workers: int, repeats: int, grid_too: bool
) -> None:
    """Part 1b: every metric with real geodesics, exact engine against the grid engine (the
    exact engine alone without ``grid_too``)."""
    per_scene = math.ceil(n_episodes / n_scenes)
    tasks = [
        (list(range(w, n_scenes, workers)), per_scene, n_positions, repeats, grid_too)
        for w in range(workers)
    ]
    load_before = _load()
    with ProcessPoolExecutor(workers) as pool:
        parts = list(pool.map(score_scenes, tasks))
    exact = [r for p in parts for r in p["records"]]
    grid = [r for p in parts for r in p["grid_records"]]
    aggregation = []
    for _ in range(repeats):
        start = time.perf_counter()
        aggregate(exact, seed=0)
        breakdown(exact, "depth", seed=0)
        aggregation.append(time.perf_counter() - start)
    # wall of one repeat: the slowest worker's (workers run side by side)
    t_exact = np.max([p["exact"] for p in parts], axis=0) + aggregation
    print(
        f"\npart 1b: {len(exact)} episodes over {n_scenes} procedural houses, "
        f"{workers} worker(s), real geodesics, median of {repeats} repeat(s) "
        f"(load average before {load_before}, after {_load()})"
    )
    print(
        f"  exact engine: {np.median(t_exact):6.2f} s wall (all metrics + aggregation "
        f"{np.median(aggregation):.2f} s); repeats {np.round(t_exact, 2).tolist()}"
    )
    if not grid_too:
        return
    t_grid = np.max([p["grid"] for p in parts], axis=0) + aggregation[0]
    ne = np.array([r["distance_to_goal"] for r in exact])
    ne_grid = np.array([r["distance_to_goal"] for r in grid])
    print(f"  grid engine : {t_grid[0]:6.2f} s wall (once)")
    print(f"  exact / grid = {np.median(t_exact) / t_grid[0]:.2f}")
    print(
        f"  NE grid - exact: max {np.max(ne_grid - ne):+.3f} m, min {np.min(ne_grid - ne):+.3f} m; "
        f"differ by > 1 mm in {np.mean(np.abs(ne_grid - ne) > 1e-3):.1%} of episodes; "
        f"success differs in {np.mean([a['success'] != b['success'] for a, b in zip(exact, grid, strict=True)]):.1%}"
    )


def exact_ndtw(trajectory: np.ndarray, reference: np.ndarray) -> float:
    """Exact nDTW as score_episode computes it (dedup, Euclidean, d_th = D_TH)."""
    traj = trajectory[dedup_mask(trajectory)]
    return math.exp(-dtw(pairwise_euclidean(reference, traj)) / (len(reference) * D_TH))


def compare_fastdtw(episodes: list[Episode]) -> None:
    """Time exact nDTW against fastdtw(radius=1) and report fastdtw's error."""
    if not episodes:
        return
    try:
        from fastdtw import fastdtw
    except ImportError:
        print("fastdtw is not installed: `pip install fastdtw` to run the comparison")
        return

    def euclidean(a: np.ndarray, b: np.ndarray) -> float:  # VLN-CE's NDTW distance function
        return float(np.linalg.norm(np.asarray(b) - np.asarray(a), ord=2))

    pairs = [(e["trajectory"][dedup_mask(e["trajectory"])], e["reference_path"]) for e in episodes]
    t_exact = math.inf
    for _ in range(3):  # best of 3: the exact pass is short and sensitive to machine load
        t0 = time.perf_counter()
        exact = [exact_ndtw(e["trajectory"], e["reference_path"]) for e in episodes]
        t_exact = min(t_exact, time.perf_counter() - t0)
    t0 = time.perf_counter()
    approx = [
        math.exp(-fastdtw(traj, ref, radius=1, dist=euclidean)[0] / (len(ref) * D_TH))
        for traj, ref in pairs
    ]
    t_fast = time.perf_counter() - t0
    err = np.asarray(exact) - np.asarray(approx)
    n = len(episodes)
    print(f"\nexact nDTW vs fastdtw(radius=1, euclidean) on {n} of the same trajectories")
    print(f"  exact   : {t_exact:8.3f} s  (best of 3; {1e6 * t_exact / n:8.1f} us / episode)")
    print(f"  fastdtw : {t_fast:8.3f} s  ({1e6 * t_fast / n:8.1f} us / episode)")
    print(f"  speed-up: {t_fast / t_exact:8.1f} x")
    print(
        f"  max |nDTW_fastdtw - nDTW_exact| = {np.max(np.abs(err)):.6f} "
        f"(mean {np.mean(np.abs(err)):.6f}; fastdtw >= exact DTW in "
        f"{np.mean(err >= -1e-12):.1%} of episodes)"
    )


def _parser() -> argparse.ArgumentParser:
    """The command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=10_000)
    parser.add_argument("--positions", type=int, default=300)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument(
        "--fastdtw-episodes",
        type=int,
        default=1000,
        help="episodes for the fastdtw comparison (fastdtw is slow)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--repeats", type=int, default=1, help="timings of parts 1 and 1b (median printed)"
    )
    parser.add_argument(
        "--geodesic-scenes",
        type=int,
        default=20,
        help="procedural houses of part 1b (0 skips it)",
    )
    parser.add_argument(
        "--skip-grid", action="store_true", help="time part 1b's exact engine only (no grid)"
    )
    parser.add_argument(
        "--dataset",
        type=Path,
        help="dataset whose _gt lengths the references follow "
        f"(default: generate {SAMPLE_HOUSES} houses with the default configuration)",
    )
    return parser


def main() -> None:
    """Parse options, run both parts, print the results."""
    args = _parser().parse_args()

    t0 = time.perf_counter()
    lengths = gt_lengths(args.dataset) if args.dataset else sample_gt_lengths()
    where = args.dataset or f"{SAMPLE_HOUSES} houses of the default `condvln generate` config"
    q = np.percentile(lengths, [0, 5, 25, 50, 75, 95, 100]).round().astype(int)
    print(
        f"_gt locations per episode in {where} ({len(lengths)} episodes, "
        f"{time.perf_counter() - t0:.1f} s): min {q[0]}, p5 {q[1]}, p25 {q[2]}, median {q[3]}, "
        f"p75 {q[4]}, p95 {q[5]}, max {q[6]}, mean {lengths.mean():.1f}"
    )
    episodes = make_episodes(args.episodes, args.positions, args.seed, lengths)
    ref_lengths = [len(e["reference_path"]) for e in episodes]
    print(
        f"{args.episodes} episodes x {args.positions} positions, references "
        f"{min(ref_lengths)}-{max(ref_lengths)} points (mean {np.mean(ref_lengths):.1f}, "
        f"0.25 m apart); d_th = {D_TH} m; geodesic = Euclidean stand-in"
    )

    t0 = time.perf_counter()
    score_all(episodes[:1])
    print(
        f"first score_episode call (numba compile or cache load): {time.perf_counter() - t0:.2f} s"
    )

    load_before, times = _load(), []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        records = score_parallel(episodes, args.workers)
        t1 = time.perf_counter()
        agg = aggregate(records, seed=args.seed)
        groups = breakdown(records, "depth", seed=args.seed)
        times.append((t1 - t0, time.perf_counter() - t1))
    t_score, t_agg = np.median(times, axis=0)
    total = [round(a + b, 2) for a, b in times]
    print(
        f"part 1, median of {args.repeats} repeat(s) (load average before {load_before}, "
        f"after {_load()}):"
    )
    print(
        f"score_episode, all metrics ({args.workers} worker(s)): {t_score:.2f} s "
        f"({1e6 * t_score / len(episodes):.0f} us / episode)"
    )
    print(f"aggregate + breakdown by depth ({len(groups)} groups, bootstrap 2000): {t_agg:.2f} s")
    print(f"total: {np.median(np.sum(times, axis=1)):.2f} s; repeats {total}")
    for name in ("success", "oracle_success", "spl", "ndtw", "sdtw", "cls", "bsa", "csr"):
        a = agg[name]
        print(f"  {name:15s} {a.mean:.4f}  [{a.ci_low:.4f}, {a.ci_high:.4f}]  n={a.n}")
    print(f"invariant violations: {check_invariants(agg) or 'none'}")

    if args.geodesic_scenes:
        bench_geodesic(
            args.geodesic_scenes,
            args.episodes,
            args.positions,
            args.workers,
            args.repeats,
            not args.skip_grid,
        )
    compare_fastdtw(episodes[: args.fastdtw_episodes])


if __name__ == "__main__":
    main()
