"""Ray's fixed cost per command: a small ``condvln generate`` local, on a private Ray cluster,
and on a running cluster joined with ``--ray-address auto``.

The dataset is tiny (``--scenes 2 --per-scene 6``), so the time of a Ray command minus the
time of the same command on local processes is Ray's fixed cost: starting (or joining) the
cluster once for the command's stages, its worker processes importing CondVLN, shutting down.
Each setting runs ``--repeats`` times in a fresh ``condvln`` process; the medians, their range
and the load average are printed, with the outputs checked byte-identical to the local run.
The running cluster is started with ``ray start --head --num-cpus 2`` before its runs (its
start-up is printed apart) and stopped at the end.

    PYTHONPATH=src python benchmarks/bench_ray_startup.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent
GENERATE = ["generate", "--scenes", "2", "--per-scene", "6", "-j", "2", "-q"]
SETTINGS = {
    "local processes": [],
    "Ray, private cluster": ["--executor", "ray"],
    "Ray, running cluster (--ray-address auto)": ["--executor", "ray", "--ray-address", "auto"],
}


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.json*"))}


def _generate(out: Path, extra: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "condvln", *GENERATE, "--out", str(out), *extra],
        check=True,
        capture_output=True,
        env=env,
    )
    return time.perf_counter() - started


def _ray(*args: str, env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run([str(BIN / "ray"), *args], check=True, capture_output=True, env=env)
    return time.perf_counter() - started


def main() -> None:
    """Time every setting and print medians beside the local run."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    repeats = parser.parse_args().repeats
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    times: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for name, extra in SETTINGS.items():
            if "running" in name:
                head = _ray(
                    "start", "--head", "--num-cpus", "2", "--include-dashboard=false", env=env
                )
                print(f"ray start --head: {head:.1f} s (once)")
            try:
                times[name] = [
                    _generate(root / f"{len(times)}-{k}", extra, env) for k in range(repeats)
                ]
            finally:
                if "running" in name:
                    _ray("stop", "--force", env=env)
            for k in range(repeats):
                assert _files(root / f"{len(times) - 1}-{k}") == _files(root / "0-0"), name
    load = ", ".join(f"{v:.2f}" for v in os.getloadavg())
    local = statistics.median(times["local processes"])
    print(f"condvln {' '.join(GENERATE)}: median of {repeats} (range), load average {load}")
    for name, values in times.items():
        median = statistics.median(values)
        extra = "" if name.startswith("local") else f"; fixed cost {median - local:.1f} s"
        print(f"  {name}: {median:.1f} s ({min(values):.1f}–{max(values):.1f}){extra}")
    print("outputs byte-identical to the local run: yes")


if __name__ == "__main__":
    main()
