"""Fault isolation, one agent per worker, agent arguments and loading, batched stepping."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import pytest

from condvln.agents import load_agent, run_agent
from condvln.agents.run import (
    FAILURES,
    EpisodeWorker,
    WorkerConfig,
    episode_specs,
    read_trajectories,
)
from condvln.errors import ConfigError
from condvln.evaluation.evaluate import evaluate_run
from condvln.evaluation.predictions import AGENT_FAILURES
from condvln.io import read_json
from condvln.sim import parse_protocol

AGENT = f"{Path(__file__).parent / 'data' / 'served_agent.py'}:DetectionAgent"
BATCHED = f"{Path(__file__).parent / 'data' / 'served_agent.py'}:BatchedDetectionAgent"


def _records(run_dir: Path) -> dict:
    return {r["episode_id"]: r for r in read_trajectories(run_dir / "trajectories.jsonl")}


def _paths(run_dir: Path) -> dict:
    return {k: (r["positions"], r["actions"], r["stop"]) for k, r in _records(run_dir).items()}


def _ids(dataset: Path, n: int) -> list[int]:
    return [int(s.episode_id) for s in episode_specs(dataset, "train", "original", n)]


def test_exceptions_and_system_exit_end_only_their_episode(dataset: Path, tmp_path: Path) -> None:
    first, second = _ids(dataset, 2)
    args = {"fail_episode": first, "exit_episode": second}
    summary = run_agent(AGENT, dataset, "train", tmp_path, limit=6, agent_args=args)
    assert summary.ran == 6 and summary.failures == {"agent_error": 2}
    records = _records(tmp_path)
    assert records[first]["status"] == "agent_error" and records[first]["steps"] == 2
    assert records[first]["reason"] == "act: ValueError: boom at step 2"
    assert records[second]["reason"] == "act: SystemExit: 4" and records[second]["steps"] == 0
    assert all(r["status"] == "ok" for k, r in records.items() if k not in (first, second))
    assert read_json(tmp_path / "manifest.json")["agent_args"] == args
    # the failures are counted in metrics.json and the tables
    result = evaluate_run(
        dataset, tmp_path / "trajectories.jsonl", tmp_path / "eval", split="train"
    )
    counts = result["metrics"]["counts"]["agent_failures"]
    assert counts == {"agent_error": 2, "invalid_action": 0, "timeout": 0}
    table = result["tables"]["table2"]
    row = dict(zip(table.columns, table.rows[0].values, strict=True))
    assert row["diagnostics fault"] == pytest.approx(100 * 2 / 6)  # of the episodes run


@pytest.mark.parametrize(
    ("bad", "shown"),
    [(True, "True (bool)"), (1.0, "1.0 (float)"), (7, "7 (int)"), ("1", "'1' (str)")],
)
def test_invalid_actions(dataset: Path, tmp_path: Path, bad: object, shown: str) -> None:
    summary = run_agent(AGENT, dataset, "train", tmp_path, limit=2, agent_args={"bad_action": bad})
    assert summary.failures == {"invalid_action": 2}
    for record in _records(tmp_path).values():
        assert record["reason"].startswith(f"act returned {shown}; actions are the ints")
        assert record["steps"] == 0 and record["stop"] is False


@pytest.mark.parametrize("workers", [1, 2])
def test_slow_steps_time_out(dataset: Path, tmp_path: Path, workers: int) -> None:
    summary = run_agent(
        AGENT, dataset, "train", tmp_path, limit=2, agent_args={"sleep": 600.0}, step_timeout=0.2,
        workers=workers,
    )  # fmt: skip
    assert summary.failures == {"timeout": 2}
    for record in _records(tmp_path).values():  # this reason comes only from the interruption
        assert record["reason"] == "act: no answer within the step timeout of 0.2 s"
    assert summary.seconds < 120  # interrupted, not waited out (the agent sleeps 600 s)


def test_fail_fast_stops_at_the_first_failure(dataset: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"invalid_action: act returned True .*\(--fail-fast"):
        run_agent(
            AGENT,
            dataset,
            "train",
            tmp_path,
            limit=6,
            agent_args={"bad_action": True},
            fail_fast=True,
        )
    assert len(_records(tmp_path)) == 1


def test_failed_episodes_are_retried_on_resume(dataset: Path, tmp_path: Path) -> None:
    first = _ids(dataset, 1)[0]
    clean = run_agent(AGENT, dataset, "train", tmp_path / "clean", limit=4)
    assert clean.failures == {}
    run_dir = tmp_path / "run"
    run_agent(AGENT, dataset, "train", run_dir, limit=4, step_timeout=30.0)
    with (run_dir / "trajectories.jsonl").open("ab") as fh:  # as if that episode had failed
        fh.write(
            b'{"episode_id": %d, "positions": [[0, 0, 0]], "headings": [0], "actions": [],'
            b' "stop": false, "steps": 0, "agent": "x", "status": "timeout", "reason": "r"}\n'
            % first
        )
    resumed = run_agent(AGENT, dataset, "train", run_dir, limit=4)
    assert (resumed.skipped, resumed.ran) == (3, 1)
    assert _paths(run_dir) == _paths(tmp_path / "clean")
    assert len(read_trajectories(run_dir / "trajectories.jsonl")) == 4


def test_one_agent_per_worker_for_the_whole_run(dataset: Path, tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    summary = run_agent(
        AGENT,
        dataset,
        "train",
        tmp_path / "run",
        limit=20,
        workers=2,
        agent_args={"log_file": str(log)},
    )
    assert summary.ran == 20
    events = [line.split() for line in log.read_text().splitlines()]
    constructed = [pid for event, pid in events if event == "construct"]
    resets = [pid for event, pid in events if event == "reset"]
    assert len(resets) == 20 and len(constructed) <= 2
    assert len(set(constructed)) == len(constructed) and set(resets) <= set(constructed)


def _second_of_a_scene(dataset: Path, n: int) -> int:
    """An episode that runs after another one of its scene, in the same task of the same worker."""
    specs = sorted(
        episode_specs(dataset, "train", "original", n), key=lambda s: (s.scene_id, s.episode_id)
    )
    pairs = itertools.pairwise(specs)
    return max(int(b.episode_id) for a, b in pairs if a.scene_id == b.scene_id)


def test_dead_worker_loses_no_finished_episode(dataset: Path, tmp_path: Path) -> None:
    kill = tmp_path / "kill-now"
    args = {"kill_file": str(kill), "kill_episode": _second_of_a_scene(dataset, 16)}
    clean = tmp_path / "clean"
    run_agent(AGENT, dataset, "train", clean, limit=16, agent_args=args)
    run_dir = tmp_path / "run"
    progress: list[int] = []
    kill.touch()  # the worker dies when it reaches that episode, whatever the timing
    with pytest.raises(ConfigError, match="a worker process died"):
        run_agent(
            AGENT,
            dataset,
            "train",
            run_dir,
            limit=16,
            workers=2,
            agent_args=args,
            progress=lambda done, total: progress.append(done),
        )
    assert not kill.exists()
    kept = _records(run_dir)
    assert 1 <= len(kept) == progress[-1] < 16
    resumed = run_agent(AGENT, dataset, "train", run_dir, limit=16, workers=2, agent_args=args)
    assert resumed.skipped == len(kept) and resumed.ran == 16 - len(kept)
    assert _paths(run_dir) == _paths(clean)


def test_batched_stepping_equals_one_at_a_time(dataset: Path, tmp_path: Path) -> None:
    run_agent(AGENT, dataset, "train", tmp_path / "b1", limit=12)
    for batch, workers in ((4, 1), (32, 1), (4, 2)):
        out = tmp_path / f"b{batch}w{workers}"
        summary = run_agent(
            BATCHED, dataset, "train", out, limit=12, batch_size=batch, workers=workers
        )
        assert summary.batch_size == batch
        assert _paths(out) == _paths(tmp_path / "b1")
    # lockstep: one act_batch call serves several episodes
    config = WorkerConfig(BATCHED, {}, dataset, parse_protocol(None), 0, batch_size=8)
    worker = EpisodeWorker(config)
    records = list(worker.run(episode_specs(dataset, "train", "original", 12)))
    steps = sum(r["steps"] for r in records)
    assert worker.agent.calls < steps / 3


def test_agents_without_act_batch_run_one_at_a_time(dataset: Path, tmp_path: Path) -> None:
    summary = run_agent(AGENT, dataset, "train", tmp_path, limit=3, batch_size=8)
    assert summary.batch_size == 1 and summary.failures == {}


def test_loading_from_files_and_modules_without_pythonpath(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "my_cwd_agents.py").write_text(
        "class Agent:\n    def __init__(self, k=1):\n        self.k = k\n"
        "    def reset(self, episode):\n        pass\n    def act(self, obs):\n        return 0\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    assert load_agent("my_cwd_agents:Agent", {"k": 5}).k == 5
    assert load_agent(f"{tmp_path / 'my_cwd_agents.py'}:Agent").k == 1
    with pytest.raises(ConfigError, match="rejects its arguments"):
        load_agent("my_cwd_agents:Agent", {"nope": 1})
    with pytest.raises(ConfigError, match="no file"):
        load_agent("missing/agent.py:Agent")
    with pytest.raises(ConfigError, match="has no attribute 'Nope'"):
        load_agent("my_cwd_agents:Nope")


def test_failure_names_agree_between_runner_and_evaluation() -> None:
    assert FAILURES == AGENT_FAILURES


def test_cli_run_reports_failures_and_fail_fast(dataset: Path, tmp_path: Path, cli) -> None:
    first = _ids(dataset, 1)[0]
    base = ("run", "--agent", AGENT, "--dataset", str(dataset), "--split", "train")
    base += ("--limit", "3", "-j", "1", "-q")
    ok = cli(*base, "--out", str(tmp_path / "a"), "--agent-arg", f"fail_episode={first}")
    assert ok.returncode == 3, ok.stderr  # episodes failed (tests/agents/test_run_guard.py)
    assert (
        f"agent failures: 1 agent_error; first: episode {first}: agent_error: act: ValueError"
        in ok.stdout
    )
    stop = cli(*base, "--out", str(tmp_path / "b"), "--agent-arg", "bad_action=true", "--fail-fast")
    assert stop.returncode == 2 and stop.stderr.count("\n") == 1 and "Traceback" not in stop.stderr
    assert "invalid_action: act returned True (bool)" in stop.stderr
    # agents that cannot start (bad --agent-arg, unreachable server, ...) are hostile-corpus
    # cases: tests/hostile/conftest.py AGENT_LOAD_CASES
