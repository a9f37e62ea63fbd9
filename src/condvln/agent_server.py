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
* ``POST /act`` ``{"version": 1, "batch": [{"episode_id", "observation"}, ...]}`` →
  ``{"actions": [int, ...]}`` (one per item, in order); an item holds the key of the
  ``observation_format`` (``"habitat_observation"`` for ``"habitat"``), and may hold both;
* errors: HTTP 4xx / 5xx with ``{"error": "one line"}``.

Arrays travel as ``{"__ndarray__": "<base64 of the C-order bytes>", "dtype": "<f4",
"shape": [h, w]}`` (numpy's ``dtype.str``).

The server survives its clients: a request body needs a ``Content-Length`` (digits only, at most
256 MiB: else 400 / 411 / 413); a request must arrive whole within ``--timeout`` seconds and a
kept-alive connection may idle ``--idle-timeout`` seconds (then it is closed); at most
``--max-connections`` connections are served at once (more get 503); JSON nested deeper than
64 levels is refused (400). Every error is answered with ``{"error": "one line"}`` and logged as
one line on stderr (``--traceback`` adds the agent's traceback when the agent raised); after an
error whose request body was not read, the connection is closed, so keep-alive never reads a
body as the next request. Ctrl-C (SIGINT) or SIGTERM stops it (exit code 0), even when it was
started with SIGINT ignored (a background job).
"""

import argparse
import base64
import binascii
import importlib
import importlib.util
import io
import json
import os
import re
import signal
import socket
import sys
import threading
import time
import traceback
from http.server import BaseHTTPRequestHandler, HTTPServer

PROTOCOL = "condvln-agent"
VERSION = 1
MAX_REQUEST_BYTES = 256 * 1024 * 1024
MAX_JSON_DEPTH = 64
"""Deepest nesting of a request body (an observation nests about 6 levels)."""
DEFAULT_MAX_BATCH = 64
DEFAULT_TIMEOUT = 60.0
"""Seconds a request (line, headers and body) may take to arrive once it has started."""
DEFAULT_IDLE_TIMEOUT = 300.0
"""Seconds a kept-alive connection may wait for its next request."""
DEFAULT_MAX_CONNECTIONS = 32
"""Connections served at once (one thread each); more are answered 503 and closed."""
OBSERVATION_FORMATS = {"condvln": "observation", "habitat": "habitat_observation"}
"""The agent's ``observation_format`` → the batch item key it is given."""
_DIGITS = re.compile(r"[0-9]+")

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


class ClientError(Exception):
    """A request the server refuses: HTTP ``status`` (4xx) with a one-line message."""

    def __init__(self, message, status=400):
        Exception.__init__(self, message)
        self.status = status


def _array(value):
    try:
        raw = base64.b64decode(value["__ndarray__"], validate=True)
        if numpy is None:
            return EncodedArray(raw, str(value["dtype"]), [int(n) for n in value["shape"]])
        return numpy.frombuffer(raw, dtype=numpy.dtype(value["dtype"])).reshape(value["shape"])
    except (binascii.Error, KeyError, TypeError, ValueError) as exc:
        raise ClientError("bad array: {}: {}".format(type(exc).__name__, exc)) from None


def decode(value):
    """JSON data → agent data: dicts become :class:`Record`, encoded arrays become arrays.

    Raises:
        ClientError: a malformed encoded array.
    """
    if isinstance(value, dict):
        if "__ndarray__" in value:
            return _array(value)
        return Record((k, decode(v)) for k, v in value.items())
    if isinstance(value, list):
        return [decode(v) for v in value]
    return value


def json_depth(value):
    """How deeply lists and objects nest in ``value`` (iterative: any depth)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, depth)
            stack.extend(
                (v, depth + 1) for v in (item.values() if isinstance(item, dict) else item)
            )
    return deepest


def parse_body(data):
    """A request body as a JSON object with ``"version": 1``, or :class:`ClientError` (400)."""
    try:
        body = json.loads(data.decode("utf-8"))
    except RecursionError:
        raise ClientError("request JSON is nested too deeply") from None
    except ValueError as exc:
        raise ClientError("request is not JSON: {}".format(exc)) from None
    if json_depth(body) > MAX_JSON_DEPTH:
        raise ClientError("request JSON is nested deeper than {} levels".format(MAX_JSON_DEPTH))
    version = body.get("version") if isinstance(body, dict) else None
    if type(version) is not int or version != VERSION:  # True == 1, but is no version
        raise ClientError('expected a JSON object with "version": {}'.format(VERSION))
    return body


def to_action(value):
    """An agent's action as a JSON int (numpy integers accepted; anything else is sent as is,
    or as its ``repr`` when JSON has no such value, so the client can say what came back)."""
    if numpy is not None and isinstance(value, numpy.integer):
        return int(value)
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return repr(value)
    if isinstance(value, int) and not -(2**63) <= value < 2**63:
        return "an int of {} bits".format(value.bit_length())
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
        try:
            self.max_batch_size = int(max_batch_size or default)
        except (TypeError, ValueError):
            self.max_batch_size = 0
        if self.max_batch_size < 1:
            raise SystemExit("agent_server: max_batch_size must be a whole number >= 1")
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
        """``POST /reset``: start an episode (the body is checked before the agent sees it)."""
        episode = body.get("episode")
        if not isinstance(episode, dict):
            raise ClientError("'episode' must be a JSON object")
        episode = decode(episode)
        with self.lock:
            self.agent.reset(episode)
        return {"ok": True}

    def _batch(self, body):
        """The observations and episode ids of an ``/act`` body, or :class:`ClientError`."""
        batch = body.get("batch")
        if not isinstance(batch, list) or not batch:
            raise ClientError("'batch' must be a non-empty list")
        if len(batch) > self.max_batch_size:
            raise ClientError(
                "batch of {} exceeds max_batch_size {}".format(len(batch), self.max_batch_size)
            )
        key = OBSERVATION_FORMATS[self.observation_format]
        for i, item in enumerate(batch):
            if not isinstance(item, dict) or key not in item or "episode_id" not in item:
                raise ClientError(
                    "batch[{}] must be an object with 'episode_id' and '{}'".format(i, key)
                )
        return [decode(item[key]) for item in batch], [item["episode_id"] for item in batch]

    def act(self, body):
        """``POST /act``: one action per batch item."""
        observations, ids = self._batch(body)
        with self.lock:
            if self.max_batch_size > 1:
                actions = self.agent.act_batch(observations, ids)
            else:
                actions = [self.agent.act(observations[0])]
        try:
            actions = list(actions)
        except TypeError:
            actions = []  # not a sequence: the client reports the count mismatch
        return {"actions": [to_action(a) for a in actions]}


class AgentFailed(Exception):
    """The agent raised: answered 500 with ``line``; ``trace`` is its traceback."""

    def __init__(self, line, trace):
        Exception.__init__(self, line)
        self.trace = trace


def _call_agent(call):
    """``call()``; whatever the agent raises (``SystemExit`` too) becomes :class:`AgentFailed`."""
    try:
        return call()
    except ClientError:
        raise
    except (KeyboardInterrupt, GeneratorExit):
        raise
    except BaseException as exc:  # the agent failed: report it, keep serving
        lines = "{}: {}".format(type(exc).__name__, exc).splitlines()
        raise AgentFailed(
            lines[0] if lines else type(exc).__name__, traceback.format_exc()
        ) from None


class _DeadlineReader(io.RawIOBase):
    """A socket's input that raises ``socket.timeout`` once ``deadline`` (monotonic) passes, so
    a client sending one byte at a time cannot hold a request open for longer."""

    def __init__(self, sock):
        io.RawIOBase.__init__(self)
        self.sock = sock
        self.deadline = time.monotonic()

    def readable(self):
        return True

    def readinto(self, buffer):
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise socket.timeout("deadline passed")
        self.sock.settimeout(remaining)
        return self.sock.recv_into(buffer)


class _Handler(BaseHTTPRequestHandler):
    """The request handler; :func:`make_handler` binds its service and limits."""

    service = None
    request_timeout = DEFAULT_TIMEOUT
    idle_timeout = DEFAULT_IDLE_TIMEOUT
    tracebacks = False
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def setup(self):
        BaseHTTPRequestHandler.setup(self)
        self.reader = _DeadlineReader(self.connection)
        self.rfile = io.BufferedReader(self.reader)

    def log_message(self, format, *args):  # one line per error, through log_line()
        pass

    def log_line(self, line):
        """Where :func:`make_handler`'s ``log`` gets one line per error (nowhere by default)."""

    def handle_one_request(self):
        self.reader.deadline = time.monotonic() + self.idle_timeout
        try:
            self.raw_requestline = self.rfile.readline(65537)
        except (socket.timeout, OSError):
            self.close_connection = True  # idle too long, or the client went away
            return
        if not self.raw_requestline:
            self.close_connection = True
            return
        self.reader.deadline = time.monotonic() + self.request_timeout
        try:
            self._dispatch()
        except socket.timeout:
            message = "request not received within {:g} s".format(self.request_timeout)
            self._error(408, message, close=True)

    def _dispatch(self):
        if len(self.raw_requestline) > 65536:
            self.requestline = self.request_version = self.command = ""
            self._error(414, "request line too long", close=True)
            return
        if not self.parse_request():
            return  # answered by send_error
        method = getattr(self, "do_" + self.command, None)
        if method is None:
            self._error(501, "unsupported method " + repr(self.command)[:40], close=True)
            return
        method()

    def send_error(self, code, message=None, explain=None):
        """Errors found while parsing a request: a JSON answer, and the connection closed."""
        self._error(code, message or self.responses.get(code, ("error",))[0], close=True)

    def _error(self, status, message, close=False):
        self.log_line("agent_server: {} {}: HTTP {}: {}".format(
            getattr(self, "command", "") or "-", (getattr(self, "path", "") or "-")[:80],
            status, message))  # fmt: skip
        self._reply(status, {"error": message}, close)

    def _reply(self, status, body, close=False):
        self.close_connection = self.close_connection or close
        try:
            data = json.dumps(body, default=repr).encode("utf-8")
        except (TypeError, ValueError, RecursionError) as exc:
            status, data = 500, json.dumps({"error": "unserialisable answer: {}".format(
                type(exc).__name__)}).encode("utf-8")  # fmt: skip
        head = "HTTP/1.1 {} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n"
        message = head.format(status, self.responses.get(status, ("",))[0], len(data))
        if self.close_connection:
            message += "Connection: close\r\n"
        try:
            self.connection.settimeout(self.request_timeout)
            self.wfile.write(message.encode("latin-1") + b"\r\n" + data)
            self.wfile.flush()
        except OSError:
            self.close_connection = True  # the client went away: nothing to answer

    def _content_length(self):
        """The body length the headers announce (0 without one), or :class:`ClientError`."""
        if self.headers.get("Transfer-Encoding"):
            raise ClientError("chunked bodies are not supported; send Content-Length", 411)
        values = {v.strip() for v in self.headers.get_all("Content-Length") or ()}
        if len(values) > 1:
            raise ClientError("conflicting Content-Length headers")
        text = values.pop() if values else "0"
        if not _DIGITS.fullmatch(text):
            raise ClientError(
                "Content-Length must be a whole number of bytes, got {!r}".format(text[:40])
            )
        length = int(text) if len(text) <= 12 else MAX_REQUEST_BYTES + 1
        if length > MAX_REQUEST_BYTES:
            raise ClientError(
                "request of {} bytes is over the {}-byte limit".format(
                    text if len(text) <= 20 else text[:20] + "...", MAX_REQUEST_BYTES
                ),
                413,
            )
        return length

    def _body(self):
        """The request body (read whole); a refused or short one closes the connection."""
        try:
            length = self._content_length()
        except ClientError:
            self.close_connection = True  # the body was not read: the stream is lost
            raise
        data = self.rfile.read(length) if length else b""
        if len(data) < length:
            self.close_connection = True
            raise ClientError("body ended after {} of {} bytes".format(len(data), length))
        return data

    def _handle(self, route):
        """Read the body, run ``route(body bytes)`` and answer (every error answered)."""
        try:
            self._reply(200, route(self._body()))
        except ClientError as exc:
            self._error(exc.status, str(exc))
        except AgentFailed as exc:
            if self.tracebacks:
                self.log_line(exc.trace.rstrip())
            self._error(500, "agent failed: " + str(exc))

    def do_GET(self):
        if self.path.rstrip("/") == "/info":
            self._handle(lambda data: self.service.info())
        else:
            self._handle(lambda data: _unknown(self.path))

    def do_POST(self):
        routes = {"/reset": self.service.reset, "/act": self.service.act}
        route = routes.get(self.path.rstrip("/"))
        if route is None:
            self._handle(lambda data: _unknown(self.path))
        else:
            self._handle(lambda data: _call_agent(lambda: route(parse_body(data))))


def make_handler(
    service, timeout=DEFAULT_TIMEOUT, idle_timeout=DEFAULT_IDLE_TIMEOUT, log=None, tracebacks=False
):
    """A request handler class bound to ``service``.

    ``log(line)`` gets one line per refused request or agent failure (``tracebacks``: then the
    agent's traceback too); see the module docstring for the timeouts.
    """
    attrs = {"service": service, "request_timeout": timeout, "idle_timeout": idle_timeout}
    attrs["tracebacks"] = tracebacks
    if log is not None:
        attrs["log_line"] = staticmethod(log)
    return type("Handler", (_Handler,), attrs)


def _unknown(path):
    raise ClientError("unknown path " + path[:200], 404)


class Server(HTTPServer):
    """An HTTP server with one thread per connection, at most ``max_connections`` at once."""

    allow_reuse_address = True

    def __init__(self, address, handler, max_connections=DEFAULT_MAX_CONNECTIONS, log=None):
        HTTPServer.__init__(self, address, handler)
        self.slots = threading.BoundedSemaphore(max_connections)
        self.log = log or (lambda line: None)

    def process_request(self, request, client_address):
        """Serve the connection in a thread, or answer 503 when every slot is taken."""
        if not self.slots.acquire(False):
            _busy(request)
            self.shutdown_request(request)
            return
        thread = threading.Thread(target=self._serve, args=(request, client_address))
        thread.daemon = True
        thread.start()

    def _serve(self, request, client_address):
        try:
            self.finish_request(request, client_address)
        except Exception:
            self.handle_error(request, client_address)
        finally:
            self.shutdown_request(request)
            self.slots.release()

    def handle_error(self, request, client_address):
        """One line, no traceback (a client that went away is not an error)."""
        exc = sys.exc_info()[1]
        if not isinstance(exc, OSError):
            self.log("agent_server: connection from {}: {}: {}".format(
                client_address[0], type(exc).__name__, exc))  # fmt: skip


def _busy(request):
    body = b'{"error": "server busy: every connection slot is in use"}'
    head = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
    head += "Content-Length: {}\r\nConnection: close\r\n\r\n".format(len(body))
    try:
        request.settimeout(1.0)
        request.sendall(head.encode("latin-1") + body)
    except OSError:
        pass


def _stop(signum, frame):
    raise KeyboardInterrupt


def serve(
    agent,
    host="127.0.0.1",
    port=8000,
    name=None,
    max_batch_size=None,
    ready=None,
    observation_format=None,
    timeout=DEFAULT_TIMEOUT,
    idle_timeout=DEFAULT_IDLE_TIMEOUT,
    max_connections=DEFAULT_MAX_CONNECTIONS,
    log=None,
    tracebacks=False,
):
    """Serve ``agent`` until SIGINT / SIGTERM; ``ready(url)`` is called once listening.

    ``log(line)`` receives one line per refused request or agent failure (default: none), and
    with ``tracebacks`` the agent's traceback when it raised.
    """
    service = AgentService(agent, name, max_batch_size, observation_format)
    handler = make_handler(service, timeout, idle_timeout, log, tracebacks)
    server = Server((host, port), handler, max_connections, log)
    url = "http://{}:{}".format(host, server.server_address[1])
    try:
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, signal.default_int_handler)  # even if inherited ignored
            signal.signal(signal.SIGTERM, _stop)
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
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        help="seconds a request may take to arrive (default %(default)g)",
    )
    parser.add_argument(
        "--idle-timeout",
        type=float,
        default=DEFAULT_IDLE_TIMEOUT,
        help="seconds a kept-alive connection may wait for its next request (default %(default)g)",
    )
    parser.add_argument(
        "--max-connections",
        type=int,
        default=DEFAULT_MAX_CONNECTIONS,
        help="connections served at once; more are answered 503 (default %(default)d)",
    )
    parser.add_argument(
        "--traceback", action="store_true", help="log the agent's traceback when it raises"
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


def _print(line, stream):
    if line:
        stream.write(line + "\n")
        stream.flush()


def main(argv=None):
    """Command line: load the agent, serve it, print the URL when listening and a line when
    stopped (SIGINT / SIGTERM, exit code 0)."""
    args = _parse_args(argv)
    if not (args.timeout > 0 and args.idle_timeout > 0 and args.max_connections >= 1):
        raise SystemExit("agent_server: --timeout and --idle-timeout must be > 0, "
                         "--max-connections >= 1")  # fmt: skip
    agent = load_agent(args.agent, _constructor_args(args.arg))
    try:
        serve(agent, args.host, args.port, args.name, args.max_batch_size,
              lambda url: _print("condvln agent server listening on " + url, sys.stdout),
              args.observation_format, args.timeout, args.idle_timeout, args.max_connections,
              lambda line: _print(line, sys.stderr), args.traceback)  # fmt: skip
    except (OSError, OverflowError) as exc:
        raise SystemExit("agent_server: cannot listen on {}:{}: {}".format(
            args.host, args.port, exc)) from None  # fmt: skip
    _print("condvln agent server stopped", sys.stdout)


if __name__ == "__main__":
    main()
