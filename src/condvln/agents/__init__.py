"""Agents: the interface, the built-in baselines, plug-in loading and the episode runner.

>>> AGENTS.names()
['commonsense_prior', 'condition_blind', 'goal_only', 'neurosymbolic', 'oracle_linear', 'random', 'text_prior']
"""

from condvln.agents import baselines as baselines  # registers the built-in agents
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
