"""Source ``mp3d``: Matterport3D ``.house`` files (``ASCII 1.1``, ``house_segmentations``).

The format (``niessner/Matterport: data_organization.md``, R lines corrected by Matterport#9) is
one record per line, fields separated by runs of spaces, the first line ``ASCII 1.1``. Used here:

* ``H name label …`` — the house name (the scene id is ``mp3d/<name>``);
* ``L level_index …`` — levels (counted);
* ``R region level 0 0 code px py pz xlo ylo zlo xhi yhi zhi height 0 0 0 0`` — one room per
  region. ``code`` is a one-letter region label (:data:`REGION_CODES`); ``-`` (no label) and
  unknown codes get the room type ``"room"``. The floor height is the region box's ``zlo``; the
  ceiling height is ``height`` (the box's ``zhi − zlo`` when it is not positive);
* ``S surface region 0 label …`` and ``V vertex surface label px py pz …`` — the region's floor
  outline. The floor polygon is the largest surface polygon of the region (its vertices in file
  order); a region without one gets its box's ``x``–``z`` rectangle (Habitat frame) instead;
* ``C category mapping_index raw_name mpcat40_index mpcat40_name …`` — the object's category is
  the mpcat40 name of ``mpcat40_index`` in the packaged table (:data:`MPCAT40_TABLE`), normalised
  (``chest_of_drawers`` → ``"chest of drawers"``); the label is the raw name with ``#`` → space;
* ``O object region category cx cy cz a0x a0y a0z a1x a1y a1z r0 r1 r2 …`` — an oriented box:
  centre, two axes (the third is ``a0 × a1``), half-extents. The object's AABB is the world
  box of the oriented one, ``half[j] = Σ_i |a_i[j]| · r_i``; the axes carry no front, so yaw
  stays 0.

Objects with region ``-1``, with category ``-1`` or whose mpcat40 class is structural
(:data:`STRUCTURAL` — walls, floors, ceilings, void, unlabeled) are kept out and counted in
``scene.metadata`` (``objects_without_region``, ``objects_without_category``,
``structural_objects``). Portal ``P`` lines are documented but absent in practice (real files use
``P`` for panoramas), so the file gives no doors; instead rooms on one level whose outlines touch
or overlap are joined by ``kind="opening"`` doors along the shared boundary
(:func:`~condvln.scene.sources._geometry.openings`). Other record kinds (``P``, ``I``, ``E``) are
ignored.

Everything is mapped from Matterport's Z-up frame with
:func:`~condvln.frames.habitat_from_zup` (``(x, y, z) → (x, z, −y)``, boxes with
:func:`~condvln.frames.habitat_box_from_zup`), as habitat-sim does when it loads a ``.house``.

:data:`MPCAT40_TABLE` is ``metadata/mpcat40.tsv`` of ``niessner/Matterport`` (MIT), verbatim.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from condvln.errors import SceneFormatError
from condvln.frames import habitat_box_from_zup
from condvln.io import LIMITS, read_bytes
from condvln.scene.labels import normalize_category
from condvln.scene.model import AABB, Point2, Room, Scene, SceneObject, Vec3, polygon_area
from condvln.scene.sources import SceneSource
from condvln.scene.sources._geometry import counter_clockwise, openings, rectangle

HEADER = "ASCII 1.1"
MPCAT40_TABLE = "mpcat40.tsv"
"""Packaged mpcat40 table (file name inside ``condvln/data``)."""

REGION_CODES: dict[str, tuple[str, str]] = {
    "a": ("bathroom", "bathroom"),
    "b": ("bedroom", "bedroom"),
    "c": ("closet", "closet"),
    "d": ("dining room", "dining room"),
    "e": ("entryway/foyer/lobby", "hallway"),
    "f": ("familyroom", "living room"),
    "g": ("garage", "garage"),
    "h": ("hallway", "hallway"),
    "i": ("library", "office"),
    "j": ("laundryroom/mudroom", "laundry room"),
    "k": ("kitchen", "kitchen"),
    "l": ("living room", "living room"),
    "m": ("meetingroom/conferenceroom", "meeting room"),
    "n": ("lounge", "living room"),
    "o": ("office", "office"),
    "p": ("porch/terrace/deck/driveway", "porch"),
    "r": ("rec/game", "rec room"),
    "s": ("stairs", "stairs"),
    "t": ("toilet", "bathroom"),
    "u": ("utilityroom/toolroom", "laundry room"),
    "v": ("tv", "living room"),
    "w": ("workout/gym/exercise", "gym"),
    "x": ("outdoor", "outdoor"),
    "y": ("balcony", "balcony"),
    "z": ("other room", "room"),
    "B": ("bar", "bar"),
    "C": ("classroom", "classroom"),
    "D": ("dining booth", "dining room"),
    "S": ("spa/sauna", "spa"),
    "Z": ("junk", "room"),
    "-": ("no label", "room"),
}
"""Region code → (Matterport label, CondVLN room type); unknown codes get type ``"room"``."""

STRUCTURAL = frozenset({"void", "wall", "floor", "ceiling", "unlabeled"})
"""mpcat40 classes that are parts of the building, not objects: kept out of the scene."""

OBJECT_FIELDS = 15
REGION_FIELDS = 15
CATEGORY_FIELDS = 5


@functools.cache
def mpcat40_names() -> dict[int, str]:
    """The packaged mpcat40 table as ``index → name`` (``0`` void … ``41`` unlabeled).

    >>> names = mpcat40_names()
    >>> names[3], names[13], names[41], len(names)
    ('chair', 'chest_of_drawers', 'unlabeled', 42)
    """
    text = resources.files("condvln").joinpath("data", MPCAT40_TABLE).read_text("utf-8")
    rows = [line.split("\t") for line in text.splitlines()[1:] if line.strip()]
    return {int(row[0]): row[1] for row in rows}


# --- tokens --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Line:
    number: int
    kind: str
    fields: tuple[str, ...]

    @property
    def record(self) -> str:
        return f"line {self.number} ({self.kind})"

    def require(self, count: int) -> None:
        if len(self.fields) < count:
            raise SceneFormatError(
                f"needs {count} fields after {self.kind!r}, got {len(self.fields)}",
                record=self.record,
            )

    def integer(self, index: int, name: str) -> int:
        try:
            return int(self.fields[index])
        except ValueError:
            raise SceneFormatError(
                f"must be an integer, got {self.fields[index]!r}", record=self.record, field=name
            ) from None

    def numbers(self, start: int, count: int, name: str) -> tuple[float, ...]:
        raw = self.fields[start : start + count]
        try:
            values = tuple(float(v) for v in raw)
        except ValueError:
            values = ()
        if len(values) != count or not all(math.isfinite(v) for v in values):
            raise SceneFormatError(
                f"must be {count} finite numbers, got {' '.join(raw)!r}"[:200],
                record=self.record,
                field=name,
            )
        if any(abs(v) > LIMITS.max_coordinate for v in values):
            raise SceneFormatError(
                f"must be within ±{LIMITS.max_coordinate:g}, got {' '.join(raw)!r}"[:200],
                record=self.record,
                field=name,
            )
        return values


def _lines(text: str) -> list[_Line]:
    rows = text.splitlines()
    if not rows or rows[0].strip() != HEADER:
        first = rows[0].strip()[:40] if rows else ""
        raise SceneFormatError(
            f"must be {HEADER!r}, got {first!r}", record="line 1", field="header"
        )
    out = []
    for number, row in enumerate(rows[1:], start=2):
        tokens = row.split()
        if tokens:
            out.append(_Line(number, tokens[0], tuple(tokens[1:])))
    return out


# --- records -------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Region:
    index: int
    code: str
    box: tuple[Vec3, Vec3]  # Habitat frame
    height: float
    outline: tuple[Point2, ...] | None = None
    objects: list[SceneObject] = field(default_factory=list)


def _region(line: _Line) -> _Region:
    line.require(REGION_FIELDS)
    box_zup = line.numbers(8, 6, "bbox")
    if any(hi < lo for lo, hi in zip(box_zup[:3], box_zup[3:], strict=True)):
        raise SceneFormatError("max must be >= min", record=line.record, field="bbox")
    (height,) = line.numbers(14, 1, "height")
    lo, hi = habitat_box_from_zup(box_zup[:3], box_zup[3:])
    return _Region(line.integer(0, "region_index"), line.fields[4], (lo, hi), height)


def _category(line: _Line) -> tuple[int, str, str]:
    """(category index, mpcat40 name, raw label) of a C line."""
    line.require(CATEGORY_FIELDS)
    index = line.integer(0, "category_index")
    mpcat = line.integer(3, "mpcat40_index")
    names = mpcat40_names()
    if mpcat not in names:
        raise SceneFormatError(
            f"must be an mpcat40 index 0..{max(names)}, got {mpcat}",
            record=line.record,
            field="mpcat40_index",
        )
    return index, names[mpcat], line.fields[2].replace("#", " ").strip() or names[mpcat]


def obb_aabb(
    center: Sequence[float], axes: Sequence[Sequence[float]], radii: Sequence[float]
) -> tuple[Vec3, Vec3]:
    """World AABB ``(lo, hi)`` of an oriented box: ``half[j] = Σ_i |axes[i][j]| · radii[i]``.

    >>> lo, hi = obb_aabb((0, 0, 0), [(0, 1, 0), (-1, 0, 0), (0, 0, 1)], (2, 1, 0.5))
    >>> lo, hi
    ((-1.0, -2.0, -0.5), (1.0, 2.0, 0.5))
    """
    half = [sum(abs(axes[i][j]) * abs(radii[i]) for i in range(3)) for j in range(3)]
    lo = tuple(float(c) - h for c, h in zip(center, half, strict=True))
    hi = tuple(float(c) + h for c, h in zip(center, half, strict=True))
    return lo, hi  # type: ignore[return-value]


def _unit(v: Sequence[float], line: _Line, name: str) -> tuple[float, float, float]:
    norm = math.sqrt(sum(c * c for c in v))
    if norm <= 1e-9:
        raise SceneFormatError("must be a non-zero vector", record=line.record, field=name)
    return (v[0] / norm, v[1] / norm, v[2] / norm)


def _object_box(line: _Line) -> AABB:
    center = line.numbers(3, 3, "center")
    a0 = _unit(line.numbers(6, 3, "axis0"), line, "axis0")
    a1 = _unit(line.numbers(9, 3, "axis1"), line, "axis1")
    a2 = (
        a0[1] * a1[2] - a0[2] * a1[1],
        a0[2] * a1[0] - a0[0] * a1[2],
        a0[0] * a1[1] - a0[1] * a1[0],
    )
    radii = line.numbers(12, 3, "radii")
    lo, hi = obb_aabb(center, (a0, a1, a2), radii)
    return AABB(*habitat_box_from_zup(lo, hi))


# --- the house -----------------------------------------------------------------------------------


@dataclass(slots=True)
class _House:
    name: str | None = None
    levels: int = 0
    regions: dict[int, _Region] = field(default_factory=dict)
    categories: dict[int, tuple[str, str]] = field(default_factory=dict)
    surfaces: dict[int, int] = field(default_factory=dict)  # surface → region
    vertices: dict[int, list[Point2]] = field(default_factory=dict)  # surface → (x, z)
    object_lines: list[_Line] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    def count(self, key: str) -> None:
        self.counts[key] = self.counts.get(key, 0) + 1


def _read_line(house: _House, line: _Line) -> None:
    if line.kind == "H" and line.fields:
        house.name = line.fields[0]
    elif line.kind == "L":
        house.levels += 1
    elif line.kind == "R":
        region = _region(line)
        if region.index in house.regions:
            raise SceneFormatError("duplicate region index", record=line.record, field="index")
        house.regions[region.index] = region
    elif line.kind == "C":
        index, mpcat, label = _category(line)
        house.categories[index] = (mpcat, label)
    elif line.kind == "S":
        line.require(2)
        house.surfaces[line.integer(0, "surface_index")] = line.integer(1, "region_index")
    elif line.kind == "V":
        line.require(6)
        x, y, _ = line.numbers(3, 3, "position")
        house.vertices.setdefault(line.integer(1, "surface_index"), []).append((x, -y))
    elif line.kind == "O":
        line.require(OBJECT_FIELDS)
        house.object_lines.append(line)


def _add_object(house: _House, line: _Line) -> None:
    index = line.integer(0, "object_index")
    region_index = line.integer(1, "region_index")
    category_index = line.integer(2, "category_index")
    box = _object_box(line)
    if region_index == -1:
        house.count("objects_without_region")
        return
    if category_index == -1:
        house.count("objects_without_category")
        return
    if region_index not in house.regions:
        raise SceneFormatError(
            f"names unknown region {region_index}", record=line.record, field="region_index"
        )
    if category_index not in house.categories:
        raise SceneFormatError(
            f"names unknown category {category_index}", record=line.record, field="category_index"
        )
    mpcat, label = house.categories[category_index]
    if mpcat in STRUCTURAL:
        house.count("structural_objects")
        return
    house.regions[region_index].objects.append(
        SceneObject(
            id=f"object_{index}",
            category=normalize_category(mpcat),
            label=label,
            center=box.center,
            aabb=box,
        )
    )


def _attach_outlines(house: _House) -> None:
    """Give each region its largest surface polygon (``V`` points in file order)."""
    for surface, region_index in house.surfaces.items():
        region = house.regions.get(region_index)
        points = house.vertices.get(surface, [])
        if region is None or len(points) < 3:
            continue
        area = abs(polygon_area(points))
        if area > 1e-9 and (region.outline is None or area > abs(polygon_area(region.outline))):
            region.outline = counter_clockwise(points)


def _room(region: _Region) -> Room:
    label, room_type = REGION_CODES.get(region.code, (region.code, "room"))
    (x0, y0, z0), (x1, y1, z1) = region.box
    ceiling = region.height if region.height > 0.0 else y1 - y0
    return Room(
        id=f"region_{region.index}",
        room_type=room_type,
        label=label,
        objects=tuple(region.objects),
        floor_polygon=region.outline or rectangle(x0, z0, x1, z1),
        floor_height=y0,
        ceiling_height=ceiling if ceiling > 0.0 else None,
    )


def house_to_scene(text: str, name: str) -> Scene:
    """Build a :class:`Scene` ``mp3d/<name>`` from the text of a ``.house`` file.

    Args:
        text: The file's content.
        name: Fallback scene name when the file has no ``H`` line.

    Returns:
        The scene in the Habitat frame.

    Raises:
        SceneFormatError: a bad header, a malformed record, or no regions.
    """
    house = _House()
    lines = _lines(text)
    for line in lines:
        _read_line(house, line)
    if not house.regions:
        raise SceneFormatError("no region (R) lines: a scene needs at least one room")
    for line in house.object_lines:
        _add_object(house, line)
    _attach_outlines(house)
    rooms = [_room(house.regions[i]) for i in sorted(house.regions)]
    scene_name = house.name or name
    metadata = {
        "house": scene_name,
        "levels": house.levels,
        "objects_without_region": 0,
        "objects_without_category": 0,
        "structural_objects": 0,
        **house.counts,
    }
    return Scene(f"mp3d/{scene_name}", "mp3d", tuple(rooms), tuple(openings(rooms)), metadata)


def load(reference: str) -> Scene:
    """Load a Matterport3D ``.house`` file.

    Args:
        reference: Path of the ``.house`` file.

    Returns:
        The scene ``mp3d/<house name>`` in the Habitat frame.

    Raises:
        SceneFormatError: a one-line message naming the file, the line and the field.
    """
    path = Path(reference)
    try:
        text = read_bytes(path, SceneFormatError).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SceneFormatError(f"not a text file ({exc.reason})", file=str(path)) from None
    try:
        return house_to_scene(text, path.stem)
    except SceneFormatError as exc:
        raise exc.with_file(str(path)) from None


SOURCE = SceneSource(
    name="mp3d",
    description="Matterport3D .house files (regions → rooms, oriented boxes → objects)",
    reference="path of a .house file",
    load=load,
)
