"""Gymnasium spaces of the CondVLN observations and the conversion of an observation into them.

The ``Dict`` space matches the :class:`~condvln.sim.protocol.Observation` fields the protocol
switches on: ``instruction`` and ``room_type`` (``Text``; ``""`` outside every room), ``step``
(``Box`` int64, shape ``(1,)``), ``position`` (3,) and ``heading`` (1,) with the pose,
``collided`` (``Discrete(2)``) and ``detections``, a ``Sequence`` of ``Dict`` (``category``,
``bearing``, ``depth``, plus ``position`` with the pose and ``size`` with boxes, zeros when the
object has no box). With pixel ``sensors`` in the protocol it also has their images as ``Box`` es
with habitat's shapes and dtypes (:func:`image_spaces`): ``rgb`` uint8 H×W×3, ``depth`` float32
H×W×1 (in ``[0, 1]`` when normalised, else ``[min_depth, max_depth]`` metres) and ``semantic``
int32 H×W×1 instance ids. :mod:`condvln.gym.wrappers` turns the ``Text`` and ``Sequence`` parts
into fixed-size ``Box`` es.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from gymnasium import spaces

from condvln.sim.protocol import Observation, ObservationProtocol

CHARSET = "".join(chr(c) for c in range(32, 127)) + "".join(chr(c) for c in range(160, 384))
"""Characters allowed in the text observations (printable ASCII and Latin letters)."""

MAX_TEXT = 4096
MAX_STEP = 1_000_000
EXTENT = 10_000.0
"""Bound of coordinates and sizes in metres (Box spaces are finite)."""


def _text(max_length: int = MAX_TEXT) -> spaces.Text:
    return spaces.Text(max_length=max_length, min_length=0, charset=CHARSET)


def _box(shape: tuple[int, ...], low: float = -EXTENT, high: float = EXTENT) -> spaces.Box:
    return spaces.Box(low=low, high=high, shape=shape, dtype=np.float64)


def observation_space(protocol: ObservationProtocol) -> spaces.Dict:
    """The ``Dict`` space of a protocol's observations (see the module notes)."""
    detection: dict[str, spaces.Space] = {
        "category": _text(256),
        "bearing": _box((1,), -math.pi, math.pi),
        "depth": _box((1,), 0.0),
    }
    if protocol.pose:
        detection["position"] = _box((3,))
    if protocol.boxes:
        detection["size"] = _box((3,), 0.0)
    fields: dict[str, spaces.Space] = {
        "instruction": _text(),
        "step": spaces.Box(0, MAX_STEP, shape=(1,), dtype=np.int64),
        "collided": spaces.Discrete(2),
        "detections": spaces.Sequence(spaces.Dict(detection), stack=False),
    }
    if protocol.pose:
        fields["position"] = _box((3,))
        fields["heading"] = _box((1,), -math.pi, math.pi)
    if protocol.room_type:
        fields["room_type"] = _text(256)
    fields.update(image_spaces(protocol))
    return spaces.Dict(fields)


def image_spaces(protocol: ObservationProtocol) -> dict[str, spaces.Box]:
    """``Box`` spaces of the protocol's pixel sensors, with habitat's shapes and dtypes.

    >>> from condvln.sim.protocol import parse_protocol
    >>> boxes = image_spaces(parse_protocol({"sensors": ["rgb", "depth", "semantic"]}))
    >>> [(k, b.shape, b.dtype.name) for k, b in boxes.items()]
    [('rgb', (224, 224, 3), 'uint8'), ('depth', (256, 256, 1), 'float32'), ('semantic', (256, 256, 1), 'int32')]
    >>> float(boxes["depth"].low.min()), float(boxes["depth"].high.max())
    (0.0, 1.0)
    """
    out: dict[str, spaces.Box] = {}
    for name in protocol.sensors:
        if name == "rgb":
            cam = protocol.rgb
            out[name] = spaces.Box(0, 255, (cam.height, cam.width, 3), np.uint8)
        elif name == "depth":
            depth = protocol.depth
            low, high = (0.0, 1.0) if depth.normalize_depth else (depth.min_depth, depth.max_depth)
            out[name] = spaces.Box(low, high, (depth.height, depth.width, 1), np.float32)
        else:
            cam = protocol.semantic
            top = np.iinfo(np.int32).max
            out[name] = spaces.Box(0, top, (cam.height, cam.width, 1), np.int32)
    return out


def _clean(text: str) -> str:
    return "".join(c if c in CHARSET else "?" for c in text)


def to_gym(obs: Observation, protocol: ObservationProtocol) -> dict[str, Any]:
    """An :class:`Observation` as an element of :func:`observation_space`."""
    detections = []
    for det in obs.detections:
        item: dict[str, Any] = {
            "category": _clean(det.category),
            "bearing": np.array([det.bearing]),
            "depth": np.array([det.depth]),
        }
        if protocol.pose:
            item["position"] = np.array(det.position, dtype=np.float64)
        if protocol.boxes:
            item["size"] = np.array(det.size or (0.0, 0.0, 0.0), dtype=np.float64)
        detections.append(item)
    out: dict[str, Any] = {
        "instruction": _clean(obs.instruction),
        "step": np.array([obs.step], dtype=np.int64),
        "collided": int(obs.collided),
        "detections": tuple(detections),
    }
    if protocol.pose:
        out["position"] = np.array(obs.position, dtype=np.float64)
        out["heading"] = np.array([obs.heading], dtype=np.float64)
    if protocol.room_type:
        out["room_type"] = _clean(obs.room_type or "")
    for name in protocol.sensors:
        out[name] = obs.images[name]
    return out
