"""Branch diagnostics, failure categories and no-op patterns on hand-made episodes."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from condvln.evaluation import ContinuousSpace, GraphSpace, invalid_episode, score_episode
from condvln.evaluation import diagnostics as d

# A junction J 4 m north of the start; gold leaf L 4 m west of J, other leaf R 4 m east of J.
S, J, L, R = [0.0, 0, 0], [0.0, 0, -4.0], [-4.0, 0, -4.0], [4.0, 0, -4.0]


def _walk(*corners: list[float], step: float = 0.25) -> list[list[float]]:
    """Straight 0.25 m steps through the corners (start included)."""
    pts = [np.asarray(corners[0])]
    for a, b in itertools.pairwise(corners):
        a, b = np.asarray(a), np.asarray(b)
        n = round(np.linalg.norm(b - a) / step)
        pts += [a + (b - a) * (i / n) for i in range(1, n + 1)]
    return [p.tolist() for p in pts]


def _score(traj, stop_called=True):
    return score_episode(
        traj,
        space=ContinuousSpace(),
        radius=1.0,
        goal=L,
        reference_path=_walk(S, J, L),
        branch_goals=[L, R],
        gold_branch=0,
        stop_called=stop_called,
    )


def test_success_has_no_failure_category() -> None:
    r = _score(_walk(S, J, L))
    assert (r["success"], r["failure_category"], r["wrong_branch"], r["branch_commitment"]) == (
        1,
        None,
        False,
        0,
    )


def test_wrong_branch() -> None:
    r = _score(_walk(S, J, R))
    assert (r["wrong_branch"], r["branch_commitment"], r["failure_category"]) == (
        True,
        1,
        "wrong_branch",
    )


def test_never_stopped_wins_over_wrong_branch() -> None:
    r = _score(_walk(S, J, R), stop_called=False)
    assert (r["wrong_branch"], r["failure_category"]) == (False, "never_stopped")


def test_stopped_early() -> None:
    r = _score(_walk(S, [0.0, 0, -2.0]))
    assert r["failure_category"] == "stopped_early"


def test_navigation_when_passing_the_goal() -> None:
    r = _score(_walk(S, J, L, [-4.0, 0, -8.0]))
    assert (r["oracle_success"], r["failure_category"]) == (1, "navigation")


def test_navigation_when_lost_after_a_long_walk() -> None:
    r = _score(_walk(S, [0.0, 0, 3.0], [3.0, 0, 3.0], [3.0, 0, 0.0]))
    assert (r["oracle_success"], r["wrong_branch"], r["failure_category"]) == (
        0,
        False,
        "navigation",
    )


def test_invalid() -> None:
    assert invalid_episode()["failure_category"] == "invalid"
    assert d.failure_category(success=0, valid=False, stop_called=False) == "invalid"


def test_wrong_branch_needs_a_strictly_nearer_leaf_within_the_radius() -> None:
    assert d.wrong_branch([0.2, 0.5], 0, 1.0) is False  # gold is nearer
    assert d.wrong_branch([3.0, 1.0], 0, 1.0) is False  # strict radius
    assert d.wrong_branch([3.0, 1.0], 0, 1.0, strict=False) is True
    assert d.wrong_branch([3.0, 2.0, 0.1], 0, 1.0) is True  # any non-gold leaf
    assert d.wrong_branch([0.3, 0.9], 1, 1.0) is True  # gold need not be index 0


def test_commitment_in_graph_mode() -> None:
    g = GraphSpace(["s", "a", "b"], [[0, 1, 1], [1, 0, 2], [1, 2, 0]])
    r = score_episode(
        ["s", "b"], space=g, radius=0.5, goal="a", branch_goals=["a", "b"], gold_branch=0
    )
    assert (r["branch_commitment"], r["wrong_branch"], r["failure_category"]) == (
        1,
        True,
        "wrong_branch",
    )
    assert score_episode(["s"], space=g, radius=0.5, goal="a")["branch_commitment"] is None


def test_cancelling_turns() -> None:
    assert d.cancelling_turns([]) == 0
    assert d.cancelling_turns([2, 2, 2, 1, 3, 3]) == 0
    assert d.cancelling_turns([2, 3, 1, 3, 2, 0]) == 2


def _forward_back_positions() -> list[list[float]]:
    """Forward, twelve 15° turns (180°), forward back to the start, then forward twice."""
    p0, p1 = [0.0, 0, 0], [0.0, 0, -0.25]
    return [p0, p1, *[p1] * 12, [0.0, 0, 1e-3], [0.25, 0, 0], [0.5, 0, 0]]


def test_forward_back() -> None:
    assert d.forward_back(_forward_back_positions()) == 1
    assert d.forward_back(_forward_back_positions(), tolerance=1e-4) == 0
    assert d.forward_back([[0.0, 0, 0]] * 5) == 0  # only turns
    assert d.forward_back([]) == 0
    actions = [1, *[2] * 12, 1, 1, 1, 0]
    r = score_episode(
        _forward_back_positions(),
        space=ContinuousSpace(),
        radius=1.0,
        goal=[0.5, 0, 0],
        actions=actions,
    )
    assert (r["forward_back"], r["cancelling_turns"]) == (1, 0)


def test_no_action_log_gives_none_turn_count() -> None:
    r = score_episode([[0.0, 0, 0]], space=ContinuousSpace(), radius=1.0, goal=[0, 0, 0])
    assert r["cancelling_turns"] is None and not math.isnan(r["forward_back"])


@pytest.mark.parametrize("success", [0, 1])
def test_failure_category_is_none_iff_success(success: int) -> None:
    assert (d.failure_category(success=success) is None) == bool(success)


def test_compiled_counts_equal_the_array_formulation() -> None:
    """forward_back / cancelling_turns (one compiled pass) against the array formulation of
    their definitions on random walks with turns, back-steps and repeated positions."""
    rng = np.random.default_rng(3)
    for _ in range(300):
        n = int(rng.integers(0, 60))
        steps = rng.choice([-0.25, 0.0, 0.25], size=(n, 3)) * [1, 0, 1]
        positions = np.cumsum(steps + rng.normal(scale=0.01, size=(n, 3)) * (steps != 0), axis=0)
        keep = np.ones(n, dtype=bool)
        keep[1:] = (np.diff(positions, axis=0) != 0).any(axis=1)
        q = positions[keep]
        back = np.linalg.norm(q[2:] - q[:-2], axis=-1) < 0.05 if len(q) >= 3 else []
        assert d.forward_back(positions) == int(np.count_nonzero(back))
        actions = rng.integers(0, 4, size=n)
        pairs = list(itertools.pairwise(actions.tolist()))
        assert d.cancelling_turns(actions) == sum(p in ((2, 3), (3, 2)) for p in pairs)
