"""Evaluation: per-episode metrics, branch diagnostics and aggregation.

The pieces, bottom-up: :mod:`.spaces` (continuous / nav-graph distances), :mod:`.dtw` (exact
DTW kernel), :mod:`.metrics` (pure per-episode metric functions and the metric registry),
:mod:`.diagnostics` (wrong branch, failure categories, no-op patterns), :mod:`.reference`
(the dense ``_gt`` reference of continuous nDTW / SDTW / CLS), :mod:`.scoring`
(:func:`score_episode`: one flat record per episode) and :mod:`.aggregate` (means with
confidence intervals, breakdowns, invariant checks).
"""

from condvln.evaluation.metrics import DEFAULT_OPTIONS, METRICS, MetricOptions, MetricSpec
from condvln.evaluation.scoring import RECORD_KEYS, invalid_episode, score_episode
from condvln.evaluation.spaces import ContinuousSpace, GraphSpace, MetricSpace

__all__ = [
    "DEFAULT_OPTIONS",
    "METRICS",
    "RECORD_KEYS",
    "ContinuousSpace",
    "GraphSpace",
    "MetricOptions",
    "MetricSpace",
    "MetricSpec",
    "invalid_episode",
    "score_episode",
]
