"""Simulator: action geometry, collisions, budget, detections, noise, protocol."""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
import pytest

from condvln.errors import ConfigError
from condvln.nav import GridNavigator
from condvln.scene.model import Door, Room, Scene, SceneObject
from condvln.sim import (
    FORWARD,
    STOP,
    TURN,
    TURN_LEFT,
    TURN_RIGHT,
    EpisodeOver,
    MapView,
    Observation,
    ObservationProtocol,
    Simulator,
    parse_protocol,
)
from condvln.sim.protocol import Detection


def _obj(oid: str, category: str, x: float, z: float, size: float = 0.3) -> SceneObject:
    return SceneObject(
        id=oid, category=category, label=category, center=(x, 0.5, z), size=(size, 1.0, size)
    )


def hall_scene() -> Scene:
    """Hall x 0–10, z 0–10 with a sofa in the middle; a closed study x 10–14 behind a wall."""
    hall = Room(
        id="hall",
        room_type="living room",
        label="Hall",
        floor_polygon=((0, 0), (10, 0), (10, 10), (0, 10)),
        objects=(
            _obj("ahead", "lamp", 5.0, 3.0),  # 2 m straight ahead of (5, 5) facing north
            _obj("left", "vase", 3.5, 3.5),  # 45° to the left, inside the 90° view
            _obj("wide", "plant", 2.0, 3.5),  # ~63° to the left: outside the view
            _obj("behind", "chair", 5.0, 7.0),
            _obj("far", "clock", 5.0, 0.05, 0.05),  # 4.95 m ahead, in range
            _obj("sofa", "sofa", 8.0, 5.0, 1.0),
        ),
    )
    study = Room(
        id="study",
        room_type="office",
        label="Study",
        floor_polygon=((10, 0), (14, 0), (14, 10), (10, 10)),
        objects=(_obj("desk", "desk", 11.0, 3.0),),
    )
    return Scene(id="hall", source="test", rooms=(hall, study))


@pytest.fixture(scope="module")
def hall() -> Simulator:
    return Simulator(hall_scene())


def test_forward_and_turn_geometry_are_exact(hall: Simulator) -> None:
    obs = hall.reset((5.0, 0.0, 5.0), 0.0, instruction="x", step_budget=100)
    assert obs.position == (5.0, 0.0, 5.0) and obs.heading == 0.0
    obs = hall.step(FORWARD)
    assert obs.position == pytest.approx((5.0, 0.0, 4.75), abs=1e-12)
    obs = hall.step(TURN_LEFT)
    assert obs.heading == pytest.approx(TURN, abs=1e-12)
    obs = hall.step(FORWARD)
    assert obs.position[0] == pytest.approx(5.0 - 0.25 * math.sin(TURN), abs=1e-12)
    assert obs.position[2] == pytest.approx(4.75 - 0.25 * math.cos(TURN), abs=1e-12)
    obs = hall.step(TURN_RIGHT)
    obs = hall.step(TURN_RIGHT)
    assert obs.heading == pytest.approx(-TURN, abs=1e-12)
    for _ in range(24):
        obs = hall.step(TURN_LEFT)
    assert obs.heading == pytest.approx(-TURN, abs=1e-12)
    traj = hall.trajectory()
    assert len(traj.positions) == len(traj.actions) + 1 == len(traj.headings)


def test_turning_left_faces_minus_x(hall: Simulator) -> None:
    hall.reset((5.0, 0.0, 5.0), 0.0, instruction="x")
    for _ in range(6):
        obs = hall.step(TURN_LEFT)
    obs = hall.step(FORWARD)
    assert obs.position == pytest.approx((4.75, 0.0, 5.0), abs=1e-12)


def test_walls_and_furniture_stop_the_agent(hall: Simulator) -> None:
    hall.reset((9.5, 0.0, 2.0), -math.pi / 2, instruction="x", step_budget=50)  # facing +X
    for _ in range(20):
        obs = hall.step(FORWARD)
    assert obs.collided
    assert obs.position[0] < 10.0 - hall.navigator.agent.radius + 0.05
    hall.reset((6.5, 0.0, 5.0), -math.pi / 2, instruction="x", step_budget=50)  # sofa ahead
    for _ in range(10):
        obs = hall.step(FORWARD)
    assert obs.position[0] < 7.5 - hall.navigator.agent.radius + 0.05


def test_blocked_move_slides_along_the_wall(hall: Simulator) -> None:
    hall.reset(
        (9.8, 0.0, 5.0), -math.radians(60.0), instruction="x"
    )  # towards the wall, north-east
    obs = hall.step(FORWARD)
    assert obs.collided
    assert obs.position[2] < 5.0 - 0.1  # slid north along the wall
    assert obs.position[0] == pytest.approx(9.8)


def _dense_clear(nav: GridNavigator, a: tuple, b: tuple) -> bool:
    t = np.linspace(0.0, 1.0, 101)[:, None]
    xz = (1 - t) * np.array([a[0], a[2]]) + t * np.array([b[0], b[2]])
    return bool(nav.area.navigable(xz).all())


def test_random_walk_never_crosses_walls_or_furniture(procedural_scene: Scene) -> None:
    sim = Simulator(procedural_scene)
    nav = sim.navigator
    rows, cols = np.nonzero(nav.area.free)
    start = nav.point(*nav.area.frame.centres(rows[:1], cols[:1])[0])
    sim.reset(start, 0.3, instruction="x", step_budget=3000)
    rng = np.random.default_rng(1)
    for action in rng.choice([1, 2, 3], p=[0.8, 0.1, 0.1], size=2999):
        sim.step(int(action))
    positions = sim.trajectory().positions
    assert sum(a != b for a, b in itertools.pairwise(positions)) > 500
    assert all(_dense_clear(nav, a, b) for a, b in itertools.pairwise(positions))


def test_budget_ends_the_episode(hall: Simulator) -> None:
    hall.reset((5.0, 0.0, 5.0), 0.0, instruction="x", step_budget=3)
    for _ in range(3):
        assert not hall.done
        hall.step(TURN_LEFT)
    assert hall.done and not hall.trajectory().stop
    with pytest.raises(EpisodeOver):
        hall.step(FORWARD)
    hall.reset((5.0, 0.0, 5.0), 0.0, instruction="x", step_budget=3)
    hall.step(STOP)
    assert hall.done and hall.trajectory().stop and hall.steps == 1
    with pytest.raises(ConfigError):
        hall.reset((5.0, 0.0, 5.0), 0.0, instruction="x", step_budget=0)


def test_detections_respect_fov_range_and_walls(hall: Simulator) -> None:
    obs = hall.reset((5.0, 0.0, 5.0), 0.0, instruction="go", step_budget=10)
    seen = {d.category: d for d in obs.detections}
    assert set(seen) == {"lamp", "vase", "clock"}
    assert seen["lamp"].depth == pytest.approx(2.0) and seen["lamp"].bearing == pytest.approx(0.0)
    assert seen["vase"].bearing == pytest.approx(math.pi / 4)  # + = to the left
    assert seen["lamp"].position == (5.0, 0.5, 3.0)
    assert seen["lamp"].size == pytest.approx((0.3, 1.0, 0.3))
    assert obs.room_type == "living room"


def test_panoramic_sees_all_around_but_not_through_walls() -> None:
    sim = Simulator(hall_scene(), ObservationProtocol(panoramic=True, view_range=20.0))
    obs = sim.reset((5.0, 0.0, 5.0), 0.0, instruction="go")
    assert {d.category for d in obs.detections} == {
        "lamp",
        "vase",
        "plant",
        "chair",
        "clock",
        "sofa",
    }
    behind = next(d for d in obs.detections if d.category == "chair")
    assert abs(behind.bearing) == pytest.approx(math.pi)


def test_doors_let_the_view_through() -> None:
    scene = hall_scene()
    door = Door(id="d", room_ids=("hall", "study"), segment=((10.0, 2.5), (10.0, 3.5)))
    sim = Simulator(dataclasses.replace(scene, doors=(door,)), {"view_range": 10.0})
    obs = sim.reset((7.0, 0.0, 3.0), -math.pi / 2, instruction="go")
    assert "desk" in {d.category for d in obs.detections}


def test_protocol_switches_hide_pose_room_and_boxes() -> None:
    protocol = ObservationProtocol(pose=False, room_type=False, boxes=False, map_access=False)
    sim = Simulator(hall_scene(), protocol)
    obs = sim.reset((5.0, 0.0, 5.0), 0.0, instruction="go")
    assert obs.position is None and obs.heading is None and obs.room_type is None
    assert all(d.position is None and d.size is None for d in obs.detections)
    with pytest.raises(ConfigError, match="fov_deg"):
        parse_protocol({"fov_deg": 0})
    with pytest.raises(ConfigError, match="unknown_field"):
        Simulator(hall_scene(), {"unknown_field": 1})


def _run(sim: Simulator, seed: int, steps: int = 60) -> list[Observation]:
    out = [sim.reset((5.0, 0.0, 5.0), 0.0, instruction="go", step_budget=200, seed=seed)]
    out += [sim.step(TURN_LEFT) for _ in range(steps)]
    return out


def test_noise_is_seeded_and_absent_at_zero_rates(hall: Simulator) -> None:
    clean = _run(hall, 0)
    assert _run(Simulator(hall_scene(), {"miss_rate": 0.0}), 5) == clean
    noisy_protocol = {"miss_rate": 0.3, "confusion_rate": 0.3, "false_detection_rate": 0.5}
    noisy = Simulator(hall_scene(), noisy_protocol)
    first, again, other = _run(noisy, 7), _run(noisy, 7), _run(noisy, 8)
    assert first == again
    assert first != other and first != clean
    truth = {(d.position, d.category) for o in clean for d in o.detections}
    noisy_pairs = {(d.position, d.category) for o in first for d in o.detections}
    assert noisy_pairs - truth  # confusions or false detections
    blind = _run(Simulator(hall_scene(), {"miss_rate": 1.0}), 0)
    assert all(not o.detections for o in blind)


def test_confusion_swaps_for_another_scene_category(hall: Simulator) -> None:
    sim = Simulator(hall_scene(), {"confusion_rate": 1.0})
    obs = sim.reset((5.0, 0.0, 5.0), 0.0, instruction="go", seed=3)
    truth = {
        d.position: d.category
        for d in hall.reset((5.0, 0.0, 5.0), 0.0, instruction="go").detections
    }
    categories = {o.category for o in hall_scene().objects()}
    assert obs.detections
    for det in obs.detections:
        assert det.category != truth[det.position] and det.category in categories


def test_observation_and_detection_carry_no_labels() -> None:
    forbidden = {"goal", "goals", "reference_path", "info", "branch", "subgoals", "answer"}
    for cls in (Observation, Detection):
        names = {f.name for f in dataclasses.fields(cls)}
        assert not any(word in name for name in names for word in forbidden)


def test_map_view_exposes_geometry_only(hall: Simulator) -> None:
    view = hall.map_view()
    assert isinstance(view, MapView)
    public = {n for n in dir(view) if not n.startswith("_")}
    assert not public & {"scene", "objects", "navigator", "room_types"}
    assert view.n_rooms == 2 and view.room_index((5.0, 0.0, 5.0)) == 0
    points = view.exploration_waypoints()
    assert points and all(view.is_navigable(p) for p in points)
    assert view.approach((8.0, 0.5, 5.0), (1.0, 1.0, 1.0)) is not None
    dists = view.distances_from((5.0, 0.0, 5.0), [(5.0, 0.0, 6.0), (12.0, 0.0, 5.0)])
    assert dists[0] == pytest.approx(1.0, abs=0.05) and dists[1] is None
    # coverage waypoints are computed once per scene and spacing; callers get their own list
    first = view.coverage_waypoints()
    first.clear()
    assert view.coverage_waypoints() == MapView(hall.navigator).coverage_waypoints() != []
    assert view.coverage_waypoints(1.0) == MapView(hall.navigator).coverage_waypoints(1.0)
    assert len(view.coverage_waypoints(1.0)) > len(view.coverage_waypoints())


def test_map_view_room_index_matches_the_grid_cells(hall: Simulator) -> None:
    """The scalar room lookup agrees with the grid's own cell rule (``GridFrame.cells``) on
    random points, points on cell edges and points outside the grid."""
    view = hall.map_view()
    area = hall.navigator.area
    frame = area.frame
    rng = np.random.default_rng(5)
    size = np.array([frame.shape[1], frame.shape[0]]) * frame.cell_size
    points = rng.uniform(
        np.array(frame.origin) - 1.0, np.array(frame.origin) + size + 1.0, (3000, 2)
    )
    edges = (
        np.array(frame.origin) + rng.integers(-2, max(frame.shape) + 2, (1000, 2)) * frame.cell_size
    )
    seen = set()
    for x, z in np.vstack([points, edges]):
        rows, cols, inside = frame.cells(np.array([[x, z]]))
        expected = int(area.room_index[rows[0], cols[0]]) if inside[0] else -1
        assert view.room_index((float(x), 0.0, float(z))) == expected
        seen.add(expected)
    assert {-1, 0, 1} <= seen
