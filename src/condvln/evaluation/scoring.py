"""Score one episode: every per-episode metric and diagnostic in one flat record.

:func:`score_episode` measures the distances once (through a :mod:`.spaces` space) and feeds
them to the pure functions of :mod:`.metrics` and :mod:`.diagnostics`. Its keys follow habitat /
VLN-CE measure names where one exists; the record is what the evaluator writes as one JSONL
line and what :mod:`.aggregate` averages. A value is ``None`` where it is undefined (no
reference path, BSA of an excluded episode, a 0/0 case with ``undefined_as_none``) — never NaN.

>>> from condvln.evaluation import ContinuousSpace
>>> r = score_episode([[0, 0, 0], [1, 0, 0], [2, 0, 0]], space=ContinuousSpace(), radius=1.0,
...                   reference_path=[[0, 0, 0], [2, 0, 0]], subgoals=[[1, 0, 0.5]])
>>> r["success"], r["spl"], r["bsa"], r["csr"], r["failure_category"]
(1, 1.0, 1.0, 1, None)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from condvln.errors import ValidationError
from condvln.evaluation import diagnostics as diag
from condvln.evaluation import metrics as m
from condvln.evaluation.dtw import dedup_mask, dtw, euclidean_alignment
from condvln.evaluation.spaces import ContinuousSpace, MetricSpace

Record = dict[str, Any]


_FIDELITY_KEYS = (
    "reference_path_length",
    "dtw",
    "ndtw",
    "sdtw",
    "cls",
    "path_coverage",
    "length_score",
)
RECORD_KEYS = (
    "steps",
    "stop_called",
    "distance_to_goal",
    "oracle_navigation_error",
    "success",
    "oracle_success",
    "path_length",
    "geodesic_distance",
    "spl",
    *_FIDELITY_KEYS,
    "subgoals_total",
    "subgoals_reached",
    "bsa_included",
    "bsa",
    "csr",
    "branch_targets_total",
    "branch_targets_reached",
    "bsa_branch",
    "csr_all",
    "goal_conditions_satisfied",
    "goal_conditions_total",
    "goal_condition_success",
    "branch_commitment",
    "wrong_branch",
    "failure_category",
    "cancelling_turns",
    "forward_back",
    "plw_success",
    "plw_goal_condition",
)
"""The keys of every per-episode record, in output order."""


def _targets(
    space: MetricSpace, ref: np.ndarray | None, goal: Any, groups: Sequence[Any]
) -> np.ndarray:
    """Encoded targets: the goal (default ``ref[-1]``) first, then each group's, in order."""
    goal_enc = ref[-1:] if goal is None else space.encode([goal])
    parts = [goal_enc, *(space.encode(group) for group in groups if len(group))]
    return np.concatenate(parts) if len(parts) > 1 else goal_enc


def _fidelity(
    space: MetricSpace,
    traj: np.ndarray,
    ref: np.ndarray | None,
    succ: int,
    tl: float,
    o: m.MetricOptions,
) -> Record:
    """Reference length, DTW, nDTW, SDTW and CLS (all ``None`` without a reference path)."""
    if ref is None:
        return dict.fromkeys(_FIDELITY_KEYS)
    threshold = o.fidelity_threshold
    if type(space).pairwise is ContinuousSpace.pairwise:  # Euclidean: one pass, no matrix
        dtw_value, nearest = euclidean_alignment(ref, traj, dedup=o.dedup)
    else:
        cost = space.pairwise(ref, traj)
        dtw_value = dtw(cost[:, dedup_mask(traj)] if o.dedup else cost)
        nearest = cost.min(axis=1)
    ndtw_value = m.ndtw(dtw_value, len(ref), threshold)
    ref_len = m.path_length(space.step_lengths(ref))
    c = m.cls_from_nearest(nearest, ref_len, tl, threshold, undefined_as_none=o.undefined_as_none)
    return {
        "reference_path_length": ref_len,
        "dtw": dtw_value,
        "ndtw": ndtw_value,
        "sdtw": m.sdtw(succ, ndtw_value),
        "cls": c.cls,
        "path_coverage": c.path_coverage,
        "length_score": c.length_score,
    }


def score_episode(  # long: its docstring documents each of its 13 arguments
    trajectory: Sequence[Any] | ArrayLike,
    *,
    space: MetricSpace,
    radius: float,
    reference_path: Sequence[Any] | ArrayLike | None = None,
    goal: Any = None,
    subgoals: Sequence[Any] | ArrayLike = (),
    branch_subgoals: Sequence[Any] | ArrayLike = (),
    stop_called: bool = True,
    shortest_path_length: float | None = None,
    branch_goals: Sequence[Any] | ArrayLike | None = None,
    gold_branch: int | None = None,
    actions: Sequence[int] | ArrayLike | None = None,
    options: m.MetricOptions = m.DEFAULT_OPTIONS,
) -> Record:
    """Every metric of one episode.

    Args:
        trajectory: recorded positions (or node ids), first = start, last = stop position;
            in-place turns repeat a position.
        space: :class:`~.spaces.ContinuousSpace` or :class:`~.spaces.GraphSpace`.
        radius: success radius τ (metres).
        reference_path: the reference of nDTW / SDTW / CLS (continuous mode: the dense
            ``_gt`` locations, see :mod:`.reference`; nav-graph mode: the reference node path);
            ``None`` leaves the fidelity metrics ``None``.
        goal: the goal; default ``reference_path[-1]``.
        subgoals: ordered subgoals of the correct branch (BSA / CSR).
        branch_subgoals: the gold arm's targets before its goal (``bsa_branch``: these
            reached in order, then the goal by succeeding).
        stop_called: whether the agent called STOP.
        shortest_path_length: ℓ for SPL (VLN-CE: the episode's ``info.geodesic_distance``);
            default the distance from ``reference_path[0]`` to the goal as R2R's ``eval.py``
            computes it (from ``trajectory[0]`` only when there is no reference path).
        branch_goals: all leaf goals of the program, gold included (diagnostics).
        gold_branch: index of the gold leaf in ``branch_goals``.
        actions: logged action ids (0 STOP, 1 FORWARD, 2 LEFT, 3 RIGHT), for no-op counts.
        options: the metric conventions.

    Returns:
        The flat per-episode record (see the module docstring).

    Raises:
        ValidationError: empty trajectory or reference path, no goal, unknown node, non-finite
            positions or distances.
    """
    d = _measure(
        space,
        trajectory,
        reference_path,
        goal,
        (subgoals, branch_subgoals),
        [] if branch_goals is None or gold_branch is None else branch_goals,
        shortest_path_length,
    )
    record = _goal_scores(space, d, radius, stop_called, options)
    succ, tl = record["success"], record["path_length"]
    record |= _fidelity(space, d.traj, d.ref, succ, tl, options)
    record |= _branch_scores(d, radius, succ, options)
    record |= _diagnostics(d, radius, gold_branch, stop_called, actions, record, options)
    ref_len = record["reference_path_length"]
    gc = record["goal_condition_success"]
    record["plw_success"] = None if ref_len is None else m.path_length_weighted(succ, ref_len, tl)
    record["plw_goal_condition"] = (
        None if ref_len is None else m.path_length_weighted(gc, ref_len, tl)
    )
    return {key: record[key] for key in RECORD_KEYS}


@dataclass(frozen=True)
class _Distances:
    """What :func:`score_episode` measures once: the encoded trajectory and reference; the
    distances from every position to the goal, to the subgoals and to the gold arm's subgoals
    (one row per target); from the stop position to every leaf goal; and ℓ."""

    traj: np.ndarray
    ref: np.ndarray | None
    goal_d: np.ndarray
    sub_d: np.ndarray
    arm_d: np.ndarray
    leaf_d: np.ndarray
    shortest: float


def _measure(
    space: MetricSpace,
    trajectory: Sequence[Any] | ArrayLike,
    reference_path: Sequence[Any] | ArrayLike | None,
    goal: Any,
    waypoints: tuple[Sequence[Any] | ArrayLike, Sequence[Any] | ArrayLike],
    leaves: Sequence[Any] | ArrayLike,
    shortest_path_length: float | None,
) -> _Distances:
    """Encode the episode and measure its distances (``waypoints``: the subgoals and the gold
    arm's subgoals; ``leaves``: the leaf goals when the gold one is known, else empty)."""
    traj = space.encode(trajectory)
    if len(traj) == 0:
        raise ValidationError("empty trajectory (must contain at least the start position)")
    ref = None if reference_path is None else space.encode(reference_path)
    if ref is not None and len(ref) == 0:
        raise ValidationError("empty reference path")
    if goal is None and ref is None:
        raise ValidationError("an episode needs a goal or a reference path")
    targets = _targets(space, ref, goal, waypoints)
    dist = space.to_targets(traj, targets)
    # leaf goals matter at the final position only (branch choice)
    leaf_d = space.to_targets(traj[-1:], space.encode(leaves))[:, 0] if len(leaves) else np.empty(0)
    n_sub = len(waypoints[0])
    if shortest_path_length is None:
        start = traj[:1] if ref is None else ref[:1]
        shortest_path_length = float(space.to_targets(start, targets[:1])[0, 0])
    sub_d, arm_d = dist[1 : 1 + n_sub], dist[1 + n_sub :]
    return _Distances(traj, ref, dist[0], sub_d, arm_d, leaf_d, shortest_path_length)


def _goal_scores(
    space: MetricSpace, d: _Distances, radius: float, stop_called: bool, o: m.MetricOptions
) -> Record:
    """Steps, NE, success, oracle success, TL, ℓ and SPL."""
    succ = m.success(
        d.goal_d, radius, stop_called=stop_called, strict=o.strict, require_stop=o.require_stop
    )
    tl = m.path_length(space.step_lengths(d.traj))
    nearest = m.oracle_navigation_error(d.goal_d)
    return {
        "steps": len(d.traj) - 1,
        "stop_called": stop_called,
        "distance_to_goal": m.navigation_error(d.goal_d),
        "oracle_navigation_error": nearest,
        "success": succ,
        # some position is within the radius iff the nearest one is (distances are finite)
        "oracle_success": m.oracle_success([nearest], radius, strict=o.strict),
        "path_length": tl,
        "geodesic_distance": d.shortest,
        "spl": m.spl(succ, d.shortest, tl, undefined_as_none=o.undefined_as_none),
    }


def _branch_scores(d: _Distances, radius: float, succ: int, o: m.MetricOptions) -> Record:
    """BSA / CSR, ``bsa_branch`` / ``csr_all`` and goal-condition success."""
    n_sub, n_arm = len(d.sub_d), len(d.arm_d)
    k, k_in = (
        m.subgoals_reached(
            rows, radius, strict=o.strict, order=o.subgoal_order, positions=o.subgoal_positions
        )
        for rows in (d.sub_d, d.arm_d)
    )
    branch = m.branch_score(k, n_sub, succ)
    k_arm = m.arm_targets_reached(k_in, n_arm, succ)
    return {
        "subgoals_total": n_sub,
        "subgoals_reached": k,
        "bsa_included": branch.included,
        "bsa": branch.bsa,
        "csr": branch.csr,
        "branch_targets_total": n_arm + 1,
        "branch_targets_reached": k_arm,
        "bsa_branch": m.arm_score(k_arm, n_arm + 1),
        "csr_all": m.conditional_success_all(k, n_sub, succ),
        "goal_conditions_satisfied": k + succ,
        "goal_conditions_total": n_sub + 1,
        "goal_condition_success": m.goal_condition_success(k + succ, n_sub + 1),
    }


def _diagnostics(
    d: _Distances,
    radius: float,
    gold_branch: int | None,
    stop_called: bool,
    actions: Sequence[int] | ArrayLike | None,
    scores: Record,
    o: m.MetricOptions,
) -> Record:
    """Branch commitment, wrong branch, failure category and the no-op patterns."""
    leaves = bool(d.leaf_d.size)
    wrong = leaves and diag.wrong_branch(
        d.leaf_d, gold_branch, radius, stop_called=stop_called, strict=o.strict
    )
    return {
        "branch_commitment": diag.branch_commitment(d.leaf_d) if leaves else None,
        "wrong_branch": wrong if leaves else None,
        "failure_category": diag.failure_category(
            success=scores["success"],
            stop_called=stop_called,
            wrong_branch=wrong,
            oracle_success=scores["oracle_success"],
            path_length=scores["path_length"],
            shortest_path_length=d.shortest,
        ),
        "cancelling_turns": None if actions is None else diag.cancelling_turns(actions),
        "forward_back": diag.forward_back(d.traj.reshape(len(d.traj), -1)),
    }


def invalid_episode(subgoals_total: int = 0, branch_subgoals_total: int = 0) -> Record:
    """The record of an episode whose prediction cannot be scored (category ``"invalid"``).

    It has the keys of :func:`score_episode` and scores as a failure without progress: success,
    oracle success, SPL, SDTW and the path-length-weighted scores 0; nDTW and CLS 0 (an empty
    path aligns with nothing: DTW = ∞, coverage 0); k = 0, so BSA = 0 and CSR = 0 (included when
    the episode has subgoals, excluded otherwise), ``bsa_branch`` = ``csr_all`` = 0; distances
    and lengths ``None``.

    >>> r = invalid_episode(2)
    >>> r["success"], r["bsa"], r["csr"], r["failure_category"]
    (0, 0.0, 0, 'invalid')
    """
    branch = m.branch_score(0, subgoals_total, 0)
    record: Record = dict.fromkeys(RECORD_KEYS)
    record.update(
        stop_called=False,
        success=0,
        oracle_success=0,
        spl=0.0,
        ndtw=0.0,
        sdtw=0.0,
        cls=0.0,
        path_coverage=0.0,
        subgoals_total=subgoals_total,
        subgoals_reached=0,
        bsa_included=branch.included,
        bsa=branch.bsa,
        csr=branch.csr,
        branch_targets_total=branch_subgoals_total + 1,
        branch_targets_reached=0,
        bsa_branch=0.0,
        csr_all=0,
        goal_conditions_satisfied=0,
        goal_conditions_total=subgoals_total + 1,
        goal_condition_success=0.0,
        failure_category="invalid",
        plw_success=0.0,
        plw_goal_condition=0.0,
    )
    return record
