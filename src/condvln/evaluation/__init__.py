"""Evaluation: per-episode metrics, branch diagnostics and aggregation.

The pieces, bottom-up: :mod:`.spaces` (continuous / nav-graph distances), :mod:`.dtw` (exact
DTW kernel), :mod:`.metrics` (pure per-episode metric functions),
:mod:`.diagnostics` (wrong branch, failure categories, no-op patterns), :mod:`.reference`
(the dense ``_gt`` reference of continuous nDTW / SDTW / CLS), :mod:`.scoring`
(:func:`score_episode`: one flat record per episode), :mod:`.specs` (the metric registry: how
each metric aggregates, the ``condvln.metrics`` entry points) and :mod:`.aggregate` (means with
confidence intervals, breakdowns, invariant checks).
"""

from condvln.evaluation.metrics import DEFAULT_OPTIONS, MetricOptions
from condvln.evaluation.scoring import RECORD_KEYS, invalid_episode, score_episode
from condvln.evaluation.spaces import ContinuousSpace, GraphSpace, MetricSpace
from condvln.evaluation.specs import METRICS, EpisodeResult, MetricSpec

__all__ = [
    "DEFAULT_OPTIONS",
    "METRICS",
    "RECORD_KEYS",
    "ContinuousSpace",
    "EpisodeResult",
    "GraphSpace",
    "MetricOptions",
    "MetricSpace",
    "MetricSpec",
    "invalid_episode",
    "score_episode",
]
