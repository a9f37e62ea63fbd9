"""`condvln benchmark` end to end on a tiny dataset: runs, evaluations, tables, reuse."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from condvln.benchmark import RunSpec, run_benchmark
from condvln.dataset.generate import GenerateConfig
from condvln.errors import ConfigError

TINY = GenerateConfig(scenes=8, per_scene=30, unseen_share=0.5, seed=1)
RUNS = (RunSpec("random", "random"), RunSpec("oracle_linear", "oracle_linear"))


def test_benchmark_writes_tables_and_reuses_its_dataset(tmp_path: Path) -> None:
    out = tmp_path / "bench"
    outcome = run_benchmark(out, config=TINY, runs=RUNS, workers=1)
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
    assert (out / "runs" / "random" / "trajectories.jsonl").is_file()
    stamp = (out / "dataset" / "stats.json").stat().st_mtime_ns
    run_benchmark(out, config=TINY, runs=RUNS[:1], workers=1)  # resumes: dataset reused
    assert (out / "dataset" / "stats.json").stat().st_mtime_ns == stamp
    with pytest.raises(ConfigError, match="another configuration"):
        run_benchmark(out, config=GenerateConfig(scenes=3, per_scene=10), runs=RUNS, workers=1)
