"""`condvln viz`: the per-episode map, its labels and its agreement with `condvln evaluate`."""

from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np
import orjson
import pytest
from PIL import Image

from condvln.errors import FormatError
from condvln.program.ast import Exists, Go, If, Program, Ref, iter_ifs, leaf_paths
from condvln.report.viz import condition_text, leaf_outcomes, scene_file


def _records(bench: Path, run: str) -> list[dict]:
    lines = (bench / "eval" / run / "episodes.jsonl").read_bytes().splitlines()
    return [orjson.loads(line) for line in lines]


def test_leaf_outcomes_follow_leaf_paths_with_condition_indices() -> None:
    x, y, z, w = (Go(Ref(c)) for c in ("sofa", "bed", "sink", "desk"))
    a, b, c = (Exists(k, "kitchen") for k in ("stool", "kettle", "toaster"))
    program = Program((Go(Ref("tv")), If(a, (If(b, (x,), (y,)),), (If(c, (z,), (w,)),))))
    index = {id(node): i for i, node in enumerate(iter_ifs(program.steps))}
    outcomes = leaf_outcomes(program.steps, index)
    assert outcomes == [
        ((0, True), (1, True)),
        ((0, True), (1, False)),
        ((0, False), (2, True)),
        ((0, False), (2, False)),
    ]
    assert [tuple(o for _, o in path) for path in outcomes] == [
        b for b, _ in leaf_paths(program.steps)
    ]
    assert condition_text(b) == "there is a kettle in the kitchen"


def test_scene_paths_cannot_leave_the_dataset(tmp_path: Path) -> None:
    assert scene_file(tmp_path, "scenes/a.json") == (tmp_path / "scenes" / "a.json").resolve()
    with pytest.raises(FormatError, match="leaves the dataset folder"):
        scene_file(tmp_path, "../../etc/passwd")


def test_viz_draws_the_episode_and_agrees_with_the_evaluator(
    cli, bench: Path, tmp_path: Path
) -> None:
    records = _records(bench, "condition_blind")
    record = next(r for r in records if r["subgoals_total"] and r["n_branches"] > 2)
    out = tmp_path / "ep.png"
    result = cli("viz", str(bench / "runs" / "condition_blind"), "--episode",
                 str(record["episode_id"]), "--out", str(out))  # fmt: skip
    assert result.returncode == 0, result.stderr
    image = Image.open(io.BytesIO(out.read_bytes()))
    image.load()
    assert image.width > 600 and image.height > 600
    pixels = np.asarray(image.convert("RGB"), dtype=np.float64)
    assert pixels.std() > 20 and len(np.unique(pixels.reshape(-1, 3), axis=0)) > 200
    text = " ".join(result.stdout.split())
    reached = re.search(r"subgoals reached (\d+)/(\d+)", text)
    assert reached and int(reached[1]) == record["subgoals_reached"]
    assert int(reached[2]) == record["subgoals_total"]
    assert f"Gold branch B{record['gold_branch'] + 1}" in text
    assert f"ended nearest B{record['branch_commitment'] + 1}," in text
    assert ("success" in text) == bool(record["success"])


def test_viz_errors_are_one_line(cli, bench: Path, tmp_path: Path) -> None:
    run = str(bench / "runs" / "random")
    result = cli("viz", run, "--episode", "99999", "--out", str(tmp_path / "x.png"))
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "episode 99999" in result.stderr
    assert not (tmp_path / "x.png").exists()
    result = cli("viz", str(tmp_path), "--episode", "1", "--out", str(tmp_path / "x.png"))
    assert result.returncode == 2 and "manifest.json" in result.stderr
    assert "Traceback" not in result.stderr
