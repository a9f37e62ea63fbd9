"""Source ``condvln``: scenes exported by ``condvln scenes export`` (our versioned JSON)."""

from __future__ import annotations

from condvln.scene.model import Scene
from condvln.scene.serialize import load_scene
from condvln.scene.sources import SceneSource


def load(reference: str) -> Scene:
    """Load a CondVLN scene JSON file."""
    return load_scene(reference)


SOURCE = SceneSource(
    name="condvln",
    description="CondVLN's own versioned scene JSON (written by `condvln scenes export`)",
    reference="path to a .json scene file",
    load=load,
)
