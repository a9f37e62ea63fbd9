"""Time to generate the paper-scale default dataset (a script, not a test).

Runs ``condvln generate`` with its defaults (200 procedural houses × 75 sampled instructions,
about 11,000 episodes after balancing) and prints the wall time of each phase, the load
average and the peak resident memory of this (the parent) process and of the largest worker.
Target: ≤ 60 s wall on 2 cores (issue 33 item 2).

    PYTHONPATH=src python benchmarks/bench_generate.py [--workers 2] [--out /tmp/condvln-bench]
"""

from __future__ import annotations

import argparse
import itertools
import os
import resource
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from condvln.dataset.generate import GenerateConfig, generate_dataset
from condvln.parallel.executors import default_workers


def main() -> None:
    """Generate the default dataset once and print the phase timings."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=default_workers())
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="condvln-bench-")) / "dataset"
    marks: list[tuple[str, float]] = []

    def progress(label: str, total: int) -> Callable[[], None]:
        marks.append((label, time.perf_counter()))
        return lambda: None

    start = time.perf_counter()
    stats = generate_dataset(
        GenerateConfig(), out, workers=args.workers, overwrite=True, progress=progress
    )
    end = time.perf_counter()
    phases = [*marks, ("end", end)]
    print(
        f"generated {stats['episodes']} episodes over {stats['scenes']} scenes "
        f"with {args.workers} workers in {end - start:.1f} s wall"
    )
    for (label, t0), (_, t1) in itertools.pairwise(phases):
        print(f"  {label:<10} {t1 - t0:6.1f} s")
    print(f"  (sampled {stats['sampled_before_balancing']} before balancing)")
    parent = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    worker = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"  peak RSS: parent {parent:.0f} MiB, largest worker {worker:.0f} MiB")
    print(f"  load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.out is None:
        shutil.rmtree(out.parent)


if __name__ == "__main__":
    main()
