"""Navigation geometry: navigable area, geodesic distances, shortest paths, approach points.

Three backends implement one interface (:class:`~condvln.nav.protocol.Navigator`):

* :class:`ExactNavigator` — exact any-angle geodesics on the navigable polygon (visibility
  graph of its reflex vertices). The geodesic of the data and the metrics: reference paths,
  ``info.geodesic_distance``, NE / success / oracle / subgoals and SPL's ℓ.
* :class:`GridNavigator` — the 5 cm occupancy grid with fast-marching fields; the simulator
  moves on it and agents plan on it.
* :class:`~condvln.nav.habitat.HabitatNavigator` — habitat-sim's navmesh (optional).

::

    nav = ExactNavigator(scene)
    nav.distance(start, goal)          # metres, or None when unreachable
    nav.shortest_path(start, goal)     # [(x, y, z), ...] waypoints, or None
    nav.distance_field(goal).query(points)   # many points, one goal
    nav.approach_point(obj)            # where the agent arrives at an object, or None

The top-down map lives in :mod:`condvln.nav.render` (imports matplotlib).
"""

from condvln.nav.agent import AgentSpec, GridConfig
from condvln.nav.area import Island, NavArea, build_nav_area
from condvln.nav.backends import BACKENDS, approach_points, make_navigator
from condvln.nav.exact import ExactField, ExactNavigator
from condvln.nav.geodesic import GridField, GridNavigator
from condvln.nav.protocol import GeodesicField, Navigator, Unreachable

__all__ = [
    "BACKENDS",
    "AgentSpec",
    "ExactField",
    "ExactNavigator",
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
