"""Progress along an episode's gold path: the per-step metrics and the rewards of the environment.

The gold path's targets are the episode's subgoals in order, then its goal: ``x_0 … x_m`` (``x_m``
the goal). After every step the agent has *reached* the first ``k`` of them (``k ≤ m``): ``k``
grows while the geodesic distance to ``x_k`` is below the success radius (strictly, in order,
several at once allowed — the rule of BSA's :func:`~condvln.evaluation.metrics.subgoals_reached`),
so the goal itself is never passed. The *gold path left* is

    ``D_t = g(p_t, x_k) + Σ_{j=k}^{m−1} g(x_j, x_{j+1})``

with ``g`` the geodesic distance (the evaluation's, off-map points included). It is continuous
up to the radius when a target is reached: ``k`` only moves on when ``g(p, x_k) < radius``.

Rewards:

* ``"sparse"`` (default): ``r_t = 1`` on the last step of a successful episode, else 0.
* ``"distance"``: ``r_t = (D_{t−1} − D_t) + slack + success · [the episode ends in success]``,
  potential-based shaping on ``D`` plus habitat-baselines' per-step slack (``−0.01``) and
  success bonus (``2.5``) by default; over an episode the shaping terms telescope to
  ``D_0 − D_T``.

>>> def straight(points, target):  # an empty plane: geodesic = Euclidean distance
...     return np.linalg.norm(np.asarray(points) - target, axis=-1)
>>> path = GoldPath([(2.0, 0.0, 0.0), (2.0, 0.0, 2.0)], radius=0.5, distance=straight)
>>> path.reset((0.0, 0.0, 0.0))["gold_path_left"]
4.0
>>> m = path.update((1.75, 0.0, 0.0)); m["targets_reached"], m["gold_path_left"]
(1, 2.0155644370746373)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from condvln.errors import ConfigError

DistanceFn = Callable[[np.ndarray, np.ndarray], np.ndarray]
"""Geodesic distances from points ``(N, 3)`` to one target ``(3,)``."""

RewardKind = Literal["sparse", "distance"]


@dataclass(frozen=True, slots=True)
class RewardConfig:
    """Which reward the environment gives (see the module notes).

    Attributes:
        kind: ``"sparse"`` or ``"distance"``.
        success: Bonus of a successful end (``"distance"`` only; the sparse reward is 1).
        slack: Added at every step (``"distance"`` only).
    """

    kind: RewardKind = "sparse"
    success: float = 2.5
    slack: float = -0.01

    def __post_init__(self) -> None:
        if self.kind not in ("sparse", "distance"):
            raise ConfigError(f"unknown reward {self.kind!r} (known: 'sparse', 'distance')")

    def reward(self, progress: float, ended: bool, success: bool) -> float:
        """The reward of one step that shortened the gold path left by ``progress``."""
        if self.kind == "sparse":
            return float(ended and success)
        return progress + self.slack + (self.success if ended and success else 0.0)


class GoldPath:
    """Tracks the targets reached and the gold path left as the agent moves.

    Args:
        targets: The subgoals in order, then the goal (positions).
        radius: The success radius (a target is reached strictly within it).
        distance: Geodesic distances to a target.
    """

    def __init__(self, targets: Sequence[Sequence[float]], radius: float, distance: DistanceFn):
        if not targets:
            raise ConfigError("a gold path needs at least its goal")
        self.targets = np.asarray(targets, dtype=np.float64).reshape(-1, 3)
        self.radius = float(radius)
        self._distance = distance
        legs = [
            float(distance(self.targets[j : j + 1], self.targets[j + 1])[0])
            for j in range(len(self.targets) - 1)
        ]
        self._tail = np.append(np.cumsum(legs[::-1])[::-1], 0.0)  # Σ of the legs from x_k on
        self.reached = 0

    def _to(self, point: np.ndarray, k: int) -> float:
        return float(self._distance(point, self.targets[k])[0])

    def reset(self, position: Sequence[float]) -> dict[str, float | int]:
        """Start over at ``position``; returns its metrics (as :meth:`update`)."""
        self.reached = 0
        return self.update(position)

    def update(self, position: Sequence[float]) -> dict[str, float | int]:
        """Move to ``position``; returns ``targets_reached``, ``distance_to_target``,
        ``distance_to_goal`` and ``gold_path_left``."""
        point = np.asarray(position, dtype=np.float64).reshape(1, 3)
        last = len(self.targets) - 1
        to_target = self._to(point, self.reached)
        while self.reached < last and to_target < self.radius:
            self.reached += 1
            to_target = self._to(point, self.reached)
        return {
            "targets_reached": self.reached,
            "distance_to_target": to_target,
            "distance_to_goal": to_target if self.reached == last else self._to(point, last),
            "gold_path_left": to_target + float(self._tail[self.reached]),
        }
