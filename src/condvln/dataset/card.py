"""The dataset card: ``stats.json`` (machine-readable) and ``README.md`` (for people)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from condvln.dataset.episode import path_length
from condvln.dataset.schema import DESIGN_FIELDS
from condvln.program.ast import CATEGORIES
from condvln.program.parse import tokenize
from condvln.program.render import MAX_WORDS, word_count
from condvln.program.templates import SLOTS, load_templates
from condvln.synth.audit import Tolerances, judgeable_count, sampling_margin
from condvln.synth.workload import LIMITS, mean_gaps
from condvln.vlnce import OPTIONAL_SPLITS, SPLITS

REQUESTED_NOTE = (
    "requested = per_scene × the split's scenes (seen scenes are shared by train and val_seen by "
    "val_seen_share), spread evenly over the six Table 1 categories; minimal-pair siblings come "
    "on top in train, so it can exceed its request; the pairs of the val_seen share form the "
    "pairs split (requested 0: it holds siblings only)"
)


@dataclass(frozen=True)
class EpisodeSummary:
    """What the card reads of one episode (a dataset is written episode by episode, and only
    these are kept for its card).

    Attributes:
        scene_id: The episode's ``scene_id``.
        fields: ``info.condvln``'s :data:`DESIGN_FIELDS`, ``pair_id``, ``step_budget`` and
            ``phrasing_seen`` (true for datasets before it).
        targets: Targets on the gold path (subgoals and the goal).
        path_length: Length of ``reference_path`` (m).
        geodesic: ``info.geodesic_distance`` (m).
        text: The instruction text.
    """

    scene_id: str
    fields: dict[str, Any]
    targets: int
    path_length: float
    geodesic: float
    text: str

    @classmethod
    def of(cls, episode: dict[str, Any]) -> EpisodeSummary:
        """The summary of a VLN-CE episode record."""
        info = episode["info"]["condvln"]
        return cls(
            scene_id=episode["scene_id"],
            fields={
                **{k: info[k] for k in (*DESIGN_FIELDS, "pair_id", "step_budget")},
                "phrasing_seen": info.get("phrasing_seen", True),
            },
            targets=len(info["subgoals"]) + 1,
            path_length=path_length(episode["reference_path"]),
            geodesic=episode["info"]["geodesic_distance"],
            text=episode["instruction"]["instruction_text"],
        )


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


def word_lengths(texts: list[str]) -> dict[str, Any]:
    """Word counts of the instructions (whitespace-separated words): the distribution, a
    histogram in bins of 10 words (``"60"`` counts 60–69) and the limit the generator keeps."""
    words = [word_count(t) for t in texts]
    bins = Counter(w // 10 * 10 for w in words)
    return {
        **_distribution(words),
        "histogram_10": {str(k): bins[k] for k in sorted(bins)},
        "limit": MAX_WORDS,
    }


def template_counts() -> dict[str, Any]:
    """Paraphrases per construct of the packaged templates (held-out ones included, and counted
    apart), and relation phrases in all."""
    t = load_templates()
    return {
        "version": t.version,
        "constructs": {c: len(t.variants(c)) for c in SLOTS},
        "held_out": {c: len(phrasings) for c, phrasings in t.held_out.items()},
        "relation_phrases": sum(len(p) for p in t.relations.values()),
    }


def _spread(total: int, n: int) -> list[int]:
    """``total`` split into ``n`` near-equal integer parts (larger ones first)."""
    return [total // n + (1 if k < total % n else 0) for k in range(n)]


UNSEEN_SPLITS = ("val_unseen", "test")
"""The splits of unseen houses, on which ``condvln audit --leakage`` judges the blind probes."""

SAFE_SIZE = "--scenes 80 --per-scene 50"
"""The default benchmark's size, the smallest procedural size whose unseen splits come near the
episodes the audit needs (``benchmarks/bench_leakage_grid.py``: 958–1,192 at the default
unseen share over three seeds, 1,797 at the benchmark's half unseen)."""


def _resolution_warning(evaluated: int) -> list[str]:
    """A warning when the unseen splits are too small for the audit's fixed overall limit."""
    needed = judgeable_count()
    if not 0 < evaluated < needed:
        return []
    margin = sampling_margin(evaluated, 100.0 / 3, Tolerances().standard_errors)
    return [
        f"val_unseen + test hold {evaluated} episodes, under the {needed} needed to tell a "
        f"±{Tolerances().overall:g} pp leak from noise: the leakage audit can only judge "
        f"blind probes to ±{margin:.1f} pp here (the benchmark's size: {SAFE_SIZE})"
    ]


def split_workload(episodes: list[EpisodeSummary]) -> dict[str, Any]:
    """Navigation workload per Table-1 category of one split: episodes, mean targets on the
    gold path (subgoals + goal) and mean reference-path length, and the largest gaps between
    two categories (``targets``: difference of means; ``length``: ratio − 1 of means).

    >>> ep = lambda cat, targets, x: EpisodeSummary("s", {"category": cat}, targets, x, x, "")
    >>> split_workload([ep("simple", 2, 8.0), ep("chain", 1, 5.0), ep("chain", 1, 5.0)])["gaps"]
    {'targets': 1.0, 'length': 0.6}
    """
    rows: dict[str, list[tuple[int, float]]] = {}
    for episode in episodes:
        rows.setdefault(episode.fields["category"], []).append(
            (episode.targets, episode.path_length)
        )
    means = {
        name: (float(np.mean([t for t, _ in r])), float(np.mean([m for _, m in r])), len(r))
        for name, r in rows.items()
    }
    gaps = {k: round(v, 4) for k, v in mean_gaps((t, m) for t, m, _ in means.values()).items()}
    categories = {
        name: {"episodes": n, "targets": round(t, 4), "length_m": round(m, 4)}
        for name, (t, m, n) in sorted(means.items())
    }
    return {"categories": categories, "gaps": gaps}


def workload_warnings(workload: dict[str, Any]) -> list[str]:
    """A warning per unseen split (val_unseen, test) whose categories differ in workload
    (:func:`split_workload`) beyond :data:`~condvln.synth.workload.LIMITS` (generation
    samples such splits again to bring them within, when they have enough scenes)."""
    warnings = []
    for split in UNSEEN_SPLITS:
        gaps = workload.get(split, {}).get("gaps", {})
        over = []
        if gaps.get("targets", 0.0) > LIMITS["targets"]:
            over.append(
                f"mean gold-path targets by {gaps['targets']:.2f} (limit {LIMITS['targets']:g})"
            )
        if gaps.get("length", 0.0) > LIMITS["length"]:
            over.append(
                f"mean path lengths by {100 * gaps['length']:.0f} % "
                f"(limit {100 * LIMITS['length']:g} %)"
            )
        if over:
            warnings.append(
                f"{split}: the Table-1 categories differ in {' and '.join(over)}, so depth and "
                f"chain are not read apart from walking at this size (per-category workload in "
                f"stats.json; {SAFE_SIZE} keeps val_unseen within both)"
            )
    return warnings


def requested_vs_produced(
    splits: dict[str, list[EpisodeSummary]], requested: dict[str, int], rejections: Counter
) -> tuple[dict[str, Any], list[str]]:
    """Episodes requested and produced per split and per Table 1 category, and the warnings.

    Warnings: a split that got no scene, a category missing from a split that asked for it, a
    split or the whole dataset keeping fewer than half of the requested episodes, unseen splits
    too small for the leakage audit's overall limit.
    """
    names = list(CATEGORIES.values())
    table: dict[str, Any] = {}
    warnings: list[str] = []
    for split in SPLITS:
        made = Counter(e.fields["category"] for e in splits.get(split, []))
        want = requested.get(split, 0)
        cats = {
            name: {"requested": r, "produced": made[name]}
            for name, r in zip(names, _spread(want, len(names)), strict=True)
        }
        table[split] = {"requested": want, "produced": sum(made.values()), "categories": cats}
        if split in OPTIONAL_SPLITS:  # minimal pairs, on top of the request
            continue
        if want == 0:
            warnings.append(f"split {split} is empty: no scene was assigned to it")
            continue
        missing = [name for name, c in cats.items() if c["requested"] and not c["produced"]]
        if missing:
            warnings.append(f"split {split} has no {', '.join(missing)} episodes")
        if table[split]["produced"] < want / 2:
            warnings.append(
                f"split {split} kept {table[split]['produced']} of {want} requested episodes"
            )
    total = {
        "requested": sum(r["requested"] for r in table.values()),
        "produced": sum(r["produced"] for r in table.values()),
        "categories": {
            name: {
                key: sum(r["categories"][name][key] for r in table.values())
                for key in ("requested", "produced")
            }
            for name in names
        },
    }
    warnings += _resolution_warning(sum(table[s]["produced"] for s in UNSEEN_SPLITS))
    if total["produced"] < total["requested"] / 2:
        top = ", ".join(f"{reason} {n}" for reason, n in rejections.most_common(3))
        warnings.append(
            f"only {total['produced']} of {total['requested']} requested episodes were produced"
            f" (rejections: {top or 'none'}); raise --scenes or --per-scene"
        )
    return {"note": REQUESTED_NOTE, "splits": table, "total": total}, warnings


def dataset_stats(
    splits: dict[str, list[EpisodeSummary]],
    rejections: Counter,
    synth: Any,
    config: Any,
    vocab: list[str],
    requested: dict[str, int],
) -> dict[str, Any]:
    """Counts per split / category / depth / chain / axis, requested vs produced episodes with
    warnings, balance, distributions, rejections, and per split the episodes worded with a
    held-out paraphrase (``held_out_phrasing``)."""
    episodes = [e for split in sorted(splits) for e in splits[split]]
    counts = {
        key: dict(sorted(Counter(str(e.fields[key]) for e in episodes).items()))
        for key in DESIGN_FIELDS
    }
    versus, warnings = requested_vs_produced(splits, requested, rejections)
    workload = {s: split_workload(splits[s]) for s in sorted(splits)}
    warnings += workload_warnings(workload)
    return {
        "episodes": len(episodes),
        "splits": {s: len(splits[s]) for s in sorted(splits)},
        "requested_vs_produced": versus,
        "warnings": warnings,
        "scenes": len({e.scene_id for e in episodes}),
        "counts": counts,
        "counterfactual_pairs": sum(1 for e in episodes if e.fields["pair_id"]) // 2,
        "held_out_phrasing": {
            s: sum(not e.fields["phrasing_seen"] for e in splits[s]) for s in sorted(splits)
        },
        "branch_balance": synth.report,
        "workload": workload,
        "reference_path_length_m": _distribution([e.path_length for e in episodes]),
        "geodesic_distance_m": _distribution([e.geodesic for e in episodes]),
        "instruction_tokens": _distribution([len(tokenize(e.text)) for e in episodes]),
        "instruction_words": word_lengths([e.text for e in episodes]),
        "step_budget": _distribution([e.fields["step_budget"] for e in episodes]),
        "sampled_before_balancing": synth.raw_count,
        "rejections": dict(rejections.most_common()),
        "vocabulary_size": len(vocab),
        "templates": template_counts(),
        "config": config.model_dump(mode="json"),
        "config_hash": config.config_hash(),
    }


def _table(title: str, counts: dict[str, int]) -> str:
    rows = "\n".join(f"| {k} | {v} |" for k, v in counts.items())
    return f"| {title} | episodes |\n|---|---|\n{rows}\n"


def _versus_table(versus: dict[str, Any]) -> str:
    """Markdown: produced / requested episodes, categories × splits."""
    splits = list(versus["splits"])
    head = "| category | " + " | ".join(splits) + " | total |\n|---|" + "---:|" * (len(splits) + 1)
    rows = []
    for name, total in versus["total"]["categories"].items():
        cells = [
            f"{versus['splits'][s]['categories'][name]['produced']} / "
            f"{versus['splits'][s]['categories'][name]['requested']}"
            for s in splits
        ]
        rows.append(
            f"| {name} | " + " | ".join(cells) + f" | {total['produced']} / {total['requested']} |"
        )
    cells = [
        f"{versus['splits'][s]['produced']} / {versus['splits'][s]['requested']}" for s in splits
    ]
    t = versus["total"]
    rows.append("| **all** | " + " | ".join(cells) + f" | {t['produced']} / {t['requested']} |")
    return (
        "Episodes produced / requested per Table 1 category and split "
        f"({versus['note']}):\n\n{head}\n" + "\n".join(rows) + "\n"
    )


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
        "each episode's `info.condvln`. `pairs` holds counterfactual minimal pairs of the seen "
        "houses (both members, which differ in one condition of opposite truth; score it per "
        "pair); no other evaluation split holds a pair member.\n",
        _table("split", stats["splits"]),
        _versus_table(stats["requested_vs_produced"]),
    ]
    if stats["warnings"]:
        parts.append("**Warnings:**\n\n" + "\n".join(f"- {w}" for w in stats["warnings"]) + "\n")
    for key, counts in stats["counts"].items():
        parts.append(_table(key, counts))
    balance = stats["branch_balance"]
    parts.append(
        "## Branch balance\n\n"
        "Worst max/min gold-leaf ratio in a text-visible bucket (category × composition × "
        f"horizon): {balance['worst_ratio']}. "
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
    words = stats["instruction_words"]
    if words.get("n"):
        parts.append(
            f"- instruction_words: mean {words['mean']}, median {words['median']}, max "
            f"{words['max']} (limit {words['limit']}); vocabulary {stats['vocabulary_size']} words; "
            f"templates version {stats['templates']['version']}: "
            + ", ".join(f"{c} {n}" for c, n in stats["templates"]["constructs"].items())
        )
    parts.append("\n## Rejections\n")
    parts.extend(f"- {reason}: {count}" for reason, count in stats["rejections"].items())
    return "\n".join(parts) + "\n"
