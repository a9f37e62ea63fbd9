"""The ``condvln`` command: sources, show, export, and one-line errors with exit code 2."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from condvln.scene.serialize import load_scene
from condvln.scene.sources import load


def test_version_and_sources(cli) -> None:
    assert cli("--version").stdout.startswith("condvln ")
    out = cli("scenes", "sources")
    assert out.returncode == 0
    for name in ("procedural", "procthor", "ithor", "condvln"):
        assert name in out.stdout


def test_show_procedural_house(cli) -> None:
    out = cli("scenes", "show", "5")
    assert out.returncode == 0, out.stderr
    scene = load("procedural", "5")
    assert f"{len(scene.rooms)} rooms" in out.stdout
    assert scene.rooms[0].room_type in out.stdout


def test_export_then_load_as_condvln(cli, tmp_path: Path, fixtures_dir: Path) -> None:
    house = fixtures_dir / "procthor" / "houses" / "house_3703.json"
    out_file = tmp_path / "house.json"
    result = cli("scenes", "export", str(house), "--source", "procthor", "--out", str(out_file))
    assert result.returncode == 0, result.stderr
    assert load_scene(out_file) == load("procthor", str(house))
    shown = cli("scenes", "show", str(out_file), "--source", "condvln")
    assert shown.returncode == 0
    assert "2 rooms" in shown.stdout


def _procthor_variants(house: Path, tmp_path: Path) -> dict[str, Path]:
    text = house.read_text()
    doc = orjson.loads(text)
    variants: dict[str, Path] = {}

    def write(name: str, content: str | bytes) -> None:
        path = tmp_path / f"{name}.json"
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
        variants[name] = path

    write("truncated", text[: len(text) // 2])
    write("empty", "")
    nan_doc = orjson.loads(text)
    nan_doc["objects"][0]["position"]["x"] = "NaN-placeholder"
    write("nan", orjson.dumps(nan_doc).decode().replace('"NaN-placeholder"', "NaN"))
    missing = orjson.loads(text)
    del missing["objects"][0]["position"]
    write("missing_key", orjson.dumps(missing))
    dup = orjson.loads(text)
    dup["objects"][1]["id"] = dup["objects"][0]["id"]
    write("duplicate_id", orjson.dumps(dup))
    no_rooms = dict(doc)
    del no_rooms["rooms"]
    write("missing_rooms", orjson.dumps(no_rooms))
    return variants


def _condvln_negative_size(tmp_path: Path) -> Path:
    from condvln.scene.serialize import scene_to_dict

    doc = scene_to_dict(load("procedural", "1"))
    doc["scene"]["rooms"][0]["objects"][0]["size"] = [1.0, -0.5, 1.0]
    path = tmp_path / "negative_size.json"
    path.write_bytes(orjson.dumps(doc))
    return path


def test_malformed_inputs_give_one_line_errors(cli, tmp_path: Path, fixtures_dir: Path) -> None:
    house = fixtures_dir / "procthor" / "houses" / "house_3703.json"
    cases = [(p, "procthor") for p in _procthor_variants(house, tmp_path).values()]
    cases.append((_condvln_negative_size(tmp_path), "condvln"))
    cases.append((tmp_path, "procthor"))  # a directory instead of a file
    for path, source in cases:
        out_file = tmp_path / "out" / f"{path.stem}.json"
        result = cli("scenes", "export", str(path), "--source", source, "--out", str(out_file))
        assert result.returncode == 2, (path.name, result.stdout, result.stderr)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1, (path.name, result.stderr)
        assert lines[0].startswith("condvln: error: ")
        assert str(path) in lines[0]
        assert "Traceback" not in result.stderr
        assert not out_file.exists()


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("scenes", "show", "3", "--source", "procedurl"), "did you mean 'procedural'"),
        (("scenes", "show", "--", "-4"), "seed"),
        (("scenes", "show", "abc"), "seed"),
    ],
)
def test_bad_names_and_seeds(cli, args: tuple[str, ...], needle: str) -> None:
    result = cli(*args)
    assert result.returncode == 2
    assert needle in result.stderr
    assert "Traceback" not in result.stderr


def test_graph_summary_and_export(cli, tmp_path: Path) -> None:
    from condvln.graph import build_scene_graph, load_graph, summarize
    from condvln.graph.serialize import graph_to_dict
    from condvln.io import dumps_json

    out_file = tmp_path / "g.json"
    result = cli("graph", "4", "--predicate", "near", "--limit", "3", "--out", str(out_file))
    assert result.returncode == 0, result.stderr
    graph = build_scene_graph(load("procedural", "4"))
    summary = summarize(graph)
    assert f"{summary['ordered_pairs']} ordered pairs" in result.stdout
    assert f"{summary['undecided']} undecided facts" in result.stdout
    assert " near " in result.stdout
    written = orjson.loads(out_file.read_bytes())
    built = orjson.loads(dumps_json(graph_to_dict(graph)))
    assert written == built, (
        f"the file and this process differ at {_first_difference(written, built)}"
    )
    assert load_graph(out_file) == graph


def _first_difference(a: Any, b: Any, path: str = "$") -> str:
    """The JSON path of the first value where ``a`` and ``b`` differ, with both values."""
    if isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys():
        key = next(k for k in a if a[k] != b[k])
        return _first_difference(a[key], b[key], f"{path}.{key}")
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        i = next(i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y)
        return _first_difference(a[i], b[i], f"{path}[{i}]")
    return f"{path}: {a!r} in the file, {b!r} here"


def test_graph_unknown_predicate_is_a_one_line_error(cli) -> None:
    result = cli("graph", "4", "--predicate", "nearr")
    assert result.returncode == 2
    assert "did you mean 'near'" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_render_writes_a_png(cli, tmp_path: Path) -> None:
    out_file = tmp_path / "map.png"
    result = cli("scenes", "render", "2", "--out", str(out_file))
    assert result.returncode == 0, result.stderr
    assert out_file.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "islands" in result.stdout


def test_audit_prints_balance_and_rejections(cli) -> None:
    result = cli("audit", "--scenes", "4", "--per-scene", "12", "-j", "1", "-q")
    assert result.returncode == 0, result.stderr
    assert "always branch 0: accuracy" in result.stdout
    assert "rejections by reason" in result.stdout


@pytest.mark.slow
def test_benchmark_command_small(cli, tmp_path: Path) -> None:
    out = tmp_path / "bench"
    mine = Path(__file__).parent / "agents" / "data" / "served_agent.py"
    args = ("benchmark", "--out", str(out), "--scenes", "6", "--per-scene", "20", "-q")
    agent = ("--agent", f"{mine}:DetectionAgent", "--agent-arg", "max_steps=30")
    result = cli(*args, "--ithor-rooms", "12", *agent, columns=80, terminal=True)
    assert result.returncode == 0, result.stderr
    assert "Table 2: main results per source (%)" in result.stdout
    assert "neurosymbolic+noise" in result.stdout and "Episodes per source dataset" in result.stdout
    assert {"ithor", "procedural", "all"} <= set(result.stdout.split())
    assert (out / "ithor" / "runs" / "DetectionAgent" / "manifest.json").is_file()
    assert max(map(len, result.stdout.splitlines())) <= 80 and "…" not in result.stdout
    assert (out / "table2.md").is_file() and (out / "table3.csv").is_file()
    assert "| DetectionAgent |" in (out / "table2.md").read_text()
    manifest = orjson.loads((out / "runs" / "DetectionAgent" / "manifest.json").read_bytes())
    assert manifest["agent_args"] == {"max_steps": 30}


@pytest.mark.parametrize(
    "args",
    [
        ("scenes", "sources"),
        ("scenes", "show", "7"),
        ("graph", "7"),
        ("audit", "--scenes", "6", "--per-scene", "12", "-j", "1", "-q"),
        ("config", "benchmark"),
    ],
)
def test_terminal_output_fits_80_columns(cli, args: tuple[str, ...]) -> None:
    result = cli(*args, columns=80, terminal=True)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) > 3 and max(map(len, lines)) <= 80
    assert "…" not in result.stdout  # nothing cut off


def test_sources_table_shows_bracketed_references(cli) -> None:
    """Rich markup must not eat ``[#SCENE]`` in the ithor reference."""
    assert "[#SCENE]" in cli("scenes", "sources", columns=80).stdout


@pytest.mark.parametrize(
    ("args", "wanted"),
    [
        (["generate", "--executor", "ray", "-j", "3"], (3, None, 1)),
        (["benchmark", "--workers=4", "--executor=ray", "--ray-address=auto"], (4, "auto", 3)),
        (["evaluate", "d", "p", "--executor", "ray", "-j1"], (1, None, 1)),
        (["generate", "--executor", "ray", "--help"], None),
        (["generate", "--executor", "local", "-j", "2"], None),
        (["generate", "-j", "0", "--executor", "ray"], None),
        (["generate", "-j", "two", "--executor", "ray"], None),
        (["scenes", "list", "--executor", "ray"], None),
        (["validate", "--executor", "ray"], None),
        ([], None),
    ],
)
def test_ray_wanted_reads_the_raw_command_line(args: list[str], wanted: Any) -> None:
    """The session :func:`main` starts early: ``--executor ray`` on a command that has it, with
    its workers and address; nothing for bad or absent values, help, or other commands."""
    from condvln.cli import RAY_COMMANDS, ray_wanted

    got = ray_wanted(args)
    if wanted is None:
        assert got is None
        return
    executor, modules = got
    assert (executor.kind, executor.workers, executor.address) == ("ray", *wanted[:2])
    assert modules == RAY_COMMANDS[args[0]] and len(modules) == wanted[2]
