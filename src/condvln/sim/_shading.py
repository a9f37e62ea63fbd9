"""Compiled (numba) per-pixel kernels of the ray-cast renderer (:mod:`condvln.sim.render`).

Two passes over the pixels of one camera, each a single loop with no temporaries:
:func:`world_rays` (the camera's rays turned by the heading, float32 for Embree) before the cast,
and :func:`pixels` after it (z-depth solved on the hit triangle's plane, the depth and semantic
images, and RGB: Lambert-shaded albedo times the procedural pattern of the hit's material). The
ray and depth arithmetic is written operation for operation as the numpy expressions it
replaced, so depth and semantic images are byte-identical to them.
"""

from __future__ import annotations

import math

import numba
import numpy as np

PLAIN, WOOD, TILE, PAINT = 0, 1, 2, 3
"""Material codes: uniform albedo, wooden planks, floor tiles, striped wall paint."""

PLANK_WIDTH = 0.19
PLANK_LENGTH = 1.5
TILE_SIZE = 0.5
STRIPE_WIDTH = 0.12
BASEBOARD = 0.1
"""Pattern sizes in metres (plank width and length, tile side, wallpaper stripe, baseboard)."""

SEAM = 0.006
"""Half width (m) of the dark seams between planks and of the grout between tiles."""

FADE = 0.35
"""Pattern contrast falls as ``1 / (1 + (FADE · depth)²)``, so thin seams do not alias far away."""


@numba.njit(cache=True, nogil=True)
def world_rays(cols: np.ndarray, rows: np.ndarray, cos_yaw: float, sin_yaw: float) -> np.ndarray:
    """The pixel rays turned about +Y by the heading (float32 ``(pixels, 3)``, row-major).

    The camera-frame ray of pixel ``(row, col)`` is ``(cols[col], rows[row], −1)``
    (:func:`condvln.sim.render.camera_rays`).
    """
    width = cols.shape[0]
    out = np.empty((rows.shape[0] * width, 3), dtype=np.float32)
    z = -1.0
    for row in range(rows.shape[0]):
        y = rows[row]
        for col in range(width):
            x = cols[col]
            i = row * width + col
            out[i, 0] = cos_yaw * x + sin_yaw * z
            out[i, 1] = y
            out[i, 2] = cos_yaw * z - sin_yaw * x
    return out


@numba.njit(cache=True, nogil=True)
def face_planes(
    normals: np.ndarray, offsets: np.ndarray, origin: np.ndarray, cos_yaw: float, sin_yaw: float
) -> tuple[np.ndarray, np.ndarray]:
    """Per face, the normal in the camera frame and ``gap = c − n·o`` of its plane ``n·p = c``.

    Both carry one extra last entry, normal ``(0, 0, 1)`` and gap 0, that a face index of −1
    (no hit) reads. ``n·o`` adds the x and z products first, then y (numpy's ``einsum``
    order, kept so that depths stay byte-identical).
    """
    count = normals.shape[0]
    turned = np.empty((count + 1, 3))
    gap = np.empty(count + 1)
    for f in range(count):
        x, y, z = normals[f, 0], normals[f, 1], normals[f, 2]
        turned[f, 0] = cos_yaw * x - sin_yaw * z
        turned[f, 1] = y
        turned[f, 2] = cos_yaw * z + sin_yaw * x
        gap[f] = offsets[f] - ((x * origin[0] + z * origin[2]) + y * origin[1])
    turned[count, 0] = 0.0
    turned[count, 1] = 0.0
    turned[count, 2] = 1.0
    gap[count] = 0.0
    return turned, gap


@numba.njit(cache=True, nogil=True)
def _hash(i: int, j: int) -> float:
    """A deterministic value in [0, 1) per integer cell ``(i, j)``."""
    h = (i * 73856093) ^ (j * 19349663)
    h = ((h ^ (h >> 13)) * 1274126177) & 0xFFFFFFFF
    return ((h ^ (h >> 16)) & 0xFFFF) / 65536.0


@numba.njit(cache=True, nogil=True)
def _cell(u: float, size: float) -> tuple[int, float]:
    """The cell of ``u`` on a grid of ``size`` and its distance to the nearest cell border."""
    scaled = u * (1.0 / size)
    index = math.floor(scaled)
    fraction = scaled - index
    return index, size * min(fraction, 1.0 - fraction)


@numba.njit(cache=True, nogil=True)
def _wood(x: float, z: float, fade: float) -> float:
    """Planks along X, rows along Z with staggered joints: a tint per plank, dark seams."""
    row, across = _cell(z, PLANK_WIDTH)
    plank, along = _cell(x + PLANK_LENGTH * _hash(row, 7), PLANK_LENGTH)
    pattern = 0.82 + 0.3 * _hash(plank, row)
    if min(across, along) < SEAM:
        pattern *= 0.55
    return 1.0 + (pattern - 1.0) * fade


@numba.njit(cache=True, nogil=True)
def _tile(x: float, z: float, fade: float) -> float:
    """Square tiles with a slight tint each and darker grout lines."""
    column, dx = _cell(x, TILE_SIZE)
    row, dz = _cell(z, TILE_SIZE)
    pattern = 0.62 if min(dx, dz) < SEAM else 0.94 + 0.1 * _hash(column, row)
    return 1.0 + (pattern - 1.0) * fade


@numba.njit(cache=True, nogil=True)
def _paint(x: float, y: float, z: float, nx: float, nz: float, base: float, fade: float) -> float:
    """Faint vertical wallpaper stripes along the wall and a dark baseboard at its foot."""
    if y - base < BASEBOARD:
        return 0.62
    along = nx * z - nz * x  # distance along the wall (its horizontal tangent)
    stripe = math.floor(along * (1.0 / STRIPE_WIDTH)) & 1
    return 1.0 - 0.05 * stripe * fade


@numba.njit(cache=True, nogil=True)
def _pattern(
    kind: int, x: float, y: float, z: float, nx: float, nz: float, base: float, t: float
) -> float:
    """The procedural pattern factor of material ``kind`` at the world point ``(x, y, z)``."""
    fade = 1.0 / (1.0 + FADE * FADE * t * t)
    if kind == WOOD:
        return _wood(x, z, fade)
    if kind == TILE:
        return _tile(x, z, fade)
    return _paint(x, y, z, nx, nz, base, fade)


# long: one fused numba pass over every pixel (depth, semantic, shaded RGB); splitting it costs a pass
@numba.njit(cache=True, nogil=True)
def pixels(
    face: np.ndarray,
    cols: np.ndarray,
    rows: np.ndarray,
    turned: np.ndarray,
    surfaces: tuple,  # type: ignore[type-arg]
    depth_range: tuple[float, float, bool],
    ids: np.ndarray,
    rgb: np.ndarray,
    depth: np.ndarray,
    semantic: np.ndarray,
) -> None:
    """Every pixel's images in one pass over the hits; empty outputs are skipped.

    The z-depth of a pixel is ``gap / (n · d)`` on its hit face's plane (:func:`face_planes`;
    their last entry serves "no hit", read as 0), then clipped to ``[low, high]`` and
    normalised when asked (float32); the semantic id is ``ids[face]`` (``ids[-1]`` without a
    hit); RGB is ``albedo · light · pattern`` (:func:`_pattern`; black without a hit).

    Args:
        face: Hit face per pixel (−1: none), row-major.
        cols: Camera-frame ray x per column.
        rows: Camera-frame ray y per row.
        turned: Face normals in the camera frame (:func:`face_planes`).
        surfaces: ``(directions, origin, light, albedo, material, normals, base, gap)``: world
            rays (:func:`world_rays`), camera position, Lambert light of each face's front and
            back ``(2, F)``, albedo, material code, world normal and lowest height per face, and
            the planes' gaps (:func:`face_planes`).
        depth_range: ``(low, high, normalize)`` of the depth sensor.
        ids: Semantic id per face, plus the background id last.
        rgb: ``(pixels, 3)`` uint8 output, or empty.
        depth: ``(pixels,)`` float32 output, or empty.
        semantic: ``(pixels,)`` int32 output, or empty.
    """
    (cos_yaw, sin_yaw), origin, light, albedo, material, normals, base, gap = surfaces
    low, high, normalize = depth_range
    last = gap.shape[0] - 1
    width = cols.shape[0]
    want_depth, want_semantic, want_rgb = (
        depth.shape[0] > 0,
        semantic.shape[0] > 0,
        rgb.shape[0] > 0,
    )
    for row in range(rows.shape[0]):
        y_ray = rows[row]
        for col in range(width):
            i = row * width + col
            f = face[i]
            g = f if f >= 0 else last
            facing = turned[g, 0] * cols[col] + turned[g, 1] * y_ray - turned[g, 2]
            if abs(facing) < 1e-12:
                facing = -1.0
            t = gap[g] / facing
            t = t if t > 0.0 else 0.0
            if want_depth:
                clipped = min(max(t, low), high)
                depth[i] = (clipped - low) / (high - low) if normalize else clipped
            if want_semantic:
                semantic[i] = ids[g]
            if not want_rgb:
                continue
            k = 0.0  # no hit: black
            if f >= 0:  # albedo · light (of the side seen: gap < 0 is the front) · pattern
                k = light[0, f] if gap[f] < 0.0 else light[1, f]
                if material[f] != PLAIN:
                    x_ray = cols[col]  # the world ray: the camera's (x, y, −1) turned by the yaw
                    x = origin[0] + t * (cos_yaw * x_ray - sin_yaw)
                    y = origin[1] + t * y_ray
                    z = origin[2] + t * (-cos_yaw - sin_yaw * x_ray)
                    k *= _pattern(material[f], x, y, z, normals[f, 0], normals[f, 2], base[f], t)
            for c in range(3):
                value = albedo[g, c] * k + 0.5
                rgb[i, c] = 255 if value >= 255.0 else np.uint8(value)
