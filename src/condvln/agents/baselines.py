"""The built-in baseline agents (entry points of ``condvln.agents``: :mod:`condvln.agents.loader`).

* ``random`` — VLN-CE's random baseline: STOP 2 %, FORWARD 68 %, LEFT 15 %, RIGHT 15 % each
  step (seeded per episode), STOP when the budget ends.
* ``condition_blind`` — parses the instruction and always takes the then-branch: visits the
  targets of the program's first execution path in order.
* ``goal_only`` — goes to the last target mentioned in the instruction (the final leaf).
* ``oracle_linear`` — reads the episode's oracle-linear instruction (the paper's oracle, a
  dataset transformation: the runner hands it that text) and visits its targets in order.
* ``neurosymbolic`` — runs the parsed program: gathers the evidence of each condition it meets
  (presence: find the named room, look around in it; relation: find both objects, evaluate the
  predicate on what it saw), then follows the chosen branch. The non-oracle counterpart of the
  oracle. It reads every paraphrase of the generator's grammar; with ``phrasing="seen"``
  (``--agent-arg phrasing=seen``, the ``neurosymbolic_train_phrasing`` row of ``condvln
  benchmark --full``) only
  those train is worded with, so a text using a held-out one leaves it without a program and
  it stops where it starts.

The blind ``text_prior`` and ``commonsense_prior`` agents live in :mod:`condvln.agents.blind`,
the language-model agent ``llm`` in :mod:`condvln.agents.llm`.

All but ``random`` navigate with the map planner and find objects only by seeing them
(:mod:`condvln.agents.skills`).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import ClassVar

import numpy as np

from condvln.agents.base import EpisodeView, InstructionSource
from condvln.agents.skills import Script, SkillAgent
from condvln.errors import ConfigError
from condvln.graph import Truth
from condvln.program.ast import Condition, Exists, Go, Step, leaf_paths
from condvln.program.templates import Phrasing
from condvln.sim.protocol import Observation
from condvln.sim.simulator import ACTIONS, STOP

RANDOM_ACTION_PROBS = (0.02, 0.68, 0.15, 0.15)
"""VLN-CE ``RandomAgent`` action distribution (STOP, FORWARD, LEFT, RIGHT)."""


class RandomAgent:
    """Random actions with VLN-CE's training action distribution (seeded per episode)."""

    instruction_source: ClassVar[InstructionSource] = "original"

    def reset(self, episode: EpisodeView) -> None:
        """Seed the episode's generator."""
        self._rng = np.random.default_rng(episode.seed)
        self._budget = episode.step_budget

    def act(self, observation: Observation) -> int:
        """A random action (STOP on the last step of the budget)."""
        if observation.step >= self._budget - 1:
            return STOP
        return int(self._rng.choice(len(ACTIONS), p=RANDOM_ACTION_PROBS))


class FirstPathAgent(SkillAgent):
    """Visits the targets of the first execution path (every condition taken as true)."""

    def script(self) -> Script:
        """Visit the then-branch targets in order, then stop."""
        program = self.parsed()
        if program is not None:
            _, goes = leaf_paths(program.steps)[0]
            yield from self.visit_all([g.target for g in goes])


class ConditionBlindAgent(FirstPathAgent):
    """Takes the then-branch at every conditional (waypoints before it included)."""


class OracleLinearAgent(FirstPathAgent):
    """Follows the oracle-linear instruction (a linear program: its only path)."""

    instruction_source: ClassVar[InstructionSource] = "oracle"


class GoalOnlyAgent(SkillAgent):
    """Goes to the last target mentioned in the instruction."""

    def script(self) -> Script:
        """Visit the final leaf of the program, then stop."""
        program = self.parsed()
        if program is not None:
            _, goes = leaf_paths(program.steps)[-1]
            yield from self.visit(goes[-1].target)


class NeurosymbolicAgent(SkillAgent):
    """Evaluates each condition on perceived evidence, then follows the chosen branch.

    Args:
        phrasing: ``"all"`` (default): read every paraphrase of the generator's grammar;
            ``"seen"``: only those of train (a reader that learnt from train alone).

    Attributes:
        decisions: The branch taken at each conditional of the current episode, in order.
    """

    def __init__(self, phrasing: Phrasing = "all") -> None:
        if phrasing not in ("all", "seen"):
            raise ConfigError(
                f"agent neurosymbolic: phrasing must be 'all' or 'seen', got {phrasing!r}"
            )
        self.phrasing = phrasing

    def script(self) -> Script:
        """Run the parsed program, then stop."""
        self.decisions: list[bool] = []
        program = self.parsed()
        if program is not None:
            yield from self.execute(program.steps)

    def execute(self, steps: tuple[Step, ...]) -> Script:
        """Run ``steps``: visit targets, decide conditionals on evidence."""
        for step in steps:
            if isinstance(step, Go):
                yield from self.visit(step.target)
                continue
            value = yield from self.evaluate(step.condition)
            self.decisions.append(value)
            yield from self.execute(step.then if value else step.orelse)

    def evaluate(self, condition: Condition) -> Generator[int, None, bool]:
        """Gather the evidence of ``condition`` and decide it (true when evidence is missing)."""
        if isinstance(condition, Exists):
            return (yield from self.presence(condition))
        subject = yield from self.find(condition.subject)
        target = yield from self.find(condition.target)
        if subject is None or target is None:
            return True
        return self.memory.truth(subject, condition.predicate, target) is Truth.TRUE

    def presence(self, condition: Exists) -> Generator[int, None, bool]:
        """Find the room of the stated type, look around in it, report whether the object is there."""
        memory, explorer = self.memory, self.explorer

        def seen() -> bool:
            return bool(
                memory.of_category(condition.category, set(memory.rooms_of_type(condition.room)))
            )

        while not seen():
            rooms = memory.rooms_of_type(condition.room)
            if not rooms:
                more = yield from self.explore(lambda: bool(memory.rooms_of_type(condition.room)))
                if not more:
                    return True
                continue
            room = rooms[0]
            point = explorer.rooms.get(room)
            if room in explorer.scanned or point is None:
                break
            arrived = yield from self.go_to(point, seen)
            if not arrived and not seen():
                break
            explorer.scanned.add(room)
            yield from self.look_around()
        return seen()


__all__ = [
    "ConditionBlindAgent",
    "GoalOnlyAgent",
    "NeurosymbolicAgent",
    "OracleLinearAgent",
    "RandomAgent",
]
