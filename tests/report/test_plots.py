"""The report's plots: 95 % intervals as ``metrics.json`` computes them, readable with 10 runs."""

from __future__ import annotations

import io

import matplotlib.pyplot as plt
import numpy as np
import pytest
from PIL import Image

from condvln.evaluation.aggregate import aggregate_values, wilson_interval
from condvln.evaluation.specs import METRICS
from condvln.report import plots


def _records(seed: int, n: int = 60) -> list[dict]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        depth, chain = [(1, 1), (2, 1), (3, 1), (1, 2), (1, 3)][i % 5]
        success = int(rng.random() < 0.3 + 0.05 * seed)
        out.append({
            "episode_id": i, "depth": depth, "chain": chain, "success": success,
            "bsa": float(rng.random()), "csr": success if i % 7 else None,
            "branch_correct": int(rng.random() < 0.5), "branch_chance": 1 / 3,
            "failure_category": None if success else "wrong_branch",
        })  # fmt: skip
    return out


def test_intervals_are_those_of_metrics_json() -> None:
    records = _records(1)
    cell = [r for r in records if (r["depth"], r["chain"]) == (2, 1)]
    for key in ("success", "bsa", "csr"):
        expected = aggregate_values(key, [r[key] for r in cell], spec=METRICS.get(key))
        mean, lo, hi = plots.interval(cell, key)
        assert (mean, lo, hi) == pytest.approx(
            (100 * expected.mean, 100 * expected.ci_low, 100 * expected.ci_high)
        )
    hits = sum(r["branch_correct"] for r in cell)
    lo, hi = wilson_interval(hits, len(cell))
    assert plots.interval(cell, "branch_correct")[1:] == pytest.approx((100 * lo, 100 * hi))
    assert plots.interval([{"bsa": None}], "bsa") is None


def test_ten_runs_get_ten_panels_with_error_bars() -> None:
    runs = [(f"run-{k}", _records(k)) for k in range(10)]
    fig = plots.sweep_figure(runs)
    try:
        panels = [ax for ax in fig.axes if ax.get_visible()]
        assert [ax.get_title() for ax in panels] == [name for name, _ in runs]
        first = panels[0]
        # 4 metrics × 2 sweeps, each an errorbar container with its caps and bars
        assert len(first.containers) == 8
        depth_sr = first.containers[0]
        mean = depth_sr.lines[0].get_ydata()
        expected = [plots.interval([r for r in runs[0][1] if (r["depth"], r["chain"]) == (d, 1)],
                                   "success")[0] for d in (1, 2, 3)]  # fmt: skip
        assert list(mean) == pytest.approx(expected)
        segments = depth_sr.lines[2][0].get_segments()
        cell = [r for r in runs[0][1] if (r["depth"], r["chain"]) == (1, 1)]
        _, lo, hi = plots.interval(cell, "success")
        assert (segments[0][0][1], segments[0][1][1]) == pytest.approx((lo, hi))
    finally:
        plt.close(fig)
    image = Image.open(io.BytesIO(plots.sweep_plot(runs)))
    assert image.width < 2 * image.height * 2.5  # two rows of five panels, not one long strip


def test_chance_plot_draws_intervals() -> None:
    runs = [(f"run-{k}", _records(k)) for k in range(3)]
    image = Image.open(io.BytesIO(plots.chance_plot(runs)))
    assert image.format == "PNG" and image.height > 150
