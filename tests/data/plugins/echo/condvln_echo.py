"""A tiny third-party CondVLN plugin: an agent, a scene source and a metric, found by entry point."""

from condvln.evaluation.specs import EpisodeResult, MetricSpec
from condvln.scene.model import Room, Scene
from condvln.scene.sources import SceneSource
from condvln.sim.simulator import FORWARD, STOP


class EchoAgent:
    """Walks ``steps`` steps forward, then stops."""

    def __init__(self, steps: int = 3) -> None:
        self.steps = steps

    def reset(self, episode):
        self.left = self.steps

    def act(self, observation):
        self.left -= 1
        return FORWARD if self.left >= 0 else STOP


def load(reference: str) -> Scene:
    """One empty square room, ``reference`` metres wide."""
    size = float(reference)
    room = Room(
        id="r", room_type="bedroom", label="Bedroom",
        floor_polygon=((0.0, 0.0), (size, 0.0), (size, size), (0.0, size)),
    )  # fmt: skip
    return Scene(id=f"echo/{reference}", source="echo_rooms", rooms=(room,))


SOURCE = SceneSource(
    name="echo_rooms",
    description="One empty square room (a test plugin)",
    reference="the room's width in metres",
    load=load,
)


def forward_share(result: EpisodeResult) -> float | None:
    """The share of the episode's actions that are FORWARD (``None`` without a prediction)."""
    actions = None if result.trajectory is None else result.trajectory.actions
    if actions is None or len(actions) == 0:
        return None
    return float((actions == FORWARD).mean())


FORWARD_SHARE = MetricSpec(
    "forward_share", "continuous", "share of FORWARD actions (a test plugin)",
    higher_is_better=None, score=forward_share,
)  # fmt: skip
