"""Navigation workload per Table-1 category of a generated dataset (issue 26 item 4).

For each split: per category the episodes, the mean number of targets on the gold path
(``subgoals`` + the goal) and the mean reference-path length (the polyline of
``reference_path``); the largest gap between two categories' means (targets: difference,
length: ratio − 1); and what those gaps would be from sampling alone — the same gaps after the
category labels are shuffled among the split's episodes (``--permutations`` times, seeded), as
their median and the share of shuffles with a gap at least as large as observed (``p``). A gap
inside its shuffled median is as small as a split of that size can show:

    PYTHONPATH=src python benchmarks/bench_workload.py DATASET [DATASET ...] \\
        [--splits train val_seen val_unseen] [--permutations 2000] [--seed 0]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from condvln.dataset.schema import load_checked_split
from condvln.program.ast import CATEGORIES
from condvln.synth.workload import mean_gaps


def _workload(root: Path, split: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Category index, gold-path targets and reference-path length of every episode."""
    names = list(CATEGORIES.values())
    rows = []
    for episode in load_checked_split(root, split).episodes:  # test: with its answers
        info = episode["info"]["condvln"]
        path = np.asarray(episode["reference_path"], dtype=float)
        length = float(np.linalg.norm(np.diff(path, axis=0), axis=1).sum())
        rows.append((names.index(info["category"]), len(info["subgoals"]) + 1, length))
    table = np.asarray(rows, dtype=float).reshape(-1, 3)
    return table[:, 0].astype(int), table[:, 1], table[:, 2]


def _gaps(category: np.ndarray, targets: np.ndarray, length: np.ndarray) -> tuple[float, float]:
    """:func:`~condvln.synth.workload.mean_gaps` of the categories' mean targets and lengths."""
    means = [(targets[category == c].mean(), length[category == c].mean()) for c in np.unique(category)]  # fmt: skip
    gaps = mean_gaps(means)
    return gaps["targets"], gaps["length"]


def _report(root: Path, split: str, permutations: int, seed: int) -> None:
    category, targets, length = _workload(root, split)
    names = list(CATEGORIES.values())
    cells = [
        f"{names[c]} {int((category == c).sum())}: {targets[category == c].mean():.2f} / "
        f"{length[category == c].mean():.1f} m"
        for c in np.unique(category)
    ]
    observed = _gaps(category, targets, length)
    rng = np.random.default_rng(seed)
    null = np.array(
        [_gaps(rng.permutation(category), targets, length) for _ in range(permutations)]
    )
    p = (null >= np.asarray(observed)).mean(axis=0)
    median = np.median(null, axis=0)
    print(
        f"{root.name} {split} (n = {len(category)}): targets gap {observed[0]:.2f} "
        f"(shuffled median {median[0]:.2f}, p = {p[0]:.2f}), length gap {100 * observed[1]:.1f} % "
        f"(shuffled median {100 * median[1]:.1f} %, p = {p[1]:.2f})"
    )
    print("    " + " | ".join(cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("datasets", nargs="+", type=Path)
    parser.add_argument("--splits", nargs="+", default=["train", "val_seen", "val_unseen"])
    parser.add_argument("--permutations", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    for root in args.datasets:
        for split in args.splits:
            _report(root, split, args.permutations, args.seed)


if __name__ == "__main__":
    main()
