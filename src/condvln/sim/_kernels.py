"""Compiled (numba) kernel of the simulator's per-step detection.

One call tests every object of the scene: horizontal range, field of view, then line of sight
(walls and outside floors block; :func:`condvln.nav._kernels.segment_hits` on the view map) only
for the objects that passed the cheap tests.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from condvln.nav._kernels import segment_hits


@numba.njit(cache=True, nogil=True)
def _wrap(angle: float) -> float:
    """``angle`` wrapped into [−π, π) (Python's float modulo, as the simulator's yaw)."""
    return (angle + math.pi) % (2.0 * math.pi) - math.pi


@numba.njit(cache=True, nogil=True)
def detect(
    view_blocked: np.ndarray,
    ox: float,
    oz: float,
    cell: float,
    x: float,
    z: float,
    yaw: float,
    centres: np.ndarray,
    half_fov: float,
    view_range: float,
    bearing: np.ndarray,
    depth: np.ndarray,
) -> np.ndarray:
    """Indices of the objects seen from ``(x, z)`` facing ``yaw``, in object order.

    Args:
        view_blocked: The navigator's view map (cells that block sight).
        ox: Grid origin x.
        oz: Grid origin z.
        cell: Grid cell size.
        x: Agent x.
        z: Agent z.
        yaw: Agent heading (radians, counter-clockwise from −Z).
        centres: ``(n, 2)`` object centres ``(x, z)``.
        half_fov: Half the field of view (radians; π sees all around).
        view_range: Largest horizontal distance seen.
        bearing: Output ``(n,)``: relative bearing of object ``i`` (valid where returned).
        depth: Output ``(n,)``: horizontal distance of object ``i`` (valid where returned).

    Returns:
        The indices of the detected objects.
    """
    n = centres.shape[0]
    found = np.empty(n, dtype=np.intp)
    count = 0
    for i in range(n):
        dx = centres[i, 0] - x
        dz = centres[i, 1] - z
        d = math.sqrt(dx * dx + dz * dz)
        if d > view_range:
            continue
        b = _wrap(math.atan2(-dx, -dz) - yaw) if d > 0.0 else 0.0
        if abs(b) > half_fov:
            continue
        if segment_hits(view_blocked, ox, oz, cell, x, z, centres[i, 0], centres[i, 1], True):
            continue
        bearing[i] = b
        depth[i] = d
        found[count] = i
        count += 1
    return found[:count]
