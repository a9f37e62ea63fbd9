"""The level-at-a-time checks of coordinates and number arrays agree with the per-number ones.

Paths and trajectories are checked without a Python call per number; when anything is wrong
the per-point loop names it. Both must accept and reject exactly the same values.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from condvln.dataset.schema import _points, vector_problem
from condvln.evaluation.predictions import _numbers
from condvln.io import LIMITS

BIG = LIMITS.max_coordinate
CASES: list[Any] = [
    [[0.0, 1.5, -2]],
    [[0, 0, 0], [1, 2, 3], [4.5, 5.5, 6.5]],
    [[BIG, -BIG, 0.0]],
    [[BIG * 1.0001, 0.0, 0.0]],
    [[0.0, math.nan, 0.0]],
    [[0.0, 0.0, math.inf], [0, 0, 0]],
    [[0, 0, 0], [True, 0, 0]],
    [[0, 0, 0], ["1", 0, 0]],
    [[0, 0, 0], [None, 0, 0]],
    [[0, 0, 0], [0, 0]],
    [[0, 0, 0], [0, 0, 0, 0]],
    [[0, 0, 0], (0, 0, 0)],
    [[0, 0, 0], {"x": 0}],
    [[0, 0, 0], [[0], 0, 0]],
    [[0, 0, 10**400]],
    [[0, 0, 0], 5],
    [],
]


def _reference(value: Any, field: str) -> list[tuple[str, str]]:
    for i, point in enumerate(value):
        problem = vector_problem(point, 3)
        if problem:
            return [(f"{field}[{i}]", problem)]
    return []


@pytest.mark.parametrize("value", CASES)
def test_points_agree_with_the_point_by_point_check(value: Any) -> None:
    if value and isinstance(value[-1], list) and 10**400 in value[-1]:
        with pytest.raises(OverflowError):  # as the point-by-point check does
            _reference(value, "p")
        with pytest.raises(OverflowError):
            _points(value, "p")
        return
    assert _points(value, "p", empty=True) == _reference(value, "p")


def _numbers_reference(value: Any, depth: int) -> bool:
    if depth == 0:
        return type(value) in (int, float)
    return isinstance(value, list) and all(_numbers_reference(v, depth - 1) for v in value)


@pytest.mark.parametrize("value", [*CASES, 1.0, True, "x", [1, 2.5, 3], [1, False], [[]], [[[1]]]])
@pytest.mark.parametrize("depth", [0, 1, 2])
def test_numbers_agree_with_the_element_by_element_check(value: Any, depth: int) -> None:
    assert _numbers(value, depth) is _numbers_reference(value, depth)
