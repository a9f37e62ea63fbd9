"""The agent interface, what an agent knows about an episode, and the agent registry.

An agent implements :class:`Agent`: ``reset(episode)`` once per episode, then ``act(observation)``
once per step until the episode ends. It learns about the episode only through
:class:`EpisodeView` (ids, instruction text, step budget, protocol, map) and the observations —
never labels, goals or reference paths.

Agents are registered by name in :data:`AGENTS` (a class or a factory) and can also be loaded
as ``"package.module:ClassName"`` (the current folder is importable), as
``"path/to/file.py:ClassName"`` or, over HTTP, as ``"http://HOST:PORT"``
(:mod:`condvln.agents.remote`). Keyword arguments go to the constructor (``--agent-arg k=v``).

An agent declaring ``observation_format = "habitat"`` receives habitat-lab observation dicts
(``rgb``, ``depth``, ``semantic``, ``instruction`` ``{"text", "tokens", "trajectory_id"}``,
``heading``, ``compass``, ``gps``: :mod:`condvln.sim.habitat_obs`) instead of
:class:`~condvln.sim.protocol.Observation` s, in-process and over HTTP alike.

A *batched* agent also has ``act_batch(observations, episode_ids) -> actions``: the runner then
steps several episodes in lockstep, calling ``reset`` once per new episode (keep per-episode
state keyed by ``episode.episode_id``) and ``act_batch`` once per step of the batch.

>>> type(load_agent("random")).__name__
'RandomAgent'
>>> load_agent("randon")
Traceback (most recent call last):
...
condvln.errors.ConfigError: unknown agent 'randon'; did you mean 'random'? (known: commonsense_prior, condition_blind, goal_only, llm, neurosymbolic, neurosymbolic_pixels, neurosymbolic_pixels_noisy, oracle_linear, random, text_prior)
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol, runtime_checkable

import orjson

from condvln.errors import CondVLNError, ConfigError
from condvln.registry import Registry
from condvln.sim.mapview import MapView
from condvln.sim.protocol import Observation, ObservationProtocol
from condvln.sim.render import SemanticTable

InstructionSource = Literal["original", "oracle"]
ObservationFormat = Literal["condvln", "habitat"]


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


AgentFactory = Callable[..., Agent]

AGENTS: Registry[AgentFactory] = Registry("agent")
"""Built-in agents by name (filled by :mod:`condvln.agents.baselines`)."""


def is_remote(name: str) -> bool:
    """Whether ``name`` is the URL of an agent server."""
    return name.startswith(("http://", "https://"))


def _import_file(path: Path) -> Any:
    """Import a Python file as a module of its own (its folder becomes importable)."""
    if not path.is_file():
        raise ConfigError(f"cannot load agent: no file {path}")
    digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]
    module_name = f"condvln_user_agent_{path.stem}_{digest}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    folder = str(path.resolve().parent)
    if folder not in sys.path:
        sys.path.append(folder)
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ConfigError(f"cannot load agent: {path} is not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:  # the module's own code failed (sys.exit included)
        del sys.modules[module_name]
        raise ConfigError(f"cannot load agent from {path}: {type(exc).__name__}: {exc}") from None
    return module


def _import_module(module_name: str) -> Any:
    """Import ``package.module``, with the current folder importable (no PYTHONPATH needed)."""
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.append(cwd)
    try:
        return importlib.import_module(module_name)
    except (Exception, SystemExit) as exc:
        raise ConfigError(f"cannot load agent module {module_name!r}: {exc}") from None


def agent_factory(name: str) -> AgentFactory:
    """The factory of a registered agent, ``"module:Class"``, ``"file.py:Class"`` or a URL.

    Raises:
        ConfigError: An unknown name, or a class that cannot be imported.
    """
    if is_remote(name):
        from condvln.agents.remote import RemoteAgent

        return lambda **kwargs: RemoteAgent(name, **kwargs)
    if ":" in name:
        where, _, attr = name.rpartition(":")
        looks_like_file = where.endswith(".py") or "/" in where or os.sep in where
        module = _import_file(Path(where)) if looks_like_file else _import_module(where)
        factory = getattr(module, attr, None)
        if factory is None:
            raise ConfigError(f"cannot load agent {name!r}: {where} has no attribute {attr!r}")
        if not callable(factory):
            raise ConfigError(f"agent {name!r} is not a class or factory")
        return factory  # type: ignore[no-any-return]
    import condvln.agents.baselines
    import condvln.agents.pixels  # noqa: F401  (register the built-in agents)

    return AGENTS.get(name)


def load_agent(name: str, args: Mapping[str, Any] | None = None) -> Agent:
    """A new agent instance by name, ``"module:Class"``, ``"file.py:Class"`` or URL.

    Args:
        name: The agent spec.
        args: Keyword arguments of the constructor.

    Raises:
        ConfigError: The agent cannot be loaded, its constructor rejects the arguments
            (``TypeError``) or fails (any exception, ``SystemExit`` included), or what it
            builds has no ``reset`` and ``act`` / ``act_batch``.
    """
    factory = agent_factory(name)
    try:
        agent = factory(**dict(args or {}))
    except CondVLNError:
        raise
    except TypeError as exc:
        if args:
            raise ConfigError(f"agent {name!r} rejects its arguments: {exc}") from None
        raise ConfigError(
            f"agent {name!r} cannot be constructed without arguments: {exc}"
        ) from None
    except (Exception, SystemExit) as exc:  # the agent's own code failed (sys.exit included)
        raise ConfigError(
            f"agent {name!r} failed to start: {type(exc).__name__}: {exc}".splitlines()[0]
        ) from None
    if not is_remote(name) and not _has_agent_methods(agent):
        raise ConfigError(
            f"agent {name!r} is not an agent: it built a {type(agent).__name__}, which has no "
            "reset(episode) and act(observation) / act_batch(observations, episode_ids)"
        )
    return agent


def _has_agent_methods(agent: Any) -> bool:
    """Whether ``agent`` has a callable ``reset`` and a callable ``act`` or ``act_batch``."""
    acts = callable(getattr(agent, "act", None)) or callable(getattr(agent, "act_batch", None))
    return callable(getattr(agent, "reset", None)) and acts


def parse_agent_args(items: Iterable[str]) -> dict[str, Any]:
    """``["k=v", ...]`` → ``{k: v}``, each value parsed as JSON (a plain string otherwise).

    >>> parse_agent_args(["temperature=0.5", "name=blip", 'ids=[1, 2]', "cache=null"])
    {'temperature': 0.5, 'name': 'blip', 'ids': [1, 2], 'cache': None}
    >>> parse_agent_args(["oops"])
    Traceback (most recent call last):
    ...
    condvln.errors.ConfigError: --agent-arg 'oops': expected KEY=VALUE
    """
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip().isidentifier():
            raise ConfigError(f"--agent-arg {item!r}: expected KEY=VALUE")
        try:
            out[key.strip()] = orjson.loads(value)
        except orjson.JSONDecodeError:
            out[key.strip()] = value
    return out


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
