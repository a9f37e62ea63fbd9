"""Episode videos: egocentric RGB beside a top-down map with the path so far, instruction caption.

One frame per recorded pose (the start pose, then one per action). The RGB view is rendered
from the scene's composed mesh with the run protocol's RGB camera
(:class:`~condvln.sim.render.Renderer`); the map is the navigable grid coloured by room type
(north up, walls and blocked cells dark, the navigable area light), with the path so far in red
and the agent as a dot with a heading tick; the instruction is wrapped below. Files are written
with imageio (MP4 through the ``imageio-ffmpeg`` wheel's ffmpeg, or GIF by the file suffix),
first to a temporary file, then renamed.
"""

from __future__ import annotations

import math
import os
import textwrap
from collections.abc import Sequence
from pathlib import Path

import imageio.v3 as iio
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import to_rgb

from condvln.nav import GridNavigator
from condvln.nav.render import PLAIN_TEXT, room_colour
from condvln.sim.protocol import CameraConfig, ObservationProtocol
from condvln.sim.render import Renderer

FPS = 10
"""Frames (poses) per second of the videos (GIF frame times are whole centiseconds)."""

BLOCK = 16
"""Frame sides are padded to multiples of this (the H.264 macro block; ffmpeg needs even sides)."""

_PATH = np.array([214, 39, 40], dtype=np.uint8)
_AGENT = np.array([31, 119, 180], dtype=np.uint8)


def map_image(navigator: GridNavigator, height: int) -> tuple[np.ndarray, float]:
    """The static top-down map (uint8 rows × cols × 3, north up) and its pixels per metre.

    Cells are coloured by room type (light where navigable, darker where not) and dark where
    they block sight (walls, outside); the map is scaled by whole pixels per cell to about
    ``height`` rows.
    """
    area = navigator.area
    rooms = navigator.scene.rooms
    palette = np.array([to_rgb(room_colour(r.room_type)) for r in rooms] + [(0.55, 0.55, 0.55)])
    cells = palette[np.where(area.room_index >= 0, area.room_index, len(rooms))]
    cells = np.where(area.free[..., None], cells, cells * 0.72)
    cells = np.where(area.view_blocked[..., None] & (area.room_index[..., None] < 0), 0.25, cells)
    scale = max(1, round(height / area.frame.shape[0]))
    image = np.repeat(np.repeat(np.rint(cells * 255).astype(np.uint8), scale, 0), scale, 1)
    return image, scale / area.frame.cell_size


def _to_pixels(navigator: GridNavigator, per_metre: float, x: float, z: float) -> tuple[int, int]:
    ox, oz = navigator.area.frame.origin
    return int((z - oz) * per_metre), int((x - ox) * per_metre)


def _dot(image: np.ndarray, row: int, col: int, radius: int, colour: np.ndarray) -> None:
    rows, cols = image.shape[:2]
    r0, r1 = max(row - radius, 0), min(row + radius + 1, rows)
    c0, c1 = max(col - radius, 0), min(col + radius + 1, cols)
    if r0 < r1 and c0 < c1:
        yy, xx = np.ogrid[r0:r1, c0:c1]
        disc = (yy - row) ** 2 + (xx - col) ** 2 <= radius * radius
        image[r0:r1, c0:c1][disc] = colour


def _line(image: np.ndarray, a: tuple[int, int], b: tuple[int, int], colour: np.ndarray) -> None:
    steps = max(abs(b[0] - a[0]), abs(b[1] - a[1]), 1)
    rows = np.rint(np.linspace(a[0], b[0], steps + 1)).astype(int)
    cols = np.rint(np.linspace(a[1], b[1], steps + 1)).astype(int)
    inside = (rows >= 0) & (rows < image.shape[0] - 1) & (cols >= 0) & (cols < image.shape[1] - 1)
    rows, cols = rows[inside], cols[inside]
    for dr in (0, 1):
        for dc in (0, 1):
            image[rows + dr, cols + dc] = colour


@plt.rc_context(PLAIN_TEXT)
def caption_image(text: str, width: int) -> np.ndarray:
    """The instruction wrapped to ``width`` pixels (uint8 rows × width × 3, black on white)."""
    chars = max(width // 7, 20)
    lines = textwrap.wrap(text, chars) or [""]
    height = 16 * len(lines) + 12
    fig = plt.figure(figsize=(width / 100, height / 100), dpi=100)
    try:
        fig.text(
            0.01, 0.5, "\n".join(lines), fontsize=9, va="center", ha="left", family="DejaVu Sans"
        )
        fig.canvas.draw()
        pixels = np.asarray(fig.canvas.buffer_rgba())[..., :3].copy()  # type: ignore[attr-defined]
    finally:
        plt.close(fig)
    return pixels


def _pad(frame: np.ndarray) -> np.ndarray:
    rows, cols = frame.shape[:2]
    out = np.full((-(-rows // BLOCK) * BLOCK, -(-cols // BLOCK) * BLOCK, 3), 255, dtype=np.uint8)
    out[:rows, :cols] = frame
    return out


class EpisodeFrames:
    """The frames of one episode drawn pose by pose (the map keeps the path so far).

    Args:
        renderer: The scene's renderer.
        navigator: The scene's navigator (the map).
        camera: The RGB camera of the egocentric view.
        instruction: The caption.
    """

    def __init__(
        self,
        renderer: Renderer,
        navigator: GridNavigator,
        camera: CameraConfig,
        instruction: str,
    ) -> None:
        self.renderer = renderer
        self.navigator = navigator
        self.protocol = ObservationProtocol(sensors=("rgb",), rgb=camera)
        self._map, self._per_metre = map_image(navigator, camera.height)
        self._instruction = instruction
        self._caption: np.ndarray | None = None
        self._last: tuple[int, int] | None = None

    def walk(self, position: Sequence[float]) -> None:
        """Extend the path on the map to ``position`` without drawing a frame."""
        point = _to_pixels(self.navigator, self._per_metre, position[0], position[2])
        if self._last is not None:
            _line(self._map, self._last, point, _PATH)
        self._last = point

    def add(
        self, position: Sequence[float], heading: float, view: np.ndarray | None = None
    ) -> np.ndarray:
        """The frame of the next pose (uint8; ``view``: its RGB image when already rendered)."""
        if view is None:
            view = self.renderer.render(position, heading, self.protocol)["rgb"]
        self.walk(position)
        here = self._map.copy()
        assert self._last is not None
        row, col = self._last
        tip = (int(row - 6 * math.cos(heading)), int(col - 6 * math.sin(heading)))
        _line(here, (row, col), tip, _AGENT)
        _dot(here, row, col, 3, _AGENT)
        rows = max(view.shape[0], here.shape[0])
        top = np.full((rows, view.shape[1] + 8 + here.shape[1], 3), 255, dtype=np.uint8)
        top[: view.shape[0], : view.shape[1]] = view
        top[: here.shape[0], view.shape[1] + 8 :] = here
        if self._caption is None:
            self._caption = caption_image(self._instruction, top.shape[1])
        return _pad(np.vstack([top, self._caption[:, : top.shape[1]]]))


def episode_frames(
    renderer: Renderer,
    navigator: GridNavigator,
    camera: CameraConfig,
    positions: Sequence[Sequence[float]],
    headings: Sequence[float],
    instruction: str,
) -> list[np.ndarray]:
    """The frames of one episode (uint8, equal sizes, sides multiples of :data:`BLOCK`)."""
    frames = EpisodeFrames(renderer, navigator, camera, instruction)
    return [frames.add(p, h) for p, h in zip(positions, headings, strict=True)]


def write_video(frames: Sequence[np.ndarray], path: str | Path, fps: int = FPS) -> Path:
    """Write ``frames`` as an MP4 (H.264) or a GIF, chosen by the suffix of ``path``."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp{out.suffix}")
    stack = np.stack(frames)
    if out.suffix == ".gif":
        iio.imwrite(tmp, stack, duration=1000 / fps, loop=0)
    else:
        iio.imwrite(tmp, stack, fps=fps, codec="libx264", plugin="FFMPEG", macro_block_size=BLOCK)
    os.replace(tmp, out)
    return out
