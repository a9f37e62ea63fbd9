"""Agents that break the contract in one way each (for ``condvln check-agent`` tests)."""

import gzip
import os
import random


class PeekingAgent:
    """Reads the split file (goals, reference paths) in ``reset``: a label leak."""

    def __init__(self, dataset):
        self.dataset = dataset

    def reset(self, episode):
        with gzip.open(os.path.join(self.dataset, "train", "train.json.gz")) as fh:
            self.labels = fh.read()

    def act(self, observation):
        return 0


class MoodyAgent:
    """Ignores the episode seed: not reproducible."""

    def reset(self, episode):
        self.rng = random.Random()

    def act(self, observation):
        return 0 if observation.step >= 20 else self.rng.choice([1, 2, 3])


class YesAgent:
    """Answers ``True`` (a bool is not an action)."""

    def reset(self, episode):
        pass

    def act(self, observation):
        return True


class RudeAgent:
    """``act`` takes no observation."""

    def reset(self, episode):
        pass

    def act(self):
        return 0
