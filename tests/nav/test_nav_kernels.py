"""The compiled navigation kernels agree exactly with the numpy definitions they replace."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from condvln.nav import GridNavigator, _kernels
from condvln.nav.grid import GridFrame
from condvln.scene.model import Door, Room, Scene, SceneObject

FRAME = GridFrame(origin=(-1.0, -2.0), cell_size=0.05, shape=(120, 100))


def _segments(rng: np.random.Generator, n: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Random segments plus degenerate ones: on grid lines, through corners, off the grid."""
    segs = [tuple(p) for p in rng.uniform((-1.5, -2.5), (4.5, 4.5), size=(n, 2, 2))]
    c = FRAME.cell_size
    lines = [
        ((0.0, 0.0), (1.0, 0.0)),  # along a grid line
        ((0.0, 0.0), (0.0, 1.0)),
        ((0.0, 0.0), (10 * c, 10 * c)),  # diagonal through grid corners
        ((0.5 * c, 0.5 * c), (20.5 * c, 10.5 * c)),
        ((0.3, 0.3), (0.3, 0.3)),  # a point
        ((-3.0, 0.2), (6.0, 0.4)),  # leaves the grid
        ((2.0, 1.0), (0.0, 0.0)),  # backwards
    ]
    segs += [(np.array(a), np.array(b)) for a, b in lines]
    return segs


def _continuous(p: np.ndarray) -> tuple[float, float]:
    (r,), (c,) = FRAME.continuous(p)
    return float(r), float(c)


def test_traversal_kernel_visits_exactly_the_cells_of_traverse() -> None:
    rng = np.random.default_rng(4)
    for a, b in _segments(rng, 400):
        rows, cols = FRAME.traverse(a, b)
        k_rows, k_cols = _kernels.traverse_cells(*FRAME.shape, *_continuous(a), *_continuous(b))
        assert k_rows.tolist() == rows.tolist()
        assert k_cols.tolist() == cols.tolist()


def test_clear_and_hit_kernels_match_the_dense_definition() -> None:
    rng = np.random.default_rng(8)
    free = np.ones(FRAME.shape, dtype=bool)
    free[[0, -1], :] = free[:, [0, -1]] = False
    for r, c, h, w in rng.integers(0, 100, size=(25, 4)):
        free[r : r + h % 15 + 1, c : c + w % 15 + 1] = False
    blocked, room = ~free, _kernels.free_room(free)
    args = (*FRAME.origin, FRAME.cell_size)
    outcomes = set()
    for a, b in _segments(rng, 2000):
        rows, cols = FRAME.traverse(a, b)
        expected = bool(free[rows, cols].all())
        assert _kernels.segment_clear(blocked, room, *args, *a, *b) == expected
        assert _kernels.segment_hits(blocked, *args, *a, *b, False) == (not expected)
        ends = np.zeros(rows.size, dtype=bool)
        for p in (a, b):
            (r,), (c,), _ = FRAME.cells(p)
            ends |= (rows == r) & (cols == c)
        hit = bool(blocked[rows[~ends], cols[~ends]].any())
        assert _kernels.segment_hits(blocked, *args, *a, *b, True) == hit
        outcomes.add(expected)
    assert outcomes == {True, False}


def test_free_room_is_conservative() -> None:
    free = np.ones((40, 50), dtype=bool)
    free[10:14, 20:30] = False
    room = _kernels.free_room(free)
    blocked = np.argwhere(~free)
    for r, c in np.argwhere(free)[::7]:
        # nearest point of any blocked cell (or off the grid) to any point of cell (r, c)
        gap_r = np.maximum(np.abs(blocked[:, 0] - r) - 1, 0)
        gap_c = np.maximum(np.abs(blocked[:, 1] - c) - 1, 0)
        edge = min(r, c, 39 - r, 49 - c)  # cells to the grid border
        assert room[r, c] <= min(np.hypot(gap_r, gap_c).min(), edge) + 1e-9


@pytest.fixture(scope="module")
def house() -> GridNavigator:
    def room(rid: str, x0: float, x1: float, objects=()) -> Room:
        return Room(
            id=rid,
            room_type="kitchen",
            label="Kitchen",
            objects=tuple(objects),
            floor_polygon=((x0, 0), (x1, 0), (x1, 4), (x0, 4)),
        )

    table = SceneObject(
        id="t", category="table", label="Table", center=(2.5, 0.5, 2.0), size=(1, 1, 1)
    )
    scene = Scene(
        id="k",
        source="test",
        rooms=(room("a", 0, 5, [table]), room("b", 5, 9)),
        doors=(Door(id="d", room_ids=("a", "b"), segment=((5.0, 1.5), (5.0, 2.5))),),
    )
    return GridNavigator(scene)


def test_descent_kernel_follows_downhill(house: GridNavigator) -> None:
    field = house.distance_field((8.0, 0.0, 3.0))
    rng = np.random.default_rng(1)
    rows, cols = np.nonzero(field.reached)
    for k in rng.choice(rows.size, 50, replace=False):
        cells = [int(rows[k] * field.values.shape[1] + cols[k])]
        while int(field.downhill[cells[-1]]) != cells[-1]:
            cells.append(int(field.downhill[cells[-1]]))
        assert field.descend(rows[k], cols[k]).tolist() == cells


def test_paths_are_clear_between_every_pair(house: GridNavigator) -> None:
    rng = np.random.default_rng(2)
    pts = [(x, 0.0, z) for x, z in rng.uniform((0.2, 0.2), (8.8, 3.8), size=(40, 2))]
    pts = [p for p in pts if house.is_navigable(p)]
    for a, b in itertools.pairwise(pts):
        path = house.shortest_path(a, b)
        assert path is not None
        assert all(house.line_of_sight(p, q) for p, q in itertools.pairwise(path))
        assert house.distance(a, b) >= np.hypot(a[0] - b[0], a[2] - b[2]) - 1e-9


def test_path_through_repeated_points_does_not_divide_by_zero() -> None:
    from condvln.nav import GridNavigator
    from condvln.scene.model import Room, Scene

    room = Room(
        id="r", room_type="office", label="Office", floor_polygon=((0, 0), (4, 0), (4, 3), (0, 3))
    )
    nav = GridNavigator(Scene(id="s", source="test", rooms=(room,)))
    path = nav.shortest_path((1.0, 0.0, 1.0), (1.0, 0.0, 1.0))
    assert path is not None and path[0] == path[-1]
    assert nav.shortest_path((1.0, 0.0, 1.0), (1.0001, 0.0, 1.0)) is not None
