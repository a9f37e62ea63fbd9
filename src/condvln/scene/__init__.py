"""The unified scene hierarchy (rooms → objects) and its sources."""

from condvln.scene.model import AABB, Door, Room, Scene, SceneObject

__all__ = ["AABB", "Door", "Room", "Scene", "SceneObject"]
