"""Blind baselines: choose the branch from priors, never from what is observed (VQA's
question-only baseline for conditional navigation).

* ``text_prior`` — parses the instruction and guesses each condition's truth from per-group
  frequencies learned on the **train** split of the dataset it runs on
  (:class:`~condvln.synth.priors.FrequencyPrior`);
* ``commonsense_prior`` — the same with the catalogue's world knowledge (room statistics,
  category heights, what rests on what: :class:`~condvln.synth.priors.CommonsensePrior`), no
  training data.

Both then navigate the chosen branch with the map planner (finding its targets by sight, as the
other baselines do). On a balanced dataset their branch accuracy sits at chance; ``condvln audit
--leakage`` measures the same probes without the simulator.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import ClassVar

from condvln.agents.skills import Script, SkillAgent
from condvln.program.ast import leaf_paths
from condvln.synth.priors import (
    CommonsensePrior,
    ConditionPrior,
    FrequencyPrior,
    labelled_conditions,
    predicted_leaf,
)


@functools.cache
def _train_prior(dataset_dir: Path) -> FrequencyPrior:
    from condvln.vlnce import load_split

    return FrequencyPrior(labelled_conditions(load_split(dataset_dir, "train")["episodes"]))


class PriorAgent(SkillAgent):
    """Runs the parsed program on a prior's guesses, then visits the chosen path's targets.

    Attributes:
        chosen: Index of the execution path chosen in the current episode (``None`` when the
            instruction does not parse).
    """

    needs_training_data: ClassVar[bool] = False
    chosen: int | None = None

    def prior(self) -> ConditionPrior:
        """The prior that decides every condition (override)."""
        raise NotImplementedError

    def script(self) -> Script:
        """Visit the targets of the path the prior's guesses select, then stop."""
        program = self.parsed()
        self.chosen = None
        if program is not None:
            self.chosen = predicted_leaf(program, self.prior())
            _, goes = leaf_paths(program.steps)[self.chosen]
            yield from self.visit_all([g.target for g in goes])


class TextPriorAgent(PriorAgent):
    """Guesses conditions from truth frequencies on the dataset's train split."""

    needs_training_data: ClassVar[bool] = True

    def fit(self, dataset_dir: Path) -> None:
        """Learn the per-group frequencies from ``dataset_dir``'s train split (cached)."""
        self._prior = _train_prior(Path(dataset_dir).resolve())

    def prior(self) -> ConditionPrior:
        """The train-split frequency prior (``fit`` must have been called)."""
        return self._prior


class CommonsensePriorAgent(PriorAgent):
    """Guesses conditions from the packaged catalogue's world knowledge."""

    def prior(self) -> ConditionPrior:
        """The catalogue prior."""
        return _commonsense()


@functools.cache
def _commonsense() -> CommonsensePrior:
    return CommonsensePrior()
