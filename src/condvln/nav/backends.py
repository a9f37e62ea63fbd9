"""Pick a navigation backend by name: ``exact``, ``grid`` or ``habitat``.

>>> from condvln.scene.model import Room, Scene
>>> room = Room(id="r", room_type="bedroom", label="B", floor_polygon=((0, 0), (2, 0), (2, 2)))
>>> type(make_navigator(Scene(id="s", source="t", rooms=(room,)), "exact")).__name__
'ExactNavigator'
"""

from __future__ import annotations

from condvln.errors import ConfigError
from condvln.nav.agent import AgentSpec, GridConfig
from condvln.nav.exact import ExactNavigator
from condvln.nav.geodesic import GridNavigator
from condvln.nav.protocol import Navigator
from condvln.scene.model import Scene, Vec3

BACKENDS = ("exact", "grid", "habitat")
"""Backend names :func:`make_navigator` accepts."""


def make_navigator(
    scene: Scene,
    backend: str = "grid",
    *,
    agent: AgentSpec | None = None,
    config: GridConfig | None = None,
    navmesh: str | None = None,
) -> Navigator:
    """Build a navigator for ``scene``: ``backend`` is ``"exact"``, ``"grid"`` or ``"habitat"``.

    Raises:
        ConfigError: On an unknown backend, a habitat backend without ``navmesh``, or a missing
            habitat-sim.
    """
    if backend == "exact":
        return ExactNavigator(scene, agent, config)
    if backend == "grid":
        return GridNavigator(scene, agent, config)
    if backend == "habitat":
        if navmesh is None:
            raise ConfigError("the habitat backend needs a navmesh file")
        from condvln.nav.habitat import HabitatNavigator  # imports habitat-sim when built

        return HabitatNavigator(navmesh, scene, agent, config)
    raise ConfigError(f"unknown navigation backend {backend!r} (known: {', '.join(BACKENDS)})")


def approach_points(navigator: Navigator, scene: Scene) -> dict[str, Vec3 | None]:
    """Approach point of every object of ``scene`` (``None`` for unreachable objects)."""
    return {obj.id: navigator.approach_point(obj) for obj in scene.objects()}
