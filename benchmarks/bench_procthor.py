"""Loading speed of the ``procthor`` and ``ithor`` scene sources.

Usage::

    PYTHONPATH=src python benchmarks/bench_procthor.py [--repeat 20] [--fixtures tests/data]

Prints ProcTHOR houses loaded per second (every fixture house, repeated), iTHOR scenes loaded
per second from the fixture files, and — when the optional ``procthor`` package is installed —
for the 120 named iTHOR rooms (the one-off parse of its 43 MB metadata file is timed apart).
"""

from __future__ import annotations

import argparse
import importlib.util
import time
from collections.abc import Callable
from pathlib import Path

from condvln.scene.sources import ithor, procthor

DEFAULT_FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "data"


def rate(references: list[str], loader: Callable[[str], object], repeat: int) -> float:
    """Scenes loaded per second when loading every reference ``repeat`` times."""
    start = time.perf_counter()
    for _ in range(repeat):
        for reference in references:
            loader(reference)
    return repeat * len(references) / (time.perf_counter() - start)


def main() -> None:
    """Run the benchmark and print one line per measurement."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20, help="passes over the inputs")
    parser.add_argument("--fixtures", type=Path, default=DEFAULT_FIXTURES)
    args = parser.parse_args()

    houses = sorted(str(p) for p in (args.fixtures / "procthor" / "houses").glob("*.json"))
    procthor.packaged_asset_sizes()  # parse the asset table once, outside the timing
    objects = sum(sum(1 for _ in procthor.load(h).objects()) for h in houses)
    print(
        f"procthor: {rate(houses, procthor.load, args.repeat):8.1f} houses/s "
        f"({len(houses)} houses, {objects} objects, x{args.repeat})"
    )

    ai2thor = args.fixtures / "ai2thor"
    compact = ai2thor / "ithor_robothor_5scenes_compact.json"
    files = [str(ai2thor / "ithor_FloorPlan1_objects_raw.json")] + [
        f"{compact}#{name}"
        for name in ("FloorPlan1", "FloorPlan201", "FloorPlan301", "FloorPlan401")
    ]
    print(f"ithor:    {rate(files, ithor.load, args.repeat):8.1f} scenes/s (fixture files)")

    if importlib.util.find_spec("procthor") is None:
        print('ithor:    named scenes skipped (pip install "procthor>=0.0.1.dev2")')
        return
    start = time.perf_counter()
    ithor.load("FloorPlan1")
    print(f"ithor:    {time.perf_counter() - start:8.2f} s to parse the procthor metadata file")
    names = ithor.ithor_scene_names()
    print(f"ithor:    {rate(names, ithor.load, args.repeat):8.1f} scenes/s (120 named rooms)")


if __name__ == "__main__":
    main()
