"""Compiled (numba) per-pixel kernels of the ray-cast renderer (:mod:`condvln.sim.render`).

Three passes over the pixels of one camera, each a single loop with no temporaries:
:func:`world_rays` (the camera's rays turned by the heading, float32 for Embree),
:func:`hit_depth` (z-depth solved on the hit triangle's plane) and :func:`shade` (Lambert-shaded
albedo times the procedural pattern of the hit's material). The arithmetic of the first two is
written operation for operation as the numpy expressions they replaced, so depth and semantic
images are byte-identical to them.
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
def world_rays(
    cols: np.ndarray,
    rows: np.ndarray,
    cos_yaw: float,
    sin_yaw: float,
    origin: np.ndarray,
    directions: np.ndarray,
    origins: np.ndarray,
) -> None:
    """Fill ``directions`` with the pixel rays turned about +Y, ``origins`` with ``origin``.

    The camera-frame ray of pixel ``(row, col)`` is ``(cols[col], rows[row], −1)``
    (:func:`condvln.sim.render.camera_rays`); outputs are float32, row-major.
    """
    ox, oy, oz = origin[0], origin[1], origin[2]
    z = -1.0
    width = cols.shape[0]
    for row in range(rows.shape[0]):
        y = rows[row]
        for col in range(width):
            x = cols[col]
            i = row * width + col
            directions[i, 0] = cos_yaw * x + sin_yaw * z
            directions[i, 1] = y
            directions[i, 2] = cos_yaw * z - sin_yaw * x
            origins[i, 0] = ox
            origins[i, 1] = oy
            origins[i, 2] = oz


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
def hit_depth(
    face: np.ndarray, cols: np.ndarray, rows: np.ndarray, turned: np.ndarray, gap: np.ndarray
) -> np.ndarray:
    """z-depth of every pixel: ``gap / (n · d)`` on the hit face's plane, 0 without a hit.

    ``turned`` and ``gap`` come from :func:`face_planes` (their last entry serves "no hit").
    """
    out = np.empty(face.shape[0])
    last = gap.shape[0] - 1
    width = cols.shape[0]
    for i in range(face.shape[0]):
        f = face[i]
        if f < 0:
            f = last
        x, y = cols[i % width], rows[i // width]
        facing = turned[f, 0] * x + turned[f, 1] * y - turned[f, 2]
        if abs(facing) < 1e-12:
            facing = -1.0
        depth = gap[f] / facing
        out[i] = depth if depth > 0.0 else 0.0
    return out


@numba.njit(cache=True, nogil=True)
def _hash(i: int, j: int) -> float:
    """A deterministic value in [0, 1) per integer cell ``(i, j)``."""
    h = (i * 73856093) ^ (j * 19349663)
    h = ((h ^ (h >> 13)) * 1274126177) & 0xFFFFFFFF
    return ((h ^ (h >> 16)) & 0xFFFF) / 65536.0


@numba.njit(cache=True, nogil=True)
def _seam(u: float, v: float, width: float, length: float) -> bool:
    """Whether ``(u, v)`` lies on the border of its ``length`` × ``width`` cell."""
    fu = u - length * math.floor(u / length)
    fv = v - width * math.floor(v / width)
    return min(fu, length - fu) < SEAM or min(fv, width - fv) < SEAM


@numba.njit(cache=True, nogil=True)
def _wood(x: float, z: float, fade: float) -> float:
    """Planks along X, rows along Z with staggered joints: a tint per plank, dark seams."""
    row = math.floor(z / PLANK_WIDTH)
    u = x + PLANK_LENGTH * _hash(row, 7)
    plank = math.floor(u / PLANK_LENGTH)
    pattern = 0.82 + 0.3 * _hash(plank, row)
    if _seam(u, z, PLANK_WIDTH, PLANK_LENGTH):
        pattern *= 0.55
    return 1.0 + (pattern - 1.0) * fade


@numba.njit(cache=True, nogil=True)
def _tile(x: float, z: float, fade: float) -> float:
    """Square tiles with a slight tint each and darker grout lines."""
    pattern = 0.94 + 0.1 * _hash(math.floor(x / TILE_SIZE), math.floor(z / TILE_SIZE))
    if _seam(x, z, TILE_SIZE, TILE_SIZE):
        pattern = 0.62
    return 1.0 + (pattern - 1.0) * fade


@numba.njit(cache=True, nogil=True)
def _paint(x: float, y: float, z: float, nx: float, nz: float, base: float, fade: float) -> float:
    """Faint vertical wallpaper stripes along the wall and a dark baseboard at its foot."""
    if y - base < BASEBOARD:
        return 0.62
    along = nx * z - nz * x  # distance along the wall (its horizontal tangent)
    stripe = math.floor(along / STRIPE_WIDTH) % 2
    return 1.0 - 0.05 * stripe * fade


@numba.njit(cache=True, nogil=True)
def shade(
    face: np.ndarray,
    depth: np.ndarray,
    directions: np.ndarray,
    origin: np.ndarray,
    light: np.ndarray,
    albedo: np.ndarray,
    material: np.ndarray,
    normals: np.ndarray,
    base: np.ndarray,
    out: np.ndarray,
) -> None:
    """RGB of every pixel: ``albedo · light · pattern`` of the hit face, black without a hit.

    Args:
        face: Hit face per pixel (−1: none).
        depth: z-depth per pixel (the ray parameter: camera-frame ray z is −1).
        directions: World ray per pixel (:func:`world_rays`).
        origin: Camera position (world frame).
        light: Lambert light factor per face, for the side the camera sees.
        albedo: Albedo per face (0–255).
        material: Material code per face.
        normals: World normals per face.
        base: Lowest height of each face (the foot of a wall, for the baseboard).
        out: ``(pixels, 3)`` uint8 output.
    """
    for i in range(face.shape[0]):
        f = face[i]
        if f < 0:
            out[i, 0] = 0
            out[i, 1] = 0
            out[i, 2] = 0
            continue
        t = depth[i]
        k = light[f]
        kind = material[f]
        if kind != PLAIN:
            x = origin[0] + t * directions[i, 0]
            z = origin[2] + t * directions[i, 2]
            fade = 1.0 / (1.0 + (FADE * t) ** 2)
            if kind == WOOD:
                k *= _wood(x, z, fade)
            elif kind == TILE:
                k *= _tile(x, z, fade)
            else:
                y = origin[1] + t * directions[i, 1]
                k *= _paint(x, y, z, normals[f, 0], normals[f, 2], base[f], fade)
        for c in range(3):
            value = albedo[f, c] * k + 0.5
            out[i, c] = 255 if value >= 255.0 else np.uint8(value)


@numba.njit(cache=True, nogil=True)
def depth_image(depth: np.ndarray, low: float, high: float, normalize: bool) -> np.ndarray:
    """Depths clipped to ``[low, high]``, mapped to ``[0, 1]`` when ``normalize`` (float32)."""
    out = np.empty(depth.shape[0], dtype=np.float32)
    scale = high - low
    for i in range(depth.shape[0]):
        value = min(max(depth[i], low), high)
        out[i] = (value - low) / scale if normalize else value
    return out


@numba.njit(cache=True, nogil=True)
def semantic_image(face: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """The semantic id of every pixel's hit face (``ids[-1]`` without a hit)."""
    out = np.empty(face.shape[0], dtype=np.int32)
    last = ids.shape[0] - 1
    for i in range(face.shape[0]):
        f = face[i]
        out[i] = ids[f] if f >= 0 else ids[last]
    return out
