"""Per-episode trajectory maps: where the agent went, against where every branch leads.

:func:`episode_layers` turns a dataset episode and its scored prediction into plain data — the
static :class:`EpisodeFigure` (start pose, reference path, every branch goal labelled with the
condition outcomes that lead to it, subgoals, success radius, instruction, condition truths)
and the run's :class:`AgentPath` (trajectory, subgoals reached, the branch it ended in). The
same data feeds :func:`draw_episode` (a matplotlib PNG, ``condvln viz``) and the HTML report's
in-browser map, so both show the same things with the same colours (:data:`STYLE`).

Conventions: north (−Z) up, east (+X) right; subgoals are "reached" as BSA counts them (the
in-order prefix of ``subgoals_reached``); the branch an agent "ended in" is the leaf goal nearest
its stop position (``branch_commitment``).
"""

from __future__ import annotations

import io
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Circle

from condvln.errors import ConfigError, FormatError
from condvln.frames import heading_vector, quaternion_to_yaw
from condvln.io import atomic_write_bytes, read_json, resolve_path
from condvln.nav.geodesic import GridNavigator, Navigator
from condvln.nav.render import PLAIN_TEXT, draw_scene, figure_size, finish_axes
from condvln.program.ast import Condition, Exists, Go, If, Ref, Step, iter_ifs, program_from_dict
from condvln.report.labels import Label, Placed, marker_box, place_labels
from condvln.scene.model import Scene
from condvln.vlnce import SPLITS

Point = tuple[float, float]

STYLE = {
    "reference": "#1f3a93",
    "start": "#2ca02c",
    "gold": "#f5b800",
    "branch": "#d62728",
    "reached": "#2ca02c",
    "missed": "#d62728",
    "stop": "#111111",
    "time_cmap": "viridis",
}
"""Colours shared by the PNG and the HTML map (trajectory: ``time_cmap`` from start to stop)."""


@dataclass(frozen=True)
class BranchGoal:
    """A leaf goal of the program.

    Attributes:
        object_id: the goal object.
        position: ``(x, z)``.
        outcomes: ``(condition index, outcome)`` of each decision on the way to this leaf.
        gold: whether this is the episode's gold branch.
    """

    object_id: str
    position: Point
    outcomes: tuple[tuple[int, bool], ...]
    gold: bool

    def label(self, index: int) -> str:
        """``"B2 (gold): C1 T, C2 F"`` — branch number and the outcomes leading to it."""
        gold = " (gold)" if self.gold else ""
        outcomes = ", ".join(f"C{c + 1} {'T' if o else 'F'}" for c, o in self.outcomes)
        return f"B{index + 1}{gold}: {outcomes or 'no condition'}"


@dataclass(frozen=True)
class EpisodeFigure:
    """What a map shows of an episode, whatever the agent did."""

    episode_id: int
    scene_id: str
    category: str
    depth: int
    chain: int
    instruction: str
    radius: float
    start: Point
    start_yaw: float
    reference: tuple[Point, ...]
    subgoals: tuple[tuple[str, Point], ...]
    branches: tuple[BranchGoal, ...]
    conditions: tuple[tuple[str, bool | None], ...]

    @property
    def gold_index(self) -> int:
        """Index of the gold branch."""
        return next(i for i, b in enumerate(self.branches) if b.gold)


@dataclass(frozen=True)
class AgentPath:
    """What one run's agent did in an episode (from its trajectory and its scored record)."""

    run: str
    trajectory: tuple[Point, ...]
    stop: bool
    success: bool
    subgoals_reached: int
    ended_branch: int | None
    failure_category: str | None
    reasoning: tuple[str, ...] = ()


REASONING_LINES = 12
"""Branch decisions shown under a map at most."""


def reasoning_lines(notes: Mapping[str, Any] | None) -> tuple[str, ...]:
    """One caption line per branch decision an agent recorded (``agent_notes.decisions``); the
    reasoning is printed once for decisions of one answer (same step, same reasoning).

    >>> notes = {"decisions": [
    ...     {"step": 7, "condition": "a toaster in the kitchen", "holds": False, "reasoning": "None."},
    ...     {"step": 7, "condition": "a bed in the bedroom", "holds": True, "reasoning": "None."}]}
    >>> for line in reasoning_lines(notes): print(line)
    Decision at step 7: a toaster in the kitchen → FALSE. Reasoning: None.
    Decision at step 7: a bed in the bedroom → TRUE.
    """
    decisions = (notes or {}).get("decisions")
    if not isinstance(decisions, list):
        return ()
    lines, previous = [], None
    for d in decisions[:REASONING_LINES]:
        if not isinstance(d, Mapping):
            continue
        holds = d.get("holds")
        verdict = "TRUE" if holds is True else "FALSE" if holds is False else "?"
        condition = " ".join(str(d.get("condition")).split())[:200]
        why = " ".join(str(d.get("reasoning") or "").split())[:300]
        line = f"Decision at step {d.get('step')}: {condition} → {verdict}."
        if why and (d.get("step"), why) != previous:
            line += f" Reasoning: {why}"
        lines.append(line)
        previous = (d.get("step"), why)
    return tuple(lines)


def condition_text(condition: Condition) -> str:
    """The condition in plain words.

    >>> condition_text(Exists("stool", "kitchen"))
    'there is a stool in the kitchen'
    """
    if isinstance(condition, Exists):
        return f"there is a {condition.category} in the {condition.room}"
    return f"{_ref_text(condition.subject)} is {condition.predicate} {_ref_text(condition.target)}"


def _ref_text(ref: Ref) -> str:
    words = f"the {ref.category}"
    if ref.relation is not None:
        words += f" {ref.relation} the {ref.anchor}"
    return words if ref.room is None else f"{words} in the {ref.room}"


def leaf_outcomes(steps: tuple[Step, ...], index: Mapping[int, int]) -> list[tuple]:
    """``(condition index, outcome)`` decisions of every leaf, in ``leaf_paths`` order.

    ``index`` maps ``id(If node)`` to its pre-order condition index (:func:`iter_ifs`).
    """
    paths: list[tuple] = [()]
    for step in steps:
        if isinstance(step, Go):
            continue
        assert isinstance(step, If)
        paths = [
            (*path, (index[id(step)], outcome), *sub)
            for path in paths
            for outcome, arm in ((True, step.then), (False, step.orelse))
            for sub in leaf_outcomes(arm, index)
        ]
    return paths


def _xz(point: Sequence[float]) -> Point:
    return (round(float(point[0]), 3), round(float(point[2]), 3))


def episode_figure(episode: Mapping[str, Any]) -> EpisodeFigure:
    """The static part of an episode's map, from its dataset record.

    Raises:
        FormatError: missing or malformed ``info.condvln`` labels.
    """
    try:
        labels = episode["info"]["condvln"]
        program = program_from_dict(labels["program"])
        ifs = list(iter_ifs(program.steps))
        outcomes = leaf_outcomes(program.steps, {id(node): i for i, node in enumerate(ifs)})
        truths = [(t["condition"], bool(t["truth"])) for t in labels["condition_truths"]]
        recorded = [next((t for c, t in truths if c == n.condition.to_dict()), None) for n in ifs]
        goals = labels["branch_goals"]
        if len(goals) != len(outcomes):
            raise ValueError(f"{len(goals)} branch goals for {len(outcomes)} program leaves")
        return EpisodeFigure(
            episode_id=episode["episode_id"],
            scene_id=str(labels.get("scene_file", episode["scene_id"])),  # the scene JSON
            category=str(labels["category"]),
            depth=int(labels["depth"]),
            chain=int(labels["chain"]),
            instruction=str(episode["instruction"]["instruction_text"]),
            radius=float(episode["goals"][0]["radius"]),
            start=_xz(episode["start_position"]),
            start_yaw=quaternion_to_yaw(episode["start_rotation"]),
            reference=tuple(_xz(p) for p in episode["reference_path"]),
            subgoals=tuple((str(s["object_id"]), _xz(s["position"])) for s in labels["subgoals"]),
            branches=tuple(
                BranchGoal(str(g["object_id"]), _xz(g["position"]), o, i == labels["leaf_index"])
                for i, (g, o) in enumerate(zip(goals, outcomes, strict=True))
            ),
            conditions=tuple(
                (condition_text(n.condition), t) for n, t in zip(ifs, recorded, strict=True)
            ),
        )
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise FormatError(
            f"malformed episode labels ({exc!r})", record=f"episode {episode.get('episode_id')}"
        ) from None


def agent_path(
    run: str,
    positions: Any,
    record: Mapping[str, Any],
    stop: bool,
    notes: Mapping[str, Any] | None = None,
) -> AgentPath:
    """One run's path: positions (consecutive duplicates dropped), its scored record and the
    branch decisions its agent recorded (``notes``: the trajectory's ``agent_notes``)."""
    xz = np.asarray(positions, dtype=np.float64).reshape(-1, 3)[:, [0, 2]]
    keep = np.ones(len(xz), dtype=bool)
    keep[1:] = np.any(np.abs(np.diff(xz, axis=0)) > 1e-6, axis=1)
    ended = record.get("branch_commitment")
    return AgentPath(
        run=run,
        trajectory=tuple((round(float(x), 3), round(float(z), 3)) for x, z in xz[keep]),
        stop=bool(stop),
        success=bool(record.get("success")),
        subgoals_reached=int(record.get("subgoals_reached") or 0),
        ended_branch=None if ended is None else int(ended),
        failure_category=record.get("failure_category"),
        reasoning=reasoning_lines(notes),
    )


def figure_caption(figure: EpisodeFigure) -> list[str]:
    """The run-independent caption lines: episode, instruction, condition truths."""
    head = (
        f"episode {figure.episode_id} · {figure.scene_id} · {figure.category} "
        f"(d={figure.depth}, ℓ={figure.chain}) · success radius {figure.radius:g} m"
    )
    conditions = [
        f"C{i + 1}: {text} — "
        + ("TRUE" if truth else "FALSE" if truth is not None else "not evaluated on the gold path")
        for i, (text, truth) in enumerate(figure.conditions)
    ]
    return [head, f"Instruction: {figure.instruction}", *conditions]


def caption(figure: EpisodeFigure, path: AgentPath) -> list[str]:
    """The lines printed under a map: run and episode, instruction, condition truths, outcome."""
    head, *rest = figure_caption(figure)
    return [f"{path.run} · {head}", *rest, outcome_text(figure, path), *path.reasoning]


def outcome_text(figure: EpisodeFigure, path: AgentPath) -> str:
    """Which branch the agent ended in against the gold one, and how the episode ended."""
    gold = figure.gold_index
    if path.ended_branch is None:
        ended = "no branch (not scored)"
    else:
        verdict = "the gold branch" if path.ended_branch == gold else "a wrong branch"
        ended = f"B{path.ended_branch + 1}, {verdict}"
    result = "success" if path.success else f"failure: {path.failure_category}"
    stopped = "called STOP" if path.stop else "never called STOP"
    subgoals = f"subgoals reached {path.subgoals_reached}/{len(figure.subgoals)}"
    return f"Gold branch B{gold + 1}; ended nearest {ended} · {result} · {subgoals} · {stopped}"


FORMATS = {".png": "png", ".pdf": "pdf", ".svg": "svg"}
"""Image formats of ``condvln viz`` by the output file's suffix."""


def image_format(path: str | Path) -> str:
    """The image format its suffix names (``png``, ``pdf`` or ``svg``).

    >>> image_format("ep.PDF")
    'pdf'
    >>> image_format("ep.jpg")
    Traceback (most recent call last):
    ...
    condvln.errors.ConfigError: ep.jpg: unknown image format '.jpg' (use .png, .pdf or .svg)
    """
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise ConfigError(
            f"{path}: unknown image format {suffix or '(no suffix)'!r} (use .png, .pdf or .svg)"
        )
    return FORMATS[suffix]


def parse_size(text: str) -> tuple[float, float]:
    """``"WxH"`` in inches (``8x6``, ``8.5X11``) as ``(width, height)``.

    >>> parse_size("8x6")
    (8.0, 6.0)
    >>> parse_size("8")
    Traceback (most recent call last):
    ...
    condvln.errors.ConfigError: --size '8': expected WIDTHxHEIGHT in inches, e.g. 8x6
    """
    parts = text.lower().split("x")
    try:
        width, height = (float(v) for v in parts)
    except ValueError:
        width = height = 0.0
    if not (1.0 <= width <= 100.0 and 1.0 <= height <= 100.0):
        raise ConfigError(f"--size {text!r}: expected WIDTHxHEIGHT in inches, e.g. 8x6")
    return width, height


@dataclass(frozen=True)
class FigureOptions:
    """How ``condvln viz`` draws a map.

    Attributes:
        dpi: Pixels per inch (PNG; also the resolution of PDF / SVG rasters).
        size: ``(width, height)`` of the whole image in inches (default: from the map).
        crop: ``scene`` (the whole map) or ``room`` (the rooms the episode touches).
        labels: Room and object names on the map (branch and subgoal labels always show).
    """

    dpi: int = 100
    size: tuple[float, float] | None = None
    crop: str = "scene"
    labels: bool = True

    def __post_init__(self) -> None:
        if not 20 <= self.dpi <= 1200:
            raise ConfigError(f"--dpi must be between 20 and 1200, got {self.dpi}")
        if self.crop not in ("scene", "room"):
            raise ConfigError(f"--crop must be 'scene' or 'room', got {self.crop!r}")


def _draw_layers(ax: plt.Axes, figure: EpisodeFigure, path: AgentPath) -> LineCollection | None:
    """The episode's layers over the scene (their labels are placed later)."""
    if len(figure.reference) > 1:
        ref = np.asarray(figure.reference)
        ax.plot(ref[:, 0], ref[:, 1], "--", color=STYLE["reference"], lw=1.6, zorder=10)
    for branch in figure.branches:
        colour = STYLE["gold"] if branch.gold else STYLE["branch"]
        ax.add_patch(Circle(branch.position, figure.radius, fill=False, ec=colour, lw=1.2,
                            ls="-" if branch.gold else ":", zorder=10))  # fmt: skip
        ax.plot(*branch.position, "*" if branch.gold else "X", color=colour, ms=15 if branch.gold
                else 10, mec="#222222", mew=0.8, zorder=13)  # fmt: skip
    for i, (_, point) in enumerate(figure.subgoals):
        reached = i < path.subgoals_reached
        colour = STYLE["reached"] if reached else STYLE["missed"]
        ax.plot(*point, "s", ms=9, color=colour if reached else "white", mec=colour, mew=2,
                zorder=13)  # fmt: skip
    lines = None
    traj = np.asarray(path.trajectory)
    if len(traj) > 1:
        segments = np.stack([traj[:-1], traj[1:]], axis=1)
        lines = LineCollection(segments, cmap=STYLE["time_cmap"], linewidths=2.6, zorder=11)
        lines.set_array(np.arange(len(segments), dtype=np.float64))
        ax.add_collection(lines)
    if len(traj):
        ax.plot(*traj[-1], "o" if path.stop else "x", ms=8, color=STYLE["stop"], mew=2, zorder=12)
    dx, dz = heading_vector(figure.start_yaw)
    ax.plot(*figure.start, "o", ms=10, color=STYLE["start"], mec="#222222", zorder=12)
    ax.annotate("", (figure.start[0] + 0.6 * dx, figure.start[1] + 0.6 * dz), figure.start,
                arrowprops={"arrowstyle": "-|>", "color": STYLE["start"], "lw": 2}, zorder=12)  # fmt: skip
    return lines


LABEL_STYLE = {
    "branch": {"fontsize": 8, "fontweight": "bold", "color": "#222222", "zorder": 14},
    "subgoal": {"fontsize": 7.5, "fontweight": "bold", "zorder": 14},
    "room": {"fontsize": 8.5, "fontweight": "bold", "color": "#333333", "alpha": 0.85, "zorder": 9},
    "object": {"fontsize": 6.5, "color": "#202020", "zorder": 8},
}
"""Text style of each kind of map label."""


def map_labels(scene: Scene, figure: EpisodeFigure, path: AgentPath, names: bool) -> list[Label]:
    """The map's labels in priority order: branch goals, subgoals, then (``names``) rooms and
    the objects that stand on the floor."""
    from condvln.scene.ground import room_floor

    labels = []
    for i, branch in enumerate(figure.branches):
        edge = STYLE["gold"] if branch.gold else STYLE["branch"]
        box = {"boxstyle": "round,pad=0.2", "fc": "white", "alpha": 0.9, "ec": edge}
        style = LABEL_STYLE["branch"] | {"bbox": box}
        rings = (6, 14, 26, 40, 60, 90)
        labels.append(Label(branch.label(i), branch.position, "branch", rings=rings, style=style))
    for i, (_, point) in enumerate(figure.subgoals):
        reached = i < path.subgoals_reached
        colour = STYLE["reached"] if reached else STYLE["missed"]
        text = f"S{i + 1} {'reached' if reached else 'missed'}"
        style = LABEL_STYLE["subgoal"] | {"color": colour}
        labels.append(Label(text, point, "subgoal", rings=(5, 12, 24, 40, 60), style=style))
    if not names:
        return labels
    for room in scene.rooms:
        floor = room_floor(room)
        if floor is not None and not floor.is_empty:
            anchor = floor.representative_point()
            point = (anchor.x, anchor.y)
            labels.append(Label(room.room_type, point, "room", True, (8, 20), LABEL_STYLE["room"]))
    for obj in scene.objects():
        if obj.parent_id is None:
            point = (obj.center[0], obj.center[2])
            labels.append(Label(obj.category, point, "object", True, (3, 9), LABEL_STYLE["object"]))
    return labels


def _protected(ax: plt.Axes, figure: EpisodeFigure, path: AgentPath) -> list[Any]:
    """Pixel boxes of the markers no label may hide: start, stop, goals and subgoals."""
    points = [(figure.start, 12.0), *((b.position, 15.0) for b in figure.branches)]
    points += [(p, 10.0) for _, p in figure.subgoals]
    if path.trajectory:
        points.append((path.trajectory[-1], 9.0))
    return [marker_box(ax, p, size) for p, size in points]


def crop_box(scene: Scene, figure: EpisodeFigure, path: AgentPath) -> tuple[float, ...] | None:
    """``(x0, x1, z0, z1)`` around the rooms the episode touches (start, goals, subgoals,
    reference, trajectory), 0.5 m wider; ``None`` when no room holds any of them."""
    from shapely.geometry import MultiPoint, Point
    from shapely.ops import unary_union

    from condvln.scene.ground import room_floor

    points = MultiPoint([figure.start, *figure.reference, *path.trajectory,
                         *(b.position for b in figure.branches), *(p for _, p in figure.subgoals)])  # fmt: skip
    floors = [f for f in (room_floor(r) for r in scene.rooms) if f is not None and not f.is_empty]
    touched = [f for f in floors if f.intersects(points)]
    if not touched:
        return None
    x0, z0, x1, z1 = unary_union([*touched, *(Point(p).buffer(0.05) for p in points.geoms)]).bounds
    return (x0 - 0.5, x1 + 0.5, z0 - 0.5, z1 + 0.5)


LEGEND = (
    Line2D([], [], ls="--", color=STYLE["reference"], label="reference path"),
    Line2D([], [], lw=2.6, color=plt.get_cmap(STYLE["time_cmap"])(0.6), label="trajectory (time)"),
    Line2D([], [], marker="o", ls="", color=STYLE["start"], mec="#222", label="start (→ heading)"),
    Line2D([], [], marker="o", ls="", color=STYLE["stop"], label="stop (x: no STOP)"),
    Line2D([], [], marker="*", ls="", ms=12, color=STYLE["gold"], mec="#222", label="gold goal"),
    Line2D(
        [], [], marker="X", ls="", ms=9, color=STYLE["branch"], mec="#222", label="other branch"
    ),
    Line2D([], [], marker="s", ls="", color=STYLE["reached"], label="subgoal reached"),
    Line2D([], [], marker="s", ls="", mfc="white", mec=STYLE["missed"], label="subgoal missed"),
    Line2D([], [], ls=":", color="#555", label="success radius"),
)


def caption_columns(options: FigureOptions) -> int:
    """Characters per caption line: 125, fewer on a narrow ``--size`` (about 11 per inch at
    9 pt). The caption is wrapped here, not by matplotlib: its ``wrap=True`` measures lines as
    mathtext whatever ``parse_math`` says, so a caption with two ``$`` would fail to draw.

    >>> caption_columns(FigureOptions()), caption_columns(FigureOptions(size=(8.0, 6.0)))
    (125, 88)
    """
    if options.size is None:
        return 125
    return max(20, min(125, int(options.size[0] * 11)))


@plt.rc_context(PLAIN_TEXT)
def episode_plot(
    scene: Scene,
    navigator: Navigator,
    figure: EpisodeFigure,
    path: AgentPath,
    options: FigureOptions = FigureOptions(),
) -> tuple[Figure, Placed]:
    """The episode map as a matplotlib figure (scene, layers, legend, caption) with its labels
    placed so that none overlaps (:mod:`~condvln.report.labels`); the caller closes it."""
    width, height = figure_size(scene, navigator)
    crop = crop_box(scene, figure, path) if options.crop == "room" else None
    if crop is not None:
        x0, x1, z0, z1 = crop
        scale = 11.0 / max(x1 - x0, z1 - z0)
        width, height = max((x1 - x0) * scale, 4.0) + 1.0, max((z1 - z0) * scale, 4.0) + 0.6
    lines_text = [
        w for line in caption(figure, path) for w in textwrap.wrap(line, caption_columns(options))
    ]
    text_height = 0.7 + 0.19 * len(lines_text)
    size = options.size or (width, height + text_height)
    fig = plt.figure(figsize=size, dpi=options.dpi, layout="constrained")
    try:
        ax, text_ax = fig.subplots(2, 1, gridspec_kw={"height_ratios": [height, text_height]})
        draw_scene(ax, scene, navigator, show_labels=False)
        lines = _draw_layers(ax, figure, path)
        finish_axes(ax, f"{path.run}: episode {figure.episode_id}")
        if crop is not None:
            ax.set_xlim(crop[0], crop[1])
            ax.set_ylim(crop[3], crop[2])  # north up
        if lines is not None:
            fig.colorbar(lines, ax=ax, fraction=0.03, pad=0.01, label="step (start → stop)")
        text_ax.axis("off")
        text_ax.legend(handles=LEGEND, loc="upper center", ncol=5, fontsize=8, frameon=False)
        text_ax.text(0.0, 0.62, "\n".join(lines_text), va="top", ha="left", fontsize=9,
                     transform=text_ax.transAxes, linespacing=1.35, parse_math=False)  # fmt: skip
        fig.canvas.draw()  # run the layout (twice: aspect-locked axes move), then keep it
        fig.canvas.draw()
        fig.set_layout_engine("none")
        renderer = fig.canvas.get_renderer()
        labels = map_labels(scene, figure, path, options.labels)
        placed = place_labels(ax, labels, renderer, _protected(ax, figure, path))
    except BaseException:
        plt.close(fig)
        raise
    return fig, placed


@plt.rc_context(PLAIN_TEXT)
def draw_episode(
    scene: Scene,
    navigator: Navigator,
    figure: EpisodeFigure,
    path: AgentPath,
    out_path: str | Path,
    options: FigureOptions = FigureOptions(),
) -> Path:
    """Draw the episode map and write it in the format its suffix names (PNG, PDF, SVG).

    Raises:
        ConfigError: an unknown suffix (nothing is drawn or written).
    """
    form = image_format(out_path)
    fig, _ = episode_plot(scene, navigator, figure, path, options)
    try:
        buffer = io.BytesIO()
        fig.savefig(buffer, format=form, dpi=options.dpi, metadata=_metadata(form))
    finally:
        plt.close(fig)
    out = Path(out_path)
    atomic_write_bytes(out, buffer.getvalue())
    return out


def _metadata(form: str) -> dict[str, Any]:
    """No creation date in PDF / SVG, so the same map is the same bytes."""
    if form == "pdf":
        return {"CreationDate": None, "Creator": "condvln"}
    if form == "svg":
        return {"Date": None, "Creator": "condvln"}
    return {"Software": "condvln"}


def scene_file(dataset_dir: Path, scene_id: str) -> Path:
    """The scene file of an episode, refusing any path that leaves the dataset folder."""
    root = resolve_path(dataset_dir, field="scene_id", record=scene_id)
    path = resolve_path(root / scene_id, field="scene_id", record=scene_id)
    if not path.is_relative_to(root):
        raise FormatError("scene path leaves the dataset folder", field="scene_id", record=scene_id)
    return path


def viz_episode(
    run_dir: str | Path,
    episode_id: int,
    out_path: str | Path,
    *,
    dataset_dir: str | Path | None = None,
    options: FigureOptions = FigureOptions(),
) -> tuple[Path, EpisodeFigure, AgentPath]:
    """``condvln viz``: the map of one episode of a ``condvln run`` folder (:func:`load_episode`),
    written in the format the suffix of ``out_path`` names (``.png``, ``.pdf``, ``.svg``).

    Raises:
        ConfigError: an unknown image suffix (before any work), no such episode in the split,
            or no trajectory for it.
        FormatError: unreadable run or dataset files.
    """
    image_format(out_path)
    navigator, figure, path = load_episode(run_dir, episode_id, dataset_dir=dataset_dir)
    out = draw_episode(navigator.scene, navigator, figure, path, out_path, options)
    return out, figure, path


def load_episode(
    run_dir: str | Path, episode_id: int, *, dataset_dir: str | Path | None = None
) -> tuple[Navigator, EpisodeFigure, AgentPath]:
    """The navigator of the scene, the figure and the agent's path of one episode of a run.

    The run's ``manifest.json`` names the dataset and split; the episode is scored with the
    evaluator's own code, so the subgoal states and the branch match ``condvln evaluate``.

    Raises:
        ConfigError: no such episode in the split, or no trajectory for it.
        FormatError: unreadable run or dataset files.
    """
    from condvln.evaluation.evaluate import SceneGeodesic, load_split_episodes, score_prediction
    from condvln.evaluation.predictions import read_predictions
    from condvln.evaluation.reference import fidelity_reference, gt_locations

    run_dir = Path(run_dir)
    manifest = read_json(run_dir / "manifest.json")
    if not isinstance(manifest, Mapping):
        raise FormatError(
            "must be a JSON object (the run's manifest)", file=str(run_dir / "manifest.json")
        )
    dataset = Path(dataset_dir or str(manifest.get("dataset") or ""))
    split = str(manifest.get("split"))
    if split not in SPLITS:
        raise FormatError(
            f"names unknown split {split!r}", file=str(run_dir / "manifest.json"), field="split"
        )
    episodes = {e["episode_id"]: e for e in load_split_episodes(dataset, split)}
    if episode_id not in episodes:
        raise ConfigError(f"episode {episode_id} is not in split {split!r} of {dataset}")
    trajectory = read_predictions(run_dir / "trajectories.jsonl").get(episode_id)
    if trajectory is None:
        raise ConfigError(f"{run_dir}: no trajectory for episode {episode_id}")
    episode = episodes[episode_id]
    figure = episode_figure(episode)
    geodesic = SceneGeodesic(scene_file(dataset, figure.scene_id))
    reference, _ = fidelity_reference(episode, gt_locations(dataset, split)[0])
    record = score_prediction(episode, trajectory, geodesic, reference)
    agent, name = str(manifest.get("agent", "")), run_dir.resolve().name
    label = name if agent in ("", name) else f"{name} (agent {agent})"
    path = agent_path(label, trajectory.positions, record, trajectory.stop, trajectory.notes)
    return geodesic.navigator, figure, path


def layers_json(figure: EpisodeFigure) -> dict[str, Any]:
    """The episode figure as JSON for the report (branch labels rendered)."""
    data = asdict(figure)
    data["caption"] = figure_caption(figure)
    data["gold"] = figure.gold_index
    data["branches"] = [
        {"object_id": b.object_id, "position": b.position, "gold": b.gold, "label": b.label(i)}
        for i, b in enumerate(figure.branches)
    ]
    return data


def map_extent(navigator: Navigator) -> tuple[float, float, float, float]:
    """``(x0, z0, width, depth)`` of the map area: the navigator's grid, else the room floors."""
    if isinstance(navigator, GridNavigator):
        frame = navigator.area.frame
        rows, cols = frame.shape
        return (*frame.origin, cols * frame.cell_size, rows * frame.cell_size)
    xs = [p[0] for room in navigator.scene.rooms for p in room.floor_polygon or ()]
    zs = [p[1] for room in navigator.scene.rooms for p in room.floor_polygon or ()]
    if not xs:
        raise ConfigError(f"scene {navigator.scene.id!r} has no floor polygon to draw")
    return (min(xs), min(zs), max(max(xs) - min(xs), 1.0), max(max(zs) - min(zs), 1.0))


@plt.rc_context(PLAIN_TEXT)
def scene_background(
    navigator: Navigator, *, pixels_per_metre: float = 80.0
) -> tuple[bytes, tuple[float, float, float, float]]:
    """The scene layers alone, filling the image exactly: ``(PNG bytes, map_extent)``.

    Pixel ``(0, 0)`` is the north-west corner ``(x0, z0)``, so overlays can be placed in metres
    (the HTML report draws its SVG layers in a ``viewBox`` equal to the extent). The PNG is
    palette-quantised to keep the report small.
    """
    from PIL import Image

    x0, z0, width, depth = extent = map_extent(navigator)
    fig = plt.figure(figsize=(width * pixels_per_metre / 100, depth * pixels_per_metre / 100))
    try:
        ax = fig.add_axes((0.0, 0.0, 1.0, 1.0))
        draw_scene(ax, navigator.scene, navigator, show_labels=True)
        ax.set_xlim(x0, x0 + width)
        ax.set_ylim(z0 + depth, z0)
        ax.set_aspect("auto")
        ax.axis("off")
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=100)
    finally:
        plt.close(fig)
    image = Image.open(io.BytesIO(buffer.getvalue())).convert("RGB").quantize(colors=64)
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=True)
    return out.getvalue(), extent
