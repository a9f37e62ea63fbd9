"""Scene sources, registered by name: each turns a file, a seed or a scene name into a Scene.

>>> {"procedural", "procthor", "ithor", "condvln"} <= set(SOURCES.names())
True
>>> load("procedural", "3").id
'procedural/seed-3'
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from condvln.registry import Registry
from condvln.scene.model import Scene


@dataclass(frozen=True)
class SceneSource:
    """A registered scene source.

    Attributes:
        name: Registry name (``--source`` on the command line).
        description: One line for ``condvln scenes sources``.
        reference: What the positional argument means for this source (path, seed, name).
        load: ``load(reference, **options) -> Scene``.
    """

    name: str
    description: str
    reference: str
    load: Callable[..., Scene]


SOURCES: Registry[SceneSource] = Registry("scene source")


def register(source: SceneSource) -> SceneSource:
    """Add ``source`` to :data:`SOURCES` under its name."""
    SOURCES.add(source.name, source)
    return source


def load(source: str, reference: str, **options: Any) -> Scene:
    """Load one scene from the source named ``source``."""
    return SOURCES.get(source).load(str(reference), **options)


# Registration happens on import; keep this list in sync with the modules of this package.
from condvln.scene.sources import (  # noqa: E402, F401
    condvln_json,
    gibson,
    ithor,
    mp3d,
    procedural,
    procthor,
    replicacad,
)
