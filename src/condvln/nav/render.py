"""Top-down map of a scene: rooms, walls, doors, obstacles, navigable area, objects, paths.

North (−Z) is up and east (+X) is right. Uses matplotlib's Agg backend (no display needed);
the PNG is written through a temporary file, so a failed render leaves nothing behind. Text
from data (room types, categories, ids, titles) is drawn as plain text (:data:`PLAIN_TEXT`).
"""

from __future__ import annotations

import io
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.colors import ListedColormap
from shapely.geometry.base import BaseGeometry

from condvln.io import atomic_write_bytes
from condvln.nav.area import NavArea
from condvln.nav.geodesic import GridNavigator, Navigator
from condvln.scene.ground import footprint
from condvln.scene.model import Scene

ROOM_COLOURS = {
    "kitchen": "#f6d7a7",
    "living room": "#cfe3f6",
    "bedroom": "#e3d3f1",
    "bathroom": "#c9efe6",
    "dining room": "#f5c9c9",
    "hallway": "#e6e6e6",
    "office": "#e9efc6",
}
"""Fill colour per room type; other types get a stable colour from :data:`OTHER_COLOURS`."""

OTHER_COLOURS = ("#f2e6c9", "#d6eadf", "#eddcd2", "#dde5f0", "#f0dfe8", "#e2ecd0")

PLAIN_TEXT = {"text.parse_math": False}
"""Matplotlib settings of every figure that draws text from data (``@plt.rc_context(PLAIN_TEXT)``
on the drawing function): a ``$`` in a category or a run name is a dollar sign, never a mathtext
formula that fails to parse."""

PointsArg = Sequence[Sequence[float]] | Mapping[str, Sequence[float]]


def room_colour(room_type: str) -> str:
    """Fill colour of a room type (stable across runs).

    >>> room_colour("kitchen")
    '#f6d7a7'
    """
    if room_type in ROOM_COLOURS:
        return ROOM_COLOURS[room_type]
    return OTHER_COLOURS[zlib.crc32(room_type.encode()) % len(OTHER_COLOURS)]


@plt.rc_context(PLAIN_TEXT)
def render_map(
    scene: Scene,
    out_path: str | Path,
    navigator: Navigator | None = None,
    *,
    show_labels: bool = True,
    path: Sequence[Sequence[float]] | None = None,
    points: PointsArg | None = None,
    title: str | None = None,
) -> Path:
    """Draw a top-down map of ``scene`` and write it as a PNG.

    Args:
        scene: The scene.
        out_path: Where to write the PNG.
        navigator: Supplies the navigable area when it is a :class:`GridNavigator`; a grid
            navigator is built when omitted. Other backends draw no navigable area.
        show_labels: Write room types and object categories on the map.
        path: Optional 3D waypoints drawn as a line from a green start to a red end.
        points: Optional 3D points, or a mapping ``label → point`` drawn with their labels.
        title: Figure title (defaults to the scene id).

    Returns:
        The path written.
    """
    if navigator is None:
        navigator = GridNavigator(scene)
    fig, ax = plt.subplots(figsize=figure_size(scene, navigator), dpi=110)
    try:
        draw_scene(ax, scene, navigator, show_labels=show_labels)
        if path:
            _draw_path(ax, path)
        if points:
            _draw_points(ax, points)
        finish_axes(ax, title or scene.id)
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", bbox_inches="tight")
    finally:
        plt.close(fig)
    out = Path(out_path)
    atomic_write_bytes(out, buffer.getvalue())
    return out


def draw_scene(ax: Axes, scene: Scene, navigator: Navigator, *, show_labels: bool = True) -> None:
    """Draw the map layers of ``scene`` on ``ax`` in data coordinates ``(x, z)``.

    Rooms, the navigable area and walls (with a :class:`GridNavigator`), doors and objects, at
    z-orders below 10, so overlays drawn at 10 and above stay on top.
    """
    area = navigator.area if isinstance(navigator, GridNavigator) else None
    _draw_rooms(ax, scene, area, show_labels)
    if area is not None:
        _draw_navigable(ax, area)
        _draw_geometry(ax, area.walls, color="#222222", linewidth=2.2, zorder=5)
    _draw_doors(ax, scene)
    _draw_objects(ax, scene, area, show_labels)


def figure_size(scene: Scene, navigator: Navigator) -> tuple[float, float]:
    """Figure size (inches) of a map of ``scene``: about 11 inches along its longer side."""
    area = navigator.area if isinstance(navigator, GridNavigator) else None
    return _figure_size(scene, area)


def _figure_size(scene: Scene, area: NavArea | None) -> tuple[float, float]:
    if area is not None:
        rows, cols = area.frame.shape
        width, height = cols * area.frame.cell_size, rows * area.frame.cell_size
    else:
        xs = [p[0] for r in scene.rooms for p in (r.floor_polygon or ((0.0, 0.0),))]
        zs = [p[1] for r in scene.rooms for p in (r.floor_polygon or ((0.0, 0.0),))]
        width, height = max(np.ptp(xs), 1.0), max(np.ptp(zs), 1.0)
    scale = 11.0 / max(width, height)
    return max(width * scale, 4.0) + 1.0, max(height * scale, 4.0) + 0.6


def _polygons(geometry: BaseGeometry) -> list[BaseGeometry]:
    if geometry.geom_type == "Polygon":
        return [geometry]
    return [p for g in getattr(geometry, "geoms", []) for p in _polygons(g)]


def _draw_rooms(ax: Axes, scene: Scene, area: NavArea | None, show_labels: bool) -> None:
    from condvln.scene.ground import room_floor

    floors = area.floors if area is not None else tuple(room_floor(r) for r in scene.rooms)
    for room, floor in zip(scene.rooms, floors, strict=True):
        if floor is None or floor.is_empty:
            continue
        for poly in _polygons(floor):
            xs, zs = poly.exterior.xy
            ax.fill(xs, zs, color=room_colour(room.room_type), zorder=1, linewidth=0)
        if show_labels:
            anchor = floor.representative_point()
            ax.text(
                anchor.x, anchor.y, f"{room.room_type}\n({room.id})", ha="center", va="center",
                fontsize=9, fontweight="bold", color="#333333", alpha=0.8, zorder=9,
            )  # fmt: skip


def _draw_navigable(ax: Axes, area: NavArea) -> None:
    layer = np.zeros(area.frame.shape, dtype=np.int8)
    layer[area.free_any] = 1
    layer[area.free] = 2
    cmap = ListedColormap([(0, 0, 0, 0), (0.95, 0.55, 0.2, 0.45), (0.3, 0.7, 0.35, 0.35)])
    (x0, z0), c = area.frame.origin, area.frame.cell_size
    rows, cols = area.frame.shape
    extent = (x0, x0 + cols * c, z0 + rows * c, z0)
    ax.imshow(layer, cmap=cmap, vmin=0, vmax=2, extent=extent, origin="upper",
              interpolation="nearest", zorder=2)  # fmt: skip


def _draw_geometry(ax: Axes, geometry: BaseGeometry, **style: object) -> None:
    parts = getattr(geometry, "geoms", [geometry])
    for part in parts:
        if part.is_empty:
            continue
        if part.geom_type in ("LineString", "LinearRing"):
            xs, zs = part.xy
            ax.plot(xs, zs, solid_capstyle="butt", **style)
        elif part.geom_type == "Polygon":
            xs, zs = part.exterior.xy
            ax.plot(xs, zs, **style)
        else:
            _draw_geometry(ax, part, **style)


def _draw_doors(ax: Axes, scene: Scene) -> None:
    for door in scene.doors:
        (xa, za), (xb, zb) = door.segment
        style = "--" if door.kind == "opening" else "-"
        colour = "#1f77b4" if door.kind == "opening" else "#b5651d"
        ax.plot([xa, xb], [za, zb], style, color=colour, linewidth=4, zorder=6,
                solid_capstyle="butt")  # fmt: skip


def _draw_objects(ax: Axes, scene: Scene, area: NavArea | None, show_labels: bool) -> None:
    blocking = {oid for oid, _ in area.obstacles} if area is not None else set()
    for obj in scene.objects():
        shape = footprint(obj)
        if obj.id in blocking:
            xs, zs = shape.exterior.xy
            ax.fill(xs, zs, color="#8c8c8c", alpha=0.75, zorder=3, linewidth=0.5,
                    edgecolor="#555555")  # fmt: skip
        else:
            ax.plot(obj.center[0], obj.center[2], ".", color="#555555", markersize=3, zorder=4)
        if show_labels and obj.parent_id is None:
            ax.text(obj.center[0], obj.center[2], obj.category, fontsize=5.5, ha="center",
                    va="center", color="#202020", zorder=8)  # fmt: skip


def _draw_path(ax: Axes, path: Sequence[Sequence[float]]) -> None:
    pts = np.asarray(path, dtype=np.float64)
    ax.plot(pts[:, 0], pts[:, 2], "-", color="#d62728", linewidth=2, zorder=10)
    ax.plot(pts[:, 0], pts[:, 2], "o", color="#d62728", markersize=3, zorder=10)
    ax.plot(pts[0, 0], pts[0, 2], "o", color="#2ca02c", markersize=8, zorder=11)
    ax.plot(pts[-1, 0], pts[-1, 2], "*", color="#d62728", markersize=12, zorder=11)


def _draw_points(ax: Axes, points: PointsArg) -> None:
    items = list(points.items()) if isinstance(points, Mapping) else [("", p) for p in points]
    for label, p in items:
        ax.plot(p[0], p[2], "D", color="#9467bd", markersize=6, zorder=12)
        if label:
            ax.annotate(label, (p[0], p[2]), textcoords="offset points", xytext=(4, 4),
                        fontsize=7, color="#4b2a7b", zorder=12)  # fmt: skip


def finish_axes(ax: Axes, title: str) -> None:
    """Equal aspect, north up (z increases downwards), axis labels, grid and ``title``."""
    ax.set_aspect("equal")
    if not ax.yaxis_inverted():
        ax.invert_yaxis()
    ax.set_xlabel("x (east) [m]")
    ax.set_ylabel("z (south) [m]  —  north is up")
    ax.set_title(title)
    ax.grid(True, linewidth=0.3, alpha=0.5)
