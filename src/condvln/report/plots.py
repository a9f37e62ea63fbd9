"""The report's charts, drawn with matplotlib (Agg) and returned as PNG bytes.

* :func:`coverage_plot` — the evaluated episodes per source × category, per depth and per chain
  length (the paper's Figure 1 view of a dataset);
* :func:`sweep_plot` — SR, BSA, CSR and branch accuracy against depth d (at ℓ = 1) and chain
  length ℓ (at d = 1), one line per run (the Table 3 sweeps);
* :func:`failure_plot` — the share of episodes that succeed or fail in each failure category;
* :func:`chance_plot` — branch accuracy of each run against its chance level.

Values are percentages of per-episode means (:func:`~condvln.evaluation.tables.percent_mean`),
so they agree with Tables 2 and 3 and with ``metrics.json``. Run names and categories are drawn
as plain text (:data:`~condvln.nav.render.PLAIN_TEXT`).
"""

from __future__ import annotations

import io
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from condvln.evaluation.tables import FAILURE_CATEGORIES, percent_mean
from condvln.nav.render import PLAIN_TEXT

Records = Sequence[Mapping[str, Any]]
Runs = Sequence[tuple[str, Records]]

SWEEP_METRICS = (("SR", "success"), ("BSA", "bsa"), ("CSR", "csr"), ("BA", "branch_correct"))
"""Panels of :func:`sweep_plot`: label and per-episode record key."""

DEPTHS = (1, 2, 3)
CHAINS = (1, 2, 3)


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


def _sweep_value(records: Records, key: str, depth: int, chain: int) -> float:
    chosen = [r for r in records if r.get("depth") == depth and r.get("chain") == chain]
    value = percent_mean(chosen, key)
    return np.nan if value is None else value


@plt.rc_context(PLAIN_TEXT)
def sweep_plot(runs: Runs) -> bytes:
    """SR / BSA / CSR / BA against depth (ℓ = 1) and chain length (d = 1), a line per run."""
    fig, axes = plt.subplots(
        2, len(SWEEP_METRICS), figsize=(13, 6), sharey=True, layout="constrained"
    )
    for col, (label, key) in enumerate(SWEEP_METRICS):
        for name, records in runs:
            depth = [_sweep_value(records, key, d, 1) for d in DEPTHS]
            chain = [_sweep_value(records, key, 1, c) for c in CHAINS]
            axes[0, col].plot(DEPTHS, depth, "o-", label=name)
            axes[1, col].plot(CHAINS, chain, "o-", label=name)
        axes[0, col].set_title(f"{label} vs depth d (ℓ = 1)")
        axes[1, col].set_title(f"{label} vs chain ℓ (d = 1)")
        for row, ticks, xlabel in ((0, DEPTHS, "d"), (1, CHAINS, "ℓ")):
            axes[row, col].set_xticks(ticks)
            axes[row, col].set_xlabel(xlabel)
            axes[row, col].set_ylim(-3, 103)
            axes[row, col].grid(alpha=0.3)
    axes[0, 0].set_ylabel("%")
    axes[1, 0].set_ylabel("%")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=min(len(runs), 6))
    return png(fig)


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
    accuracy = [percent_mean(recs, "branch_correct") for _, recs in runs]
    chance = [percent_mean(recs, "branch_chance") for _, recs in runs]
    fig, ax = plt.subplots(figsize=(9, 0.5 * len(runs) + 1.4), layout="constrained")
    y = np.arange(len(runs))
    ax.barh(y, [np.nan if a is None else a for a in accuracy], color="#4c78a8", label="BA")
    for i, c in enumerate(chance):
        if c is not None:
            ax.plot([c, c], [i - 0.4, i + 0.4], color="#d62728", lw=2.5,
                    label="chance (1 / branches)" if i == 0 else None)  # fmt: skip
    for i, a in enumerate(accuracy):
        if a is not None:
            ax.text(a + 1, i, f"{a:.1f}", va="center", fontsize=9)
    ax.set_yticks(y, names)
    ax.invert_yaxis()
    ax.set_xlim(0, 105)
    ax.set_xlabel("% of episodes")
    ax.set_title("branch accuracy against chance")
    ax.legend(loc="lower right", fontsize=8)
    return png(fig)
