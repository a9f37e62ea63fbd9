"""Exact dynamic time warping over a cost matrix, compiled with numba.

``DTW(R, P) = D[m, n]`` with ``D[k, j] = C[k, j] + min(D[k-1, j], D[k, j-1], D[k-1, j-1])``,
``D[0, 0] = 0`` and ``D[k, 0] = D[0, j] = inf`` — steps (1, 0), (0, 1), (1, 1), no window, the
cost summed exactly as given (the R4R ``dtw.py`` recursion, not fastdtw's approximation). The
caller builds the cost matrix (Euclidean or graph distances, see :mod:`.spaces`), so the kernel
is the same in both modes and the matrix can be shared with CLS.

The kernel is compiled on first use and cached on disk (``cache=True``), so only the very first
process pays the compile time (about a second).

>>> dtw(np.array([[0.0, 4.0], [4.0, 8.0], [8.0, 4.0], [4.0, 0.0]]))
8.0
>>> keep = dedup_mask(np.array([[0.0, 0.0], [0.0, 0.0], [1.0, 0.0], [1.0, 0.0], [0.0, 0.0]]))
>>> keep.tolist()
[True, False, True, False, True]
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numpy.typing import ArrayLike, NDArray

from condvln.errors import ValidationError


@numba.njit(cache=True, nogil=True)
def _dtw_kernel(cost: NDArray[np.float64]) -> float:  # pragma: no cover - compiled
    m, n = cost.shape
    prev = np.full(n + 1, np.inf)
    prev[0] = 0.0
    cur = np.empty(n + 1)
    for k in range(m):
        cur[0] = np.inf
        for j in range(n):
            cur[j + 1] = cost[k, j] + min(prev[j], prev[j + 1], cur[j])
        prev, cur = cur, prev
    return prev[n]


def dtw(cost: ArrayLike) -> float:
    """Exact DTW: the cheapest monotone alignment of the rows and columns of ``cost``.

    Args:
        cost: ``(m, n)`` matrix, ``cost[k, j] = d(reference[k], trajectory[j])``; both ``m`` and
            ``n`` must be positive and every entry finite.

    Returns:
        The accumulated cost ``D[m, n]`` (same units as ``cost``).

    Raises:
        ValidationError: on an empty or non-finite matrix.

    >>> dtw([[1.0, 2.0, 3.0]])
    6.0
    """
    arr = np.ascontiguousarray(cost, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValidationError(f"DTW needs a non-empty cost matrix, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValidationError("DTW cost matrix must be finite")
    return float(_dtw_kernel(arr))


@numba.njit(cache=True, nogil=True)
def _euclidean_kernel(
    ref: NDArray[np.float64], traj: NDArray[np.float64], dedup: bool
) -> tuple[float, NDArray[np.float64]]:  # pragma: no cover - compiled
    m, n, d = ref.shape[0], traj.shape[0], ref.shape[1]
    prev = np.full(n + 1, np.inf)
    prev[0] = 0.0
    cur = np.empty(n + 1)
    nearest = np.empty(m)
    cols = np.empty(n, dtype=np.int64)  # the trajectory columns DTW aligns
    width = 0
    for j in range(n):
        same = j > 0
        for c in range(d):
            same = same and traj[j, c] == traj[j - 1, c]
        if not (dedup and same):
            cols[width] = j
            width += 1
    for k in range(m):
        last = cur[0] = np.inf  # last = cur[w], kept out of memory (the DP's serial chain)
        near = np.inf
        for w in range(width):
            j = cols[w]
            s = 0.0
            for c in range(d):
                s += (ref[k, c] - traj[j, c]) ** 2
            dist = math.sqrt(s)
            near = min(near, dist)
            last = cur[w + 1] = dist + min(prev[w], prev[w + 1], last)
        nearest[k] = near
        prev, cur = cur, prev
    return prev[width], nearest


def euclidean_alignment(
    reference: NDArray[np.float64], trajectory: NDArray[np.float64], *, dedup: bool = True
) -> tuple[float, NDArray[np.float64]]:
    """Exact DTW with the Euclidean point distance, and each reference point's distance to the
    nearest trajectory position (CLS's coverage), without building the cost matrix.

    Equals ``dtw(pairwise_euclidean(reference, trajectory)[:, dedup_mask(trajectory)])`` (all
    columns with ``dedup=False``) and that matrix's row minima, up to rounding.

    Args:
        reference: ``(m, d)`` finite positions, ``m`` ≥ 1.
        trajectory: ``(n, d)`` finite positions, ``n`` ≥ 1.
        dedup: align the trajectory with consecutive duplicates dropped (VLN-CE's NDTW).

    Raises:
        ValidationError: on an empty path or a non-finite result (overflowing coordinates).

    >>> value, nearest = euclidean_alignment(np.array([[0.0, 0], [2, 0]]), np.array([[0.0, 1]]))
    >>> round(value, 6), nearest.round(6).tolist()
    (3.236068, [1.0, 2.236068])
    """
    if len(reference) == 0 or len(trajectory) == 0:
        raise ValidationError("DTW needs a non-empty reference and trajectory")
    value, nearest = _euclidean_kernel(
        np.ascontiguousarray(reference, dtype=np.float64),
        np.ascontiguousarray(trajectory, dtype=np.float64),
        dedup,
    )
    if not math.isfinite(value):
        raise ValidationError("DTW cost matrix must be finite")
    return float(value), nearest


def dedup_mask(path: NDArray[np.generic]) -> NDArray[np.bool_]:
    """Mask keeping the first of each run of exactly equal consecutive positions (or node ids).

    VLN-CE's NDTW measure records a position only when it differs from the previous one, so
    in-place turns do not add DTW cost; apply this mask to the trajectory to reproduce that.
    """
    keep = np.ones(len(path), dtype=bool)
    if len(path) > 1:
        changed = np.diff(path, axis=0) != 0
        keep[1:] = changed.reshape(len(path) - 1, -1).any(axis=1)
    return keep
