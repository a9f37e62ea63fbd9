"""Pixel perception: object detections from rendered depth + semantic images, and the agent using it.

``neurosymbolic_pixels`` is the :class:`~condvln.agents.baselines.NeurosymbolicAgent` with its
perception swapped: instead of the simulator's symbolic detections it reads the ``depth`` and
``semantic`` images (run it with ``detections: false`` in the protocol so it cannot see them),
back-projects every object pixel to a world point and keeps, per semantic instance, the box of
all points seen so far and the category most often read. Grounding and branch decisions then run
on these estimates — partial views, occlusion and range limits make them fail the way real
perception does, which symbolic detections never do.

:class:`PixelNoise` adds pixel-level noise on top (seeded per episode): mask erosion, relative
depth noise, label confusion, and missed small objects (masks below a pixel count).
``neurosymbolic_pixels_noisy`` is the agent with :data:`NOISY` noise.

>>> PixelNoise().noisy, NOISY.noisy
(False, True)
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel, ConfigDict, Field
from scipy import ndimage

from condvln.agents.base import EpisodeView
from condvln.agents.baselines import NeurosymbolicAgent
from condvln.agents.skills import Memory, Remembered
from condvln.errors import ConfigError
from condvln.sim.mapview import MapView
from condvln.sim.protocol import DepthConfig, Observation, Vec3
from condvln.sim.render import SemanticTable, camera_origin, camera_rays, rotate_yaw


class PixelNoise(BaseModel):
    """Pixel-level perception noise of the pixel agent.

    Attributes:
        erosion: Erode every instance mask by this many pixels (boundary pixels are lost).
        depth_noise: Standard deviation of multiplicative Gaussian depth noise (0.02 = 2 % of
            the depth).
        confusion_rate: Probability per frame and detected instance that its label is read as
            another object category of the scene.
        min_pixels: Masks with fewer pixels (after erosion) are not detected: small or distant
            objects are missed.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    erosion: int = Field(0, ge=0, le=16)
    depth_noise: float = Field(0.0, ge=0.0, le=1.0)
    confusion_rate: float = Field(0.0, ge=0.0, le=1.0)
    min_pixels: int = Field(1, ge=1)

    @property
    def noisy(self) -> bool:
        """Whether any noise is on."""
        return (
            self.erosion > 0 or self.depth_noise > 0 or self.confusion_rate > 0
        ) or self.min_pixels > 1


NOISY = PixelNoise(erosion=1, depth_noise=0.03, confusion_rate=0.1, min_pixels=40)
"""The noise of ``neurosymbolic_pixels_noisy``."""


@dataclass(frozen=True, slots=True)
class PixelDetection:
    """One instance seen in one frame.

    Attributes:
        semantic_id: The instance's semantic id.
        category: The category read for it (may be confused under noise).
        lo: Lower corner of the box of its back-projected pixels (world).
        hi: Upper corner.
        pixels: Pixels of its (eroded) mask with a valid depth.
    """

    semantic_id: int
    category: str
    lo: Vec3
    hi: Vec3
    pixels: int

    @property
    def center(self) -> Vec3:
        """Centre of the box."""
        return tuple(0.5 * (a + b) for a, b in zip(self.lo, self.hi, strict=True))  # type: ignore[return-value]


def _eroded(labels: np.ndarray, erosion: int) -> np.ndarray:
    """Pixels whose (2e+1)² neighbourhood carries their own label only."""
    if erosion <= 0:
        return np.ones(labels.shape, dtype=bool)
    size = 2 * erosion + 1
    lo = ndimage.minimum_filter(labels, size=size, mode="nearest")
    hi = ndimage.maximum_filter(labels, size=size, mode="nearest")
    return (lo == labels) & (hi == labels)


def pixel_detections(
    depth: np.ndarray,
    semantic: np.ndarray,
    camera: DepthConfig,
    position: Vec3,
    yaw: float,
    table: SemanticTable,
    noise: PixelNoise | None = None,
    rng: np.random.Generator | None = None,
) -> list[PixelDetection]:
    """Object detections of one frame: object masks back-projected through the depth image.

    Args:
        depth: The depth image as the sensor gives it (H×W×1, normalised or metres).
        semantic: The semantic image (H×W×1), same optics as ``depth``.
        camera: The depth camera (intrinsics, pose offset, range, normalisation).
        position: Agent position.
        yaw: Agent heading.
        table: Meaning of the semantic ids.
        noise: Pixel noise (none when omitted).
        rng: Generator of the noise (required when ``noise`` is noisy).

    Returns:
        One detection per object instance with at least ``noise.min_pixels`` valid pixels, in
        semantic-id order. Pixels at or beyond the depth range (clipped) are not used.
    """
    noise = noise or PixelNoise()
    ids, points = _object_points(depth, semantic, camera, position, yaw, table, noise, rng)
    if ids.size == 0:
        return []
    order = np.argsort(ids, kind="stable")
    return _instances(ids[order], points[order], table, noise, rng)


def _object_points(
    depth: np.ndarray,
    semantic: np.ndarray,
    camera: DepthConfig,
    position: Vec3,
    yaw: float,
    table: SemanticTable,
    noise: PixelNoise,
    rng: np.random.Generator | None,
) -> tuple[np.ndarray, np.ndarray]:
    """Semantic ids and world points of the usable object pixels (depth noise applied)."""
    labels = semantic.reshape(camera.height, camera.width)
    metres = camera.metres(depth.reshape(camera.height, camera.width).astype(np.float64))
    is_object = np.array([kind == "object" for kind in table.kinds], dtype=bool)
    keep = is_object[np.clip(labels, 0, len(table) - 1)] & (labels < len(table))
    keep &= (metres > camera.min_depth) & (metres < camera.max_depth)
    keep &= _eroded(labels, noise.erosion)
    flat = np.flatnonzero(keep)
    if flat.size == 0:
        return flat, np.zeros((0, 3))
    z = metres.ravel()[flat]
    if noise.depth_noise > 0:
        assert rng is not None
        z = z * (1.0 + noise.depth_noise * rng.standard_normal(z.size))
    origin = camera_origin(position, yaw, camera)
    rays = camera_rays(camera.width, camera.height, camera.hfov)[flat]
    return labels.ravel()[flat], origin + rotate_yaw(rays * z[:, None], yaw)


def _instances(
    ids: np.ndarray,
    points: np.ndarray,
    table: SemanticTable,
    noise: PixelNoise,
    rng: np.random.Generator | None,
) -> list[PixelDetection]:
    """One detection per run of equal ``ids`` (sorted) with enough pixels; labels confused."""
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
    counts = np.diff(np.r_[starts, ids.size])
    lows = np.minimum.reduceat(points, starts, axis=0)
    highs = np.maximum.reduceat(points, starts, axis=0)
    vocabulary = sorted(
        {c for c, k in zip(table.categories, table.kinds, strict=True) if k == "object"}
    )
    out = []
    for k, start in enumerate(starts):
        if counts[k] < noise.min_pixels:
            continue
        sid = int(ids[start])
        category = table.categories[sid]
        if noise.confusion_rate > 0 and len(vocabulary) > 1:
            assert rng is not None
            if rng.random() < noise.confusion_rate:
                others = [c for c in vocabulary if c != category]
                category = others[int(rng.integers(len(others)))]
        lo = tuple(float(v) for v in lows[k])
        hi = tuple(float(v) for v in highs[k])
        out.append(PixelDetection(sid, category, lo, hi, int(counts[k])))  # type: ignore[arg-type]
    return out


class PixelMemory(Memory):
    """Memory fed by pixel detections: one remembered object per semantic instance.

    Each instance keeps the union of the boxes seen in every frame and the category read most
    often (ties: the first read); its remembered centre and size are those of the union box.

    Args:
        map_view: The planner.
        table: Meaning of the semantic ids.
        camera: The depth camera (the semantic camera has the same optics).
        noise: Pixel noise.
        rng: Generator of the noise.
    """

    def __init__(
        self,
        map_view: MapView,
        table: SemanticTable,
        camera: DepthConfig,
        noise: PixelNoise,
        rng: np.random.Generator,
    ) -> None:
        super().__init__(map_view)
        self.table, self.camera, self.noise, self.rng = table, camera, noise, rng
        self._slot: dict[int, int] = {}
        self._boxes: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._votes: dict[int, Counter[str]] = {}

    def update(self, obs: Observation) -> None:
        """Learn the room type here and merge this frame's pixel detections."""
        if obs.position is None or obs.heading is None:
            return
        if obs.room_type is not None:
            here = self.map.room_index(obs.position)
            if here >= 0:
                self.room_types.setdefault(here, obs.room_type)
        frame = pixel_detections(
            obs.images["depth"],
            obs.images["semantic"],
            self.camera,
            obs.position,
            obs.heading,
            self.table,
            self.noise,
            self.rng,
        )
        for det in frame:
            self._merge(det)

    def _merge(self, det: PixelDetection) -> None:
        sid = det.semantic_id
        lo, hi = np.array(det.lo), np.array(det.hi)
        if sid in self._boxes:
            old_lo, old_hi = self._boxes[sid]
            lo, hi = np.minimum(lo, old_lo), np.maximum(hi, old_hi)
        self._boxes[sid] = (lo, hi)
        votes = self._votes.setdefault(sid, Counter())
        votes[det.category] += 1
        category = votes.most_common(1)[0][0]
        centre = tuple(float(v) for v in 0.5 * (lo + hi))
        size = tuple(float(max(v, 1e-3)) for v in hi - lo)
        memo = Remembered(category, centre, size, self.map.room_index(centre))  # type: ignore[arg-type]
        if sid in self._slot:
            if self.objects[self._slot[sid]] == memo:
                return
            self.objects[self._slot[sid]] = memo
            self._truths.clear()
        else:
            self._slot[sid] = len(self.objects)
            self.objects.append(memo)


class PixelNeurosymbolicAgent(NeurosymbolicAgent):
    """The neurosymbolic agent perceiving objects from depth + semantic pixels only.

    Args:
        noise: Pixel noise (none by default); a mapping is validated as :class:`PixelNoise`.
    """

    def __init__(self, noise: PixelNoise | dict[str, object] | None = None) -> None:
        self.noise = noise if isinstance(noise, PixelNoise) else PixelNoise(**(noise or {}))

    def reset(self, episode: EpisodeView) -> None:
        """Set up the planner state and the pixel memory of the episode."""
        super().reset(episode)
        protocol = episode.protocol
        if not {"depth", "semantic"} <= set(protocol.sensors) or episode.semantics is None:
            raise ConfigError(
                "agent neurosymbolic_pixels needs the 'depth' and 'semantic' sensors "
                '(protocol: {"sensors": ["depth", "semantic"], "detections": false})'
            )
        if protocol.depth.optics != protocol.semantic.optics:
            raise ConfigError(
                "agent neurosymbolic_pixels needs depth and semantic cameras with equal "
                "width, height, hfov and position"
            )
        assert episode.map is not None
        rng = np.random.default_rng(episode.seed)
        self.memory = PixelMemory(episode.map, episode.semantics, protocol.depth, self.noise, rng)


PIXEL_PROTOCOL = {"sensors": ["depth", "semantic"], "detections": False}
"""The observation protocol of the pixel agent's benchmark rows (no symbolic detections)."""


def noisy_pixel_agent() -> PixelNeurosymbolicAgent:
    """``neurosymbolic_pixels_noisy``: the pixel agent with :data:`NOISY` pixel noise."""
    return PixelNeurosymbolicAgent(NOISY)


__all__ = [
    "NOISY",
    "PIXEL_PROTOCOL",
    "PixelDetection",
    "PixelMemory",
    "PixelNeurosymbolicAgent",
    "PixelNoise",
    "noisy_pixel_agent",
    "pixel_detections",
]
