"""Leakage audit over a grid of datasets (issue 26 item 3): sizes × seeds, plus the iTHOR group.

Each cell generates a dataset (procedural ``SCENES×PER_SCENE`` houses at the default unseen
share, or the benchmark's iTHOR group, :data:`condvln.benchmark.ITHOR_SMALL`, at another seed),
trains every blind probe of :func:`condvln.synth.audit.leakage_audit` on train and scores it on
val_unseen + test together. One line per cell and probe: accuracy, chance, accuracy − chance in
percentage points with its 95 % interval (Wilson), n, ``ok`` / ``FAIL`` against the fixed ±3 pp
limit in both directions (the acceptance rule of the issue), and the verdict of ``condvln audit
--leakage`` itself for the probe (``LEAK`` when :func:`~condvln.synth.audit.violations` flags any
of its cells: overall, per category or per condition type, limits widened to two standard
errors). Cells under the audit's ``min_count`` episodes (a pair-aware probe with a few pairs)
are shown but not judged ("n<30"). The load average is printed with each cell, since the
machine may be shared. The full grid took about 10 minutes on two cores at stop 66:

    PYTHONPATH=src python benchmarks/bench_leakage_grid.py \\
        [--sizes 20x30 40x30 80x50] [--seeds 1 2 3] [--ithor-seeds 1 2] [--workers 2] \\
        [--out grid.json] [--keep DIR]

``--from grid.json`` prints the tables of a saved run again. After the cells, each probe is
also shown pooled over the seeds of a size (:func:`pooled`).
"""

from __future__ import annotations

import argparse
import math
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

from condvln.benchmark import ITHOR_SMALL
from condvln.dataset.generate import GenerateConfig, generate_dataset
from condvln.dataset.schema import load_checked_split
from condvln.synth.audit import PROBES, Tolerances, leakage_audit, violations

LIMIT = 3.0
"""Acceptance: every probe within chance ± this many percentage points, overall."""

EVALUATED = ("val_unseen", "test")


def _size(text: str) -> tuple[int, int]:
    scenes, _, per_scene = text.partition("x")
    if not (scenes.isdigit() and per_scene.isdigit()):
        raise argparse.ArgumentTypeError(f"size must be SCENESxPER_SCENE, got {text!r}")
    return int(scenes), int(per_scene)


def _cells(args: argparse.Namespace) -> list[tuple[str, GenerateConfig]]:
    cells = [
        (f"procedural {s}x{p} seed {seed}", GenerateConfig(scenes=s, per_scene=p, seed=seed))
        for s, p in args.sizes
        for seed in args.seeds
    ]
    cells += [
        (f"ithor seed {seed}", ITHOR_SMALL.model_copy(update={"seed": seed}))
        for seed in args.ithor_seeds
    ]
    return cells


def _audit(config: GenerateConfig, folder: Path, workers: int) -> dict[str, Any]:
    start = time.perf_counter()
    generate_dataset(config, folder, workers=workers, overwrite=True)
    generated = time.perf_counter() - start
    train = load_checked_split(folder, "train").episodes
    evaluation = [e for split in EVALUATED for e in load_checked_split(folder, split).episodes]
    report = leakage_audit(train, evaluation)
    return {
        "generate_seconds": generated,
        "audit_seconds": time.perf_counter() - start - generated,
        "load_average": os.getloadavg()[0],
        "report": report,
    }


def _verdict(cell: dict[str, Any]) -> str:
    """``ok`` / ``FAIL`` at ±:data:`LIMIT` pp, ``n<30`` below the audit's minimum count."""
    if cell["n"] < Tolerances().min_count:
        return f"n<{Tolerances().min_count}"
    return "ok" if abs(cell["diff"]) <= LIMIT else "FAIL"


def _rows(name: str, result: dict[str, Any]) -> list[str]:
    """One line per probe (overall cell), then a summary line for the cell."""
    flagged = {line.split(" ")[0] for line in violations(result["report"])}
    lines = []
    for probe in PROBES:
        cell = result["report"]["branch"][probe]["all"]
        audit = "LEAK" if probe in flagged else "ok"
        if not cell["n"]:
            lines.append(f"{name:<28} {probe:<20} {'–':>6} {'–':>6} {'–':>7} {'–':>17} {0:>5}")
            continue
        low, high = cell["ci95"]
        lines.append(
            f"{name:<28} {probe:<20} {cell['accuracy']:6.1f} {cell['chance']:6.1f} "
            f"{cell['diff']:+7.1f} [{low:+6.1f}, {high:+6.1f}] {cell['n']:5d} "
            f"{_verdict(cell):>6} {audit:>5}"
        )
    seconds = [result.get(k) for k in ("generate_seconds", "audit_seconds", "load_average")]
    generate, audit_time, load = ("–" if v is None else f"{v:.1f}" for v in seconds)
    lines.append(
        f"{name:<28} train {result['report']['train_episodes']}, evaluated "
        f"{result['report']['episodes']}; generate {generate} s, audit {audit_time} s, "
        f"load average {load}"
    )
    return lines


def _group(name: str) -> str | None:
    """The cells pooled together: a procedural size over its seeds, or the iTHOR group."""
    words = name.split()
    if words[0] == "procedural":
        return f"procedural {words[1]}"
    return "ithor" if words[0] == "ithor" else None


def pooled(results: dict[str, Any]) -> list[str]:
    """Each probe over every seed of a size (a family of datasets, not one draw): accuracy and
    chance weighted by n, the difference with its standard error and z, judged at ±:data:`LIMIT`
    pp. A real leak repeats across seeds; one seed's noise does not (printed for reading only,
    the acceptance stays per cell)."""
    families: dict[str, list[dict[str, Any]]] = {}
    for name, result in results.items():
        if (group := _group(name)) is not None:
            families.setdefault(group, []).append(result["report"]["branch"])
    lines = []
    for group, reports in families.items():
        for probe in PROBES:
            cells = [r[probe]["all"] for r in reports if r[probe]["all"]["n"]]
            n = sum(c["n"] for c in cells)
            if n < Tolerances().min_count:
                continue
            accuracy = sum(c["accuracy"] * c["n"] for c in cells) / n
            chance = sum(c["chance"] * c["n"] for c in cells) / n
            se = (
                100
                * math.sqrt(sum(c["n"] * p * (1 - p) for c in cells for p in [c["chance"] / 100]))
                / n
            )
            diff = accuracy - chance
            verdict = "ok" if abs(diff) <= LIMIT else "FAIL"
            lines.append(
                f"{group + f' ({len(cells)} seeds)':<28} {probe:<20} {accuracy:6.1f} {chance:6.1f} "
                f"{diff:+7.1f} {'SE ' + f'{se:.2f}':>9} z {diff / se:+5.2f} {n:5d} {verdict:>6}"
            )
    return lines


def main() -> None:
    """Parse the options, run every cell and print (and optionally write) the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", nargs="*", type=_size, default=[(20, 30), (40, 30), (80, 50)])
    parser.add_argument("--seeds", nargs="*", type=int, default=[1, 2, 3])
    parser.add_argument("--ithor-seeds", nargs="*", type=int, default=[1, 2])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, help="write every cell's full report (JSON)")
    parser.add_argument("--keep", type=Path, help="keep the datasets in this folder")
    parser.add_argument(
        "--from", dest="saved", type=Path, help="print the tables of a saved --out file instead"
    )
    args = parser.parse_args()
    print(
        f"{'cell':<28} {'probe':<20} {'acc %':>6} {'chance':>6} {'diff pp':>7} "
        f"{'95% CI (pp)':>17} {'n':>5} {f'±{LIMIT:g} pp':>6} {'audit':>5}"
    )
    results: dict[str, Any] = orjson.loads(args.saved.read_bytes()) if args.saved else {}
    for name, result in results.items():
        print("\n".join(_rows(name, result)))
    with tempfile.TemporaryDirectory() as scratch:
        root = args.keep or Path(scratch)
        for name, config in [] if args.saved else _cells(args):
            folder = root / name.replace(" ", "_")
            results[name] = _audit(config, folder, args.workers)
            print("\n".join(_rows(name, results[name])), flush=True)
    print("pooled over seeds (read, not judged):")
    print("\n".join(pooled(results)))
    failing = [
        f"{name} {probe}"
        for name, result in results.items()
        for probe in PROBES
        if _verdict(result["report"]["branch"][probe]["all"]) == "FAIL"
    ]
    print(f"{len(failing)} probe cell(s) beyond ±{LIMIT:g} pp: {', '.join(failing) or 'none'}")
    if args.out:
        args.out.write_bytes(orjson.dumps(results, option=orjson.OPT_INDENT_2))


if __name__ == "__main__":
    main()
