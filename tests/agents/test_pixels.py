"""The pixel-perception agent: detections from depth + semantic pixels, noise, full runs."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import orjson
import pytest
from typer.testing import CliRunner

from condvln.agents.pixels import PIXEL_PROTOCOL, PixelNoise, pixel_detections
from condvln.agents.run import run_agent
from condvln.cli import app
from condvln.scene.model import Room, Scene, SceneObject
from condvln.sim import Simulator

# objects on the floor of an 8 × 8 m room, all ahead of a camera at (4, 0, 7.5) facing −Z,
# lower than the camera, inside 5 m and the 90° view, none hiding another
OBJECTS = (
    ("sofa_1", "sofa", (2.6, 0.4, 3.6), (1.6, 0.8, 0.8)),
    ("table_1", "coffee table", (4.5, 0.25, 5.2), (0.9, 0.5, 0.6)),
    ("lamp_1", "floor lamp", (5.9, 0.7, 4.0), (0.4, 1.4, 0.4)),
    ("chair_1", "chair", (3.4, 0.45, 6.0), (0.5, 0.9, 0.5)),
)
START = (4.0, 0.0, 7.5)


def _scene() -> Scene:
    objects = tuple(
        SceneObject(id=oid, category=cat, label=cat, center=c, size=s) for oid, cat, c, s in OBJECTS
    )
    room = Room(
        id="r",
        room_type="living room",
        label="LivingRoom",
        objects=objects,
        floor_polygon=((0, 0), (8, 0), (8, 8), (0, 8)),
    )
    return Scene(id="clear", source="test", rooms=(room,))


@pytest.fixture(scope="module")
def frame() -> tuple[Simulator, object]:
    sim = Simulator(_scene(), {"sensors": ["depth", "semantic"]})
    obs = sim.reset(START, 0.0, instruction="Look.", step_budget=5)
    return sim, obs


def _detect(sim: Simulator, obs: object, noise: PixelNoise | None = None, seed: int = 0) -> list:
    return pixel_detections(
        obs.images["depth"],  # type: ignore[attr-defined]
        obs.images["semantic"],  # type: ignore[attr-defined]
        sim.protocol.depth,
        obs.position,  # type: ignore[attr-defined]
        obs.heading,  # type: ignore[attr-defined]
        sim.semantic_table(),
        noise,
        np.random.default_rng(seed),
    )


def test_pixel_detections_agree_with_the_symbolic_ones(frame: tuple[Simulator, object]) -> None:
    sim, obs = frame
    symbolic = {d.category: d for d in obs.detections}  # type: ignore[attr-defined]
    assert set(symbolic) == {cat for _, cat, _, _ in OBJECTS}
    pixels = {d.category: d for d in _detect(sim, obs)}
    assert set(pixels) == set(symbolic)
    table = sim.semantic_table()
    for oid, category, centre, size in OBJECTS:
        det, truth = pixels[category], symbolic[category]
        assert table.object_ids[det.semantic_id] == oid
        # the camera sees the top and the front: the top and the x extent are exact, the centre
        # lies on the visible half of the box
        assert det.hi[1] == pytest.approx(centre[1] + size[1] / 2, abs=0.01)
        assert det.lo[0] == pytest.approx(centre[0] - size[0] / 2, abs=0.05)
        assert det.hi[0] == pytest.approx(centre[0] + size[0] / 2, abs=0.05)
        x, _, z = det.center
        assert math.hypot(x - truth.position[0], z - truth.position[2]) <= size[2] / 2 + 0.02
        assert det.pixels > 100


def test_pixel_noise_misses_confuses_and_is_seeded(frame: tuple[Simulator, object]) -> None:
    sim, obs = frame
    clean = {d.category: d for d in _detect(sim, obs)}
    eroded = {d.category: d for d in _detect(sim, obs, PixelNoise(erosion=2))}
    assert all(eroded[c].pixels < clean[c].pixels for c in clean)
    smallest = min(clean.values(), key=lambda d: d.pixels)
    missed = _detect(sim, obs, PixelNoise(min_pixels=smallest.pixels + 1))
    assert smallest.category not in {d.category for d in missed} and len(missed) >= 1
    confused = _detect(sim, obs, PixelNoise(confusion_rate=1.0))
    assert all(d.category != sim.semantic_table().categories[d.semantic_id] for d in confused)
    noisy = PixelNoise(depth_noise=0.05)
    a, b = _detect(sim, obs, noisy, seed=3), _detect(sim, obs, noisy, seed=3)
    assert a == b != _detect(sim, obs, noisy, seed=4)


@pytest.mark.slow
def test_pixel_agent_runs_without_symbolic_detections(dataset: Path, tmp_path: Path) -> None:
    # without the sensors the episode fails as an agent error naming what is missing
    bad = tmp_path / "bad"
    run_agent("neurosymbolic_pixels", dataset, "train", bad, limit=1)
    (failed,) = [
        orjson.loads(line) for line in (bad / "trajectories.jsonl").read_bytes().splitlines()
    ]
    assert failed["status"] == "agent_error"
    assert "needs the 'depth' and 'semantic' sensors" in failed["reason"]
    out = tmp_path / "px"
    # the README's command line
    result = CliRunner().invoke(
        app,
        ["run", "--agent", "neurosymbolic_pixels", "--dataset", str(dataset), "--split", "train",
         "--out", str(out), "--sensor", "depth", "--sensor", "semantic", "--no-detections",
         "--limit", "3", "--workers", "1", "--quiet"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    manifest = orjson.loads((out / "manifest.json").read_bytes())
    assert manifest["protocol"]["sensors"] == list(PIXEL_PROTOCOL["sensors"])
    assert manifest["protocol"]["detections"] is False
    assert manifest["protocol"]["depth"]["width"] == 256
    lines = (out / "trajectories.jsonl").read_bytes().splitlines()
    records = [orjson.loads(line) for line in lines]
    assert len(records) == 3 and all(r["stop"] for r in records)
    # the agent moved: it explored and navigated from pixels alone
    assert all(len({tuple(p) for p in r["positions"]}) > 5 for r in records)
