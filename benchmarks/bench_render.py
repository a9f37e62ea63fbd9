"""Benchmark the pixel sensors on procedural houses (pinned to one core).

1. Frames per second at 224×224 RGB + depth + semantic (one ray cast per frame, the three
   sensors read off it) from random navigable poses (target: ≥ 150 fps on one core); then the
   default protocol (RGB 224² + depth / semantic 256²: two casts), and the pixel agent's
   perception (depth + semantic → detections) per frame.
2. Memory per worker: resident set size of the process after imports, after building the
   composed mesh + renderer of each house, and its peak (Embree's memory is outside Python's
   allocator, so RSS is measured, not tracemalloc).

CPU time (``time.process_time``) is reported beside wall time: on a shared machine the CPU
time is the fairer measure of the renderer itself.

::

    PYTHONPATH=src python benchmarks/bench_render.py [--houses 10] [--frames 200]
"""

from __future__ import annotations

import argparse
import os
import resource
import time

import numpy as np

from condvln.agents.pixels import pixel_detections
from condvln.nav import GridNavigator
from condvln.scene.mesh import compose_scene_mesh
from condvln.scene.sources.procedural import generate_house
from condvln.sim.protocol import ObservationProtocol, parse_protocol
from condvln.sim.render import Renderer

SQUARE = parse_protocol(
    {
        "sensors": ["rgb", "depth", "semantic"],
        "depth": {"width": 224, "height": 224},
        "semantic": {"width": 224, "height": 224},
    }
)
DEFAULT = ObservationProtocol(sensors=("rgb", "depth", "semantic"))


def rss_mb() -> float:
    """Current resident set size of this process (MB)."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def poses(navigator: GridNavigator, n: int, rng: np.random.Generator) -> list[tuple]:
    """``n`` random navigable positions with random headings."""
    rows, cols = np.nonzero(navigator.area.free)
    picks = rng.integers(rows.size, size=n)
    xz = navigator.area.frame.centres(rows[picks], cols[picks])
    return [(navigator.point(float(x), float(z)), float(rng.uniform(-np.pi, np.pi))) for x, z in xz]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--houses", type=int, default=10)
    parser.add_argument("--frames", type=int, default=200, help="frames per house")
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    print(f"load average before: {os.getloadavg()[0]:.2f} (1 min)")
    base = rss_mb()
    rng = np.random.default_rng(0)
    timings: dict[str, list[float]] = {"square": [], "default": [], "perception": []}
    walls: dict[str, float] = {"square": 0.0}
    faces, build, after_build = [], [], []
    frames = 0
    for seed in range(args.houses):
        scene = generate_house(seed)
        navigator = GridNavigator(scene)
        before, t0 = rss_mb(), time.perf_counter()
        renderer = Renderer(compose_scene_mesh(scene))
        build.append(time.perf_counter() - t0)
        renderer.render(navigator.point(0.0, 0.0), 0.0, DEFAULT)  # allocate the ray caches
        after_build.append(rss_mb() - before)
        faces.append(len(renderer.scene_mesh.mesh.faces))
        views = poses(navigator, args.frames, rng)
        renderer.render(*views[0], SQUARE)  # warm the ray cache
        c0, w0 = time.process_time(), time.perf_counter()
        for position, yaw in views:
            renderer.render(position, yaw, SQUARE)
        timings["square"].append(time.process_time() - c0)
        walls["square"] += time.perf_counter() - w0
        frames += len(views)
        c0 = time.process_time()
        images = [renderer.render(p, y, DEFAULT) for p, y in views[: args.frames // 4]]
        timings["default"].append((time.process_time() - c0) * 4)
        c0 = time.process_time()
        for (position, yaw), image in zip(views, images, strict=False):
            pixel_detections(
                image["depth"], image["semantic"], DEFAULT.depth, position, yaw, renderer.table
            )
        timings["perception"].append((time.process_time() - c0) * 4)
    cpu = {k: sum(v) for k, v in timings.items()}
    print(
        f"{args.houses} procedural houses, {np.mean(faces):.0f} triangles on average "
        f"(mesh + renderer built in {1000 * np.median(build):.1f} ms median)"
    )
    print(
        f"224x224 RGB + depth + semantic: {frames / cpu['square']:.0f} fps CPU time "
        f"({frames / walls['square']:.0f} fps wall), one core  [target >= 150]"
    )
    print(
        f"default protocol (RGB 224x224 + depth/semantic 256x256, two casts): "
        f"{frames / cpu['default']:.0f} fps CPU time"
    )
    print(
        f"pixel perception (256x256 depth + semantic -> detections): "
        f"{1000 * cpu['perception'] / frames:.2f} ms per frame"
    )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"memory: {base:.0f} MB after imports; a house's mesh + renderer + ray caches "
        f"+{np.mean(after_build):.1f} MB (max +{max(after_build):.1f}); peak RSS {peak:.0f} MB"
    )
    print(f"load average after: {os.getloadavg()[0]:.2f} (1 min)")


if __name__ == "__main__":
    main()
