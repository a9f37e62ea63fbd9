"""Pairwise metrics and spatial predicates of the objects of one room (paper §3.1.3), vectorised.

**Convention.** A relation reads "*subject* PREDICATE *target*": "the stool north of the
dishwasher" has subject = stool, target = dishwasher, and holds when the stool lies north of the
dishwasher. All metrics of the ordered pair (subject ``s``, target ``t``) use the displacement
``δ = c_s − c_t`` (from the target to the subject), so the arrays here are indexed
``[subject, target]``. (The paper writes ``δ_{i→j} = c_j − c_i``; our subject is its ``j``.)

**Metrics.** Centre distance ``‖δ‖``; horizontal distance ``√(δx² + δz²)``; AABB surface gap
``‖Δ‖`` with ``Δa = max(a_s_min − a_t_max, a_t_min − a_s_max, 0)`` per axis (boxes on both
objects); bounding-sphere gap ``max(0, ‖δ‖ − r_s − r_t)`` (a bounding radius on both objects: the
given radius, else half the box diagonal); the *used* distance is the first available of AABB →
sphere → centre, by what geometry *both* objects have.

**Directions** (Habitat frame: north = −Z, east = +X, up = +Y). The compass bin of ``δ`` is one
of eight 45° sectors centred on east, north-east, …, south-east. A displacement exactly on a
sector edge belongs to the sector counter-clockwise of it seen from above (turning from east
towards north): exactly 22.5° is north-east, exactly −22.5° is east. Edges are decided by exact
sign tests (cross products with the edge directions), never by a rounded angle, so the bins of
``δ`` and ``−δ`` are always opposite. When the horizontal distance is below
``config.min_horizontal`` the compass bin is ``"none"``. The elevation bin is ``"up"`` when
``δy > tan(level_angle) · h``, ``"down"`` when ``δy < −tan(level_angle) · h``, else ``"level"`` (a
displacement exactly at the level angle is level). The reported ``azimuth_deg`` (counter-clockwise
from east, north = 90°, in (−180°, 180°]) and ``elevation_deg`` are informational; they are
finite even for a zero displacement (atan2(0, 0) = 0), and computed by the C library
(:mod:`condvln.libm`), so a graph's bytes do not depend on where numpy put its arrays.

**Predicates.** The canonical directional predicate composes the two bins: ``"east of"`` when
level, ``"east-and-up of"`` / ``"east-and-down of"`` otherwise, and ``"up of"``, ``"down of"``,
``"level with"`` without a compass bin. Semantic predicates are three-valued
(:class:`Truth`); see :class:`~condvln.graph.config.RelationConfig` for the thresholds:

* near / far from: on the used distance;
* higher than: ``δy`` (subject centre above target centre); lower than is its converse;
* above: higher than AND the subject lies over the target: footprint overlap ratio (x–z
  intersection area over the smaller footprint) when both have boxes, else horizontal centre
  distance. Kleene AND: FALSE if either part is FALSE, TRUE if both are TRUE, else UNDECIDED.
  below is the converse of above.

>>> import numpy as np
>>> geom = Geometry.from_objects([
...     SceneObject(id="cup", category="cup", label="Cup", center=(0.0, 0.8, 0.0),
...                 size=(0.1, 0.1, 0.1)),
...     SceneObject(id="table", category="table", label="Table", center=(0.0, 0.35, 0.0),
...                 size=(1.0, 0.7, 1.0))])
>>> m = pair_metrics(geom, RelationConfig())
>>> round(float(m.aabb_distance[0, 1]), 9), DISTANCE_TYPES[m.distance_type[0, 1]]
(0.05, 'aabb')
>>> t = semantic_truths(m, geom, RelationConfig())
>>> [Truth.from_code(t[SEMANTIC_PREDICATES.index(p), 0, 1]).value for p in ("near", "above")]
['true', 'true']
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import ClassVar

import numpy as np

from condvln import libm
from condvln.graph.config import RelationConfig
from condvln.registry import Registry
from condvln.scene.model import SceneObject

FALSE_CODE, TRUE_CODE, UNDECIDED_CODE = 0, 1, 2


class Truth(Enum):
    """Three-valued truth of a predicate. Never use it as a bool: compare with a member.

    >>> Truth.from_code(2)
    <Truth.UNDECIDED: 'undecided'>
    >>> bool(Truth.TRUE)
    Traceback (most recent call last):
    ...
    TypeError: Truth is three-valued; compare with Truth.TRUE / Truth.FALSE / Truth.UNDECIDED
    """

    FALSE = "false"
    TRUE = "true"
    UNDECIDED = "undecided"

    @property
    def code(self) -> int:
        """The integer code stored in truth arrays (0 FALSE, 1 TRUE, 2 UNDECIDED)."""
        return _CODES[self]

    @classmethod
    def from_code(cls, code: int) -> Truth:
        """The member for an integer code of a truth array."""
        return _BY_CODE[int(code)]

    def __bool__(self) -> bool:
        raise TypeError(
            "Truth is three-valued; compare with Truth.TRUE / Truth.FALSE / Truth.UNDECIDED"
        )


_BY_CODE = (Truth.FALSE, Truth.TRUE, Truth.UNDECIDED)
_CODES = {t: c for c, t in enumerate(_BY_CODE)}

COMPASS = (
    "east",
    "north-east",
    "north",
    "north-west",
    "west",
    "south-west",
    "south",
    "south-east",
)
NO_AZIMUTH = len(COMPASS)
AZIMUTH_BINS = (*COMPASS, "none")
UP, LEVEL, DOWN = 0, 1, 2
ELEVATION_BINS = ("up", "level", "down")
AABB_TYPE, SPHERE_TYPE, CENTER_TYPE = 0, 1, 2
DISTANCE_TYPES = ("aabb", "sphere", "center")
SEMANTIC_PREDICATES = ("near", "far from", "higher than", "lower than", "above", "below")
CONTAINMENT_PREDICATE = "in"


def directional_name(azimuth_bin: int, elevation_bin: int) -> str:
    """The canonical directional predicate of a pair of bins.

    >>> directional_name(0, LEVEL), directional_name(1, UP), directional_name(NO_AZIMUTH, DOWN)
    ('east of', 'north-east-and-up of', 'down of')
    """
    elevation = ELEVATION_BINS[elevation_bin]
    if azimuth_bin == NO_AZIMUTH:
        return "level with" if elevation_bin == LEVEL else f"{elevation} of"
    compass = COMPASS[azimuth_bin]
    return f"{compass} of" if elevation_bin == LEVEL else f"{compass}-and-{elevation} of"


#: All directional predicates; the code of a pair is ``azimuth_bin * 3 + elevation_bin``.
DIRECTIONAL_PREDICATES = tuple(
    directional_name(a, e) for a in range(len(AZIMUTH_BINS)) for e in range(len(ELEVATION_BINS))
)


def _converse_directional(code: int) -> str:
    azimuth, elevation = divmod(code, len(ELEVATION_BINS))
    flipped = azimuth if azimuth == NO_AZIMUTH else (azimuth + 4) % len(COMPASS)
    return directional_name(flipped, 2 - elevation)


@dataclass(frozen=True, slots=True)
class PredicateSpec:
    """A predicate name, its type and its converse (``p(a, b) ⇔ converse(b, a)``).

    Attributes:
        name: The phrase, e.g. ``"north-east-and-up of"``.
        kind: ``"directional"``, ``"semantic"`` or ``"containment"``.
        converse: The predicate that holds with subject and target swapped (``None`` for
            containment).
    """

    name: str
    kind: str
    converse: str | None


PREDICATES: Registry[PredicateSpec] = Registry("predicate")
for _code, _name in enumerate(DIRECTIONAL_PREDICATES):
    PREDICATES.add(_name, PredicateSpec(_name, "directional", _converse_directional(_code)))
for _name, _converse in zip(
    SEMANTIC_PREDICATES,
    ("near", "far from", "lower than", "higher than", "below", "above"),
    strict=True,
):
    PREDICATES.add(_name, PredicateSpec(_name, "semantic", _converse))
PREDICATES.add(CONTAINMENT_PREDICATE, PredicateSpec(CONTAINMENT_PREDICATE, "containment", None))


@dataclass(frozen=True, eq=False)
class Geometry:
    """Per-object geometry arrays of one room (``n`` objects).

    Attributes:
        centers: ``(n, 3)`` centres.
        box_min: ``(n, 3)`` box minima (the centre where there is no box).
        box_max: ``(n, 3)`` box maxima (the centre where there is no box).
        has_box: ``(n,)`` True where the object has a box (explicit or from its size).
        radius: ``(n,)`` bounding radii (0 where there is none).
        has_radius: ``(n,)`` True where the object has a bounding radius.
    """

    centers: np.ndarray
    box_min: np.ndarray
    box_max: np.ndarray
    has_box: np.ndarray
    radius: np.ndarray
    has_radius: np.ndarray

    @classmethod
    def from_objects(cls, objects: Sequence[SceneObject]) -> Geometry:
        """Collect the geometry of ``objects`` (in order) into arrays."""
        boxes = [o.box for o in objects]
        radii = [o.bounding_radius for o in objects]
        centers = np.array([o.center for o in objects], dtype=np.float64).reshape(-1, 3)
        box_min = np.array(
            [o.center if b is None else b.min for o, b in zip(objects, boxes, strict=True)],
            dtype=np.float64,
        ).reshape(-1, 3)
        box_max = np.array(
            [o.center if b is None else b.max for o, b in zip(objects, boxes, strict=True)],
            dtype=np.float64,
        ).reshape(-1, 3)
        return cls(
            centers=centers,
            box_min=box_min,
            box_max=box_max,
            has_box=np.array([b is not None for b in boxes], dtype=bool),
            radius=np.array([0.0 if r is None else r for r in radii], dtype=np.float64),
            has_radius=np.array([r is not None for r in radii], dtype=bool),
        )


@dataclass(frozen=True, eq=False)
class PairMetrics:
    """Metrics of every ordered pair of a room, as ``(n, n)`` arrays indexed ``[subject, target]``.

    Entries that a pair's geometry does not define (AABB gap without two boxes, sphere gap without
    two radii, footprint overlap without two boxes) are NaN here and ``None`` in records and JSON.

    Attributes:
        delta: ``(n, n, 3)`` displacement ``c_subject − c_target``.
        center_distance: ``‖δ‖``.
        horizontal_distance: ``√(δx² + δz²)``.
        aabb_distance: Surface-to-surface AABB distance.
        sphere_distance: Bounding-sphere surface distance.
        used_distance: The distance the proximity thresholds use.
        distance_type: Index into :data:`DISTANCE_TYPES` of the used distance.
        azimuth_deg: Ground-plane angle of δ, counter-clockwise from east (informational).
        azimuth_bin: Index into :data:`AZIMUTH_BINS`.
        elevation_deg: Angle of δ above the ground plane (informational).
        elevation_bin: Index into :data:`ELEVATION_BINS`.
        footprint_overlap: x–z footprint intersection area over the smaller footprint.
    """

    NULLABLE: ClassVar[frozenset[str]] = frozenset(
        {"aabb_distance", "sphere_distance", "footprint_overlap"}
    )
    VOCABULARIES: ClassVar[dict[str, tuple[str, ...]]] = {
        "distance_type": DISTANCE_TYPES,
        "azimuth_bin": AZIMUTH_BINS,
        "elevation_bin": ELEVATION_BINS,
    }

    delta: np.ndarray
    center_distance: np.ndarray
    horizontal_distance: np.ndarray
    aabb_distance: np.ndarray
    sphere_distance: np.ndarray
    used_distance: np.ndarray
    distance_type: np.ndarray
    azimuth_deg: np.ndarray
    azimuth_bin: np.ndarray
    elevation_deg: np.ndarray
    elevation_bin: np.ndarray
    footprint_overlap: np.ndarray

    @staticmethod
    def field_names() -> tuple[str, ...]:
        """Names of the metric arrays, in declaration order."""
        return tuple(f.name for f in dataclasses.fields(PairMetrics))

    def directional_codes(self) -> np.ndarray:
        """``(n, n)`` indices into :data:`DIRECTIONAL_PREDICATES`."""
        return self.azimuth_bin.astype(np.int16) * len(ELEVATION_BINS) + self.elevation_bin

    def equals(self, other: PairMetrics) -> bool:
        """Exact equality of every array (NaN equal to NaN)."""
        return all(
            np.array_equal(getattr(self, name), getattr(other, name), equal_nan=True)
            for name in self.field_names()
        )


def aabb_distance(box_min: np.ndarray, box_max: np.ndarray) -> np.ndarray:
    """Surface-to-surface distance of every ordered pair of boxes (0 when they touch or overlap).

    >>> lo = np.array([[0.0, 0.0, 0.0], [2.0, 0.0, 3.0]])
    >>> hi = lo + 1.0
    >>> float(aabb_distance(lo, hi)[0, 1])  # gaps (1, 0, 2)
    2.23606797749979
    """
    gap = np.maximum(
        np.maximum(
            box_min[:, None, :] - box_max[None, :, :], box_min[None, :, :] - box_max[:, None, :]
        ),
        0.0,
    )
    return np.sqrt(np.sum(gap * gap, axis=-1))


def sphere_distance(center_distance: np.ndarray, radius: np.ndarray) -> np.ndarray:
    """Bounding-sphere surface distance ``max(0, d_center − r_s − r_t)`` of every ordered pair."""
    return np.maximum(center_distance - (radius[:, None] + radius[None, :]), 0.0)


def footprint_overlap(box_min: np.ndarray, box_max: np.ndarray) -> np.ndarray:
    """Area of the x–z intersection of two footprints over the smaller footprint, in [0, 1].

    A degenerate (zero-area) smaller footprint gives 0: such an object is never "over" another.

    >>> lo = np.array([[0.0, 0.0, 0.0], [0.5, 1.0, 0.0]])
    >>> hi = np.array([[2.0, 1.0, 2.0], [1.5, 1.2, 1.0]])
    >>> float(footprint_overlap(lo, hi)[1, 0])
    1.0
    """
    xz = [0, 2]
    lo, hi = box_min[:, xz], box_max[:, xz]
    side = np.maximum(
        np.minimum(hi[:, None, :], hi[None, :, :]) - np.maximum(lo[:, None, :], lo[None, :, :]), 0.0
    )
    inter = side[..., 0] * side[..., 1]
    extent = hi - lo
    area = extent[:, 0] * extent[:, 1]
    smaller = np.minimum(area[:, None], area[None, :])
    return np.divide(inter, smaller, out=np.zeros_like(inter), where=smaller > 0.0)


# Directions of the eight sector edges, at 22.5° + 45° m; edge m + 4 is exactly −(edge m).
_C, _S = math.cos(math.radians(22.5)), math.sin(math.radians(22.5))
_HALF_EDGES = ((_C, _S), (_S, _C), (-_S, _C), (-_C, _S))


def azimuth_bins(
    east: np.ndarray, north: np.ndarray, horizontal: np.ndarray, min_horizontal: float
) -> np.ndarray:
    """Compass sector (index into :data:`AZIMUTH_BINS`) of ground-plane displacements.

    Sector ``k`` covers ``[45k − 22.5°, 45k + 22.5°)`` counter-clockwise from east: a displacement
    exactly on an edge goes to the counter-clockwise sector. Displacements shorter than
    ``min_horizontal`` get ``"none"``.

    >>> e, n = np.array([1.0, _C, _C, 0.0]), np.array([0.0, _S, -_S, 0.0])
    >>> [AZIMUTH_BINS[b] for b in azimuth_bins(e, n, np.hypot(e, n), 0.01)]
    ['east', 'north-east', 'east', 'none']
    """
    half = [ex * north - ey * east for ex, ey in _HALF_EDGES]
    cross = half + [-c for c in half]
    bins = np.full(np.shape(east), NO_AZIMUTH, dtype=np.int8)
    for k in range(len(COMPASS)):
        bins[(cross[k - 1] >= 0.0) & (cross[k] < 0.0)] = k
    bins[horizontal < min_horizontal] = NO_AZIMUTH
    return bins


def elevation_bins(dy: np.ndarray, horizontal: np.ndarray, level_angle: float) -> np.ndarray:
    """Elevation bin (index into :data:`ELEVATION_BINS`); exactly at ``level_angle`` is level.

    >>> [ELEVATION_BINS[b] for b in elevation_bins(np.array([1.0, 0.1, -1.0]), np.ones(3), 30.0)]
    ['up', 'level', 'down']
    """
    slope = math.tan(math.radians(level_angle)) * horizontal
    bins = np.full(np.shape(dy), LEVEL, dtype=np.int8)
    bins[dy > slope] = UP
    bins[dy < -slope] = DOWN
    return bins


def pair_metrics(geometry: Geometry, config: RelationConfig) -> PairMetrics:
    """All metrics of every ordered pair ``[subject, target]`` of one room.

    Args:
        geometry: The room's object geometry.
        config: Thresholds (the azimuth and elevation bins use ``min_horizontal`` and
            ``level_angle``).

    Returns:
        The metric arrays; the diagonal (an object with itself) holds the values of ``δ = 0``.
    """
    c = geometry.centers
    delta = c[:, None, :] - c[None, :, :]
    dx, dy, dz = delta[..., 0], delta[..., 1], delta[..., 2]
    center = np.sqrt(dx * dx + dy * dy + dz * dz)
    horizontal = np.sqrt(dx * dx + dz * dz)
    both_box = geometry.has_box[:, None] & geometry.has_box[None, :]
    both_radius = geometry.has_radius[:, None] & geometry.has_radius[None, :]
    aabb = np.where(both_box, aabb_distance(geometry.box_min, geometry.box_max), np.nan)
    sphere = np.where(both_radius, sphere_distance(center, geometry.radius), np.nan)
    kind = np.where(both_box, AABB_TYPE, np.where(both_radius, SPHERE_TYPE, CENTER_TYPE))
    used = np.where(both_box, aabb, np.where(both_radius, sphere, center))
    overlap = np.where(both_box, footprint_overlap(geometry.box_min, geometry.box_max), np.nan)
    east, north = dx + 0.0, 0.0 - dz  # never -0.0: keeps azimuth_deg in (-180, 180]
    return PairMetrics(
        delta=delta,
        center_distance=center,
        horizontal_distance=horizontal,
        aabb_distance=aabb,
        sphere_distance=sphere,
        used_distance=used,
        distance_type=kind.astype(np.int8),
        azimuth_deg=np.degrees(libm.atan2(north, east)),
        azimuth_bin=azimuth_bins(east, north, horizontal, config.min_horizontal),
        elevation_deg=np.degrees(libm.atan2(dy, horizontal)),
        elevation_bin=elevation_bins(dy, horizontal, config.level_angle),
        footprint_overlap=overlap,
    )


def at_least(value: np.ndarray, holds: float, fails: float) -> np.ndarray:
    """Three-valued ``value ≥ holds``: TRUE at or above ``holds``, FALSE at or below ``fails``.

    >>> at_least(np.array([0.0, 0.2, 0.3, 0.5]), holds=0.3, fails=0.1).tolist()
    [0, 2, 1, 1]
    """
    codes = np.full(np.shape(value), UNDECIDED_CODE, dtype=np.int8)
    codes[value >= holds] = TRUE_CODE
    codes[value <= fails] = FALSE_CODE
    return codes


def at_most(value: np.ndarray, holds: float, fails: float) -> np.ndarray:
    """Three-valued ``value ≤ holds``: TRUE at or below ``holds``, FALSE at or above ``fails``.

    >>> at_most(np.array([0.5, 0.7, 1.0]), holds=0.5, fails=1.0).tolist()
    [1, 2, 0]
    """
    codes = np.full(np.shape(value), UNDECIDED_CODE, dtype=np.int8)
    codes[value <= holds] = TRUE_CODE
    codes[value >= fails] = FALSE_CODE
    return codes


def kleene_and(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Three-valued AND of truth-code arrays.

    >>> kleene_and(np.array([1, 1, 2, 0]), np.array([1, 2, 2, 2])).tolist()
    [1, 2, 2, 0]
    """
    out = np.full(np.broadcast_shapes(np.shape(a), np.shape(b)), UNDECIDED_CODE, dtype=np.int8)
    out[(a == TRUE_CODE) & (b == TRUE_CODE)] = TRUE_CODE
    out[(a == FALSE_CODE) | (b == FALSE_CODE)] = FALSE_CODE
    return out


def semantic_truths(metrics: PairMetrics, geometry: Geometry, config: RelationConfig) -> np.ndarray:
    """Truth codes of the semantic predicates for every ordered pair ``[subject, target]``.

    Args:
        metrics: The room's pair metrics.
        geometry: The room's geometry (which objects have boxes).
        config: The thresholds.

    Returns:
        ``(len(SEMANTIC_PREDICATES), n, n)`` int8 codes, in the order of
        :data:`SEMANTIC_PREDICATES`.
    """
    used = metrics.used_distance
    near = at_most(used, config.near_holds, config.near_fails)
    far = at_least(used, config.far_holds, config.far_fails)
    higher = at_least(metrics.delta[..., 1], config.higher_holds, config.higher_fails)
    both_box = geometry.has_box[:, None] & geometry.has_box[None, :]
    over = np.where(
        both_box,
        at_least(metrics.footprint_overlap, config.overlap_holds, config.overlap_fails),
        at_most(
            metrics.horizontal_distance,
            config.stack_horizontal_holds,
            config.stack_horizontal_fails,
        ),
    )
    above = kleene_and(higher, over)
    return np.stack([near, far, higher, higher.T, above, above.T]).astype(np.int8)
