"""Navigation geometry: navigable area, geodesic distances, shortest paths, approach points.

The built-in backend works on an occupancy grid (no habitat-sim needed)::

    nav = GridNavigator(scene)
    nav.distance(start, goal)          # metres, or None when unreachable
    nav.shortest_path(start, goal)     # [(x, y, z), ...] any-angle waypoints, or None
    nav.approach_point(obj)            # where the agent arrives at an object, or None

:class:`~condvln.nav.habitat.HabitatNavigator` offers the same interface on habitat-sim.
The top-down map lives in :mod:`condvln.nav.render` (imports matplotlib).
"""

from condvln.nav.agent import AgentSpec, GridConfig
from condvln.nav.area import Island, NavArea, build_nav_area
from condvln.nav.geodesic import (
    GeodesicField,
    GridField,
    GridNavigator,
    Navigator,
    Unreachable,
    approach_points,
    make_navigator,
)

__all__ = [
    "AgentSpec",
    "GeodesicField",
    "GridConfig",
    "GridField",
    "GridNavigator",
    "Island",
    "NavArea",
    "Navigator",
    "Unreachable",
    "approach_points",
    "build_nav_area",
    "make_navigator",
]
