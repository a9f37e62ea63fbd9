"""Scene sources, by name: each turns a file, a seed or a scene name into a Scene.

A source is a :class:`SceneSource` object named by an entry point of the group
``condvln.sources`` (``[project.entry-points."condvln.sources"]`` in a package's
``pyproject.toml``: ``my_source = "my_package.scenes:SOURCE"``), CondVLN's own included; it is
imported the first time it is asked for. ``condvln scenes sources`` lists them all with the
package each comes from.

>>> {"procedural", "procthor", "ithor", "condvln"} <= set(SOURCES.names())
True
>>> load("procedural", "3").id
'procedural/seed-3'
>>> str(SOURCES.origin("procedural").value)
'condvln.scene.sources.procedural:SOURCE'
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from condvln.errors import ConfigError
from condvln.registry import Registry
from condvln.scene.model import Scene

GROUP = "condvln.sources"
"""The entry-point group of scene sources."""


@dataclass(frozen=True)
class SceneSource:
    """A scene source.

    Attributes:
        name: Registry name (``--source`` on the command line; the entry point's name).
        description: One line for ``condvln scenes sources``.
        reference: What the positional argument means for this source (path, seed, name).
        load: ``load(reference, **options) -> Scene``.
    """

    name: str
    description: str
    reference: str
    load: Callable[..., Scene]


def _check_source(name: str, source: object) -> SceneSource:
    if not isinstance(source, SceneSource):
        raise ConfigError(f"scene source '{name}' is a {type(source).__name__}, not a SceneSource")
    if source.name != name:
        raise ConfigError(f"scene source '{name}' calls itself '{source.name}'")
    return source


SOURCES: Registry[SceneSource] = Registry("scene source", group=GROUP, check=_check_source)
"""Scene sources by name: the ``condvln.sources`` entry points of the installed packages."""


def load(source: str, reference: str, **options: Any) -> Scene:
    """Load one scene from the source named ``source``."""
    return SOURCES.get(source).load(str(reference), **options)
