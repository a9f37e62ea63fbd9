"""Aggregate per-episode records: means with counts and 95 % intervals, breakdowns, checks.

* binary rates (SR, OSR, CSR, …) get a Wilson score interval;
* continuous metrics (SPL, nDTW, BSA, …) get a percentile bootstrap interval from an explicit
  seed (``numpy.random.Generator``); the resamples depend only on the seed and the number of
  records, so adding a metric never changes another's interval;
* ``None`` values (BSA / CSR of excluded episodes, undefined cases) are left out of the mean and
  counted in ``n_excluded``; how each metric aggregates is data in
  :data:`~condvln.evaluation.specs.METRICS` (kind, optional weight key).

>>> recs = [{"success": 1, "spl": 0.5}, {"success": 0, "spl": 0.0}, {"success": 1, "spl": 1.0}]
>>> agg = aggregate(recs, seed=0)
>>> round(agg["success"].mean, 4), agg["success"].n, agg["success"].method
(0.6667, 3, 'wilson')
>>> check_invariants(agg)
[]
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numba
import numpy as np
from numpy.typing import ArrayLike
from scipy.special import ndtri

from condvln.errors import ConfigError
from condvln.evaluation.specs import METRICS, MetricSpec

Interval = tuple[float, float]


@dataclass(frozen=True)
class Aggregate:
    """The aggregate of one metric over a set of episodes.

    Attributes:
        name: metric key.
        mean: (weighted) mean over the episodes with a value; ``None`` when there are none.
        n: episodes with a value (the included set).
        n_excluded: episodes whose value was ``None``.
        ci_low: lower end of the confidence interval (``None`` when ``n`` is 0).
        ci_high: upper end.
        method: ``"wilson"`` or ``"bootstrap"``.
    """

    name: str
    mean: float | None
    n: int
    n_excluded: int
    ci_low: float | None
    ci_high: float | None
    method: Literal["wilson", "bootstrap"]

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON output."""
        return asdict(self)


def _alpha(confidence: float) -> float:
    """1 − confidence, checked."""
    if not 0 < confidence < 1:
        raise ConfigError(f"confidence must be in (0, 1), got {confidence}")
    return 1 - confidence


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> Interval | None:
    """Wilson score interval of a binomial proportion; ``None`` for ``n == 0``.

    The closed form of Newcombe (1998), method 3, computed as scipy's
    ``binomtest(successes, n).proportion_ci(confidence, method="wilson")`` computes it (the
    same numbers to the last bit) without the binomial test's p-value, which cost most of an
    evaluation's aggregation time.

    >>> tuple(round(x, 4) for x in wilson_interval(8, 10))
    (0.4902, 0.9433)
    """
    if not 0 <= successes <= n:
        raise ValueError(f"{successes} successes in {n} trials")
    if n == 0:
        return None
    z = ndtri(0.5 + 0.5 * (1 - _alpha(confidence)))
    p = successes / n
    denom = 2 * (n + z**2)
    center = (2 * n * p + z**2) / denom
    delta = z / denom * math.sqrt(4 * n * p * (1 - p) + z**2)
    low = 0.0 if successes == 0 else center - delta
    high = 1.0 if successes == n else center + delta
    return float(low), float(high)


def weighted_mean(values: ArrayLike, weights: ArrayLike | None = None) -> float | None:
    """Σ w·v / Σ w (plain mean without weights); ``None`` when Σ w = 0 or there are no values.

    >>> weighted_mean([1.0, 0.25], [2, 4]), weighted_mean([])
    (0.5, None)
    """
    v = np.asarray(values, dtype=np.float64)
    w = np.ones_like(v) if weights is None else np.asarray(weights, dtype=np.float64)
    total = float(np.sum(w))
    return float(np.dot(v, w) / total) if total > 0 else None


def _resampled_sums(matrix: np.ndarray, rng: np.random.Generator, n_resamples: int) -> np.ndarray:
    """Column sums of ``matrix`` (``(n, K)``, one row per episode) in each bootstrap resample.

    Episodes are drawn with replacement, in chunks of resamples so memory stays small (one
    counts buffer, reused); the draws depend only on ``rng``, ``n`` and ``n_resamples``, so all
    columns share the same resamples (a paired bootstrap). Returns ``(n_resamples, K)``.
    """
    n = len(matrix)
    rows = max(1, 2_000_000 // n)
    counts = np.empty((min(rows, n_resamples), n))
    sums = []
    for start in range(0, n_resamples, rows):
        b = min(rows, n_resamples - start)
        _draw_counts(rng.integers(0, n, size=(b, n)), counts[:b])
        sums.append(counts[:b] @ matrix)
    return np.vstack(sums)


@numba.njit(cache=True, nogil=True)
def _draw_counts(draws: np.ndarray, counts: np.ndarray) -> None:  # pragma: no cover - compiled
    """How often each episode is drawn in each resample: ``(b, n)`` draws → ``(b, n)`` counts
    (written into ``counts``)."""
    b, n = draws.shape
    counts[:] = 0.0
    for r in range(b):
        for i in range(n):
            counts[r, draws[r, i]] += 1.0


def _bootstrap(
    values: np.ndarray,
    weights: np.ndarray,
    rng: np.random.Generator,
    confidence: float,
    n_resamples: int,
) -> list[Interval | None]:
    """Percentile intervals of the weighted means of the columns of ``values``.

    ``values`` and ``weights`` are ``(n, M)``; an excluded episode has weight 0. Resamples in
    which a column's weights sum to 0 are skipped; an interval is clipped to the range of the
    included values.
    """
    alpha = _alpha(confidence)
    m = values.shape[1]
    sums = _resampled_sums(np.hstack([values * weights, weights]), rng, n_resamples)
    out: list[Interval | None] = []
    for k in range(m):
        num, den = sums[:, k], sums[:, m + k]
        included = values[weights[:, k] > 0, k]
        if not np.any(den > 0):
            out.append(None)
            continue
        lo, hi = np.quantile(num[den > 0] / den[den > 0], [alpha / 2, 1 - alpha / 2])
        out.append((max(float(lo), included.min()), min(float(hi), included.max())))
    return out


def bootstrap_interval(
    values: ArrayLike,
    *,
    rng: np.random.Generator,
    weights: ArrayLike | None = None,
    confidence: float = 0.95,
    n_resamples: int = 2000,
) -> Interval | None:
    """Percentile bootstrap interval of the (weighted) mean; ``None`` without values.

    Episodes are resampled with replacement ``n_resamples`` times.

    >>> lo, hi = bootstrap_interval([0.2, 0.4, 0.9, 0.5], rng=np.random.default_rng(0))
    >>> 0.2 <= lo < hi <= 0.9
    True
    """
    v = np.asarray(values, dtype=np.float64).reshape(-1, 1)
    if v.size == 0:
        return None
    w = np.ones_like(v) if weights is None else np.asarray(weights, np.float64).reshape(-1, 1)
    return _bootstrap(v, w, rng, confidence, n_resamples)[0]


def _uses_wilson(spec: MetricSpec) -> bool:
    return spec.kind == "binary" and spec.weight_key is None


_Column = tuple[MetricSpec, np.ndarray, np.ndarray, np.ndarray]
"""A metric's spec, then its values and weights as floats (0 where excluded) and the kept
mask (an episode is kept when neither its value nor its weight is ``None``)."""


def _column(spec: MetricSpec, values: Sequence[Any], weights: Sequence[Any]) -> _Column:
    """One metric's column as float arrays."""
    if len(values) != len(weights):
        raise ValueError(f"{len(values)} values but {len(weights)} weights")
    keep = np.array([v is not None for v in values], dtype=bool)
    keep &= np.array([w is not None for w in weights], dtype=bool)
    v = np.array(values, dtype=float)  # None becomes NaN, then 0 below
    w = np.array(weights, dtype=float)
    return spec, np.where(keep, v, 0.0), np.where(keep, w, 0.0), keep


def _record_columns(
    records: Sequence[Mapping[str, Any]], names: Iterable[str]
) -> dict[str, _Column]:
    """The named metrics' columns over ``records`` (a missing key is excluded, like ``None``)."""
    columns = {}
    for name in names:
        spec = METRICS.get(name)
        key = spec.weight_key
        weights = [1.0] * len(records) if key is None else [r.get(key) for r in records]
        columns[name] = _column(spec, [r.get(name) for r in records], weights)
    return columns


def _rows(column: _Column, rows: np.ndarray) -> _Column:
    """The column of the records at ``rows`` only."""
    spec, values, weights, kept = column
    return spec, values[rows], weights[rows], kept[rows]


def _aggregate_columns(
    columns: Mapping[str, _Column], seed: int, confidence: float, n_resamples: int
) -> dict[str, Aggregate]:
    """Aggregate named columns of equal length."""
    n = len(next(iter(columns.values()))[1]) if columns else 0
    boot = [name for name, column in columns.items() if not _uses_wilson(column[0])]
    intervals: dict[str, Interval | None] = {}
    if boot and n:
        stacked = [np.stack([columns[b][i] for b in boot], axis=1) for i in (1, 2)]
        rng = np.random.default_rng(seed)
        intervals = dict(zip(boot, _bootstrap(*stacked, rng, confidence, n_resamples), strict=True))
    out = {}
    for name, (spec, values, weights, kept) in columns.items():
        v, w = values[kept], weights[kept]
        if _uses_wilson(spec):
            intervals[name] = wilson_interval(int(v.sum()), v.size, confidence)
        lo, hi = intervals.get(name) or (None, None)
        out[name] = Aggregate(
            name=name,
            mean=weighted_mean(v, w),
            n=int(v.size),
            n_excluded=n - int(v.size),
            ci_low=lo,
            ci_high=hi,
            method="wilson" if _uses_wilson(spec) else "bootstrap",
        )
    return out


def aggregate_values(
    name: str,
    values: Sequence[float | None],
    *,
    spec: MetricSpec,
    weights: Sequence[float | None] | None = None,
    seed: int = 0,
    confidence: float = 0.95,
    n_resamples: int = 2000,
) -> Aggregate:
    """Aggregate one metric's per-episode values (``None`` = excluded) under ``spec``.

    >>> a = aggregate_values("bsa", [1.0, None, 0.5], spec=METRICS.get("bsa"))
    >>> a.mean, a.n, a.n_excluded, a.method
    (0.75, 2, 1, 'bootstrap')
    """
    w = [1.0] * len(values) if weights is None else weights
    column = _column(spec, values, w)
    return _aggregate_columns({name: column}, seed, confidence, n_resamples)[name]


def aggregate(
    records: Sequence[Mapping[str, Any]],
    metrics: Iterable[str] | None = None,
    *,
    seed: int = 0,
    confidence: float = 0.95,
    n_resamples: int = 2000,
) -> dict[str, Aggregate]:
    """Aggregate every registered metric (or those named) that occurs in ``records``.

    A record without a metric's key counts as excluded for that metric, like ``None``. All
    bootstrap intervals of one call share the resamples drawn from ``seed`` (a paired
    bootstrap), so a metric's interval does not depend on which other metrics are present.

    Args:
        records: per-episode records (:func:`~condvln.evaluation.score_episode` output,
            possibly with episode metadata merged in).
        metrics: metric names (default: every registered metric present in some record).
        seed: bootstrap seed.
        confidence: interval level.
        n_resamples: bootstrap resamples.

    Returns:
        ``{metric: Aggregate}`` in registry order.
    """
    names = [n for n in METRICS if any(n in r for r in records)] if metrics is None else metrics
    return _aggregate_columns(_record_columns(records, names), seed, confidence, n_resamples)


def breakdown(
    records: Sequence[Mapping[str, Any]],
    by: str | Sequence[str],
    metrics: Iterable[str] | None = None,
    *,
    seed: int = 0,
    confidence: float = 0.95,
    n_resamples: int = 2000,
) -> dict[tuple[Any, ...], dict[str, Aggregate]]:
    """The same aggregates per group of records sharing the values of the ``by`` key(s).

    Args:
        records: per-episode records.
        by: a key (``"source"``) or keys (``("category", "depth")``); a missing key groups as
            ``None``.
        metrics: as for :func:`aggregate`.
        seed: bootstrap seed (every group's resamples are drawn from it).
        confidence: interval level.
        n_resamples: bootstrap resamples.

    Returns:
        ``{group values tuple: {metric: Aggregate}}``, groups sorted by their string form.

    >>> recs = [{"source": "a", "success": 1}, {"source": "b", "success": 0},
    ...         {"source": "a", "success": 0}]
    >>> {g: a["success"].mean for g, a in breakdown(recs, "source").items()}
    {('a',): 0.5, ('b',): 0.0}
    """
    keys = (by,) if isinstance(by, str) else tuple(by)
    groups: dict[tuple[Any, ...], list[int]] = defaultdict(list)
    for index, record in enumerate(records):
        groups[tuple(record.get(k) for k in keys)].append(index)
    if metrics is None:  # as for aggregate: the metrics present in some record of the group
        names = [n for n in METRICS if any(n in r for r in records)]
        present = {n: np.array([n in r for r in records], dtype=bool) for n in names}
    else:
        names, present = list(metrics), {}
    columns = _record_columns(records, names)  # converted once, then cut into the groups
    out = {}
    for group in sorted(groups, key=str):
        rows = np.array(groups[group])
        cut = {
            name: _rows(column, rows)
            for name, column in columns.items()
            if metrics is not None or present[name][rows].any()
        }
        out[group] = _aggregate_columns(cut, seed, confidence, n_resamples)
    return out


_INVARIANTS = (
    ("oracle_success", "success", "OSR >= SR"),
    ("success", "spl", "SR >= SPL"),
    ("success", "sdtw", "SR >= SDTW"),
    ("bsa", "csr", "BSA >= CSR"),
    ("success", "csr_all", "SR >= CSR_all"),
    ("bsa_branch", "csr_all", "BSA_branch >= CSR_all"),
)


def check_invariants(aggregates: Mapping[str, Aggregate], tolerance: float = 1e-9) -> list[str]:
    """Violated mean invariants OSR ≥ SR ≥ SPL, SDTW ≤ SR, CSR ≤ BSA, CSR_all ≤ SR and
    CSR_all ≤ BSA_branch (present metrics only).

    >>> bad = aggregate([{"success": 1, "oracle_success": 0}])
    >>> check_invariants(bad)
    ['OSR >= SR violated: oracle_success 0 < success 1']
    """
    found = []
    for big, small, rule in _INVARIANTS:
        a, b = aggregates.get(big), aggregates.get(small)
        if a is None or b is None or a.mean is None or b.mean is None:
            continue
        if a.mean < b.mean - tolerance:
            found.append(f"{rule} violated: {big} {a.mean:.6g} < {small} {b.mean:.6g}")
    return found


def pair_consistency(
    records: Sequence[Mapping[str, Any]],
    *,
    pair_key: str = "pair_id",
    correct_key: str = "csr",
    confidence: float = 0.95,
) -> Aggregate:
    """Fraction of counterfactual pairs whose two members are both correct.

    Records are grouped by ``pair_key`` (records without it are ignored). A group with exactly
    two records is a pair; it is consistent when both have a truthy ``correct_key`` (a ``None``
    value, e.g. the CSR of an excluded no-subgoal failure, counts as not correct). Groups of
    another size are incomplete and counted in ``n_excluded``.

    >>> recs = [{"pair_id": 1, "csr": 1}, {"pair_id": 1, "csr": 1},
    ...         {"pair_id": 2, "csr": 1}, {"pair_id": 2, "csr": 0}, {"pair_id": 3, "csr": 1}]
    >>> a = pair_consistency(recs)
    >>> a.mean, a.n, a.n_excluded
    (0.5, 2, 1)
    """
    groups: dict[Any, list[bool]] = defaultdict(list)
    for record in records:
        if record.get(pair_key) is not None:
            groups[record[pair_key]].append(bool(record.get(correct_key)))
    both = [float(all(members)) for members in groups.values() if len(members) == 2]
    values: list[float | None] = [*both, *[None] * (len(groups) - len(both))]
    spec = MetricSpec("pair_consistency", "binary", "both members of a counterfactual pair correct")
    return aggregate_values("pair_consistency", values, spec=spec, confidence=confidence)
