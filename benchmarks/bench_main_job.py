"""Wall time of the main job, ``condvln benchmark`` with its defaults (a script, not a test).

Each repeat runs the whole benchmark from scratch (datasets generated, every baseline run and
scored, tables and reports written) in a fresh process and a fresh results folder, and times
its stages: dataset generation per group, each run, each evaluation, the reports. The script
prints the median wall time over the repeats, the load average before and after, the median
time of every stage, and the peak resident memory of the job's process and of its largest
worker process. Target (issue 33): ≤ 5 min on 2 idle cores.

    PYTHONPATH=src python benchmarks/bench_main_job.py [--repeats 5] [--workers 2]
        [--scenes N] [--per-scene N] [--ithor-rooms N] [--keep DIR]

``--compare A B`` instead checks that two results folders hold the same outputs: every file
byte for byte, except the fields that record time, the command line or the code version
(:data:`VOLATILE`) and the folder's own path and name.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

VOLATILE = frozenset({"seconds", "timestamp", "command", "provenance", "agent_code", "agent_hash"})
"""JSON keys left out of ``--compare``: wall times and clock times, the command line and git
state, the agent's source digests (they change with the code)."""


def _timed(stages: dict[str, float], name: Callable[..., str], function: Any) -> Any:
    """``function`` wrapped so each call adds its wall time to ``stages[name(*args)]``."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            key = name(*args, **kwargs)
            stages[key] = stages.get(key, 0.0) + time.perf_counter() - start

    return wrapper


def run_once(out: Path, workers: int, sizes: dict[str, int | None]) -> dict[str, Any]:
    """Run the benchmark into ``out`` in this process; wall time and per-stage times."""
    import condvln.agents.run as run_module
    import condvln.benchmark as bench
    import condvln.evaluation.evaluate as evaluate_module

    stages: dict[str, float] = {}

    def group(folder: Any) -> str:
        return "ithor" if "ithor" in Path(folder).parts[-3:] else "procedural"

    bench.generate_dataset = _timed(
        stages, lambda config, folder, **_: f"generate {group(folder)}", bench.generate_dataset
    )
    run_module.run_agent = _timed(
        stages,
        lambda a, d, s, o, *_, **__: f"run {Path(o).name} ({group(o)})",
        run_module.run_agent,
    )
    evaluate_module.evaluate_run = _timed(
        stages,
        lambda d, t, o, *_, run_name, **__: f"evaluate {run_name} ({group(o)})",
        evaluate_module.evaluate_run,
    )
    bench._write_reports = _timed(stages, lambda *_, **__: "reports", bench._write_reports)
    config = bench.SMALL.model_copy(
        update={
            k: v for k, v in (("scenes", sizes["scenes"]), ("per_scene", sizes["per_scene"])) if v
        }
    )
    ithor = bench.ITHOR_SMALL
    if sizes["ithor_rooms"]:  # as --ithor-rooms N: the first N rooms
        ithor = ithor.model_copy(update={"scenes": sizes["ithor_rooms"]})
    start = time.perf_counter()
    bench.run_benchmark(out, config=config, ithor=ithor, workers=workers)
    wall = time.perf_counter() - start
    stages["other (tables, loading, results)"] = wall - sum(stages.values())
    peaks = {
        "job": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "largest worker": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
    }
    return {"wall": wall, "stages": stages, "peak_rss_mib": peaks}


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _normalised(data: Any, root: str) -> Any:
    """``data`` without :data:`VOLATILE` keys, the results folder's path replaced by ``ROOT``."""
    if isinstance(data, dict):
        return {k: _normalised(v, root) for k, v in data.items() if k not in VOLATILE}
    if isinstance(data, list):
        return [_normalised(v, root) for v in data]
    if isinstance(data, str):
        return data.replace(root, "ROOT")
    return data


def _same(a: Path, b: Path, root_a: str, root_b: str) -> bool:
    """Whether two output files hold the same content (JSON: up to :data:`VOLATILE` keys)."""
    left, right = a.read_bytes(), b.read_bytes()
    if left == right:
        return True
    if a.suffix == ".json":
        return _normalised(json.loads(left), root_a) == _normalised(json.loads(right), root_b)
    if a.suffix == ".jsonl":
        rows_a, rows_b = left.splitlines(), right.splitlines()
        return len(rows_a) == len(rows_b) and all(
            _normalised(json.loads(x), root_a) == _normalised(json.loads(y), root_b)
            for x, y in zip(rows_a, rows_b, strict=True)
        )
    return _unrooted(left, root_a) == _unrooted(right, root_b)


def _unrooted(data: bytes, root: str) -> bytes:
    """``data`` with the results folder's path, and its name in report titles, as ``ROOT``
    (only there: a folder named ``results`` must not rename the word elsewhere)."""
    title = f"CondVLN report: {Path(root).name}".encode()
    return data.replace(root.encode(), b"ROOT").replace(title, b"CondVLN report: ROOT")


def _root(folder: Path) -> str:
    """The path a results folder was written at: the parent of the dataset its
    ``results.json`` names (a folder kept with ``--keep`` was written in a temporary one),
    else the folder itself."""
    try:
        dataset = json.loads((folder / "results.json").read_bytes())["dataset"]
    except (OSError, ValueError, KeyError, TypeError):
        return str(folder.resolve())
    return str(Path(dataset).parent)


def compare(a: Path, b: Path) -> int:
    """Print the files that differ between results folders ``a`` and ``b``; 1 if any."""
    files_a = {p.relative_to(a) for p in a.rglob("*") if p.is_file()}
    files_b = {p.relative_to(b) for p in b.rglob("*") if p.is_file()}
    problems = [f"only in {a}: {p}" for p in sorted(files_a - files_b)]
    problems += [f"only in {b}: {p}" for p in sorted(files_b - files_a)]
    identical = 0
    for rel in sorted(files_a & files_b):
        if (a / rel).read_bytes() == (b / rel).read_bytes():
            identical += 1
        elif not _same(a / rel, b / rel, _root(a), _root(b)):
            problems.append(f"differs: {rel}")
    print(f"{len(files_a & files_b)} files in both, {identical} byte-identical")
    print(
        "\n".join(problems)
        or "no other difference (volatile fields: " + ", ".join(sorted(VOLATILE)) + ")"
    )
    return 1 if problems else 0


def main() -> int:
    """Run the repeats (or ``--compare``, or one ``--once`` repeat) and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--scenes", type=int, default=None)
    parser.add_argument("--per-scene", type=int, default=None)
    parser.add_argument("--ithor-rooms", type=int, default=None)
    parser.add_argument("--keep", type=Path, default=None, help="keep the last results here")
    parser.add_argument("--compare", type=Path, nargs=2, default=None)
    parser.add_argument("--once", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.compare:
        return compare(*args.compare)
    sizes = {"scenes": args.scenes, "per_scene": args.per_scene, "ithor_rooms": args.ithor_rooms}
    if args.once:
        print(json.dumps(run_once(args.once, args.workers, sizes)))
        return 0
    walls: list[float] = []
    stages: dict[str, list[float]] = defaultdict(list)
    peaks: dict[str, list[float]] = defaultdict(list)
    for repeat in range(args.repeats):
        out = Path(tempfile.mkdtemp(prefix="condvln-mainjob-")) / "results"
        before = _load()
        argv = [sys.executable, __file__, "--once", str(out), "--workers", str(args.workers)]
        argv += [f"--{k.replace('_', '-')}={v}" for k, v in sizes.items() if v]
        done = subprocess.run(argv, check=True, capture_output=True, text=True)
        result = json.loads(done.stdout.splitlines()[-1])
        walls.append(result["wall"])
        for name, seconds in result["stages"].items():
            stages[name].append(seconds)
        for name, mib in result["peak_rss_mib"].items():
            peaks[name].append(mib)
        rss = ", ".join(f"{name} {mib:.0f} MiB" for name, mib in result["peak_rss_mib"].items())
        print(
            f"repeat {repeat + 1}: {result['wall']:.1f} s wall (load average {before} -> {_load()}; "
            f"peak RSS {rss})"
        )
        if args.keep and repeat == args.repeats - 1:
            shutil.rmtree(args.keep, ignore_errors=True)
            shutil.move(out, args.keep)
        shutil.rmtree(out.parent, ignore_errors=True)
    print(
        f"main job, {args.workers} workers, sizes {sizes}: median {statistics.median(walls):.1f} s "
        f"(min {min(walls):.1f}, max {max(walls):.1f}) over {len(walls)} repeats"
    )
    print(
        "median peak RSS: "
        + ", ".join(f"{name} {statistics.median(v):.0f} MiB" for name, v in peaks.items())
    )
    print("median per stage (s):")
    for name, values in sorted(stages.items(), key=lambda kv: -statistics.median(kv[1])):
        print(f"  {name:<42} {statistics.median(values):7.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
