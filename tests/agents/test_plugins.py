"""Plugins by entry point: a package outside condvln adds an agent, a scene source and a metric.

The plugin packages live in ``tests/data/plugins/<name>/``: a module and a ``*.dist-info``
folder with ``METADATA`` and ``entry_points.txt`` — what ``pip install`` leaves in
site-packages and what :mod:`importlib.metadata` reads — put on ``PYTHONPATH`` of a
``condvln`` subprocess instead of being installed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

PLUGINS = Path(__file__).resolve().parents[1] / "data" / "plugins"


def _condvln(*args: str, plugins: tuple[str, ...] = ("echo",)) -> subprocess.CompletedProcess:
    paths = [str(PLUGINS / name) for name in plugins]
    if os.environ.get("PYTHONPATH"):
        paths.append(os.environ["PYTHONPATH"])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths), "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "condvln", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


def _row(text: str, first: str) -> list[str]:
    (row,) = [line.split() for line in text.splitlines() if line.split()[:1] == [first]]
    return row


def test_agents_and_sources_are_listed_with_their_package() -> None:
    agents = _condvln("agents")
    assert agents.returncode == 0, agents.stderr
    assert _row(agents.stdout, "echo") == ["echo", "condvln-echo", "0.1", "condvln_echo:EchoAgent"]
    assert _row(agents.stdout, "random")[1:3] == ["condvln", "0.1.0"]
    sources = _condvln("scenes", "sources")
    assert sources.returncode == 0, sources.stderr
    assert "echo_rooms" in sources.stdout and "(condvln-echo 0.1)" in sources.stdout
    assert "One empty square room (a test plugin)" in sources.stdout


def test_a_plugin_agent_runs_by_name(dataset: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = _condvln(
        "run", "--agent", "echo", "--agent-arg", "steps=2", "--dataset", str(dataset),
        "--split", "train", "--limit", "3", "--out", str(out), "-j", "1", "-q",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    manifest = orjson.loads((out / "manifest.json").read_bytes())
    assert manifest["agent"] == "echo" and manifest["agent_class"] == "condvln_echo.EchoAgent"
    assert manifest["agent_args"] == {"steps": 2} and manifest["episodes"] == 3
    records = [orjson.loads(line) for line in (out / "trajectories.jsonl").read_bytes().split()]
    assert [r["actions"] for r in records] == [[1, 1, 0]] * 3
    assert all(r["stop"] and r["status"] == "ok" and r["agent"] == "echo" for r in records)


@pytest.mark.slow
def test_a_plugin_metric_is_listed_scored_and_aggregated(dataset: Path, tmp_path: Path) -> None:
    listed = _condvln("metrics")
    assert listed.returncode == 0, listed.stderr
    assert _row(listed.stdout, "forward_share")[1:5] == ["condvln-echo", "0.1", "continuous", "—"]
    assert _row(listed.stdout, "spl")[1:5] == ["condvln", "0.1.0", "continuous", "higher"]
    run, out = tmp_path / "run", tmp_path / "eval"
    ran = _condvln(
        "run", "--agent", "echo", "--agent-arg", "steps=2", "--dataset", str(dataset),
        "--split", "train", "--limit", "3", "--out", str(run), "-j", "1", "-q",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    scored = _condvln("evaluate", str(dataset), str(run), "--out", str(out), "-j", "1")
    assert scored.returncode == 0, scored.stderr
    records = [orjson.loads(line) for line in (out / "episodes.jsonl").read_bytes().split()]
    shares = [r["forward_share"] for r in records]
    assert shares[:3] == [2 / 3] * 3 and set(shares[3:]) == {None}  # missing: no prediction
    aggregate = orjson.loads((out / "metrics.json").read_bytes())["metrics"]["forward_share"]
    assert aggregate["mean"] == 2 / 3 and aggregate["method"] == "bootstrap"
    assert (aggregate["n"], aggregate["n_excluded"]) == (3, len(records) - 3)
    bare = _condvln("evaluate", str(dataset), str(run), "--out", str(tmp_path / "bare"),
                    "-j", "1", plugins=())  # fmt: skip
    assert bare.returncode == 0, bare.stderr
    assert "forward_share" not in (tmp_path / "bare" / "metrics.json").read_text()


def test_a_plugin_scene_source_loads_by_name() -> None:
    result = _condvln("scenes", "show", "4", "--source", "echo_rooms")
    assert result.returncode == 0, result.stderr
    assert "echo/4 (echo_rooms)" in result.stdout and "16.0" in result.stdout


def test_without_the_package_the_names_are_unknown(tmp_path: Path) -> None:
    result = _condvln("run", "--agent", "echo", "--dataset", str(tmp_path), "--out",
                      str(tmp_path / "run"), plugins=())  # fmt: skip
    assert result.returncode == 2 and "unknown agent 'echo'" in result.stderr
    listed = _condvln("agents", plugins=()).stdout
    assert "random" in listed and "echo" not in listed


def test_a_broken_plugin_is_listed_and_fails_in_one_line(tmp_path: Path) -> None:
    listed = _condvln("agents", plugins=("echo", "broken"))
    assert listed.returncode == 0 and _row(listed.stdout, "broken")[1:3] == [
        "condvln-broken",
        "0.2",
    ]
    out = tmp_path / "run"
    result = _condvln("run", "--agent", "broken", "--dataset", str(tmp_path), "--out", str(out),
                      plugins=("echo", "broken"))  # fmt: skip
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip() == (
        "condvln: error: cannot load agent 'broken' from condvln-broken 0.2 "
        "(condvln_broken_missing:Agent): ModuleNotFoundError: No module named "
        "'condvln_broken_missing'"
    )
    assert not out.exists()


def test_a_name_declared_by_two_packages_is_refused(tmp_path: Path) -> None:
    result = _condvln("run", "--agent", "random", "--dataset", str(tmp_path), "--out",
                      str(tmp_path / "run"), plugins=("echo", "clash"))  # fmt: skip
    assert result.returncode == 2
    assert "agent 'random' is declared by two packages" in result.stderr
    assert "condvln-clash 1.0" in result.stderr and "condvln 0.1.0" in result.stderr
