"""The agent interface, what an agent knows about an episode, and the agent registry.

An agent implements :class:`Agent`: ``reset(episode)`` once per episode, then ``act(observation)``
once per step until the episode ends. It learns about the episode only through
:class:`EpisodeView` (ids, instruction text, step budget, protocol, map) and the observations —
never labels, goals or reference paths.

Agents are registered by name in :data:`AGENTS` (a class or a factory taking no arguments) and
can also be loaded from any module as ``"package.module:ClassName"``:

>>> type(load_agent("random")).__name__
'RandomAgent'
>>> load_agent("randon")
Traceback (most recent call last):
...
condvln.errors.ConfigError: unknown agent 'randon'; did you mean 'random'? (known: commonsense_prior, condition_blind, goal_only, neurosymbolic, oracle_linear, random, text_prior)
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, Literal, Protocol, runtime_checkable

from condvln.errors import ConfigError
from condvln.registry import Registry
from condvln.sim.mapview import MapView
from condvln.sim.protocol import Observation, ObservationProtocol

InstructionSource = Literal["original", "oracle"]


@dataclass(frozen=True, slots=True)
class EpisodeView:
    """Everything an agent may know about an episode before it starts.

    Attributes:
        episode_id: The episode id.
        scene_id: The scene file named by the episode (relative to the dataset folder).
        instruction: The instruction text (the oracle-linear text for oracle agents).
        step_budget: Actions allowed, STOP included.
        protocol: The observation protocol of the run.
        map: The planner over the navigable map (``None`` unless ``protocol.map_access``).
        seed: The agent's seed for this episode (from the run seed and the episode id).
    """

    episode_id: int | str
    scene_id: str
    instruction: str
    step_budget: int
    protocol: ObservationProtocol
    map: MapView | None
    seed: int


@runtime_checkable
class Agent(Protocol):
    """An embodied agent with the VLN-CE action space (0 STOP, 1 FORWARD, 2 LEFT, 3 RIGHT).

    Attributes:
        instruction_source: Which instruction the runner gives it: ``"original"`` (the
            conditional text) or ``"oracle"`` (the episode's oracle-linear text).
    """

    instruction_source: ClassVar[InstructionSource]

    def reset(self, episode: EpisodeView) -> None:
        """Start a new episode."""
        ...

    def act(self, observation: Observation) -> int:
        """The next action given the latest observation."""
        ...


AgentFactory = Callable[[], Agent]

AGENTS: Registry[AgentFactory] = Registry("agent")
"""Built-in agents by name (filled by :mod:`condvln.agents.baselines`)."""


def agent_factory(name: str) -> AgentFactory:
    """The factory of a registered agent, or of ``"module:Class"``.

    Raises:
        ConfigError: An unknown name, or a ``module:Class`` that cannot be imported.
    """
    if ":" in name:
        module_name, _, attr = name.partition(":")
        try:
            factory = getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError) as exc:
            raise ConfigError(f"cannot load agent {name!r}: {exc}") from None
        if not callable(factory):
            raise ConfigError(f"agent {name!r} is not a class or factory")
        return factory  # type: ignore[no-any-return]
    import condvln.agents.baselines  # noqa: F401  (registers the built-in agents)

    return AGENTS.get(name)


def load_agent(name: str) -> Agent:
    """A new agent instance by registered name or ``"module:Class"``."""
    return agent_factory(name)()


def instruction_source(agent: Agent) -> InstructionSource:
    """Which instruction ``agent`` reads (``"original"`` unless it declares otherwise)."""
    source = getattr(agent, "instruction_source", "original")
    if source not in ("original", "oracle"):
        raise ConfigError(
            f"agent instruction_source must be 'original' or 'oracle', got {source!r}"
        )
    return source  # type: ignore[no-any-return]
