"""Tests of the ``procedural`` scene source: 1,000 houses checked property by property.

The checks here are written independently of the generator: they read only the ``Scene``.
"""

from __future__ import annotations

import math
import multiprocessing
from collections.abc import Iterator

import numpy as np
import orjson
import pytest
from scipy import ndimage

from condvln.errors import CondVLNError, ConfigError
from condvln.nav import GridNavigator
from condvln.scene.catalogue import load_catalogue
from condvln.scene.labels import normalize_category
from condvln.scene.model import Room, Scene, SceneObject
from condvln.scene.serialize import scene_from_dict, scene_to_json
from condvln.scene.sources import SOURCES
from condvln.scene.sources import load as load_source
from condvln.scene.sources.procedural import generate_house, load

SEEDS = range(1000)
NAV_SEEDS = range(200)
TOL = 1e-6
AGENT_RADIUS = 0.1
AGENT_HEIGHT = 1.5
MAX_CLIMB = 0.2
CELL = 0.05
FLOOR_REACH = 0.2
REACH = 0.9
DOOR_DEPTH = 0.225
CLEARANCE = 0.9


@pytest.fixture(scope="module")
def houses() -> list[Scene]:
    return [generate_house(seed) for seed in SEEDS]


# --- helpers ----------------------------------------------------------------------------------


def _bounds(room: Room) -> tuple[float, float, float, float]:
    assert room.floor_polygon is not None
    xs = [p[0] for p in room.floor_polygon]
    zs = [p[1] for p in room.floor_polygon]
    return min(xs), min(zs), max(xs), max(zs)


def _boxes(objects: list[SceneObject]) -> tuple[np.ndarray, np.ndarray]:
    """``(n, 3)`` min and max corners of the objects' boxes."""
    lo = np.array([o.box.min for o in objects], dtype=float).reshape(-1, 3)
    hi = np.array([o.box.max for o in objects], dtype=float).reshape(-1, 3)
    return lo, hi


def _overlapping_pairs(lo: np.ndarray, hi: np.ndarray) -> list[tuple[int, int]]:
    """Pairs ``i < j`` whose boxes intersect by more than ``TOL`` on every axis."""
    inter = np.minimum(hi[:, None, :], hi[None, :, :]) - np.maximum(lo[:, None, :], lo[None, :, :])
    hit = np.triu(np.all(inter > TOL, axis=2), k=1)
    return [(int(i), int(j)) for i, j in zip(*np.nonzero(hit), strict=True)]


def _floor(room: Room) -> list[SceneObject]:
    return [o for o in room.objects if o.placement == "floor"]


def _door_rect(segment: tuple[tuple[float, float], ...], depth: float) -> np.ndarray:
    """Ground-plane rectangle ``[xmin, zmin, xmax, zmax]``: the segment thickened by ``depth``."""
    (ax, az), (bx, bz) = segment
    if ax == bx:  # wall along z
        return np.array([ax - depth, min(az, bz), ax + depth, max(az, bz)])
    return np.array([min(ax, bx), az - depth, max(ax, bx), az + depth])


def _hits_rect(objects: list[SceneObject], rect: np.ndarray) -> list[str]:
    if not objects:
        return []
    lo, hi = _boxes(objects)
    inter_x = np.minimum(hi[:, 0], rect[2]) - np.maximum(lo[:, 0], rect[0])
    inter_z = np.minimum(hi[:, 2], rect[3]) - np.maximum(lo[:, 2], rect[1])
    return [objects[i].id for i in np.nonzero((inter_x > TOL) & (inter_z > TOL))[0]]


def _blockers(room: Room) -> np.ndarray:
    """``(n, 4)`` footprints ``[xmin, zmin, xmax, zmax]`` of the objects that block the agent."""
    blocking = [
        o
        for o in room.objects
        if (o.placement == "floor" and o.box.max[1] - o.box.min[1] > MAX_CLIMB)
        or (o.placement == "wall" and o.box.min[1] < AGENT_HEIGHT)
    ]
    return np.array(
        [[o.box.min[0], o.box.min[2], o.box.max[0], o.box.max[2]] for o in blocking]
    ).reshape(-1, 4)


def _walls(scene: Scene, room: Room) -> np.ndarray:
    """``(n, 4)`` flat boxes: the room outline, cut at the doors to other rooms."""
    x0, z0, x1, z1 = _bounds(room)
    sides = [("z", z0, x0, x1), ("x", x1, z0, z1), ("z", z1, x0, x1), ("x", x0, z0, z1)]
    pieces = []
    for axis, line, lo, hi in sides:
        cuts = []
        for door in scene.doors:
            (ax, az), (bx, bz) = door.segment
            on_side = (axis == "x" and ax == bx == line) or (axis == "z" and az == bz == line)
            if on_side and room.id in door.room_ids and len(door.room_ids) == 2:
                cuts.append(sorted((az, bz)) if axis == "x" else sorted((ax, bx)))
        for a, b in [*sorted(cuts), (hi, hi)]:
            pieces.append([line, lo, line, a] if axis == "x" else [lo, line, a, line])
            lo = b
    return np.array(pieces)


def _distances(boxes: np.ndarray, cx: np.ndarray, cz: np.ndarray) -> np.ndarray:
    """``(n, nz, nx)`` Euclidean distances from the cell centres to the boxes."""
    dx = np.maximum(np.maximum(boxes[:, 0:1] - cx, cx - boxes[:, 2:3]), 0.0)
    dz = np.maximum(np.maximum(boxes[:, 1:2] - cz, cz - boxes[:, 3:4]), 0.0)
    return np.hypot(dz[:, :, None], dx[:, None, :])


def _walkability_problems(scene: Scene, room: Room) -> list[str]:
    """Free floor (5 cm cells farther than the agent radius from blocking objects and walls)
    must be one region that reaches every door of the room, comes within 0.2 m (Chebyshev) of
    every floor object and within 0.9 m of every other object; no centre may sit at a tie."""
    x0, z0, x1, z1 = _bounds(room)
    cx = x0 + (np.arange(round((x1 - x0) / CELL)) + 0.5) * CELL
    cz = z0 + (np.arange(round((z1 - z0) / CELL)) + 0.5) * CELL
    dist = _distances(np.vstack([_blockers(room), _walls(scene, room)]), cx, cz)
    free = (dist > AGENT_RADIUS).all(axis=0)
    problems = []
    if (np.abs(dist - AGENT_RADIUS) < 1e-7).any():
        problems.append("a cell centre lies at the agent radius from a blocker")
    _, n_regions = ndimage.label(free)
    if n_regions != 1:
        problems.append(f"{n_regions} free regions")
    for obj in room.objects:
        box = np.array([[obj.box.min[0], obj.box.min[2], obj.box.max[0], obj.box.max[2]]])
        if obj.placement == "floor":
            inx = (cx > box[0, 0] - FLOOR_REACH) & (cx < box[0, 2] + FLOOR_REACH)
            inz = (cz > box[0, 1] - FLOOR_REACH) & (cz < box[0, 3] + FLOOR_REACH)
            near = inz[:, None] & inx[None, :]
        else:
            near = _distances(box, cx, cz)[0] <= REACH
        if not free[near].any():
            problems.append(f"{obj.id} unreachable")
    for door in scene.doors:
        if room.id not in door.room_ids:
            continue
        (ax, az), (bx, bz) = door.segment
        mx, mz = 0.5 * (ax + bx), 0.5 * (az + bz)
        if ax == bx:
            mx += DOOR_DEPTH if math.isclose(ax, x0) else -DOOR_DEPTH
        else:
            mz += DOOR_DEPTH if math.isclose(az, z0) else -DOOR_DEPTH
        i = min(max(int((mx - x0) / CELL), 0), cx.size - 1)
        j = min(max(int((mz - z0) / CELL), 0), cz.size - 1)
        if not free[j, i]:
            problems.append(f"{door.id} blocked")
    return problems


def _failures(houses: list[Scene], check) -> Iterator[str]:
    for seed, scene in zip(SEEDS, houses, strict=True):
        for problem in check(scene):
            yield f"seed {seed}: {problem}"


# --- 1,000-house properties ----------------------------------------------------------------------


def test_room_counts_and_types(houses: list[Scene]) -> None:
    counts = [len(h.rooms) for h in houses]
    assert min(counts) == 2 and max(counts) == 8
    assert all(h.rooms[0].room_type == "living room" for h in houses)
    assert {r.room_type for h in houses for r in h.rooms} == set(load_catalogue().room_types)


def test_rooms_tile_without_overlap(houses: list[Scene]) -> None:
    def check(scene: Scene) -> Iterator[str]:
        rects = np.array([_bounds(r) for r in scene.rooms])
        lo = np.c_[rects[:, 0], np.zeros(len(rects)), rects[:, 1]]
        hi = np.c_[rects[:, 2], np.ones(len(rects)), rects[:, 3]]
        for i, j in _overlapping_pairs(lo, hi):
            yield f"rooms {scene.rooms[i].id} and {scene.rooms[j].id} overlap"
        for room in scene.rooms:
            if room.area < 3.0 or not 2.5 <= room.ceiling_height <= 2.8 or room.floor_height != 0:
                yield f"{room.id}: unrealistic size {room.area} / height {room.ceiling_height}"

    assert list(_failures(houses, check)) == []


def test_every_house_is_connected_through_doors(houses: list[Scene]) -> None:
    def check(scene: Scene) -> Iterator[str]:
        reached, frontier = {scene.rooms[0].id}, [scene.rooms[0].id]
        while frontier:
            current = frontier.pop()
            for door in scene.doors:
                if current in door.room_ids:
                    for other in door.room_ids:
                        if other not in reached:
                            reached.add(other)
                            frontier.append(other)
        if len(reached) != len(scene.rooms):
            yield f"unreachable rooms {sorted({r.id for r in scene.rooms} - reached)}"

    assert list(_failures(houses, check)) == []


def test_doors_sit_on_shared_walls_off_the_corners(houses: list[Scene]) -> None:
    def check(scene: Scene) -> Iterator[str]:
        for door in scene.doors:
            if not 0.8 - TOL <= door.width <= 1.0 + TOL:
                yield f"{door.id}: width {door.width}"
            for rid in door.room_ids:
                x0, z0, x1, z1 = _bounds(scene.room(rid))
                (ax, az), (bx, bz) = door.segment
                if ax == bx:
                    on_wall = ax in (x0, x1) and min(az, bz) >= z0 + 0.1 - TOL
                    on_wall = on_wall and max(az, bz) <= z1 - 0.1 + TOL
                else:
                    on_wall = az in (z0, z1) and min(ax, bx) >= x0 + 0.1 - TOL
                    on_wall = on_wall and max(ax, bx) <= x1 - 0.1 + TOL
                if not on_wall:
                    yield f"{door.id} is not on a wall of {rid}, 0.1 m from its corners"

    assert list(_failures(houses, check)) == []


def test_no_floor_furniture_overlaps(houses: list[Scene]) -> None:
    def check(scene: Scene) -> Iterator[str]:
        floor = [o for r in scene.rooms for o in _floor(r)]
        for i, j in _overlapping_pairs(*_boxes(floor)):
            yield f"{floor[i].id} overlaps {floor[j].id}"

    assert list(_failures(houses, check)) == []


def test_every_object_inside_its_room(houses: list[Scene]) -> None:
    def check(scene: Scene) -> Iterator[str]:
        for room in scene.rooms:
            x0, z0, x1, z1 = _bounds(room)
            lo, hi = _boxes(list(room.objects))
            inside = (
                (lo[:, 0] >= x0 - TOL)
                & (lo[:, 2] >= z0 - TOL)
                & (hi[:, 0] <= x1 + TOL)
                & (hi[:, 2] <= z1 + TOL)
                & (lo[:, 1] >= room.floor_height - TOL)
                & (hi[:, 1] <= room.floor_height + room.ceiling_height + TOL)
            )
            yield from (f"{room.objects[i].id} outside {room.id}" for i in np.nonzero(~inside)[0])

    assert list(_failures(houses, check)) == []


def test_door_clearance_is_free_of_furniture(houses: list[Scene]) -> None:
    def check(scene: Scene) -> Iterator[str]:
        floor = [o for r in scene.rooms for o in _floor(r)]
        for door in scene.doors:
            for oid in _hits_rect(floor, _door_rect(door.segment, CLEARANCE)):
                yield f"{oid} blocks {door.id}"

    assert list(_failures(houses, check)) == []


def test_surface_objects_rest_on_receptacles(houses: list[Scene]) -> None:
    receptacles = {c.name for c in load_catalogue().categories if c.receptacle}

    def check(scene: Scene) -> Iterator[str]:
        for room in scene.rooms:
            by_id = {o.id: o for o in room.objects}
            children: dict[str, list[SceneObject]] = {}
            for obj in room.objects:
                if obj.placement != "surface":
                    continue
                parent = by_id.get(obj.parent_id or "")
                if parent is None or parent.category not in receptacles:
                    yield f"{obj.id}: parent {obj.parent_id} is not a receptacle of {room.id}"
                    continue
                children.setdefault(parent.id, []).append(obj)
                c, p = obj.box, parent.box
                if c.min[1] != p.max[1]:
                    yield f"{obj.id}: bottom {c.min[1]} != top of {parent.id} {p.max[1]}"
                if not all(p.min[a] <= c.min[a] and c.max[a] <= p.max[a] for a in (0, 2)):
                    yield f"{obj.id}: footprint outside {parent.id}"
            for items in children.values():
                for i, j in _overlapping_pairs(*_boxes(items)):
                    yield f"{items[i].id} overlaps {items[j].id}"

    assert list(_failures(houses, check)) == []


def test_wall_mounted_objects_touch_a_wall_and_overlap_nothing(houses: list[Scene]) -> None:
    def check(scene: Scene) -> Iterator[str]:
        for room in scene.rooms:
            x0, z0, x1, z1 = _bounds(room)
            mounted = [o for o in room.objects if o.placement == "wall"]
            for obj in mounted:
                b = obj.box
                if not (b.min[0] == x0 or b.max[0] == x1 or b.min[2] == z0 or b.max[2] == z1):
                    yield f"{obj.id} does not touch a wall"
                if b.min[1] < 0.5:
                    yield f"{obj.id} hangs at {b.min[1]} m"
            for door in scene.doors:
                if room.id in door.room_ids:
                    yield from (
                        f"{o} over {door.id}"
                        for o in _hits_rect(mounted, _door_rect(door.segment, 0.05))
                    )
            objects = list(room.objects)
            for i, j in _overlapping_pairs(*_boxes(objects)):
                if "wall" in (objects[i].placement, objects[j].placement):
                    yield f"{objects[i].id} overlaps {objects[j].id}"

    assert list(_failures(houses, check)) == []


@pytest.mark.slow
def test_every_room_is_walkable(houses: list[Scene]) -> None:
    def check(scene: Scene) -> Iterator[str]:
        for room in scene.rooms:
            yield from (f"{room.id}: {p}" for p in _walkability_problems(scene, room))

    assert list(_failures(houses, check)) == []


def _nav_problems(seeds: range) -> list[str]:
    """Objects without an approach point and islands of 0.05 m² or more, per house."""
    problems = []
    for seed in seeds:
        scene = generate_house(seed)
        nav = GridNavigator(scene)
        problems += [
            f"seed {seed}: {o.id} unreachable"
            for o in scene.objects()
            if nav.approach_point(o) is None
        ]
        problems += [
            f"seed {seed}: island of {i.area} m² at {i.centroid}"
            for i in nav.area.islands
            if i.area >= 0.05
        ]
    return problems


def test_navigation_layer_reaches_every_object() -> None:
    chunks = [range(start, NAV_SEEDS.stop, 2) for start in range(2)]
    with multiprocessing.get_context("fork").Pool(2) as pool:
        problems = [p for part in pool.map(_nav_problems, chunks) for p in part]
    assert problems == []


def test_content_is_realistic(houses: list[Scene]) -> None:
    per_room = [len(r.objects) for h in houses for r in h.rooms]
    assert 8 <= float(np.mean(per_room)) <= 30 and max(per_room) <= 40
    essentials = {
        "bedroom": {"bed"},
        "kitchen": {"fridge", "stove", "counter top", "sink"},
        "living room": {"sofa"},
        "bathroom": {"toilet", "sink"},
    }
    rooms = [r for h in houses for r in h.rooms if r.room_type in essentials]
    complete = [r for r in rooms if essentials[r.room_type] <= {o.category for o in r.objects}]
    assert len(complete) >= 0.98 * len(rooms)
    # some rooms hold two objects of one category, so names can be ambiguous
    doubled = [r for r in rooms if len({o.category for o in r.objects}) < len(r.objects)]
    assert len(doubled) > len(rooms) // 2


def test_export_load_round_trip_is_exact(houses: list[Scene]) -> None:
    broken = [s.id for s in houses if scene_from_dict(orjson.loads(scene_to_json(s))) != s]
    assert broken == []


@pytest.mark.slow
def test_same_seed_gives_identical_bytes(houses: list[Scene]) -> None:
    differing = [
        s
        for s, h in zip(SEEDS, houses, strict=True)
        if scene_to_json(generate_house(s)) != scene_to_json(h)
    ]
    assert differing == []


# --- unit tests --------------------------------------------------------------------------------


def test_catalogue_has_60_normalised_categories() -> None:
    cat = load_catalogue()
    names = [c.name for c in cat.categories]
    assert len(names) >= 60
    assert [normalize_category(n) for n in names] == names
    assert {c.placement for c in cat.categories} == {"wall", "open", "surface", "wall_mounted"}
    assert any(c.max_count >= 2 for c in cat.categories)


def test_ids_seeds_and_source_registration() -> None:
    assert load("3").id == "procedural/seed-3"
    assert load_source("procedural", "3") == generate_house(3)
    assert SOURCES.get("procedural").name == "procedural"
    assert generate_house(5, n_rooms=8).id == "procedural/seed-5/rooms-8"
    assert len(generate_house(5, n_rooms=8).rooms) == 8
    assert scene_to_json(generate_house(1)) != scene_to_json(generate_house(2))


@pytest.mark.parametrize("seed", ["-1", "abc", "1.5", "", " 2x"])
def test_bad_seed_raises_one_line_error(seed: str) -> None:
    with pytest.raises(ConfigError) as info:
        load(seed)
    assert "\n" not in str(info.value)
    assert str(info.value).startswith("procedural: the seed must be a non-negative integer")


@pytest.mark.parametrize(
    ("options", "message"), [({"n_rooms": 9}, "n_rooms"), ({"colour": 1}, "unknown")]
)
def test_bad_options_raise_config_errors(options: dict, message: str) -> None:
    with pytest.raises(CondVLNError, match=message):
        load("1", **options)
