"""From a sampled instance to a VLN-CE episode: start pose, goals, reference path, labels.

The episode is a habitat-lab ``VLNEpisode`` (``R2RVLN-v1``): exactly the keys in
:data:`EPISODE_KEYS`; every CondVLN extra lives under ``info["condvln"]``. Subgoals are their
objects' approach points (``subgoals``: every target of the gold path before its goal, as the
paper's BSA counts them; ``branch_subgoals``: those inside the gold arm, after the first
decision — the pre-decision waypoints are the first ``horizon`` subgoals). The goal is where the
ground-truth follower (:mod:`.follower`) stops on its way to the goal object's approach point —
within half a step (0.125 m) of it, moved onto the navigable polygon — so that replaying the
``_gt`` locations scores NE = 0. The reference path is the exact shortest path start →
subgoals → approach point → goal, and ``info.geodesic_distance`` the exact geodesic start → goal
(not along the reference path); both come from the navigator passed in — the exact engine
(:class:`~condvln.nav.ExactNavigator`) when the dataset is generated, the same engine the
evaluator measures with. The step budget comes from the instruction and **all** its branches
(the longest execution path), so it does not reveal which branch is correct.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from condvln.dataset.follower import FORWARD_STEP, follow
from condvln.frames import yaw_to_quaternion
from condvln.nav import Navigator
from condvln.program.ast import leaf_paths
from condvln.program.render import render_instruction, render_linear
from condvln.program.templates import load_templates
from condvln.synth.sampler import Instance, Rejected

EPISODE_KEYS = (
    "episode_id",
    "trajectory_id",
    "scene_id",
    "start_position",
    "start_rotation",
    "info",
    "goals",
    "instruction",
    "reference_path",
)
"""Top-level keys of a train / val episode: habitat-lab ``VLNEpisode`` fields, nothing else."""

TEST_EPISODE_KEYS = (
    "episode_id",
    "trajectory_id",
    "scene_id",
    "start_position",
    "start_rotation",
    "goals",
    "instruction",
    "reference_path",
)
"""Keys of a test episode: VLN-CE's test split hides the answers, so ``info`` is left out and
``goals`` / ``reference_path`` are empty lists (VLN-CE's ``VLN-CE-v1`` reader accepts them absent,
habitat-lab's ``R2RVLN-v1`` requires them present; empty lists satisfy both)."""

OPTIONAL_EPISODE_KEYS = ("scene_dataset_config",)
"""habitat-lab ``Episode`` fields written only when a scene needs them (ReplicaCAD: its scene
dataset config); habitat-lab ≥ 0.2 reads them, VLN-CE's habitat-lab 0.1.7 does not know them."""

INSTRUCTION_KEYS = ("instruction_text", "instruction_tokens")
"""Keys of ``instruction``: habitat-lab ``InstructionData`` accepts exactly these."""

TURN_ALLOWANCE = 24
"""Budget steps per navigation target for turning (two full turns of 15°)."""

BUDGET_FACTOR = 6.0
"""Budget forward steps per forward step of the longest execution path. Agents locate objects
only by seeing them, so they search before they walk: with 3 the oracle-linear agent ran out of
steps in about a quarter of the procedural episodes while still searching."""


def _path(nav: Navigator, points: list[tuple[float, float, float]]) -> list[list[float]]:
    """Geodesic polyline through ``points`` (joints not repeated); ``Rejected`` if blocked."""
    out: list[list[float]] = [list(points[0])]
    for a, b in itertools.pairwise(points):
        leg = nav.shortest_path(a, b)
        if leg is None:
            raise Rejected("path_not_found")
        out.extend(list(map(float, p)) for p in leg[1:])
    return out


def path_length(path: list[list[float]]) -> float:
    """Length of a polyline (m)."""
    return float(sum(math.dist(a, b) for a, b in itertools.pairwise(path)))


def step_budget(
    nav: Navigator,
    inst: Instance,
    factor: float = BUDGET_FACTOR,
    per_target: int = TURN_ALLOWANCE,
) -> int:
    """Steps allowed: from the longest execution path of the program, whatever the gold one.

    ``ceil(factor × L_max / 0.25) + per_target × targets_max`` (defaults 6 and 24), with
    ``L_max`` the longest geodesic length start → waypoints → leaf over all branches and
    ``targets_max`` the most navigation targets on one branch.
    """
    longest, most_targets = 0.0, 0
    prefix = list(inst.resolution.targets[: inst.bucket.horizon])
    for arm in inst.resolution.branch_targets:  # sampled programs: waypoints, then one arm
        ids = [*prefix, *arm]
        points = [inst.start, *(inst.goal_points[o] for o in ids)]
        length = 0.0
        for a, b in itertools.pairwise(points):
            d = nav.distance_field(b).distance(a)
            if d is None:
                raise Rejected("branch_unreachable")
            length += d
        longest, most_targets = max(longest, length), max(most_targets, len(ids))
    return math.ceil(factor * longest / FORWARD_STEP) + per_target * most_targets


def build_episode(  # long: the episode is one literal of its VLN-CE and condvln fields
    inst: Instance,
    nav: Navigator,
    rng: np.random.Generator,
    words: np.random.Generator,
    *,
    scene_id: str,
    scene_dataset_config: str | None = None,
    radius: float,
    extras: dict[str, Any],
    budget: tuple[float, int] = (BUDGET_FACTOR, TURN_ALLOWANCE),
    held_out_share: float = 0.0,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The episode (without ``episode_id`` / tokens) and its ground-truth actions.

    ``rng`` draws the start heading, ``words`` the paraphrases of the instruction and its
    oracle text: a stream of their own, so a change of wording never moves a start heading
    (and with it reference paths, workload and balancing). ``budget`` is ``(factor,
    per_target)`` of :func:`step_budget`. With ``held_out_share`` > 0, that share of episodes
    (drawn from ``words``) is worded with every paraphrase, held-out ones included, the rest
    with the seen ones only; ``phrasing_seen`` records whether the text uses seen ones only.

    Raises:
        Rejected: ``path_not_found`` / ``branch_unreachable`` when a path cannot be found.
    """
    res = inst.resolution
    yaw = math.radians(15.0 * int(rng.integers(24)))
    reference, gt, goal, geodesic = _route(nav, inst, yaw, radius)
    executed = leaf_paths(inst.program.steps)[res.leaf_index][1]
    held_out = held_out_share > 0 and words.random() < held_out_share
    templates = load_templates("all" if held_out else "seen")
    text, phrasing_seen = render_instruction(inst.program, words, templates)
    oracle = render_linear([g.target for g in executed], words, templates)
    condvln = {
        "program": inst.program.to_dict(),
        "category": inst.bucket.category,
        "depth": inst.program.depth,
        "chain": inst.program.chain,
        "horizon": inst.bucket.horizon,
        "branch_steps": inst.bucket.branch_steps,
        "composition": inst.bucket.composition,
        "observability": inst.bucket.observability,
        "bucket": inst.bucket.key,
        "branch_path": list(res.branch_path),
        "condition_truths": [
            {"condition": c.to_dict(), "truth": t} for c, t in res.condition_truths
        ],
        "leaf_index": res.leaf_index,
        "n_branches": inst.n_leaves,
        "goal": _goal(res.goal, inst, radius, goal),
        "subgoals": [_goal(o, inst, radius) for o in res.subgoals],
        "branch_subgoals": [_goal(o, inst, radius) for o in res.branch_subgoals],
        "branch_goals": [
            _goal(o, inst, radius, goal if i == res.leaf_index else None)
            for i, o in enumerate(res.branch_goals)
        ],
        "gold_is_nearest": inst.gold_is_nearest,
        "reference_room": inst.reference_room,
        "oracle_instruction": oracle,
        "phrasing_seen": phrasing_seen,
        "pair_id": inst.pair_id,
        "step_budget": step_budget(nav, inst, *budget),
        **extras,
    }
    episode = {
        "trajectory_id": None,
        "scene_id": scene_id,
        "scene_dataset_config": scene_dataset_config,
        "start_position": list(inst.start),
        "start_rotation": list(yaw_to_quaternion(yaw)),
        "info": {"geodesic_distance": float(geodesic), "condvln": condvln},
        "goals": [{"position": list(goal), "radius": radius}],
        "instruction": {"instruction_text": text},
        "reference_path": reference,
    }
    return episode, gt


def _route(
    nav: Navigator, inst: Instance, yaw: float, radius: float
) -> tuple[list[list[float]], dict[str, Any], tuple[float, float, float], float]:
    """Reference path, ground truth, goal (where the follower stops) and start → goal geodesic.

    Raises:
        Rejected: when a path cannot be found or the goal cannot be placed.
    """
    points = [inst.start, *(inst.goal_points[o] for o in inst.resolution.targets)]
    reference = _path(nav, points)
    gt = follow(reference, yaw)
    goal = _goal_point(nav, gt["locations"][-1], inst, radius)
    reference += _path(nav, [points[-1], goal])[1:]
    geodesic = nav.distance(inst.start, goal)
    if geodesic is None:
        raise Rejected("path_not_found")
    return reference, gt, goal, geodesic


def _goal_point(
    nav: Navigator, end: list[float], inst: Instance, radius: float
) -> tuple[float, float, float]:
    """The goal: the follower's last location, moved onto the navigable area when it is off it.

    It keeps the sampler's separations: more than 2τ from the start (ground distance) and from
    every other target of the program.

    Raises:
        Rejected: ``goal_off_map`` when the navigator cannot measure from that location to the
            goal (nearer to an island than to the main navigable area); ``goal_separation``
            when the move brings it within 2τ of the start or another target.
    """
    goal = nav.snap(end)
    if goal is None or nav.distance(end, goal) != 0.0:
        raise Rejected("goal_off_map")
    gold = inst.resolution.goal
    others = [p for o, p in inst.goal_points.items() if o != gold]
    start_gap = math.hypot(goal[0] - inst.start[0], goal[2] - inst.start[2])
    if start_gap <= 2 * radius or any(math.dist(goal, p) <= 2 * radius for p in others):
        raise Rejected("goal_separation")
    return goal


def _goal(
    object_id: str, inst: Instance, radius: float, position: Sequence[float] | None = None
) -> dict[str, Any]:
    return {
        "object_id": object_id,
        "position": list(inst.goal_points[object_id] if position is None else position),
        "radius": radius,
    }
