"""The leakage grid's pooled reading: each probe over the seeds of one size."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_leakage_grid.py"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_leakage_grid", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _cell(accuracy: float, chance: float, n: int) -> dict:
    line = {"n": n, "accuracy": accuracy, "chance": chance, "diff": accuracy - chance}
    branch = {p: {"all": dict(line)} for p in _bench().PROBES}
    return {"report": {"branch": branch}}


def test_seeds_of_a_size_pool_into_one_line_per_probe() -> None:
    bench = _bench()
    results = {
        "procedural 40x30 seed 1": _cell(40.0, 30.0, 300),  # +10 pp
        "procedural 40x30 seed 2": _cell(30.0, 40.0, 100),  # -10 pp
        "procedural 80x50 seed 1": _cell(34.0, 33.0, 20),  # under the audit's minimum count
        "benchmark data": _cell(50.0, 30.0, 1000),  # no family
    }
    lines = [line for line in bench.pooled(results) if line.split()[4] == "text_prior"]
    assert len(lines) == 1
    words = lines[0].split()
    assert words[:3] == ["procedural", "40x30", "(2"]
    accuracy, chance = (40 * 300 + 30 * 100) / 400, (30 * 300 + 40 * 100) / 400
    se = 100 * math.sqrt(300 * 0.3 * 0.7 + 100 * 0.4 * 0.6) / 400
    assert [float(w) for w in words[5:8]] == [round(accuracy, 1), round(chance, 1), 5.0]
    assert float(words[9]) == round(se, 2) and float(words[11]) == round(5.0 / se, 2)
    assert words[-2:] == ["400", "FAIL"]
