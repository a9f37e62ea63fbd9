"""The agent's body and the settings of the built-in grid navigator.

Defaults follow VLN-CE / habitat-sim: a cylinder of 0.1 m radius and 1.5 m height that can step
over anything up to 0.2 m tall (habitat-sim's ``NavMeshSettings.agent_max_climb``).

>>> AgentSpec()
AgentSpec(radius=0.1, height=1.5, max_climb=0.2)
>>> AgentSpec(radius=-1.0)
Traceback (most recent call last):
...
condvln.errors.ConfigError: agent radius must be a positive finite number, got -1.0
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from condvln.errors import ConfigError

Solver = Literal["fmm", "dijkstra"]


def _require_positive(value: float, what: str, *, allow_zero: bool = False) -> None:
    ok = math.isfinite(value) and (value >= 0.0 if allow_zero else value > 0.0)
    if not ok:
        kind = "non-negative" if allow_zero else "positive"
        raise ConfigError(f"{what} must be a {kind} finite number, got {value!r}")


@dataclass(frozen=True, slots=True)
class AgentSpec:
    """The agent's body: a vertical cylinder standing on the floor.

    Attributes:
        radius: Cylinder radius in metres; the navigable area keeps this far from walls/obstacles.
        height: Cylinder height in metres; objects overlapping ``[floor, floor + height]`` block.
        max_climb: Objects whose top is at most this far above the floor do not block (rugs,
            floor meshes, thresholds).
    """

    radius: float = 0.1
    height: float = 1.5
    max_climb: float = 0.2

    def __post_init__(self) -> None:
        _require_positive(self.radius, "agent radius")
        _require_positive(self.height, "agent height")
        _require_positive(self.max_climb, "agent max_climb", allow_zero=True)
        if self.max_climb >= self.height:
            raise ConfigError(
                f"agent max_climb ({self.max_climb}) must be below its height ({self.height})"
            )


@dataclass(frozen=True, slots=True)
class GridConfig:
    """Settings of the occupancy-grid navigator.

    Attributes:
        cell_size: Edge of one grid cell in metres.
        solver: ``"fmm"`` (scikit-fmm fast marching, second order) or ``"dijkstra"`` (scipy on
            the 16-connected grid, ≤ 2.8 % longer; used automatically when scikit-fmm is missing).
        reach: An object is reached from any navigable point within this distance (metres) of
            its footprint; see :meth:`GridNavigator.approach_point`.
        max_snap: Query points off the navigable area are moved to the nearest free cell when it
            is at most this far (metres); farther points are unreachable.
        cache_size: Distance fields kept per navigator (least recently used are dropped).
    """

    cell_size: float = 0.05
    solver: Solver = "fmm"
    reach: float = 1.0
    max_snap: float = 0.5
    cache_size: int = 32

    def __post_init__(self) -> None:
        _require_positive(self.cell_size, "cell_size")
        _require_positive(self.reach, "reach")
        _require_positive(self.max_snap, "max_snap", allow_zero=True)
        if self.solver not in ("fmm", "dijkstra"):
            raise ConfigError(f"solver must be 'fmm' or 'dijkstra', got {self.solver!r}")
        if self.cache_size < 1:
            raise ConfigError(f"cache_size must be at least 1, got {self.cache_size!r}")
