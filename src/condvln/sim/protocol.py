"""The observation protocol: what an agent perceives at every step, stamped into run manifests.

An :class:`ObservationProtocol` is a frozen pydantic model; its JSON dump goes into every run's
``manifest.json`` so a result always says what the agent could see. An :class:`Observation`
holds the instruction text, the optional pose (habitat's GPS + compass: position and heading),
the optional room type the agent stands in, and the object :class:`Detection` s in its field of
view. Nothing in an observation is a label: no goals, branches or reference paths.

Detections are symbolic (category + geometry), as from a perfect 3D detector unless perception
noise is switched on. Bearings are relative to the heading, radians, positive to the left
(counter-clockwise seen from above); depth is the horizontal distance to the object's centre.

>>> ObservationProtocol().fov_deg, ObservationProtocol(panoramic=True).half_fov
(90.0, 3.141592653589793)
>>> parse_protocol({'miss_rate': 1.5})
Traceback (most recent call last):
...
condvln.errors.ConfigError: invalid observation protocol: miss_rate: Input should be less than or equal to 1
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pydantic
from pydantic import BaseModel, ConfigDict, Field

from condvln.errors import ConfigError
from condvln.io import dumps_json

Vec3 = tuple[float, float, float]


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
        return hashlib.sha256(dumps_json(self.model_dump(mode="json"))).hexdigest()[:16]


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
        where = ".".join(str(p) for p in err["loc"])
        raise ConfigError(f"invalid observation protocol: {where}: {err['msg']}") from None


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
    """

    instruction: str
    step: int
    position: Vec3 | None
    heading: float | None
    room_type: str | None
    detections: tuple[Detection, ...]
    collided: bool = False
