"""Shared test fixtures: the CLI runner, the test-data folder ``tests/data`` and a hand-made scene;
and the ``slow`` marker: long end-to-end tests run with ``--slow`` and always in CI (``CI`` set
to a true value), and are left out otherwise, so the suite on a developer's machine stays short."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from condvln.graph import SceneGraph, build_scene_graph
from condvln.scene.model import Door, Room, Scene, SceneObject

DATA = Path(__file__).resolve().parent / "data"


SLOW_HELP = "also run the long end-to-end tests (marked slow); CI=true always runs them"


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--slow``: run the tests marked ``slow`` too."""
    parser.addoption("--slow", action="store_true", help=SLOW_HELP)


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``slow`` marker."""
    config.addinivalue_line("markers", f"slow: long end-to-end test ({SLOW_HELP})")


def runs_slow_tests(config: pytest.Config) -> bool:
    """Whether this session runs the tests marked ``slow``: ``--slow``, or ``CI`` is true."""
    in_ci = os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}
    return bool(config.getoption("--slow")) or in_ci


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """Say at the end, when the slow tests were left out, how to run them."""
    if not runs_slow_tests(config):
        terminalreporter.write_line(
            "tests marked slow (long end-to-end runs) were left out: pytest --slow runs them, "
            "as CI does (CI=true)"
        )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect the tests marked ``slow`` unless this session runs them (their fixtures are
    then never built)."""
    if runs_slow_tests(config):
        return
    slow = [item for item in items if item.get_closest_marker("slow")]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if not item.get_closest_marker("slow")]


def _run_cli(
    *args: str, columns: int = 200, terminal: bool = False
) -> subprocess.CompletedProcess[str]:
    if terminal:
        return _on_terminal(list(args), columns)
    env = {**os.environ, "COLUMNS": str(columns)}  # --help wraps at this width
    return subprocess.run(
        [sys.executable, "-m", "condvln", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


def _on_terminal(args: list[str], columns: int) -> subprocess.CompletedProcess[str]:
    """``condvln ARGS`` with stdout on a pseudo-terminal ``columns`` wide (stderr piped); its
    output with the terminal's escape codes and carriage returns removed."""
    import fcntl
    import pty
    import re
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "condvln", *args],
        stdout=slave,
        stderr=subprocess.PIPE,
        env=env | {"TERM": "xterm"},
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # the terminal closed
            break
        if not data:
            break
        chunks.append(data)
    stderr = proc.stderr.read().decode() if proc.stderr else ""
    proc.wait(300)
    os.close(master)
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", b"".join(chunks).decode())
    return subprocess.CompletedProcess(args, proc.returncode, text.replace("\r\n", "\n"), stderr)


@pytest.fixture(scope="session")
def cli() -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run ``python -m condvln ARGS`` and capture its output: stdout a pipe (``COLUMNS``:
    ``columns``), or with ``terminal=True`` a pseudo-terminal ``columns`` wide."""
    return _run_cli


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    """The repository's test-data folder ``tests/data`` (sources and licences in its SOURCES.md)."""
    return DATA


def _obj(oid: str, category: str, center: tuple[float, float, float], size) -> SceneObject:
    return SceneObject(id=oid, category=category, label=category, center=center, size=size)


def make_scene() -> Scene:
    """Kitchen (x 0–5, z 0–4): a dishwasher with one stool 1.5 m north and one 1.5 m south of
    it, a table with a cup on it; bedroom (x 5–9): a bed and a lamp whose box is 2.07 m from the bed's."""
    kitchen = Room(
        id="k",
        room_type="kitchen",
        label="Kitchen",
        floor_polygon=((0.0, 0.0), (5.0, 0.0), (5.0, 4.0), (0.0, 4.0)),
        objects=(
            _obj("dishwasher", "dishwasher", (1.0, 0.4, 2.0), (0.6, 0.8, 0.6)),
            _obj("stool_n", "stool", (1.0, 0.3, 0.5), (0.4, 0.6, 0.4)),
            _obj("stool_s", "stool", (1.0, 0.3, 3.5), (0.4, 0.6, 0.4)),
            _obj("table", "table", (3.5, 0.4, 2.0), (1.2, 0.8, 0.8)),
            _obj("cup", "cup", (3.5, 0.85, 2.0), (0.1, 0.1, 0.1)),
        ),
    )
    bedroom = Room(
        id="b",
        room_type="bedroom",
        label="Bedroom",
        floor_polygon=((5.0, 0.0), (9.0, 0.0), (9.0, 4.0), (5.0, 4.0)),
        objects=(
            _obj("bed", "bed", (7.5, 0.3, 1.0), (1.4, 0.6, 2.0)),
            _obj("lamp", "lamp", (5.4, 0.8, 3.8), (0.3, 1.6, 0.3)),
        ),
    )
    door = Door(id="d", room_ids=("k", "b"), segment=((5.0, 1.5), (5.0, 2.4)))
    return Scene(id="test/two-rooms", source="test", rooms=(kitchen, bedroom), doors=(door,))


@pytest.fixture(scope="module")
def two_room_scene() -> Scene:
    """The hand-made scene."""
    return make_scene()


@pytest.fixture(scope="module")
def two_room_graph(two_room_scene: Scene) -> SceneGraph:
    """The two-room scene's graph with the default thresholds."""
    return build_scene_graph(two_room_scene)
