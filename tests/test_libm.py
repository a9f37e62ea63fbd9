"""condvln.libm: the C library's bits for every element, so results do not depend on where numpy
put its arrays (numpy's SIMD ``arctan2`` / ``exp`` and its C-library fallback differ by an ulp)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from condvln.evaluation.metrics import cls_from_nearest
from condvln.graph import build_scene_graph
from condvln.libm import LARGEST_EXP_ARGUMENT, atan2, exp
from condvln.scene.sources import load

SPECIAL = [0.0, -0.0, 1.0, -1.0, math.inf, -math.inf, math.nan, 1e-310, 3.7, -12.25]


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and a.tobytes() == b.tobytes()


def _degrees_of_atan2(y: np.ndarray, x: np.ndarray) -> list[float]:
    pairs = zip(y.ravel().tolist(), x.ravel().tolist(), strict=True)
    return [math.degrees(math.atan2(a, b)) for a, b in pairs]


def test_atan2_is_math_atan2_for_every_element_and_broadcasts() -> None:
    y = np.array(SPECIAL)[:, None]
    x = np.array(SPECIAL)[None, :]
    expected = np.array([[math.atan2(a, b) for b in SPECIAL] for a in SPECIAL])
    assert _same_bits(atan2(y, x), expected)
    strided = np.arange(30.0).reshape(10, 3) - 14.5
    column = strided[:, 1]  # a strided view, as the graph passes δy
    assert _same_bits(atan2(column, 2.0), np.array([math.atan2(v, 2.0) for v in column]))


def test_exp_is_math_exp_with_numpys_overflow_and_nan() -> None:
    values = [v for v in SPECIAL if not (v > LARGEST_EXP_ARGUMENT)] + [LARGEST_EXP_ARGUMENT]
    expected = np.array([math.exp(v) for v in values])
    assert _same_bits(exp(np.array(values)), expected)
    over = exp([math.nextafter(LARGEST_EXP_ARGUMENT, math.inf), 1e6])
    assert over.tolist() == [math.inf, math.inf]
    assert exp(np.zeros((2, 0))).shape == (2, 0)


def test_graph_angles_are_the_c_librarys_bit_for_bit() -> None:
    """Every azimuth and elevation of a real house equals ``math.atan2`` of its displacement."""
    graph = build_scene_graph(load("procedural", "4"))
    checked = 0
    for room in graph.room_ids:
        m = graph.relations(room).metrics
        dx, dy, dz = (m.delta[..., k] for k in range(3))
        east, north = dx + 0.0, 0.0 - dz
        assert m.azimuth_deg.ravel().tolist() == _degrees_of_atan2(north, east)
        assert m.elevation_deg.ravel().tolist() == _degrees_of_atan2(dy, m.horizontal_distance)
        checked += dy.size
    assert checked > 500


@pytest.mark.parametrize(("points", "threshold"), [(9, 3.0), (23, 2.0), (40, 2.0)])
def test_path_coverage_uses_the_c_librarys_exp(points: int, threshold: float) -> None:
    """With AVX-512, numpy's own ``exp`` gives a different last digit for these three."""
    nearest = np.linspace(0.0, 9.0, points)
    expected = np.add.reduce(np.array([math.exp(-d / threshold) for d in nearest])) / points
    assert cls_from_nearest(nearest, 10.0, 10.0, threshold).path_coverage == float(expected)
