"""Every command block of the README and of the docs site (``docs/*.md``), executed as written —
with the substitutions below.

Blocks are named by their section: the nearest heading (``#``, ``##`` or ``###``) above them in
their page, so a section moves between the README and a page without renaming its plan, and a
section holding blocks exists once over all pages. Each ```bash block runs as one ``bash -e``
script in a fresh folder holding what it names (``data/condvln``, ``my_agent.py``, a run
folder, a benchmark results folder, …), with the test's own environment first on ``PATH`` (its
``condvln``, ``python``, ``pip``, ``ruff``, ``pytest``). Blocks that would take hours or need what a test machine lacks run with the
documented substitutions of :data:`PLANS` — each is a plain text replacement in the block,
listed with its reason; the rest of the block runs unchanged. ``test_every_block_has_a_plan``
fails when a block is added without one, and each plan's substitutions must all apply. The other
blocks are files the bash blocks use (:data:`USED`) or, explicitly and rarely, not code
(:data:`NOT_CODE`); ``test_every_block_is_run_or_used`` fails on any other.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import pytest
import yaml

from condvln.benchmark import ITHOR_ROOMS, RunSpec, run_benchmark
from condvln.config import SETTINGS, resolve
from condvln.dataset.generate import GenerateConfig, generate_dataset
from condvln.vlnce import load_split

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = (README, *sorted((ROOT / "docs").rglob("*.md")))
"""The README and every page of the docs site."""
BIN = Path(sys.executable).parent

TINY = {"scenes": 4, "per_scene": 12, "unseen_share": 0.5}
"""The dataset that stands in for a paper-scale one."""

BENCH = GenerateConfig(scenes=3, per_scene=8, unseen_share=0.5)
ITHOR = GenerateConfig(source="ithor", inputs=ITHOR_ROOMS, scenes=4, per_scene=6, unseen_share=0.5)
BENCH_YAML = yaml.safe_dump(
    {
        "dataset": BENCH.model_dump(mode="json"),
        "ithor": ITHOR.model_dump(mode="json"),
    }
)
"""``tiny-benchmark.yaml``: the benchmark's two datasets at toy size (``--config`` for every
``condvln benchmark`` of the README; the folders already hold these datasets, so the
benchmark reuses them and only runs, scores and reports)."""

TINY_GENERATE = " --scenes 4 --per-scene 12"
TINY_BENCHMARK = " --config tiny-benchmark.yaml -j 1"


# --- the blocks of the README and the docs pages -------------------------------------------------


PARTS = re.compile(r"(^#{1,3} [^\n]*$|^```\w*\n.*?^```$)", flags=re.M | re.S)
"""Headings and fenced blocks (a ``#`` line inside a block is not a heading)."""


@functools.cache
def _all_blocks() -> tuple[tuple[str, str, str, int, str], ...]:
    """``(page, section, language, index in the section, text)`` of every fenced block; the
    section is the nearest ``#`` / ``##`` / ``###`` heading above it in its page."""
    out = []
    for page in PAGES:
        section, counts = "", {}
        for part in PARTS.split(page.read_text()):
            if re.match(r"^#{1,3} ", part):
                section = part.lstrip("#").strip()
            elif part.startswith("```"):
                language = part[3 : part.index("\n")]
                index = counts.get((section, language), 0)
                counts[(section, language)] = index + 1
                name = str(page.relative_to(ROOT))
                out.append((name, section, language, index, part[len(language) + 4 : -3]))
    return tuple(out)


def _blocks(language: str) -> list[tuple[str, int, str]]:
    """``(section, index in the section, text)`` of every block in ``language``."""
    return [(s, i, text) for _, s, lang, i, text in _all_blocks() if lang == language]


def _block(section: str, language: str, index: int = 0) -> str:
    return next(t for s, i, t in _blocks(language) if s == section and i == index)


# --- the plans -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """How one bash block runs.

    Attributes:
        folders: What the folder holds first: ``data`` (a small dataset as ``data/condvln``),
            ``run`` (a ``condvln run`` folder ``run/``), ``bench`` (the toy benchmark datasets
            in ``results/benchmark``), ``results`` (a finished toy benchmark and an evaluation
            in ``results/``), ``my_agent`` (the README's ``MyAgent`` as ``my_agent.py`` and
            ``my_pkg/agents.py``), ``seek`` (its ``SeekNamedObject`` as ``my_agent.py``),
            ``repo`` (the repository's ``src``, ``tests``, ``benchmarks``, ``pyproject.toml``),
            ``venv`` (this environment as ``.venv``), ``plugin`` (the plugin's two files in
            ``plugin/``), ``procthor`` (the test ProcTHOR houses as ``tests/data/...`` and
            ``path/to/house.json``), ``yaml`` (the section's YAML files, by their first line),
            ``chat`` (:data:`SERVE_CHAT` as ``serve_chat.py``: a scripted Chat Completions
            server, ``tests/agents/data/chat_server.py``).
        subs: ``(old, new, why)`` replacements in the block.
        needs: A module that must import (else the block is skipped, saying why).
        check: Assertions on the folder afterwards.
    """

    folders: tuple[str, ...] = ()
    subs: tuple[tuple[str, str, str], ...] = ()
    needs: str | None = None
    check: Callable[[Path, str], None] | None = field(default=None, compare=False)


def _json(path: Path) -> dict:
    return orjson.loads(path.read_bytes())


def _jsonl(path: Path) -> list[dict]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def _check_byoa(tmp: Path, out: str) -> None:
    manifest = _json(tmp / "runs/mine/manifest.json")
    assert manifest["agent"] == "my_agent.py:SeekNamedObject"
    assert manifest["agent_args"] == {"stop_at": 0.9} and "my_agent.py" in manifest["agent_code"]
    records = _jsonl(tmp / "results/mine/episodes.jsonl")
    assert len(records) == manifest["episodes"] > 0
    assert {r["split"] for r in records} == {"val_unseen"}  # from the run's manifest
    assert "| SeekNamedObject |" in (tmp / "results/mine/table2.md").read_text()
    budgets = {
        e["episode_id"]: e["info"]["condvln"]["step_budget"]
        for e in load_split(tmp / "data/condvln", "val_unseen")["episodes"]
    }
    runs = _jsonl(tmp / "runs/mine/trajectories.jsonl")
    assert any(r["stop"] and r["steps"] < budgets[r["episode_id"]] for r in runs)  # stops itself


def _check_plugin(tmp: Path, out: str) -> None:
    row = next(line.split() for line in out.splitlines() if line.split()[:1] == ["wall_follower"])
    assert row == ["wall_follower", "condvln-wallfollower", "0.1.0", "wallfollower:WallFollower"]
    manifest = _json(tmp / "runs/wall/manifest.json")
    assert manifest["agent_class"] == "wallfollower.WallFollower"
    assert manifest["agent_args"] == {"patience": 40} and manifest["episodes"] > 0
    runs = _jsonl(tmp / "runs/wall/trajectories.jsonl")
    assert all(r["status"] == "ok" and r["stop"] and r["steps"] <= 41 for r in runs)
    assert "one_room/6 (one_room)" in out and "36.0" in out


def _check_config(tmp: Path, out: str) -> None:
    first = _json(tmp / "runs/from-config/manifest.json")
    assert first["agent_args"] == {"stop_at": 0.8} and first["protocol"]["fov_deg"] == 60.0
    back = _json(tmp / "runs/defaults/manifest.json")
    assert back["agent_args"] == {} and back["protocol"]["fov_deg"] == 90.0
    assert _json(tmp / "runs/added/manifest.json")["agent_args"] == {"stop_at": 0.7}


def _check_reports(tmp: Path, out: str) -> None:
    assert (tmp / "ep1.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp / "ep1.pdf").read_bytes()[:5] == b"%PDF-"
    for page in ("report.html", "run.html"):
        assert "<html" in (tmp / page).read_text()[:500].lower()


def _check_remote(tmp: Path, out: str) -> None:
    manifest = _json(tmp / "runs/remote/manifest.json")
    assert manifest["agent_server"]["name"] == "MyAgent" and manifest["agent_code"] is None
    assert all(r["status"] == "ok" for r in _jsonl(tmp / "runs/remote/trajectories.jsonl"))


def _check_llm(tmp: Path, out: str) -> None:
    for name in ("qwen", "qwen-gguf", "ollama", "hosted"):
        manifest = _json(tmp / f"runs/{name}/manifest.json")
        assert manifest["agent"] == "llm" and manifest["protocol"]["text"]
        assert "api_key" not in manifest["agent_args"] and manifest["episodes"] > 0
        assert all(r["status"] == "ok" for r in _jsonl(tmp / f"runs/{name}/trajectories.jsonl"))
    assert _json(tmp / "runs/ollama/manifest.json")["agent_args"]["mode"] == "actions"
    usage = _json(tmp / "results/qwen/metrics.json")["counts"]["agent_usage"]
    assert usage["requests"] >= usage["episodes"] > 0 and usage["fallbacks"] == 0


SERVE_CHAT = """\
import json
import threading

import chat_server as chat


def script(body):
    return json.dumps({"reasoning": "scripted", "conditions": [], "action": "stop",
                       "subgoal": "stop"})


with chat.ChatServer(script) as server:
    print("listening", server.url.rsplit(":", 1)[1].split("/")[0], flush=True)
    threading.Event().wait()
"""
"""A Chat Completions server on a free port of 127.0.0.1 whose every answer is STOP (no model):
it stands in for the README's vLLM, llama.cpp, Ollama and hosted endpoints."""

LLM_SERVER = (
    "(exec python serve_chat.py > server.log) & SERVER=$!; trap 'kill $SERVER' EXIT; "
    "wait_for_server; PORT=$(cut -d' ' -f2 server.log)"
)

PLANS: dict[tuple[str, int], Plan] = {
    ("Set up", 0): Plan(
        ("venv", "bench"),
        (
            (
                "python3 -m venv .venv && .venv/bin/pip install .",
                "test -x .venv/bin/condvln",
                "the test's environment is the installed package (.venv links to it)",
            ),
            ("condvln benchmark", "condvln benchmark" + TINY_BENCHMARK, "toy datasets"),
        ),
    ),
    ("Set up", 1): Plan(
        ("venv", "repo"),
        (
            (
                'python3 -m venv .venv && .venv/bin/pip install -e ".[test]"',
                "test -x .venv/bin/ruff",
                "the test's environment is the installed package",
            ),
            (
                ".venv/bin/pytest",
                ".venv/bin/pytest -q -p no:cacheprovider -n 0 tests/test_layout.py",
                "this suite is the suite: the block runs one file of it, not itself",
            ),
        ),
    ),
    ("Commands", 0): Plan(),
    ("Scene sources", 0): Plan(("procthor",)),
    ("Generating a dataset", 0): Plan(
        ("procthor",),
        (
            ("--out data/condvln ", "--out data/condvln" + TINY_GENERATE + " ", "toy dataset"),
            ("--per-scene 60", "--per-scene 10", "toy dataset"),
            ("--scenes 100 --per-scene 40", "--scenes 3 --per-scene 10", "a toy audit"),
        ),
    ),
    ("Run CondVLN episodes in VLN-CE / habitat-lab", 0): Plan(
        (),
        (
            ("--out data/condvln ", "--out data/condvln" + TINY_GENERATE + " ", "toy dataset"),
            (
                "condvln habitat navmesh data/condvln",
                "condvln habitat navmesh data/condvln || test $? -eq 2",
                "habitat-sim is not on the test machine: the command must say so (exit 2)",
            ),
        ),
    ),
    ("Scoring predictions", 0): Plan(("data", "run")),
    ("Bring your own agent", 0): Plan(("data", "seek"), check=_check_byoa),
    ("Pixel sensors, habitat observations and videos", 0): Plan(
        ("data", "bench"),
        (
            ("--no-detections", "--no-detections --limit 2", "two episodes of pixel rendering"),
            ("--record 5", "--record 1 --limit 2", "one video"),
            ("condvln benchmark --pixels", "condvln benchmark --pixels" + TINY_BENCHMARK, "toy"),
        ),
    ),
    ("Agents in depth: workers, faults, remote agents, Gymnasium", 0): Plan(
        ("data", "my_agent", "bench"),
        (
            (
                "condvln benchmark --agent my_agent.py:MyAgent",
                "condvln benchmark --agent my_agent.py:MyAgent" + TINY_BENCHMARK,
                "toy datasets",
            ),
        ),
    ),
    ("Remote agents (HTTP)", 0): Plan(
        ("data", "my_agent"),
        (
            ('cp "$(', 'mkdir -p old_project && cp "$(', "the old project's folder"),
            ("/path/to/old/project/", "old_project/", "a folder of the test"),
            (
                "python agent_server.py my_agent.py:MyAgent --port 8000 --arg patience=40",
                "(cd old_project && cp ../my_agent.py . && exec python agent_server.py "
                "my_agent.py:MyAgent --port $PORT --arg patience=40 > ../server.log) & "
                "SERVER=$!; trap 'kill $SERVER' EXIT; wait_for_server",
                "the server runs in the background on a free port of this machine",
            ),
            ("127.0.0.1:8000", "127.0.0.1:$PORT", "the same free port"),
        ),
        check=_check_remote,
    ),
    ("Writing a plugin", 0): Plan(
        ("data", "plugin"),
        (
            (
                "pip install .",
                "(cd plugin && pip install -q --no-deps --no-build-isolation "
                "--no-index --target ../site .)",
                "installed into a folder of the test (on PYTHONPATH), not into the environment",
            ),
        ),
        check=_check_plugin,
    ),
    ("Scale out", 0): Plan(
        ("data", "my_agent", "bench"),
        (
            ("--scenes 10000", "--scenes 3 --per-scene 8", "toy dataset"),
            ("-j 8", "-j 2", "2 cores"),
            ('{"num_gpus": 1}', '{"num_cpus": 1}', "no GPU on the test machine"),
            (
                "condvln benchmark --executor ray",
                "condvln benchmark --executor ray --config tiny-benchmark.yaml",
                "toy datasets",
            ),
        ),
        needs="ray",
    ),
    ("Scale out", 1): Plan(("data", "my_agent")),
    ("Configuration files and overrides", 0): Plan(
        ("bench", "yaml"),
        (
            ("per_scene=40", "per_scene=12", "toy dataset (with scenes: 4 in generate.yaml)"),
            (
                "condvln benchmark --scenes 20",
                "condvln benchmark --scenes 3" + TINY_BENCHMARK,
                "toy datasets",
            ),
        ),
    ),
    ("Configuration files and overrides", 1): Plan(("data", "seek", "yaml"), check=_check_config),
    ("Reports and trajectory maps", 0): Plan(("results",), check=_check_reports),
    ("Language-model agents (any OpenAI-compatible endpoint)", 0): Plan(
        ("data", "chat"),
        (
            (
                "vllm serve Qwen/Qwen2.5-7B-Instruct --port 8000",
                LLM_SERVER,
                "no model on the test machine: one scripted server (every answer STOP) "
                "in the background on a free port stands in for every endpoint",
            ),
            ("llama-server -m qwen2.5-7b-instruct-q4_k_m.gguf --port 8080", "true", "as above"),
            ("ollama pull qwen2.5:7b", "true", "as above"),
            ("127.0.0.1:8000", "127.0.0.1:$PORT", "the scripted server"),
            ("127.0.0.1:8080", "127.0.0.1:$PORT", "the scripted server"),
            ("127.0.0.1:11434", "127.0.0.1:$PORT", "the scripted server"),
            ("https://api.openai.com/v1", "http://127.0.0.1:$PORT/v1", "the scripted server"),
            (
                "--agent llm --agent-arg base_url",
                "--agent llm --agent-arg cache_dir=llm-cache --agent-arg base_url",
                "the reply cache stays in the test's folder, not in ~/.cache",
            ),
        ),
        needs="openai",
        check=_check_llm,
    ),
}

YAML_SUBS = (("scenes: 100", "scenes: 4", "toy dataset"),)
"""Substitutions in the YAML files the blocks read."""


USED: dict[tuple[str, str], str] = {
    ("Bring your own agent", "python"): "my_agent.py of the blocks with folder 'seek'",
    ("Agents in depth: workers, faults, remote agents, Gymnasium", "python"): (
        "my_agent.py of the blocks with folder 'my_agent'; tests/agents/test_remote.py"
    ),
    ("Gymnasium", "python"): "run as written by tests/agents/test_gym.py",
    ("Writing a plugin", "toml"): "plugin/pyproject.toml of its bash block",
    ("Writing a plugin", "python"): "plugin/wallfollower.py of its bash block",
    ("Configuration files and overrides", "yaml"): "the YAML files of its bash blocks",
}
"""The blocks that are not commands: files that tests write and run, by section and language."""

NOT_CODE: dict[tuple[str, str], str] = {
    ("Pipeline", "text"): "a diagram of the pipeline",
}
"""Blocks that are not code (fenced as ``text``), each with its reason. Keep this short."""


def test_every_block_is_run_or_used() -> None:
    for page, section, language, index, _ in _all_blocks():
        where = f"{page}: {section!r}, {language or 'no language'} block {index}"
        if language == "bash":
            assert (section, index) in PLANS, f"{where} has no plan"
        else:
            assert (section, language) in USED | NOT_CODE, f"{where} is neither run nor used"


def test_a_section_with_blocks_is_in_one_page() -> None:
    pages: dict[str, set[str]] = {}
    for page, section, *_ in _all_blocks():
        pages.setdefault(section, set()).add(page)
    assert {s: p for s, p in pages.items() if len(p) > 1} == {}


def test_the_readme_test_command_is_what_ci_runs() -> None:
    """The README's second set-up command is the one .ci/run runs (there with pip's --quiet)."""
    command = _block("Set up", "bash", 1).strip()
    ci = (ROOT / ".ci" / "run").read_text().replace(" --quiet", "")
    venv, _, rest = command.partition(" && ")
    assert venv == "python3 -m venv .venv" and f"\n{venv}\n" in ci
    assert f"\n{rest} 2>&1 | tee " in ci


def test_every_block_has_a_plan() -> None:
    blocks = {(s, i) for s, i, _ in _blocks("bash")}
    assert blocks == set(PLANS)
    for (section, index), plan in PLANS.items():
        text = _block(section, "bash", index)
        for old, _, why in plan.subs:
            assert old in text, (section, old)
            assert why


# --- what the folders hold -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Made once: a small dataset, a run of it, the toy benchmark datasets."""
    root = tmp_path_factory.mktemp("readme")
    dataset = root / "condvln"
    generate_dataset(GenerateConfig(**TINY), dataset)
    bench = root / "bench"
    run_benchmark(bench, config=BENCH, ithor=ITHOR, runs=(RunSpec("random", "random"),))
    for folder in (bench, bench / "ithor"):
        for leftover in ("runs", "eval"):
            shutil.rmtree(folder / leftover)
    return {"dataset": dataset, "bench": bench, "root": root}


@pytest.fixture(scope="module")
def results(made: dict[str, Path]) -> Path:
    """A finished toy benchmark (``results/benchmark``) and one evaluation
    (``results/eval-run``)."""
    out = made["root"] / "results"
    shutil.copytree(made["bench"], out / "benchmark")
    (out / "tiny-benchmark.yaml").write_text(BENCH_YAML)
    _run(
        ["condvln", "benchmark", "--out", str(out / "benchmark"), "-q", *TINY_BENCHMARK.split()],
        out,
    )
    run = out / "benchmark" / "runs" / "condition_blind"
    _run(
        [
            "condvln",
            "evaluate",
            str(out / "benchmark" / "dataset"),
            str(run),
            "--out",
            str(out / "eval-run"),
        ],
        out,
    )
    return out


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        args, cwd=cwd, env=_env(cwd), capture_output=True, text=True, timeout=1800
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def _env(cwd: Path) -> dict[str, str]:
    path = os.pathsep.join([str(BIN), os.environ.get("PATH", "")])
    return {**os.environ, "PATH": path, "PYTHONPATH": str(cwd / "site"), "COLUMNS": "80"}


def _agent_file(tmp: Path, cls: str) -> None:
    section = (
        "Bring your own agent"
        if cls == "seek"
        else ("Agents in depth: workers, faults, remote agents, Gymnasium")
    )
    code = _block(section, "python")
    (tmp / "my_agent.py").write_text(code)
    if cls == "my_agent":
        (tmp / "my_pkg").mkdir()
        (tmp / "my_pkg" / "__init__.py").write_text("")
        (tmp / "my_pkg" / "agents.py").write_text(code)


def _prepare(tmp: Path, plan: Plan, section: str, made: dict[str, Path], results: Callable) -> None:
    if "data" in plan.folders:
        shutil.copytree(made["dataset"], tmp / "data" / "condvln")
    if "run" in plan.folders:
        _run(
            [
                "condvln",
                "run",
                "--agent",
                "random",
                "--dataset",
                "data/condvln",
                "--out",
                "run",
                "-q",
                "-j",
                "1",
            ],
            tmp,
        )
    if "bench" in plan.folders:
        shutil.copytree(made["bench"], tmp / "results" / "benchmark")
        (tmp / "tiny-benchmark.yaml").write_text(BENCH_YAML)
    if "results" in plan.folders:
        shutil.copytree(results(), tmp / "results")
    for kind in ("seek", "my_agent"):
        if kind in plan.folders:
            _agent_file(tmp, kind)
    if "venv" in plan.folders:
        (tmp / ".venv").symlink_to(BIN.parent)
    if "repo" in plan.folders:
        for name in ("src", "tests", "benchmarks", "pyproject.toml"):
            (tmp / name).symlink_to(ROOT / name)
    if "plugin" in plan.folders:
        (tmp / "plugin").mkdir()
        (tmp / "plugin" / "pyproject.toml").write_text(_block(section, "toml"))
        (tmp / "plugin" / "wallfollower.py").write_text(_block(section, "python"))
    if "procthor" in plan.folders:
        houses = ROOT / "tests/data/procthor/houses"
        (tmp / "tests/data/procthor").mkdir(parents=True)
        (tmp / "tests/data/procthor/houses").symlink_to(houses)
        (tmp / "path/to").mkdir(parents=True)
        shutil.copy(sorted(houses.glob("*.json"))[0], tmp / "path/to/house.json")
    if "chat" in plan.folders:
        shutil.copy(ROOT / "tests/agents/data/chat_server.py", tmp / "chat_server.py")
        (tmp / "serve_chat.py").write_text(SERVE_CHAT)
    if "yaml" in plan.folders:
        for _, _, text in (b for b in _blocks("yaml") if b[0] == section):
            name = text.splitlines()[0].lstrip("# ").strip()
            for old, new, _ in YAML_SUBS:
                text = text.replace(old, new)
            (tmp / name).write_text(text)


PRELUDE = """\
PORT=$(python -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
wait_for_server() {
  for _ in $(seq 600); do grep -q listening server.log 2>/dev/null && return 0; sleep 0.1; done
  cat server.log; return 1
}
"""


@pytest.mark.slow
@pytest.mark.parametrize(("section", "index"), sorted(PLANS), ids=lambda v: str(v))
def test_readme_block_runs(
    section: str, index: int, tmp_path: Path, made: dict[str, Path], request: pytest.FixtureRequest
) -> None:
    plan = PLANS[(section, index)]
    if plan.needs:
        pytest.importorskip(plan.needs)
    _prepare(tmp_path, plan, section, made, lambda: request.getfixturevalue("results"))
    script = _block(section, "bash", index)
    for old, new, _ in plan.subs:
        script = script.replace(old, new)
    (tmp_path / "block.sh").write_text(PRELUDE + script)
    done = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "block.sh"],
        cwd=tmp_path,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=3000,
    )
    assert done.returncode == 0, f"{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    if plan.check is not None:
        plan.check(tmp_path, done.stdout)


# --- what the blocks say -------------------------------------------------------------------------


def test_the_first_agent_is_short_and_loads_as_file_and_class() -> None:
    section = "Bring your own agent"
    assert len(_block(section, "python").strip().splitlines()) <= 30
    run = _block(section, "bash").splitlines()[0]
    assert "--agent my_agent.py:SeekNamedObject" in run and "--agent-arg " in run
    assert "PYTHONPATH" not in _block(section, "bash")


def test_config_file_example_reads_as_documented(tmp_path: Path) -> None:
    config = _block("Configuration files and overrides", "yaml")
    (tmp_path / "generate.yaml").write_text(config)
    settings = resolve(GenerateConfig, config_file=tmp_path / "generate.yaml")
    assert (settings.scenes, settings.per_scene, settings.relations.near_holds) == (100, 60, 0.4)
    assert yaml.safe_load(config).keys() <= set(GenerateConfig.model_fields)
    run = yaml.safe_load(_block("Configuration files and overrides", "yaml", 1))
    assert {"agent", "agent_args", "dataset", "out", "executor", "workers"} <= run.keys()


def test_every_override_in_the_examples_is_a_valid_key(tmp_path: Path) -> None:
    section = "Configuration files and overrides"
    (tmp_path / "generate.yaml").write_text(_block(section, "yaml"))
    commands = [
        line.split()[1:]
        for line in _block(section, "bash").splitlines()
        if line.startswith("condvln ")
    ]
    assert [c[0] for c in commands] == ["generate", "run", "evaluate", "benchmark", "config"]
    for args in commands[:-1]:
        command, rest = args[0], args[1:]
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


def test_the_plugin_files_are_a_project() -> None:
    project = tomllib.loads(_block("Writing a plugin", "toml"))["project"]
    assert project["entry-points"]["condvln.agents"] == {
        "wall_follower": "wallfollower:WallFollower"
    }
