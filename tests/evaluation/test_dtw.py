"""The compiled DTW kernel against a plain O(nm) reference implementation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from condvln.errors import ValidationError
from condvln.evaluation.dtw import dedup_mask, dtw, euclidean_alignment
from condvln.evaluation.spaces import pairwise_euclidean


def reference_dtw(cost: list[list[float]]) -> float:
    """Textbook full-matrix DTW (R4R dtw.py recursion), pure Python."""
    m, n = len(cost), len(cost[0])
    d = [[math.inf] * (n + 1) for _ in range(m + 1)]
    d[0][0] = 0.0
    for i in range(1, m + 1):
        for j in range(1, n + 1):
            d[i][j] = cost[i - 1][j - 1] + min(d[i - 1][j], d[i][j - 1], d[i - 1][j - 1])
    return d[m][n]


costs = arrays(
    np.float64,
    st.tuples(st.integers(1, 12), st.integers(1, 12)),
    elements=st.floats(0, 100, allow_nan=False),
)


@settings(max_examples=200, deadline=None)
@given(costs)
def test_kernel_equals_reference_exactly(cost: np.ndarray) -> None:
    assert dtw(cost) == reference_dtw(cost.tolist())


@pytest.mark.parametrize("seed", range(5))
def test_kernel_on_random_trajectories(seed: int) -> None:
    rng = np.random.default_rng(seed)
    ref = np.cumsum(rng.normal(size=(40, 3)), axis=0)
    traj = np.cumsum(rng.normal(size=(300, 3)), axis=0)
    cost = pairwise_euclidean(ref, traj)
    assert dtw(cost) == pytest.approx(reference_dtw(cost.tolist()), rel=1e-12)
    assert dtw(cost.T) == pytest.approx(dtw(cost), rel=1e-12)  # the step set is symmetric


def test_non_contiguous_and_integer_input() -> None:
    cost = np.arange(12, dtype=np.int64).reshape(3, 4)
    assert dtw(cost) == reference_dtw(cost.tolist())
    assert dtw(cost.T) == reference_dtw(cost.T.tolist())


@pytest.mark.parametrize("bad", [np.empty((0, 3)), np.empty((2, 0)), [[1.0, np.inf]], [1.0]])
def test_invalid_cost_is_rejected(bad) -> None:
    with pytest.raises(ValidationError):
        dtw(bad)


def test_dedup_mask_on_positions_and_node_ids() -> None:
    assert dedup_mask(np.array([3, 3, 4, 3, 3])).tolist() == [True, False, True, True, False]
    assert dedup_mask(np.empty((0, 3))).tolist() == []
    pts = np.array([[0.0, 0, 0], [0.0, 0, 1e-12], [0.0, 0, 1e-12]])
    assert dedup_mask(pts).tolist() == [True, True, False]


paths = st.tuples(st.integers(1, 40), st.integers(1, 60), st.integers(0, 2**32 - 1))


@settings(max_examples=150, deadline=None)
@given(paths, st.booleans())
def test_euclidean_alignment_equals_the_cost_matrix_path(shape: tuple, dedup: bool) -> None:
    """The fused kernel (no cost matrix) gives the DTW and the row minima of the matrix path
    on random walks with repeated positions (in-place turns), to 1e-9."""
    m, n, seed = shape
    rng = np.random.default_rng(seed)
    reference = np.cumsum(rng.normal(size=(m, 3)), axis=0)
    trajectory = np.cumsum(rng.normal(size=(n, 3)) * (rng.random((n, 1)) < 0.6), axis=0)
    cost = pairwise_euclidean(reference, trajectory)
    value, nearest = euclidean_alignment(reference, trajectory, dedup=dedup)
    assert value == pytest.approx(dtw(cost[:, dedup_mask(trajectory)] if dedup else cost), abs=1e-9)
    np.testing.assert_allclose(nearest, cost.min(axis=1), rtol=0, atol=1e-9)


def test_euclidean_alignment_rejects_empty_paths() -> None:
    with pytest.raises(ValidationError, match="non-empty"):
        euclidean_alignment(np.zeros((0, 3)), np.zeros((2, 3)))
