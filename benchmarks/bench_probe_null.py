"""A permutation null for the bag-of-words probe of ``condvln audit --leakage`` (a script, not a test).

The audit judges each probe's accuracy against chance with the standard error of ``n``
independent guesses. A learnt probe's guesses are not independent (one learnt word moves many
of them together), so that error can understate the spread. This script measures the spread
directly: it refits the bag-of-words probe (:class:`~condvln.synth.audit.BagOfWords`, its L2
strength cross-validated as in the audit) on train with the gold branches permuted among the
episodes of the same scene and branch count (the words, scenes and balance kept), scores every
refit on the real evaluation splits, and prints, overall and per Table-1 category, the real
accuracy, the null's mean and standard deviation, and ``p``: the share of permutations at
least as far from chance as the real probe (either direction), with one added above and below:

    PYTHONPATH=src python benchmarks/bench_probe_null.py DATASET [--splits val_unseen test] \\
        [--permutations 400] [--seed 0]

A cell with a small ``p`` on one dataset is a far draw or a leak; only a lean that repeats on
fresh data (``benchmarks/bench_leakage_grid.py``) is a leak.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from condvln.dataset.schema import load_checked_split
from condvln.program.ast import CATEGORIES
from condvln.synth.audit import BagOfWords

Episode = Mapping[str, Any]


def _info(episode: Episode) -> Mapping[str, Any]:
    return episode["info"]["condvln"]  # type: ignore[no-any-return]


def _relabelled(train: Sequence[Episode], gold: np.ndarray) -> list[Episode]:
    """``train`` with its gold branches replaced by ``gold`` (copies; nothing else changes)."""
    out = []
    for episode, leaf in zip(train, gold.tolist(), strict=True):
        info = {**_info(episode), "leaf_index": leaf}
        out.append({**episode, "info": {**episode["info"], "condvln": info}})
    return out


def _permuted(strata: np.ndarray, gold: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``gold`` shuffled within each stratum."""
    out = gold.copy()
    for stratum in np.unique(strata):
        rows = np.flatnonzero(strata == stratum)
        out[rows] = rng.permutation(gold[rows])
    return out


def _accuracies(
    train: Sequence[Episode], evaluation: Sequence[Episode], cells: dict[str, np.ndarray]
) -> dict[str, float]:
    """The probe fitted on ``train``: its accuracy (%) on each cell's evaluation rows."""
    gold = np.array([_info(e)["leaf_index"] for e in evaluation])
    hits = np.array(BagOfWords(train).predict(evaluation)) == gold
    return {name: 100.0 * float(hits[rows].mean()) for name, rows in cells.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--splits", nargs="+", default=["val_unseen", "test"])
    parser.add_argument("--permutations", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    train = load_checked_split(args.dataset, "train").episodes
    evaluation = [e for s in args.splits for e in load_checked_split(args.dataset, s).episodes]
    category = np.array([_info(e)["category"] for e in evaluation])
    cells = {"all": np.arange(len(evaluation))}
    cells |= {c: np.flatnonzero(category == c) for c in CATEGORIES.values()}
    cells = {name: rows for name, rows in cells.items() if len(rows)}
    chance = {
        name: 100.0 * float(np.mean([1.0 / _info(evaluation[i])["n_branches"] for i in rows]))
        for name, rows in cells.items()
    }
    real = _accuracies(train, evaluation, cells)
    strata = np.array([f"{e.get('scene_id')}/{_info(e)['n_branches']}" for e in train])
    gold = np.array([_info(e)["leaf_index"] for e in train])
    rng = np.random.default_rng(args.seed)
    start = time.perf_counter()
    null = [
        _accuracies(_relabelled(train, _permuted(strata, gold, rng)), evaluation, cells)
        for _ in range(args.permutations)
    ]
    seconds = time.perf_counter() - start
    print(
        f"{args.dataset}: bag_of_words, {len(train)} train episodes, "
        f"{len(evaluation)} on {'+'.join(args.splits)}; {args.permutations} permutations "
        f"in {seconds:.0f} s (load average {' '.join(f'{x:.2f}' for x in os.getloadavg())})"
    )
    print(f"{'cell':>14} {'n':>5} {'chance':>7} {'real':>6} {'null mean':>9} {'sd':>5} {'p':>6}")
    for name, rows in cells.items():
        values = np.array([run[name] for run in null])
        far = np.abs(values - chance[name]) >= abs(real[name] - chance[name]) - 1e-9
        p = (far.sum() + 1) / (len(values) + 1)
        print(
            f"{name:>14} {len(rows):>5} {chance[name]:>7.1f} {real[name]:>6.1f} "
            f"{values.mean():>9.1f} {values.std():>5.1f} {p:>6.3f}"
        )


if __name__ == "__main__":
    main()
