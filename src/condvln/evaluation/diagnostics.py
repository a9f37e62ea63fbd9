"""Branch diagnostics and behaviour patterns of one episode (pure functions).

* :func:`branch_commitment` / :func:`wrong_branch`: which leaf goal of the conditional program
  the agent ended at, measured with the same geodesic distance and comparison as success;
* :func:`failure_category`: one category for every failed episode;
* :func:`cancelling_turns` / :func:`forward_back`: "no-op" action patterns (Min et al., "Don't
  Copy the Teacher": turning back and forth, going forward and back).

>>> leaves = [4.0, 0.5, 7.0]                      # stop → each leaf goal; gold leaf is 0
>>> branch_commitment(leaves), wrong_branch(leaves, 0, 1.0)
(1, True)
>>> failure_category(success=0, wrong_branch=True)
'wrong_branch'
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import numba
import numpy as np
from numpy.typing import ArrayLike

from condvln.evaluation.metrics import within

FailureCategory = Literal["invalid", "never_stopped", "wrong_branch", "stopped_early", "navigation"]

LEFT, RIGHT = 2, 3
"""VLN-CE action ids of the 15° turns (0 STOP, 1 FORWARD 0.25 m, 2 LEFT, 3 RIGHT)."""


def branch_commitment(leaf_distances: ArrayLike) -> int | None:
    """Index of the leaf goal nearest to the final position (ties: lowest index).

    Args:
        leaf_distances: geodesic distance from the final position to every leaf goal of the
            program (``info.condvln.branch_goals``, gold leaf included).

    Returns:
        The index, or ``None`` when there are no leaf goals.

    >>> branch_commitment([3.0, 1.0, 1.0]), branch_commitment([])
    (1, None)
    """
    d = np.asarray(leaf_distances, dtype=np.float64)
    return int(d.argmin()) if d.size else None


def wrong_branch(
    leaf_distances: ArrayLike,
    gold_index: int,
    radius: float,
    *,
    stop_called: bool = True,
    strict: bool = True,
) -> bool:
    """Whether the agent stopped at a wrong branch's goal.

    True iff the agent called STOP and its final position is within ``radius`` of some non-gold
    leaf goal that is strictly nearer than the gold leaf (so a non-gold leaf at the gold goal's
    position, or one farther than the gold goal, never counts).

    Args:
        leaf_distances: final position → each leaf goal (geodesic).
        gold_index: index of the correct branch's leaf in ``leaf_distances``.
        radius: success radius.
        stop_called: whether the agent called STOP.
        strict: ``<`` (``False``: ``<=``), as for success.

    >>> wrong_branch([2.0, 0.5], 0, 1.0), wrong_branch([0.5, 0.5], 0, 1.0)
    (True, False)
    >>> wrong_branch([2.0, 0.5], 0, 1.0, stop_called=False)
    False
    """
    d = np.asarray(leaf_distances, dtype=np.float64)
    close = within(d, radius, strict=strict) & (d < d[gold_index])  # never the gold leaf itself
    return bool(stop_called and close.any())


def failure_category(
    *,
    success: int,
    valid: bool = True,
    stop_called: bool = True,
    wrong_branch: bool = False,
    oracle_success: int = 0,
    path_length: float = 0.0,
    shortest_path_length: float = 0.0,
) -> FailureCategory | None:
    """One category for every failed episode (``None`` for a successful one).

    The first rule that applies wins:

    1. ``"invalid"``: the prediction could not be scored (``valid`` false: missing or empty
       trajectory, non-finite or off-graph positions).
    2. ``"never_stopped"``: the agent never called STOP (it ran out of its action budget).
    3. ``"wrong_branch"``: it stopped within the radius of a non-gold leaf goal
       (:func:`wrong_branch`).
    4. ``"stopped_early"``: it stopped, never came within the radius of the gold goal
       (``oracle_success`` 0) and had travelled less than the shortest-path distance ℓ — it
       gave up before it could have reached the goal.
    5. ``"navigation"``: every other failure: it stopped, not at a wrong leaf, after either
       passing through the gold goal's radius or travelling at least ℓ (right branch, or no
       branch evidence, but it did not end at the goal).

    >>> failure_category(success=0, stop_called=False)
    'never_stopped'
    >>> failure_category(success=0, path_length=2.0, shortest_path_length=6.0)
    'stopped_early'
    >>> failure_category(success=0, oracle_success=1, path_length=2.0, shortest_path_length=6.0)
    'navigation'
    >>> failure_category(success=1) is None
    True
    """
    if success:
        return None
    if not valid:
        return "invalid"
    if not stop_called:
        return "never_stopped"
    if wrong_branch:
        return "wrong_branch"
    if not oracle_success and path_length < shortest_path_length:
        return "stopped_early"
    return "navigation"


def cancelling_turns(actions: Sequence[int] | ArrayLike) -> int:
    """Number of adjacent action pairs LEFT→RIGHT or RIGHT→LEFT (each undoes the other).

    Pairs overlap: LEFT, RIGHT, LEFT counts 2 (both transitions cancel).

    >>> cancelling_turns([1, 2, 3, 1, 3, 2, 2])
    2
    >>> cancelling_turns([2, 3, 2])
    2
    """
    return int(_cancelling_turns(np.asarray(actions, dtype=np.int64).ravel()))


@numba.njit(cache=True, nogil=True)
def _cancelling_turns(a: np.ndarray) -> int:  # pragma: no cover - compiled
    count = 0
    for j in range(1, a.size):
        if (a[j - 1] == LEFT and a[j] == RIGHT) or (a[j - 1] == RIGHT and a[j] == LEFT):
            count += 1
    return count


def forward_back(positions: ArrayLike, tolerance: float = 0.05) -> int:
    """Number of moves that return to within ``tolerance`` of the position two moves earlier.

    The positions are the recorded trajectory (in-place turns repeat a position). Consecutive
    exact duplicates are dropped first, so the remaining steps are the moves that changed the
    position (turns and blocked moves vanish); a move j counts when
    ``‖q_j − q_{j−2}‖ < tolerance``, e.g. forward, twelve 15° turns, forward.

    Args:
        positions: ``(n, d)`` recorded positions.
        tolerance: return distance in metres (default 0.05).

    >>> forward_back([[0, 0, 0], [0, 0, 0.25], [0, 0, 0.25], [0, 0, 0.0], [0.25, 0, 0]])
    1
    """
    p = np.asarray(positions, dtype=np.float64)
    if len(p) < 3:
        return 0
    return int(_forward_back(np.ascontiguousarray(p.reshape(len(p), -1)), tolerance))


@numba.njit(cache=True, nogil=True)
def _forward_back(p: np.ndarray, tolerance: float) -> int:  # pragma: no cover - compiled
    """:func:`forward_back` on ``(n, d)`` positions in one pass: ``one`` / ``two`` are the rows
    of the last two distinct positions."""
    count, one, two = 0, 0, -1
    for j in range(1, p.shape[0]):
        moved, gap = False, 0.0
        for c in range(p.shape[1]):
            moved = moved or p[j, c] != p[one, c]
            if two >= 0:
                gap += (p[j, c] - p[two, c]) ** 2
        if not moved:
            continue  # a consecutive duplicate (in-place turn, blocked move)
        if two >= 0 and math.sqrt(gap) < tolerance:
            count += 1
        two, one = one, j
    return count
