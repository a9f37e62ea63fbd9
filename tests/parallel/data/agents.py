"""Test agents of the executor tests: a deterministic agent that can sleep and log its process."""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np


class SleepyAgent:
    """Random walk seeded by the episode, ``sleep`` seconds per act (a stand-in for a model).

    With ``pid_dir`` every instance leaves a file named after its process id there, so a test
    can find (and kill) the worker processes and count restarts.
    """

    instruction_source = "original"

    def __init__(self, sleep: float = 0.0, pid_dir: str | None = None, steps: int = 30) -> None:
        self.sleep, self.steps = sleep, steps
        if pid_dir is not None:
            Path(pid_dir, str(os.getpid())).touch()

    def reset(self, episode) -> None:
        self.rng = np.random.default_rng(episode.seed)
        self.limit = min(self.steps, episode.step_budget - 1)

    def act(self, observation) -> int:
        if self.sleep:
            time.sleep(self.sleep)
        if observation.step >= self.limit:
            return 0
        return int(self.rng.integers(1, 4))


class BrokenAgent:
    """An agent whose constructor fails (in the worker: the class names its instruction source)."""

    instruction_source = "original"

    def __init__(self) -> None:
        raise RuntimeError("no model file")

    def reset(self, episode) -> None:
        pass

    def act(self, observation) -> int:
        return 0
