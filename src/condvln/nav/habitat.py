"""Optional backend: habitat-sim's navmesh path finder behind the navigation interface.

habitat-sim is imported only when a :class:`HabitatNavigator` is built; without it the
constructor raises a one-line :class:`~condvln.errors.ConfigError`. Unreachable follows the
interface: ``None`` from :meth:`~HabitatNavigator.distance` and
:meth:`~HabitatNavigator.shortest_path`, masked entries from a field's ``query``. habitat-sim has
no distance fields, so :meth:`~HabitatNavigator.distance_field` answers point by point, and
:meth:`~HabitatNavigator.visible` is the navmesh line of sight (furniture blocks the view).

>>> from condvln.scene.model import Room, Scene
>>> room = Room(id="r", room_type="bedroom", label="B", floor_polygon=((0, 0), (1, 0), (1, 1)))
>>> HabitatNavigator("missing.navmesh", Scene(id="s", source="t", rooms=(room,)))
Traceback (most recent call last):
...
condvln.errors.ConfigError: habitat-sim is not installed (install it with: conda install habitat-sim -c conda-forge -c aihabitat); use the built-in grid backend
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from condvln.errors import ConfigError
from condvln.nav.agent import AgentSpec, GridConfig
from condvln.nav.approach import choose_approach
from condvln.nav.protocol import Unreachable, as_points
from condvln.scene.model import Scene, SceneObject, Vec3

INSTALL_HINT = "install it with: conda install habitat-sim -c conda-forge -c aihabitat"
"""What to run to get habitat-sim (it has no wheel on the package index)."""

MISSING = f"habitat-sim is not installed ({INSTALL_HINT}); use the built-in grid backend"


def import_habitat_sim(missing: str = MISSING) -> Any:
    """Import habitat-sim, or raise a one-line :class:`ConfigError` (``missing``) without it."""
    try:
        return importlib.import_module("habitat_sim")
    except ImportError:
        raise ConfigError(missing) from None


class HabitatNavigator:
    """:class:`~condvln.nav.protocol.Navigator` on a habitat-sim ``PathFinder``.

    Args:
        navmesh: A ``.navmesh`` file, or an existing ``habitat_sim.nav.PathFinder``.
        scene: The scene (for approach points).
        agent: The agent body the navmesh was baked for (informational).
        config: ``reach`` and ``cell_size`` (the approach-point candidate spacing) are used.

    Raises:
        ConfigError: When habitat-sim is not installed or the navmesh cannot be loaded.
    """

    def __init__(
        self,
        navmesh: str | Path | Any,
        scene: Scene,
        agent: AgentSpec | None = None,
        config: GridConfig | None = None,
    ) -> None:
        self._hs = import_habitat_sim()
        self.scene = scene
        self.agent = agent or AgentSpec()
        self.config = config or GridConfig()
        if isinstance(navmesh, str | Path):
            finder = self._hs.nav.PathFinder()
            if not finder.load_nav_mesh(str(navmesh)):
                raise ConfigError(f"{navmesh}: cannot load the navmesh")
            navmesh = finder
        self.pathfinder = navmesh

    def is_navigable(self, point: Sequence[float]) -> bool:
        """habitat-sim's ``is_navigable``."""
        return bool(self.pathfinder.is_navigable(np.asarray(point, dtype=np.float32)))

    def snap(self, point: Sequence[float]) -> Vec3 | None:
        """habitat-sim's ``snap_point``; ``None`` when it finds no navmesh nearby."""
        snapped = np.asarray(self.pathfinder.snap_point(np.asarray(point, dtype=np.float32)))
        if not np.isfinite(snapped).all():
            return None
        return (float(snapped[0]), float(snapped[1]), float(snapped[2]))

    def _find(self, a: Sequence[float], b: Sequence[float]) -> Any | None:
        request = self._hs.ShortestPath()
        request.requested_start = np.asarray(a, dtype=np.float32)
        request.requested_end = np.asarray(b, dtype=np.float32)
        found = self.pathfinder.find_path(request)
        if not found or not math.isfinite(request.geodesic_distance):
            return None
        return request

    def distance(self, a: Sequence[float], b: Sequence[float]) -> float | None:
        """Navmesh geodesic distance, or ``None`` when no path exists."""
        request = self._find(a, b)
        return None if request is None else float(request.geodesic_distance)

    def distance_field(self, goal: Sequence[float]) -> PointwiseField:
        """A field answering each query with one path search (raises :class:`Unreachable`)."""
        if self.snap(goal) is None:
            raise Unreachable(f"goal {tuple(goal)} is not near the navmesh")
        return PointwiseField(self, tuple(float(v) for v in goal))  # type: ignore[arg-type]

    def shortest_path(self, a: Sequence[float], b: Sequence[float]) -> list[Vec3] | None:
        """Navmesh shortest path as waypoints, or ``None`` when no path exists."""
        request = self._find(a, b)
        if request is None:
            return None
        return [(float(p[0]), float(p[1]), float(p[2])) for p in request.points]

    def approach_point(self, obj: SceneObject) -> Vec3 | None:
        """Nearest navigable lattice point within ``config.reach`` of the footprint (see grid)."""
        step, reach = self.config.cell_size, self.config.reach
        bbox = obj.box
        x, _, z = obj.center
        lo = (bbox.min[0], bbox.min[2]) if bbox else (x, z)
        hi = (bbox.max[0], bbox.max[2]) if bbox else (x, z)
        pad = reach + (0.0 if bbox else (obj.radius or 0.0))
        gx, gz = np.meshgrid(
            np.arange(lo[0] - pad, hi[0] + pad + step, step),
            np.arange(lo[1] - pad, hi[1] + pad + step, step),
        )
        xz = np.column_stack([gx.ravel(), gz.ravel()])
        floor = _floor_of(self.scene, obj)
        ok = np.array([self.is_navigable((px, floor, pz)) for px, pz in xz], dtype=bool)
        best = choose_approach(obj, xz[ok], reach, tolerance=step)
        if best is None:
            return None
        px, pz = xz[ok][best]
        return self.snap((px, floor, pz))

    def line_of_sight(self, a: Sequence[float], b: Sequence[float]) -> bool:
        """Whether a straight, non-sliding move ``a → b`` on the navmesh reaches ``b``."""
        end = np.asarray(
            self.pathfinder.try_step_no_sliding(
                np.asarray(a, dtype=np.float32), np.asarray(b, dtype=np.float32)
            )
        )
        target = np.asarray(b, dtype=np.float64)
        return bool(np.hypot(end[0] - target[0], end[2] - target[2]) < 1e-3)

    def visible(self, a: Sequence[float], b: Sequence[float]) -> bool:
        """Navmesh line of sight (in this backend furniture blocks the view too)."""
        return self.line_of_sight(a, b)


def _floor_of(scene: Scene, obj: SceneObject) -> float:
    try:
        return scene.room_of(obj.id).floor_height
    except KeyError:
        return obj.center[1]


class PointwiseField:
    """A distance field answered by one path search per query point (habitat backend)."""

    def __init__(self, navigator: HabitatNavigator, goal: Vec3) -> None:
        self.goal = goal
        self._nav = navigator

    def query(self, points: ArrayLike) -> np.ma.MaskedArray:
        """Distances from points ``(N, 3)`` to the goal; unreachable entries are masked."""
        found = [self._nav.distance(p, self.goal) for p in as_points(points)]
        mask = np.array([d is None for d in found], dtype=bool)
        values = np.array([0.0 if d is None else d for d in found], dtype=np.float64)
        return np.ma.MaskedArray(values, mask=mask)

    def distance(self, point: Sequence[float]) -> float | None:
        """Distance from ``point`` to the goal, or ``None`` when unreachable."""
        return self._nav.distance(point, self.goal)
