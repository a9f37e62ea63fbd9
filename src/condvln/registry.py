"""Name → entry registries for the extension points (agents, scene sources, predicates, metrics).

A registry may be backed by an **entry-point group** (``condvln.agents``, ``condvln.sources``,
``condvln.metrics``): installed packages declare their plugins in their metadata
(``[project.entry-points.GROUP]`` in ``pyproject.toml``) and the registry lists them without
importing anything, loading one only when it is asked for by name. CondVLN's own built-ins are declared the same way.

>>> colours = Registry("colour")
>>> @colours.register("red")
... def make_red():
...     return "#f00"
>>> colours.get("red")()
'#f00'
>>> colours.get("rde")
Traceback (most recent call last):
...
condvln.errors.ConfigError: unknown colour 'rde'; did you mean 'red'? (known: red)
>>> colours.origin("red") is None  # added in code, not by a package
True
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from typing import Generic, TypeVar

from condvln.errors import ConfigError

T = TypeVar("T")

OWN_PACKAGE = "condvln"
"""The distribution whose entry points hold the built-ins."""


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a plugin comes from.

    Attributes:
        package: The distribution declaring it (``importlib.metadata`` name).
        version: That distribution's version.
        value: The entry point's object reference, ``module:attribute``.
    """

    package: str
    version: str
    value: str

    def __str__(self) -> str:
        return f"{self.package} {self.version}"


class Registry(Generic[T]):
    """A named collection of entries with helpful errors on unknown names.

    Args:
        kind: What an entry is, for messages (``"agent"``).
        group: The entry-point group whose plugins the registry lists and loads (``None``:
            only entries added in code).
        check: Called on every loaded plugin object with its name; returns the entry or raises
            :class:`ConfigError` (e.g. "not a SceneSource").
    """

    def __init__(
        self,
        kind: str,
        group: str | None = None,
        check: Callable[[str, object], T] | None = None,
    ) -> None:
        self.kind = kind
        self.group = group
        self._check = check
        self._entries: dict[str, T] = {}
        self._plugins: dict[str, list[EntryPoint]] | None = None

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator that registers ``entry`` under ``name`` (names are unique)."""

        def decorate(entry: T) -> T:
            if name in self._entries or name in self.plugins():
                raise ConfigError(f"{self.kind} '{name}' is already registered")
            self._entries[name] = entry
            return entry

        return decorate

    def add(self, name: str, entry: T) -> None:
        """Register ``entry`` under ``name`` without a decorator."""
        self.register(name)(entry)

    def get(self, name: str) -> T:
        """Return the entry named ``name`` (loading its plugin once) or raise
        :class:`ConfigError` with suggestions."""
        if name in self._entries:
            return self._entries[name]
        found = self.plugins().get(name)
        if found is None:
            close = difflib.get_close_matches(name, self.names(), n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            known = ", ".join(self.names())
            raise ConfigError(f"unknown {self.kind} '{name}'{hint} (known: {known})")
        if len(found) > 1:
            packages = " and ".join(str(_origin(ep)) for ep in found)
            raise ConfigError(
                f"{self.kind} '{name}' is declared by two packages ({packages}); uninstall one"
            )
        entry = self._load(name, found[0])
        self._entries[name] = entry
        return entry

    def names(self) -> list[str]:
        """All registered names (plugins not loaded yet included), sorted."""
        return sorted(set(self._entries) | set(self.plugins()))

    def origin(self, name: str) -> Origin | None:
        """The package declaring plugin ``name`` (``None`` for an entry added in code)."""
        found = self.plugins().get(name)
        return _origin(found[0]) if found else None

    def plugins(self) -> dict[str, list[EntryPoint]]:
        """The group's entry points by name (read once from the installed packages' metadata).

        Raises:
            ConfigError: CondVLN's own metadata lacks the group (an install made before the
                group was declared): reinstall the package.
        """
        if self.group is None:
            return {}
        if self._plugins is None:
            plugins: dict[str, list[EntryPoint]] = {}
            for ep in entry_points(group=self.group):
                plugins.setdefault(ep.name, []).append(ep)
            if not any(
                _origin(ep).package == OWN_PACKAGE for eps in plugins.values() for ep in eps
            ):
                raise ConfigError(
                    f"no built-in {self.kind}s: the installed condvln metadata has no "
                    f"'{self.group}' entry points; reinstall condvln (pip install -e .)"
                )
            self._plugins = plugins
        return self._plugins

    def _load(self, name: str, ep: EntryPoint) -> T:
        try:
            entry = ep.load()
        except (Exception, SystemExit) as exc:  # the plugin's own import failed
            raise ConfigError(
                f"cannot load {self.kind} '{name}' from {_origin(ep)} ({ep.value}): "
                f"{type(exc).__name__}: {exc}".splitlines()[0]
            ) from None
        return self._check(name, entry) if self._check is not None else entry

    def __contains__(self, name: object) -> bool:
        return name in self._entries or name in self.plugins()

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())


def _origin(ep: EntryPoint) -> Origin:
    dist = ep.dist
    if dist is None:
        return Origin("?", "?", ep.value)
    return Origin(dist.name, dist.version, ep.value)
