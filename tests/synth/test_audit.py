"""The leakage audit: blind probes against hand-made episode lists with known answers."""

from __future__ import annotations

from typing import Any

import numpy as np

from condvln.program.ast import Exists, Go, If, Program, Ref
from condvln.synth.audit import (
    PRIOR_PROBES,
    PROBES,
    BagOfWords,
    Tolerances,
    leakage_audit,
    violations,
)

CATEGORIES = ["sofa", "lamp", "desk", "stool"]


def _episode(category: str, truth: bool, word: str, nearest: bool = False) -> dict[str, Any]:
    condition = Exists(category, "kitchen")
    program = Program((If(condition, (Go(Ref("bed")),), (Go(Ref("sink")),)),))
    return {
        "instruction": {"instruction_text": f"if there is a {category} {word}, go"},
        "info": {
            "condvln": {
                "program": program.to_dict(),
                "category": "simple",
                "leaf_index": 0 if truth else 1,
                "n_branches": 2,
                "gold_is_nearest": nearest,
                "condition_truths": [{"condition": condition.to_dict(), "truth": truth}],
            }
        },
    }


def _episodes(rng: np.random.Generator, n: int, skewed: bool) -> list[dict[str, Any]]:
    out = []
    for k in range(n):
        category = CATEGORIES[k % 4]
        truth = category in ("sofa", "lamp") if skewed else bool(rng.integers(2))
        out.append(_episode(category, truth, "now", nearest=skewed or k % 2 == 0))
    return out


def test_priors_find_a_skewed_group_and_the_audit_fails() -> None:
    rng = np.random.default_rng(0)
    report = leakage_audit(_episodes(rng, 400, True), _episodes(rng, 200, True))
    assert report["branch"]["text_prior"]["all"]["accuracy"] == 100.0
    assert report["branch"]["text_prior"]["all"]["chance"] == 50.0
    assert report["branch"]["bag_of_words"]["all"]["accuracy"] == 100.0  # the category words
    assert report["conditions"]["text_prior"]["exists"]["accuracy"] == 100.0
    problems = violations(report)
    assert any(p.startswith("text_prior all: 100.0% vs 50.0%") for p in problems)
    assert any(p.startswith("bag_of_words simple") for p in problems)
    assert any(p.startswith("nearest_goal all") for p in problems)


def test_balanced_episodes_pass_the_audit() -> None:
    rng = np.random.default_rng(1)
    report = leakage_audit(_episodes(rng, 800, False), _episodes(rng, 2000, False))
    for probe in ("text_prior", "commonsense_prior", "bag_of_words", "constant_branch"):
        assert abs(report["branch"][probe]["all"]["accuracy"] - 50.0) < 3.0, probe
    assert violations(report, Tolerances(shortcut=100.0)) == []


def test_bag_of_words_learns_a_word_that_names_the_branch() -> None:
    train = [_episode("sofa", k % 2 == 0, "here" if k % 2 == 0 else "there") for k in range(60)]
    model = BagOfWords(train)
    test = [_episode("sofa", True, "here"), _episode("sofa", False, "there")]
    assert model.predict(test) == [0, 1]


def _write_dataset(root, train, evaluation) -> None:
    from condvln.vlnce import dump_gz, split_path

    for split, episodes in (("train", train), ("val_unseen", evaluation)):
        path = split_path(root, split)
        path.parent.mkdir(parents=True, exist_ok=True)
        dump_gz(path, {"episodes": episodes, "instruction_vocab": {"word_list": []}})


def test_audit_leakage_command_exits_1_on_a_leak_and_2_on_bad_files(tmp_path, cli) -> None:
    rng = np.random.default_rng(0)
    _write_dataset(tmp_path / "leaky", _episodes(rng, 400, True), _episodes(rng, 200, True))
    result = cli("audit", "--leakage", str(tmp_path / "leaky"))
    assert result.returncode == 1
    assert "LEAK text_prior all: 100.0% vs 50.0%" in result.stdout
    assert "Traceback" not in result.stderr
    broken = _episodes(rng, 40, False)
    del broken[3]["info"]["condvln"]["program"]
    _write_dataset(tmp_path / "broken", broken, broken)
    result = cli("audit", "--leakage", str(tmp_path / "broken"))
    assert result.returncode == 2
    assert "info.condvln" in result.stdout + result.stderr
    assert "Traceback" not in result.stderr


def _report(n: int, accuracy: float) -> dict[str, Any]:
    """Every probe at ``accuracy`` over ``n`` episodes of chance 40 %, no condition cells."""
    cell = {"n": n, "accuracy": accuracy, "chance": 40.0}
    return {
        "branch": {p: {"all": dict(cell)} for p in PROBES},
        "conditions": {p: {} for p in PRIOR_PROBES},
    }


def test_overall_limits_widen_to_sampling_noise_on_small_datasets() -> None:
    """n = 30 at 40 %: two standard errors are 2·√(.4·.6/30) = 17.9 pp, so 46.7 % (two episodes
    over chance) is noise; at n = 3,000 they are 1.8 pp and the fixed ±3 / ±2 pp apply."""
    assert violations(_report(30, 46.7)) == []
    fixed = violations(_report(30, 46.7), Tolerances(standard_errors=0.0))
    assert len(fixed) == len(PROBES)
    assert (
        fixed[0] == "text_prior all: 46.7% vs 40.0%, +6.7 pp above chance (n=30, tolerance ±3.0 pp)"
    )
    assert violations(_report(30, 58.0)) != []
    large = violations(_report(3000, 42.5))
    assert [p.split(":")[0] for p in large] == ["constant_branch all", "nearest_goal all"]


def test_breakdown_cells_widen_to_three_standard_errors() -> None:
    """A category cell of 135 at chance 1/3 (standard error 4.06 pp) at 41.5 %: +8.1 pp is two
    standard errors, past ±8.1 pp at two but inside ±12.2 pp at three, the default for the
    50–60 breakdown cells a report judges; +13.0 pp is a leak either way."""

    def report(accuracy: float) -> dict[str, Any]:
        cell = {"n": 135, "accuracy": accuracy, "chance": 100 / 3}
        out = _report(3000, 40.0)
        out["branch"]["text_prior"]["chain"] = cell
        return out

    assert violations(report(41.5)) == []
    assert violations(report(41.5), Tolerances(cell_standard_errors=2.0)) == [
        "text_prior chain: 41.5% vs 33.3%, +8.2 pp above chance (n=135, tolerance ±8.1 pp)"
    ]
    assert [p.split(":")[0] for p in violations(report(46.3))] == ["text_prior chain"]
