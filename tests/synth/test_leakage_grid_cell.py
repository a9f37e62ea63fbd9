"""Issue 26 items 3 and 4: one cell of the acceptance grid, end to end.

A fresh 40 × 30 procedural dataset at the default unseen share — seed 4242, the issue's own
example, where balancing over the whole dataset once let the mirror image of the text prior
beat chance by 12 pp — is generated (about six minutes on 2 cores), every blind probe is
trained on train and scored on val_unseen + test, as ``benchmarks/bench_leakage_grid.py`` does
for the whole grid; the Table-1 categories of its val_unseen and of its test carry the same
navigation workload (item 4).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from condvln.dataset.card import EpisodeSummary, split_workload
from condvln.dataset.generate import GenerateConfig, generate_dataset
from condvln.dataset.schema import load_checked_split
from condvln.synth.audit import Tolerances, leakage_audit, violations
from condvln.synth.workload import LIMITS

pytestmark = pytest.mark.slow

EVALUATED = ("val_unseen", "test")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("grid_cell") / "dataset"
    generate_dataset(GenerateConfig(scenes=40, per_scene=30, seed=4242), out, workers=2)
    return out


@pytest.fixture(scope="module")
def report(dataset: Path) -> dict[str, Any]:
    train = load_checked_split(dataset, "train").episodes
    evaluation = [e for split in EVALUATED for e in load_checked_split(dataset, split).episodes]
    return leakage_audit(train, evaluation)


@pytest.mark.parametrize("split", EVALUATED)
def test_categories_of_the_reported_splits_carry_the_same_workload(
    dataset: Path, split: str
) -> None:
    """Item 4 on a 40 × 30 dataset: mean gold-path targets within 0.2 and mean gold-path
    length within 10 % between any two Table-1 categories of val_unseen, and of test (before
    the workload rounds of generation, this seed's val_unseen differed by 0.38 targets and
    28 %; with rounds but without keeping the best round, test ended 0.21 targets apart)."""
    episodes = load_checked_split(dataset, split).episodes
    workload = split_workload([EpisodeSummary.of(e) for e in episodes])
    assert len(workload["categories"]) == 6
    assert workload["gaps"]["targets"] <= LIMITS["targets"], workload
    assert workload["gaps"]["length"] <= LIMITS["length"], workload


def test_no_probe_is_beyond_sampling_noise_in_either_direction(report: dict[str, Any]) -> None:
    """``condvln audit --leakage``'s judgement at three standard errors, overall as in every
    category and condition-type cell. This size is below the README's smallest safe size
    (80 × 50, where ``test_leakage_acceptance`` holds every probe to the fixed ±3 pp): at about
    590 episodes two standard errors are 3.9 pp, and the audit's default of two for the
    overall lines flags a leak-free dataset's 8 probes about once in three (here the
    bag-of-words probe measures +5.4 pp, 2.8 standard errors). Three standard errors
    (5.8 pp) still catch the leak the issue found in this dataset, +12.5 pp (z = +4.0)."""
    assert report["episodes"] >= 250
    assert report["branch"]["pair_aware"]["all"]["n"] == 0  # pairs stay in the seen houses
    assert violations(report, Tolerances(standard_errors=3.0)) == []
