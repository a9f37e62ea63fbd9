"""The navigation interface every backend implements: :class:`Navigator` and :class:`GeodesicField`.

Backends — :class:`~condvln.nav.exact.ExactNavigator` (exact any-angle geodesics on the
navigable polygon), :class:`~condvln.nav.geodesic.GridNavigator` (occupancy grid, fast marching)
and :class:`~condvln.nav.habitat.HabitatNavigator` (habitat-sim's navmesh) — import this module
and nothing of each other; :func:`condvln.nav.backends.make_navigator` picks one by name.

Conventions shared by all backends:

* Points are 3D Habitat points ``(x, y, z)``; only ``(x, z)`` matter for distances. Returned
  points get ``y`` = the floor height of the room that holds them.
* Unreachable is explicit: :meth:`Navigator.distance` and :meth:`Navigator.shortest_path` return
  ``None``, :meth:`GeodesicField.query` masks the entry (``numpy.ma``), and
  :meth:`Navigator.distance_field` raises :class:`Unreachable`. No NaN or inf is returned.
* The exact backend's ``distance(a, b)`` and ``distance_field(b).distance(a)`` are the same
  float; the grid's field values carry fast marching's error (about ±1.5 cm).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from condvln.errors import ValidationError
from condvln.nav.agent import AgentSpec
from condvln.scene.model import SceneObject, Vec3

FloatArray = NDArray[np.float64]


class Unreachable(ValidationError):
    """A goal or point that is not on (or near enough to) the main navigable region."""


@runtime_checkable
class GeodesicField(Protocol):
    """Geodesic distances from every point to one goal."""

    goal: Vec3

    def query(self, points: ArrayLike) -> np.ma.MaskedArray:
        """Distances from points ``(N, 3)`` to the goal; unreachable entries are masked."""
        ...

    def distance(self, point: Sequence[float]) -> float | None:
        """Distance from one point to the goal, or ``None`` when unreachable."""
        ...


@runtime_checkable
class Navigator(Protocol):
    """Navigation geometry of one scene for one agent body."""

    agent: AgentSpec

    def is_navigable(self, point: Sequence[float]) -> bool:
        """Whether the agent's centre may stand at ``point``."""
        ...

    def snap(self, point: Sequence[float]) -> Vec3 | None:
        """The nearest navigable point (``None`` when the backend finds none)."""
        ...

    def distance(self, a: Sequence[float], b: Sequence[float]) -> float | None:
        """Geodesic distance ``a → b``, or ``None`` when unreachable."""
        ...

    def distance_field(self, goal: Sequence[float]) -> GeodesicField:
        """Distances to ``goal`` from everywhere (raises :class:`Unreachable`)."""
        ...

    def shortest_path(self, a: Sequence[float], b: Sequence[float]) -> list[Vec3] | None:
        """Any-angle shortest path ``a → b`` as waypoints, or ``None`` when unreachable."""
        ...

    def approach_point(self, obj: SceneObject) -> Vec3 | None:
        """Where the agent arrives at ``obj``, or ``None`` when it cannot reach it."""
        ...

    def line_of_sight(self, a: Sequence[float], b: Sequence[float]) -> bool:
        """Whether the straight move ``a → b`` stays on the navigable area."""
        ...

    def visible(self, a: Sequence[float], b: Sequence[float]) -> bool:
        """Whether ``b`` can be seen from ``a`` (only walls block)."""
        ...


def as_points(points: ArrayLike) -> FloatArray:
    """``(N, 3)`` float array from one point or many; ``ValueError`` on other shapes.

    >>> as_points((1, 2, 3)).shape
    (1, 3)
    """
    arr = np.asarray(points, dtype=np.float64)
    if arr.ndim == 1:
        arr = arr.reshape(1, -1)
    if arr.ndim != 2 or arr.shape[1] != 3:
        raise ValueError(f"points must be (x, y, z) or an (N, 3) array, got shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError("points must be finite")
    return arr


def ground(point: Sequence[float] | ArrayLike) -> tuple[float, float]:
    """``(x, z)`` of one point (the first of an ``(N, 3)`` array), validated like :func:`as_points`.

    >>> ground((1.0, 2.0, 3.0))
    (1.0, 3.0)
    """
    if isinstance(point, tuple) and len(point) == 3:
        x, z = float(point[0]), float(point[2])
        if math.isfinite(x) and math.isfinite(z) and math.isfinite(float(point[1])):
            return x, z
    xz = as_points(point)[0, [0, 2]]
    return float(xz[0]), float(xz[1])


def masked(values: FloatArray, ok: NDArray[np.bool_]) -> np.ma.MaskedArray:
    """``values`` with the entries where ``ok`` is false masked (and set to 0, never NaN/inf)."""
    return np.ma.MaskedArray(np.where(ok, values, 0.0), mask=~ok)
