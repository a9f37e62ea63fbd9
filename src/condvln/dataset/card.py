"""The dataset card: ``stats.json`` (machine-readable) and ``README.md`` (for people)."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from typing import Any

import numpy as np

from condvln.program.parse import tokenize


def _distribution(values: list[float]) -> dict[str, float]:
    if not values:
        return {"n": 0}
    arr = np.asarray(values, dtype=float)
    q = np.quantile(arr, [0.0, 0.25, 0.5, 0.75, 1.0])
    return {
        "n": len(values),
        "mean": round(float(arr.mean()), 4),
        "min": round(float(q[0]), 4),
        "p25": round(float(q[1]), 4),
        "median": round(float(q[2]), 4),
        "p75": round(float(q[3]), 4),
        "max": round(float(q[4]), 4),
    }


def _path_length(path: list[list[float]]) -> float:
    return sum(math.dist(a, b) for a, b in itertools.pairwise(path))


def dataset_stats(
    splits: dict[str, list], rejections: Counter, synth: Any, config: Any, vocab: list[str]
) -> dict[str, Any]:
    """Counts per split / category / depth / chain / axis, balance, distributions, rejections."""
    records = [r for split in sorted(splits) for r in splits[split]]
    infos = [e["info"]["condvln"] for e, _, _ in records]
    counts = {
        key: dict(sorted(Counter(str(i[key]) for i in infos).items()))
        for key in ("category", "depth", "chain", "composition", "observability", "horizon")
    }
    return {
        "episodes": len(records),
        "splits": {s: len(splits[s]) for s in sorted(splits)},
        "scenes": len({e["scene_id"] for e, _, _ in records}),
        "counts": counts,
        "counterfactual_pairs": sum(1 for i in infos if i["pair_id"]) // 2,
        "branch_balance": synth.report,
        "reference_path_length_m": _distribution(
            [_path_length(e["reference_path"]) for e, _, _ in records]
        ),
        "geodesic_distance_m": _distribution(
            [e["info"]["geodesic_distance"] for e, _, _ in records]
        ),
        "instruction_tokens": _distribution(
            [len(tokenize(e["instruction"]["instruction_text"])) for e, _, _ in records]
        ),
        "step_budget": _distribution([i["step_budget"] for i in infos]),
        "sampled_before_balancing": synth.raw_count,
        "rejections": dict(rejections.most_common()),
        "vocabulary_size": len(vocab),
        "config": config.model_dump(mode="json"),
        "config_hash": config.config_hash(),
    }


def _table(title: str, counts: dict[str, int]) -> str:
    rows = "\n".join(f"| {k} | {v} |" for k, v in counts.items())
    return f"| {title} | episodes |\n|---|---|\n{rows}\n"


def dataset_card(stats: dict[str, Any]) -> str:
    """A Markdown dataset card from :func:`dataset_stats`."""
    cfg = stats["config"]
    parts = [
        "# CondVLN dataset\n",
        f"{stats['episodes']} conditional navigation episodes over {stats['scenes']} scenes "
        f"(source `{cfg['source']}`, seed {cfg['seed']}, config `{stats['config_hash']}`), in "
        "VLN-CE `R2RVLN-v1` format: `{split}/{split}.json.gz` with `instruction_vocab`, ground "
        "truth actions in `{split}/{split}_gt.json.gz`, the test answers in "
        "`test/test_answers.json.gz`, and the scenes in `scenes/`. CondVLN's labels are under "
        "each episode's `info.condvln`.\n",
        _table("split", stats["splits"]),
    ]
    for key, counts in stats["counts"].items():
        parts.append(_table(key, counts))
    balance = stats["branch_balance"]
    parts.append(
        "## Branch balance\n\n"
        f"Worst max/min gold-leaf ratio in a bucket: {balance['worst_ratio']}. "
        f"Gold goal is the nearest branch goal in {100 * balance['nearest_gold_rate']:.1f}% of "
        f"episodes (chance {100 * balance['nearest_gold_chance']:.1f}%).\n"
    )
    parts.append("## Distributions\n")
    for key in (
        "reference_path_length_m",
        "geodesic_distance_m",
        "instruction_tokens",
        "step_budget",
    ):
        d = stats[key]
        if d.get("n"):
            parts.append(
                f"- {key}: mean {d['mean']}, median {d['median']} (min {d['min']}, max {d['max']})"
            )
    parts.append("\n## Rejections\n")
    parts.extend(f"- {reason}: {count}" for reason, count in stats["rejections"].items())
    return "\n".join(parts) + "\n"
