"""Aggregation: intervals, seeds, breakdowns, invariants and pair consistency."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binomtest

from condvln.errors import ConfigError
from condvln.evaluation.aggregate import (
    _resampled_sums,
    aggregate,
    bootstrap_interval,
    breakdown,
    check_invariants,
    pair_consistency,
    wilson_interval,
)


def test_wilson_known_values() -> None:
    # Newcombe (1998), Table I: 15/148 → 0.0624–0.1605, 0/20 → 0–0.1611, 81/263 → 0.2553–0.3662
    for (x, n), (lo, hi) in {
        (15, 148): (0.0624, 0.1605),
        (0, 20): (0.0, 0.1611),
        (81, 263): (0.2553, 0.3662),
    }.items():
        got = wilson_interval(x, n)
        assert got == pytest.approx((lo, hi), abs=5e-5)
    assert wilson_interval(0, 0) is None
    lo, hi = wilson_interval(10, 10)
    assert hi == 1.0 and 0 < lo < 1
    with pytest.raises(ConfigError):
        wilson_interval(1, 2, confidence=1.5)


@pytest.mark.parametrize("confidence", [0.95, 0.9, 0.99])
def test_wilson_equals_scipys_binomtest_to_the_last_bit(confidence: float) -> None:
    for n in [*range(1, 31), 148, 263, 2050]:
        for k in sorted({*range(min(n, 30) + 1), n // 3, n - 1, n}):
            ci = binomtest(k, n).proportion_ci(1 - (1 - confidence), method="wilson")
            assert wilson_interval(k, n, confidence) == (float(ci.low), float(ci.high)), (k, n)
    with pytest.raises(ValueError, match="3 successes in 2 trials"):
        wilson_interval(3, 2)


def test_bootstrap_is_deterministic_with_a_seed() -> None:
    values = np.random.default_rng(3).uniform(size=500)
    a = bootstrap_interval(values, rng=np.random.default_rng(7))
    b = bootstrap_interval(values, rng=np.random.default_rng(7))
    c = bootstrap_interval(values, rng=np.random.default_rng(8))
    assert a == b and a != c
    assert a[0] < values.mean() < a[1]
    assert bootstrap_interval([], rng=np.random.default_rng(0)) is None
    assert bootstrap_interval([0.4], rng=np.random.default_rng(0)) == (0.4, 0.4)


def test_aggregate_seed_and_metric_independence() -> None:
    rng = np.random.default_rng(0)
    recs = [{"spl": float(v), "ndtw": float(w)} for v, w in rng.uniform(size=(50, 2))]
    full = aggregate(recs, seed=1)
    alone = aggregate([{"spl": r["spl"]} for r in recs], seed=1)
    assert full["spl"] == alone["spl"]
    assert aggregate(recs, seed=2)["spl"] != full["spl"]


def test_excluded_values_are_counted() -> None:
    recs = [{"bsa": 1.0, "csr": 1}, {"bsa": None, "csr": None}, {"bsa": 0.5, "csr": 0}, {}]
    agg = aggregate(recs)
    assert (agg["bsa"].mean, agg["bsa"].n, agg["bsa"].n_excluded) == (0.75, 2, 2)
    assert (agg["csr"].mean, agg["csr"].method) == (0.5, "wilson")
    nothing = aggregate([{"bsa": None}])["bsa"]
    assert (nothing.mean, nothing.ci_low, nothing.n_excluded) == (None, None, 1)
    for a in agg.values():
        for x in (a.mean, a.ci_low, a.ci_high):
            assert x is None or math.isfinite(x)


def test_breakdown_by_one_and_two_keys() -> None:
    recs = [
        {"source": "procthor", "depth": 1, "success": 1},
        {"source": "procthor", "depth": 2, "success": 0},
        {"source": "replicacad", "depth": 1, "success": 1},
        {"source": "procthor", "depth": 1, "success": 0},
        {"depth": 3, "success": 1},
    ]
    by_source = breakdown(recs, "source")
    assert list(by_source) == sorted([(None,), ("procthor",), ("replicacad",)], key=str)
    assert by_source[("procthor",)]["success"].mean == pytest.approx(1 / 3)
    assert by_source[("procthor",)]["success"].n == 3
    both = breakdown(recs, ["source", "depth"], metrics=["success"], seed=3)
    assert both[("procthor", 1)]["success"].mean == 0.5
    assert both[("procthor", 1)] == aggregate(recs[0:1] + recs[3:4], ["success"], seed=3)
    assert set(both) == {("procthor", 1), ("procthor", 2), ("replicacad", 1), (None, 3)}


@pytest.mark.parametrize("metrics", [None, ["spl", "success", "plw_success"]])
def test_a_breakdown_group_equals_the_aggregate_of_its_records(metrics: list[str] | None) -> None:
    """Columns are converted once for all records and cut into groups: the same aggregates as
    aggregating each group's own records, including which metrics a group has at all."""
    rng = np.random.default_rng(5)
    recs: list[dict[str, object]] = []
    for i in range(90):
        rec: dict[str, object] = {"source": ["a", "b", None][i % 3], "spl": float(rng.uniform())}
        rec["success"] = int(rng.integers(2)) if i % 7 else None
        rec["reference_path_length"] = None if i % 11 == 0 else float(rng.uniform(1, 9))
        rec["plw_success"] = rec["spl"]
        if rec["source"] == "b":
            rec["bsa"] = 1.0 if i % 2 else None  # a metric only one group has
        recs.append(rec)
    got = breakdown(recs, "source", metrics, seed=9)
    for (source,), aggs in got.items():
        group = [r for r in recs if r["source"] == source]
        assert aggs == aggregate(group, metrics, seed=9)
    assert ("bsa" in got[("b",)], "bsa" in got[("a",)]) == (metrics is None, False)


@pytest.mark.parametrize(
    ("record", "rule"),
    [
        ({"success": 1, "oracle_success": 0}, "OSR >= SR"),
        ({"success": 0, "spl": 0.5}, "SR >= SPL"),
        ({"success": 0, "sdtw": 0.5}, "SR >= SDTW"),
        ({"bsa": 0.5, "csr": 1}, "BSA >= CSR"),
    ],
)
def test_invariant_violations_are_detected(record: dict, rule: str) -> None:
    found = check_invariants(aggregate([record]))
    assert len(found) == 1 and found[0].startswith(rule)


def test_consistent_aggregates_have_no_violations() -> None:
    recs = [
        {"success": 1, "oracle_success": 1, "spl": 0.5, "sdtw": 0.7, "bsa": 1.0, "csr": 1},
        {"success": 0, "oracle_success": 1, "spl": 0.0, "sdtw": 0.0, "bsa": 0.5, "csr": 0},
    ]
    assert check_invariants(aggregate(recs)) == []


def test_pair_consistency() -> None:
    recs = [
        {"pair_id": "p1", "csr": 1},
        {"pair_id": "p1", "csr": 1},
        {"pair_id": "p2", "csr": 1},
        {"pair_id": "p2", "csr": None},
        {"pair_id": "p3", "csr": 1},
        {"csr": 1},
    ]
    a = pair_consistency(recs)
    assert (a.mean, a.n, a.n_excluded, a.method) == (0.5, 2, 1, "wilson")
    assert pair_consistency(recs, correct_key="missing").mean == 0.0


def test_resampled_sums_count_every_draw() -> None:
    """The compiled counting gives the sums of the plain formulation (draw indices, bincount,
    matrix product) from the same generator state, bit for bit; chunks included."""
    values = np.random.default_rng(5).random((700, 4))
    sums = _resampled_sums(values, np.random.default_rng(9), 5000)
    rng, expected = np.random.default_rng(9), []
    for start in range(0, 5000, 2_000_000 // 700):
        b = min(2_000_000 // 700, 5000 - start)
        idx = rng.integers(0, 700, size=(b, 700)) + (np.arange(b) * 700)[:, None]
        counts = np.bincount(idx.ravel(), minlength=b * 700).reshape(b, 700)
        expected.append(counts.astype(np.float64) @ values)
    assert np.array_equal(sums, np.vstack(expected))
