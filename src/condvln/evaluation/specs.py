"""The metric registry: every per-episode metric as data, found by entry point.

A metric is a :class:`MetricSpec` object named by an entry point of the group
``condvln.metrics`` (``[project.entry-points."condvln.metrics"]`` in a package's
``pyproject.toml``: ``my_metric = "my_package.metrics:MY_METRIC"``), CondVLN's own included
(:mod:`.builtin_metrics`). A spec says how the metric's per-episode values aggregate
(:mod:`.aggregate`), which direction is better and what it means; ``condvln metrics`` lists them
all with the package each comes from.

The built-in metrics are measured together by :func:`~.scoring.score_episode` (they share its
distances, DTW and subgoal matching), so their spec has no ``score`` function. A plugin's spec
has one: ``condvln evaluate`` calls it on every episode with an :class:`EpisodeResult` and writes
the value into the episode's record, and from there into ``metrics.json``.

>>> {"success", "spl", "bsa", "csr"} <= set(METRICS.names())
True
>>> spec = METRICS.get("spl")
>>> spec.kind, spec.higher_is_better, spec.score is None
('continuous', True, True)
>>> str(METRICS.origin("spl").value)
'condvln.evaluation.builtin_metrics:SPL'
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from numbers import Real
from typing import Any, Literal

from condvln.errors import ConfigError
from condvln.evaluation.predictions import Trajectory
from condvln.evaluation.scoring import RECORD_KEYS, Record
from condvln.registry import Registry

GROUP = "condvln.metrics"
"""The entry-point group of metrics."""

Value = float | int | bool | None
"""A per-episode metric value (``None``: undefined for this episode, left out of the mean)."""


@dataclass(frozen=True)
class EpisodeResult:
    """What a metric's ``score`` function sees of one episode.

    Attributes:
        record: The episode's :func:`~.scoring.score_episode` record (an invalid record when
            it has no prediction), plus ``off_map_positions``.
        episode: The dataset episode (VLN-CE record; CondVLN labels under ``info.condvln``).
        trajectory: The predicted trajectory (positions, headings, actions, stop, status,
            notes); ``None`` when the episode has no prediction.
    """

    record: Mapping[str, Any]
    episode: Mapping[str, Any]
    trajectory: Trajectory | None


@dataclass(frozen=True)
class MetricSpec:
    """A per-episode metric and how it is aggregated.

    Attributes:
        name: Registry name and record key (the entry point's name).
        kind: The aggregation: ``"binary"`` (0/1 rate; Wilson interval) or ``"continuous"``
            (mean; bootstrap interval).
        description: One line of legend (``condvln metrics``, reports).
        higher_is_better: ``True`` / ``False``, or ``None`` for a quantity that is neither
            (path length, steps).
        weight_key: Per-episode record key weighting the mean (``None``: plain mean).
        score: ``score(EpisodeResult) -> value`` (``None`` for the built-ins, which
            :func:`~.scoring.score_episode` measures).
    """

    name: str
    kind: Literal["binary", "continuous"]
    description: str
    higher_is_better: bool | None = True
    weight_key: str | None = None
    score: Callable[[EpisodeResult], Value] | None = None


def _check_metric(name: str, spec: object) -> MetricSpec:
    if not isinstance(spec, MetricSpec):
        raise ConfigError(f"metric '{name}' is a {type(spec).__name__}, not a MetricSpec")
    if spec.name != name:
        raise ConfigError(f"metric '{name}' calls itself '{spec.name}'")
    if spec.kind not in ("binary", "continuous"):
        raise ConfigError(f"metric '{name}': kind must be 'binary' or 'continuous'")
    if (spec.score is None) != (name in RECORD_KEYS):
        why = "needs a score function" if spec.score is None else "is a score_episode key"
        raise ConfigError(f"metric '{name}' {why}")
    return spec


METRICS: Registry[MetricSpec] = Registry("metric", group=GROUP, check=_check_metric)
"""Metrics by name: the ``condvln.metrics`` entry points of the installed packages."""


def plugin_scores(result: EpisodeResult) -> Record:
    """The values of every metric with a ``score`` function on one episode, by name.

    Raises:
        ConfigError: A metric's function failed or gave something other than a finite number,
            a bool or ``None`` (one line naming the metric, its package and the episode).
    """
    values: Record = {}
    for name in METRICS.names():
        spec = METRICS.get(name)
        if spec.score is None:
            continue
        origin = METRICS.origin(name)
        where = f"metric '{name}'" + (f" ({origin})" if origin else "")
        where += f" on episode {result.episode.get('episode_id')}"
        try:
            value = spec.score(result)
        except Exception as exc:  # the plugin's own code failed
            raise ConfigError(f"{where}: {type(exc).__name__}: {exc}".splitlines()[0]) from None
        if value is not None and not (isinstance(value, Real) and math.isfinite(value)):
            raise ConfigError(f"{where} gave {value!r}, not a finite number, a bool or None")
        values[name] = value if isinstance(value, int | float | None) else float(value)
    return values
