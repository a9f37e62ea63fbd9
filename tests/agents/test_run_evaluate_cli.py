"""`condvln run` / `evaluate` from the command line: manifests record how they were made
(command line, versions, commit); the evaluation summary fits an 80-column terminal."""

from __future__ import annotations

from pathlib import Path

import orjson
import scipy


def test_run_and_evaluate_manifests_carry_provenance(dataset: Path, tmp_path: Path, cli) -> None:
    run = tmp_path / "run"
    args = ("run", "--agent", "random", "--dataset", str(dataset), "--out", str(run))
    result = cli(*args, "--split", "train", "--limit", "2", "-j", "1", "-q")
    assert result.returncode == 0, result.stderr
    made = orjson.loads((run / "manifest.json").read_bytes())["provenance"]
    assert made["command_line"].startswith(f"condvln run --agent random --dataset {dataset} ")
    assert made["command_line"].endswith("--split train --limit 2 -j 1 -q")
    assert made["versions"]["scipy"] == scipy.__version__
    assert set(made["versions"]) == {"condvln", "python", "numpy", "numba", "scipy"}
    out = tmp_path / "eval"
    trajectories = str(run / "trajectories.jsonl")
    # ids 1 and 2 exist in every split of the fixture, so the split must be named
    result = cli(
        "evaluate",
        str(dataset),
        trajectories,
        "--split",
        "train",
        "--out",
        str(out),
        columns=80,
        terminal=True,
    )
    assert result.returncode == 0, result.stderr
    assert max(map(len, result.stdout.splitlines())) <= 80 and "…" not in result.stdout
    assert (
        "Table 2: main results (%)" in result.stdout
        and "Table 3: CSR (paper) by depth d and chain ℓ" in result.stdout
    )
    assert "| random |" in (out / "table2.md").read_text()  # named after the run's agent
    scored = orjson.loads((out / "manifest.json").read_bytes())["provenance"]
    assert scored["command_line"] == (
        f"condvln evaluate {dataset} {trajectories} --split train --out {out}"
    )
    assert scored["git"] == made["git"]  # same checkout (or None for both)
