"""Serve any agent to CondVLN over HTTP: one file, standard library only, Python 3.6+.

Copy this file into the environment where your agent lives (an old Python with habitat-sim
0.1.7, CUDA, ...) and run::

    python agent_server.py my_agents:VLNCEAgent --port 8000 --arg checkpoint='"ckpt.pth"'
    python agent_server.py path/to/agent.py:MyAgent --host 127.0.0.1 --port 0

then, where CondVLN is installed: ``condvln run --agent http://127.0.0.1:8000 ...``.

The agent is any object with ``reset(episode)`` and ``act(observation) -> int`` (and, when
present, ``act_batch(observations, episode_ids) -> [int, ...]`` for lockstep batches). It
receives plain data: ``episode`` and ``observation`` are dictionaries that also allow attribute
access (``observation.detections[0].category`` == ``observation["detections"][0]["category"]``);
arrays arrive as numpy arrays when numpy is installed (else as ``EncodedArray``).

``observation`` is CondVLN's observation (``instruction``, ``step``, ``position``, ``heading``,
``room_type``, ``detections``, ``collided``, ``images``) unless the agent declares
``observation_format = "habitat"`` (or the server runs with ``--observation-format habitat``):
then it is habitat-lab's observation dict — ``rgb`` (uint8 H×W×3), ``depth`` (float32 H×W×1),
``semantic`` (int32 H×W×1) for the sensors the run renders, ``instruction`` ``{"text",
"tokens", "trajectory_id"}``, and with the pose ``heading``, ``compass`` (1,) and ``gps`` (2,)
relative to the start — so a habitat agent's preprocessing applies unchanged.

Protocol ``condvln-agent/1`` (JSON bodies; every request carries ``"version": 1``):

* ``GET /info`` → ``{"protocol": "condvln-agent", "version": 1, "name", "instruction_source",
  "max_batch_size", "observation_format"}``;
* ``POST /reset`` ``{"version": 1, "episode": {episode_id, scene_id, instruction,
  instruction_tokens, trajectory_id, step_budget, seed, protocol}}`` → ``{"ok": true}``;
* ``POST /act`` ``{"version": 1, "batch": [{"episode_id", "observation",
  "habitat_observation"}, ...]}`` → ``{"actions": [int, ...]}`` (one per item, in order);
* errors: HTTP 4xx / 5xx with ``{"error": "one line"}``.

Arrays travel as ``{"__ndarray__": "<base64 of the C-order bytes>", "dtype": "<f4",
"shape": [h, w]}`` (numpy's ``dtype.str``).
"""

import argparse
import base64
import importlib
import importlib.util
import json
import os
import sys
import threading
import traceback
from http.server import BaseHTTPRequestHandler, HTTPServer
from socketserver import ThreadingMixIn

PROTOCOL = "condvln-agent"
VERSION = 1
MAX_REQUEST_BYTES = 256 * 1024 * 1024
DEFAULT_MAX_BATCH = 64
OBSERVATION_FORMATS = {"condvln": "observation", "habitat": "habitat_observation"}
"""The agent's ``observation_format`` → the batch item key it is given."""

try:
    import numpy
except ImportError:  # the server runs without numpy; arrays then stay encoded
    numpy = None


class EncodedArray(object):
    """An array received without numpy: raw C-order bytes, numpy dtype string and shape."""

    def __init__(self, data, dtype, shape):
        self.data, self.dtype, self.shape = data, dtype, tuple(shape)

    def __repr__(self):
        return "EncodedArray(dtype={!r}, shape={!r})".format(self.dtype, self.shape)


class Record(dict):
    """A dictionary whose keys are also attributes (observations, detections, episodes)."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def decode(value):
    """JSON data → agent data: dicts become :class:`Record`, encoded arrays become arrays."""
    if isinstance(value, dict):
        if "__ndarray__" in value:
            raw = base64.b64decode(value["__ndarray__"])
            if numpy is None:
                return EncodedArray(raw, value["dtype"], value["shape"])
            return numpy.frombuffer(raw, dtype=value["dtype"]).reshape(value["shape"])
        return Record((k, decode(v)) for k, v in value.items())
    if isinstance(value, list):
        return [decode(v) for v in value]
    return value


def to_action(value):
    """An agent's action as a JSON int (numpy integers accepted; anything else is sent as is)."""
    if numpy is not None and isinstance(value, numpy.integer):
        return int(value)
    if isinstance(value, (int, float, str)) or value is None:
        return value
    return repr(value)


def load_agent(spec, kwargs):
    """The agent of ``module:Class`` or ``path/to/file.py:Class``, constructed with ``kwargs``."""
    where, _, attr = spec.rpartition(":")
    if not where or not attr:
        raise SystemExit("agent_server: expected MODULE:CLASS or FILE.py:CLASS, got " + spec)
    if where.endswith(".py") or os.sep in where or "/" in where:
        folder = os.path.dirname(os.path.abspath(where))
        if folder not in sys.path:
            sys.path.insert(0, folder)
        module_spec = importlib.util.spec_from_file_location("served_agent", where)
        module = importlib.util.module_from_spec(module_spec)
        module_spec.loader.exec_module(module)
    else:
        if os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())
        module = importlib.import_module(where)
    return getattr(module, attr)(**kwargs)


class AgentService(object):
    """The agent behind the HTTP endpoints (calls are serialised by a lock)."""

    def __init__(self, agent, name=None, max_batch_size=None, observation_format=None):
        self.agent = agent
        self.name = name or type(agent).__name__
        self.lock = threading.Lock()
        batched = callable(getattr(agent, "act_batch", None))
        default = getattr(agent, "max_batch_size", DEFAULT_MAX_BATCH) if batched else 1
        self.max_batch_size = int(max_batch_size or default)
        form = observation_format or getattr(agent, "observation_format", "condvln")
        if form not in OBSERVATION_FORMATS:
            raise SystemExit(
                "agent_server: observation_format must be 'condvln' or 'habitat', got " + repr(form)
            )
        self.observation_format = form

    def info(self):
        """The ``GET /info`` body."""
        return {
            "protocol": PROTOCOL,
            "version": VERSION,
            "name": self.name,
            "instruction_source": getattr(self.agent, "instruction_source", "original"),
            "max_batch_size": self.max_batch_size,
            "observation_format": self.observation_format,
            "python": sys.version.split()[0],
        }

    def reset(self, body):
        """``POST /reset``: start an episode."""
        with self.lock:
            self.agent.reset(decode(body["episode"]))
        return {"ok": True}

    def act(self, body):
        """``POST /act``: one action per batch item."""
        batch = body["batch"]
        if not isinstance(batch, list) or not batch:
            raise ValueError("'batch' must be a non-empty list")
        if len(batch) > self.max_batch_size:
            raise ValueError(
                "batch of {} exceeds max_batch_size {}".format(len(batch), self.max_batch_size)
            )
        key = OBSERVATION_FORMATS[self.observation_format]
        observations = [decode(item[key]) for item in batch]
        with self.lock:
            if self.max_batch_size > 1:
                ids = [item["episode_id"] for item in batch]
                actions = list(self.agent.act_batch(observations, ids))
            else:
                actions = [self.agent.act(observations[0])]
        return {"actions": [to_action(a) for a in actions]}


class ClientError(Exception):
    """A request the server refuses (HTTP 4xx)."""


def make_handler(service):  # long: the handler class closes over service; its methods are short
    """A request handler class bound to ``service``."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def log_message(self, format, *args):  # quiet: one line per error only
            pass

        def _reply(self, status, body):
            data = json.dumps(body).encode("utf-8")
            head = "HTTP/1.1 {} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n"
            message = head.format(status, self.responses.get(status, ("",))[0], len(data))
            self.wfile.write(message.encode("latin-1") + data)
            self.wfile.flush()

        def _body(self):
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_REQUEST_BYTES:
                raise ClientError("request of {} bytes is too large".format(length))
            try:
                body = json.loads(self.rfile.read(length).decode("utf-8"))
            except ValueError as exc:
                raise ClientError("request is not JSON: {}".format(exc)) from None
            if not isinstance(body, dict) or body.get("version") != VERSION:
                raise ClientError('expected a JSON object with "version": {}'.format(VERSION))
            return body

        def _handle(self, call):
            try:
                self._reply(200, call())
            except ClientError as exc:
                self._reply(400, {"error": str(exc)})
            except (KeyError, TypeError, ValueError) as exc:
                self._reply(400, {"error": "bad request: {}: {}".format(type(exc).__name__, exc)})
            except BaseException as exc:  # the agent failed: report it, keep serving
                if isinstance(exc, KeyboardInterrupt):
                    raise
                sys.stderr.write(traceback.format_exc())
                line = "{}: {}".format(type(exc).__name__, exc).splitlines()
                self._reply(500, {"error": line[0] if line else type(exc).__name__})

        def do_GET(self):
            if self.path.rstrip("/") == "/info":
                self._handle(service.info)
            else:
                self._reply(404, {"error": "unknown path " + self.path})

        def do_POST(self):
            routes = {"/reset": service.reset, "/act": service.act}
            route = routes.get(self.path.rstrip("/"))
            if route is None:
                self._reply(404, {"error": "unknown path " + self.path})
                return
            try:
                body = self._body()
            except ClientError as exc:
                self._reply(400, {"error": str(exc)})
                return
            self._handle(lambda: route(body))

    return Handler


class Server(ThreadingMixIn, HTTPServer):
    """A threading HTTP server (one thread per connection)."""

    daemon_threads = True
    allow_reuse_address = True


def serve(
    agent,
    host="127.0.0.1",
    port=8000,
    name=None,
    max_batch_size=None,
    ready=None,
    observation_format=None,
):
    """Serve ``agent`` until interrupted; ``ready(url)`` is called once listening."""
    service = AgentService(agent, name, max_batch_size, observation_format)
    server = Server((host, port), make_handler(service))
    url = "http://{}:{}".format(host, server.server_address[1])
    try:
        if ready is not None:
            ready(url)
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


def _parse_args(argv):
    parser = argparse.ArgumentParser(description="Serve an agent to CondVLN over HTTP.")
    parser.add_argument("agent", help="MODULE:CLASS or path/to/file.py:CLASS")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port (0: any free port)")
    parser.add_argument("--name", default=None, help="agent name reported by /info")
    parser.add_argument("--max-batch-size", type=int, default=None, help="largest /act batch")
    parser.add_argument(
        "--observation-format",
        choices=sorted(OBSERVATION_FORMATS),
        default=None,
        help="observations the agent reads (default: its observation_format, else condvln)",
    )
    parser.add_argument(
        "--arg",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="constructor argument, the value parsed as JSON (repeatable)",
    )
    return parser.parse_args(argv)


def _constructor_args(items):
    kwargs = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit("agent_server: --arg expects KEY=VALUE, got " + item)
        try:
            kwargs[key] = json.loads(value)
        except ValueError:
            kwargs[key] = value
    return kwargs


def main(argv=None):
    """Command line: load the agent, serve it, print the URL when listening."""
    args = _parse_args(argv)
    agent = load_agent(args.agent, _constructor_args(args.arg))

    def ready(url):
        sys.stdout.write("condvln agent server listening on {}\n".format(url))
        sys.stdout.flush()

    serve(
        agent, args.host, args.port, args.name, args.max_batch_size, ready, args.observation_format
    )


if __name__ == "__main__":
    main()
