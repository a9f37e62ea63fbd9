"""Navigable area: floors, walls cut by doors, obstacles in the body band, erosion, islands."""

from __future__ import annotations

import numpy as np
import pytest
from shapely.geometry import Point

from condvln.errors import ConfigError, ValidationError
from condvln.nav import AgentSpec, GridConfig, build_nav_area
from condvln.nav.area import blocks_agent, footprint_distance
from condvln.nav.grid import GridFrame
from condvln.scene.ground import room_floor
from condvln.scene.model import Door, Room, Scene, SceneObject


def _room(rid: str, x0: float, z0: float, x1: float, z1: float, objects=()) -> Room:
    return Room(
        id=rid,
        room_type="bedroom",
        label="Bedroom",
        objects=tuple(objects),
        floor_polygon=((x0, z0), (x1, z0), (x1, z1), (x0, z1)),
    )


def _box(oid: str, x: float, z: float, sx: float, sz: float, y0: float, y1: float) -> SceneObject:
    return SceneObject(
        id=oid,
        category=oid,
        label=oid,
        center=(x, 0.5 * (y0 + y1), z),
        size=(sx, y1 - y0, sz),
    )


def _two_rooms(doors=()) -> Scene:
    return Scene(
        id="two",
        source="test",
        rooms=(_room("a", 0, 0, 5, 4), _room("b", 5, 0, 9, 4)),
        doors=tuple(doors),
    )


DOOR = Door(id="d", room_ids=("a", "b"), segment=((5.0, 1.5), (5.0, 2.5)))


def test_rooms_joined_by_a_door_form_one_region() -> None:
    area = build_nav_area(_two_rooms([DOOR]))
    assert area.islands == ()
    # Eroded rooms: 4.8 × 3.8 + 3.8 × 3.8 = 32.68 m², plus the door passage (0.8 × 0.2 m).
    assert area.area == pytest.approx(32.68 + 0.16, rel=0.02)
    assert area.navigable([(5.0, 2.0), (5.0, 1.45), (4.95, 1.0)]).tolist() == [True, False, False]


def test_rooms_without_a_door_are_separate_and_the_smaller_is_an_island() -> None:
    area = build_nav_area(_two_rooms())
    assert len(area.islands) == 1
    island = area.islands[0]
    assert island.area == pytest.approx(3.8 * 3.8, rel=0.02)
    assert island.centroid == pytest.approx((7.0, 2.0), abs=0.05)
    assert area.navigable([(2.0, 2.0), (7.0, 2.0)]).tolist() == [True, False]
    assert area.free_any[area.frame.cells([(7.0, 2.0)])[:2]].all()


def test_opening_across_the_whole_boundary_removes_the_wall() -> None:
    opening = Door(id="o", room_ids=("a", "b"), segment=((5.0, 0.0), (5.0, 4.0)), kind="opening")
    area = build_nav_area(_two_rooms([opening]))
    assert area.islands == ()
    assert area.area == pytest.approx(8.8 * 3.8, rel=0.02)
    assert area.navigable([(5.0, 0.5), (5.0, 3.5)]).all()


def test_wall_cut_keeps_perpendicular_walls() -> None:
    opening = Door(id="o", room_ids=("a", "b"), segment=((5.0, 0.0), (5.0, 4.0)), kind="opening")
    scene = Scene(
        id="t",
        source="test",
        rooms=(_room("a", 0, 0, 5, 4), _room("b", 5, 0, 9, 4), _room("c", 0, 4, 9, 6)),
        doors=(opening,),
    )
    area = build_nav_area(scene)
    # Room c touches the opening's end point but has no door: it stays separate.
    assert len(area.islands) == 1
    assert area.walls.distance(Point(5.0, 4.0)) == pytest.approx(0.0, abs=1e-9)


def test_exterior_door_does_not_open_the_house() -> None:
    door = Door(id="out", room_ids=("a",), segment=((0.0, 1.0), (0.0, 2.0)))
    scene = Scene(id="t", source="test", rooms=(_room("a", 0, 0, 5, 4),), doors=(door,))
    area = build_nav_area(scene)
    assert area.navigable([(-0.05, 1.5), (0.05, 1.5), (0.2, 1.5)]).tolist() == [False, False, True]


def test_only_objects_in_the_body_band_block() -> None:
    objects = [
        _box("table", 2.0, 2.0, 1.0, 1.0, 0.0, 0.75),
        _box("rug", 3.5, 2.0, 1.0, 1.0, 0.0, 0.02),
        _box("ceiling_lamp", 1.0, 1.0, 0.5, 0.5, 2.0, 2.4),
        _box("shelf_high", 4.0, 3.0, 0.5, 0.5, 1.6, 2.0),
        SceneObject(id="ball", category="ball", label="Ball", center=(1.0, 0.3, 3.0), radius=0.3),
        SceneObject(id="dot", category="dot", label="Dot", center=(4.0, 0.5, 1.0)),
    ]
    scene = Scene(id="t", source="test", rooms=(_room("a", 0, 0, 5, 4, objects),))
    area = build_nav_area(scene)
    assert [oid for oid, _ in area.obstacles] == ["table", "ball"]
    assert area.navigable([(2.0, 2.0), (2.55, 2.0), (2.65, 2.0), (3.5, 2.0)]).tolist() == [
        False,
        False,
        True,
        True,
    ]


def test_body_band_uses_the_agent_height_and_climb() -> None:
    shelf = _box("shelf", 0, 0, 1, 1, 1.6, 2.0)
    step = _box("step", 0, 0, 1, 1, 0.0, 0.15)
    assert not blocks_agent(shelf, 0.0, AgentSpec())
    assert blocks_agent(shelf, 0.0, AgentSpec(height=1.8))
    assert not blocks_agent(step, 0.0, AgentSpec())
    assert blocks_agent(step, 0.0, AgentSpec(max_climb=0.1))
    assert not blocks_agent(shelf, 0.5, AgentSpec(height=1.0))


def test_door_narrower_than_the_agent_closes() -> None:
    narrow = Door(id="n", room_ids=("a", "b"), segment=((5.0, 1.8), (5.0, 2.15)))
    assert build_nav_area(_two_rooms([narrow])).islands == ()
    assert len(build_nav_area(_two_rooms([narrow]), AgentSpec(radius=0.2)).islands) == 1


def test_room_without_polygon_uses_its_objects_extent() -> None:
    objects = (
        _box("sofa", 1.0, 1.0, 2.0, 1.0, 0.0, 0.8),
        _box("lamp", 4.0, 3.0, 0.4, 0.4, 0.0, 1.6),
    )
    room = Room(id="r", room_type="living room", label="LivingRoom", objects=objects)
    assert room_floor(room).bounds == pytest.approx((0.0, 0.5, 4.2, 3.2))
    area = build_nav_area(Scene(id="t", source="test", rooms=(room,)))
    assert area.navigable([(2.5, 2.0)]).tolist() == [True]


def test_scene_without_floor_geometry_is_rejected() -> None:
    empty = Room(id="r", room_type="bedroom", label="B")
    with pytest.raises(ValidationError, match="no room has floor geometry"):
        build_nav_area(Scene(id="t", source="test", rooms=(empty,)))


def test_footprint_distance_for_box_disc_and_point() -> None:
    ball = SceneObject(id="b", category="ball", label="B", center=(0, 0, 0), radius=0.5)
    dot = SceneObject(id="d", category="dot", label="D", center=(1, 0, 1))
    pts = np.array([(3.0, 0.0), (1.0, 1.0)])
    assert footprint_distance(ball, pts) == pytest.approx([2.5, np.sqrt(2) - 0.5])
    assert footprint_distance(dot, pts) == pytest.approx([np.sqrt(5), 0.0])


def test_agent_and_config_validation() -> None:
    with pytest.raises(ConfigError, match="agent height"):
        AgentSpec(height=0.0)
    with pytest.raises(ConfigError, match="max_climb"):
        AgentSpec(height=0.5, max_climb=0.6)
    with pytest.raises(ConfigError, match="solver"):
        GridConfig(solver="astar")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="cell_size"):
        GridConfig(cell_size=float("nan"))


def test_traverse_finds_every_cell_a_dense_sampling_finds() -> None:
    frame = GridFrame(origin=(-1.0, -2.0), cell_size=0.05, shape=(120, 100))
    rng = np.random.default_rng(3)
    for a, b in rng.uniform((-0.9, -1.9), (3.9, 3.9), size=(200, 2, 2)):
        rows, cols = frame.traverse(a, b)
        exact = set(zip(rows.tolist(), cols.tolist(), strict=True))
        t = np.linspace(0.0, 1.0, 4000)[:, None]
        r, c, _ = frame.cells(a + t * (b - a))
        assert set(zip(r.tolist(), c.tolist(), strict=True)) <= exact
        steps = np.abs(np.diff(rows)) + np.abs(np.diff(cols))
        assert (steps == 1).all() or len(exact) == 1
