"""Issue #14 acceptance: on the default benchmark dataset no blind probe beats chance.

Generates exactly the dataset of the default ``condvln benchmark`` (80 procedural houses, half
unseen; about a minute on 2 cores), trains the blind probes on train and scores them on
val_unseen, as ``condvln audit --leakage`` does.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import orjson
import pytest

from condvln.benchmark import SMALL
from condvln.dataset.generate import generate_dataset
from condvln.program.ast import CATEGORIES
from condvln.synth.audit import Tolerances, leakage_audit, violations
from condvln.vlnce import load_split


@pytest.fixture(scope="module")
def benchmark_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("acceptance") / "dataset"
    generate_dataset(SMALL, out, workers=2)
    return out


@pytest.fixture(scope="module")
def report(benchmark_dataset: Path) -> dict[str, Any]:
    train = load_split(benchmark_dataset, "train")["episodes"]
    return leakage_audit(train, load_split(benchmark_dataset, "val_unseen")["episodes"])


def _noise(cell: dict[str, Any], chance: float) -> float:
    """Two standard errors of an accuracy at ``chance`` over the cell's count (percent)."""
    p = chance / 100.0
    return 200.0 * math.sqrt(p * (1.0 - p) / cell["n"])


def test_blind_probes_score_chance_overall(report: dict[str, Any]) -> None:
    """The issue's tolerances: ±3 pp overall, constant branch and nearest goal ±2 pp, fixed (the
    audit's default widens them to two standard errors, 3.5 pp here). The pair-aware probe is
    scored on pair members only (about 130 episodes, where two standard errors are 8.5 pp), so
    it is judged as the audit judges it, widened to sampling noise (issue 26 item 5 moves the
    pairs out of the evaluated splits)."""
    assert report["episodes"] >= 600
    assert report["branch"]["pair_aware"]["all"]["n"] < 300
    fixed = Tolerances(category=100.0, condition=100.0, standard_errors=0.0)
    problems = [p for p in violations(report, fixed) if not p.startswith("pair_aware")]
    widened = Tolerances(category=100.0, condition=100.0)
    problems += [p for p in violations(report, widened) if p.startswith("pair_aware")]
    assert problems == []


def test_priors_score_chance_per_category_and_condition_type(report: dict[str, Any]) -> None:
    """The issue's ±6 pp for both priors per Table-1 category and per condition type of ≥ 30
    conditions, widened to two standard errors where a cell is too small for ±6 pp to exceed
    sampling noise (as `condvln audit --leakage` judges)."""
    for probe in ("text_prior", "commonsense_prior"):
        for category, cell in report["branch"][probe].items():
            if category != "all":
                assert cell["n"] >= 60, (probe, category)
                limit = max(6.0, _noise(cell, cell["chance"]))
                assert abs(cell["accuracy"] - cell["chance"]) <= limit, (probe, category)
    for prior in ("text_prior", "commonsense_prior"):
        for kind, cell in report["conditions"][prior].items():
            if cell["n"] >= Tolerances().min_count:
                limit = max(6.0, _noise(cell, 50.0))
                assert abs(cell["accuracy"] - 50.0) <= limit, (prior, kind, cell["n"])


def test_every_category_is_in_every_split(benchmark_dataset: Path) -> None:
    stats = orjson.loads((benchmark_dataset / "stats.json").read_bytes())
    for split in ("train", "val_seen", "val_unseen", "test"):
        episodes = load_split(benchmark_dataset, split)["episodes"]
        infos = [e["info"]["condvln"] for e in episodes] if split != "test" else None
        if infos is not None:
            assert {i["category"] for i in infos} == set(CATEGORIES.values()), split
    assert stats["splits"]["test"] > 0


def test_truths_are_balanced_per_group_and_type(benchmark_dataset: Path) -> None:
    """#14 item 2: every group used ≥ 10 times has majority share ≤ 0.6 (checked on all of
    ``truth_groups``, not only the listed ``most_skewed``), each predicate pooled is 50 ± 3 %."""
    balance = orjson.loads((benchmark_dataset / "stats.json").read_bytes())["branch_balance"]
    used = {g: (t, f) for g, (t, f) in balance["truth_groups"].items() if t + f >= 10}
    assert len(used) >= 50
    for group, (true, false) in used.items():
        assert max(true, false) / (true + false) <= 0.6, (group, true, false)
    assert all(g["majority_share"] <= 0.6 for g in balance["most_skewed"])
    assert set(balance["truth_types"]) >= {"exists", "near", "far from", "above", "below"}
    for kind, row in balance["truth_types"].items():
        assert abs(row["true_share"] - 0.5) <= 0.03, kind


def test_rooms_reveal_nothing_about_the_gold_goal(benchmark_dataset: Path) -> None:
    balance = orjson.loads((benchmark_dataset / "stats.json").read_bytes())["branch_balance"]
    for composition, rows in balance["room_shortcuts"].items():
        for room in ("condition_room", "start_room"):
            gap = rows[f"gold_in_{room}"] - rows[f"other_in_{room}"]
            assert abs(gap) <= 0.05, (composition, room)
