"""Map labels that never overlap: each label takes the first free place around its point.

:func:`place_labels` places labels in priority order (branch goals, subgoals, rooms, objects).
A label tries its own point first (objects) or the eight compass positions around it at
growing distances; a label set away from its point gets a thin leader line to it. A place is
free when the label's box (with a small margin) stays inside the axes and meets neither a box
already placed nor a marker the caller protects. A label with no free place is left out and
counted: crowded maps lose object names, never an overlap.

Boxes are measured with the figure's renderer after its layout is fixed, so they are the boxes
of the saved image (the caller freezes the layout before placing; see
:func:`condvln.report.viz.episode_plot`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from matplotlib.axes import Axes
from matplotlib.text import Annotation
from matplotlib.transforms import Bbox

MARGIN_PX = 2.0
"""Space kept free around every label box (pixels at the figure's dpi)."""

DIRECTIONS = tuple(
    (math.cos(math.radians(a)), math.sin(math.radians(a)))
    for a in (45, 135, -45, -135, 0, 180, 90, -90)
)
"""Unit offsets tried around a point: the diagonals first, then east, west, north, south."""


@dataclass(frozen=True)
class Label:
    """A label to place.

    Attributes:
        text: The text.
        point: The data point ``(x, z)`` it names.
        kind: ``branch``, ``subgoal``, ``room`` or ``object`` (for counting).
        on_point: Try the point itself first (a name written on its object).
        rings: Distances (points) from the point's edge tried in turn.
        style: Keyword arguments of the text (font size, colour, box).
        leader: Colour of the leader line drawn when the label sits away from its point.
    """

    text: str
    point: tuple[float, float]
    kind: str
    on_point: bool = False
    rings: Sequence[float] = (4.0, 12.0, 24.0)
    style: dict[str, Any] = field(default_factory=dict)
    leader: str = "#444444"


@dataclass
class Placed:
    """What :func:`place_labels` did: the annotations drawn and the labels left out by kind."""

    drawn: list[Annotation] = field(default_factory=list)
    left_out: dict[str, int] = field(default_factory=dict)


def _box(artist: Annotation, renderer: Any) -> Bbox:
    """The pixel box of a label (its frame included), with :data:`MARGIN_PX` around it."""
    box = artist.get_window_extent(renderer)
    if artist.get_bbox_patch() is not None:
        artist.update_bbox_position_size(renderer)  # the frame follows the text only when drawn
        box = Bbox.union([box, artist.get_bbox_patch().get_window_extent(renderer)])
    return box.padded(MARGIN_PX)


def _free(box: Bbox, inside: Bbox, taken: Iterable[Bbox]) -> bool:
    if not (inside.contains(box.x0, box.y0) and inside.contains(box.x1, box.y1)):
        return False
    return not any(box.overlaps(other) for other in taken)


def _offsets(label: Label, size_pt: tuple[float, float]) -> list[tuple[float, float]]:
    """Offsets (points) of the label's centre from its point, in the order they are tried."""
    half_w, half_h = size_pt[0] / 2, size_pt[1] / 2
    out = [(0.0, 0.0)] if label.on_point else []
    for ring in label.rings:
        for dx, dy in DIRECTIONS:
            out.append((dx * (half_w + ring), dy * (half_h + ring)))
    return out


def place_labels(
    ax: Axes, labels: Sequence[Label], renderer: Any, protected: Sequence[Bbox] = ()
) -> Placed:
    """Draw ``labels`` on ``ax`` where they meet no other label, no protected box and stay
    inside the axes; labels that fit nowhere are left out (counted by kind).

    Args:
        ax: The axes (its layout must be final).
        labels: In priority order.
        renderer: The figure's renderer (``fig.canvas.get_renderer()``).
        protected: Boxes (pixels) no label may cover, e.g. the goal markers.
    """
    placed = Placed()
    taken: list[Bbox] = list(protected)
    inside = ax.get_window_extent(renderer)
    points_per_px = 72.0 / ax.figure.dpi
    for label in labels:
        probe = ax.annotate(label.text, label.point, xytext=(0, 0), textcoords="offset points",
                            ha="center", va="center", annotation_clip=False, **label.style)  # fmt: skip
        size = _box(probe, renderer)
        size_pt = (size.width * points_per_px, size.height * points_per_px)
        spot = None
        for offset in _offsets(label, size_pt):
            probe.xyann = offset
            box = _box(probe, renderer)
            if _free(box, inside, taken):
                spot = (offset, box)
                break
        probe.remove()
        if spot is None:
            placed.left_out[label.kind] = placed.left_out.get(label.kind, 0) + 1
            continue
        (dx, dy), box = spot
        away = math.hypot(dx, dy) > 1.0
        arrow = {"arrowstyle": "-", "lw": 0.6, "color": label.leader, "shrinkA": 0, "shrinkB": 2}
        drawn = ax.annotate(label.text, label.point, xytext=(dx, dy), textcoords="offset points",
                            ha="center", va="center", annotation_clip=False,
                            arrowprops=arrow if away else None, **label.style)  # fmt: skip
        taken.append(box)
        placed.drawn.append(drawn)
    return placed


def marker_box(ax: Axes, point: tuple[float, float], size_pt: float) -> Bbox:
    """The pixel box of a marker of ``size_pt`` points drawn at the data ``point``."""
    x, y = ax.transData.transform(point)
    half = size_pt / 2 * ax.figure.dpi / 72.0
    return Bbox.from_extents(x - half, y - half, x + half, y + half)
