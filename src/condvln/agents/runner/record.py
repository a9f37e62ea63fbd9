"""Recording a run: one flushed line per finished episode, then the sorted files and videos.

``trajectories.jsonl`` gets each record the moment its episode ends (:func:`append_records`);
at the end of the run it is rewritten sorted by episode id — the last record of an episode wins
— next to the VLN-CE leaderboard ``predictions.json`` (:func:`finalise`), so the files are
byte-identical for any worker count and batch size. Videos are re-rendered afterwards from the
recorded poses (:func:`record_videos`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from condvln.agents.runner.episodes import EpisodeSpec, id_key
from condvln.agents.runner.options import Progress, check_video_format
from condvln.agents.runner.resume import PREDICTIONS, TRAJECTORIES, read_trajectories
from condvln.errors import ConfigError
from condvln.io import atomic_write_bytes, dumps_json
from condvln.scene.serialize import load_scene
from condvln.sim.protocol import ObservationProtocol


@dataclass
class Tally:
    """What the episodes recorded so far did.

    Attributes:
        done: Episodes finished (the skipped ones of a resume included).
        stopped: Episodes run now that ended with STOP.
        steps: Actions taken in the episodes run now.
        failures: Episodes run now that the agent failed, by status.
        first_failure: ``"episode ID: status: reason"`` of the first of them, if any.
    """

    done: int = 0
    stopped: int = 0
    steps: int = 0
    failures: Counter[str] = field(default_factory=Counter)
    first_failure: str | None = None

    def add(self, record: dict[str, Any]) -> str | None:
        """Count one record; returns its failure line when the agent failed it."""
        self.done += 1
        self.stopped += int(record["stop"])
        self.steps += record["steps"]
        if record["status"] == "ok":
            return None
        self.failures[record["status"]] += 1
        failure = f"episode {record['episode_id']}: {record['status']}: {record['reason']}"
        self.first_failure = self.first_failure or failure
        return failure


def append_records(
    path: Path,
    records: Generator[dict[str, Any], None, None],
    tally: Tally,
    *,
    fail_fast: bool = False,
    on_record: Callable[[], None] | None = None,
) -> None:
    """Append each record to ``path`` as one flushed line the moment it arrives.

    Raises:
        ConfigError: (``fail_fast``) the first failed episode; the finished ones are kept.
    """
    with path.open("ab") as fh:
        for record in records:
            fh.write(orjson.dumps(record) + b"\n")
            fh.flush()
            failure = tally.add(record)
            if failure is not None and fail_fast:
                records.close()
                raise ConfigError(f"{failure} (--fail-fast; the finished episodes are kept)")
            if on_record is not None:
                on_record()


def predictions(records: Iterable[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """VLN-CE leaderboard predictions of trajectory records (STOP marked on the last entry)."""
    out = {}
    for rec in records:
        last = len(rec["positions"]) - 1
        out[str(rec["episode_id"])] = [
            {"position": p, "heading": h, "stop": bool(rec["stop"]) and i == last}
            for i, (p, h) in enumerate(zip(rec["positions"], rec["headings"], strict=True))
        ]
    return out


def finalise(out_dir: Path) -> None:
    """Rewrite the trajectories sorted by id (the last record of an episode wins) and write
    the predictions."""
    latest = {str(r["episode_id"]): r for r in read_trajectories(out_dir / TRAJECTORIES)}
    records = sorted(latest.values(), key=lambda r: id_key(r["episode_id"]))
    lines = b"".join(orjson.dumps(r) + b"\n" for r in records)
    atomic_write_bytes(out_dir / TRAJECTORIES, lines)
    atomic_write_bytes(out_dir / PREDICTIONS, dumps_json(predictions(records)))


def record_videos(
    dataset_dir: Path,
    out_dir: Path,
    specs: list[EpisodeSpec],
    protocol: ObservationProtocol,
    video_format: str = "mp4",
    progress: Progress | None = None,
) -> list[Path]:
    """Write ``videos/episode_<id>.<format>`` for the ``specs`` episodes of a finished run.

    Frames are re-rendered from the recorded poses with the protocol's RGB camera, so videos
    need no sensor in the protocol and do not change the run. ``progress(done, total)`` is
    called before the first video and after each one.
    """
    from condvln.nav import GridNavigator
    from condvln.sim.render import Renderer
    from condvln.sim.video import episode_frames, write_video

    check_video_format(video_format)
    records = {str(r["episode_id"]): r for r in read_trajectories(out_dir / TRAJECTORIES)}
    written = []
    scenes: dict[str, tuple[GridNavigator, Renderer]] = {}
    if progress is not None:
        progress(0, len(specs))
    for spec in specs:
        if spec.scene_id not in scenes:
            scene = load_scene(dataset_dir / spec.scene_id)
            scenes = {spec.scene_id: (GridNavigator(scene), Renderer.from_scene(scene))}
        navigator, renderer = scenes[spec.scene_id]
        record = records[str(spec.episode_id)]
        frames = episode_frames(
            renderer,
            navigator,
            protocol.rgb,
            record["positions"],
            record["headings"],
            spec.instruction,
        )
        path = out_dir / "videos" / f"episode_{spec.episode_id}.{video_format}"
        written.append(write_video(frames, path))
        if progress is not None:
            progress(len(written), len(specs))
    return written
