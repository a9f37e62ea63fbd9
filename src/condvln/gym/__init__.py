"""The Gymnasium face of CondVLN: the environment, its spaces, rewards, rendering and wrappers.

``gymnasium.make("condvln/CondVLN-v0", dataset=..., split=...)`` builds
:class:`~condvln.gym.env.CondVLNEnv` (registered when ``gymnasium`` is imported, see
:mod:`condvln`); :func:`~condvln.gym.wrappers.standard_wrappers` turns its observations into the
fixed-size ``Box`` es RL libraries take.
"""

from condvln.gym.env import ENV_ID, CondVLNEnv
from condvln.gym.progress import GoldPath, RewardConfig
from condvln.gym.wrappers import (
    BudgetTimeLimit,
    FixedDetections,
    HabitatObservation,
    standard_wrappers,
)

__all__ = [
    "ENV_ID",
    "BudgetTimeLimit",
    "CondVLNEnv",
    "FixedDetections",
    "GoldPath",
    "HabitatObservation",
    "RewardConfig",
    "standard_wrappers",
]
