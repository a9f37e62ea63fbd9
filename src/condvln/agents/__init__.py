"""Agents: the interface, the built-in baselines, plug-in loading and the episode runner.

Also here: remote agents over HTTP (:mod:`.remote`, served by :mod:`condvln.agent_server`), the
Gymnasium environment (:mod:`.gym_env`) and the conformance checker (:mod:`.check`).

>>> AGENTS.names()
['commonsense_prior', 'condition_blind', 'goal_only', 'llm', 'neurosymbolic', 'neurosymbolic_pixels', 'neurosymbolic_pixels_noisy', 'oracle_linear', 'random', 'text_prior']
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
    parse_agent_args,
)
from condvln.agents.run import EpisodeWorker, RunSummary, WorkerConfig, run_agent

__all__ = [
    "AGENTS",
    "Agent",
    "EpisodeView",
    "EpisodeWorker",
    "RunSummary",
    "WorkerConfig",
    "agent_factory",
    "instruction_source",
    "load_agent",
    "parse_agent_args",
    "run_agent",
]
