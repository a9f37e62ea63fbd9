"""`condvln viz`: the per-episode map, its labels and its agreement with `condvln evaluate`."""

from __future__ import annotations

import io
import re
import shutil
import subprocess
from pathlib import Path
from xml.etree import ElementTree

import matplotlib.pyplot as plt
import numpy as np
import orjson
import pytest
from matplotlib.text import Text
from matplotlib.transforms import Bbox
from PIL import Image

from condvln.errors import FormatError
from condvln.program.ast import Exists, Go, If, Program, Ref, iter_ifs, leaf_paths
from condvln.report.labels import Label, place_labels
from condvln.report.viz import (
    FigureOptions,
    condition_text,
    crop_box,
    episode_plot,
    leaf_outcomes,
    load_episode,
    map_extent,
    scene_file,
)


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


@pytest.mark.slow
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


@pytest.mark.slow
def test_viz_errors_are_one_line(cli, bench: Path, tmp_path: Path) -> None:
    run = str(bench / "runs" / "random")
    result = cli("viz", run, "--episode", "99999", "--out", str(tmp_path / "x.png"))
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "episode 99999" in result.stderr
    assert not (tmp_path / "x.png").exists()
    result = cli("viz", str(tmp_path), "--episode", "1", "--out", str(tmp_path / "x.png"))
    assert result.returncode == 2 and "manifest.json" in result.stderr
    assert "Traceback" not in result.stderr


# --- formats, sizes, crops and labels (issue 30) -------------------------------------------------


def _episode(bench: Path) -> int:
    records = _records(bench, "condition_blind")
    return next(r for r in records if r["subgoals_total"] and r["n_branches"] > 2)["episode_id"]


@pytest.mark.slow
def test_viz_writes_the_format_its_suffix_names(cli, bench: Path, tmp_path: Path) -> None:
    run, episode = str(bench / "runs" / "condition_blind"), str(_episode(bench))
    sized = ("--size", "8x6", "--dpi", "50")
    for suffix in ("png", "pdf", "svg"):
        result = cli("viz", run, "-e", episode, "--out", str(tmp_path / f"ep.{suffix}"), *sized)
        assert result.returncode == 0, result.stderr
    image = Image.open(tmp_path / "ep.png")
    assert (image.format, image.size) == ("PNG", (400, 300))  # 8 × 6 inches at 50 dpi
    pdf = (tmp_path / "ep.pdf").read_bytes()
    assert pdf.startswith(b"%PDF-") and b"/MediaBox [ 0 0 576 432 ]" in pdf  # 8 × 6 in in pt
    if shutil.which("pdfinfo"):  # poppler's own reader
        info = subprocess.run(["pdfinfo", str(tmp_path / "ep.pdf")], capture_output=True, text=True)
        assert (
            "Page size:       576 x 432 pts" in info.stdout and "Pages:           1" in info.stdout
        )
    svg = ElementTree.parse(tmp_path / "ep.svg").getroot()
    assert svg.tag == "{http://www.w3.org/2000/svg}svg" and svg.get("width") == "576pt"
    refused = cli("viz", run, "-e", episode, "--out", str(tmp_path / "ep.jpg"))
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1
    assert "unknown image format '.jpg' (use .png, .pdf or .svg)" in refused.stderr
    assert not (tmp_path / "ep.jpg").exists()


def _boxes(fig, ax) -> list:
    renderer = fig.canvas.get_renderer()
    boxes = []
    for text in ax.texts:
        if not text.get_visible() or not text.get_text():
            continue
        text.get_window_extent(renderer)  # places an annotation's text
        box = Text.get_window_extent(text, renderer)  # the label, not its leader line
        patch = text.get_bbox_patch()
        if patch is not None:  # the frame as last drawn here (savefig drew it at the PDF's dpi)
            text.update_bbox_position_size(renderer)
            box = Bbox.union([box, patch.get_window_extent(renderer)])
        boxes.append((text.get_text(), box))
    return boxes


@pytest.mark.slow
@pytest.mark.parametrize("crop", ["scene", "room"])
def test_map_labels_never_overlap_in_the_saved_figure(bench: Path, crop: str) -> None:
    records = _records(bench, "condition_blind")
    shown = 0
    for record in records[:4]:
        navigator, figure, path = load_episode(bench / "runs" / "condition_blind",
                                               record["episode_id"])  # fmt: skip
        fig, placed = episode_plot(navigator.scene, navigator, figure, path,
                                   FigureOptions(crop=crop))  # fmt: skip
        try:
            fig.savefig(io.BytesIO(), format="pdf")
            ax = fig.axes[0]
            boxes = _boxes(fig, ax)
            texts = [t for t, _ in boxes]
            assert all(b.label(i) in texts for i, b in enumerate(figure.branches))
            assert sum(t.startswith("S") and t.endswith(("reached", "missed")) for t in texts) == (
                len(figure.subgoals)
            )
            for i, (a, box_a) in enumerate(boxes):
                for b, box_b in boxes[i + 1 :]:
                    assert not box_a.overlaps(box_b), (a, b)
            inside = ax.get_window_extent(fig.canvas.get_renderer())
            assert all(
                inside.contains(b.x0, b.y0) and inside.contains(b.x1, b.y1) for _, b in boxes
            )
            shown += len(placed.drawn)
            if crop == "room":  # the view is the rooms the episode touches
                assert ax.get_xlim() == pytest.approx(crop_box(navigator.scene, figure, path)[:2])
        finally:
            plt.close(fig)
    assert shown > 20  # room and object names are placed, not all dropped


@pytest.mark.slow
def test_room_crop_is_smaller_than_the_house_for_some_episode(bench: Path) -> None:
    cropped = []
    for record in _records(bench, "condition_blind")[:40]:
        navigator, figure, path = load_episode(bench / "runs" / "condition_blind",
                                               record["episode_id"])  # fmt: skip
        x0, x1, z0, z1 = crop_box(navigator.scene, figure, path)
        _, _, width, depth = map_extent(navigator)
        cropped.append((x1 - x0) * (z1 - z0) < width * depth)
    assert any(cropped)  # some episode keeps to a few rooms


@pytest.mark.slow
def test_no_labels_keeps_only_goal_and_subgoal_labels(bench: Path) -> None:
    navigator, figure, path = load_episode(bench / "runs" / "condition_blind", _episode(bench))
    fig, placed = episode_plot(
        navigator.scene, navigator, figure, path, FigureOptions(labels=False)
    )
    plt.close(fig)
    assert len(placed.drawn) == len(figure.branches) + len(figure.subgoals)
    fig, placed = episode_plot(navigator.scene, navigator, figure, path)
    plt.close(fig)
    assert len(placed.drawn) > len(figure.branches) + len(figure.subgoals)


def test_label_placement_leaves_out_what_does_not_fit() -> None:
    fig, ax = plt.subplots(figsize=(2, 2), dpi=100)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    fig.canvas.draw()
    labels = [Label(f"object number {i}", (0.5, 0.5), "object", on_point=True) for i in range(40)]
    placed = place_labels(ax, labels, fig.canvas.get_renderer())
    plt.close(fig)
    assert 0 < len(placed.drawn) < 40 and placed.left_out["object"] == 40 - len(placed.drawn)
