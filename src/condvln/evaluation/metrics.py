"""Per-episode VLN and CondVLN metrics as pure functions of distances.

The functions here take distances that a :mod:`.spaces` space has already measured (so they
work unchanged in continuous and nav-graph mode); :func:`condvln.evaluation.score_episode`
measures them and returns every metric of one episode. Conventions (DESIGN §4, golden
``metric_vectors.json``), each an explicit option of :class:`MetricOptions`:

* success: stop distance to the goal ``< radius`` (strict; ``<=`` with ``strict=False``) and
  STOP was called (``require_stop``); oracle success: any recorded position within the radius;
* TL sums path-distance steps; SPL = S·ℓ / max(ℓ, TL);
* nDTW = exp(−DTW / (|R|·d_th)) with exact DTW, on the trajectory with consecutive duplicates
  dropped (VLN-CE, ``dedup=True``) or as given (R4R, ``dedup=False``); SDTW = S·nDTW; d_th is
  ``fidelity_threshold`` (default 3.0 m as VLN-CE), not the success radius;
* CLS = PC·LS as in R4R, on the same reference and d_th;
* BSA / CSR as in the CondVLN paper (:func:`subgoals_reached`, :func:`branch_score`);
* two CondVLN companions (:func:`arm_targets_reached`, :func:`arm_score`,
  :func:`conditional_success_all`): ``bsa_branch``, the share of the gold arm's own targets
  reached — its in-branch subgoals in order, then its goal, which counts only when the episode
  succeeds (as the paper's BSA counts the goal of an episode without subgoals), over every
  episode — the shared pre-decision waypoints earn nothing and neither does passing the gold
  goal on the way to another, so a wrong branch scores (close to) 0; and ``csr_all``, CSR over
  every episode (a failed episode without subgoals counts as 0 instead of being excluded), so
  ``csr_all ≤ SR`` always;
* goal-condition success and path-length-weighted scores as in ALFRED / TEACh.

0/0 cases never give NaN: SPL with ℓ = TL = 0 and CLS with EPL = TL = 0 are, by default,
"recommended" values (ratio := 1); with ``undefined_as_none=True`` they are ``None``.

Worked example (vln_tasks_and_metrics_zh §4.6): a 4-cycle S-A-B-G-S, 4 m edges, δ = 3 m; the
instruction asks for S→A→B→G, the shortest path is the edge S→G.

>>> from condvln.evaluation import GraphSpace, score_episode
>>> edges = {("S", "A"): 4, ("A", "B"): 4, ("B", "G"): 4, ("G", "S"): 4}
>>> order = ["S", "A", "B", "G"]
>>> cyc = {u: {v: 4.0 * min(abs(i - j), 4 - abs(i - j)) for j, v in enumerate(order)}
...        for i, u in enumerate(order)}
>>> space = GraphSpace.from_dict(cyc)
>>> for route in (["S", "A", "B", "G"], ["S", "G"]):
...     r = score_episode(route, space=space, radius=3.0, reference_path=order)
...     print(f"{r['path_length']:.0f} m  SPL {r['spl']:.4f}  CLS {r['cls']:.4f}  "
...           f"nDTW {r['ndtw']:.4f}")
12 m  SPL 0.3333  CLS 1.0000  nDTW 1.0000
4 m  SPL 1.0000  CLS 0.4291  nDTW 0.5134
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numba
import numpy as np
from numpy.typing import ArrayLike

from condvln import libm
from condvln.errors import ConfigError


@dataclass(frozen=True)
class MetricOptions:
    """Every convention that changes a metric value; defaults are DESIGN §4.

    Attributes:
        strict: success / oracle success / subgoal tests use ``d < radius`` (``False``: ``<=``).
        require_stop: success also requires that the agent called STOP.
        dedup: drop consecutive duplicate trajectory positions before DTW (VLN-CE NDTW).
        undefined_as_none: SPL / CLS 0/0 cases give ``None`` instead of the recommended value.
        subgoal_order: ``"nondecreasing"`` lets one position satisfy consecutive subgoals;
            ``"increasing"`` needs a later position for each next subgoal.
        subgoal_positions: ``"all"`` recorded positions count for BSA, or only the ``"stop"``.
        fidelity_threshold: d_th of nDTW / SDTW / CLS in metres (VLN-CE's NDTW measure and
            R4R use 3.0 m, independent of the success radius).
    """

    strict: bool = True
    require_stop: bool = True
    dedup: bool = True
    undefined_as_none: bool = False
    subgoal_order: Literal["nondecreasing", "increasing"] = "nondecreasing"
    subgoal_positions: Literal["all", "stop"] = "all"
    fidelity_threshold: float = 3.0

    def __post_init__(self) -> None:
        if self.subgoal_order not in ("nondecreasing", "increasing"):
            raise ConfigError(f"unknown subgoal_order {self.subgoal_order!r}")
        if self.subgoal_positions not in ("all", "stop"):
            raise ConfigError(f"unknown subgoal_positions {self.subgoal_positions!r}")
        if not 0 < self.fidelity_threshold < math.inf:
            raise ConfigError("fidelity_threshold (nDTW d_th) must be a positive number of metres")


DEFAULT_OPTIONS = MetricOptions()


def within(distances: ArrayLike, radius: float, *, strict: bool = True) -> np.ndarray:
    """Element-wise ``d < radius`` (``strict``) or ``d <= radius``.

    >>> within([2.9, 3.0], 3.0).tolist(), within([2.9, 3.0], 3.0, strict=False).tolist()
    ([True, False], [True, True])
    """
    d = np.asarray(distances, dtype=np.float64)
    return d < radius if strict else d <= radius


def navigation_error(goal_distances: ArrayLike) -> float:
    """NE: geodesic distance from the final (stop) position to the goal.

    >>> navigation_error([4.0, 2.0, 1.5])
    1.5
    """
    return float(np.asarray(goal_distances, dtype=np.float64)[-1])


def oracle_navigation_error(goal_distances: ArrayLike) -> float:
    """Smallest geodesic distance to the goal over all recorded positions.

    >>> oracle_navigation_error([4.0, 0.5, 1.5])
    0.5
    """
    return float(np.minimum.reduce(np.asarray(goal_distances), axis=None))


def success(
    goal_distances: ArrayLike,
    radius: float,
    *,
    stop_called: bool = True,
    strict: bool = True,
    require_stop: bool = True,
) -> int:
    """SR indicator: the stop position is within ``radius`` of the goal (and STOP was called).

    >>> success([5.0, 2.0], 3.0), success([5.0, 2.0], 3.0, stop_called=False)
    (1, 0)
    >>> success([5.0, 2.0], 3.0, stop_called=False, require_stop=False)
    1
    """
    stopped = stop_called or not require_stop
    return int(stopped and bool(within(navigation_error(goal_distances), radius, strict=strict)))


def oracle_success(goal_distances: ArrayLike, radius: float, *, strict: bool = True) -> int:
    """OSR indicator: some recorded position is within ``radius`` of the goal.

    >>> oracle_success([5.0, 2.0, 4.0], 3.0)
    1
    """
    return int(bool(within(goal_distances, radius, strict=strict).any()))


def path_length(step_lengths: ArrayLike) -> float:
    """TL: the sum of the step lengths between consecutive positions.

    >>> path_length([0.25, 0.0, 0.25])
    0.5
    """
    return float(np.add.reduce(np.asarray(step_lengths, dtype=np.float64)))


def _ratio(best: float, taken: float) -> float:
    """``best / max(best, taken)``, with 0/0 := 1."""
    denominator = max(best, taken)
    return best / denominator if denominator > 0 else 1.0


def spl(
    success_value: int,
    shortest_path_length: float,
    trajectory_length: float,
    *,
    undefined_as_none: bool = False,
) -> float | None:
    """SPL_i = S · ℓ / max(ℓ, TL).

    Args:
        success_value: the success indicator S.
        shortest_path_length: ℓ, geodesic start → goal.
        trajectory_length: TL.
        undefined_as_none: for ℓ = TL = 0 return ``None`` instead of S (ratio := 1).

    >>> spl(1, 4.0, 12.0)
    0.3333333333333333
    >>> spl(1, 0.0, 0.0), spl(1, 0.0, 0.0, undefined_as_none=True)
    (1.0, None)
    """
    if undefined_as_none and max(shortest_path_length, trajectory_length) == 0:
        return None
    return success_value * _ratio(shortest_path_length, trajectory_length)


def ndtw(dtw_value: float, n_reference: int, threshold: float) -> float:
    """nDTW = exp(−DTW / (|R| · d_th)), ``n_reference`` = number of reference points.

    >>> round(ndtw(8.0, 4, 3.0), 4)
    0.5134
    """
    return math.exp(-dtw_value / (n_reference * threshold))


def sdtw(success_value: int, ndtw_value: float) -> float:
    """SDTW_i = S · nDTW_i (averaged per episode, never SR × mean nDTW).

    >>> sdtw(1, 0.9), sdtw(0, 0.7)
    (0.9, 0.0)
    """
    return success_value * ndtw_value


@dataclass(frozen=True)
class ClsResult:
    """CLS and its two factors (``None`` only for 0/0 with ``undefined_as_none``)."""

    path_coverage: float
    length_score: float | None
    cls: float | None


def cls(
    cost: ArrayLike,
    reference_length: float,
    trajectory_length: float,
    threshold: float,
    *,
    undefined_as_none: bool = False,
) -> ClsResult:
    """Coverage weighted by Length Score (R4R §3.3).

    PC = mean over reference points r of exp(−min_p d(r, p) / d_th); EPL = PC · L(R);
    LS = EPL / (EPL + |EPL − L(P)|); CLS = PC · LS. When EPL = L(P) = 0 (a one-point reference
    and an agent that did not move) LS is 0/0: LS := 1 so CLS = PC, or ``None`` with
    ``undefined_as_none``.

    Args:
        cost: ``(|R|, |P|)`` path distances, ``cost[k, j] = d(r_k, p_j)``.
        reference_length: L(R).
        trajectory_length: L(P).
        threshold: d_th.
        undefined_as_none: see above.

    >>> r = cls([[0.0, 4.0], [4.0, 8.0], [8.0, 4.0], [4.0, 0.0]], 12.0, 4.0, 3.0)
    >>> round(r.path_coverage, 4), round(r.length_score, 4), round(r.cls, 4)
    (0.6318, 0.6792, 0.4291)
    """
    nearest = np.min(np.asarray(cost, dtype=np.float64), axis=1)
    return cls_from_nearest(
        nearest, reference_length, trajectory_length, threshold, undefined_as_none=undefined_as_none
    )


def cls_from_nearest(
    nearest: ArrayLike,
    reference_length: float,
    trajectory_length: float,
    threshold: float,
    *,
    undefined_as_none: bool = False,
) -> ClsResult:
    """:func:`cls` from ``nearest[k] = min_p d(r_k, p)``, the cost matrix's row minima.

    >>> round(cls_from_nearest([0.0, 4.0, 4.0, 0.0], 12.0, 4.0, 3.0).cls, 4)
    0.4291
    """
    nearest = np.asarray(nearest, dtype=np.float64)
    coverage = float(np.add.reduce(libm.exp(-nearest / threshold)) / nearest.size)  # the mean
    expected = coverage * reference_length
    if undefined_as_none and expected == 0 and trajectory_length == 0:
        return ClsResult(coverage, None, None)
    length_score = _ratio(expected, expected + abs(expected - trajectory_length))
    return ClsResult(coverage, length_score, coverage * length_score)


def subgoals_reached(
    subgoal_distances: ArrayLike,
    radius: float,
    *,
    strict: bool = True,
    order: Literal["nondecreasing", "increasing"] = "nondecreasing",
    positions: Literal["all", "stop"] = "all",
) -> int:
    """k: the longest prefix of the ordered subgoals reached in order (greedy earliest match).

    Subgoal g_s is matched to the earliest trajectory index at or after the previous match
    (``"nondecreasing"``; strictly after with ``"increasing"``) whose distance is within the
    radius; matching stops at the first subgoal that cannot be matched. Greedy earliest matching
    yields the longest possible prefix.

    Args:
        subgoal_distances: ``(m, n)`` geodesic distances, subgoal × trajectory position.
        radius: τ, the success radius.
        strict: ``d < τ`` (``False``: ``d <= τ``), as for success.
        order: index order, see above.
        positions: ``"all"`` recorded positions or only the ``"stop"`` position.

    >>> d = [[9.0, 1.0, 9.0], [9.0, 1.0, 9.0]]          # one position near both subgoals
    >>> subgoals_reached(d, 3.0), subgoals_reached(d, 3.0, order="increasing")
    (2, 1)
    """
    d = np.asarray(subgoal_distances, dtype=np.float64)
    if positions == "stop":
        d = d[:, -1:]
    if d.size == 0:
        return 0
    hit = within(d, radius, strict=strict)
    return int(_greedy_prefix(hit, 1 if order == "increasing" else 0))


@numba.njit(cache=True, nogil=True)
def _greedy_prefix(hit: np.ndarray, step: int) -> int:  # pragma: no cover - compiled
    """:func:`subgoals_reached` on the ``(m, n)`` hit matrix: rows matched in turn, each to its
    first hit at or after ``start`` (the previous match plus ``step``)."""
    start, reached = 0, 0
    for row in range(hit.shape[0]):
        j = start
        while j < hit.shape[1] and not hit[row, j]:
            j += 1
        if j >= hit.shape[1]:
            break
        reached += 1
        start = j + step
    return reached


@dataclass(frozen=True)
class BranchScore:
    """BSA / CSR of one episode (paper §3.2).

    Attributes:
        m: number of subgoals of the correct branch.
        k: subgoals reached in order.
        success: the success indicator.
        included: whether the episode counts for BSA / CSR (``False`` only for m = 0 failures).
        bsa: k / m (1 for a successful m = 0 episode); ``None`` when excluded.
        csr: 1[k = m ∧ success]; ``None`` when excluded.
    """

    m: int
    k: int
    success: int
    included: bool
    bsa: float | None
    csr: int | None


def branch_score(k: int, m: int, success_value: int) -> BranchScore:
    """BSA_i = k/m and CSR_i = 1[k = m ∧ S]; m = 0: BSA_i = 1 if S else excluded.

    >>> branch_score(1, 2, 1).bsa, branch_score(2, 2, 1).csr, branch_score(0, 0, 0).included
    (0.5, 1, False)
    """
    if m == 0 and not success_value:
        return BranchScore(0, 0, 0, False, None, None)
    if m == 0:
        return BranchScore(0, 0, success_value, True, 1.0, 1)
    return BranchScore(m, k, success_value, True, k / m, int(k == m and bool(success_value)))


def arm_targets_reached(k: int, n: int, success_value: int) -> int:
    """k′ of ``bsa_branch``: the ``k`` in-branch subgoals of the gold arm reached in order (of
    its ``n``, :func:`subgoals_reached`), plus its goal when all ``n`` were reached and the
    episode succeeded — the goal is reached by stopping there, not by passing it.

    >>> arm_targets_reached(0, 0, 1), arm_targets_reached(1, 2, 1), arm_targets_reached(2, 2, 0)
    (1, 1, 2)
    """
    if n < 0 or not 0 <= k <= n:
        raise ValueError(f"arm targets need 0 <= k <= n, got k={k}, n={n}")
    return k + int(k == n and bool(success_value))


def arm_score(k: int, n: int) -> float:
    """``bsa_branch`` of one episode: k / n with n ≥ 1 the gold arm's targets (its in-branch
    subgoals, then its leaf goal) and k of them reached (:func:`arm_targets_reached`). Every
    episode is counted.

    >>> arm_score(0, 1), arm_score(2, 3)
    (0.0, 0.6666666666666666)
    """
    if n < 1 or not 0 <= k <= n:
        raise ValueError(f"arm score needs 0 <= k <= n and n >= 1, got k={k}, n={n}")
    return k / n


def conditional_success_all(k: int, m: int, success_value: int) -> int:
    """``csr_all`` of one episode: 1[k = m ∧ S] for every episode, m = 0 included (then = S).

    >>> conditional_success_all(0, 0, 0), conditional_success_all(2, 2, 1)
    (0, 1)
    """
    return int(k == m and bool(success_value))


def goal_condition_success(satisfied: int, total: int) -> float | None:
    """GC_i: fraction of goal conditions satisfied (ALFRED / TEACh); ``None`` when total = 0.

    In CondVLN the goal conditions of an episode are its m ordered subgoals plus the final goal,
    so ``satisfied = k + S`` and ``total = m + 1``.

    >>> goal_condition_success(1, 4), goal_condition_success(0, 0)
    (0.25, None)
    """
    return satisfied / total if total else None


def path_length_weighted(score: float, expert_length: float, agent_length: float) -> float:
    """TEACh's per-episode weight: score · L* / max(L*, L) with L* the expert path length.

    In CondVLN L* is the reference path length (not the shortest path, unlike SPL). With
    L* = L = 0 the ratio is 1. Aggregate with the weighted mean Σ w_i L*_i / Σ L*_i.

    >>> round(path_length_weighted(1.0, 10.0, 12.0), 4), path_length_weighted(0.5, 0.0, 0.0)
    (0.8333, 0.5)
    """
    return score * _ratio(expert_length, agent_length)
