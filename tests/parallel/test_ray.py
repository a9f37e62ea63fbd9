"""``--executor ray`` on a real local Ray cluster: the same bytes as local, and dead workers."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from condvln.agents import run_agent
from condvln.benchmark import RunSpec, run_benchmark
from condvln.cli import app
from condvln.dataset.generate import GenerateConfig, generate_dataset
from condvln.errors import ConfigError
from condvln.evaluation.evaluate import evaluate_run
from condvln.io import read_json
from condvln.parallel import Executor, ordered_map

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("ray_cluster")]

RAY = Executor("ray", workers=2)
RUN_FILES = ("trajectories.jsonl", "predictions.json")


def same_manifest(a: Path, b: Path) -> bool:
    """Whether two run folders' manifests agree apart from ``provenance`` (the command line)."""
    drop = ("provenance",)
    left, right = (read_json(d / "manifest.json") for d in (a, b))
    return {k: v for k, v in left.items() if k not in drop} == {
        k: v for k, v in right.items() if k not in drop
    }


EVAL_FILES = (
    "episodes.jsonl",
    "metrics.json",
    "table2.md",
    "table2.csv",
    "table3.md",
    "table3.csv",
)


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def test_ordered_map_keeps_input_order() -> None:
    items = [f"d{i}/f{i}" for i in range(9)]
    assert list(ordered_map(os.path.basename, items, RAY)) == [f"f{i}" for i in range(9)]


def test_generate_on_ray_equals_local(tmp_path: Path) -> None:
    config = GenerateConfig(scenes=4, per_scene=20)
    generate_dataset(config, tmp_path / "local")
    generate_dataset(config, tmp_path / "ray", workers=RAY)
    files = _files(tmp_path / "ray")
    assert "train/train.json.gz" in files and files == _files(tmp_path / "local")


def test_run_and_evaluate_on_ray_equal_local(dataset: Path, sleepy: str, tmp_path: Path) -> None:
    options = {"protocol": {"miss_rate": 0.3}, "agent_args": {"steps": 20}, "limit": 24}
    run_agent(sleepy, dataset, "train", tmp_path / "local", **options)
    summary = run_agent(sleepy, dataset, "train", tmp_path / "ray", executor=RAY, **options)
    assert summary.ran == summary.episodes == 24
    for name in RUN_FILES:
        assert (tmp_path / "ray" / name).read_bytes() == (tmp_path / "local" / name).read_bytes()
    assert same_manifest(tmp_path / "ray", tmp_path / "local")
    run_agent("goal_only", dataset, "train", tmp_path / "goal", executor=RAY, limit=24)
    preds = tmp_path / "goal" / "trajectories.jsonl"
    evaluate_run(dataset, preds, tmp_path / "e_local", split="train", run_name="g")
    evaluate_run(dataset, preds, tmp_path / "e_ray", split="train", run_name="g", executor=RAY)
    for name in EVAL_FILES:
        assert (tmp_path / "e_ray" / name).read_bytes() == (
            tmp_path / "e_local" / name
        ).read_bytes()


def test_killed_worker_is_retried(dataset: Path, sleepy: str, tmp_path: Path) -> None:
    """SIGKILL one actor process mid-run: it restarts, its task is retried, same bytes.

    Both actors say when they are inside a task and wait at a gate (files), so the kill lands
    mid-task however slow the machine is."""
    pids, gate = tmp_path / "pids", tmp_path / "gate"
    pids.mkdir()
    gate.mkdir()
    args = {"sleep": 0.004, "pid_dir": str(pids), "gate": str(gate)}
    killed: list[int] = []

    def waiting() -> list[int]:
        return sorted(int(p.name) for p in gate.iterdir() if p.name.isdigit())

    def kill_one() -> None:
        deadline = time.monotonic() + 300  # a bound against hanging, not a wait
        while len(waiting()) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        if len(waiting()) == 2 and not (gate / "open").exists():
            os.kill(waiting()[0], signal.SIGKILL)  # inside a task, at the gate
            killed.append(waiting()[0])
        (gate / "open").touch()

    killer = threading.Thread(target=kill_one)
    killer.start()
    try:  # no step timeout: the first act of each actor waits at the gate
        summary = run_agent(
            sleepy, dataset, "train", tmp_path / "ray", agent_args=args, executor=RAY,
            step_timeout=0,
        )  # fmt: skip
    finally:
        (gate / "open").touch()
        killer.join()
    assert killed and summary.ran == summary.episodes
    assert len(list(pids.iterdir())) == 3  # the killed actor was restarted once
    run_agent(
        sleepy,
        dataset,
        "train",
        tmp_path / "local",
        agent_args={"sleep": 0.0, "pid_dir": str(pids)},
    )
    for name in ("trajectories.jsonl", "predictions.json"):
        assert (tmp_path / "ray" / name).read_bytes() == (tmp_path / "local" / name).read_bytes()


def test_no_actor_is_started_for_want_of_a_task(dataset: Path, sleepy: str, tmp_path: Path) -> None:
    """One episode on two workers is one task: one actor builds one agent, not two. The act
    sleeps, so a second actor, were it started, would have built its agent before the end."""
    pids = tmp_path / "pids"
    pids.mkdir()
    args = {"sleep": 0.05, "pid_dir": str(pids)}
    summary = run_agent(
        sleepy, dataset, "train", tmp_path / "run", agent_args=args, executor=RAY, limit=1
    )
    assert summary.ran == 1
    assert len(list(pids.iterdir())) == 1


def test_agent_that_fails_to_start_is_a_config_error(
    dataset: Path, agents_file: Path, tmp_path: Path
) -> None:
    with pytest.raises(ConfigError, match="no model file"):
        run_agent(f"{agents_file}:BrokenAgent", dataset, "train", tmp_path, executor=RAY, limit=3)
    assert not (tmp_path / "predictions.json").exists()


def test_executor_options_are_checked() -> None:
    with pytest.raises(ConfigError, match="unknown executor"):
        Executor("dask")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="need --executor ray"):
        Executor("local", address="auto")
    with pytest.raises(ConfigError, match="unknown key 'gpus'"):
        Executor("ray", agent_resources={"gpus": 1})


def test_benchmark_on_ray_equals_local(tmp_path: Path) -> None:
    config = GenerateConfig(scenes=3, per_scene=20)
    runs = (RunSpec("random", "random"),)
    for name, workers in (("local", 1), ("ray", RAY)):
        run_benchmark(
            tmp_path / name, config=config, ithor=None, split="train", runs=runs, workers=workers
        )
    local, ray = _files(tmp_path / "local"), _files(tmp_path / "ray")
    # manifests, results.json and report.html hold paths, timings or the command line
    skip = ("manifest.json", "results.json", "report.html")
    compared = [k for k in local if not k.endswith(skip)]
    assert "table2.md" in compared and "runs/random/trajectories.jsonl" in compared
    assert {k: ray[k] for k in compared} == {k: local[k] for k in compared}


def test_cli_executor_options(dataset: Path, tmp_path: Path) -> None:
    """The command line in-process (it joins the open test cluster) equals a local run."""
    base = ["run", "--agent", "goal_only", "--dataset", str(dataset), "--split", "train"]
    base += ["--limit", "12", "-q"]
    ray_args = ["--executor", "ray", "-j", "2", "--agent-resources", '{"num_cpus": 1}']
    runner = CliRunner()
    done = runner.invoke(app, [*base, "--out", str(tmp_path / "ray"), *ray_args])
    assert done.exit_code == 0, done.output
    run_agent("goal_only", dataset, "train", tmp_path / "local", limit=12)
    for name in RUN_FILES:
        assert (tmp_path / "ray" / name).read_bytes() == (tmp_path / "local" / name).read_bytes()
    assert same_manifest(tmp_path / "ray", tmp_path / "local")
    for resources, message in (("[1]", "JSON object"), ('{"num_gpus": 1}', "need --executor ray")):
        bad = runner.invoke(
            app, [*base, "--out", str(tmp_path / "x"), "--agent-resources", resources]
        )
        assert isinstance(bad.exception, ConfigError) and message in str(bad.exception)
    assert not (tmp_path / "x").exists()


SESSIONS = """
import ray
from condvln.parallel import Executor, ordered_map
from condvln.parallel.executors import one_ray_session

starts = []
init = ray.init
ray.init = lambda *a, **k: starts.append(k) or init(*a, **k)
executor = Executor("ray", workers=2)
stages = lambda: [list(ordered_map(abs, [-1, 2, -3], executor)) for _ in range(2)]
assert stages() == [[1, 2, 3]] * 2
each = len(starts)
with one_ray_session():
    assert stages() == [[1, 2, 3]] * 2
    alive = ray.is_initialized()
print(each, len(starts) - each, alive, ray.is_initialized())
"""


def test_one_session_serves_every_stage_of_a_command() -> None:
    """Outside :func:`one_ray_session` each stage starts its own cluster; inside (every
    command, every benchmark) one cluster serves them all until the block ends (a fresh
    process, not this module's open cluster)."""
    import subprocess
    import sys

    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    done = subprocess.run(
        [sys.executable, "-c", SESSIONS], capture_output=True, text=True, timeout=600, env=env
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["2", "1", "True", "False"]


EARLY = """
import sys, threading
import ray
from condvln.parallel import Executor, ordered_map
from condvln.parallel.executors import one_ray_session, start_ray_early

starts = []
init = ray.init
def counted(*a, **k):
    starts.append((threading.current_thread().name, k.get("num_cpus")))
    if len(starts) == 1 and "FAIL_FIRST" in sys.argv:
        raise RuntimeError("refused")
    return init(*a, **k)
ray.init = counted
two = Executor("ray", workers=2)
loaded = lambda name: name in sys.modules
with one_ray_session():
    start_ray_early(two, ["tabnanny"])
    warm = list(ordered_map(loaded, ["tabnanny"] * 4, two))
    again = list(ordered_map(abs, [-4], two))
    other = list(ordered_map(abs, [-5], Executor("ray", workers=1)))
    alive = ray.is_initialized()
left = [t.name for t in threading.enumerate() if t.name == "condvln-ray-start"]
print(starts, warm, again, other, alive, ray.is_initialized(), left)
"""


MONITOR = """
import ray
from ray._private import worker
from condvln.parallel import Executor, ordered_map
from condvln.parallel.executors import one_ray_session

seen = []
shutdown = ray.shutdown
def watched(*a, **k):
    node = worker._global_node
    seen.append([i.process.poll() for i in node.all_processes["monitor"]] if node else None)
    return shutdown(*a, **k)
ray.shutdown = watched
executor = Executor("ray", workers=1)
assert list(ordered_map(abs, [-1], executor)) == [1]
with one_ray_session():
    assert list(ordered_map(abs, [-2], executor)) == [2]
print(seen)
"""


def test_the_autoscaler_monitor_is_stopped_before_ray_shuts_down() -> None:
    """A private cluster's autoscaler monitor has exited (SIGKILL) by the time ``ray.shutdown``
    runs, whether a stage or :func:`one_ray_session` ends the session; Ray then prints no
    "autoscaler failed" report (it would, had the monitor been sent SIGTERM)."""
    import subprocess
    import sys

    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    done = subprocess.run(
        [sys.executable, "-c", MONITOR], capture_output=True, text=True, timeout=600, env=env
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == f"{[[-signal.SIGKILL]] * 2}"
    assert "autoscaler failed" not in done.stderr


@pytest.mark.parametrize("fail_first", [False, True])
def test_a_session_started_early_is_taken_over_by_the_first_stage(fail_first: bool) -> None:
    """:func:`start_ray_early` starts the session in a thread that lives until it is shut
    down; the first stage takes it over (its workers have imported the modules asked for),
    a stage with other settings replaces it, the block's end shuts it down and ends the thread.
    A start that failed in the thread is made again by the first stage (a fresh process)."""
    import subprocess
    import sys

    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    argv = [sys.executable, "-c", EARLY, *(["FAIL_FIRST"] if fail_first else [])]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    first = [("condvln-ray-start", 2)] + ([("MainThread", 2)] if fail_first else [])
    expected = [*first, ("MainThread", 1)]
    assert done.stdout.strip() == f"{expected} {[not fail_first] * 4} [4] [5] True False []"
    assert "SIGTERM handler is not set" not in done.stderr


def test_generate_from_the_command_line_on_ray_equals_local(tmp_path: Path) -> None:
    """``condvln generate --executor ray`` (the session started while the command imports its
    modules) writes the same files as local processes."""
    import subprocess
    import sys

    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    base = [sys.executable, "-m", "condvln", "generate", "--scenes", "2", "--per-scene", "6"]
    for name, extra in (("local", []), ("ray", ["--executor", "ray"])):
        done = subprocess.run(
            [*base, "-j", "2", "-q", "--out", str(tmp_path / name), *extra],
            capture_output=True,
            text=True,
            timeout=600,
            env=env,
        )
        assert done.returncode == 0, done.stderr[-2000:]
    local, ray = (
        {p.relative_to(tmp_path / n): p for p in (tmp_path / n).rglob("*")}
        for n in ("local", "ray")
    )
    assert sorted(local) == sorted(ray) and len(local) > 10
    for path, file in local.items():
        assert not file.is_file() or file.read_bytes() == ray[path].read_bytes(), path
