"""CondVLN: conditional branching in vision-language navigation.

The pipeline runs one way: scene sources → :class:`~condvln.scene.model.Scene` → scene graph →
conditional programs → episodes → simulator runs → metrics.
"""

__version__ = "0.1.0"
