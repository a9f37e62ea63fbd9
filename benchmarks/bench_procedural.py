"""Benchmark of the procedural house generator (a script, not a test).

Prints houses generated per second in a single process, plus the mean number of rooms and
objects per house. Target: at least 100 houses/s on one core.

Run from the repository root::

    python benchmarks/bench_procedural.py --seeds 500
"""

from __future__ import annotations

import argparse
import statistics
import time

from condvln.scene.catalogue import load_catalogue
from condvln.scene.sources.procedural import generate_house


def main() -> None:
    """Generate houses for seeds ``0 .. n-1`` and print throughput and content statistics."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=500, help="number of seeds (default 500)")
    args = parser.parse_args()
    load_catalogue()  # parse the catalogue once, outside the timed loop
    start = time.perf_counter()
    houses = [generate_house(seed) for seed in range(args.seeds)]
    elapsed = time.perf_counter() - start
    rooms = [len(h.rooms) for h in houses]
    objects = [sum(len(r.objects) for r in h.rooms) for h in houses]
    print(f"procedural: {args.seeds} houses in {elapsed:.2f} s")
    print(f"  {args.seeds / elapsed:.1f} houses/s ({1000 * elapsed / args.seeds:.2f} ms/house)")
    print(f"  mean rooms/house   {statistics.mean(rooms):.2f} (min {min(rooms)}, max {max(rooms)})")
    print(
        f"  mean objects/house {statistics.mean(objects):.1f} (min {min(objects)}, max {max(objects)})"
    )
    print(f"  mean objects/room  {sum(objects) / sum(rooms):.1f}")


if __name__ == "__main__":
    main()
