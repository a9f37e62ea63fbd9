"""Agents over HTTP: the client side of the ``condvln-agent/1`` protocol.

``condvln run --agent http://HOST:PORT`` runs the simulator here and asks an agent server
(:mod:`condvln.agent_server`, one standard-library file that runs on Python 3.6+) for actions.
The protocol (also in the README and the server's docstring):

* ``GET /info`` → ``{"protocol": "condvln-agent", "version": 1, "name", "instruction_source",
  "max_batch_size", "observation_format"}``;
* ``POST /reset`` ``{"version": 1, "episode": {...}}`` → ``{"ok": true}``;
* ``POST /act`` ``{"version": 1, "batch": [{"episode_id", "observation" or
  "habitat_observation"}, ...]}`` → ``{"actions": [...]}``;
* errors: HTTP 4xx / 5xx with ``{"error": "one line"}``.

A batch item carries the observation as CondVLN's :class:`~condvln.sim.protocol.Observation`
(``observation``) or as habitat-lab's observation dict (``habitat_observation``: ``rgb`` /
``depth`` / ``semantic`` when the protocol renders them, ``instruction`` ``{"text", "tokens",
"trajectory_id"}``, and with the pose ``heading``, ``compass``, ``gps``;
:mod:`condvln.sim.habitat_obs`), so a habitat agent's preprocessing applies unchanged behind
the server. ``compass`` and ``gps`` are relative to the episode's start pose, which the client
takes from the episode's step-0 observation; the tokens come from the episode sent to
``/reset``. The server hands its agent one of the two and names it in ``/info``
(``observation_format``); the client sends only that one (both to a server that names
neither), so each step encodes and sends one observation.

Observations travel as JSON: dataclasses and mappings as objects, tuples as lists, every numpy
array as ``{"__ndarray__": base64 of its C-order bytes, "dtype": dtype.str, "shape": [...]}``
(so RGB / depth images travel without change to the protocol).

>>> import numpy as np
>>> body = encode({"depth": np.arange(6, dtype=np.float32).reshape(2, 3), "step": np.int64(3)})
>>> doc = orjson.loads(body)
>>> doc["depth"]["dtype"], doc["depth"]["shape"], doc["step"]
('<f4', [2, 3], 3)
>>> decode_array(doc["depth"]).tolist()
[[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]

The client never hangs: each request, ``/info`` included, has one deadline of
``read_timeout`` seconds for everything (connecting, sending, the status line, the headers and
the whole body; :mod:`condvln.agents.http_deadline`), so a server that is silent or sends one
byte at a time is cut off; connecting alone is also limited by ``connect_timeout``. The runner
sets ``read_timeout`` to its step timeout (60 s unless ``--step-timeout`` says otherwise;
``0``: no limit) unless ``--agent-arg read_timeout=…`` is given. Responses larger than
``max_response_bytes`` are refused, and any broken connection is reopened at the next call.
A failed call raises :class:`RemoteAgentError` (or :class:`~condvln.agents.base.AgentTimeout`),
which the runner records as that episode's ``agent_error`` (``timeout``).
"""

from __future__ import annotations

import base64
import http.client
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import orjson

from condvln.agent_server import OBSERVATION_FORMATS
from condvln.agents.base import DEFAULT_STEP_TIMEOUT, AgentTimeout, EpisodeView
from condvln.agents.http_deadline import DeadlineHTTPConnection, DeadlineHTTPSConnection
from condvln.errors import ConfigError
from condvln.sim.habitat_obs import habitat_observation
from condvln.sim.protocol import Observation, Vec3

PROTOCOL = "condvln-agent"
VERSION = 1


class RemoteAgentError(Exception):
    """The agent server failed, refused the request or answered something unusable."""


def _default(value: Any) -> Any:
    """orjson fallback: arrays as base64 + dtype + shape, numpy scalars, other mappings."""
    if isinstance(value, np.ndarray):
        array = np.ascontiguousarray(value)
        return {
            "__ndarray__": base64.b64encode(array.tobytes()).decode("ascii"),
            "dtype": array.dtype.str,
            "shape": list(array.shape),
        }
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Mapping):
        return dict(value)
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    raise TypeError(f"cannot send {type(value).__name__} to an agent server")


def encode(value: Any) -> bytes:
    """JSON bytes of ``value`` with arrays encoded (see the module notes)."""
    return orjson.dumps(value, default=_default, option=orjson.OPT_NON_STR_KEYS)


def decode_array(doc: Mapping[str, Any]) -> np.ndarray:
    """The array of an encoded ``{"__ndarray__", "dtype", "shape"}`` object."""
    raw = base64.b64decode(doc["__ndarray__"])
    return np.frombuffer(raw, dtype=np.dtype(doc["dtype"])).reshape(doc["shape"])


def episode_payload(episode: EpisodeView) -> dict[str, Any]:
    """What a remote agent learns about an episode (the map planner stays here)."""
    return {
        "episode_id": episode.episode_id,
        "scene_id": episode.scene_id,
        "instruction": episode.instruction,
        "step_budget": episode.step_budget,
        "seed": episode.seed,
        "protocol": episode.protocol.model_dump(mode="json"),
        "semantics": episode.semantics,
        "instruction_tokens": list(episode.instruction_tokens),
        "trajectory_id": episode.trajectory_id,
    }


class RemoteAgent:
    """An agent served over HTTP (``condvln run --agent http://HOST:PORT``).

    Args:
        url: The server's base URL.
        connect_timeout: Seconds allowed to open a connection.
        read_timeout: Seconds one request may take from connecting to the last byte of its
            answer (``None`` or ``0``: no limit).
        max_response_bytes: Largest response body accepted.

    Raises:
        ConfigError: The server cannot be reached or speaks another protocol version.
    """

    def __init__(
        self,
        url: str,
        *,
        connect_timeout: float = 5.0,
        read_timeout: float | None = DEFAULT_STEP_TIMEOUT,
        max_response_bytes: int = 1 << 20,
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(f"agent URL {url!r}: expected http://HOST:PORT")
        self.url = url.rstrip("/")
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port or (443 if self._https else 80)
        self._prefix = parts.path.rstrip("/")
        self.connect_timeout = float(connect_timeout)
        self.read_timeout = float(read_timeout) if read_timeout else None
        self.max_response_bytes = int(max_response_bytes)
        self._conn: DeadlineHTTPConnection | None = None
        try:
            info = self._request("GET", "/info")
        except (RemoteAgentError, AgentTimeout) as exc:
            raise ConfigError(f"agent server {self.url}: {exc}") from None
        if info.get("protocol") != PROTOCOL or info.get("version") != VERSION:
            raise ConfigError(
                f"agent server {self.url} speaks {info.get('protocol')!r} version "
                f"{info.get('version')!r}; this client speaks {PROTOCOL!r} version {VERSION}"
            )
        self.info: dict[str, Any] = info
        self.instruction_source = info.get("instruction_source", "original")
        self.max_batch_size = max(1, int(info.get("max_batch_size", 1)))
        form = info.get("observation_format")
        known = OBSERVATION_FORMATS  # a server's observation_format → the item key it reads
        self._sends = (known[form],) if form in known else tuple(known.values())
        self._episode: Any = None
        self._instructions: dict[Any, tuple[tuple[int, ...], int | None]] = {}
        self._starts: dict[Any, tuple[Vec3, float]] = {}

    # --- the agent interface -----------------------------------------------------------------

    def reset(self, episode: EpisodeView) -> None:
        """Start an episode on the server."""
        self._episode = episode.episode_id
        self._instructions[episode.episode_id] = (episode.instruction_tokens, episode.trajectory_id)
        self._starts.pop(episode.episode_id, None)
        self._request("POST", "/reset", {"version": VERSION, "episode": episode_payload(episode)})

    def act(self, observation: Any) -> Any:
        """The server's action for ``observation`` (of the episode last reset)."""
        return self.act_batch([observation], [self._episode])[0]

    def act_batch(self, observations: Sequence[Any], episode_ids: Sequence[Any]) -> list[Any]:
        """The server's actions for a lockstep batch (split into ``max_batch_size`` requests)."""
        actions: list[Any] = []
        size = self.max_batch_size
        for start in range(0, len(observations), size):
            batch = [
                self._item(obs, episode_id)
                for obs, episode_id in zip(
                    observations[start : start + size],
                    episode_ids[start : start + size],
                    strict=True,
                )
            ]
            answer = self._request("POST", "/act", {"version": VERSION, "batch": batch})
            got = answer.get("actions")
            if not isinstance(got, list) or len(got) != len(batch):
                raise RemoteAgentError(
                    f"/act answered {len(got) if isinstance(got, list) else got!r} actions "
                    f"for {len(batch)} observations"
                )
            actions.extend(got)
        return actions

    def _item(self, obs: Any, episode_id: Any) -> dict[str, Any]:
        """One ``/act`` batch item: the observation in the form the server reads (both when it
        does not say; ``habitat_observation`` only for simulator observations)."""
        item = {"episode_id": episode_id}
        if "observation" in self._sends:
            item["observation"] = obs
        if "habitat_observation" in self._sends and isinstance(obs, Observation):
            first = obs.step == 0 or episode_id not in self._starts
            if first and obs.position is not None and obs.heading is not None:
                self._starts[episode_id] = (obs.position, obs.heading)
            start, yaw = self._starts.get(episode_id, ((0.0, 0.0, 0.0), 0.0))
            tokens, trajectory_id = self._instructions.get(episode_id, ((), None))
            item["habitat_observation"] = habitat_observation(
                obs, start_position=start, start_yaw=yaw, tokens=tokens, trajectory_id=trajectory_id
            )
        return item

    def close(self) -> None:
        """Close the connection (reopened by the next call)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # --- HTTP --------------------------------------------------------------------------------

    def _connection(self) -> DeadlineHTTPConnection:
        """The open connection, or a new one (it connects at its first request)."""
        if self._conn is None:
            kind = DeadlineHTTPSConnection if self._https else DeadlineHTTPConnection
            self._conn = kind(self._host, self._port, connect_timeout=self.connect_timeout)
        return self._conn

    def _request(self, method: str, path: str, body: Any = None) -> dict[str, Any]:
        """One request and its JSON object answer; the connection is dropped on any failure."""
        data = None if body is None else encode(body)
        headers = {"Content-Type": "application/json"} if data is not None else {}
        try:
            conn = self._connection()
            conn.deadline.start(self.read_timeout)
            conn.request(method, self._prefix + path, body=data, headers=headers)
            response = conn.getresponse()
            raw = self._read(response)
            if response.will_close:
                self.close()
        except TimeoutError:
            connected = self._conn is not None and self._conn.sock is not None
            self.close()
            raise AgentTimeout(f"{method} {path}: {self._late(connected)}") from None
        except (OSError, http.client.HTTPException) as exc:
            self.close()
            reason = str(exc) or type(exc).__name__
            raise RemoteAgentError(f"{method} {path} to {self.url} failed: {reason}") from None
        except BaseException:
            self.close()  # interrupted mid-request (step timeout): the stream is unusable
            raise
        return self._parse(method, path, response.status, raw)

    def _late(self, connected: bool) -> str:
        """What ran out of time: the answer, or connecting."""
        if connected and self.read_timeout is not None:
            return f"no complete answer from {self.url} within {self.read_timeout:g} s"
        limit = min(self.connect_timeout, self.read_timeout or self.connect_timeout)
        return f"cannot connect to {self.url} within {limit:g} s"

    def _read(self, response: http.client.HTTPResponse) -> bytes:
        limit = self.max_response_bytes
        length = response.getheader("Content-Length")
        if length is not None and length.isdigit() and int(length) > limit:
            self.close()
            raise RemoteAgentError(f"response of {length} bytes exceeds the {limit}-byte limit")
        raw = response.read(limit + 1)
        if len(raw) > limit:
            self.close()
            raise RemoteAgentError(f"response exceeds the {limit}-byte limit")
        return raw

    def _parse(self, method: str, path: str, status: int, raw: bytes) -> dict[str, Any]:
        try:
            doc = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            self.close()
            raise RemoteAgentError(
                f"{method} {path}: malformed response (HTTP {status}, not JSON: {exc})"
            ) from None
        if status != 200:
            error = doc.get("error") if isinstance(doc, dict) else None
            raise RemoteAgentError(f"{method} {path}: server error (HTTP {status}): {error}")
        if not isinstance(doc, dict):
            raise RemoteAgentError(f"{method} {path}: malformed response (not a JSON object)")
        return doc
