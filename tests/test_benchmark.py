"""`condvln benchmark` end to end on a tiny dataset: runs, evaluations, tables, reuse."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from condvln.benchmark import ITHOR_ROOMS, RunSpec, _write_reports, run_benchmark
from condvln.dataset.generate import GenerateConfig
from condvln.errors import ConfigError
from condvln.scene.sources.ithor import ithor_scene_names
from condvln.vlnce import load_split

pytestmark = pytest.mark.slow

TINY = GenerateConfig(scenes=8, per_scene=30, unseen_share=0.5, seed=1)
RUNS = (RunSpec("random", "random"), RunSpec("oracle_linear", "oracle_linear"))


def test_benchmark_writes_tables_and_reuses_its_dataset(tmp_path: Path) -> None:
    out = tmp_path / "bench"
    outcome = run_benchmark(out, config=TINY, ithor=None, runs=RUNS, workers=1)
    for name in ("table2.md", "table2.csv", "table3.md", "table3.csv", "results.json"):
        assert (out / name).is_file(), name
    results = orjson.loads((out / "results.json").read_bytes())
    assert set(results["runs"]) == {"random", "oracle_linear"}
    assert results["provenance"]["versions"]["condvln"] == results["condvln_version"]
    assert set(results["provenance"]) == {"command_line", "versions", "git"}
    oracle, random = (results["runs"][k]["metrics"] for k in ("oracle_linear", "random"))
    assert oracle["success"] > random["success"]
    assert oracle["csr"] > random["csr"]
    assert [row.name for row in outcome["tables"]["table2"].rows] == ["random", "oracle_linear"]
    fidelity = results["runs"]["random"]["fidelity"]
    assert fidelity["ndtw_threshold"] == 3.0 and fidelity["episodes_densified"] == 0
    assert (
        "nDTW / SDTW / CLS: d_th = 3.0 m; reference = _gt locations"
        in (out / "table2.md").read_text()
    )
    assert (out / "runs" / "random" / "trajectories.jsonl").is_file()
    stamp = (out / "dataset" / "stats.json").stat().st_mtime_ns
    run_benchmark(out, config=TINY, ithor=None, runs=RUNS[:1], workers=1)  # resumes: dataset reused
    assert (out / "dataset" / "stats.json").stat().st_mtime_ns == stamp
    with pytest.raises(ConfigError, match="another configuration"):
        run_benchmark(
            out, config=GenerateConfig(scenes=3, per_scene=10), ithor=None, runs=RUNS, workers=1
        )


def test_pixel_rows_join_with_full_or_pixels_only() -> None:
    from condvln.agents.loader import AGENTS
    from condvln.benchmark import PIXEL_RUNS, PIXELS, RUNS
    from condvln.sim.protocol import parse_protocol

    assert not {r.agent for r in RUNS} & {r.agent for r in PIXEL_RUNS}
    assert {r.agent for r in PIXEL_RUNS} <= set(AGENTS.names())
    protocol = parse_protocol(PIXELS)
    assert protocol.sensors == ("depth", "semantic") and not protocol.detections


ITHOR_TINY = GenerateConfig(
    source="ithor", inputs=ITHOR_ROOMS, scenes=12, per_scene=20, unseen_share=0.5
)
"""Twelve iTHOR rooms (three of each room type), read from the procthor package's metadata."""


def _records(path: Path) -> list[dict]:
    return [orjson.loads(line) for line in path.read_text().splitlines()]


def test_benchmark_reports_the_ithor_group_per_source(tmp_path: Path) -> None:
    out = tmp_path / "bench"
    outcome = run_benchmark(out, config=TINY, ithor=ITHOR_TINY, runs=RUNS, workers=1)
    # the iTHOR group is a benchmark folder of its own, its episodes carry the 0.5 m radius
    episodes = load_split(out / "ithor" / "dataset", "val_unseen")["episodes"]
    assert episodes and {e["info"]["condvln"]["source_dataset"] for e in episodes} == {"ithor"}
    assert {g["radius"] for e in episodes for g in e["goals"]} == {0.5}
    assert all(s["radius"] == 0.5 for e in episodes for s in e["info"]["condvln"]["subgoals"])
    for name in ("results.json", "report.html", "eval/oracle_linear/metrics.json"):
        assert (out / "ithor" / name).is_file(), name
    # with two workers the two groups' reports are written at once, the same bytes
    folders = [out / "ithor", out]
    serial = [(f / "report.html").read_bytes() for f in folders]
    bars: list[tuple[str, int]] = []
    advanced: list[str] = []

    def progress(label: str, total: int) -> Callable[[], None]:
        bars.append((label, total))
        return lambda: advanced.append(label)

    _write_reports(folders, 2, progress)
    assert [(f / "report.html").read_bytes() for f in folders] == serial
    assert bars == [("reports", 2)] and advanced == ["reports"] * 2
    results = orjson.loads((out / "results.json").read_bytes())
    assert results["groups"]["procedural"] == {
        "folder": ".",
        "source": "procedural",
        "dataset_config_hash": TINY.config_hash(),
        "success_radius_m": [1.0],
    }
    assert results["groups"]["ithor"]["success_radius_m"] == [0.5]
    assert set(results["groups"]["ithor"]["runs"]) == {"random", "oracle_linear"}

    # scored with the episodes' own radius: success = stopped strictly within 0.5 m
    ithor = {
        r: _records(out / "ithor" / "eval" / r / "episodes.jsonl")
        for r in ("random", "oracle_linear")
    }
    procedural = {r: _records(out / "eval" / r / "episodes.jsonl") for r in ithor}
    for rec in ithor["oracle_linear"] + ithor["random"]:
        assert rec["success"] == int(rec["stop_called"] and rec["distance_to_goal"] < 0.5)

    # Table 2: a column group per source, then all episodes, each cell the mean of its group
    t2 = outcome["tables"]["table2"]
    groups = ["ithor", "procedural", "all", "seen phrasing", "unseen phrasing", "diagnostics"]
    assert [g for g, _ in t2.groups] == groups
    for row in t2.rows:
        values = dict(zip(t2.columns, row.values, strict=True))
        mine, theirs = ithor[row.name], procedural[row.name]
        assert row.n == len(mine) + len(theirs)
        assert values["ithor SR"] == pytest.approx(
            100 * sum(r["success"] for r in mine) / len(mine)
        )
        assert values["procedural SPL"] == pytest.approx(
            100 * sum(r["spl"] for r in theirs) / len(theirs)
        )
        pooled = mine + theirs
        assert values["all SR"] == pytest.approx(
            100 * sum(r["success"] for r in pooled) / len(pooled)
        )
        unseen = [r for r in pooled if r["phrasing_seen"] is False]  # held-out paraphrases
        assert unseen and values["unseen phrasing SR"] == pytest.approx(
            100 * sum(r["success"] for r in unseen) / len(unseen)
        )
    oracle = dict(zip(t2.columns, t2.rows[1].values, strict=True))
    assert oracle["ithor SR"] > 0.0
    md = (out / "table2.md").read_text()
    assert "| Model | N | ithor SR |" in md and "success radius: procedural 1 m, ithor 0.5 m" in md

    # Table 3 per source; a cell without episodes is empty, not an error
    t3 = outcome["tables"]["table3"]
    assert [g for g, _ in t3.groups][:5] == [
        "ithor base d=1,ℓ=1",
        "ithor depth d=2,ℓ=1",
        "ithor depth d=3,ℓ=1",
        "ithor chain d=1,ℓ=2",
        "ithor chain d=1,ℓ=3",
    ]
    values = dict(zip(t3.columns, t3.rows[0].values, strict=True))
    cell = [r["csr"] for r in ithor["random"] if (r["depth"], r["chain"]) == (1, 3)]
    scored = [c for c in cell if c is not None]  # the paper's CSR leaves some episodes out
    expected = None if not scored else pytest.approx(100 * sum(scored) / len(scored))
    assert values["ithor chain d=1,ℓ=3 CSR (paper)"] == expected

    # coverage: a single room has no cross-room condition; counts match the records
    coverage = {row.name: row for row in outcome["tables"]["coverage"].rows}
    columns = outcome["tables"]["coverage"].columns
    got = dict(zip(columns, coverage["ithor"].values, strict=True))
    assert coverage["ithor"].n == len(ithor["random"]) and got["composition cross_room"] is None
    for category in {r["category"] for r in ithor["random"]}:
        expected = sum(r["category"] == category for r in ithor["random"])
        assert got[f"category {category}"] == expected
    assert (out / "coverage.md").read_text().count("\n| ") == 3  # header + two sources


def test_the_default_groups_cover_all_120_ithor_rooms() -> None:
    from condvln.benchmark import ITHOR_FULL, ITHOR_SMALL

    assert len(set(ITHOR_ROOMS)) == 120 and set(ITHOR_ROOMS) == set(ithor_scene_names())
    assert ITHOR_ROOMS[:4] == ("FloorPlan1", "FloorPlan201", "FloorPlan301", "FloorPlan401")
    for config in (ITHOR_SMALL, ITHOR_FULL):
        assert config.source == "ithor" and config.scenes == 120
        assert config.single_room_radius == 0.5
    with pytest.raises(ConfigError, match="already an iTHOR"):
        run_benchmark("unused", config=ITHOR_TINY, runs=RUNS)


def test_benchmark_settings_configure_the_ithor_group() -> None:
    from condvln.benchmark import ITHOR_SMALL
    from condvln.config import BenchmarkSettings, resolve

    assert resolve(BenchmarkSettings).ithor == ITHOR_SMALL
    assert resolve(BenchmarkSettings, overrides=["ithor=null"]).ithor is None
    smaller = resolve(BenchmarkSettings, overrides=["ithor.scenes=12", "ithor.per_scene=5"]).ithor
    assert (smaller.scenes, smaller.per_scene, smaller.inputs) == (12, 5, ITHOR_ROOMS)


def test_pixel_rows_run_beside_the_symbolic_row(tmp_path: Path) -> None:
    """The two pixel-perception rows run end to end and land in Table 2 beside the symbolic one."""
    from condvln.benchmark import PIXEL_RUNS

    symbolic = RunSpec("neurosymbolic", "neurosymbolic")
    config = GenerateConfig(scenes=3, per_scene=10, unseen_share=0.5, seed=1)
    outcome = run_benchmark(
        tmp_path / "bench", config=config, ithor=None, runs=(symbolic, *PIXEL_RUNS), workers=1
    )
    table = outcome["tables"]["table2"]
    names = [row.name for row in table.rows]
    assert names == ["neurosymbolic", "neurosymbolic_pixels", "neurosymbolic_pixels+noise"]
    episodes = load_split(tmp_path / "bench" / "dataset", "val_unseen")["episodes"]
    assert all(row.n == len(episodes) > 0 for row in table.rows)
    for name in names:
        records = outcome["records"][name]
        assert len(records) == len(episodes) > 0
        assert {r["episode_id"] for r in records} == {e["episode_id"] for e in episodes}
