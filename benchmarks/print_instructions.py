"""Print random instructions per Table 1 category (seeded), to read how the text sounds.

By default it generates the default benchmark's dataset (``condvln.benchmark.SMALL``: 80
procedural houses × 50 per scene, half the scenes unseen) into ``--out`` (reused when it is
already there) and prints 20 instructions of every category, drawn with ``--seed`` from all
splits together.

    PYTHONPATH=src python benchmarks/print_instructions.py --out /tmp/condvln-bench-ds
    PYTHONPATH=src python benchmarks/print_instructions.py --dataset /tmp/ds --per-category 5
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np

from condvln.benchmark import SMALL
from condvln.dataset.generate import generate_dataset
from condvln.program.ast import CATEGORIES
from condvln.vlnce import available_splits, load_split


def instructions_by_category(folder: Path) -> dict[str, list[tuple[str, str]]]:
    """Category → ``(episode key, instruction text)`` for every episode of every split."""
    out: dict[str, list[tuple[str, str]]] = {name: [] for name in CATEGORIES.values()}
    for split in available_splits(folder):
        answers: dict[str, Any] = {}
        if split == "test":
            with gzip.open(folder / "test" / "test_answers.json.gz") as fh:
                answers = json.load(fh)
        for ep in load_split(folder, split)["episodes"]:
            info = (ep.get("info") or answers[str(ep["episode_id"])]["info"])["condvln"]
            key = f"{split}/{ep['episode_id']}"
            out.setdefault(info["category"], []).append(
                (key, ep["instruction"]["instruction_text"])
            )
    return out


def main() -> None:
    """Generate (or reuse) the dataset and print the sampled instructions as Markdown."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, default=None, help="an existing dataset folder")
    parser.add_argument("--out", type=Path, default=Path("condvln-benchmark-dataset"))
    parser.add_argument("--per-category", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    folder = args.dataset
    if folder is None:
        folder = args.out
        if not (folder / "stats.json").is_file():
            generate_dataset(SMALL, folder)
    rng = np.random.default_rng(args.seed)
    for category, items in instructions_by_category(folder).items():
        chosen = rng.permutation(len(items))[: args.per_category]
        print(f"\n### {category} ({len(items)} episodes, {len(chosen)} shown)\n")
        for n, i in enumerate(sorted(chosen.tolist()), start=1):
            key, text = items[i]
            print(f"{n}. `{key}` ({len(text.split())} words) {text}")


if __name__ == "__main__":
    main()
