"""Text observations: what the observation protocol gives an agent, rendered as plain text.

Renderer ``condvln-text``, version :data:`VERSION`. A language-model agent reads these lines
instead of :class:`~condvln.sim.protocol.Observation` objects; the renderer's name, version and
options (:meth:`TextObsConfig.stamp`) join the observation protocol in the run manifest
(:func:`~condvln.sim.protocol.protocol_stamp`), so runs that read different renderings never
resume into or merge with each other. Any change to the wording below is a new version.

What is rendered (only what the protocol gives; nothing is a label):

* the step and the step budget;
* where the agent is: the room type it stands in (with ``room_type`` on), its position
  ``(x, z)`` and heading as a compass word and degrees (with ``pose`` on and ``coordinates``);
  whether the last forward move was blocked;
* the objects in view, nearest first: category, distance (metres, one decimal), bearing — in
  clock terms (12 o'clock straight ahead, 3 o'clock to the right) or degrees left / right —
  and the room it stands in when the agent has learned that room's type;
* objects remembered from earlier steps (the same fields, measured from the current pose, with
  a stable index and their position);
* the actions available (VLN-CE: forward 0.25 m, turn 15° left / right, stop);
* recent history in a bounded window: the last ``history`` entries the agent recorded.

Bearings follow the protocol: radians relative to the heading, positive to the left. Headings:
yaw counter-clockwise from north (−Z); compass words north = −Z, east = +X.

>>> clock(0.0), clock(math.radians(-90)), clock(math.radians(100)), clock(math.pi)
("12 o'clock", "3 o'clock", "9 o'clock", "6 o'clock")
>>> degrees_text(math.radians(2)), degrees_text(math.radians(-40)), degrees_text(math.radians(75))
('straight ahead', '40° right', '75° left')
>>> compass(0.0), compass(math.radians(-90)), compass(math.radians(135))
('north', 'east', 'south-west')
>>> from condvln.sim.protocol import Detection
>>> obs = Observation("Go.", 3, (1.0, 0.0, 2.0), 0.0, "kitchen",
...                   (Detection("stool", math.radians(-30), 2.34),), collided=True)
>>> print(TextRenderer().view(obs, budget=10))
Step 3 of 10.
You are in a kitchen, at x 1.00, z 2.00, facing north (0°).
Your last forward move was blocked.
In view, nearest first:
- stool, 2.3 m away at 1 o'clock
>>> print(TextRenderer().history(["step 1: forward", "step 2: left"]))
Recent history, oldest first:
- step 1: forward
- step 2: left
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from condvln.sim.mapview import heading_to
from condvln.sim.protocol import Observation, ObservationProtocol, Vec3
from condvln.sim.simulator import FORWARD_STEP, TURN

RENDERER = "condvln-text"
"""The renderer's name in run manifests."""

VERSION = 1
"""The rendering's version: raised whenever the text for the same observation changes."""

COMPASS = (
    "north",
    "north-east",
    "east",
    "south-east",
    "south",
    "south-west",
    "west",
    "north-west",
)
"""Compass words clockwise from north (−Z), 45° apart."""

ACTION_WORDS = ("stop", "forward", "left", "right")
"""The VLN-CE actions by id (0 STOP, 1 FORWARD, 2 LEFT, 3 RIGHT) as the text names them."""

RoomOf = Callable[[Vec3], str | None]
"""Room type of a world position, or ``None`` when unknown to the agent."""


class TextObsConfig(BaseModel):
    """Options of the rendering (stamped with it).

    Attributes:
        bearing: ``"clock"`` (12 o'clock ahead) or ``"degrees"`` (``"40° right"``).
        history: Entries of recent history shown (the window; older ones are dropped).
        max_objects: Objects listed at most (nearest first); the rest are counted.
        coordinates: Show positions ``(x, z)`` (only when the protocol gives the pose).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    bearing: Literal["clock", "degrees"] = "clock"
    history: int = Field(8, ge=0, le=200)
    max_objects: int = Field(60, ge=1, le=1000)
    coordinates: bool = True

    def stamp(self) -> dict[str, Any]:
        """``{"renderer", "version", **options}`` for the run manifest."""
        return {"renderer": RENDERER, "version": VERSION, **self.model_dump(mode="json")}


def clock(bearing: float) -> str:
    """A bearing (radians, + left) as the nearest clock hour, 12 o'clock straight ahead."""
    hour = round(-math.degrees(bearing) / 30.0) % 12
    return f"{hour or 12} o'clock"


def degrees_text(bearing: float) -> str:
    """A bearing (radians, + left) in whole degrees left or right (within 5°: straight ahead)."""
    deg = round(math.degrees(bearing))
    if abs(deg) < 5:
        return "straight ahead"
    if abs(deg) >= 175:
        return "behind"
    return f"{abs(deg)}° {'left' if deg > 0 else 'right'}"


def compass(heading: float) -> str:
    """A yaw (radians, counter-clockwise from north) as the nearest of eight compass words."""
    return COMPASS[round(-math.degrees(heading) / 45.0) % 8]


def _wrap(angle: float) -> float:
    return (angle + math.pi) % (2.0 * math.pi) - math.pi


@dataclass(frozen=True, slots=True)
class Seen:
    """An object to list: its index (``None`` for plain detections), category and geometry.

    Attributes:
        index: Stable index the agent refers to it by (remembered objects), or ``None``.
        category: Its category.
        distance: Horizontal distance from the agent (m).
        bearing: Direction relative to the heading (radians, + left).
        room: Room type it stands in, when known.
        position: World position (shown with coordinates), or ``None``.
    """

    index: int | None
    category: str
    distance: float
    bearing: float
    room: str | None = None
    position: Vec3 | None = None


class TextRenderer:
    """Renders observations, remembered objects, actions and history as text.

    Args:
        config: The rendering options.
        protocol: The run's observation protocol (what may be shown).
    """

    def __init__(
        self, config: TextObsConfig | None = None, protocol: ObservationProtocol | None = None
    ) -> None:
        self.config = config or TextObsConfig()
        self.protocol = protocol or ObservationProtocol()

    def bearing(self, bearing: float) -> str:
        """The bearing in the configured terms."""
        return clock(bearing) if self.config.bearing == "clock" else degrees_text(bearing)

    def whereabouts(self, obs: Observation) -> str:
        """One line: the room, the position and the heading (as far as the protocol allows)."""
        if not self.protocol.room_type:
            where = "You do not know which room you are in"
        elif obs.room_type is None:
            where = "You are outside every room (in a doorway or passage)"
        else:
            where = f"You are in a {obs.room_type}"
        if obs.position is not None and obs.heading is not None and self.config.coordinates:
            x, _, z = obs.position
            facing = round(math.degrees(_wrap(obs.heading)))
            where += f", at x {x:.2f}, z {z:.2f}, facing {compass(obs.heading)} ({facing}°)"
        return where + "."

    def view(
        self,
        obs: Observation,
        *,
        budget: int | None = None,
        room_of: RoomOf | None = None,
        detections: bool = True,
    ) -> str:
        """The observation: step, whereabouts, a blocked move, the objects in view.

        Args:
            obs: The observation.
            budget: The episode's step budget (shown when given).
            room_of: Room type of a position, when the agent knows it (objects' rooms).
            detections: List the objects in view (when the protocol gives detections).
        """
        lines = [f"Step {obs.step} of {budget}." if budget else f"Step {obs.step}."]
        lines.append(self.whereabouts(obs))
        if obs.collided:
            lines.append("Your last forward move was blocked.")
        if not (detections and self.protocol.detections):
            return "\n".join(lines)
        seen = [
            Seen(
                None,
                d.category,
                d.depth,
                d.bearing,
                room=None if room_of is None or d.position is None else room_of(d.position),
                position=d.position,
            )
            for d in obs.detections
        ]
        lines.append(self.objects(seen, "In view, nearest first:", "Nothing in view."))
        return "\n".join(lines)

    def objects(self, seen: Sequence[Seen], title: str, empty: str) -> str:
        """A titled list of objects, nearest first, at most ``max_objects``."""
        if not seen:
            return empty
        ordered = sorted(seen, key=lambda s: (s.distance, s.category, s.index or 0))
        shown = ordered[: self.config.max_objects]
        lines = [title, *(f"- {self._object(s)}" for s in shown)]
        if len(ordered) > len(shown):
            lines.append(f"- … and {len(ordered) - len(shown)} more, farther away")
        return "\n".join(lines)

    def _object(self, s: Seen) -> str:
        text = s.category if s.index is None else f"[{s.index}] {s.category}"
        if s.room is not None:
            text += f" in the {s.room}"
        text += f", {s.distance:.1f} m away at {self.bearing(s.bearing)}"
        return text + self.at(s.position)

    def at(self, position: Vec3 | None) -> str:
        """``" (x 1.20, z -3.40)"`` for a position when coordinates are shown, else ``""``."""
        return f" {xz(position)}" if position is not None and self.config.coordinates else ""

    def actions(self) -> str:
        """The VLN-CE actions, one line."""
        turn = round(math.degrees(TURN))
        return (
            f"forward (move {FORWARD_STEP:g} m ahead), left (turn {turn}° left), "
            f"right (turn {turn}° right), stop (end the episode here)"
        )

    def history(self, entries: Sequence[str]) -> str:
        """The last ``history`` entries, oldest first (a note says how many were dropped)."""
        window = self.config.history
        if not entries or window == 0:
            return "Recent history: nothing yet." if window else ""
        shown = list(entries)[-window:]
        dropped = len(entries) - len(shown)
        title = "Recent history, oldest first"
        entries_word = "entry" if dropped == 1 else "entries"
        title += f" ({dropped} earlier {entries_word} not shown):" if dropped else ":"
        return "\n".join([title, *(f"- {e}" for e in shown)])


def xz(position: Vec3) -> str:
    """A position on the floor plan: ``"(x 1.20, z -3.40)"``."""
    return f"(x {position[0]:.2f}, z {position[2]:.2f})"


def relative(origin: Vec3, heading: float, point: Vec3) -> tuple[float, float]:
    """``(distance, bearing)`` of ``point`` seen from ``origin`` facing ``heading``.

    >>> d, b = relative((0.0, 0.0, 0.0), 0.0, (-1.0, 0.0, -1.0))
    >>> round(d, 3), round(math.degrees(b))
    (1.414, 45)
    """
    distance = math.hypot(point[0] - origin[0], point[2] - origin[2])
    return distance, _wrap(heading_to(origin, point) - heading)
