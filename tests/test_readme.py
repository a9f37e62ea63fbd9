"""The README's "Bring your own agent", "Writing a plugin" and configuration examples, run as
written."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import orjson
import pytest
import yaml

from condvln.config import SETTINGS, resolve
from condvln.dataset.generate import GenerateConfig, generate_dataset
from condvln.dataset.vlnce import load_split

README = Path(__file__).resolve().parents[1] / "README.md"


def _section(title: str) -> str:
    text = README.read_text()
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


def _blocks(section: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", section, flags=re.S)


def _commands(block: str) -> list[list[str]]:
    """``condvln …`` lines of a bash block (comments dropped), split like a shell would."""
    out = []
    for line in block.splitlines():
        words = shlex.split(line, comments=True)
        while words and "=" in words[0] and words[0] != "condvln":  # VAR=value prefixes
            words = words[1:]
        if words and words[0] == "condvln":
            out.append(words[1:])
    return out


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("readme") / "data" / "condvln"
    generate_dataset(GenerateConfig(scenes=6, per_scene=30, unseen_share=0.5), out)
    return out


def test_bring_your_own_agent_runs_and_scores(dataset: Path, tmp_path: Path) -> None:
    section = _section("Bring your own agent")
    (agent,) = _blocks(section, "python")
    assert len(agent.strip().splitlines()) <= 25
    (tmp_path / "my_agent.py").write_text(agent)
    (tmp_path / "data").symlink_to(dataset.parent)
    (bash,) = _blocks(section, "bash")
    run, evaluate = _commands(bash)
    src = Path(__file__).resolve().parents[1] / "src"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([".", str(src)]), "COLUMNS": "80"}
    for args in (run, evaluate):
        done = subprocess.run(
            [sys.executable, "-m", "condvln", *args],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, done.stderr
    manifest = orjson.loads((tmp_path / "runs/mine/manifest.json").read_bytes())
    assert manifest["agent"] == "my_agent:SeekNamedObject"
    records = [
        orjson.loads(line)
        for line in (tmp_path / "results/mine/episodes.jsonl").read_text().splitlines()
    ]
    assert len(records) == manifest["episodes"] > 0
    budgets = {
        e["episode_id"]: e["info"]["condvln"]["step_budget"]
        for e in load_split(dataset, "val_unseen")["episodes"]
    }
    runs = [orjson.loads(line) for line in (tmp_path / "runs/mine/trajectories.jsonl").open()]
    assert any(r["stop"] and r["steps"] < budgets[r["episode_id"]] for r in runs)  # stops itself


def test_config_file_example_reads_as_documented(tmp_path: Path) -> None:
    section = _section("Configuration files and overrides")
    (config,) = _blocks(section, "yaml")
    (tmp_path / "generate.yaml").write_text(config)
    settings = resolve(GenerateConfig, config_file=tmp_path / "generate.yaml")
    assert (settings.scenes, settings.per_scene, settings.relations.near_holds) == (100, 60, 0.4)
    assert yaml.safe_load(config).keys() <= set(GenerateConfig.model_fields)


def test_every_override_in_the_examples_is_a_valid_key(tmp_path: Path) -> None:
    section = _section("Configuration files and overrides")
    (config,) = _blocks(section, "yaml")
    (tmp_path / "generate.yaml").write_text(config)
    (bash,) = _blocks(section, "bash")
    commands = _commands(bash)
    assert [c[0] for c in commands] == ["generate", "run", "evaluate", "benchmark", "config"]
    for args in commands:
        command, rest = args[0], args[1:]
        if command == "config":
            continue
        overrides = [a for a in rest if re.match(r"^[A-Za-z_][\w.]*=", a)]
        file = tmp_path / "generate.yaml" if "--config" in rest else None
        settings = resolve(SETTINGS[command], config_file=file, overrides=overrides)
        dumped = settings.model_dump(mode="json")
        for item in overrides:
            key, value = item.split("=", 1)
            node = dumped
            for part in key.split("."):
                node = node[part]
            assert node == yaml.safe_load(value), item


def _install(project: dict, module: str, site: Path) -> None:
    """What ``pip install .`` of the README's plugin leaves in site-packages: the module and a
    ``*.dist-info`` folder with its metadata and entry points (what importlib.metadata reads)."""
    modules = {
        ref.split(":")[0] for group in project["entry-points"].values() for ref in group.values()
    }
    (name,) = modules
    info = site / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    info.mkdir(parents=True)
    (site / f"{name}.py").write_text(module)
    metadata = f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n"
    (info / "METADATA").write_text(metadata)
    (info / "entry_points.txt").write_text(
        "\n".join(
            f"[{group}]\n" + "".join(f"{key} = {ref}\n" for key, ref in refs.items())
            for group, refs in project["entry-points"].items()
        )
    )


def test_writing_a_plugin_lists_and_runs_it_by_name(dataset: Path, tmp_path: Path) -> None:
    section = _section("Writing a plugin")
    (toml,) = _blocks(section, "toml")
    (module,) = _blocks(section, "python")
    (bash,) = _blocks(section, "bash")
    assert re.search(r"^pip install \.", bash, flags=re.M)
    project = tomllib.loads(toml)["project"]
    _install(project, module, tmp_path / "site")
    (tmp_path / "data").symlink_to(dataset.parent)
    src = Path(__file__).resolve().parents[1] / "src"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), str(src)])}
    outputs = []
    for args in _commands(bash):
        done = subprocess.run(
            [sys.executable, "-m", "condvln", *args],
            cwd=tmp_path,
            env=env | {"COLUMNS": "200"},
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout)
    listed, _, shown = outputs
    row = next(
        line.split() for line in listed.splitlines() if line.split()[:1] == ["wall_follower"]
    )
    assert row == ["wall_follower", "condvln-wallfollower", "0.1.0", "wallfollower:WallFollower"]
    manifest = orjson.loads((tmp_path / "runs/wall/manifest.json").read_bytes())
    assert manifest["agent_class"] == "wallfollower.WallFollower"
    assert manifest["agent_args"] == {"patience": 40} and manifest["episodes"] > 0
    runs = [orjson.loads(line) for line in (tmp_path / "runs/wall/trajectories.jsonl").open()]
    assert all(r["status"] == "ok" and r["stop"] and r["steps"] <= 41 for r in runs)
    assert "one_room/6 (one_room)" in shown and "36.0" in shown
