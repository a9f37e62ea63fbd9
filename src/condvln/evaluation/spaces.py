"""Distance spaces: how the metrics measure distance in continuous and nav-graph mode.

Every metric needs two kinds of distance (DESIGN §4):

* the **geodesic** distance from trajectory positions to targets (goal, subgoals, leaf goals),
  used by NE, success, oracle success, SPL's shortest path and BSA / CSR;
* the **path** distance between two positions, used by TL, nDTW and CLS: Euclidean in
  continuous mode (as VLN-CE does), the graph distance in nav-graph mode (as R2R / R4R do;
  nDTW / CLS may use Euclidean node distances instead, see :class:`GraphSpace`).

A space first *encodes* a path (positions → ``(n, d)`` float array, node ids → ``(n,)`` index
array); every other method works on encoded arrays, so the metric code is the same in both modes.

>>> space = GraphSpace.from_dict({"a": {"a": 0, "b": 2}, "b": {"a": 2, "b": 0}})
>>> path = space.encode(["a", "b", "b"])
>>> space.step_lengths(path).tolist()
[2.0, 0.0]
>>> space.to_targets(path, space.encode(["b"])).tolist()
[[2.0, 0.0, 0.0]]
>>> cont = ContinuousSpace()
>>> cont.to_targets(cont.encode([[0, 0, 0], [3, 0, 4]]), cont.encode([[0, 0, 0]])).tolist()
[[0.0, 5.0]]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, Literal, Protocol

import numba
import numpy as np
from numpy.typing import ArrayLike, NDArray

from condvln.errors import ValidationError

FloatArray = NDArray[np.float64]

GeodesicFn = Callable[[FloatArray, FloatArray], FloatArray]
"""``geodesic(points, target) -> distances``: points ``(n, d)``, one target ``(d,)``, result ``(n,)``."""

GeodesicRowsFn = Callable[[FloatArray, FloatArray], FloatArray]
"""``rows(points, targets) -> distances``: points ``(n, d)``, targets ``(m, d)``, result ``(m, n)``
(one call for all targets, e.g. to share the points' snapping)."""


class MetricSpace(Protocol):
    """What the metric functions need from a space (continuous or nav-graph)."""

    def encode(self, path: Sequence[Any] | ArrayLike) -> NDArray[Any]:
        """Turn a path (positions or node ids) into the array the other methods take."""
        ...

    def to_targets(self, points: NDArray[Any], targets: NDArray[Any]) -> FloatArray:
        """Geodesic distances, shape ``(len(targets), len(points))``."""
        ...

    def pairwise(self, a: NDArray[Any], b: NDArray[Any]) -> FloatArray:
        """nDTW / CLS point distances ``a[i]`` ↔ ``b[j]``, shape ``(len(a), len(b))``."""
        ...

    def step_lengths(self, points: NDArray[Any]) -> FloatArray:
        """Path distances between consecutive points, shape ``(len(points) - 1,)``."""
        ...


def pairwise_euclidean(a: ArrayLike, b: ArrayLike) -> FloatArray:
    """Euclidean distance matrix between the rows of ``a`` and ``b``.

    The same values as scipy's ``cdist`` (squared coordinate differences summed in coordinate
    order, then the square root), without its per-call overhead.

    >>> pairwise_euclidean(np.zeros((1, 2)), np.array([[3.0, 4.0], [0.0, 1.0]])).tolist()
    [[5.0, 1.0]]
    """
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1]:
        raise ValueError(f"need (m, d) and (n, d) point arrays, got {a.shape} and {b.shape}")
    return _euclidean_matrix(a, b)


@numba.njit(cache=True, nogil=True)
def _euclidean_matrix(a: FloatArray, b: FloatArray) -> FloatArray:  # pragma: no cover - compiled
    out = np.empty((a.shape[0], b.shape[0]))
    for i in range(a.shape[0]):
        for j in range(b.shape[0]):
            s = 0.0
            for c in range(a.shape[1]):
                s += (a[i, c] - b[j, c]) ** 2
            out[i, j] = math.sqrt(s)
    return out


def _checked(values: FloatArray, what: str) -> FloatArray:
    if not (np.isfinite(values).all() and (values >= 0).all()):
        raise ValidationError(f"{what} must be finite and non-negative")
    return values


class ContinuousSpace:
    """Positions in metres; geodesic from a caller-supplied function, path distance Euclidean.

    Args:
        geodesic: ``geodesic(points, target) -> distances`` (e.g. a navmesh distance field
            sampled at the points). ``None`` uses the Euclidean distance, which equals the
            geodesic only in obstacle-free space.
        rows: ``rows(points, targets) -> (len(targets), len(points))``, used instead of
            ``geodesic`` when given (all targets in one call).
    """

    def __init__(
        self, geodesic: GeodesicFn | None = None, *, rows: GeodesicRowsFn | None = None
    ) -> None:
        self.geodesic = geodesic
        self.rows = rows

    def encode(self, path: Sequence[Any] | ArrayLike) -> FloatArray:
        """Positions as a finite ``(n, d)`` float array (``n`` may be 0)."""
        arr = np.asarray(path, dtype=np.float64)
        if arr.size == 0:
            return arr.reshape(0, arr.shape[-1] if arr.ndim == 2 else 3)
        if arr.ndim != 2:
            raise ValidationError(f"positions must be a list of points, got shape {arr.shape}")
        if not np.isfinite(arr).all():
            raise ValidationError("positions must be finite")
        return arr

    def to_targets(self, points: FloatArray, targets: FloatArray) -> FloatArray:
        """Geodesic distance from every point to every target, ``(len(targets), len(points))``."""
        if len(targets) and self.rows is not None:
            out = np.asarray(self.rows(points, targets), dtype=np.float64)
            return _checked(out.reshape(len(targets), len(points)), "geodesic distances")
        if self.geodesic is None:
            return pairwise_euclidean(targets, points)
        rows = [np.asarray(self.geodesic(points, t), dtype=np.float64) for t in targets]
        out = np.stack(rows) if rows else np.empty((0, len(points)))
        return _checked(out, "geodesic distances")

    def pairwise(self, a: FloatArray, b: FloatArray) -> FloatArray:
        """Euclidean distances between every ``a[i]`` and ``b[j]``."""
        return pairwise_euclidean(a, b)

    def step_lengths(self, points: FloatArray) -> FloatArray:
        """Euclidean lengths of the steps between consecutive positions."""
        steps = points[1:] - points[:-1]
        squares = steps * steps
        if not 1 <= squares.shape[-1] <= 4:
            return np.sqrt(squares.sum(axis=-1))
        # numpy sums so short a last axis in coordinate order: the same sums, column by column
        total = squares[:, 0].copy()
        for column in squares.T[1:]:
            total += column
        return np.sqrt(total)


class GraphSpace:
    """Nav-graph nodes with an all-pairs shortest-path distance matrix (R2R / R4R style).

    By default nDTW / SDTW / CLS compare nodes by graph distance (R4R's ``dtw.py`` /
    ``cls.py``). With ``coordinates`` they can compare them by the Euclidean distance between
    the nodes' positions instead (``fidelity="euclidean"``), the other nDTW variant of Ilharco
    et al. (2019); TL and the reference length stay graph path lengths (in the R2R connectivity
    graphs an edge's weight is the Euclidean length of that edge anyway).

    Args:
        nodes: node ids, in matrix order.
        matrix: ``(len(nodes), len(nodes))`` finite, non-negative distances.
        coordinates: ``(len(nodes), d)`` node positions (needed for ``fidelity="euclidean"``).
        fidelity: ``"graph"`` or ``"euclidean"`` point distance for nDTW / SDTW / CLS.

    >>> line = GraphSpace(["a", "b"], [[0, 5], [5, 0]], [[0, 0], [3, 4]], fidelity="euclidean")
    >>> line.pairwise(line.encode(["a"]), line.encode(["b"])).tolist()
    [[5.0]]
    """

    def __init__(
        self,
        nodes: Sequence[Hashable],
        matrix: ArrayLike,
        coordinates: ArrayLike | None = None,
        fidelity: Literal["graph", "euclidean"] = "graph",
    ) -> None:
        self.nodes = list(nodes)
        self.index = {node: i for i, node in enumerate(self.nodes)}
        self.matrix = _checked(np.asarray(matrix, dtype=np.float64), "graph distances")
        if self.matrix.shape != (len(self.nodes), len(self.nodes)):
            raise ValidationError(
                f"distance matrix shape {self.matrix.shape} does not match {len(self.nodes)} nodes"
            )
        if fidelity not in ("graph", "euclidean"):
            raise ValidationError(f"unknown fidelity distance {fidelity!r}")
        self.fidelity = fidelity
        self.coordinates = None if coordinates is None else ContinuousSpace().encode(coordinates)
        if self.coordinates is not None and len(self.coordinates) != len(self.nodes):
            raise ValidationError(
                f"{len(self.coordinates)} node coordinates for {len(self.nodes)} nodes"
            )
        if fidelity == "euclidean" and self.coordinates is None:
            raise ValidationError("fidelity='euclidean' needs node coordinates")

    @classmethod
    def from_dict(
        cls,
        distances: Mapping[Hashable, Mapping[Hashable, float]],
        coordinates: Mapping[Hashable, Sequence[float]] | None = None,
        fidelity: Literal["graph", "euclidean"] = "graph",
    ) -> GraphSpace:
        """Build from a dict of dicts ``distances[u][v]`` (every pair must be present) and,
        optionally, ``coordinates[u]``."""
        nodes = list(distances)
        try:
            matrix = [[float(distances[u][v]) for v in nodes] for u in nodes]
            coords = None if coordinates is None else [coordinates[u] for u in nodes]
        except KeyError as err:
            raise ValidationError(f"graph distance missing for node {err.args[0]!r}") from None
        return cls(nodes, matrix, coords, fidelity)

    def encode(self, path: Sequence[Any] | ArrayLike) -> NDArray[np.intp]:
        """Node ids as an index array; unknown ids raise :class:`ValidationError`."""
        try:
            return np.array([self.index[node] for node in path], dtype=np.intp)
        except KeyError as err:
            raise ValidationError(f"unknown graph node {err.args[0]!r}") from None

    def to_targets(self, points: NDArray[np.intp], targets: NDArray[np.intp]) -> FloatArray:
        """Graph distance from every point to every target, ``(len(targets), len(points))``."""
        return self.matrix[np.ix_(targets, points)]

    def pairwise(self, a: NDArray[np.intp], b: NDArray[np.intp]) -> FloatArray:
        """Graph (or, with ``fidelity="euclidean"``, Euclidean) distances ``a[i]`` ↔ ``b[j]``."""
        if self.fidelity == "euclidean":
            assert self.coordinates is not None  # checked in __init__
            return pairwise_euclidean(self.coordinates[a], self.coordinates[b])
        return self.matrix[np.ix_(a, b)]

    def step_lengths(self, points: NDArray[np.intp]) -> FloatArray:
        """Graph distances between consecutive nodes (0 for a repeated node)."""
        return self.matrix[points[:-1], points[1:]]
