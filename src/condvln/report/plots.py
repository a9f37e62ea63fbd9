"""The report's charts, drawn with matplotlib (Agg) and returned as PNG bytes.

* :func:`coverage_plot` — the evaluated episodes per source × category, per depth and per chain
  length (the paper's Figure 1 view of a dataset);
* :func:`sweep_plot` — SR, BSA, CSR and branch accuracy in the Table 3 cells (depth d at ℓ = 1,
  chain length ℓ at d = 1) with 95 % intervals: small multiples, one panel per run, so ten runs
  read as well as two;
* :func:`failure_plot` — the share of episodes that succeed or fail in each failure category;
* :func:`chance_plot` — branch accuracy of each run, with its 95 % interval, against chance.

Values are percentages of per-episode means (:func:`~condvln.evaluation.tables.percent_mean`),
so they agree with Tables 2 and 3 and with ``metrics.json``; intervals are those of
``metrics.json`` (:mod:`condvln.evaluation.aggregate`: Wilson for rates, a percentile bootstrap
for BSA). Run names and categories are drawn as plain text
(:data:`~condvln.nav.render.PLAIN_TEXT`).
"""

from __future__ import annotations

import io
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from condvln.evaluation.aggregate import aggregate_values, wilson_interval
from condvln.evaluation.specs import METRICS
from condvln.evaluation.tables import FAILURE_CATEGORIES, percent_mean
from condvln.nav.render import PLAIN_TEXT

Records = Sequence[Mapping[str, Any]]
Runs = Sequence[tuple[str, Records]]

SWEEP_METRICS = (("SR", "success"), ("BSA", "bsa"), ("CSR", "csr"), ("BA", "branch_correct"))
"""Panels of :func:`sweep_plot`: label and per-episode record key."""

CELLS = (("d1 ℓ1", 1, 1), ("d2", 2, 1), ("d3", 3, 1), ("ℓ2", 1, 2), ("ℓ3", 1, 3))
"""The Table 3 cells of :func:`sweep_plot`: label, depth, chain (the depth sweep, then the
chain sweep from the shared d1 ℓ1 cell)."""

MARKERS = ("o", "s", "^", "D")
PANELS_PER_ROW = 5


def png(fig: Figure) -> bytes:
    """The figure as PNG bytes (the figure is closed)."""
    buffer = io.BytesIO()
    try:
        fig.savefig(buffer, format="png", bbox_inches="tight", dpi=90)
    finally:
        plt.close(fig)
    return buffer.getvalue()


def _sorted_keys(values: Counter) -> list[Any]:
    return sorted(values, key=lambda v: (v is None, str(v) if not isinstance(v, int) else v))


@plt.rc_context(PLAIN_TEXT)
def coverage_plot(records: Records) -> bytes:
    """Episodes per source × category (annotated heat map), per depth and per chain length."""
    sources = _sorted_keys(Counter(r.get("source_dataset") for r in records))
    categories = _sorted_keys(Counter(r.get("category") for r in records))
    counts = np.zeros((len(sources), len(categories)), dtype=int)
    for r in records:
        counts[sources.index(r.get("source_dataset")), categories.index(r.get("category"))] += 1
    fig, axes = plt.subplots(
        1, 3, figsize=(13, 3.2), gridspec_kw={"width_ratios": [2.4, 1, 1]}, layout="constrained"
    )
    ax = axes[0]
    ax.imshow(counts, cmap="Blues", aspect="auto", vmin=0)
    ax.set_xticks(range(len(categories)), [str(c) for c in categories], rotation=20)
    ax.set_yticks(range(len(sources)), [str(s) for s in sources])
    for (i, j), n in np.ndenumerate(counts):
        colour = "white" if n > 0.6 * counts.max() else "#222222"
        ax.text(j, i, str(n), ha="center", va="center", color=colour, fontsize=10)
    ax.set_title("episodes per source × category")
    for ax, key, title in ((axes[1], "depth", "logical depth d"), (axes[2], "chain", "chain ℓ")):
        per = Counter(r.get(key) for r in records)
        keys = _sorted_keys(per)
        bars = ax.bar([str(k) for k in keys], [per[k] for k in keys], color="#4c78a8")
        ax.bar_label(bars, fontsize=9)
        ax.set_title(f"episodes per {title}")
        ax.margins(y=0.15)
    return png(fig)


def interval(records: Records, key: str, seed: int = 0) -> tuple[float, float, float] | None:
    """``(mean, low, high)`` in % of ``key`` over the records where it is set, with the 95 %
    interval ``metrics.json`` gives it (Wilson for a rate, bootstrap for BSA); ``None`` without
    values. Keys that are no registered metric (``branch_correct``) are rates: Wilson.

    >>> records = [{"success": 1}, {"success": 0}, {"success": 1}, {"success": None}]
    >>> [round(v, 1) for v in interval(records, "success")]
    [66.7, 20.8, 93.9]
    """
    values = [r.get(key) for r in records]
    if all(v is None for v in values):
        return None
    if key in METRICS.names():
        a = aggregate_values(key, values, spec=METRICS.get(key), seed=seed)
        mean, lo, hi = a.mean, a.ci_low, a.ci_high
    else:
        kept = [float(v) for v in values if v is not None]
        mean, (lo, hi) = sum(kept) / len(kept), wilson_interval(round(sum(kept)), len(kept))
    lo, hi = (mean if v is None else v for v in (lo, hi))
    return 100.0 * mean, 100.0 * lo, 100.0 * hi


def _cell(records: Records, key: str, depth: int, chain: int) -> tuple[float, float, float]:
    chosen = [r for r in records if r.get("depth") == depth and r.get("chain") == chain]
    return interval(chosen, key) or (np.nan, np.nan, np.nan)


def sweep_figure(runs: Runs) -> Figure:
    """Small multiples of the Table 3 sweeps: one panel per run, SR / BSA / CSR / BA in each
    cell with its 95 % interval (the caller closes the figure)."""
    cols = max(1, min(len(runs), PANELS_PER_ROW))
    rows = max(1, math.ceil(len(runs) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(2.9 * cols + 0.4, 2.5 * rows + 0.9),
                             sharey=True, squeeze=False, layout="constrained")  # fmt: skip
    colours = plt.get_cmap("tab10")
    for ax, (name, records) in zip(axes.flat, runs, strict=False):
        for k, (label, key) in enumerate(SWEEP_METRICS):
            cells = np.array([_cell(records, key, d, c) for _, d, c in CELLS])
            x = np.arange(len(CELLS)) + (k - 1.5) * 0.1  # side by side, not on top of each other
            for part in (slice(0, 3), slice(3, 5)):  # the depth sweep, then the chain sweep
                mean, lo, hi = cells[part].T
                ax.errorbar(x[part], mean, yerr=[mean - lo, hi - mean], fmt=f"{MARKERS[k]}-",
                            ms=4, lw=1.2, capsize=2, color=colours(k),
                            label=label if part.start == 0 else None)  # fmt: skip
        ax.axvline(2.5, color="#999999", lw=0.8, ls=":")
        ax.set_title(name, fontsize=10)
        ax.set_xticks(range(len(CELLS)), [c[0] for c in CELLS], fontsize=8)
        ax.set_ylim(-3, 103)
        ax.grid(alpha=0.3)
    for ax in axes.flat[len(runs) :]:
        ax.set_visible(False)
    for row in axes:
        row[0].set_ylabel("%")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=len(SWEEP_METRICS))
    fig.suptitle("by depth d (ℓ = 1) and chain length ℓ (d = 1), with 95 % intervals", fontsize=10)
    return fig


@plt.rc_context(PLAIN_TEXT)
def sweep_plot(runs: Runs) -> bytes:
    """PNG of :func:`sweep_figure`."""
    return png(sweep_figure(runs))


@plt.rc_context(PLAIN_TEXT)
def failure_plot(runs: Runs) -> bytes:
    """Share of each run's episodes that succeed or fail in each failure category."""
    parts = ("success", *FAILURE_CATEGORIES)
    fig, ax = plt.subplots(figsize=(9, 0.5 * len(runs) + 1.6), layout="constrained")
    names = [name for name, _ in runs]
    left = np.zeros(len(runs))
    colours = plt.get_cmap("tab10")
    for k, part in enumerate(parts):
        shares = np.array([
            100.0 * sum((r.get("failure_category") or "success") == part for r in recs)
            / max(len(recs), 1)
            for _, recs in runs
        ])  # fmt: skip
        ax.barh(names, shares, left=left, label=part, color=colours(k))
        left += shares
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel("% of episodes")
    ax.set_title("outcome and failure category shares")
    fig.legend(loc="outside lower center", ncol=len(parts), fontsize=8)
    return png(fig)


@plt.rc_context(PLAIN_TEXT)
def chance_plot(runs: Runs) -> bytes:
    """Branch accuracy (ended nearest the gold leaf goal) of each run against chance."""
    names = [name for name, _ in runs]
    cells = [interval(recs, "branch_correct") or (np.nan,) * 3 for _, recs in runs]
    accuracy = [None if np.isnan(c[0]) else c[0] for c in cells]
    chance = [percent_mean(recs, "branch_chance") for _, recs in runs]
    fig, ax = plt.subplots(figsize=(9, 0.5 * len(runs) + 1.4), layout="constrained")
    y = np.arange(len(runs))
    mean, lo, hi = np.array(cells, dtype=np.float64).reshape(-1, 3).T
    ax.barh(y, mean, xerr=[mean - lo, hi - mean], color="#4c78a8", label="BA (95 % interval)",
            error_kw={"ecolor": "#333333", "capsize": 3, "lw": 1})  # fmt: skip
    for i, c in enumerate(chance):
        if c is not None:
            ax.plot([c, c], [i - 0.4, i + 0.4], color="#d62728", lw=2.5,
                    label="chance (1 / branches)" if i == 0 else None)  # fmt: skip
    for i, a in enumerate(accuracy):
        if a is not None:
            ax.text(hi[i] + 1, i, f"{a:.1f}", va="center", fontsize=9)
    ax.set_yticks(y, names)
    ax.invert_yaxis()
    ax.set_xlim(0, 105)
    ax.set_xlabel("% of episodes")
    ax.set_title("branch accuracy against chance")
    ax.legend(loc="lower right", fontsize=8)
    return png(fig)
