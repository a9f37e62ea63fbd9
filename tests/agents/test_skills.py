"""The skill agents' path following, in a small hand-built room."""

from __future__ import annotations

import itertools
import math

import pytest

from condvln.agents.base import EpisodeView
from condvln.agents.skills import SkillAgent
from condvln.scene.model import Room, Scene, SceneObject
from condvln.sim import ObservationProtocol
from condvln.sim.simulator import FORWARD, Simulator


def _object(name: str, center: tuple, size: tuple) -> SceneObject:
    return SceneObject(id=name, category=name, label=name, center=center, size=size)


def test_go_to_does_not_walk_back_to_a_corner_it_stepped_past() -> None:
    # The path from the start bends at a corner just north-east of the armchair; the lattice
    # step lands 0.128 m past it (the arrival tolerance is half a step, 0.125 m). The agent
    # used to turn round and walk back to that corner, then turn again: 45 actions.
    room = Room(
        id="r",
        room_type="living room",
        label="Living room",
        floor_polygon=((0, 0), (5.2, 0), (5.2, 4.2), (0, 4.2)),
        objects=(
            _object("armchair", (3.345, 0.44, 1.144), (0.9, 0.88, 0.88)),
            _object("house plant", (4.99, 0.45, 1.728), (0.4, 0.9, 0.4)),
            _object("floor lamp", (4.99, 0.85, 2.128), (0.4, 1.7, 0.4)),
            _object("sideboard", (4.05, 0.425, 0.235), (1.6, 0.85, 0.45)),
        ),
    )
    sim = Simulator(Scene(id="s", source="test", rooms=(room,)), ObservationProtocol())
    start, goal = (2.6615411981116512, 0.0, 1.7883178934082868), (4.975, 0.0, 1.425)
    agent = SkillAgent()
    agent.reset(EpisodeView(1, "s", "go", 100, sim.protocol, sim.map_view(), 0))
    agent.obs = sim.reset(start, -math.pi / 2, instruction="go", step_budget=100)
    assert len(sim.map_view().shortest_path(start, goal)) == 4  # start, corner, bend, goal

    walk = agent.go_to(goal)
    actions, remaining = [], [sim.map_view().distance(start, goal)]
    while (action := next(walk, None)) is not None:
        actions.append(action)
        agent.obs = sim.step(action)
        if action == FORWARD:
            remaining.append(sim.map_view().distance(agent.position, goal))
    assert math.dist(agent.position, goal) <= 0.125
    assert all(b < a for a, b in itertools.pairwise(remaining))  # every step gains ground
    assert len(actions) <= 20


def test_flat_detections_are_remembered_and_approached() -> None:
    # iTHOR boxes may have no extent on an axis (a rug, a picture); a detection carries that
    # extent, and the agent used to fail the episode rebuilding an object from it.
    from condvln.agents.skills import Remembered, _as_object

    rug = (2.0, 0.0, 2.0), (1.0, 0.0, 0.8)
    room = Room(
        id="r",
        room_type="living room",
        label="Living room",
        floor_polygon=((0, 0), (4, 0), (4, 4), (0, 4)),
        objects=(_object("sofa", (1.0, 0.4, 3.5), (1.8, 0.8, 0.8)),),
    )
    sim = Simulator(Scene(id="s", source="test", rooms=(room,)), ObservationProtocol())
    remembered = _as_object(Remembered("rug", *rug, room=0))
    assert remembered.box is not None and remembered.box.size == pytest.approx((1.0, 0.0, 0.8))
    point = sim.map_view().approach(*rug)
    assert point is not None and math.dist(point, rug[0]) <= 1.5


def _open_room() -> Simulator:
    room = Room(
        id="r", room_type="bedroom", label="Bedroom", floor_polygon=((0, 0), (6, 0), (6, 5), (0, 5))
    )
    return Simulator(Scene(id="s", source="test", rooms=(room,)), ObservationProtocol())


def test_exploring_from_the_agents_position_keeps_no_field_of_it() -> None:
    # The field from where the agent stands answers one question; kept, it would push the
    # fields of waypoints and goals (solved again for every path to them) out of the cache.
    from condvln.agents.skills import Explorer

    sim = _open_room()
    explorer = Explorer(sim.map_view())
    explorer.scanned.add(0)  # the room is scanned: the coverage points are next
    point, room_index = explorer.next_target((0.7, 0.0, 0.6))
    assert room_index is None and math.dist(point, (0.7, 0.0, 0.6)) < 2.0
    assert list(sim.navigator._cache) == []


def test_the_nearest_target_is_the_smallest_geodesic_distance() -> None:
    view = _open_room().map_view()
    here = (0.7, 0.0, 0.6)
    targets = [(5.0, 0.0, 4.0), (9.0, 0.0, 1.0), (1.5, 0.0, 2.5), (3.0, 0.0, 0.6)]
    distances = view.distances_from(here, targets)
    assert distances[1] is None  # outside the room
    assert view.nearest(here, targets) == 2 == min((d, i) for i, d in enumerate(distances) if d)[1]
    assert view.nearest(here, targets[1:2]) is None
    assert view.nearest(here, targets[3:]) == 0  # one target: reachable without a field
    assert view.nearest((9.0, 0.0, 1.0), targets) is None  # the agent is off the map
    assert view.nearest(here, [targets[2], targets[2]]) == 0  # ties: the first
    assert view.nearest(here, []) is None
