"""Name → factory registries for the extension points (sources, predicates, agents, metrics).

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
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from condvln.errors import ConfigError

T = TypeVar("T")


class Registry(Generic[T]):
    """A named collection of entries with helpful errors on unknown names."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator that registers ``entry`` under ``name`` (names are unique)."""

        def decorate(entry: T) -> T:
            if name in self._entries:
                raise ConfigError(f"{self.kind} '{name}' is already registered")
            self._entries[name] = entry
            return entry

        return decorate

    def add(self, name: str, entry: T) -> None:
        """Register ``entry`` under ``name`` without a decorator."""
        self.register(name)(entry)

    def get(self, name: str) -> T:
        """Return the entry named ``name`` or raise :class:`ConfigError` with suggestions."""
        try:
            return self._entries[name]
        except KeyError:
            close = difflib.get_close_matches(name, self._entries, n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            known = ", ".join(sorted(self._entries))
            raise ConfigError(f"unknown {self.kind} '{name}'{hint} (known: {known})") from None

    def names(self) -> list[str]:
        """All registered names, sorted."""
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())
