"""Every vector of ``tests/data/golden/metric_vectors.json``, key by key.

Each golden key names a convention (``conventions`` in the file); :data:`KEY_MAP` says which
record key and which :class:`MetricOptions` reproduce it, :data:`VARIANTS` does the same for the
``condvln_variants``. ``null`` expectations must come back as ``None``.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from condvln.errors import ValidationError
from condvln.evaluation import (
    ContinuousSpace,
    GraphSpace,
    MetricOptions,
    invalid_episode,
    score_episode,
)
from condvln.evaluation.aggregate import aggregate, weighted_mean
from condvln.evaluation.metrics import path_length_weighted, sdtw

GOLDEN_PATH = Path(__file__).resolve().parents[1] / "data" / "golden" / "metric_vectors.json"
GOLDEN = json.loads(GOLDEN_PATH.read_text())
VECTORS = {v["id"]: v for v in GOLDEN["vectors"]}


class Mapping_(NamedTuple):
    """How one golden key is reproduced: record key, options, roles swapped."""

    key: str
    options: MetricOptions = MetricOptions()
    swapped: bool = False


LE = MetricOptions(strict=False)
RAW = MetricOptions(dedup=False)
NONE = MetricOptions(undefined_as_none=True)
R4R = MetricOptions(strict=False, dedup=False, undefined_as_none=True)

KEY_MAP: dict[str, Mapping_] = {
    "steps": Mapping_("steps"),
    "navigation_error": Mapping_("distance_to_goal"),
    "final_distance_to_goal": Mapping_("distance_to_goal"),
    "oracle_error": Mapping_("oracle_navigation_error"),
    "success_lt": Mapping_("success"),
    "success_le": Mapping_("success", LE),
    "success_lt_ignoring_stop": Mapping_("success", MetricOptions(require_stop=False)),
    "success_le_ignoring_stop": Mapping_(
        "success", MetricOptions(strict=False, require_stop=False)
    ),
    "oracle_success_lt": Mapping_("oracle_success"),
    "oracle_success_le": Mapping_("oracle_success", LE),
    "trajectory_length": Mapping_("path_length"),
    "shortest_path_length": Mapping_("geodesic_distance"),
    "reference_path_length": Mapping_("reference_path_length"),
    "spl": Mapping_("spl", NONE),
    "spl_recommended": Mapping_("spl"),
    "spl_le": Mapping_("spl", MetricOptions(strict=False, undefined_as_none=True)),
    "dtw_raw": Mapping_("dtw", RAW),
    "ndtw_raw": Mapping_("ndtw", RAW),
    "dtw_dedup": Mapping_("dtw"),
    "ndtw_dedup": Mapping_("ndtw"),
    "sdtw_le_raw": Mapping_("sdtw", MetricOptions(strict=False, dedup=False)),
    "sdtw_lt_raw": Mapping_("sdtw", RAW),
    "sdtw_lt_dedup": Mapping_("sdtw"),
    "cls": Mapping_("cls", NONE),
    "cls_recommended": Mapping_("cls"),
    "cls_path_coverage": Mapping_("path_coverage"),
    "cls_length_score": Mapping_("length_score", NONE),
    # R4R doctests: dtw.py uses raw DTW and `<=`; its cls doctest swaps the roles.
    "dtw": Mapping_("dtw", R4R),
    "ndtw": Mapping_("ndtw", R4R),
    "sdtw_le": Mapping_("sdtw", R4R),
    "cls_roles_swapped": Mapping_("cls", R4R, swapped=True),
    "r4r_doctest_constant": Mapping_("cls", R4R, swapped=True),
}

VARIANTS: dict[str, MetricOptions] = {
    "recommended_lt_all_positions_nondecreasing": MetricOptions(),
    "le_comparator": MetricOptions(strict=False),
    "strictly_increasing_indices": MetricOptions(subgoal_order="increasing"),
    "stop_point_only": MetricOptions(subgoal_positions="stop"),
}

CONDVLN_KEYS = {
    "m": "subgoals_total",
    "k": "subgoals_reached",
    "success": "success",
    "included": "bsa_included",
    "bsa": "bsa",
    "csr": "csr",
}

AGGREGATE_VECTORS = {
    "sdtw_aggregate/two_episodes",
    "bsa/aggregate_branch_episodes",
    "bsa/aggregate_worked_example",
    "alfred_teach/plw_aggregate",
}


def _score(vector: dict[str, Any], options: MetricOptions, swapped: bool = False) -> dict:
    inputs = vector["inputs"]
    if vector["space"] == "graph":
        space = GraphSpace.from_dict(GOLDEN["graphs"][vector["graph"]]["distances"])
    else:
        space = ContinuousSpace()
    trajectory = inputs.get("trajectory", inputs.get("prediction"))
    reference = inputs.get("reference_path", inputs.get("reference"))
    if swapped:
        trajectory, reference = reference, trajectory
    return score_episode(
        trajectory,
        space=space,
        radius=vector.get("threshold", vector.get("tau")),
        reference_path=reference,
        goal=inputs.get("goal"),
        subgoals=inputs.get("subgoals", ()),
        stop_called=inputs.get("stop_called", True),
        options=options,
    )


def _assert_value(got: Any, expected: Any) -> None:
    if expected is None:
        assert got is None
    elif isinstance(expected, int):
        assert got == expected
    else:
        assert got is not None and math.isfinite(got)
        assert got == pytest.approx(expected, abs=1e-9, rel=0)


EPISODE_CASES = [
    (vid, key)
    for vid, v in VECTORS.items()
    if "space" in v and "expected" in v
    for key in v["expected"]
]
CONDVLN_CASES = [
    (vid, variant)
    for vid, v in VECTORS.items()
    if "error" not in v.get("expected_condvln", {"error": 1})
    for variant in ["default", *v.get("condvln_variants", {})]
]


def test_the_file_has_34_vectors_all_covered() -> None:
    covered = {vid for vid, _ in EPISODE_CASES} | {vid for vid, _ in CONDVLN_CASES}
    covered |= AGGREGATE_VECTORS | {"bsa/empty_trajectory"}
    assert len(VECTORS) == 34
    assert covered == set(VECTORS)
    assert {key for _, key in EPISODE_CASES} <= set(KEY_MAP)


@pytest.mark.parametrize(("vector_id", "key"), EPISODE_CASES)
def test_episode_metric(vector_id: str, key: str) -> None:
    vector = VECTORS[vector_id]
    how = KEY_MAP[key]
    record = _score(vector, how.options, how.swapped)
    _assert_value(record[how.key], vector["expected"][key])


@pytest.mark.parametrize(("vector_id", "variant"), CONDVLN_CASES)
def test_condvln_bsa_csr(vector_id: str, variant: str) -> None:
    vector = VECTORS[vector_id]
    if variant == "default":
        options, expected = MetricOptions(), vector["expected_condvln"]
    else:
        options, expected = VARIANTS[variant], vector["condvln_variants"][variant]
    record = _score(vector, options)
    for golden_key, record_key in CONDVLN_KEYS.items():
        _assert_value(record[record_key], expected[golden_key])


def test_empty_trajectory_is_rejected_and_lenient_record_matches() -> None:
    vector = VECTORS["bsa/empty_trajectory"]
    with pytest.raises(ValidationError, match=re.escape(vector["expected_condvln"]["error"])):
        _score(vector, MetricOptions())
    lenient = invalid_episode(len(vector["inputs"]["subgoals"]))
    for golden_key, record_key in CONDVLN_KEYS.items():
        _assert_value(lenient[record_key], vector["expected_condvln_lenient"][golden_key])


def test_sdtw_is_averaged_per_episode() -> None:
    vector = VECTORS["sdtw_aggregate/two_episodes"]
    records = [{**e, "sdtw": sdtw(e["success"], e["ndtw"])} for e in vector["inputs"]["episodes"]]
    agg = aggregate(records)
    expected = vector["expected"]
    _assert_value(agg["sdtw"].mean, expected["sdtw"])
    _assert_value(agg["ndtw"].mean, expected["ndtw"])
    _assert_value(agg["success"].mean, expected["success_rate"])


@pytest.mark.parametrize(
    "vector_id", ["bsa/aggregate_branch_episodes", "bsa/aggregate_worked_example"]
)
def test_bsa_csr_aggregates(vector_id: str) -> None:
    vector = VECTORS[vector_id]
    records = [_score(VECTORS[e], MetricOptions()) for e in vector["inputs"]["episodes"]]
    agg = aggregate(records)
    expected = vector["expected"]
    assert agg["bsa"].n + agg["bsa"].n_excluded == expected["n_episodes"]
    assert agg["bsa"].n == agg["csr"].n == expected["n_included"]
    assert agg["bsa"].n_excluded == agg["csr"].n_excluded == expected["n_excluded"]
    _assert_value(agg["bsa"].mean, expected["bsa"])
    _assert_value(agg["csr"].mean, expected["csr"])
    _assert_value(agg["success"].mean, expected["sr_all_episodes"])


def test_alfred_teach_path_length_weighted_aggregates() -> None:
    vector = VECTORS["alfred_teach/plw_aggregate"]
    records = []
    for e in vector["inputs"]["episodes"]:
        gc = e["gc_satisfied"] / e["gc_total"]
        records.append(
            {
                "success": e["success"],
                "goal_condition_success": gc,
                "goal_conditions_total": e["gc_total"],
                "reference_path_length": e["expert_len"],
                "plw_success": path_length_weighted(e["success"], e["expert_len"], e["agent_len"]),
                "plw_goal_condition": path_length_weighted(gc, e["expert_len"], e["agent_len"]),
            }
        )
        _assert_value(path_length_weighted(1.0, e["expert_len"], e["agent_len"]), e["path_ratio"])
    agg = aggregate(records)
    expected = vector["expected"]
    _assert_value(agg["success"].mean, expected["sr"])
    _assert_value(agg["goal_condition_success"].mean, expected["gc_micro"])
    _assert_value(
        weighted_mean([r["goal_condition_success"] for r in records]),
        expected["gc_macro_not_used_by_alfred"],
    )
    _assert_value(agg["plw_success"].mean, expected["plwsr"])
    _assert_value(agg["plw_goal_condition"].mean, expected["plwgc"])
