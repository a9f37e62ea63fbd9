"""Episode videos: ``condvln run --record N`` writes one readable MP4 / GIF per episode."""

from __future__ import annotations

from pathlib import Path

import imageio.v3 as iio
import imageio_ffmpeg
import orjson
import pytest
from PIL import Image
from typer.testing import CliRunner

from condvln.agents.run import run_agent
from condvln.cli import app
from condvln.sim.video import BLOCK, FPS


def _records(run: Path) -> dict[str, dict]:
    lines = (run / "trajectories.jsonl").read_bytes().splitlines()
    return {str(r["episode_id"]): r for r in map(orjson.loads, lines)}


@pytest.mark.slow
def test_record_writes_one_mp4_per_episode(dataset: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = CliRunner().invoke(
        app,
        ["run", "--agent", "neurosymbolic", "--dataset", str(dataset), "--split", "train",
         "--out", str(out), "--limit", "3", "--record", "2", "--workers", "1", "--quiet"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    videos = sorted((out / "videos").iterdir())
    records = _records(out)
    first_two = list(records)[:2]
    assert [v.name for v in videos] == sorted(f"episode_{i}.mp4" for i in first_two)
    for video in videos:
        record = records[video.stem.removeprefix("episode_")]
        # ffmpeg itself counts the frames: one per recorded pose
        frames, _ = imageio_ffmpeg.count_frames_and_secs(str(video))
        assert frames == len(record["positions"])
        frame = iio.imread(video, index=0, plugin="FFMPEG")
        assert frame.shape[0] % BLOCK == 0 and frame.shape[1] > 224 + frame.shape[0] // 4


def test_gif_videos(dataset: Path, tmp_path: Path) -> None:
    run_agent("random", dataset, "train", tmp_path, limit=1, videos=1, video_format="gif")
    (record,) = _records(tmp_path).values()
    gif = tmp_path / "videos" / f"episode_{record['episode_id']}.gif"
    with Image.open(gif) as image:
        # Pillow merges repeated frames (the agent stood still) into longer ones
        durations = []
        for index in range(image.n_frames):
            image.seek(index)
            durations.append(image.info["duration"])
    assert sum(durations) == len(record["positions"]) * 1000 // FPS


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("--record", "1", "--record-format", "avi"), "video format must be 'mp4' or 'gif'"),
        (
            ("--sensor", "lidar"),
            "protocol.sensors=[\"lidar\"]: Input should be 'rgb', 'depth' or 'semantic'",
        ),
    ],
)
def test_bad_video_and_sensor_options(
    cli, dataset: Path, tmp_path: Path, args: tuple[str, ...], needle: str
) -> None:
    out = tmp_path / "x"
    result = cli("run", "--agent", "random", "--dataset", str(dataset), "--out", str(out), *args)
    assert result.returncode == 2 and needle in result.stderr
    assert "Traceback" not in result.stderr and not out.exists()
