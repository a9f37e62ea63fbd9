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
