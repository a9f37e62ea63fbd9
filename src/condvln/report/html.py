"""``condvln report``: one self-contained HTML file of a results folder.

The page opens offline: every image is an inline ``data:`` URI, the script and style sheet are
this package's own (``templates/``), nothing is fetched. Sections:

1. the runs (agent, split, episode counts);
2. dataset coverage of the evaluated episodes (the paper's Figure 1 view);
3. Tables 2 and 3 (:mod:`condvln.evaluation.tables`, the same code as ``table2.md``) and every
   aggregate of every run's ``metrics.json`` with its 95 % interval (whatever metrics it holds);
4. plots (:mod:`.plots`): the depth / chain sweeps, failure categories, branch accuracy vs chance;
5. a filterable episode table (run, category, failure category, success, id); a click on a row
   opens that episode's map — the scene drawn once per scene (:func:`~.viz.scene_background`)
   and the episode's layers (:func:`~.viz.episode_figure`, :func:`~.viz.agent_path`) drawn over
   it in SVG by the page's script, with the caption of ``condvln viz``.

Maps need each run's dataset and trajectories (found through the evaluation manifest, see
:mod:`.results`); a run without them still gets its tables and rows, marked "no map".
"""

from __future__ import annotations

import base64
import html
import importlib.resources
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import orjson

from condvln import __version__
from condvln.errors import ConfigError
from condvln.evaluation.metrics import METRICS
from condvln.evaluation.tables import ResultTable, table2, table3
from condvln.io import atomic_write_bytes, read_json
from condvln.report import plots
from condvln.report.results import RunResult, load_results
from condvln.report.viz import (
    STYLE,
    EpisodeFigure,
    agent_path,
    episode_figure,
    layers_json,
    outcome_text,
    scene_background,
    scene_file,
)

Progress = Callable[[str, int], Callable[[], None]]
"""``progress(label, total)`` returning an ``advance()`` callback (as the other commands)."""

ROW_KEYS = {
    "sr": "success",
    "spl": "spl",
    "bsa": "bsa",
    "csr": "csr",
    "ba": "branch_correct",
    "steps": "steps",
}
"""Episode table columns taken from each record (short key → record key)."""

CMAP_STOPS = 32
"""Colours sampled from the trajectory colour map for the page's script."""

PAGE_ROWS = 500
"""Episode-table rows put in the page at a time ("show more" adds as many): laying out all
5,328 rows of the default benchmark would take seconds."""


@dataclass(frozen=True)
class ReportSummary:
    """What :func:`write_report` wrote."""

    path: Path
    size: int
    runs: int
    rows: int
    maps: int
    scenes: int
    warnings: tuple[str, ...]


def _template(name: str) -> str:
    return importlib.resources.files("condvln.report").joinpath("templates", name).read_text()


def data_uri(png: bytes) -> str:
    """A ``data:image/png;base64,…`` URI."""
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def _esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _img(png: bytes, alt: str, cls: str = "plot") -> str:
    return f'<img class="{cls}" alt="{_esc(alt)}" src="{data_uri(png)}">'


def _number(value: float | None, decimals: int) -> str:
    return "–" if value is None else f"{value:.{decimals}f}"


def result_table_html(table: ResultTable, table_id: str) -> str:
    """A :class:`ResultTable` as an HTML table; each cell carries its exact value.

    Cells: ``<td data-col="<group> <column>" data-value="<repr or empty>">``; rows carry
    ``data-run``.
    """
    groups = "".join(
        f'<th colspan="{len(cols)}">{_esc(group)}</th>' for group, cols in table.groups
    )
    columns = "".join(f"<th>{_esc(c)}</th>" for _, cols in table.groups for c in cols)
    body = []
    for row in table.rows:
        cells = "".join(
            f'<td data-col="{_esc(col)}" data-value="{"" if v is None else repr(v)}">'
            f"{_number(v, table.decimals)}</td>"
            for col, v in zip(table.columns, row.values, strict=True)
        )
        body.append(f'<tr data-run="{_esc(row.name)}"><th>{_esc(row.name)}</th>'
                    f"<td>{row.n}</td>{cells}</tr>")  # fmt: skip
    return (
        f'<div class="scroll"><table id="{table_id}" class="results">'
        f"<caption>{_esc(table.title)}</caption>"
        f'<thead><tr><th rowspan="2">run</th><th rowspan="2">N</th>{groups}</tr>'
        f"<tr>{columns}</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
    )


def _description(metric: str) -> str:
    try:
        return METRICS.get(metric).description
    except ConfigError:
        return ""


def metrics_table_html(runs: Sequence[RunResult]) -> str:
    """Every aggregate in the runs' ``metrics.json``: mean and 95 % interval, a column per run."""
    names: list[str] = []
    for run in runs:
        names += [k for k in run.metrics["metrics"] if k not in names]
    head = "".join(f"<th>{_esc(r.name)}</th>" for r in runs)
    body = []
    for name in names:
        cells = []
        for run in runs:
            agg = run.metrics["metrics"].get(name) or {}
            mean, lo, hi = agg.get("mean"), agg.get("ci_low"), agg.get("ci_high")
            interval = "" if lo is None or hi is None else f" [{lo:.3f}, {hi:.3f}]"
            cells.append(
                f'<td data-run="{_esc(run.name)}" data-metric="{_esc(name)}" '
                f'data-value="{"" if mean is None else repr(mean)}">{_number(mean, 3)}'
                f'<span class="ci">{interval}</span> <span class="n">n={agg.get("n", 0)}</span>'
                "</td>"
            )
        body.append(f'<tr><th title="{_esc(_description(name))}">{_esc(name)}</th>'
                    f"{''.join(cells)}</tr>")  # fmt: skip
    return (
        '<div class="scroll"><table id="metrics" class="results">'
        "<caption>Every aggregate of metrics.json: mean [95 % interval], episodes counted</caption>"
        f"<thead><tr><th>metric</th>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
    )


def _runs_html(runs: Sequence[RunResult]) -> str:
    rows = []
    for run in runs:
        counts = run.metrics.get("counts", {})
        maps = (
            "yes"
            if run.dataset_dir and run.predictions
            else "no (dataset or trajectories not found)"
        )
        rows.append(
            f"<tr><th>{_esc(run.name)}</th><td>{_esc(run.split)}</td>"
            f"<td>{counts.get('episodes', len(run.records))}</td><td>{counts.get('missing', 0)}</td>"
            f"<td>{_esc(maps)}</td><td><code>{_esc(run.eval_dir)}</code></td></tr>"
        )
    return (
        '<div class="scroll"><table id="runs" class="results"><thead><tr><th>run</th>'
        "<th>split</th><th>episodes</th><th>missing</th><th>maps</th><th>evaluation folder</th>"
        f"</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
    )


def _dataset_html(runs: Sequence[RunResult]) -> str:
    stats_file = next(
        (r.dataset_dir / "stats.json" for r in runs if r.dataset_dir is not None), None
    )
    if stats_file is None or not stats_file.is_file():
        return ""
    stats = read_json(stats_file)
    splits = ", ".join(f"{k} {v}" for k, v in (stats.get("splits") or {}).items())
    return (
        f"<p>Whole dataset: {stats.get('episodes', '?')} episodes over "
        f"{stats.get('scenes', '?')} scenes ({_esc(splits)}).</p>"
    )


class _MapData:
    """The report's map data: scenes drawn once, episode figures once, one path per row."""

    def __init__(self) -> None:
        self.scenes: list[dict[str, Any]] = []
        self.episodes: list[dict[str, Any]] = []
        self._figures: list[EpisodeFigure] = []
        self._scene_index: dict[Path, int] = {}
        self._episode_index: dict[tuple[Path, str, Any], int] = {}
        self._splits: dict[tuple[Path, str], dict[Any, Mapping[str, Any]]] = {}

    def split(self, dataset: Path, split: str) -> dict[Any, Mapping[str, Any]]:
        """The split's episodes by id (read once)."""
        from condvln.evaluation.evaluate import load_split_episodes

        key = (dataset.resolve(), split)
        if key not in self._splits:
            episodes = load_split_episodes(dataset, split)
            self._splits[key] = {e["episode_id"]: e for e in episodes}
        return self._splits[key]

    def scene(self, dataset: Path, scene_id: str) -> int:
        """Index of the scene's background in :attr:`scenes` (drawn on first use)."""
        from condvln.evaluation.evaluate import NAV_CONFIG
        from condvln.nav import GridNavigator
        from condvln.scene.serialize import load_scene

        path = scene_file(dataset, scene_id)
        if path not in self._scene_index:
            navigator = GridNavigator(load_scene(path), config=NAV_CONFIG)
            png, extent = scene_background(navigator)
            self._scene_index[path] = len(self.scenes)
            self.scenes.append({"id": scene_id, "image": data_uri(png), "extent": extent})
        return self._scene_index[path]

    def episode(
        self, dataset: Path, split: str, episode: Mapping[str, Any]
    ) -> tuple[int, EpisodeFigure]:
        """Index of the episode's figure in :attr:`episodes` (added on first use) and the figure."""
        key = (dataset.resolve(), split, episode["episode_id"])
        if key not in self._episode_index:
            figure = episode_figure(episode)
            data = layers_json(figure)
            data["scene"] = self.scene(dataset, figure.scene_id)
            self._episode_index[key] = len(self.episodes)
            self.episodes.append(data)
            self._figures.append(figure)
        index = self._episode_index[key]
        return index, self._figures[index]


def _round(value: Any) -> Any:
    return round(value, 4) if isinstance(value, float) else value


def _rows(
    runs: Sequence[RunResult], maps: _MapData, progress: Progress | None
) -> tuple[list[dict[str, Any]], list[str]]:
    from condvln.evaluation.predictions import read_predictions

    rows, warnings = [], []
    for r, run in enumerate(runs):
        advance = progress(f"report {run.name}", len(run.records)) if progress else None
        trajectories, episodes = {}, {}
        if run.dataset_dir is not None and run.predictions is not None:
            trajectories = read_predictions(run.predictions)
            episodes = maps.split(run.dataset_dir, run.split)
        else:
            warnings.append(f"{run.name}: no maps (dataset or trajectories not found)")
        for record in run.records:
            eid = record["episode_id"]
            row = {"r": r, "id": eid, "scene": record.get("scene_id"), "cat": record.get("category"),
                   "d": record.get("depth"), "l": record.get("chain"),
                   "fail": record.get("failure_category"), "e": None}  # fmt: skip
            row |= {short: _round(record.get(key)) for short, key in ROW_KEYS.items()}
            trajectory, episode = trajectories.get(eid), episodes.get(eid)
            if trajectory is not None and episode is not None and run.dataset_dir is not None:
                index, figure = maps.episode(run.dataset_dir, run.split, episode)
                path = agent_path(
                    run.name, trajectory.positions, record, trajectory.stop, trajectory.notes
                )
                flat = [round(c, 2) for point in path.trajectory for c in point]
                row |= {"e": index, "t": flat, "stop": path.stop, "k": path.subgoals_reached,
                        "end": path.ended_branch, "out": outcome_text(figure, path)}  # fmt: skip
                if path.reasoning:
                    row["why"] = list(path.reasoning)
            rows.append(row)
            if advance:
                advance()
    return rows, warnings


def _json_script(data: Any) -> str:
    text = orjson.dumps(data).decode()
    return text.replace("</", "<\\/")


def build_report(
    runs: Sequence[RunResult],
    *,
    title: str,
    progress: Progress | None = None,
    page_rows: int = PAGE_ROWS,
) -> tuple[str, dict[str, Any], list[str]]:
    """The report page of ``runs``, its embedded data and warnings (runs without maps).

    The data holds ``runs``, ``style``, ``cmap``, ``scenes``, ``episodes`` and ``rows``.
    """
    named = [(run.name, run.records) for run in runs]
    maps = _MapData()
    rows, warnings = _rows(runs, maps, progress)
    cmap = plt.get_cmap(STYLE["time_cmap"])
    data = {
        "runs": [run.name for run in runs],
        "style": {k: v for k, v in STYLE.items() if k != "time_cmap"},
        "cmap": [matplotlib_hex(cmap(i / (CMAP_STOPS - 1))) for i in range(CMAP_STOPS)],
        "scenes": maps.scenes,
        "episodes": maps.episodes,
        "rows": rows,
        "page": page_rows,
    }
    first = runs[0].records
    sections = {
        "title": _esc(title),
        "version": _esc(__version__),
        "runs": _runs_html(runs),
        "warnings": "".join(f'<p class="warning">{_esc(w)}</p>' for w in warnings),
        "dataset": _dataset_html(runs),
        "coverage": _img(plots.coverage_plot(first), "dataset coverage"),
        "table2": result_table_html(table2(named), "table2"),
        "table3": result_table_html(table3(named), "table3"),
        "metrics": metrics_table_html(runs),
        "sweeps": _img(plots.sweep_plot(named), "metrics against depth and chain"),
        "failures": _img(plots.failure_plot(named), "failure categories"),
        "chance": _img(plots.chance_plot(named), "branch accuracy against chance"),
        "css": _template("report.css"),
        "js": _template("report.js"),
        "data": _json_script(data),
    }
    page = _template("report.html")
    for key, value in sections.items():
        page = page.replace("{{" + key + "}}", value)
    return page, data, warnings


def matplotlib_hex(rgba: Sequence[float]) -> str:
    """``#rrggbb`` of an RGBA tuple in 0..1."""
    return "#" + "".join(f"{round(255 * c):02x}" for c in rgba[:3])


def write_report(
    results: str | Path,
    out: str | Path,
    *,
    progress: Progress | None = None,
    page_rows: int = PAGE_ROWS,
) -> ReportSummary:
    """Write the HTML report of a results folder (see :mod:`.results` for the layouts).

    Args:
        results: a benchmark folder or one ``condvln evaluate`` output folder.
        out: the HTML file to write (atomically).
        progress: ``progress(label, total)`` returning an ``advance()`` callback.
        page_rows: episode-table rows shown at a time.

    Raises:
        ConfigError: no evaluation output in ``results``.
        FormatError: unreadable results, dataset or predictions files.
    """
    results, out = Path(results), Path(out)
    runs = load_results(results)
    page, data, warnings = build_report(
        runs,
        title=f"CondVLN report: {results.resolve().name}",
        progress=progress,
        page_rows=page_rows,
    )
    encoded = page.encode()
    atomic_write_bytes(out, encoded)
    return ReportSummary(
        path=out,
        size=len(encoded),
        runs=len(runs),
        rows=len(data["rows"]),
        maps=sum(1 for row in data["rows"] if row["e"] is not None),
        scenes=len(data["scenes"]),
        warnings=tuple(warnings),
    )
