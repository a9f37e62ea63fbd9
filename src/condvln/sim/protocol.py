"""The observation protocol: what an agent perceives at every step, stamped into run manifests.

An :class:`ObservationProtocol` is a frozen pydantic model; its JSON dump goes into every run's
``manifest.json`` so a result always says what the agent could see. An :class:`Observation`
holds the instruction text, the optional pose (habitat's GPS + compass: position and heading),
the optional room type the agent stands in, and the object :class:`Detection` s in its field of
view. Nothing in an observation is a label: no goals, branches or reference paths.

Detections are symbolic (category + geometry), as from a perfect 3D detector unless perception
noise is switched on. Bearings are relative to the heading, radians, positive to the left
(counter-clockwise seen from above); depth is the horizontal distance to the object's centre.

**Pixel sensors.** ``sensors`` switches on egocentric cameras rendered from the composed scene
mesh (:mod:`condvln.sim.render`): ``"rgb"`` (uint8 H×W×3), ``"depth"`` (float32 H×W×1, metres
or normalised to [0, 1]) and ``"semantic"`` (int32 H×W×1 instance ids, see
:class:`~condvln.sim.render.SemanticTable`). Their defaults follow VLN-CE's
``vlnce_task.yaml`` over habitat-lab's sensor defaults: RGB 224×224, depth 256×256, HFOV 90°,
camera 1.25 m above the agent's base, depth clipped to [0, 10] m and normalised; the semantic
camera defaults to the depth camera's size so their pixels line up.

>>> ObservationProtocol().fov_deg, ObservationProtocol(panoramic=True).half_fov
(90.0, 3.141592653589793)
>>> p = parse_protocol({'sensors': ['rgb', 'depth'], 'depth': {'max_depth': 5.0}})
>>> p.sensors, (p.rgb.width, p.rgb.height, p.rgb.hfov), p.depth.max_depth, p.depth.normalize_depth
(('rgb', 'depth'), (224, 224, 90.0), 5.0, True)
>>> parse_protocol({'miss_rate': 1.5})
Traceback (most recent call last):
...
condvln.errors.ConfigError: invalid observation protocol: miss_rate: Input should be less than or equal to 1
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pydantic
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from condvln.errors import ConfigError
from condvln.io import dumps_json

Vec3 = tuple[float, float, float]

SensorName = Literal["rgb", "depth", "semantic"]
"""The pixel sensors, named by their habitat observation keys."""

SENSOR_HEIGHT = 1.25
"""Camera height above the agent's base (habitat-lab's default sensor ``POSITION`` y)."""


class CameraConfig(BaseModel):
    """A pinhole camera on the agent (habitat's ``*_SENSOR`` keys, lower case).

    Attributes:
        width: Image width in pixels.
        height: Image height in pixels.
        hfov: Horizontal field of view in degrees.
        position: Camera offset in the agent frame ``(right, up, back)`` in metres (habitat's
            ``POSITION``); the camera looks along the agent's heading.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    width: int = Field(224, ge=1, le=4096)
    height: int = Field(224, ge=1, le=4096)
    hfov: float = Field(90.0, gt=0.0, lt=180.0)
    position: Vec3 = (0.0, SENSOR_HEIGHT, 0.0)

    @property
    def optics(self) -> tuple[int, int, float, Vec3]:
        """``(width, height, hfov, position)``: cameras with equal optics share one ray cast."""
        return (self.width, self.height, self.hfov, self.position)


class DepthConfig(CameraConfig):
    """The depth camera: habitat's ``DEPTH_SENSOR`` (z-depth along the optical axis).

    Attributes:
        min_depth: Depths are clipped to at least this (m).
        max_depth: Depths are clipped to at most this (m).
        normalize_depth: Map ``[min_depth, max_depth]`` to ``[0, 1]``.
    """

    width: int = Field(256, ge=1, le=4096)
    height: int = Field(256, ge=1, le=4096)
    min_depth: float = Field(0.0, ge=0.0)
    max_depth: float = Field(10.0, gt=0.0)
    normalize_depth: bool = True

    @model_validator(mode="after")
    def _range(self) -> DepthConfig:
        if self.max_depth <= self.min_depth:
            raise ValueError(f"max_depth {self.max_depth} must exceed min_depth {self.min_depth}")
        return self

    def metres(self, depth: np.ndarray) -> np.ndarray:
        """Depth in metres from this sensor's output (undoes the normalisation)."""
        if not self.normalize_depth:
            return depth
        return depth * (self.max_depth - self.min_depth) + self.min_depth


class SemanticConfig(CameraConfig):
    """The semantic camera: instance ids per pixel (defaults to the depth camera's size)."""

    width: int = Field(256, ge=1, le=4096)
    height: int = Field(256, ge=1, le=4096)


class ObservationProtocol(BaseModel):
    """What the simulator tells an agent (every field is a switch or a parameter).

    Attributes:
        pose: Give the agent its position and heading (GPS + compass) and detections' world
            positions.
        room_type: Give the agent the type of the room it stands in ("kitchen"), or ``None``
            outside every room.
        fov_deg: Horizontal field of view in degrees (ignored when ``panoramic``).
        view_range: Detections are limited to this horizontal distance in metres.
        panoramic: See all around (360°) instead of within ``fov_deg``.
        boxes: Give each detection its box extent (a 3D detector's box), else ``None``.
        miss_rate: Probability that a visible object is not detected at a step.
        false_detection_rate: Probability per step of one spurious detection of a random scene
            category at a random bearing and depth in view.
        confusion_rate: Probability that a detection's category is swapped for another category
            of the scene.
        map_access: Give the agent a :class:`~condvln.sim.mapview.MapView` (planner over the
            navigable map, never object positions or room types).
        detections: Give the symbolic detections (off for agents that must perceive from
            pixels only).
        sensors: Pixel sensors rendered at every step (``"rgb"``, ``"depth"``,
            ``"semantic"``); none by default.
        rgb: The RGB camera.
        depth: The depth camera.
        semantic: The semantic camera.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    pose: bool = True
    room_type: bool = True
    fov_deg: float = Field(90.0, gt=0.0, le=360.0)
    view_range: float = Field(5.0, gt=0.0)
    panoramic: bool = False
    boxes: bool = True
    miss_rate: float = Field(0.0, ge=0.0, le=1.0)
    false_detection_rate: float = Field(0.0, ge=0.0, le=1.0)
    confusion_rate: float = Field(0.0, ge=0.0, le=1.0)
    map_access: bool = True
    detections: bool = True
    sensors: tuple[SensorName, ...] = ()
    rgb: CameraConfig = CameraConfig()
    depth: DepthConfig = DepthConfig()
    semantic: SemanticConfig = SemanticConfig()

    @field_validator("sensors")
    @classmethod
    def _unique_sensors(cls, sensors: tuple[str, ...]) -> tuple[str, ...]:
        if len(set(sensors)) != len(sensors):
            raise ValueError(f"a sensor is listed twice: {list(sensors)}")
        return sensors

    @property
    def half_fov(self) -> float:
        """Half the horizontal field of view in radians (π when panoramic)."""
        return math.pi if self.panoramic else math.radians(0.5 * self.fov_deg)

    @property
    def noisy(self) -> bool:
        """Whether any perception noise is on."""
        return self.miss_rate > 0 or self.false_detection_rate > 0 or self.confusion_rate > 0

    def protocol_hash(self) -> str:
        """First 16 hex digits of the SHA-256 of the canonical JSON dump."""
        return protocol_stamp(self)[1]


def protocol_stamp(
    protocol: ObservationProtocol, text: Mapping[str, Any] | None = None
) -> tuple[dict[str, Any], str]:
    """The run manifest's ``protocol`` (JSON dump) and ``protocol_hash`` (16 hex digits).

    ``text`` is the stamp of the text rendering an agent reads the observations through
    (:meth:`condvln.sim.text_obs.TextObsConfig.stamp`, plus its prompt): it is added to the
    dump as ``"text"``, so the hash, resumes and merges tell renderings apart. Without it the
    dump is the protocol's own.

    >>> dump, digest = protocol_stamp(ObservationProtocol())
    >>> "text" in dump, digest == ObservationProtocol().protocol_hash()
    (False, True)
    >>> protocol_stamp(ObservationProtocol(), {"renderer": "condvln-text"})[1] != digest
    True
    """
    dump = protocol.model_dump(mode="json")
    if text is not None:
        dump["text"] = dict(text)
    return dump, hashlib.sha256(dumps_json(dump)).hexdigest()[:16]


def parse_protocol(data: Mapping[str, Any] | ObservationProtocol | None) -> ObservationProtocol:
    """Build a protocol from a mapping (defaults for missing fields) with a one-line error.

    Raises:
        ConfigError: An unknown field or an invalid value.
    """
    if data is None:
        return ObservationProtocol()
    if isinstance(data, ObservationProtocol):
        return data
    try:
        return ObservationProtocol.model_validate(dict(data))
    except pydantic.ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "protocol"
        message = str(err["msg"]).removeprefix("Value error, ")
        raise ConfigError(f"invalid observation protocol: {where}: {message}") from None


@dataclass(frozen=True, slots=True)
class Detection:
    """One detected object.

    Attributes:
        category: Detected category (may be wrong under confusion noise).
        bearing: Direction relative to the heading, radians in [−π, π), + = to the left.
        depth: Horizontal distance from the agent to the object's centre (m).
        position: World position of the centre (``None`` unless the protocol gives the pose).
        size: Box extent ``(x, y, z)`` (``None`` unless the protocol gives boxes and the object
            has one).
    """

    category: str
    bearing: float
    depth: float
    position: Vec3 | None = None
    size: Vec3 | None = None


@dataclass(frozen=True, slots=True)
class Observation:
    """What the agent perceives after a reset or an action.

    Attributes:
        instruction: The instruction text.
        step: Actions taken so far in the episode.
        position: The agent's position (``None`` unless the protocol gives the pose).
        heading: The agent's yaw in radians (counter-clockwise from −Z), or ``None``.
        room_type: Type of the room the agent stands in (``None`` when off or outside).
        detections: Objects detected at this step.
        collided: Whether the last action was a forward move that hit something.
        images: The protocol's pixel sensors by name (``"rgb"``, ``"depth"``, ``"semantic"``),
            habitat shapes and dtypes; empty without sensors.
    """

    instruction: str
    step: int
    position: Vec3 | None
    heading: float | None
    room_type: str | None
    detections: tuple[Detection, ...]
    collided: bool = False
    images: Mapping[str, np.ndarray] = field(default_factory=dict)
