"""Test agents of the executor tests: a deterministic agent that can sleep and log its process."""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np


class SleepyAgent:
    """Random walk seeded by the episode, ``sleep`` seconds per act (a stand-in for a model).

    With ``pid_dir`` every instance leaves a file named after its process id there, so a test
    can find (and kill) the worker processes and count restarts. With ``gate`` (a folder) the
    first ``act`` of each process leaves a file named after its process id there and waits
    until ``gate/open`` exists: a test knows the workers are inside a task, not guesses it.
    """

    instruction_source = "original"

    def __init__(
        self,
        sleep: float = 0.0,
        pid_dir: str | None = None,
        steps: int = 30,
        gate: str | None = None,
    ) -> None:
        self.sleep, self.steps, self.gate = sleep, steps, gate
        if pid_dir is not None:
            Path(pid_dir, str(os.getpid())).touch()

    def reset(self, episode) -> None:
        self.rng = np.random.default_rng(episode.seed)
        self.limit = min(self.steps, episode.step_budget - 1)

    def act(self, observation) -> int:
        if self.gate is not None:
            self._wait_at_gate(Path(self.gate))
        if self.sleep:
            time.sleep(self.sleep)
        if observation.step >= self.limit:
            return 0
        return int(self.rng.integers(1, 4))

    def _wait_at_gate(self, gate: Path) -> None:
        """Say this process is inside a task, and wait until the test opens the gate."""
        (gate / str(os.getpid())).touch()
        while not (gate / "open").exists():
            time.sleep(0.01)
        self.gate = None


class BrokenAgent:
    """An agent whose constructor fails (in the worker: the class names its instruction source)."""

    instruction_source = "original"

    def __init__(self) -> None:
        raise RuntimeError("no model file")

    def reset(self, episode) -> None:
        pass

    def act(self, observation) -> int:
        return 0
