"""Agents: the interface, the built-in baselines, plug-in loading and the episode runner.

The interface is :mod:`.base`; agents are found by name through the ``condvln.agents`` entry
points (:mod:`.loader`; the built-ins are :mod:`.baselines`, :mod:`.blind`, :mod:`.pixels` and
:mod:`.llm`); :mod:`.run` runs one on a split with the parts in :mod:`.runner`. Also here:
remote agents over HTTP (:mod:`.remote`, served by :mod:`condvln.agent_server`) and the
conformance checker (:mod:`.check`); the Gymnasium environment is :mod:`condvln.gym`.

>>> AGENTS.names()
['commonsense_prior', 'condition_blind', 'goal_only', 'llm', 'neurosymbolic', 'neurosymbolic_pixels', 'neurosymbolic_pixels_noisy', 'oracle_linear', 'random', 'text_prior']
"""

from condvln.agents.base import Agent, EpisodeView, instruction_source
from condvln.agents.loader import AGENTS, agent_factory, load_agent, parse_agent_args
from condvln.agents.run import EpisodeWorker, RunOptions, RunSummary, WorkerConfig, run_agent

__all__ = [
    "AGENTS",
    "Agent",
    "EpisodeView",
    "EpisodeWorker",
    "RunOptions",
    "RunSummary",
    "WorkerConfig",
    "agent_factory",
    "instruction_source",
    "load_agent",
    "parse_agent_args",
    "run_agent",
]
