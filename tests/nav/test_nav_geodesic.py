"""Geodesic distances, fields, paths, snapping, approach points and visibility on analytic layouts."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import shapely
from shapely.geometry import LineString

from condvln.errors import ConfigError
from condvln.nav import (
    AgentSpec,
    GeodesicField,
    GridConfig,
    GridNavigator,
    Navigator,
    Unreachable,
    make_navigator,
)
from condvln.nav.geodesic import FieldStore
from condvln.nav.habitat import HabitatNavigator
from condvln.scene.model import Door, Room, Scene, SceneObject

R = 0.1  # agent radius (VLN-CE default)
CELL = 0.05


def _room(rid: str, x0: float, z0: float, x1: float, z1: float, objects=()) -> Room:
    return Room(
        id=rid,
        room_type="kitchen",
        label="Kitchen",
        objects=tuple(objects),
        floor_polygon=((x0, z0), (x1, z0), (x1, z1), (x0, z1)),
        floor_height=0.25,
    )


TABLE = SceneObject(
    id="table", category="table", label="Table", center=(2.5, 0.6, 2.0), size=(1.0, 0.7, 1.0)
)
DOOR_END_LO, DOOR_END_HI = (5.0, 1.5), (5.0, 2.5)


@pytest.fixture(scope="module")
def empty() -> GridNavigator:
    return GridNavigator(Scene(id="empty", source="test", rooms=(_room("a", 0, 0, 10, 8),)))


@pytest.fixture(scope="module")
def house() -> GridNavigator:
    """Rooms a (west) and b (east) joined by a 1 m door; room c (south) has no door."""
    scene = Scene(
        id="house",
        source="test",
        rooms=(
            _room("a", 0, 0, 5, 4, [TABLE]),
            _room("b", 5, 0, 9, 4),
            _room("c", 0, 4, 9, 6),
        ),
        doors=(Door(id="d", room_ids=("a", "b"), segment=(DOOR_END_LO, DOOR_END_HI)),),
    )
    return GridNavigator(scene)


def _via_door(a: tuple[float, float], b: tuple[float, float]) -> float:
    """Shortest a → b through the door whose end points are inflated inward by the radius."""
    lo = (DOOR_END_LO[0], DOOR_END_LO[1] + R)
    hi = (DOOR_END_HI[0], DOOR_END_HI[1] - R)
    dx = b[0] - a[0]
    z_cross = a[1] + (b[1] - a[1]) * (5.0 - a[0]) / dx
    if lo[1] <= z_cross <= hi[1]:
        return math.dist(a, b)
    corner = lo if z_cross < lo[1] else hi
    return math.dist(a, corner) + math.dist(corner, b)


def _length(path: list) -> float:
    return sum(math.dist(p, q) for p, q in itertools.pairwise(path))


def _assert_path_clear(nav: GridNavigator, path: list) -> None:
    """Sample every 1 cm: inside free grid cells and never closer than r − ½ cell diagonal."""
    blockers = shapely.unary_union([nav.area.walls, *(s for _, s in nav.area.obstacles)])
    outside = shapely.unary_union(nav.area.floors).boundary
    for p, q in itertools.pairwise(path):
        a, b = np.array(p)[[0, 2]], np.array(q)[[0, 2]]
        n = max(int(math.dist(a, b) / 0.01), 1) + 1
        pts = a + np.linspace(0.0, 1.0, n)[:, None] * (b - a)
        assert nav.area.navigable(pts).all()
        clearance = shapely.distance(shapely.points(pts), blockers.union(outside))
        assert clearance.min() >= R - CELL * math.sqrt(0.5) - 1e-9


def test_grid_navigator_satisfies_the_protocols(empty: GridNavigator) -> None:
    assert isinstance(empty, Navigator)
    assert isinstance(empty.distance_field((1.0, 0.0, 1.0)), GeodesicField)


def test_empty_room_geodesic_equals_euclidean_within_one_percent(empty: GridNavigator) -> None:
    rng = np.random.default_rng(7)
    pts = rng.uniform((0.2, 0.2), (9.8, 7.8), size=(60, 2, 2))
    errors = []
    for a, b in pts:
        d = empty.distance((a[0], 0.0, a[1]), (b[0], 0.0, b[1]))
        euclid = math.dist(a, b)
        assert d is not None
        assert abs(d - euclid) <= max(0.01 * euclid, 0.01)
        if euclid > 1.0:
            errors.append(abs(d - euclid) / euclid)
    assert max(errors) < 0.01


def test_empty_room_field_is_within_two_centimetres(empty: GridNavigator) -> None:
    goal = (3.3, 0.0, 4.1)
    rng = np.random.default_rng(2)
    pts = np.column_stack(
        [rng.uniform(0.2, 9.8, 2000), np.zeros(2000), rng.uniform(0.2, 7.8, 2000)]
    )
    values = empty.distance_field(goal).query(pts)
    assert not values.mask.any()
    euclid = np.hypot(pts[:, 0] - goal[0], pts[:, 2] - goal[2])
    assert np.abs(values.data - euclid).max() < 0.02


def test_dijkstra_fallback_is_a_bounded_overestimate(empty: GridNavigator) -> None:
    nav = GridNavigator(empty.scene, config=GridConfig(solver="dijkstra"), area=empty.area)
    for a, b in [((1.0, 1.0), (9.0, 7.0)), ((1.0, 4.0), (9.0, 4.0)), ((2.0, 1.0), (5.0, 7.5))]:
        d = nav.distance((a[0], 0, a[1]), (b[0], 0, b[1]))
        euclid = math.dist(a, b)
        # 16-neighbour moves: exact along 8 directions, at most 2.8 % over in between.
        assert euclid - 0.01 <= d <= euclid * 1.028 + 0.01


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ((2.0, 0.5), (8.0, 0.5)),
        ((1.0, 3.5), (8.5, 0.5)),
        ((4.0, 0.4), (6.0, 3.6)),
        ((0.5, 0.5), (8.5, 3.5)),
        ((3.6, 2.0), (8.0, 2.0)),
    ],
)
def test_door_geodesic_matches_the_analytic_length(
    house: GridNavigator, a: tuple[float, float], b: tuple[float, float]
) -> None:
    expected = _via_door(a, b)
    pa, pb = (a[0], 0, a[1]), (b[0], 0, b[1])
    assert house.distance(pa, pb) == pytest.approx(expected, rel=0.02)
    assert house.distance_field(pb).distance(pa) == pytest.approx(expected, rel=0.02)
    path = house.shortest_path(pa, pb)
    assert _length(path) == pytest.approx(house.distance(pa, pb), abs=1e-9)
    assert len(path) <= 4
    _assert_path_clear(house, path)


def test_point_behind_a_wall_without_door_is_unreachable(house: GridNavigator) -> None:
    a, hidden = (2.0, 0.0, 1.0), (2.0, 0.0, 5.0)
    assert house.distance(a, hidden) is None
    assert house.distance(hidden, a) is None
    assert house.shortest_path(a, hidden) is None
    assert not house.is_navigable(hidden)
    with pytest.raises(Unreachable, match="not on the navigable area"):
        house.distance_field(hidden)
    result = house.distance_field(a).query([hidden, (3.0, 0.0, 1.0)])
    assert result.mask.tolist() == [True, False]
    assert np.isfinite(result.data).all()


def test_field_query_is_vectorised_and_consistent(house: GridNavigator) -> None:
    goal = (8.0, 0.0, 3.0)
    field = house.distance_field(goal)
    assert house.distance_field(goal) is field  # cached
    rng = np.random.default_rng(11)
    pts = np.column_stack([rng.uniform(0, 9, 500), np.zeros(500), rng.uniform(0, 6, 500)])
    result = field.query(pts)
    assert result.shape == (500,)
    assert np.isfinite(result.data).all()
    one_by_one = [field.distance(p) for p in pts[:40]]
    for d, r, m in zip(one_by_one, result.data[:40], result.mask[:40], strict=True):
        assert (d is None) == bool(m)
        assert d is None or d == pytest.approx(r, abs=1e-12)
    in_c = pts[:, 2] > 4.1
    assert result.mask[in_c].all()


def test_off_area_points_snap_within_max_snap(house: GridNavigator) -> None:
    inside_table = (2.5, 0.0, 2.0)  # 0.5 m + r from free space: beyond the default 0.5 m
    near_table = (2.5, 0.0, 2.45)
    assert not house.is_navigable(inside_table)
    assert house.distance(near_table, (1.0, 0.0, 1.0)) is not None
    assert house.distance(inside_table, (1.0, 0.0, 1.0)) is None
    snapped = house.snap(inside_table)
    assert house.is_navigable(snapped)
    assert snapped[1] == 0.25  # the room's floor height
    assert house.snap((1.0, 7.0, 1.0)) == (1.0, 0.25, 1.0)


def test_cache_is_lru_bounded(house: GridNavigator) -> None:
    nav = GridNavigator(house.scene, config=GridConfig(cache_size=2), area=house.area)
    f1 = nav.distance_field((1.0, 0.0, 1.0))
    nav.distance_field((1.5, 0.0, 1.0))
    assert nav.distance_field((1.0, 0.0, 1.0)) is f1
    nav.distance_field((2.0, 0.0, 1.0))
    nav.distance_field((2.5, 0.0, 1.0))
    assert nav.distance_field((1.0, 0.0, 1.0)) is not f1


def test_a_field_not_kept_leaves_the_cache_as_it_was(house: GridNavigator) -> None:
    nav = GridNavigator(house.scene, config=GridConfig(cache_size=2), area=house.area)
    kept = nav.distance_field((1.0, 0.0, 1.0))
    once = nav.distance_field((2.0, 0.0, 1.0), keep=False)
    assert list(nav._cache) == [(1.0, 1.0)]
    assert np.array_equal(once.values, nav.distance_field((2.0, 0.0, 1.0)).values)
    assert nav.distance_field((1.0, 0.0, 1.0), keep=False) is kept  # a kept field still answers


def test_a_field_store_keeps_every_field_under_its_byte_limit(house: GridNavigator) -> None:
    one = house.distance_field((1.0, 0.0, 1.0)).values.size * 9  # float64 values + bool mask
    store = FieldStore(limit=2 * one)
    nav = GridNavigator(house.scene, area=house.area, store=store)
    other = GridNavigator(house.scene, area=house.area, store=store)
    goal = nav.distance_field((1.0, 0.0, 1.0))
    assert np.array_equal(goal.values, house.distance_field((1.0, 0.0, 1.0)).values)
    assert np.array_equal(goal.reached, house.distance_field((1.0, 0.0, 1.0)).reached)
    here = nav.distance_field((2.0, 0.0, 1.0), keep=False)  # kept too, by its exact point
    assert nav.distance_field((2.0, 0.0, 1.0), keep=False) is here
    assert nav.distance_field((2.0004, 0.0, 1.0), keep=False) is not here  # not rounded
    assert nav.distance_field((2.0, 0.0, 1.0)) is not here  # a goal's key is its own
    assert len(store) == 2 and store.used == 2 * one  # the third pushed out the oldest
    assert nav.distance_field((1.0, 0.0, 1.0)) is not goal
    assert other.distance_field((1.0, 0.0, 1.0)) is not nav.distance_field((1.0, 0.0, 1.0))
    assert len(store) == 2 and store.used == 2 * one
    store.discard(nav)
    assert len(store) == 1 and store.used == one
    # a cold field (from where an agent stood) finds no room in a full store: it pushes out
    # nothing, and is kept only while there is room
    full = GridNavigator(house.scene, area=house.area, store=FieldStore(limit=2 * one))
    a, b = full.distance_field((1.0, 0.0, 1.0)), full.distance_field((1.5, 0.0, 1.0))
    c = full.distance_field((2.5, 0.0, 1.0), keep=False)
    assert full.distance_field((2.5, 0.0, 1.0), keep=False) is not c
    assert full.distance_field((1.0, 0.0, 1.0)) is a and full.distance_field((1.5, 0.0, 1.0)) is b
    tiny = FieldStore(limit=1)  # the newest stays whatever its size
    GridNavigator(house.scene, area=house.area, store=tiny).distance_field((1.0, 0.0, 1.0))
    assert len(tiny) == 1
    with pytest.raises(ValueError, match="at least 0"):
        FieldStore(limit=-1)


@pytest.mark.parametrize(
    "seed", [(1.0, 1.0), (2.4, 2.9), (5.0, 2.0), (0.3, 0.27), (8.71, 3.76), (8.7, 0.3)]
)
def test_the_seed_disc_level_set_near_the_seed_solves_the_full_field(
    house: GridNavigator, seed: tuple[float, float]
) -> None:
    # The level set is the distance to the seed only near its disc (1.0 beyond); fast
    # marching must give the field of the distance at every cell, bit for bit, also where
    # the window around the seed meets the grid's border (the last two seeds).
    import skfmm

    from condvln.nav.geodesic import _seed_phi

    area, xy = house.area, np.array(seed)
    cell, rho = area.frame.cell_size, min(2.0 * area.frame.cell_size, area.agent.radius)
    xs, zs = area.frame.all_centres()
    exact = np.hypot(xs - xy[0], zs - xy[1]) - rho
    near = _seed_phi(area, xy, rho)
    assert np.array_equal(near > 0, exact > 0) and not np.array_equal(near, exact)
    fields = [
        skfmm.distance(np.ma.MaskedArray(phi, mask=~area.free), dx=cell, order=2)
        for phi in (exact, near)
    ]
    assert np.array_equal(fields[0].mask, fields[1].mask)
    assert np.array_equal(fields[0].data, fields[1].data)


def test_fields_are_deterministic(house: GridNavigator) -> None:
    again = GridNavigator(house.scene)
    goal = (7.5, 0.0, 1.0)
    assert np.array_equal(again.distance_field(goal).values, house.distance_field(goal).values)


def test_paths_around_an_obstacle_are_any_angle_and_clear(house: GridNavigator) -> None:
    a, b = (1.2, 0.0, 2.0), (3.8, 0.0, 2.05)
    path = house.shortest_path(a, b)
    assert path[0] == (1.2, 0.25, 2.0) and path[-1] == (3.8, 0.25, 2.05)
    assert 3 <= len(path) <= 5
    assert all(p[1] == 0.25 for p in path)
    _assert_path_clear(house, path)
    # The any-angle path and the fast-marching field agree.
    assert _length(path) == pytest.approx(house.distance_field(b).distance(a), rel=0.03)
    assert _length(path) > math.dist((1.2, 2.0), (3.8, 2.05)) + 0.3


def test_random_paths_in_the_house_stay_clear(house: GridNavigator) -> None:
    rng = np.random.default_rng(5)
    pts = rng.uniform((0.2, 0.2), (8.8, 3.8), size=(30, 2, 2))
    checked = 0
    for a, b in pts:
        pa, pb = (a[0], 0.0, a[1]), (b[0], 0.0, b[1])
        if not (house.is_navigable(pa) and house.is_navigable(pb)):
            continue
        path = house.shortest_path(pa, pb)
        _assert_path_clear(house, path)
        field_value = house.distance_field(pb).distance(pa)
        assert _length(path) == pytest.approx(field_value, rel=0.03, abs=0.02)
        checked += 1
    assert checked >= 20


def test_approach_point_is_the_nearest_navigable_point(house: GridNavigator) -> None:
    point = house.approach_point(TABLE)
    assert house.is_navigable(point)
    gap = LineString([point[::2], point[::2]]).distance(shapely.box(2.0, 1.5, 3.0, 2.5))
    assert R <= gap <= R + CELL
    # Ties around the table go to the point nearest its centre: the middle of a side.
    assert min(abs(point[0] - 2.5), abs(point[2] - 2.0)) < CELL


def test_object_in_a_closed_room_is_unreachable(house: GridNavigator) -> None:
    hidden = SceneObject(
        id="chest", category="chest", label="Chest", center=(2.0, 0.3, 5.3), size=(0.5, 0.6, 0.5)
    )
    assert house.approach_point(hidden) is None
    far = GridNavigator(house.scene, config=GridConfig(reach=3.0), area=house.area)
    assert far.approach_point(hidden) is not None


def test_line_of_sight_and_visibility(house: GridNavigator) -> None:
    west, east = (1.2, 0.0, 2.0), (3.8, 0.0, 2.0)
    assert not house.line_of_sight(west, east)  # the table blocks the agent
    assert house.visible(west, east)  # … but not the view
    room_b, room_c = (7.0, 0.0, 2.0), (7.0, 0.0, 5.0)
    assert not house.visible(room_b, room_c)  # wall without a door
    assert house.visible((3.0, 0.0, 2.0), (7.0, 0.0, 2.0))  # straight through the door
    assert not house.visible((3.0, 0.0, 0.5), (7.0, 0.0, 0.5))
    assert house.line_of_sight((1.0, 0.0, 0.5), (4.0, 0.0, 0.5))


def test_larger_agent_gets_longer_paths(house: GridNavigator) -> None:
    big = GridNavigator(house.scene, agent=AgentSpec(radius=0.3))
    a, b = (2.0, 0.0, 0.5), (8.0, 0.0, 0.5)
    # Analytic: around the door end inflated by 0.3 m instead of 0.1 m.
    expected = 2.0 * math.dist((2.0, 0.5), (5.0, 1.5 + 0.3))
    assert big.distance(a, b) == pytest.approx(expected, rel=0.02)
    assert big.distance(a, b) > house.distance(a, b) + 0.1


def test_habitat_backend_without_habitat_sim_is_a_config_error(house: GridNavigator) -> None:
    with pytest.raises(ConfigError) as info:
        HabitatNavigator("scene.navmesh", house.scene)
    assert str(info.value) == (
        "habitat-sim is not installed (install it with: conda install habitat-sim"
        " -c conda-forge -c aihabitat); use the built-in grid backend"
    )
    with pytest.raises(ConfigError, match="habitat-sim is not installed"):
        make_navigator(house.scene, "habitat", navmesh="scene.navmesh")
    with pytest.raises(ConfigError, match="needs a navmesh"):
        make_navigator(house.scene, "habitat")
    with pytest.raises(ConfigError, match="unknown navigation backend"):
        make_navigator(house.scene, "recast")
    assert isinstance(make_navigator(house.scene), GridNavigator)


def test_bad_query_shapes_are_rejected(house: GridNavigator) -> None:
    with pytest.raises(ValueError, match=r"\(N, 3\)"):
        house.distance_field((1.0, 0.0, 1.0)).query([(1.0, 1.0)])
    with pytest.raises(ValueError, match="finite"):
        house.is_navigable((float("nan"), 0.0, 1.0))


def test_dijkstra_is_used_without_scikit_fmm(
    house: GridNavigator, monkeypatch: pytest.MonkeyPatch
) -> None:
    import condvln.nav.geodesic as geodesic

    monkeypatch.setattr(geodesic, "HAVE_SKFMM", False)
    nav = GridNavigator(house.scene, area=house.area)
    assert nav.solver == "dijkstra"
    a, b = (2.0, 0.0, 0.5), (8.0, 0.0, 0.5)
    expected = _via_door((2.0, 0.5), (8.0, 0.5))
    assert expected - 0.01 <= nav.distance(a, b) <= expected * 1.03
    _assert_path_clear(nav, nav.shortest_path(a, b))
