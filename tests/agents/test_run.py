"""``run_agent``: run folder layout, determinism across workers, resume, harness inputs."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from condvln import __version__
from condvln.agents import run_agent
from condvln.agents.run import episode_specs, read_trajectories
from condvln.errors import ConfigError
from condvln.io import read_json
from condvln.sim.protocol import ObservationProtocol
from condvln.vlnce import load_split, split_path


def test_run_folder_layout(dataset: Path, tmp_path: Path) -> None:
    seen: list[tuple[int, int]] = []
    summary = run_agent(
        "oracle_linear",
        dataset,
        "train",
        tmp_path,
        limit=6,
        progress=lambda d, t: seen.append((d, t)),
    )
    assert summary.ran == summary.episodes == 6 and summary.skipped == 0
    assert seen[-1] == (6, 6) and len(seen) == 6
    records = read_trajectories(tmp_path / "trajectories.jsonl")
    assert [r["episode_id"] for r in records] == sorted(r["episode_id"] for r in records)
    predictions = orjson.loads((tmp_path / "predictions.json").read_bytes())
    assert set(predictions) == {str(r["episode_id"]) for r in records}
    for rec in records:
        assert set(rec) == {
            "episode_id",
            "positions",
            "headings",
            "actions",
            "stop",
            "steps",
            "agent",
            "status",
        }
        assert rec["status"] == "ok"
        assert len(rec["positions"]) == len(rec["actions"]) + 1 == len(rec["headings"])
        assert rec["steps"] == len(rec["actions"]) and rec["agent"] == "oracle_linear"
        steps = predictions[str(rec["episode_id"])]
        assert [s["position"] for s in steps] == rec["positions"]
        assert [s["stop"] for s in steps] == [False] * (len(steps) - 1) + [rec["stop"]]
    manifest = read_json(tmp_path / "manifest.json")
    assert manifest["agent"] == "oracle_linear" and manifest["instruction_source"] == "oracle"
    assert manifest["protocol"]["fov_deg"] == 90.0 and manifest["condvln_version"] == __version__
    assert manifest["split"] == "train" and manifest["seed"] == 0 and manifest["dataset_hash"]
    # no text rendering for an agent that reads none: the stamp is the protocol's own
    assert "text" not in manifest["protocol"]
    assert manifest["protocol_hash"] == ObservationProtocol().protocol_hash()


def test_results_do_not_depend_on_workers(dataset: Path, tmp_path: Path) -> None:
    protocol = {"miss_rate": 0.2, "false_detection_rate": 0.2}
    for workers in (1, 2):
        run_agent(
            "neurosymbolic",
            dataset,
            "train",
            tmp_path / str(workers),
            limit=10,
            workers=workers,
            protocol=protocol,
        )
    for name in ("trajectories.jsonl", "predictions.json"):
        assert (tmp_path / "1" / name).read_bytes() == (tmp_path / "2" / name).read_bytes()


def test_resume_skips_finished_episodes_and_repairs_a_torn_line(
    dataset: Path, tmp_path: Path
) -> None:
    run_agent("random", dataset, "train", tmp_path, limit=4)
    with (tmp_path / "trajectories.jsonl").open("ab") as fh:
        fh.write(b'{"episode_id": 99, "positions": [[0.0')
    summary = run_agent("random", dataset, "train", tmp_path, limit=8)
    assert (summary.skipped, summary.ran) == (4, 4)
    assert len(read_trajectories(tmp_path / "trajectories.jsonl")) == 8
    fresh = tmp_path / "fresh"
    run_agent("random", dataset, "train", fresh, limit=8)
    assert (fresh / "predictions.json").read_bytes() == (tmp_path / "predictions.json").read_bytes()
    again = run_agent("random", dataset, "train", tmp_path, limit=8, resume=False)
    assert again.skipped == 0 and again.ran == 8


def test_resume_refuses_other_settings(dataset: Path, tmp_path: Path) -> None:
    run_agent("random", dataset, "train", tmp_path, limit=2)
    with pytest.raises(ConfigError, match="'protocol' differs"):
        run_agent("random", dataset, "train", tmp_path, limit=2, protocol={"panoramic": True})
    with pytest.raises(ConfigError, match="unknown agent"):
        run_agent("randm", dataset, "train", tmp_path)


def test_test_split_budgets_and_oracle_texts_come_from_the_answers(dataset: Path) -> None:
    answers = read_json(split_path(dataset, "test", "_answers"))
    specs = episode_specs(dataset, "test", "original")
    oracle = episode_specs(dataset, "test", "oracle")
    assert specs and "info" not in load_split(dataset, "test")["episodes"][0]
    for spec, linear in zip(specs, oracle, strict=True):
        labels = answers[str(spec.episode_id)]["info"]["condvln"]
        assert spec.step_budget == linear.step_budget == labels["step_budget"]
        assert linear.instruction == labels["oracle_instruction"] != spec.instruction


def test_pool_tasks_keep_each_scene_whole_unless_it_is_a_large_share() -> None:
    from condvln.agents.runner.episodes import EpisodeSpec
    from condvln.agents.runner.pool import _tasks

    sizes = {"big": 100, "mid": 30, **{f"s{k}": 3 + k for k in range(10)}}  # 205 episodes
    specs = [
        EpisodeSpec(f"{scene}-{i}", scene, (0.0, 0.0, 0.0), 0.0, "", 9)
        for scene, n in sizes.items()
        for i in range(n)
    ]
    tasks = _tasks(specs[::-1], batch=1, workers=2)
    # a task holds at most 26 episodes (205 over 2 workers × 4): "big" and "mid" are split
    # evenly, every other scene is one task; the largest tasks come first
    assert [(t[0].scene_id, len(t)) for t in tasks] == [
        *[("big", 25)] * 4,
        *[("mid", 15)] * 2,
        *[(f"s{k}", 3 + k) for k in range(9, -1, -1)],
    ]
    assert all(len({s.scene_id for s in t}) == 1 for t in tasks)
    assert [s.episode_id for t in tasks for s in t if s.scene_id == "mid"] == [
        f"mid-{i}" for i in sorted(range(30), key=str)
    ]
    assert sorted(s.episode_id for t in tasks for s in t) == sorted(s.episode_id for s in specs)


def test_kept_scenes_serve_the_next_run_and_change_no_result(
    dataset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from condvln.agents.runner.loop import keeping_scenes, kept_scenes
    from condvln.nav.geodesic import GridNavigator

    solves: list[int] = []
    solve = GridNavigator._solve
    monkeypatch.setattr(
        GridNavigator, "_solve", lambda nav, seed: solves.append(1) or solve(nav, seed)
    )
    run_agent("neurosymbolic", dataset, "train", tmp_path / "plain", limit=12)
    plain = len(solves)
    with keeping_scenes() as scenes:
        assert kept_scenes() is scenes
        run_agent("neurosymbolic", dataset, "train", tmp_path / "first", limit=12)
        first = len(solves) - plain
        run_agent("neurosymbolic", dataset, "train", tmp_path / "again", limit=12)
        # every field the second run needs is kept: goals' and those from where it stood
        assert len(solves) - plain - first == 0 and len(scenes.store) == first
    assert kept_scenes() is None
    assert 0 < first <= plain
    for run in ("first", "again"):
        for name in ("trajectories.jsonl", "predictions.json"):
            assert (tmp_path / run / name).read_bytes() == (tmp_path / "plain" / name).read_bytes()


def test_runs_on_pinned_processes_match_a_run_in_this_process(
    dataset: Path, tmp_path: Path
) -> None:
    from condvln.parallel.executors import PinnedProcesses

    protocol = {"miss_rate": 0.2, "false_detection_rate": 0.2}
    run_agent("neurosymbolic", dataset, "train", tmp_path / "here", limit=20, protocol=protocol)
    progress: list[tuple[int, int]] = []
    with PinnedProcesses(2) as processes:
        for name in ("pinned", "pinned-again"):
            summary = run_agent(
                "neurosymbolic",
                dataset,
                "train",
                tmp_path / name,
                limit=20,
                protocol=protocol,
                executor=processes,
                progress=lambda d, t: progress.append((d, t)),
            )
            assert summary.ran == 20 and not summary.failures
        with pytest.raises(ConfigError, match="unknown agent"):
            run_agent("randm", dataset, "train", tmp_path / "bad", executor=processes)
    assert progress[-1] == (20, 20) and len(progress) == 40
    for name in ("trajectories.jsonl", "predictions.json"):
        here = (tmp_path / "here" / name).read_bytes()
        assert (tmp_path / "pinned" / name).read_bytes() == here
        assert (tmp_path / "pinned-again" / name).read_bytes() == here


def test_pinned_homes_balance_scenes_by_episodes() -> None:
    from condvln.agents.runner.episodes import EpisodeSpec
    from condvln.agents.runner.pool import _homes

    sizes = {"a": 9, "b": 7, "c": 5, "d": 4, "e": 3}
    specs = [
        EpisodeSpec(f"{s}-{i}", s, (0.0, 0.0, 0.0), 0.0, "", 9)
        for s, n in sizes.items()
        for i in range(n)
    ]
    homes = _homes(specs[::-1], workers=2)
    assert homes == {"a": 0, "b": 1, "c": 1, "d": 0, "e": 1}  # 13 and 15 episodes
    assert _homes(specs, workers=2) == homes
