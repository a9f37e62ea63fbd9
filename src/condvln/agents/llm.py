"""The ``llm`` agent: a language model behind any OpenAI-compatible Chat Completions endpoint.

``condvln run --agent llm --agent-arg base_url=http://127.0.0.1:8000/v1 --agent-arg model=NAME
--agent-arg mode=subgoals`` (vLLM, llama.cpp's server, Ollama, hosted APIs alike). The model
reads the instruction and the observations as text (:mod:`condvln.sim.text_obs`) through a
prompt template (:mod:`.llm_prompt`) and answers with one JSON object.

**Modes.** ``actions``: at every step the model picks the next low-level action (forward, left,
right, stop). ``subgoals`` (Open-Nav / NavGPT style): the model picks the next subgoal — ``go N``
(walk to object ``[N]`` of the objects seen so far), ``explore`` (walk towards the nearest
unexplored place; interrupted as soon as an object whose category the instruction names comes
into view), ``look around`` or ``stop`` — and the planner skills of the baselines
(:class:`~condvln.agents.skills.SkillAgent`) walk there; the model is asked again when the
subgoal is done. In both modes it may state verdicts on the instruction's conditions
(``"conditions"``): each verdict is a *branch decision*, recorded with the model's reasoning.

**Fallbacks.** A reply that has no JSON object (``no_answer``), is too long or cut off
(``too_long``), names no known action or subgoal (``unknown_action``) or an object not seen
(``unknown_object``) gets the fallback — ``fallback=`` (default ``left`` in actions mode,
``explore`` in subgoals mode) — and is counted; ``max_calls`` answers per episode
(``call_limit``) or five subgoals in a row that take no step (``stalled``) end the episode with
STOP. None of these raises. An endpoint that keeps failing after the retries (or a read-only
cache without the answer) raises :class:`~condvln.agents.llm_client.LLMCallError`: the episode
ends as ``agent_error`` and a resume runs it again.

**Recorded** per episode (``agent_notes`` of its trajectory record, via
:meth:`LLMAgent.episode_notes`): ``usage`` (requests, prompt and completion tokens as the
server counted them, cost from ``price_prompt`` / ``price_completion`` in USD per million
tokens), ``fallbacks`` by kind, and ``decisions`` (step, condition, verdict, reasoning). Cached and live replies count the
same, so a replay writes the same bytes. ``condvln evaluate`` sums the usage into
``metrics.json`` and the report shows the decisions under the episode's map.

**Replay.** Replies are cached by request content (:mod:`.llm_cache`); ``cache=readonly`` never
calls the endpoint. The text rendering and the prompt are stamped into the run manifest's
protocol (:attr:`LLMAgent.text_protocol`), the API key comes only from the environment
(``api_key_env``, default ``OPENAI_API_KEY``) and is never an argument.

**Batches.** ``--batch-size B`` steps B episodes in lockstep; their requests go out together,
at most ``max_concurrency`` at a time. Results do not depend on B.
"""

from __future__ import annotations

import importlib.util
import re
from collections import Counter, OrderedDict
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

import pydantic
from pydantic import BaseModel, ConfigDict, Field

from condvln.agents.base import EpisodeView, InstructionSource
from condvln.agents.llm_cache import ResponseCache, default_cache_dir
from condvln.agents.llm_client import ChatClient, Endpoint, Reply
from condvln.agents.llm_prompt import Answer, PromptTemplate, load_prompt, read_answer
from condvln.agents.skills import Memory, SkillAgent
from condvln.errors import ConfigError
from condvln.sim.protocol import Observation, Vec3
from condvln.sim.simulator import FORWARD, STOP, TURN_LEFT, TURN_RIGHT
from condvln.sim.text_obs import (
    ACTION_WORDS,
    Seen,
    TextObsConfig,
    TextRenderer,
    relative,
)

Mode = Literal["actions", "subgoals"]

ACTION_ALIASES = {
    "forward": FORWARD,
    "move forward": FORWARD,
    "left": TURN_LEFT,
    "turn left": TURN_LEFT,
    "right": TURN_RIGHT,
    "turn right": TURN_RIGHT,
    "stop": STOP,
}
"""Action words the agent accepts (lower case, ``_`` read as a space)."""

SUBGOALS = ("explore", "look around", "stop")
"""Subgoals besides ``go N``."""

MAX_IDLE = 5
"""Subgoals in a row that take no step before the episode stops (``stalled``)."""

MAX_DECISIONS = 50
"""Branch decisions recorded per episode at most."""

REASONING_CHARS = 600
"""Reasoning kept per recorded decision (characters)."""

_GO = re.compile(r"^(?:go|go to|walk to)\s*\[?(\d+)\]?$")


class LLMConfig(BaseModel):
    """The ``--agent-arg`` s of the ``llm`` agent (see the README's "Language-model agents").

    Attributes:
        base_url: OpenAI-compatible base URL (``http://127.0.0.1:8000/v1``).
        model: Model name sent with each request.
        mode: ``actions`` or ``subgoals``.
        temperature: Sampling temperature (0: greedy, reproducible servers permitting).
        max_tokens: Completion tokens per answer.
        top_p: Nucleus sampling (not sent when unset).
        seed: Sampling seed sent to the server (not sent when unset).
        timeout: Seconds per request.
        retries: Retries after a failed attempt (429, 5xx, timeouts, connection errors).
        backoff: Seconds before the first retry (doubling).
        max_backoff: Longest wait between attempts.
        max_concurrency: Requests in flight at once (per worker).
        cache: ``readwrite``, ``readonly`` (never call the endpoint) or ``off``.
        cache_dir: Response cache folder (default ``~/.cache/condvln/llm``).
        api_key_env: Environment variable holding the API key.
        price_prompt: USD per million prompt tokens (cost accounting).
        price_completion: USD per million completion tokens.
        fallback: Action / subgoal for unusable answers (default: ``left`` / ``explore``).
        prompt: A prompt template file (default: the packaged one of the mode).
        max_answer_chars: Longer answers are unusable (``too_long``).
        max_calls: Answers per episode before the agent stops.
        bearing: Text bearings: ``clock`` or ``degrees``.
        history: Recent history entries shown.
        max_objects: Objects listed at most.
        coordinates: Show positions ``(x, z)``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    base_url: str
    model: str
    mode: Mode = "subgoals"
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(256, ge=1)
    top_p: float | None = Field(None, gt=0.0, le=1.0)
    seed: int | None = None
    timeout: float = Field(60.0, gt=0.0)
    retries: int = Field(4, ge=0, le=20)
    backoff: float = Field(1.0, ge=0.0)
    max_backoff: float = Field(30.0, ge=0.0)
    max_concurrency: int = Field(4, ge=1, le=256)
    cache: Literal["readwrite", "readonly", "off"] = "readwrite"
    cache_dir: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    price_prompt: float = Field(0.0, ge=0.0)
    price_completion: float = Field(0.0, ge=0.0)
    fallback: str | None = None
    prompt: str | None = None
    max_answer_chars: int = Field(4000, ge=1)
    max_calls: int = Field(500, ge=1)
    bearing: Literal["clock", "degrees"] = "clock"
    history: int = Field(8, ge=0, le=200)
    max_objects: int = Field(60, ge=1, le=1000)
    coordinates: bool = True

    def fallback_choice(self) -> str:
        """The fallback, checked against the mode's vocabulary."""
        choice = self.fallback or ("left" if self.mode == "actions" else "explore")
        known = tuple(ACTION_ALIASES) if self.mode == "actions" else SUBGOALS
        if choice not in known:
            raise ConfigError(f"llm agent: fallback {choice!r} is not one of {', '.join(known)}")
        return choice


def parse_config(args: dict[str, Any]) -> LLMConfig:
    """The agent's settings from its keyword arguments, with one-line errors.

    Raises:
        ConfigError: An API key among the arguments, or a missing / unknown / invalid setting.
    """
    if any("key" in name and name != "api_key_env" for name in args):
        raise ConfigError(
            "llm agent: API keys are never arguments (they would be written into manifest.json); "
            "set OPENAI_API_KEY, or name another variable with --agent-arg api_key_env=NAME"
        )
    try:
        return LLMConfig.model_validate(args)
    except pydantic.ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        hint = " (pass --agent-arg base_url=... and model=...)" if err["type"] == "missing" else ""
        raise ConfigError(f"llm agent: {where}: {err['msg']}{hint}") from None


@dataclass(frozen=True, slots=True)
class Query:
    """A request an episode script waits on (answered with a :class:`Reply`)."""

    messages: list[dict[str, str]]


Item = int | Query
"""What an episode script yields: an action, or a query."""


class _Driver:
    """Per-episode bookkeeping and the generator driver shared by both modes."""

    script: Any
    obs: Observation | None

    def setup(self, agent: LLMAgent, view: EpisodeView) -> None:
        """Fresh counters for ``view``'s episode."""
        self.agent, self.view = agent, view
        self.renderer = TextRenderer(agent.text, view.protocol)
        self.history: list[str] = []
        self.usage: Counter[str] = Counter()
        self.fallbacks: Counter[str] = Counter()
        self.decisions: list[dict[str, Any]] = []
        self.steps = 0
        self._gen: Generator[Item, Reply | None, None] | None = None
        self._over = False

    def observe(self, obs: Observation) -> None:
        """Take in the latest observation (override to update memories)."""
        self.obs = obs

    def begin(self, obs: Observation) -> Item:
        """The first item of this step: an action, or a query to answer with :meth:`send`."""
        self.observe(obs)
        if self._over or obs.step >= self.view.step_budget - 1:
            return STOP
        return self.send(None)

    def send(self, reply: Reply | None) -> Item:
        """Resume the script with ``reply``; its next action or query (STOP when it ends)."""
        if self._gen is None:
            self._gen = self.script()
        try:
            item = self._gen.send(reply)
        except StopIteration:
            item = STOP
        if isinstance(item, int):
            self.steps += 1
            self._over = item == STOP
        return item

    def ask(self, values: dict[str, str]) -> Generator[Query, Reply, Answer | None]:
        """Ask the model; its answer (a problem counted and returned as is), None at the limit."""
        config = self.agent.config
        if self.usage["requests"] >= config.max_calls:
            self.fallbacks["call_limit"] += 1
            return None
        reply = yield Query(self.agent.prompt.messages(values))
        self.usage.update(
            requests=1, prompt_tokens=reply.prompt_tokens, completion_tokens=reply.completion_tokens
        )
        answer = read_answer(
            reply.content,
            max_chars=config.max_answer_chars,
            truncated=reply.finish_reason == "length",
        )
        if answer.problem is not None:
            self.fallbacks[answer.problem] += 1
        for condition, holds in answer.conditions:
            if len(self.decisions) < MAX_DECISIONS:
                self.decisions.append(
                    {
                        "step": self.obs.step if self.obs is not None else 0,
                        "condition": condition,
                        "holds": holds,
                        "reasoning": answer.reasoning[:REASONING_CHARS],
                    }
                )
        return answer

    def notes(self) -> dict[str, Any]:
        """The episode's ``agent_notes``: usage, fallbacks, branch decisions."""
        config = self.agent.config
        cost = (
            self.usage["prompt_tokens"] * config.price_prompt
            + self.usage["completion_tokens"] * config.price_completion
        ) / 1e6
        usage = {k: self.usage[k] for k in ("requests", "prompt_tokens", "completion_tokens")}
        return {
            "usage": usage | {"cost": round(cost, 8)},
            "fallbacks": dict(sorted(self.fallbacks.items())),
            "decisions": self.decisions,
        }


class _ActionsEpisode(_Driver):
    """``actions`` mode: one question per step, the answer is the action."""

    def __init__(self, agent: LLMAgent, view: EpisodeView) -> None:
        self.setup(agent, view)
        self.obs = None
        self.memory = Memory(view.map) if view.map is not None and view.protocol.pose else None
        self.last: int | None = None

    def observe(self, obs: Observation) -> None:
        """Remember room types (when the map allows) and log the last action's outcome."""
        self.obs = obs
        if self.memory is not None:
            self.memory.update(obs)
        if self.last is not None:
            blocked = ", blocked" if self.last == FORWARD and obs.collided else ""
            self.history.append(f"step {obs.step - 1}: {ACTION_WORDS[self.last]}{blocked}")

    def room_of(self, position: Vec3) -> str | None:
        """The room type at ``position`` if the agent has stood in that room."""
        if self.memory is None:
            return None
        return self.memory.room_types.get(self.memory.map.room_index(position))

    def script(self) -> Generator[Item, Reply | None, None]:
        """Ask, act, repeat (the runner ends the episode at STOP or the budget)."""
        renderer = self.renderer
        while True:
            assert self.obs is not None
            values = {
                "instruction": self.view.instruction,
                "observation": renderer.view(
                    self.obs, budget=self.view.step_budget, room_of=self.room_of
                ),
                "history": renderer.history(self.history),
                "actions": renderer.actions(),
            }
            answer = yield from self.ask(values)
            if answer is None:
                return
            self.last = self.action_of(answer)
            yield self.last

    def action_of(self, answer: Answer) -> int:
        """The answer's action, or the fallback (counted) when it names none."""
        word = answer.choice("action")
        if answer.problem is None and word in ACTION_ALIASES:
            return ACTION_ALIASES[word]
        if answer.problem is None:
            self.fallbacks["unknown_action"] += 1
        return ACTION_ALIASES[self.agent.config.fallback_choice()]


class _SubgoalsEpisode(_Driver, SkillAgent):
    """``subgoals`` mode: the model picks subgoals, the planner skills carry them out."""

    def __init__(self, agent: LLMAgent, view: EpisodeView) -> None:
        self.setup(agent, view)
        SkillAgent.reset(self, view)
        self.reached: list[int] = []
        self.explored_all = False
        self._text = view.instruction.lower()
        self._mentioned: dict[str, bool] = {}

    def observe(self, obs: Observation) -> None:
        """Update the memory and the exploration state, as the baselines do."""
        self.obs = obs
        self.memory.update(obs)
        if obs.position is not None:
            self.explorer.update(obs.position)

    def mentioned(self, category: str) -> bool:
        """Whether the instruction names ``category`` (a whole-word match)."""
        if category not in self._mentioned:
            pattern = rf"\b{re.escape(category.lower())}\b"
            self._mentioned[category] = re.search(pattern, self._text) is not None
        return self._mentioned[category]

    def script(self) -> Generator[Item, Reply | None, None]:
        """Ask for a subgoal, carry it out, log it; stop on ``stop``, the limit or stalling."""
        idle = 0
        while True:
            answer = yield from self.ask(self.values())
            if answer is None:
                return
            command = self.command_of(answer)
            if command == "stop":
                return
            step, before = self.obs.step if self.obs else 0, self.steps
            outcome = yield from self.perform(command)
            self.history.append(f"step {step}: {outcome}")
            idle = idle + 1 if self.steps == before else 0
            if idle >= MAX_IDLE:
                self.fallbacks["stalled"] += 1
                return

    def command_of(self, answer: Answer) -> str | int:
        """``"explore"`` / ``"look around"`` / ``"stop"`` or an object index (fallback counted)."""
        choice = answer.choice("subgoal")
        if answer.problem is None and choice is not None:
            if choice in SUBGOALS:
                return choice
            match = _GO.match(choice)
            if match and int(match.group(1)) < len(self.memory.objects):
                return int(match.group(1))
            self.fallbacks["unknown_object" if match else "unknown_action"] += 1
        elif answer.problem is None:
            self.fallbacks["unknown_action"] += 1
        return self.agent.config.fallback_choice()

    def perform(self, command: str | int) -> Generator[int, None, str]:
        """Carry out a subgoal; one line for the history."""
        if isinstance(command, int):
            return (yield from self.go(command))
        before = len(self.memory.objects)
        if command == "look around":
            yield from self.look_around()
            return f"looked around: {self._new_objects(before)}"
        more = yield from self.explore(lambda: self._sees_mentioned(before))
        if not more:
            self.explored_all = True
            return "explore: nothing left to explore"
        return f"explored: {self._new_objects(before)}"

    def go(self, index: int) -> Generator[int, None, str]:
        """Walk to the approach point of remembered object ``index``."""
        memo = self.memory.objects[index]
        name = f"[{index}] {memo.category}{self.renderer.at(memo.position)}"
        point = self.map.approach(memo.position, memo.size)
        arrived = point is not None and (yield from self.go_to(point))
        if arrived:
            self.reached.append(index)
        return f"went to {name}: " + ("arrived" if arrived else "could not reach it")

    def _sees_mentioned(self, before: int) -> bool:
        return any(self.mentioned(o.category) for o in self.memory.objects[before:])

    def _new_objects(self, before: int) -> str:
        new = [f"[{before + i}] {o.category}" for i, o in enumerate(self.memory.objects[before:])]
        if not new:
            return "no new objects"
        return f"{len(new)} new object{'s' if len(new) > 1 else ''} ({', '.join(new)})"

    def values(self) -> dict[str, str]:
        """The template's placeholders for the current state."""
        assert self.obs is not None
        renderer, obs = self.renderer, self.obs
        observation = renderer.view(obs, budget=self.view.step_budget, detections=False)
        seen = [
            Seen(
                i,
                o.category,
                *relative(self.position, obs.heading or 0.0, o.position),
                room=self.memory.room_types.get(o.room),
                position=o.position,
            )
            for i, o in enumerate(self.memory.objects)
        ]
        objects = renderer.objects(
            seen, "Objects you have seen, nearest first:", "You have not seen any object yet."
        )
        return {
            "instruction": self.view.instruction,
            "observation": observation,
            "objects": objects,
            "progress": self.progress(),
            "history": renderer.history(self.history),
        }

    def progress(self) -> str:
        """Objects reached so far, rooms visited, whether anything is left to explore."""
        objects, at = self.memory.objects, self.renderer.at
        reached = "; ".join(
            f"[{i}] {objects[i].category}{at(objects[i].position)}" for i in self.reached
        )
        rooms = sorted(set(self.memory.room_types.values()))
        lines = [
            f"Reached so far: {reached or 'nothing yet'}.",
            f"Rooms on the map: {self.map.n_rooms}; you have been in: "
            + (", ".join(rooms) or "none yet")
            + ".",
            "Everything has been explored." if self.explored_all else "Unexplored places remain.",
        ]
        return "\n".join(lines)


def _require_client_libraries() -> None:
    """``ConfigError`` unless ``openai`` and ``tenacity`` are installed (a replay needs neither)."""
    missing = [name for name in ("openai", "tenacity") if importlib.util.find_spec(name) is None]
    if missing:
        raise ConfigError(
            f'llm agent: {" and ".join(missing)} not installed: pip install "condvln[llm]" '
            "(or replay a run from its cache with --agent-arg cache=readonly)"
        )


class LLMAgent:
    """A language model behind an OpenAI-compatible endpoint (see the module docstring).

    Keyword arguments are the :class:`LLMConfig` fields (``--agent-arg k=v``).

    Attributes:
        text_protocol: The text rendering and prompt stamp, added to the run's protocol.
        client: The chat client (endpoint, retries, cache).
    """

    instruction_source: ClassVar[InstructionSource] = "original"
    reads_text: ClassVar[bool] = True
    max_batch_size: ClassVar[int] = 256
    kept_episodes: ClassVar[int] = 1024

    def __init__(self, **kwargs: Any) -> None:
        self.config = parse_config(kwargs)
        self.config.fallback_choice()
        self.prompt: PromptTemplate = load_prompt(self.config.mode, self.config.prompt)
        text = TextObsConfig(
            bearing=self.config.bearing,
            history=self.config.history,
            max_objects=self.config.max_objects,
            coordinates=self.config.coordinates,
        )
        self.text = text
        self.text_protocol = {**text.stamp(), "prompt": self.prompt.stamp()}
        folder = Path(self.config.cache_dir) if self.config.cache_dir else default_cache_dir()
        endpoint = Endpoint(
            base_url=self.config.base_url,
            model=self.config.model,
            params={
                "temperature": self.config.temperature,
                "max_tokens": self.config.max_tokens,
                "top_p": self.config.top_p,
                "seed": self.config.seed,
            },
            timeout=self.config.timeout,
            retries=self.config.retries,
            backoff=self.config.backoff,
            max_backoff=self.config.max_backoff,
            max_concurrency=self.config.max_concurrency,
            api_key_env=self.config.api_key_env,
        )
        if self.config.cache != "readonly":
            _require_client_libraries()
        self.client = ChatClient(endpoint, ResponseCache(folder), self.config.cache)
        self._episodes: OrderedDict[Any, _ActionsEpisode | _SubgoalsEpisode] = OrderedDict()
        self._current: Any = None

    def reset(self, episode: EpisodeView) -> None:
        """Start an episode (its text follows the run's protocol)."""
        if self.config.mode == "subgoals" and (episode.map is None or not episode.protocol.pose):
            raise ConfigError("llm agent: mode=subgoals needs the pose and map access")
        if self.config.mode == "subgoals":
            state: _ActionsEpisode | _SubgoalsEpisode = _SubgoalsEpisode(self, episode)
        else:
            state = _ActionsEpisode(self, episode)
        self._episodes[episode.episode_id] = state
        self._episodes.move_to_end(episode.episode_id)
        while len(self._episodes) > self.kept_episodes:
            self._episodes.popitem(last=False)
        self._current = episode.episode_id

    def act(self, observation: Observation) -> int:
        """The next action of the current episode."""
        return self.act_batch([observation], [self._current])[0]

    def act_batch(
        self, observations: Sequence[Observation], episode_ids: Sequence[Any]
    ) -> list[int]:
        """The next action of each episode; their model requests go out together."""
        episodes = [self._episodes[i] for i in episode_ids]
        items = [e.begin(o) for e, o in zip(episodes, observations, strict=True)]
        while queries := [(i, q) for i, q in enumerate(items) if isinstance(q, Query)]:
            replies = self.client.complete_many([q.messages for _, q in queries])
            for (i, _), reply in zip(queries, replies, strict=True):
                items[i] = episodes[i].send(reply)
        return [int(item) for item in items]  # type: ignore[arg-type]

    def episode_notes(self, episode_id: Any) -> dict[str, Any] | None:
        """The ``agent_notes`` of a finished episode (usage, fallbacks, decisions), once."""
        state = self._episodes.pop(episode_id, None)
        return None if state is None else state.notes()
