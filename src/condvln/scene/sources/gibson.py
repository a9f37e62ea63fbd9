"""Source ``gibson``: Gibson 3D Scene Graph files (``3DSceneGraph_<model>.npz``) and ``.scn``.

**3D Scene Graph ``.npz``** (``StanfordVL/3DSceneGraph``): the member ``output`` is a 0-d object
array holding a dict with ``building``, ``room`` and ``object`` (``camera`` and ``panorama`` are
not used). ``room`` and ``object`` map integer ids to records:

* room: ``scene_category`` (``living_room``, ``childs_room``, ``corridor``, … → room type via
  :func:`~condvln.scene.labels.normalize_room_type` and :data:`ROOM_TYPES`), ``location``
  (centre) and ``size`` (extent) of the room's box. The floor polygon is the box's rectangle,
  the floor height its bottom (``location.z − size.z / 2``), the ceiling height ``size.z``;
* object: ``class_`` (COCO name → category; the label is the raw name), ``location`` (centre),
  ``size`` (extent), ``parent_room`` (room id). Objects whose ``parent_room`` names no room, and
  ``.scn`` objects without a ``location``, are kept out and counted in ``scene.metadata``.

The file is a pickle, so it is **never unpickled with the plain unpickler**: the ``output.npy``
member is read from the zip archive, its header parsed by :mod:`numpy.lib.format`, and the
pickled payload decoded by :class:`SafeUnpickler`, which accepts plain containers, numbers,
strings and the numpy globals needed to rebuild arrays, dtypes and scalars
(:data:`ALLOWED_GLOBALS`). Any other global (``os.system``, ``builtins.eval``, …) is refused with
a :class:`~condvln.errors.SceneFormatError` before anything runs.

**habitat-sim ``.scn``** (JSON written by habitat-sim's ``tools/npz2scn.py``:
``{"objects": [...], "rooms": [...]}``, the npz records copied verbatim): read the same way. A
file without rooms (habitat-sim's ``GibsonTestScene.scn``) becomes one room enclosing its
objects (:func:`~condvln.scene.sources._geometry.enclosing_room`).

**Frame.** 3DSG coordinates are Gibson ``mesh.obj`` coordinates, Z up. Both file kinds are
mapped with :func:`~condvln.frames.habitat_from_zup`, ``(x, y, z) → (x, z, −y)``, and sizes with
the matching axis swap ``(sx, sy, sz) → (sx, sz, sy)``. Evidence: the 3DSG data are Z-up (the
Allensville building is 2.51 m tall in z, its toilet centre at z = 0.37); ``npz2scn.py`` copies
``location`` / ``size`` unchanged into the ``.scn``; and habitat-sim's ``loadGibsonHouse``
rotates both by ``R_x(−90°)`` (``quatf::FromTwoVectors(−Z, gravity −Y)``), which is this map.
The loader's own test (``GibsonSceneTest.cpp``) expects the ``.scn`` microwave stored as
``[2.83999, −1.49223, 4.76085]`` at ``(2.83999, 4.76085, 1.49223)``, which this map reproduces
(see ``tests/scene/test_gibson.py``). FORMATS §2.5 reports that stored triple as
``(x, −z, y)`` of the npz's values, i.e. that one test file is not a verbatim ``npz2scn``
output; the conflict cannot be settled without a licensed scene, and CondVLN follows
habitat-sim's loader (which gives real npz / npz2scn values sensible heights: the Allensville
toilet centre lands at y = 0.37).

Rooms on one level whose boxes touch or overlap are joined by ``kind="opening"`` doors
(:func:`~condvln.scene.sources._geometry.openings`): 3D Scene Graph has no doors.
"""

from __future__ import annotations

import io
import math
import pickle
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from condvln.errors import SceneFormatError
from condvln.frames import habitat_from_zup
from condvln.io import LIMITS, read_bytes, read_json, read_zip_member
from condvln.scene.labels import normalize_category, normalize_room_type
from condvln.scene.model import AABB, Room, Scene, SceneObject, Vec3
from condvln.scene.sources import SceneSource
from condvln.scene.sources._geometry import enclosing_room, openings, rectangle

ROOM_TYPES: dict[str, str] = {
    "empty_room": "room",
    "pantry_room": "pantry",
    "staircase": "stairs",
}
"""3DSG scene categories that :func:`normalize_room_type` does not already map."""

ALLOWED_GLOBALS: frozenset[tuple[str, str]] = frozenset(
    {
        ("numpy.core.multiarray", "_reconstruct"),
        ("numpy._core.multiarray", "_reconstruct"),
        ("numpy.core.multiarray", "scalar"),
        ("numpy._core.multiarray", "scalar"),
        ("numpy", "ndarray"),
        ("numpy", "dtype"),
        ("_codecs", "encode"),
        ("collections", "OrderedDict"),
    }
)
"""The only globals a 3D Scene Graph pickle may name (array / dtype / scalar rebuilding)."""

OUTPUT_MEMBER = "output.npy"

HEADER_READERS = {
    (1, 0): np.lib.format.read_array_header_1_0,
    (2, 0): np.lib.format.read_array_header_2_0,
}
"""``.npy`` header readers by format version (they parse the header without evaluating code)."""


class SafeUnpickler(pickle.Unpickler):
    """An unpickler that only rebuilds plain data: containers, numbers, strings, numpy arrays.

    >>> SafeUnpickler(io.BytesIO(pickle.dumps({"a": [1, 2.5, "x"]}))).load()
    {'a': [1, 2.5, 'x']}
    >>> SafeUnpickler(io.BytesIO(pickle.dumps(eval))).load()
    Traceback (most recent call last):
    ...
    condvln.errors.SceneFormatError: refused pickled global 'builtins.eval' (only plain data and numpy arrays are accepted)
    """

    def find_class(self, module: str, name: str) -> Any:
        """Resolve ``module.name`` only when it is in :data:`ALLOWED_GLOBALS`."""
        if (module, name) not in ALLOWED_GLOBALS:
            raise SceneFormatError(
                f"refused pickled global '{module}.{name}' "
                "(only plain data and numpy arrays are accepted)"
            )
        return super().find_class(module, name)


def _safe_unpickle(data: bytes) -> Any:
    try:
        return SafeUnpickler(io.BytesIO(data)).load()
    except SceneFormatError:
        raise
    except Exception as exc:  # a truncated or corrupt pickle raises many kinds of error
        raise SceneFormatError(f"corrupt pickle ({type(exc).__name__}: {exc})") from None


def read_npz_member(data: bytes, member: str = OUTPUT_MEMBER) -> Any:
    """One array of an ``.npz`` archive, unpickling object arrays with :class:`SafeUnpickler`.

    Args:
        data: The archive's bytes.
        member: The member name (``output.npy``).

    Returns:
        The array (``numpy.ndarray``).

    Raises:
        SceneFormatError: not a zip archive, no such member, a bad ``.npy`` header, a corrupt
            payload or a refused pickled global.
    """
    raw = read_zip_member(data, member, "", SceneFormatError)
    stream = io.BytesIO(raw)
    try:
        version = np.lib.format.read_magic(stream)
        if version not in HEADER_READERS:
            raise ValueError(f"unsupported .npy version {version}")
        shape, _, dtype = HEADER_READERS[version](stream)
    except ValueError as exc:
        raise SceneFormatError(f"bad .npy header ({exc})", field="output") from None
    payload = len(raw) - stream.tell()
    announced = math.prod(shape) * dtype.itemsize
    if not dtype.hasobject and announced != payload:
        raise SceneFormatError(
            f"header announces {announced} bytes of data, the member holds {payload}",
            field="output",
        )
    if not dtype.hasobject:
        stream.seek(0)
        return np.load(stream, allow_pickle=False)
    array = _safe_unpickle(raw[stream.tell() :])
    if not isinstance(array, np.ndarray) or array.shape != shape:
        raise SceneFormatError("does not hold the array its header announces", field="output")
    return array


# --- records -------------------------------------------------------------------------------------


def _shown(value: Any) -> str:
    """``repr(value)``, cut short; a pickled int too long to print is described instead."""
    try:
        return repr(value)[:160]
    except ValueError:  # Python refuses to print ints of more than 4,300 digits
        return "a value too large to print"


def _vec3(value: Any, record: str, field: str) -> Vec3:
    """Three finite numbers from a list, tuple or numpy array."""
    try:
        numbers = [float(v) for v in np.asarray(value, dtype=np.float64).reshape(-1)]
    except (TypeError, ValueError, OverflowError):  # a pickled int beyond the float range
        numbers = []
    if len(numbers) != 3 or not all(math.isfinite(v) for v in numbers):
        raise SceneFormatError(
            f"must be 3 finite numbers, got {_shown(value)}", record=record, field=field
        )
    if any(abs(v) > LIMITS.max_coordinate for v in numbers):
        raise SceneFormatError(
            f"must be within ±{LIMITS.max_coordinate:g}, got {_shown(value)}",
            record=record,
            field=field,
        )
    return numbers[0], numbers[1], numbers[2]


def _text(value: Any, record: str, field: str) -> str:
    if isinstance(value, np.ndarray) and value.shape == ():
        value = value.item()
    if not isinstance(value, str) or not value.strip():
        raise SceneFormatError(
            f"must be a non-empty string, got {_shown(value)}", record=record, field=field
        )
    return value


def _records(layer: Any, kind: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """``(id, record)`` pairs of a layer: an ``{id: record}`` dict (npz) or a list (``.scn``)."""
    if isinstance(layer, Mapping):
        items = list(layer.items())
    elif isinstance(layer, list):
        items = [(r.get("id", i) if isinstance(r, Mapping) else i, r) for i, r in enumerate(layer)]
    else:
        raise SceneFormatError(f"must be a dict or list, got {type(layer).__name__}", field=kind)
    for key, record in items:
        if isinstance(key, int) and not _small_int(key):
            raise SceneFormatError(f"id must fit in 64 bits, got {_shown(key)}", field=kind)
        if not isinstance(record, Mapping):
            raise SceneFormatError(
                f"must be a dict, got {type(record).__name__}", record=f"{kind} {_shown(key)}"
            )
        yield str(key), record


def _small_int(value: Any) -> bool:
    return isinstance(value, int | np.integer) and -(2**63) <= int(value) < 2**63


def _room_box(record: Mapping[str, Any], name: str) -> AABB:
    center = habitat_from_zup(_vec3(record.get("location"), name, "location"))
    sx, sy, sz = _vec3(record.get("size"), name, "size")
    if min(sx, sy, sz) <= 0.0:
        raise SceneFormatError(
            f"must be positive on every axis, got {[sx, sy, sz]}", record=name, field="size"
        )
    return AABB.from_center_size(center, (sx, sz, sy))


def _room(room_id: str, record: Mapping[str, Any], objects: list[SceneObject]) -> Room:
    name = f"room {room_id}"
    label = _text(record.get("scene_category"), name, "scene_category")
    box = _room_box(record, name)
    (x0, y0, z0), (x1, y1, z1) = box.min, box.max
    room_type = ROOM_TYPES.get(label.strip().lower(), normalize_room_type(label))
    return Room(
        id=f"room_{room_id}",
        room_type=room_type,
        label=label,
        objects=tuple(objects),
        floor_polygon=rectangle(x0, z0, x1, z1),
        floor_height=y0,
        ceiling_height=y1 - y0,
    )


def _object(object_id: str, record: Mapping[str, Any]) -> SceneObject | None:
    """The object in the Habitat frame, or ``None`` when it has no ``location``."""
    name = f"object {object_id}"
    label = _text(record.get("class_"), name, "class_")
    if record.get("location") is None:
        return None
    center = habitat_from_zup(_vec3(record["location"], name, "location"))
    size = None
    if record.get("size") is not None:
        sx, sy, sz = _vec3(record["size"], name, "size")
        size = (sx, sz, sy)
    return SceneObject(
        id=f"object_{object_id}",
        category=normalize_category(label),
        label=label,
        center=center,
        size=size,
    )


def _parent_room(record: Mapping[str, Any]) -> str | None:
    value = record.get("parent_room")
    if isinstance(value, np.ndarray) and value.shape == ():
        value = value.item()
    if value is None or isinstance(value, bool) or not _small_int(value):
        return None
    return str(int(value))


def graph_to_scene(data: Any, name: str) -> Scene:
    """Build a :class:`Scene` ``gibson/<name>`` from a 3D Scene Graph dict (or ``.scn`` JSON).

    Args:
        data: ``{"room": ..., "object": ...}`` (npz ``output``) or ``{"rooms", "objects"}``.
        name: Scene name used when the data has no ``building.name``.

    Returns:
        The scene in the Habitat frame.

    Raises:
        SceneFormatError: missing layers or malformed records.
    """
    if not isinstance(data, Mapping):
        raise SceneFormatError(f"must be a dict, got {type(data).__name__}", field="output")
    object_layer = data.get("object", data.get("objects"))
    if object_layer is None:
        raise SceneFormatError("missing", field="object")
    room_layer = data.get("room", data.get("rooms"))
    if room_layer is None:
        room_layer = {}
    room_records = dict(_records(room_layer, "room"))
    members: dict[str, list[SceneObject]] = {rid: [] for rid in room_records}
    loose: list[SceneObject] = []
    counts = {"objects_without_location": 0, "objects_without_room": 0}
    for object_id, record in _records(object_layer, "object"):
        obj = _object(object_id, record)
        parent = _parent_room(record)
        if obj is None:
            counts["objects_without_location"] += 1
        elif not room_records:
            loose.append(obj)
        elif parent in members:
            members[parent].append(obj)
        else:
            counts["objects_without_room"] += 1
    rooms = [_room(rid, record, members[rid]) for rid, record in room_records.items()]
    if not rooms:
        if not loose:
            raise SceneFormatError("no rooms and no located objects: nothing to build a room from")
        rooms = [enclosing_room("room_0", "room", "all objects", loose)]
    building = data.get("building")
    if isinstance(building, Mapping) and isinstance(building.get("name"), str):
        name = building["name"]
    return Scene(f"gibson/{name}", "gibson", tuple(rooms), tuple(openings(rooms)), counts)


def load(reference: str) -> Scene:
    """Load a Gibson 3D Scene Graph ``.npz`` or a habitat-sim Gibson ``.scn`` file.

    Args:
        reference: Path of ``3DSceneGraph_<model>.npz`` or ``<model>.scn``.

    Returns:
        The scene ``gibson/<model>`` in the Habitat frame.

    Raises:
        SceneFormatError: a one-line message naming the file, the record and the field.
    """
    path = Path(reference)
    name = path.stem.removeprefix("3DSceneGraph_")
    try:
        if path.suffix == ".npz":
            output = read_npz_member(read_bytes(path, SceneFormatError))
            if output.shape != ():
                raise SceneFormatError("must be a 0-d object array", field="output")
            data = output.item()
        else:
            data = read_json(path, SceneFormatError)
        return graph_to_scene(data, name)
    except SceneFormatError as exc:
        raise exc.with_file(str(path)) from None


SOURCE = SceneSource(
    name="gibson",
    description="Gibson 3D Scene Graph .npz (rooms and objects) or habitat-sim Gibson .scn",
    reference="path of 3DSceneGraph_<model>.npz or <model>.scn",
    load=load,
)
