"""Registries backed by entry-point groups (:mod:`condvln.registry`), in this process."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from condvln.errors import ConfigError
from condvln.registry import Registry
from condvln.scene.sources import GROUP as SOURCES_GROUP
from condvln.scene.sources import SceneSource

PLUGINS = Path(__file__).resolve().parent / "data" / "plugins"


def test_plugins_are_listed_without_import_and_loaded_once(monkeypatch) -> None:
    monkeypatch.syspath_prepend(str(PLUGINS / "echo"))
    monkeypatch.delitem(sys.modules, "condvln_echo", raising=False)
    agents: Registry[object] = Registry("agent", group="condvln.agents")
    assert {"echo", "random", "neurosymbolic"} <= set(agents.names())
    assert "condvln_echo" not in sys.modules  # listing imports nothing
    origin = agents.origin("echo")
    assert (origin.package, origin.version, origin.value) == (
        "condvln-echo",
        "0.1",
        "condvln_echo:EchoAgent",
    )
    echo = agents.get("echo")
    assert echo.__name__ == "EchoAgent" and agents.get("echo") is echo
    assert str(agents.origin("random")).startswith("condvln ")
    with pytest.raises(ConfigError, match="agent 'echo' is already registered"):
        agents.add("echo", object)


def test_a_plugin_object_of_the_wrong_kind_is_refused(monkeypatch) -> None:
    monkeypatch.syspath_prepend(str(PLUGINS / "echo"))

    def check(name: str, entry: object) -> SceneSource:
        if not isinstance(entry, SceneSource):
            raise ConfigError(f"{name}: not a SceneSource")
        return entry

    sources = Registry("scene source", group=SOURCES_GROUP, check=check)
    assert sources.get("echo_rooms").load("3").id == "echo/3"
    agents_as_sources = Registry("scene source", group="condvln.agents", check=check)
    with pytest.raises(ConfigError, match="echo: not a SceneSource"):
        agents_as_sources.get("echo")


def test_entries_added_in_code_have_no_package() -> None:
    shapes: Registry[int] = Registry("shape")
    shapes.add("square", 4)
    assert shapes.names() == ["square"] and shapes.origin("square") is None
    with pytest.raises(ConfigError, match=r"unknown shape 'sqare'; did you mean 'square'\?"):
        shapes.get("sqare")


def test_missing_builtin_metadata_says_reinstall() -> None:
    """An install older than the group (or none) has no condvln entry points in it."""
    nothing: Registry[object] = Registry("widget", group="condvln.no-such-group")
    with pytest.raises(ConfigError, match=r"no built-in widgets: .* reinstall condvln"):
        nothing.names()
