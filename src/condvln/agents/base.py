"""The agent interface: what an agent is, and what it knows about an episode.

An agent implements :class:`Agent`: ``reset(episode)`` once per episode, then ``act(observation)``
once per step until the episode ends. It learns about the episode only through
:class:`EpisodeView` (ids, instruction text, step budget, protocol, map) and the observations —
never labels, goals or reference paths. How agents are found by name (entry points, files,
modules, URLs) is :mod:`condvln.agents.loader`; this module imports none of them.

An agent declaring ``observation_format = "habitat"`` receives habitat-lab observation dicts
(``rgb``, ``depth``, ``semantic``, ``instruction`` ``{"text", "tokens", "trajectory_id"}``,
``heading``, ``compass``, ``gps``: :mod:`condvln.sim.habitat_obs`) instead of
:class:`~condvln.sim.protocol.Observation` s, in-process and over HTTP alike.

A *batched* agent also has ``act_batch(observations, episode_ids) -> actions``: the runner then
steps several episodes in lockstep, calling ``reset`` once per new episode (keep per-episode
state keyed by ``episode.episode_id``) and ``act_batch`` once per step of the batch.

An agent declaring ``needs_training_data = True`` gets ``fit(dataset_dir)`` once before its
first episode (:func:`prepare`).

An agent class declaring ``reads_text = True`` is built once when the run is planned, and its
``text_protocol`` (the stamp of the text rendering and prompt it reads observations through,
JSON data) joins the run's protocol stamp. An agent with ``episode_notes(episode_id)`` returns
JSON data about a finished episode (e.g. token usage, branch decisions), recorded as the
episode's ``agent_notes``. The ``llm`` agent (:mod:`condvln.agents.llm`) does both.

>>> class Still:
...     def reset(self, episode): ...
...     def act(self, observation): return 0
>>> is_batched(Still()), observation_format(Still()), instruction_source(Still())
(False, 'condvln', 'original')
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol, runtime_checkable

from condvln.errors import ConfigError
from condvln.sim.mapview import MapView
from condvln.sim.protocol import Observation, ObservationProtocol
from condvln.sim.render import SemanticTable

InstructionSource = Literal["original", "oracle"]
ObservationFormat = Literal["condvln", "habitat"]


DEFAULT_STEP_TIMEOUT = 60.0
"""Seconds one agent call (``reset``, ``act``, ``act_batch``; over HTTP each request, ``/info``
included) may take unless the run says otherwise (``--step-timeout``; ``0``: no limit)."""


class AgentTimeout(Exception):
    """An agent call that did not return within the step timeout (raised by the harness)."""


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
        semantics: What the semantic sensor's pixel values denote (``None`` unless the
            protocol has the ``"semantic"`` sensor), like habitat's semantic annotations.
        instruction_tokens: The instruction's token indices in the split's vocabulary (habitat's
            ``instruction["tokens"]``).
        trajectory_id: The episode's ``trajectory_id`` (``None`` when it has none).
    """

    episode_id: int | str
    scene_id: str
    instruction: str
    step_budget: int
    protocol: ObservationProtocol
    map: MapView | None
    seed: int
    semantics: SemanticTable | None = None
    instruction_tokens: tuple[int, ...] = ()
    trajectory_id: int | None = None


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


def is_remote(name: str) -> bool:
    """Whether the agent spec ``name`` is the URL of an agent server."""
    return name.startswith(("http://", "https://"))


def prepare(agent: object, dataset_dir: Path) -> None:
    """Give an agent that learns from training data the dataset it runs on (others: no-op)."""
    if getattr(agent, "needs_training_data", False):
        agent.fit(dataset_dir)  # type: ignore[attr-defined]


def is_batched(agent: Any) -> bool:
    """Whether ``agent`` can step several episodes per call (``act_batch``, batch size > 1)."""
    return callable(getattr(agent, "act_batch", None)) and getattr(agent, "max_batch_size", 2) > 1


def observation_format(agent: Any) -> ObservationFormat:
    """Which observations ``agent`` reads: ``"condvln"`` (:class:`Observation`, the default) or
    ``"habitat"`` (habitat-lab's dict, :func:`~condvln.sim.habitat_obs.habitat_observation`)."""
    form = getattr(agent, "observation_format", "condvln")
    if form not in ("condvln", "habitat"):
        raise ConfigError(f"agent observation_format must be 'condvln' or 'habitat', got {form!r}")
    return form  # type: ignore[no-any-return]


def instruction_source(agent: Agent) -> InstructionSource:
    """Which instruction ``agent`` reads (``"original"`` unless it declares otherwise)."""
    source = getattr(agent, "instruction_source", "original")
    if source not in ("original", "oracle"):
        raise ConfigError(
            f"agent instruction_source must be 'original' or 'oracle', got {source!r}"
        )
    return source  # type: ignore[no-any-return]
