"""Element-wise ``atan2`` and ``exp`` from the C library: the same bits wherever arrays sit.

numpy 1.26 (the version tested here) computes ``arctan2``, ``exp``, ``log`` and most other
transcendental ufuncs with SIMD code on CPUs with AVX-512, which differs from the C library's
result by an ulp or two on many inputs. It falls back to the C library when an output buffer
begins exactly where an input ends, a conservative overlap test. Which branch runs therefore
depends on where the allocator happened to put the arrays: one process can get two answers for
the same input, and a scene graph written by one process can differ in the last digit from the
same graph built in another (it did, in a test, about once in 250 builds).

The functions here call :mod:`math` for every element instead: the C library's result whatever
the memory layout, so the same in every process on one machine. (Across machines the C library
itself may differ in the last digit.) They cost about 0.1 µs per element; use them where a
result is written or compared exactly, and numpy where only a threshold is tested with a margin.

>>> import numpy as np
>>> atan2(np.array([[1.0, -1.0]]), np.array([[0.0, 0.0]])).tolist() == [[math.pi / 2, -math.pi / 2]]
True
>>> exp(np.array([0.0, -math.inf, 1000.0, math.nan])).tolist()
[1.0, 0.0, inf, nan]
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

LARGEST_EXP_ARGUMENT = math.log(np.finfo(np.float64).max)
"""``exp`` of anything larger overflows to ``inf`` (``math.exp`` would raise)."""


def atan2(y: ArrayLike, x: ArrayLike) -> np.ndarray:
    """``math.atan2(y, x)`` of every element (broadcast like numpy), as a float64 array.

    >>> atan2([0.0, -0.0], [-1.0, -1.0]).tolist() == [math.pi, -math.pi]
    True
    """
    y_array, x_array = np.broadcast_arrays(
        np.asarray(y, dtype=np.float64), np.asarray(x, dtype=np.float64)
    )
    values = map(math.atan2, y_array.ravel().tolist(), x_array.ravel().tolist())
    return np.fromiter(values, dtype=np.float64, count=y_array.size).reshape(y_array.shape)


def exp(x: ArrayLike) -> np.ndarray:
    """``math.exp`` of every element as a float64 array; ``inf`` where numpy's would overflow.

    >>> exp([[0.0], [1.0]]).tolist() == [[1.0], [math.e]]
    True
    """
    array = np.asarray(x, dtype=np.float64)
    values = map(_exp_or_inf, array.ravel().tolist())
    return np.fromiter(values, dtype=np.float64, count=array.size).reshape(array.shape)


def _exp_or_inf(value: float) -> float:
    return math.inf if value > LARGEST_EXP_ARGUMENT else math.exp(value)  # NaN stays NaN
