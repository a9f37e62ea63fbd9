"""`condvln evaluate`: scripted agents on a small generated dataset, both prediction formats,
missing / extra / off-map counting, malformed files, and the Table 2 / Table 3 layouts."""

from __future__ import annotations

import csv
import gzip
import io
import itertools
import json
import math
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rich.console import Console

from condvln.dataset.generate import GenerateConfig, generate_dataset
from condvln.dataset.schema import load_checked_split
from condvln.errors import ConfigError, FormatError
from condvln.evaluation import evaluate as evaluate_module
from condvln.evaluation import specs
from condvln.evaluation.evaluate import evaluate_run, load_split_episodes, render_summary
from condvln.evaluation.predictions import read_predictions
from condvln.evaluation.specs import MetricSpec
from condvln.evaluation.tables import FAILURE_CATEGORIES, table2, table3, terminal_tables
from condvln.nav import GridNavigator
from condvln.parallel.executors import PinnedProcesses
from condvln.registry import Registry
from condvln.scene.serialize import load_scene
from condvln.vlnce import dump_gz, load_scene_index, scene_json_path, split_path

SPLIT = "train"
Episode = dict[str, Any]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("evalds") / "ds"
    generate_dataset(GenerateConfig(scenes=8, per_scene=40, seed=3, branch_steps=(1, 2, 3)), out)
    return out


@pytest.fixture(scope="module")
def episodes(dataset: Path) -> list[Episode]:
    return load_split_episodes(dataset, SPLIT)


def _jsonl_line(episode_id: int, positions: Any, stop: bool = True) -> str:
    positions = [list(map(float, p)) for p in positions]
    n = len(positions)
    actions = [1] * (n - 2) + [0] if stop else [1] * (n - 1)
    return json.dumps(
        {
            "episode_id": episode_id,
            "positions": positions,
            "headings": [0.0] * n,
            "actions": actions if n > 1 else [],
            "stop": stop,
            "agent": "scripted",
        }
    )


def _write_jsonl(path: Path, paths: dict[int, Any], stop: bool = True) -> Path:
    path.write_text("".join(_jsonl_line(i, p, stop) + "\n" for i, p in paths.items()))
    return path


def _write_leaderboard(path: Path, paths: dict[int, Any]) -> Path:
    doc = {
        str(i): [
            {"position": list(map(float, p)), "heading": 0.0, "stop": k == len(ps) - 1}
            for k, p in enumerate(ps)
        ]
        for i, ps in paths.items()
    }
    path.write_text(json.dumps(doc))
    return path


def _records(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]


def _reject_constant(name: str) -> None:
    raise AssertionError(f"non-finite literal {name} in output")


def _assert_finite_outputs(out: Path) -> None:
    """Every output file exists; no JSON value is NaN / Infinity; every CSV cell is finite."""
    docs = [
        json.loads((out / name).read_text(), parse_constant=_reject_constant)
        for name in ("metrics.json", "manifest.json")
    ]
    docs += [
        json.loads(line, parse_constant=_reject_constant)
        for line in (out / "episodes.jsonl").read_text().splitlines()
    ]
    stack: list[Any] = docs
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
        elif isinstance(value, float):
            assert math.isfinite(value)
    for name in ("table2.csv", "table3.csv"):
        rows = list(csv.reader(io.StringIO((out / name).read_text())))
        assert all(cell == "" or math.isfinite(float(cell)) for row in rows[1:] for cell in row[1:])
    for name in ("table2.md", "table3.md"):
        assert "nan" not in (out / name).read_text().split("|", 1)[1]


def _perfect(episodes: list[Episode]) -> dict[int, Any]:
    return {e["episode_id"]: e["reference_path"] for e in episodes}


def _gt_replay(dataset: Path) -> dict[int, Any]:
    """The ground-truth locations of every train episode (what VLN-CE's NDTW aligns with)."""
    with gzip.open(split_path(dataset, SPLIT, "_gt"), "rt") as f:
        return {int(k): v["locations"] for k, v in json.load(f).items()}


def _wrong_branch_paths(dataset: Path, episodes: list[Episode]) -> dict[int, list[Any]]:
    """Start → the pre-decision waypoints → the non-gold leaf farthest (geodesic) from the gold
    goal, when that leaf is more than twice the radius away."""
    navs: dict[str, GridNavigator] = {}
    out = {}
    for ep in episodes:
        labels = ep["info"]["condvln"]
        gold, radius = ep["goals"][0]["position"], ep["goals"][0]["radius"]
        scene_file = labels["scene_file"]
        if scene_file not in navs:
            navs[scene_file] = GridNavigator(load_scene(dataset / scene_file))
        nav = navs[scene_file]
        leaves = [
            (nav.distance(b["position"], gold) or 0.0, b["position"])
            for i, b in enumerate(labels["branch_goals"])
            if i != labels["leaf_index"]
        ]
        far = max(leaves, default=(0.0, None))
        if far[0] <= 2 * radius:
            continue
        prefix = labels["subgoals"][: labels["horizon"]]
        points = [ep["start_position"], *(s["position"] for s in prefix), far[1]]
        path = [points[0]]
        for a, b in itertools.pairwise(points):
            path.extend(nav.shortest_path(a, b)[1:])
        out[ep["episode_id"]] = path
    return out


# --- scripted agents ------------------------------------------------------------------------


def test_perfect_agent(dataset: Path, episodes: list[Episode], tmp_path: Path) -> None:
    preds = _write_jsonl(tmp_path / "perfect.jsonl", _gt_replay(dataset))
    result = evaluate_run(dataset, preds, tmp_path / "out", seed=1)
    assert result["split"] == SPLIT  # chosen from the ids: they equal the train split's
    records = _records(tmp_path / "out")
    assert [r["episode_id"] for r in records] == [e["episode_id"] for e in episodes]
    by_id = {e["episode_id"]: e for e in episodes}
    for r in records:
        assert (r["success"], r["oracle_success"], r["bsa"], r["csr"]) == (1, 1, 1.0, 1)
        assert (r["bsa_branch"], r["csr_all"]) == (1.0, 1)
        arm = len(by_id[r["episode_id"]]["info"]["condvln"]["branch_subgoals"])
        assert r["branch_targets_total"] == r["branch_targets_reached"] == arm + 1
        assert r["ndtw"] == 1.0 and r["sdtw"] == 1.0 and r["fidelity_reference"] == "gt"
        ref_len = r["reference_path_length"]
        ell = by_id[r["episode_id"]]["info"]["geodesic_distance"]
        assert r["spl"] == pytest.approx(ell / max(ell, ref_len)) and r["spl"] <= 1.0
        assert r["failure_category"] is None and r["wrong_branch"] is False
        assert r["cancelling_turns"] == 0  # actions were logged
    metrics = result["metrics"]
    for key in ("success", "oracle_success", "bsa", "csr", "bsa_branch", "csr_all", "ndtw"):
        assert metrics["metrics"][key]["mean"] == pytest.approx(1.0)
    assert metrics["metrics"]["csr"]["n"] == len(episodes)
    assert metrics["invariants"] == {"ok": True, "violations": []}
    assert metrics["counts"]["missing"] == metrics["counts"]["extra"] == 0
    assert metrics["pair_consistency"]["mean"] in (1.0, None)
    assert set(metrics["breakdowns"]) == {
        "source_dataset",
        "category",
        "depth",
        "chain",
        "composition",
        "observability",
        "horizon",
        "branch_steps",
    }
    _assert_finite_outputs(tmp_path / "out")
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["dataset"]["split"] == SPLIT and len(manifest["dataset"]["sha256"]) == 64
    assert manifest["seed"] == 1 and manifest["predictions"]["sha256"]
    printed = io.StringIO()
    Console(file=printed, width=250).print(render_summary(result))
    assert "perfect on train" in printed.getvalue() and "Table 3" in printed.getvalue()


def test_formats_agree_and_output_is_deterministic(
    dataset: Path, episodes: list[Episode], tmp_path: Path
) -> None:
    paths = _perfect(episodes)
    paths[episodes[0]["episode_id"]] = [episodes[0]["start_position"]] * 3  # one failure
    jsonl = _write_jsonl(tmp_path / "a.jsonl", paths)
    board = _write_leaderboard(tmp_path / "b.json", paths)
    a, b = read_predictions(jsonl), read_predictions(board)
    assert a.keys() == b.keys()
    assert all(np.array_equal(a[i].positions, b[i].positions) for i in a)
    assert all(a[i].stop == b[i].stop for i in a) and b[1].actions is None
    for name, file in (("a1", jsonl), ("a2", jsonl), ("b", board)):
        evaluate_run(dataset, file, tmp_path / name, split=SPLIT, run_name="run")
    drop = {"cancelling_turns"}  # only the JSONL logs actions
    ra, rb = _records(tmp_path / "a1"), _records(tmp_path / "b")
    assert [{k: v for k, v in r.items() if k not in drop} for r in ra] == [
        {k: v for k, v in r.items() if k not in drop} for r in rb
    ]
    for name in ("episodes.jsonl", "metrics.json", "table2.md", "table3.csv"):
        assert (tmp_path / "a1" / name).read_bytes() == (tmp_path / "a2" / name).read_bytes()
    ma = json.loads((tmp_path / "a1" / "metrics.json").read_text())
    mb = json.loads((tmp_path / "b" / "metrics.json").read_text())
    del ma["metrics"]["cancelling_turns"], mb["metrics"]["cancelling_turns"]
    assert ma == mb


def test_pinned_scoring_keeps_geodesics_and_the_same_bytes(
    dataset: Path, episodes: list[Episode], tmp_path: Path
) -> None:
    paths = _perfect(episodes)
    paths[episodes[0]["episode_id"]] = [episodes[0]["start_position"]] * 3
    file = _write_jsonl(tmp_path / "a.jsonl", paths)
    evaluate_run(dataset, file, tmp_path / "one", split=SPLIT, run_name="run")
    with PinnedProcesses(2) as processes:  # two runs on the same processes, as the benchmark
        for name in ("p1", "p2"):
            evaluate_run(
                dataset, file, tmp_path / name, split=SPLIT, run_name="run", executor=processes
            )
    for name in ("episodes.jsonl", "metrics.json", "table2.md", "table3.csv"):
        one = (tmp_path / "one" / name).read_bytes()
        assert one == (tmp_path / "p1" / name).read_bytes() == (tmp_path / "p2" / name).read_bytes()
    # a process keeps a scene's geodesics until the scene file changes
    scene = tmp_path / "scene.json"
    checked = load_checked_split(dataset, SPLIT)
    assert checked.scene_files == [
        scene_json_path(dataset, e, load_scene_index(dataset)) for e in checked.episodes
    ]
    shutil.copy(checked.scene_files[0], scene)
    kept = evaluate_module._scene_geodesic(scene)
    assert evaluate_module._scene_geodesic(scene) is kept
    scene.write_bytes(scene.read_bytes() + b" ")
    assert evaluate_module._scene_geodesic(scene) is not kept
    with pytest.raises(FormatError, match=r"missing\.json"):
        evaluate_module._scene_geodesic(tmp_path / "missing.json")


def test_fresh_workers_fork_after_the_first_scene_is_scored_here(
    dataset: Path, episodes: list[Episode], tmp_path: Path
) -> None:
    """With fresh local workers this process scores the first scene itself (the workers fork
    from it with numba's kernels loaded), the workers the rest: the same bytes as one process."""
    file = _write_jsonl(tmp_path / "a.jsonl", _perfect(episodes))
    evaluate_run(dataset, file, tmp_path / "one", split=SPLIT, run_name="run")
    evaluate_module._GEODESICS.clear()
    evaluate_run(dataset, file, tmp_path / "two", split=SPLIT, run_name="run", executor=2)
    kept = [Path(key[0]) for key in evaluate_module._GEODESICS]
    evaluate_module._GEODESICS.clear()
    scenes = sorted(set(load_checked_split(dataset, SPLIT).scene_files))
    assert len(scenes) > 1 and kept == scenes[:1]
    for name in ("episodes.jsonl", "metrics.json", "table2.md", "table3.csv"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()


def test_a_scene_task_carries_its_own_episodes_ground_truth_only(
    dataset: Path, episodes: list[Episode], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A scene's task is pickled to a worker: it holds the ground-truth locations of that
    scene's episodes, not the whole split's (which, once per scene, made two workers slower
    than one), and every episode's are in some task."""
    file = _write_jsonl(tmp_path / "a.jsonl", _perfect(episodes))
    sent: list[tuple[Any, ...]] = []
    real = evaluate_module.ordered_map

    def recording(function: Any, tasks: list[tuple[Any, ...]], *args: Any, **kw: Any) -> Any:
        if function is evaluate_module._score_scene:
            sent.extend(tasks)
        return real(function, tasks, *args, **kw)

    monkeypatch.setattr(evaluate_module, "ordered_map", recording)
    evaluate_run(dataset, file, tmp_path / "out", split=SPLIT, run_name="run")
    assert len(sent) > 1
    for task in sent:
        assert set(task[6]) == {str(e["episode_id"]) for e in task[2]}
    assert sum(len(task[6]) for task in sent) == len(episodes)


def test_wrong_branch_agent(dataset: Path, episodes: list[Episode], tmp_path: Path) -> None:
    paths = _wrong_branch_paths(dataset, episodes)
    assert len(paths) >= 5
    preds = _write_jsonl(tmp_path / "wrong.jsonl", paths)
    result = evaluate_run(dataset, preds, tmp_path / "out", split=SPLIT)
    records = [r for r in _records(tmp_path / "out") if r["episode_id"] in paths]
    assert len(records) == len(paths)
    for r in records:
        assert r["success"] == 0 and r["csr"] in (0, None)
        assert r["wrong_branch"] is True and r["failure_category"] == "wrong_branch"
    assert any(r["csr"] == 0 for r in records)
    assert result["metrics"]["counts"]["missing"] == len(episodes) - len(paths)
    row = table2({"wrong": records}).rows[0]
    columns = table2({"wrong": records}).columns
    assert row.values[columns.index("procedural CSR (paper)")] == 0.0
    assert row.values[columns.index("diagnostics WB")] == 100.0
    assert row.values[columns.index("diagnostics wrong_branch")] == 100.0


def test_wrong_branch_earns_only_the_shared_prefix(
    dataset: Path, episodes: list[Episode], tmp_path: Path
) -> None:
    """Standing at the start, at each pre-decision waypoint, then at a wrong leaf goal: the
    paper's BSA credits the waypoints (horizon / subgoals), BSA_branch and CSR_all give 0."""
    paths = {}
    for ep in episodes:
        labels = ep["info"]["condvln"]
        wrong = next(b for i, b in enumerate(labels["branch_goals"]) if i != labels["leaf_index"])
        prefix = [s["position"] for s in labels["subgoals"][: labels["horizon"]]]
        paths[ep["episode_id"]] = [ep["start_position"], *prefix, wrong["position"]]
    evaluate_run(dataset, _write_jsonl(tmp_path / "w.jsonl", paths), tmp_path / "out", split=SPLIT)
    by_id = {e["episode_id"]: e["info"]["condvln"] for e in episodes}
    records = _records(tmp_path / "out")
    assert len(records) == len(episodes)
    in_branch = 0
    for r in records:
        labels = by_id[r["episode_id"]]
        horizon, n_sub = labels["horizon"], len(labels["subgoals"])
        in_branch += n_sub > horizon
        assert n_sub == horizon + len(labels["branch_subgoals"])
        assert r["subgoals_reached"] == horizon
        assert r["bsa"] == (horizon / n_sub if n_sub else None)
        assert (r["bsa_branch"], r["branch_targets_reached"], r["csr_all"]) == (0.0, 0, 0)
        assert r["success"] == 0 and r["wrong_branch"] is True
    assert in_branch >= 5  # episodes whose gold arm holds in-branch subgoals were exercised


def test_agent_that_never_moves(dataset: Path, episodes: list[Episode], tmp_path: Path) -> None:
    paths = {e["episode_id"]: [e["start_position"]] * 4 for e in episodes}
    result = evaluate_run(
        dataset, _write_leaderboard(tmp_path / "still.json", paths), tmp_path / "o"
    )
    assert result["metrics"]["metrics"]["success"]["mean"] == 0.0
    assert result["metrics"]["metrics"]["path_length"]["mean"] == 0.0
    assert all(r["success"] == 0 and r["failure_category"] for r in result["records"])
    assert result["metrics"]["invariants"]["ok"]
    _assert_finite_outputs(tmp_path / "o")


def test_a_plugin_metric_may_not_take_a_record_key(
    dataset: Path, episodes: list[Episode], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry: Registry[MetricSpec] = Registry("metric")
    registry.add("scene_id", MetricSpec("scene_id", "binary", "a clash", score=lambda r: 1))
    monkeypatch.setattr(specs, "METRICS", registry)
    paths = {e["episode_id"]: [e["start_position"]] * 2 for e in episodes[:2]}
    preds = _write_jsonl(tmp_path / "p.jsonl", paths)
    with pytest.raises(ConfigError, match=r"^metric 'scene_id' has the name of a key of every "):
        evaluate_run(dataset, preds, tmp_path / "out", split=SPLIT)


def test_missing_extra_and_off_map(dataset: Path, episodes: list[Episode], tmp_path: Path) -> None:
    paths = _perfect(episodes)
    missing = [e["episode_id"] for e in episodes[:3]]
    for i in missing:
        del paths[i]
    paths[10_000] = paths[10_001] = [[0.0, 0.0, 0.0]]
    through, stop_off = episodes[3], episodes[4]
    ref = through["reference_path"]
    paths[through["episode_id"]] = [*ref[:1], [1e4, 0.0, 0.0], *ref[1:]]
    paths[stop_off["episode_id"]] = [*stop_off["reference_path"], [1e4, 0.0, 0.0]]
    preds = _write_jsonl(tmp_path / "p.jsonl", paths)
    result = evaluate_run(dataset, preds, tmp_path / "out", split=SPLIT)
    counts = result["metrics"]["counts"]
    assert (counts["missing"], counts["extra"], counts["extra_ids"]) == (3, 2, [10_000, 10_001])
    assert (counts["off_map_positions"], counts["off_map_episodes"]) == (2, 2)
    assert counts["scored"] == len(episodes) - 3
    by_id = {r["episode_id"]: r for r in _records(tmp_path / "out")}
    assert len(by_id) == len(episodes) and 10_000 not in by_id
    assert all(by_id[i]["failure_category"] == "invalid" for i in missing)
    passed = by_id[through["episode_id"]]
    assert passed["success"] == 1 and passed["off_map_positions"] == 1  # the stop is on the map
    stopped = by_id[stop_off["episode_id"]]
    radius = stop_off["goals"][0]["radius"]
    assert stopped["success"] == 0 and stopped["distance_to_goal"] > radius
    assert stopped["oracle_success"] == 1  # it passed through the goal before leaving the map
    _assert_finite_outputs(tmp_path / "out")
    assert "3 missing" in str(render_summary(result).renderables[0])


def test_test_split_uses_answers(dataset: Path, tmp_path: Path) -> None:
    episodes = load_split_episodes(dataset, "test")
    preds = _write_jsonl(tmp_path / "t.jsonl", _perfect(episodes))
    result = evaluate_run(dataset, preds, tmp_path / "out", split="test")
    assert result["metrics"]["metrics"]["csr"]["mean"] == 1.0
    assert "answers_sha256" in result["manifest"]["dataset"]


def test_split_must_be_clear(dataset: Path, tmp_path: Path) -> None:
    preds = _write_jsonl(tmp_path / "one.jsonl", {1: [[0.0, 0.0, 0.0]]})
    with pytest.raises(ConfigError, match="--split"):
        evaluate_run(dataset, preds, tmp_path / "out")
    with pytest.raises(ConfigError, match="unknown split 'nope'"):
        evaluate_run(dataset, preds, tmp_path / "out", split="nope")


def test_malformed_dataset_episode(dataset: Path, episodes: list[Episode], tmp_path: Path) -> None:
    broken = tmp_path / "ds"
    shutil.copytree(dataset, broken)
    doc = json.loads(gzip.decompress(split_path(broken, SPLIT).read_bytes()))
    del doc["episodes"][0]["goals"]
    dump_gz(split_path(broken, SPLIT), doc)
    preds = _write_jsonl(tmp_path / "p.jsonl", _perfect(episodes))
    with pytest.raises(FormatError, match="episode 1: field 'goals': missing"):
        evaluate_run(broken, preds, tmp_path / "out", split=SPLIT)


def _read_noting_the_process(path: Path) -> Any:
    """:func:`read_predictions`, appending the reading process's id to ``$READERS_FILE``."""
    with Path(os.environ["READERS_FILE"]).open("a") as out:
        out.write(f"{os.getpid()}\n")
    return read_predictions(path)


@pytest.mark.parametrize("workers", [1, 2])
def test_a_bad_predictions_file_is_reported_before_a_bad_split(
    dataset: Path, tmp_path: Path, workers: int
) -> None:
    """With two workers the predictions are read in another process while this one reads the
    split; when both are malformed the predictions' error still comes first."""
    broken = tmp_path / "ds"
    shutil.copytree(dataset, broken)
    doc = json.loads(gzip.decompress(split_path(broken, SPLIT).read_bytes()))
    del doc["episodes"][0]["goals"]
    dump_gz(split_path(broken, SPLIT), doc)
    preds = tmp_path / "p.jsonl"
    preds.write_text(_jsonl_line(1, [[0, 0, 0], [0, 0, float("nan")]]))
    with pytest.raises(FormatError, match="field 'positions': must be finite"):
        evaluate_run(broken, preds, tmp_path / "out", split=SPLIT, executor=workers)
    assert not (tmp_path / "out").exists()


def test_two_workers_read_the_predictions_in_another_process(
    dataset: Path, episodes: list[Episode], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    file = _write_jsonl(tmp_path / "a.jsonl", _perfect(episodes))
    readers = tmp_path / "readers"
    monkeypatch.setenv("READERS_FILE", str(readers))
    monkeypatch.setattr(evaluate_module, "read_predictions", _read_noting_the_process)
    evaluate_run(dataset, file, tmp_path / "one", split=SPLIT, run_name="run")
    evaluate_run(dataset, file, tmp_path / "two", split=SPLIT, run_name="run", executor=2)
    here, other = readers.read_text().split()
    assert here == str(os.getpid()) != other
    for name in ("episodes.jsonl", "metrics.json"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()


# --- malformed predictions ------------------------------------------------------------------

GOOD = _jsonl_line(1, [[0, 0, 0], [0, 0, 0.25]])


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("p.jsonl", GOOD + "\n{not json\n", "line 2: not valid JSON"),
        ("p.jsonl", '{"episode_id": 1, "positions": [[0, 0, 0]], "headings": [0]}', "field 'stop'"),
        ("p.jsonl", GOOD.replace("0.25", "NaN"), "field 'positions': must be finite"),
        ("p.jsonl", GOOD.replace('"actions": [0]', '"actions": [0, 1]'), "field 'actions'"),
        ("p.jsonl", GOOD.replace('"actions": [0]', '"actions": [7]'), "field 'actions'"),
        ("p.jsonl", GOOD + "\n" + GOOD, "line 2: field 'episode_id': duplicate"),
        ("p.jsonl", GOOD.replace('"episode_id": 1', '"episode_id": "x"'), "field 'episode_id'"),
        (
            "p.jsonl",
            GOOD.replace('"positions": [[0.0, 0.0, 0.0], ', '"positions": [[0.0, 0.0], '),
            "field 'positions'",
        ),
        ("p.json", '{"1": []}', "episode 1: must be a non-empty list"),
        (
            "p.json",
            '{"a": [{"position": [0, 0, 0], "heading": 0, "stop": true}]}',
            "field 'episode_id'",
        ),
        ("p.json", '{"1": [{"position": [0, 0, 0], "heading": 0}]}', "pose 0: field 'stop'"),
        ("p.json", "[1, 2]", "must be an object"),
        ("p.json", "", "file is empty"),
    ],
)
def test_malformed_predictions(tmp_path: Path, name: str, text: str, expected: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(FormatError) as info:
        read_predictions(path)
    message = str(info.value)
    assert "\n" not in message and message.startswith(str(path)) and expected in message


def test_format_detected_by_content(tmp_path: Path) -> None:
    board = '{"4": [{"position": [0, 0, 0], "heading": 0, "stop": true}]}'
    (tmp_path / "board.txt").write_text(board)
    (tmp_path / "lines.txt").write_text(GOOD + "\n")
    assert read_predictions(tmp_path / "board.txt")[4].stop
    assert read_predictions(tmp_path / "lines.txt")[1].actions.tolist() == [0]


# --- tables ---------------------------------------------------------------------------------


def _record(source: str, depth: int, chain: int, success: int, category: str | None) -> dict:
    return {
        "source_dataset": source,
        "depth": depth,
        "chain": chain,
        "success": success,
        "spl": 0.5 * success,
        "bsa": float(success),
        "csr": success,
        "wrong_branch": category == "wrong_branch",
        "failure_category": category,
    }


def test_tables_with_two_runs() -> None:
    good = [_record("gibson", 1, 1, 1, None), _record("mp3d", 2, 1, 1, None)]
    bad = [_record("gibson", 1, 1, 0, "wrong_branch"), _record("gibson", 1, 2, 0, "navigation")]
    runs = {"oracle": good, "blind": bad}
    t2 = table2(runs)
    assert [g for g, _ in t2.groups] == ["gibson", "mp3d", "all", "diagnostics"]
    assert t2.groups[0][1] == ("SR", "SPL", "BSA_branch", "CSR_all", "BSA (paper)", "CSR (paper)")
    assert t2.groups[-1][1] == ("BA", "chance", "SR-any", "WB", "fault", *FAILURE_CATEGORIES)
    oracle, blind = (dict(zip(t2.columns, row.values, strict=True)) for row in t2.rows)
    assert [r.name for r in t2.rows] == ["oracle", "blind"] and t2.rows[1].n == 2
    assert oracle["gibson SR"] == 100.0 and oracle["mp3d SPL"] == 50.0
    assert blind["mp3d SR"] is None and blind["all CSR (paper)"] == 0.0
    assert blind["diagnostics WB"] == 50.0 and blind["diagnostics navigation"] == 50.0
    md = t2.to_markdown().splitlines()
    assert md[2].startswith("| Model | N | gibson SR") and md[4].startswith("| oracle | 2 | 100.0")
    # blind: 6 empty mp3d cells, BSA_branch / CSR_all of gibson and all (not in these
    # records), and 4 diagnostics (no branch or agent fields here)
    assert md[5].count("–") == 6 + 2 + 2 + 4
    rows = list(csv.reader(io.StringIO(t2.to_csv())))
    assert rows[0][:3] == ["model", "n", "gibson SR"] and len(rows) == 3
    assert rows[2][rows[0].index("mp3d SR")] == ""

    t3 = table3([("oracle", good), ("blind", bad)])
    cells = ["base d=1,ℓ=1", "depth d=2,ℓ=1", "depth d=3,ℓ=1", "chain d=1,ℓ=2", "chain d=1,ℓ=3"]
    assert [g for g, _ in t3.groups] == [
        f"{s} {c}" for s in ("gibson", "mp3d", "all") for c in cells
    ]
    assert all(
        cols == ("BSA_branch", "CSR_all", "BSA (paper)", "CSR (paper)") for _, cols in t3.groups
    )
    oracle3, blind3 = (dict(zip(t3.columns, row.values, strict=True)) for row in t3.rows)
    assert (
        oracle3["gibson base d=1,ℓ=1 CSR (paper)"] == 100.0
        and oracle3["mp3d depth d=2,ℓ=1 BSA (paper)"] == 100.0
    )
    assert (
        oracle3["gibson depth d=2,ℓ=1 BSA (paper)"] is None
        and oracle3["all depth d=2,ℓ=1 BSA (paper)"] == 100.0
    )
    assert (
        blind3["gibson chain d=1,ℓ=2 CSR (paper)"] == 0.0
        and blind3["all depth d=3,ℓ=1 BSA (paper)"] is None
    )
    # blind has no mp3d episode: empty, no crash
    assert blind3["mp3d base d=1,ℓ=1 CSR (paper)"] is None
    single = table3([("oracle", good[:1])])  # one source: the paper's unprefixed groups
    assert [g for g, _ in single.groups] == cells
    assert "100.00" in t3.to_markdown() and t3.to_rich().row_count == 2


def test_table3_legend_states_each_cells_workload() -> None:
    """Issue 26 item 4: Table 3's legend gives each depth / chain cell's mean gold-path
    targets and reference length, and the largest gaps, counting an episode once however many
    runs scored it."""
    cell = {"episode_id": 0, "depth": 1, "chain": 1, "subgoals_total": 0, "reference_path_length": 8.0}  # fmt: skip
    records = [
        cell,
        cell | {"episode_id": 1, "subgoals_total": 2, "reference_path_length": 12.0},
        cell | {"episode_id": 2, "depth": 3, "subgoals_total": 1, "reference_path_length": 11.0},
    ]
    table = table3([("a", records), ("b", records[:2])])
    line = table.to_markdown().splitlines()[-1]
    assert line == (
        "Gold-path workload per cell (mean targets / mean reference length): d=1,ℓ=1 2.00 / "
        "10.0 m, d=3,ℓ=1 2.00 / 11.0 m; largest gaps 0.00 targets and 10.0 %"
    )
    assert table.to_markdown().splitlines()[-3].startswith("BSA (paper) and CSR (paper)")
    console = Console(width=80, record=True)
    for renderable in terminal_tables(table2([("a", records)]), table):
        console.print(renderable)
    assert "largest gaps 0.00 targets and 10.0 %" in console.export_text()


def test_table3_legend_gives_each_source_its_own_workload_line() -> None:
    """Two source datasets whose episode ids coincide: one workload line each, from its own
    episodes (pooled, the ids would mix the groups and the cells would mix their lengths)."""
    cell = {"episode_id": 0, "depth": 1, "chain": 1, "subgoals_total": 0, "reference_path_length": 4.0, "source_dataset": "ithor"}  # fmt: skip
    ithor = [cell, cell | {"episode_id": 1, "depth": 2, "reference_path_length": 5.0}]
    procedural = [
        r | {"source_dataset": "procedural", "reference_path_length": 2 * r["reference_path_length"] + 2}
        for r in ithor
    ]  # fmt: skip
    lines = table3([("a", ithor + procedural)]).to_markdown().splitlines()
    assert lines[-3:] == [
        "Gold-path workload per cell (mean targets / mean reference length), ithor: d=1,ℓ=1 1.00 / 4.0 m, d=2,ℓ=1 1.00 / 5.0 m; largest gaps 0.00 targets and 25.0 %",
        "",
        "Gold-path workload per cell (mean targets / mean reference length), procedural: d=1,ℓ=1 1.00 / 10.0 m, d=2,ℓ=1 1.00 / 12.0 m; largest gaps 0.00 targets and 20.0 %",
    ]  # fmt: skip


def test_table2_splits_seen_and_unseen_phrasings() -> None:
    """Episodes worded with a held-out paraphrase get a group of their own in Table 2 (and in the
    terminal), beside those worded with seen ones; Table 3 keeps its single-source cells."""
    base = {"source_dataset": "procedural", "depth": 1, "chain": 1, "spl": 0.5, "bsa": 1.0}
    right, wrong = {"success": 1, "csr_all": 1}, {"success": 0, "csr_all": 0}
    seen = [base | right | {"phrasing_seen": True, "episode_id": i} for i in range(3)]
    unseen = [base | wrong | {"phrasing_seen": False, "episode_id": 9}]
    table = table2([("reader", seen + unseen), ("other", seen)])
    assert [g for g, _ in table.groups][:3] == ["procedural", "seen phrasing", "unseen phrasing"]
    reader, other = (dict(zip(table.columns, row.values, strict=True)) for row in table.rows)
    assert reader["procedural SR"] == 75.0 and reader["seen phrasing SR"] == 100.0
    assert reader["unseen phrasing SR"] == 0.0 and other["unseen phrasing SR"] is None
    assert [g for g, _ in table2([("other", seen)]).groups] == ["procedural", "diagnostics"]
    console = Console(width=80, record=True)
    for renderable in terminal_tables(table, table3([("reader", seen + unseen)])):
        console.print(renderable)
    text = console.export_text()
    assert "Table 2 by phrasing" in text and "SR new" in text and "d1 ℓ1" in text
    assert max(map(len, text.splitlines())) <= 80 and "…" not in text
    assert "75.0" in text.split("Table 3")[1]  # the single-source cells are filled
