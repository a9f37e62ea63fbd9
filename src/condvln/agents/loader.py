"""Agents by name: the ``condvln.agents`` entry points, ``module:Class``, ``file.py:Class``, URLs.

Every agent name — the built-ins too — is an entry point of the group ``condvln.agents`` in
some installed package's metadata (``[project.entry-points."condvln.agents"]`` in its
``pyproject.toml``: ``my_agent = "my_package.agents:MyAgent"``), listed by ``condvln agents``
and imported only when it is asked for. Without installing anything, an agent also loads as
``"package.module:ClassName"`` (the current folder is importable), as
``"path/to/file.py:ClassName"`` or, over HTTP, as ``"http://HOST:PORT"``
(:mod:`condvln.agents.remote`). Keyword arguments go to the constructor (``--agent-arg k=v``).

>>> type(load_agent("random")).__name__
'RandomAgent'
>>> AGENTS.origin("random").value
'condvln.agents.baselines:RandomAgent'
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
from pathlib import Path
from typing import Any

import orjson

from condvln.agents.base import DEFAULT_STEP_TIMEOUT, Agent, is_remote
from condvln.errors import CondVLNError, ConfigError
from condvln.registry import Registry

AgentFactory = Callable[..., Agent]

GROUP = "condvln.agents"
"""The entry-point group of agents."""


def _check_factory(name: str, factory: object) -> AgentFactory:
    if not callable(factory):
        raise ConfigError(f"agent {name!r} is not a class or factory")
    return factory  # type: ignore[return-value]


AGENTS: Registry[AgentFactory] = Registry("agent", group=GROUP, check=_check_factory)
"""Agents by name: the ``condvln.agents`` entry points of the installed packages."""


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
    if ":" not in name:
        return AGENTS.get(name)
    where, _, attr = name.rpartition(":")
    looks_like_file = where.endswith(".py") or "/" in where or os.sep in where
    module = _import_file(Path(where)) if looks_like_file else _import_module(where)
    factory = getattr(module, attr, None)
    if factory is None:
        raise ConfigError(f"cannot load agent {name!r}: {where} has no attribute {attr!r}")
    return _check_factory(name, factory)


def load_agent(
    name: str,
    args: Mapping[str, Any] | None = None,
    *,
    step_timeout: float | None = DEFAULT_STEP_TIMEOUT,
) -> Agent:
    """A new agent instance by name, ``"module:Class"``, ``"file.py:Class"`` or URL.

    Args:
        name: The agent spec.
        args: Keyword arguments of the constructor.
        step_timeout: The run's step timeout (``None``: no limit); for a URL, the deadline of
            each request (its first ``/info`` included) unless ``args`` set ``read_timeout``.

    Raises:
        ConfigError: The agent cannot be loaded, its constructor rejects the arguments
            (``TypeError``) or fails (any exception, ``SystemExit`` included), or what it
            builds has no ``reset`` and ``act`` / ``act_batch``.
    """
    factory = agent_factory(name)
    kwargs = dict(args or {})
    if is_remote(name):
        kwargs.setdefault("read_timeout", step_timeout)
    try:
        agent = factory(**kwargs)
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
