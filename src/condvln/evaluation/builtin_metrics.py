"""The built-in metrics: entry points of ``condvln.metrics`` (:mod:`.specs`), measured by
:func:`~.scoring.score_episode` (the conventions are in :mod:`.metrics`).

>>> SPL.name, SPL.kind, DISTANCE_TO_GOAL.higher_is_better
('spl', 'continuous', False)
"""

from __future__ import annotations

from condvln.evaluation.specs import MetricSpec

SUCCESS = MetricSpec("success", "binary", "SR: stopped within the success radius")
ORACLE_SUCCESS = MetricSpec(
    "oracle_success", "binary", "OSR: some position within the success radius"
)
SPL = MetricSpec("spl", "continuous", "success weighted by (shortest / taken) path length")
DISTANCE_TO_GOAL = MetricSpec(
    "distance_to_goal",
    "continuous",
    "NE: geodesic stop-to-goal distance (m)",
    higher_is_better=False,
)
ORACLE_NAVIGATION_ERROR = MetricSpec(
    "oracle_navigation_error",
    "continuous",
    "min geodesic distance to goal (m)",
    higher_is_better=False,
)
PATH_LENGTH = MetricSpec(
    "path_length", "continuous", "TL: trajectory length (m)", higher_is_better=None
)
STEPS = MetricSpec("steps", "continuous", "recorded positions minus one", higher_is_better=None)
NDTW = MetricSpec("ndtw", "continuous", "normalised exact DTW to the reference path")
SDTW = MetricSpec("sdtw", "continuous", "success-weighted nDTW")
CLS = MetricSpec("cls", "continuous", "coverage weighted by length score (R4R)")
BSA = MetricSpec("bsa", "continuous", "branch selection accuracy (included episodes)")
CSR = MetricSpec("csr", "binary", "conditional success rate (included episodes)")
BSA_BRANCH = MetricSpec("bsa_branch", "continuous", "gold arm's in-branch subgoals + success (all)")
CSR_ALL = MetricSpec("csr_all", "binary", "CSR over every episode (none excluded)")
GOAL_CONDITION_SUCCESS = MetricSpec(
    "goal_condition_success",
    "continuous",
    "GC: satisfied / total goal conditions (micro)",
    weight_key="goal_conditions_total",
)
PLW_SUCCESS = MetricSpec(
    "plw_success",
    "continuous",
    "path-length-weighted SR (TEACh)",
    weight_key="reference_path_length",
)
PLW_GOAL_CONDITION = MetricSpec(
    "plw_goal_condition",
    "continuous",
    "path-length-weighted GC (TEACh)",
    weight_key="reference_path_length",
)
WRONG_BRANCH = MetricSpec(
    "wrong_branch", "binary", "stopped at a non-gold leaf goal", higher_is_better=False
)
CANCELLING_TURNS = MetricSpec(
    "cancelling_turns", "continuous", "immediately cancelling turn pairs", higher_is_better=False
)
FORWARD_BACK = MetricSpec(
    "forward_back",
    "continuous",
    "moves returning to the position two moves back",
    higher_is_better=False,
)
