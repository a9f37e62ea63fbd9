"""Agents: the interface, the built-in baselines, plug-in loading and the episode runner.

>>> AGENTS.names()
['condition_blind', 'goal_only', 'neurosymbolic', 'neurosymbolic_pixels', 'neurosymbolic_pixels_noisy', 'oracle_linear', 'random']
"""

from condvln.agents import baselines as baselines  # registers the built-in agents
from condvln.agents import pixels as pixels  # registers the pixel-perception agents
from condvln.agents.base import (
    AGENTS,
    Agent,
    EpisodeView,
    agent_factory,
    instruction_source,
    load_agent,
)
from condvln.agents.run import RunSummary, run_agent

__all__ = [
    "AGENTS",
    "Agent",
    "EpisodeView",
    "RunSummary",
    "agent_factory",
    "instruction_source",
    "load_agent",
    "run_agent",
]
