"""Hostile clients of ``agent_server.py``: a real server on 127.0.0.1 and raw sockets.

Every case sends one hostile request (or connection pattern) and checks the answer: the HTTP
status, a one-line JSON ``error``, whether the connection stays usable (keep-alive never reads
a body as the next request) — and then that the server still answers a plain ``GET /info``.
The server's stderr holds one line per refused request and never a traceback.
"""

from __future__ import annotations

import base64
import json
import select
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import condvln

SERVER = Path(condvln.__file__).parent / "agent_server.py"
TIMEOUT, IDLE, SLOTS = 1.5, 3.0, 6
"""The server's --timeout, --idle-timeout and --max-connections in these tests."""

AGENT = '''
class Echo(object):
    """Answers FORWARD; ``reset`` needs an episode id (a KeyError otherwise)."""

    def reset(self, episode):
        self.episode = episode["episode_id"]

    def act(self, observation):
        return 1
'''


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def error(self) -> str:
        doc = json.loads(self.body)
        assert isinstance(doc, dict) and isinstance(doc.get("error"), str), doc
        assert "\n" not in doc["error"] and "Traceback" not in doc["error"]
        return doc["error"]


def _parse(data: bytes) -> tuple[Answer, bytes] | None:
    """The first whole answer in ``data`` and the bytes after it (``None``: not whole yet)."""
    end = data.find(b"\r\n\r\n")
    if end < 0:
        return None
    lines = data[:end].decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:])}
    length = int(headers.get("content-length", "0"))
    if len(data) < end + 4 + length:
        return None
    answer = Answer(int(lines[0].split()[1]), headers, data[end + 4 : end + 4 + length])
    return answer, data[end + 4 + length :]


def read_answers(sock: socket.socket, count: int, wait: float = 10.0) -> tuple[list[Answer], bool]:
    """``count`` HTTP answers from ``sock`` (fewer if it closes first) and whether the server
    closed the connection or sent anything more within a short while after them."""
    data, answers = b"", []
    deadline = time.monotonic() + wait
    while True:
        parsed = _parse(data)
        if parsed is not None:
            answer, data = parsed
            answers.append(answer)
            continue
        if len(answers) >= count:  # whatever comes now is extra: wait briefly for a close
            sock.settimeout(
                0.3 if answers and answers[-1].headers.get("connection") != "close" else 5
            )
        else:
            sock.settimeout(max(deadline - time.monotonic(), 0.01))
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            return answers, False
        except ConnectionResetError:
            return answers, True
        if not chunk:
            return answers, True
        data += chunk


class LiveServer:
    """``agent_server.py`` serving :data:`AGENT` with short timeouts; stderr kept in a file."""

    def __init__(self, folder: Path, idle: float = IDLE, slots: int = SLOTS) -> None:
        (folder / "echo.py").write_text(AGENT)
        self.stderr = folder / "server.stderr"
        with self.stderr.open("wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, str(SERVER), f"{folder / 'echo.py'}:Echo", "--port", "0",
                 "--timeout", str(TIMEOUT), "--idle-timeout", str(idle),
                 "--max-connections", str(slots)],
                stdout=subprocess.PIPE, stderr=err, text=True,
            )  # fmt: skip
        line = self.proc.stdout.readline()  # type: ignore[union-attr]  # the readiness line
        assert "listening on http://127.0.0.1:" in line, (line, self.stderr.read_text())
        self.port = int(line.rsplit(":", 1)[1])

    def connect(self) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.port), timeout=10)

    def send(
        self, data: bytes, count: int = 1, *, shut: bool = False, wait: float = 10.0
    ) -> tuple[list[Answer], bool]:
        with self.connect() as sock:
            sock.sendall(data)
            if shut:
                sock.shutdown(socket.SHUT_WR)
            return read_answers(sock, count, wait)

    def stop(self) -> None:
        """SIGTERM, then the stop line and exit code 0; the log holds no traceback."""
        self.proc.terminate()
        assert self.proc.stdout.readline().strip() == "condvln agent server stopped"  # type: ignore[union-attr]
        assert self.proc.wait(60) == 0
        log = self.stderr.read_text()
        assert "Traceback" not in log and "internal error" not in log, log[-3000:]

    def healthy(self) -> None:
        assert self.proc.poll() is None, "the server died"
        (answer,), _ = self.send(b"GET /info HTTP/1.1\r\nHost: x\r\n\r\n")
        assert answer.status == 200 and json.loads(answer.body)["name"] == "Echo"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    live = LiveServer(tmp_path_factory.mktemp("agent-server"))
    try:
        yield live
    finally:
        live.stop()


def post(path: str, body: bytes, *headers: str, length: str | None = None) -> bytes:
    """A POST request; ``length`` overrides the Content-Length header's value."""
    size = str(len(body)) if length is None else length
    extra = "".join(f"{h}\r\n" for h in headers)
    return (
        f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {size}\r\n{extra}\r\n".encode() + body
    )


def act(*items: object, version: object = 1) -> bytes:
    return json.dumps({"version": version, "batch": list(items)}).encode()


def array(data: str, dtype: object = "<f4", shape: object = (1,)) -> dict:
    return {
        "episode_id": 1,
        "observation": {"x": {"__ndarray__": data, "dtype": dtype, "shape": shape}},
    }


F4 = base64.b64encode(b"\0\0\x80?").decode()  # one float32: 1.0
OK_ITEM = {"episode_id": 1, "observation": {"step": 0}}


@dataclass(frozen=True)
class Case:
    """A request, the status(es) it must get and the words of the (first) error."""

    name: str
    request: bytes
    status: tuple[int, ...]
    words: str = ""
    closes: bool = False


CASES = [
    # Content-Length
    Case("length-negative", post("/act", act(OK_ITEM), length="-1"), (400,), "whole number", True),
    Case("length-minus-zero", post("/act", b"", length="-0"), (400,), "whole number", True),
    Case("length-text", post("/act", act(OK_ITEM), length="abc"), (400,), "whole number", True),
    Case("length-float", post("/act", act(OK_ITEM), length="12.0"), (400,), "whole number", True),
    Case("length-exponent", post("/act", act(OK_ITEM), length="1e3"), (400,), "whole number", True),
    Case("length-plus", post("/act", act(OK_ITEM), length="+40"), (400,), "whole number", True),
    Case("length-hex", post("/act", act(OK_ITEM), length="0x10"), (400,), "whole number", True),
    Case("length-unicode-digit", post("/act", b"", length="\u00b2"), (400,), "whole number", True),
    Case("length-empty", post("/act", b"", length=""), (400,), "whole number", True),
    Case("length-300-mib", post("/act", b"{}", length=str(300 << 20)), (413,), "over the", True),
    Case("length-20-digits", post("/act", b"{}", length="9" * 20), (413,), "over the", True),
    Case("length-5000-digits", post("/act", b"{}", length="9" * 5000), (413,), "over the", True),
    Case("length-conflict", post("/act", act(OK_ITEM), "Content-Length: 5"), (400,), "conflicting", True),
    Case("chunked", post("/act", b"5\r\nhello\r\n0\r\n\r\n", "Transfer-Encoding: chunked", length="0"), (411,), "chunked", True),
    Case("expect-continue-too-large", post("/act", b"", "Expect: 100-continue", length=str(1 << 30)), (100, 413), "over the", True),
    # bodies
    Case("not-json", post("/act", b"this is not json"), (400,), "not JSON"),
    Case("not-utf8", post("/act", b'{"version": 1, "x": "\xff\xfe"}'), (400,), "not JSON"),
    Case("deep-100000", post("/act", b"[" * 100_000 + b"]" * 100_000), (400,), "nested"),
    Case("deep-65", post("/act", b'{"version": 1, "batch": ' + b"[" * 64 + b"]" * 64 + b"}"), (400,), "deeper than 64"),
    Case("json-list", post("/act", b"[1, 2]"), (400,), '"version": 1'),
    Case("version-missing", post("/act", b'{"batch": []}'), (400,), '"version": 1'),
    Case("version-2", post("/act", act(OK_ITEM, version=2)), (400,), '"version": 1'),
    Case("version-true", post("/act", act(OK_ITEM, version=True)), (400,), '"version": 1'),
    Case("huge-int", post("/act", b'{"version": 1, "batch": [' + b"9" * 5000 + b"]}"), (400,), ""),
    Case("reset-no-episode", post("/reset", b'{"version": 1}'), (400,), "'episode'"),
    Case("reset-episode-list", post("/reset", b'{"version": 1, "episode": [1]}'), (400,), "'episode'"),
    Case("reset-agent-keyerror", post("/reset", b'{"version": 1, "episode": {}}'), (500,), "agent failed: KeyError"),
    Case("act-batch-missing", post("/act", b'{"version": 1}'), (400,), "'batch'"),
    Case("act-batch-empty", post("/act", act()), (400,), "'batch'"),
    Case("act-batch-text", post("/act", b'{"version": 1, "batch": "go"}'), (400,), "'batch'"),
    Case("act-item-number", post("/act", act(5)), (400,), "batch[0]"),
    Case("act-item-no-observation", post("/act", act({"episode_id": 1})), (400,), "batch[0]"),
    Case("act-item-no-id", post("/act", act({"observation": {}})), (400,), "batch[0]"),
    Case("act-batch-too-large", post("/act", act(OK_ITEM, OK_ITEM)), (400,), "max_batch_size"),
    Case("array-bad-base64", post("/act", act(array("%%%"))), (400,), "bad array"),
    Case("array-unknown-dtype", post("/act", act(array(F4, dtype="<q9"))), (400,), "bad array"),
    Case("array-object-dtype", post("/act", act(array(F4, dtype="O"))), (400,), "bad array"),
    Case("array-dtype-list", post("/act", act(array(F4, dtype=[1, 2]))), (400,), "bad array"),
    Case("array-shape-mismatch", post("/act", act(array(F4, shape=[2, 3]))), (400,), "bad array"),
    Case("array-shape-negative", post("/act", act(array(F4, shape=[-1, -1]))), (400,), "bad array"),
    Case("array-shape-text", post("/act", act(array(F4, shape="big"))), (400,), "bad array"),
    Case("array-no-dtype", post("/act", act({"episode_id": 1, "observation": {"__ndarray__": F4}})), (400,), "bad array"),
    Case("act-ok", post("/act", act(OK_ITEM)), (200,)),
    # request lines and headers
    Case("unknown-path-get", b"GET /nope HTTP/1.1\r\nHost: x\r\n\r\n", (404,), "unknown path"),
    Case("unknown-path-nul", b"GET /\x00\x01 HTTP/1.1\r\nHost: x\r\n\r\n", (404,), "unknown path"),
    Case("unknown-path-post", post("/nope", b'{"version": 1}'), (404,), "unknown path"),
    Case("method-put", b"PUT /act HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", (501,), "unsupported method", True),
    Case("method-head", b"HEAD /info HTTP/1.1\r\nHost: x\r\n\r\n", (501,), "unsupported method", True),
    Case("garbage-line", b"\x00\x01\x02 garbage\r\n\r\n", (400,), "", True),
    Case("line-too-long", b"GET /" + b"a" * 70_000 + b" HTTP/1.1\r\n\r\n", (414,), "too long", True),
    Case("header-too-long", b"GET /info HTTP/1.1\r\nX: " + b"a" * 70_000 + b"\r\n\r\n", (431,), "", True),
    Case("headers-101", b"GET /info HTTP/1.1\r\n" + b"".join(b"X%d: 1\r\n" % i for i in range(101)) + b"\r\n", (431,), "", True),
    Case("http-2", b"GET /info HTTP/2.0\r\nHost: x\r\n\r\n", (505,), "", True),
    Case("http-bad-version", b"GET /info HTTP/x.y\r\nHost: x\r\n\r\n", (400,), "", True),
    Case("http-0.9", b"GET /info\r\n\r\n", (200,)),
    Case("http-1.0-closes", b"GET /info HTTP/1.0\r\n\r\n", (200,), "", True),
]  # fmt: skip
"""Single hostile requests: status, error words, whether the connection is closed after."""


@pytest.mark.parametrize("hostile", CASES, ids=[c.name for c in CASES])
def test_hostile_request_is_answered(server: LiveServer, hostile: Case) -> None:
    answers, closed = server.send(hostile.request, count=len(hostile.status))
    assert [a.status for a in answers] == list(hostile.status), answers
    final = answers[-1]
    if final.status != 200:
        assert hostile.words in final.error
    if hostile.closes:
        assert final.headers.get("connection") == "close" and closed
    server.healthy()


INFO = b"GET /info HTTP/1.1\r\nHost: x\r\n\r\n"
SEQUENCES: dict[str, tuple[bytes, tuple[int, ...]]] = {
    # requests sent at once on one connection → the statuses, in order (keep-alive in sync)
    "get-with-body-then-get": (b"GET /info HTTP/1.1\r\nContent-Length: 16\r\n\r\nGET /nope HTTP/1" + INFO, (200, 200)),
    "404-post-with-body-then-get": (post("/nope", b"GET /nope HTTP/1.1\r\n\r\n") + INFO, (404, 200)),
    "400-body-then-get": (post("/act", b"not json") + INFO, (400, 200)),
    "agent-error-then-get": (post("/reset", b'{"version": 1, "episode": {}}') + INFO, (500, 200)),
    "pipelined-three": (INFO + post("/act", act(OK_ITEM)) + INFO, (200, 200, 200)),
    "bad-length-then-smuggled": (post("/act", b"GET /nope HTTP/1.1\r\n\r\n", length="-1") + INFO, (400,)),
    "connection-close-header": (b"GET /info HTTP/1.1\r\nConnection: close\r\n\r\n" + INFO, (200,)),
}  # fmt: skip


@pytest.mark.parametrize("name", list(SEQUENCES))
def test_keep_alive_stays_in_sync(server: LiveServer, name: str) -> None:
    data, statuses = SEQUENCES[name]
    answers, _ = server.send(data, count=len(statuses))
    assert [a.status for a in answers] == list(statuses), answers
    server.healthy()


def _slow_headers(sock: socket.socket) -> None:
    sock.sendall(b"GET /info HTTP/1.1\r\n")
    for byte in b"X-Slow: " + b"z" * 200:  # a byte every 0.2 s until the server answers
        if select.select([sock], [], [], 0.2)[0]:
            return
        sock.sendall(bytes([byte]))


def _half_body(sock: socket.socket) -> None:
    sock.sendall(post("/act", act(OK_ITEM))[:-10])


def _half_body_then_close(sock: socket.socket) -> None:
    _half_body(sock)
    sock.shutdown(socket.SHUT_WR)


SLACK = 20.0
"""Seconds a cut-off may come after the server's own timeout (scheduling on a loaded machine):
a bound that catches a server that never cuts off, not a measure of its pace."""

TIMED: dict[str, tuple[Callable[[socket.socket], None], int | None, str, float]] = {
    # name: (what the client does, status (None: closed unanswered), error words, most seconds)
    "slow-headers": (_slow_headers, 408, "not received within", TIMEOUT + SLACK),
    "half-sent-body": (_half_body, 408, "not received within", TIMEOUT + SLACK),
    "half-body-then-eof": (_half_body_then_close, 400, "body ended after", SLACK),
    "idle-connection": (lambda sock: None, None, "", IDLE + SLACK),
    "partial-request-line": (lambda sock: sock.sendall(b"GET /inf"), None, "", IDLE + SLACK),
}


@pytest.mark.parametrize("name", list(TIMED))
def test_slow_clients_are_cut_off(server: LiveServer, name: str) -> None:
    behave, status, words, most = TIMED[name]
    started = time.monotonic()
    with server.connect() as sock:
        behave(sock)
        answers, closed = read_answers(sock, 1 if status else 0, wait=most + 5)
    assert closed and time.monotonic() - started < most
    assert [a.status for a in answers] == ([status] if status else [])
    if answers:
        assert words in answers[0].error
    server.healthy()


def test_connection_flood_is_bounded(tmp_path: Path) -> None:
    flood = LiveServer(tmp_path, idle=60.0, slots=4)  # held connections stay for the test
    try:
        held = [flood.connect() for _ in range(4)]
        for sock in held:  # each is being served once it answers
            sock.sendall(INFO)
            assert read_answers(sock, 1)[0][0].status == 200
        for _ in range(5):
            with flood.connect() as sock:
                answers, closed = read_answers(sock, 1)
            assert [a.status for a in answers] == [503] and closed
            assert "busy" in answers[0].error
        for sock in held:
            sock.close()
        deadline = time.monotonic() + 60  # a bound against hanging, not a wait
        while time.monotonic() < deadline:  # slots free up as the server sees the closes
            answers, _ = flood.send(INFO)
            if answers[0].status == 200:
                break
            time.sleep(0.1)
        flood.healthy()
    finally:
        flood.stop()


def test_reset_connections_leave_no_trace(server: LiveServer) -> None:
    for data in (post("/act", act(OK_ITEM))[:30], INFO):
        sock = server.connect()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        sock.sendall(data)
        sock.close()  # RST (linger 0), before and after the answer
    server.healthy()
    assert "Traceback" not in server.stderr.read_text()


def test_every_refusal_is_one_log_line(server: LiveServer) -> None:
    server.send(post("/act", b"not json"))
    lines = [x for x in server.stderr.read_text().splitlines() if x.strip()]
    assert lines and all(x.startswith("agent_server: ") for x in lines), lines[:5]


def test_port_in_use_is_one_line(server: LiveServer, tmp_path: Path) -> None:
    (tmp_path / "echo.py").write_text(AGENT)
    done = subprocess.run(
        [sys.executable, str(SERVER), f"{tmp_path / 'echo.py'}:Echo", "--port", str(server.port)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.strip().startswith(f"agent_server: cannot listen on 127.0.0.1:{server.port}")
