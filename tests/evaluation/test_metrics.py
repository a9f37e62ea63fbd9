"""Per-episode metric functions, spaces and score_episode beyond the golden vectors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from condvln.errors import ConfigError, ValidationError
from condvln.evaluation import (
    RECORD_KEYS,
    ContinuousSpace,
    GraphSpace,
    MetricOptions,
    invalid_episode,
    score_episode,
)
from condvln.evaluation import metrics as m

LINE = [[x, 0.0, 0.0] for x in np.arange(0, 4.25, 0.25)]


def test_record_keys_are_complete_and_finite() -> None:
    rng = np.random.default_rng(1)
    traj = np.cumsum(rng.normal(scale=0.25, size=(50, 3)), axis=0)
    record = score_episode(
        traj,
        space=ContinuousSpace(),
        radius=1.0,
        reference_path=LINE,
        subgoals=[[1.0, 0, 0]],
        branch_goals=[LINE[-1], [0.0, 0, 4.0]],
        gold_branch=0,
        actions=[1, 2, 3, 0],
    )
    assert list(record) == list(RECORD_KEYS)
    assert list(invalid_episode(1)) == list(RECORD_KEYS)
    for value in record.values():
        if isinstance(value, float):
            assert math.isfinite(value)


def test_without_reference_path_fidelity_is_none() -> None:
    record = score_episode(
        [[0, 0, 0], [1, 0, 0]], space=ContinuousSpace(), radius=0.5, goal=[1, 0, 0]
    )
    assert record["success"] == 1
    for key in ("ndtw", "sdtw", "cls", "dtw", "reference_path_length", "plw_success"):
        assert record[key] is None


def test_custom_geodesic_is_used_for_goal_tests_but_not_for_fidelity() -> None:
    def detour(points: np.ndarray, target: np.ndarray) -> np.ndarray:
        return 2.0 * np.linalg.norm(points - target, axis=-1)  # a wall doubles every route

    traj = LINE[:13]  # stops 1 m from the goal
    plain = score_episode(traj, space=ContinuousSpace(), radius=1.5, reference_path=LINE)
    walled = score_episode(traj, space=ContinuousSpace(detour), radius=1.5, reference_path=LINE)
    assert plain["success"] == 1 and walled["success"] == 0
    assert walled["distance_to_goal"] == pytest.approx(2.0)
    assert walled["geodesic_distance"] == pytest.approx(8.0)
    assert walled["ndtw"] == plain["ndtw"] and walled["path_length"] == plain["path_length"]


def test_shortest_path_length_override() -> None:
    record = score_episode(
        LINE, space=ContinuousSpace(), radius=1.0, reference_path=LINE, shortest_path_length=2.0
    )
    assert record["spl"] == pytest.approx(0.5)


def test_fidelity_threshold_option() -> None:
    traj = [[0.0, 0, 0], [0.0, 0, 1.0]]
    ref = [[0.0, 0, 0], [1.0, 0, 0]]
    a = score_episode(traj, space=ContinuousSpace(), radius=1.0, reference_path=ref)
    b = score_episode(
        traj,
        space=ContinuousSpace(),
        radius=1.0,
        reference_path=ref,
        options=MetricOptions(fidelity_threshold=2.0),
    )
    # default d_th = 3.0 m (VLN-CE's NDTW), not the 1 m success radius; DTW = sqrt(2)
    assert a["ndtw"] == pytest.approx(math.exp(-math.sqrt(2) / 6))
    assert b["ndtw"] == pytest.approx(math.exp(-math.sqrt(2) / 4))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"subgoal_order": "any"},
        {"subgoal_positions": "first"},
        {"fidelity_threshold": 0.0},
        {"fidelity_threshold": math.inf},
    ],
)
def test_bad_options_are_config_errors(kwargs) -> None:
    with pytest.raises(ConfigError):
        MetricOptions(**kwargs)


def test_invalid_inputs_are_validation_errors() -> None:
    space = ContinuousSpace()
    with pytest.raises(ValidationError, match="empty reference"):
        score_episode(LINE, space=space, radius=1.0, reference_path=[])
    with pytest.raises(ValidationError, match="goal or a reference"):
        score_episode(LINE, space=space, radius=1.0)
    with pytest.raises(ValidationError, match="finite"):
        score_episode([[0, 0, math.nan]], space=space, radius=1.0, goal=[0, 0, 0])
    with pytest.raises(ValidationError, match="geodesic"):
        score_episode(
            LINE,
            space=ContinuousSpace(lambda p, t: np.full(len(p), np.inf)),
            radius=1.0,
            goal=[0, 0, 0],
        )
    graph = GraphSpace.from_dict({"a": {"a": 0.0, "b": 1.0}, "b": {"a": 1.0, "b": 0.0}})
    with pytest.raises(ValidationError, match="unknown graph node 'c'"):
        score_episode(["a", "c"], space=graph, radius=1.0, goal="b")


def test_graph_space_validation() -> None:
    with pytest.raises(ValidationError, match="missing"):
        GraphSpace.from_dict({"a": {"a": 0.0}, "b": {"a": 1.0, "b": 0.0}})
    with pytest.raises(ValidationError, match="shape"):
        GraphSpace(["a", "b"], [[0.0]])
    with pytest.raises(ValidationError, match="finite"):
        GraphSpace(["a", "b"], [[0.0, math.inf], [math.inf, 0.0]])


def test_success_and_oracle_respect_comparator() -> None:
    d = [5.0, 3.0]
    assert m.success(d, 3.0) == 0 and m.success(d, 3.0, strict=False) == 1
    assert m.oracle_success(d, 3.0) == 0 and m.oracle_success(d, 3.0, strict=False) == 1


def test_spl_never_exceeds_success() -> None:
    rng = np.random.default_rng(0)
    for ell, tl in rng.uniform(0, 10, size=(100, 2)):
        assert 0.0 <= m.spl(1, ell, tl) <= 1.0
        assert m.spl(0, ell, tl) == 0.0


def test_cls_degenerate_cases() -> None:
    assert m.cls([[0.0]], 0.0, 0.0, 3.0).cls == 1.0
    assert m.cls([[0.0]], 0.0, 0.0, 3.0, undefined_as_none=True).cls is None
    assert m.cls([[0.0, 0.0]], 0.0, 2.0, 3.0).cls == 0.0


def test_subgoals_reached_greedy_prefix() -> None:
    far, near = 9.0, 0.0
    # subgoal 2 is only reached before subgoal 1: the prefix stops at 1
    d = [[far, far, near, far], [near, far, far, far]]
    assert m.subgoals_reached(d, 1.0) == 1
    # the first subgoal is missed: nothing after it counts
    assert m.subgoals_reached([[far, far], [near, near]], 1.0) == 0
    assert m.subgoals_reached(np.empty((0, 3)), 1.0) == 0
    assert m.subgoals_reached([[far, near]], 1.0, order="increasing") == 1


def test_goal_conditions_in_the_record() -> None:
    record = score_episode(
        [[0, 0, 0], [1, 0, 0], [2, 0, 0]],
        space=ContinuousSpace(),
        radius=0.5,
        goal=[3, 0, 0],
        subgoals=[[1, 0, 0], [5, 0, 0]],
    )
    assert (record["goal_conditions_satisfied"], record["goal_conditions_total"]) == (1, 3)
    assert record["goal_condition_success"] == pytest.approx(1 / 3)
