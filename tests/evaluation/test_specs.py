"""The metric registry (:mod:`condvln.evaluation.specs`): built-ins by entry point, checks on
plugin specs and on the values their score functions give."""

from __future__ import annotations

import numpy as np
import pytest

from condvln.errors import ConfigError
from condvln.evaluation import RECORD_KEYS, invalid_episode, specs
from condvln.evaluation.predictions import Trajectory
from condvln.evaluation.specs import METRICS, EpisodeResult, MetricSpec
from condvln.registry import Registry


def test_the_built_ins_are_entry_points_of_condvln_measured_by_score_episode() -> None:
    names = METRICS.names()
    assert len(names) == 20 and set(names) <= set(RECORD_KEYS)
    for name in names:
        assert METRICS.origin(name).package == "condvln"
        assert METRICS.origin(name).value.startswith("condvln.evaluation.builtin_metrics:")
        assert METRICS.get(name).score is None
    assert METRICS.get("distance_to_goal").higher_is_better is False
    assert METRICS.get("path_length").higher_is_better is None
    assert METRICS.get("plw_success").weight_key == "reference_path_length"


def _share(result: EpisodeResult) -> float:
    return 0.5


@pytest.mark.parametrize(
    ("name", "spec", "message"),
    [
        ("x", "not a spec", "metric 'x' is a str, not a MetricSpec"),
        ("x", MetricSpec("y", "binary", "d", score=_share), "metric 'x' calls itself 'y'"),
        ("x", MetricSpec("x", "mean", "d", score=_share), "kind must be 'binary' or 'continuous'"),
        ("x", MetricSpec("x", "binary", "d"), "metric 'x' needs a score function"),
        ("spl", MetricSpec("spl", "binary", "d", score=_share), "'spl' is a score_episode key"),
    ],
)
def test_a_bad_plugin_spec_is_refused(name: str, spec: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        specs._check_metric(name, spec)


def _result(actions: list[int] | None) -> EpisodeResult:
    trajectory = Trajectory(
        positions=np.zeros((3, 3)),
        headings=np.zeros(3),
        actions=None if actions is None else np.asarray(actions),
        stop=True,
    )
    return EpisodeResult(invalid_episode(), {"episode_id": 7}, trajectory)


def _registry(monkeypatch: pytest.MonkeyPatch, score) -> None:
    registry: Registry[MetricSpec] = Registry("metric")
    registry.add("spl", METRICS.get("spl"))
    registry.add("turns", MetricSpec("turns", "continuous", "turn count", False, score=score))
    monkeypatch.setattr(specs, "METRICS", registry)


def test_plugin_scores_calls_only_the_metrics_with_a_function(monkeypatch) -> None:
    _registry(monkeypatch, lambda r: np.sum(r.trajectory.actions >= 2))  # np.int64
    value = specs.plugin_scores(_result([2, 3, 1, 0]))
    assert value == {"turns": 2.0} and type(value["turns"]) is float
    _registry(monkeypatch, lambda r: None if r.trajectory.actions is None else 1)
    assert specs.plugin_scores(_result(None)) == {"turns": None}


@pytest.mark.parametrize(
    ("score", "message"),
    [
        (lambda r: "two", "metric 'turns' on episode 7 gave 'two', not a finite number"),
        (lambda r: float("nan"), "metric 'turns' on episode 7 gave nan, not a finite number"),
        (lambda r: 1 / 0, "metric 'turns' on episode 7: ZeroDivisionError: division by zero"),
    ],
)
def test_a_failing_plugin_metric_is_one_line(monkeypatch, score, message: str) -> None:
    _registry(monkeypatch, score)
    with pytest.raises(ConfigError, match=message):
        specs.plugin_scores(_result([1, 0]))
