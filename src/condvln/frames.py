"""Coordinate frames: every source's transform into the Habitat frame, and yaw ↔ quaternion.

Inside CondVLN everything is in Habitat's frame: metres, right-handed, **Y up**, agent forward
= −Z, quaternions stored ``[x, y, z, w]``. Compass words: north = −Z, east = +X. Adapters call
these helpers at load time and nowhere else.

>>> habitat_from_thor((1.0, 2.0, 3.0))
(1.0, 2.0, -3.0)
>>> habitat_from_zup((1.0, 2.0, 3.0))
(1.0, 3.0, -2.0)
>>> zup_from_habitat(habitat_from_zup((1.0, 2.0, 3.0)))
(1.0, 2.0, 3.0)
>>> [round(c, 6) for c in yaw_to_quaternion(math.pi)]
[0.0, 1.0, 0.0, 0.0]
"""

from __future__ import annotations

import math
from collections.abc import Sequence

Vec3 = tuple[float, float, float]
Quat = tuple[float, float, float, float]


def habitat_from_thor(p: Sequence[float]) -> Vec3:
    """AI2-THOR / ProcTHOR (Unity, left-handed, Y up) → Habitat: ``(x, y, z) → (x, y, −z)``."""
    return (float(p[0]), float(p[1]), -float(p[2]))


def habitat_yaw_from_thor(yaw_degrees: float) -> float:
    """THOR yaw in degrees (clockwise seen from above, 0 = +Z) → Habitat yaw in radians.

    Habitat yaw is counter-clockwise about +Y with 0 facing −Z; the handedness flip negates it.

    >>> round(habitat_yaw_from_thor(90.0), 6)
    -1.570796
    """
    return -math.radians(float(yaw_degrees))


def habitat_from_zup(p: Sequence[float]) -> Vec3:
    """Matterport3D / Gibson (Z up) → Habitat: ``(x, y, z) → (x, z, −y)`` (rotation R_x(−90°))."""
    return (float(p[0]), float(p[2]), -float(p[1]))


def zup_from_habitat(p: Sequence[float]) -> Vec3:
    """Inverse of :func:`habitat_from_zup`: ``(x, y, z) → (x, −z, y)``."""
    return (float(p[0]), -float(p[2]), float(p[1]))


def habitat_box_from_zup(lo: Sequence[float], hi: Sequence[float]) -> tuple[Vec3, Vec3]:
    """Map a Z-up axis-aligned box ``(lo, hi)`` to Habitat: min ``(xlo, zlo, −yhi)``, max ``(xhi, zhi, −ylo)``.

    >>> habitat_box_from_zup((0, 1, 2), (3, 4, 5))
    ((0.0, 2.0, -4.0), (3.0, 5.0, -1.0))
    """
    return (
        (float(lo[0]), float(lo[2]), -float(hi[1])),
        (float(hi[0]), float(hi[2]), -float(lo[1])),
    )


def yaw_to_quaternion(yaw: float) -> Quat:
    """Pure rotation by ``yaw`` radians about +Y as ``[x, y, z, w]`` = ``[0, sin θ/2, 0, cos θ/2]``."""
    half = 0.5 * float(yaw)
    return (0.0, math.sin(half), 0.0, math.cos(half))


def quaternion_to_yaw(q: Sequence[float]) -> float:
    """Yaw (radians, in (−π, π]) of an ``[x, y, z, w]`` quaternion, using its rotation of −Z.

    >>> round(quaternion_to_yaw(yaw_to_quaternion(1.0)), 9)
    1.0
    """
    x, y, z, w = (float(c) for c in q)
    # Rotate the forward vector (0, 0, -1) and read its heading in the ground plane.
    fx = -(2.0 * (x * z + w * y))
    fz = -(1.0 - 2.0 * (x * x + y * y))
    return math.atan2(-fx, -fz)


def heading_vector(yaw: float) -> tuple[float, float]:
    """Ground-plane unit vector ``(dx, dz)`` the agent faces at ``yaw`` (0 → (0, −1)).

    >>> [round(c, 6) for c in heading_vector(math.pi / 2)]
    [-1.0, -0.0]
    """
    return (-math.sin(yaw), -math.cos(yaw))


def xyzw_from_wxyz(q: Sequence[float]) -> Quat:
    """Reorder a ``[w, x, y, z]`` quaternion (habitat-sim scene instances) to ``[x, y, z, w]``."""
    return (float(q[1]), float(q[2]), float(q[3]), float(q[0]))
