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

The page is rendered once through Jinja2 with autoescaping (``templates/report.html``): every
value from data — run and folder names, scene ids, categories, split keys, instructions — is
text, in an element or an attribute, never markup, and no value is read as a placeholder. The
page data is JSON in a ``<script type="application/json">`` element with ``<``, ``>``, ``&``
escaped (:func:`json_for_script`); the page's script puts data into the page as text only.

Maps need each run's dataset and trajectories (found through the evaluation manifest, see
:mod:`.results`); a run without them still gets its tables and rows, marked "no map".
"""

from __future__ import annotations

import base64
import importlib.resources
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2
import matplotlib.pyplot as plt
import orjson
from jinja2.utils import htmlsafe_json_dumps
from markupsafe import Markup

from condvln import __version__
from condvln.errors import ConfigError, FormatError
from condvln.evaluation.specs import METRICS
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


_ENVIRONMENT = jinja2.Environment(
    loader=jinja2.PackageLoader("condvln.report", "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
)
"""Templates render once, with autoescaping: a value from data is text wherever it lands (an
element, an attribute), and nothing in a value is ever read as a placeholder."""


def _asset(name: str) -> Markup:
    """One of this package's own template files (style sheet, script), inserted verbatim."""
    return Markup(
        importlib.resources.files("condvln.report").joinpath("templates", name).read_text()
    )


def data_uri(png: bytes) -> str:
    """A ``data:image/png;base64,…`` URI."""
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def json_for_script(data: Any) -> Markup:
    r"""``data`` as JSON for a ``<script type="application/json">`` element: ``<``, ``>``,
    ``&`` and ``'`` are ``\u`` escapes, so no string in it can close the element or open a
    comment (JSON.parse reads the escapes back).

    >>> print(json_for_script({"a": "</script><img src=x>&"}))
    {"a":"\u003c/script\u003e\u003cimg src=x\u003e\u0026"}
    """
    return htmlsafe_json_dumps(data, dumps=lambda value: orjson.dumps(value).decode())


def _number(value: float | None, decimals: int) -> str:
    return "–" if value is None else f"{value:.{decimals}f}"


def _value(value: float | None) -> str:
    """A cell's exact value for its ``data-value`` attribute (empty for none)."""
    return "" if value is None else repr(value)


def result_table_view(table: ResultTable) -> dict[str, Any]:
    """A :class:`ResultTable` for the page's ``result_table`` macro; each cell carries its
    exact value (``data-col="<group> <column>"``, ``data-value``), each row its run name."""
    rows = [
        {
            "name": row.name,
            "n": row.n,
            "cells": [
                {"col": col, "value": _value(v), "text": _number(v, table.decimals)}
                for col, v in zip(table.columns, row.values, strict=True)
            ],
        }
        for row in table.rows
    ]
    legend = "\n".join(table.captions)
    return {"title": table.title, "groups": table.groups, "rows": rows, "legend": legend}


def _description(metric: str) -> str:
    try:
        return METRICS.get(metric).description
    except ConfigError:
        return ""


def metrics_view(runs: Sequence[RunResult]) -> dict[str, Any]:
    """Every aggregate in the runs' ``metrics.json``: mean and 95 % interval, a column per run."""
    names: list[str] = []
    for run in runs:
        names += [k for k in run.metrics["metrics"] if k not in names]
    rows = []
    for name in names:
        cells = []
        for run in runs:
            agg = run.metrics["metrics"].get(name) or {}
            mean, lo, hi = agg.get("mean"), agg.get("ci_low"), agg.get("ci_high")
            interval = "" if lo is None or hi is None else f" [{lo:.3f}, {hi:.3f}]"
            cells.append({"run": run.name, "value": _value(mean), "text": _number(mean, 3),
                          "interval": interval, "n": agg.get("n", 0)})  # fmt: skip
        rows.append({"name": name, "description": _description(name), "cells": cells})
    return {"runs": [run.name for run in runs], "rows": rows}


def _runs_view(runs: Sequence[RunResult]) -> list[dict[str, Any]]:
    rows = []
    for run in runs:
        counts = run.metrics.get("counts", {})
        maps = (
            "yes"
            if run.dataset_dir and run.predictions
            else "no (dataset or trajectories not found)"
        )
        rows.append({"name": run.name, "split": run.split, "maps": maps, "folder": str(run.eval_dir),
                     "episodes": counts.get("episodes", len(run.records)),
                     "missing": counts.get("missing", 0)})  # fmt: skip
    return rows


def _dataset_view(runs: Sequence[RunResult]) -> dict[str, Any] | None:
    stats_file = next(
        (r.dataset_dir / "stats.json" for r in runs if r.dataset_dir is not None), None
    )
    if stats_file is None or not stats_file.is_file():
        return None
    stats = read_json(stats_file)
    if not isinstance(stats, dict):
        raise FormatError("must be a JSON object (the dataset statistics)", file=str(stats_file))
    splits = stats.get("splits") if isinstance(stats.get("splits"), dict) else {}
    return {
        "episodes": stats.get("episodes", "?"),
        "scenes": stats.get("scenes", "?"),
        "splits": ", ".join(f"{k} {v}" for k, v in splits.items()),
    }


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


def _plots(named: Sequence[tuple[str, Any]]) -> dict[str, dict[str, str]]:
    charts = {
        "coverage": (plots.coverage_plot(named[0][1]), "dataset coverage"),
        "sweeps": (plots.sweep_plot(named), "metrics against depth and chain"),
        "failures": (plots.failure_plot(named), "failure categories"),
        "chance": (plots.chance_plot(named), "branch accuracy against chance"),
    }
    return {key: {"src": data_uri(png), "alt": alt} for key, (png, alt) in charts.items()}


def build_report(
    runs: Sequence[RunResult],
    *,
    title: str,
    progress: Progress | None = None,
    page_rows: int = PAGE_ROWS,
) -> tuple[str, dict[str, Any], list[str]]:
    """The report page of ``runs``, its embedded data and warnings (runs without maps).

    The data holds ``runs``, ``style``, ``cmap``, ``scenes``, ``episodes`` and ``rows``. The
    page is ``templates/report.html`` rendered once with autoescaping; the data is embedded as
    :func:`json_for_script`.
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
    page = _ENVIRONMENT.get_template("report.html").render(
        title=title,
        version=__version__,
        runs=_runs_view(runs),
        warnings=warnings,
        dataset=_dataset_view(runs),
        plots=_plots(named),
        table2=result_table_view(table2(named)),
        table3=result_table_view(table3(named)),
        metrics=metrics_view(runs),
        css=_asset("report.css"),
        js=_asset("report.js"),
        data=json_for_script(data),
    )
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
