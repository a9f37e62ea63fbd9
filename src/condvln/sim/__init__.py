"""The built-in simulator (VLN-CE action space) and its observation protocol.

>>> sorted(ACTIONS)
[0, 1, 2, 3]
"""

from condvln.sim.mapview import MapView
from condvln.sim.protocol import Detection, Observation, ObservationProtocol, parse_protocol
from condvln.sim.simulator import (
    ACTIONS,
    DEFAULT_BUDGET,
    FORWARD,
    FORWARD_STEP,
    STOP,
    TURN,
    TURN_LEFT,
    TURN_RIGHT,
    EpisodeOver,
    Simulator,
    Trajectory,
)

__all__ = [
    "ACTIONS",
    "DEFAULT_BUDGET",
    "FORWARD",
    "FORWARD_STEP",
    "STOP",
    "TURN",
    "TURN_LEFT",
    "TURN_RIGHT",
    "Detection",
    "EpisodeOver",
    "MapView",
    "Observation",
    "ObservationProtocol",
    "Simulator",
    "Trajectory",
    "parse_protocol",
]
