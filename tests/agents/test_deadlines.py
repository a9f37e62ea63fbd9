"""Deadlines by default: every agent call ends in time, in-process and over HTTP.

Hostile agent servers run on 127.0.0.1 (a thread of this process): one that never answers and
one that sends its answer one byte at a time, for ever or for a few seconds. ``condvln run``
runs as a real subprocess; a run that finishes at all against a server that never ends its
answer was cut off by a deadline, so no assertion here depends on how fast the machine is.
"""

from __future__ import annotations

import http.server
import itertools
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from condvln.agents.base import DEFAULT_STEP_TIMEOUT, AgentTimeout, EpisodeView
from condvln.agents.remote import RemoteAgent
from condvln.agents.run import read_trajectories
from condvln.agents.runner.faults import AgentFault, call_agent
from condvln.agents.runner.options import RunOptions
from condvln.errors import ConfigError
from condvln.sim import ObservationProtocol

SLEEPER = f"{Path(__file__).parent / 'data' / 'served_agent.py'}:DetectionAgent"
INFO = {"protocol": "condvln-agent", "version": 1, "name": "hostile", "max_batch_size": 1}
BOUND = 120
"""Seconds a subprocess may take before the test calls it hung (a bound, not a wait)."""


def _response(body: bytes, length: int | None = None) -> bytes:
    head = f"HTTP/1.1 200 OK\r\nContent-Length: {len(body) if length is None else length}\r\n"
    return head.encode() + b"Content-Type: application/json\r\n\r\n" + body


class _Hostile(http.server.BaseHTTPRequestHandler):
    """Answers each path as ``self.server.modes[path]`` says: ``ok``, ``silent`` (never),
    ``drip`` (one byte every 20 ms, never ending) or ``slow`` (a whole answer, one byte
    every 20 ms: about 2 s)."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self._answer(orjson.dumps(INFO))

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self._answer(b'{"ok": true}' if self.path == "/reset" else b'{"actions": [0]}')

    def _answer(self, body: bytes) -> None:
        mode = self.server.modes.get(self.path, "ok")  # type: ignore[attr-defined]
        release: threading.Event = self.server.release  # type: ignore[attr-defined]
        if mode == "ok":
            self.wfile.write(_response(body))
        elif mode == "silent":
            release.wait()
            self.close_connection = True
        else:
            endless = itertools.repeat(b" ") if mode == "drip" else ()
            stream = itertools.chain(_response(body, 10**6 if mode == "drip" else None), endless)
            for byte in stream:
                try:
                    self.wfile.write(bytes([byte]) if isinstance(byte, int) else byte)
                    self.wfile.flush()
                except OSError:  # the client gave up
                    break
                if release.wait(0.02):
                    break
            self.close_connection = mode == "drip"  # a slow answer is complete: keep-alive


@pytest.fixture
def hostile() -> Iterator[http.server.ThreadingHTTPServer]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hostile)
    server.daemon_threads = True
    server.modes = {}  # type: ignore[attr-defined]
    server.release = threading.Event()  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.release.set()  # type: ignore[attr-defined]
    server.shutdown()
    server.server_close()


def _url(server: http.server.HTTPServer) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"


def _run(dataset: Path, out: Path, agent: str, *options: str) -> subprocess.CompletedProcess:
    """``condvln run`` on two train episodes, as a subprocess (bounded by :data:`BOUND`)."""
    argv = [sys.executable, "-m", "condvln", "run", "--agent", agent, "--dataset", str(dataset)]
    argv += ["--split", "train", "--limit", "2", "--out", str(out), "-j", "1", "-q", *options]
    env = {**os.environ, "COLUMNS": "400"}
    return subprocess.run(argv, capture_output=True, text=True, timeout=BOUND, env=env)


def _finished_clean(done: subprocess.CompletedProcess, out: Path) -> list[dict]:
    """The run exited 3 with nothing left behind; its records."""
    assert done.returncode == 3, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    assert not (out.parent / f".{out.name}.lock").exists(), "the run lock was left behind"
    assert not (out / "INCOMPLETE").exists(), "the run folder still says INCOMPLETE"
    assert (out / "predictions.json").is_file()
    return read_trajectories(out / "trajectories.jsonl")


@pytest.mark.parametrize("mode", ["silent", "drip"])
def test_silent_and_dripping_servers_time_out_under_the_step_timeout(
    dataset: Path, tmp_path: Path, hostile: http.server.HTTPServer, mode: str
) -> None:
    hostile.modes["/act"] = mode  # type: ignore[attr-defined]
    out = tmp_path / "run"
    done = _run(dataset, out, _url(hostile), "--step-timeout", "1")
    records = _finished_clean(done, out)
    assert len(records) == 2 and {r["status"] for r in records} == {"timeout"}
    assert all(r["reason"].startswith("act: ") and "within" in r["reason"] for r in records)
    assert all(r["reason"].endswith(" 1 s") for r in records), records[0]["reason"]
    assert "agent failures: 2 timeout" in done.stdout


def test_the_http_deadline_alone_cuts_a_dripping_answer(
    dataset: Path, tmp_path: Path, hostile: http.server.HTTPServer
) -> None:
    """No step watchdog (``--step-timeout 0``): the per-request deadline ends the answer that
    arrives one byte at a time, each byte well within any per-read socket timeout."""
    hostile.modes["/act"] = "drip"  # type: ignore[attr-defined]
    out = tmp_path / "run"
    options = ("--step-timeout", "0", "--agent-arg", "read_timeout=1")
    records = _finished_clean(_run(dataset, out, _url(hostile), *options), out)
    reasons = {r["reason"] for r in records}
    assert reasons == {f"act: POST /act: no complete answer from {_url(hostile)} within 1 s"}


@pytest.mark.parametrize("mode", ["silent", "drip"])
def test_the_first_info_request_keeps_to_the_step_timeout(
    dataset: Path, tmp_path: Path, hostile: http.server.HTTPServer, mode: str
) -> None:
    hostile.modes["/info"] = mode  # type: ignore[attr-defined]
    out = tmp_path / "run"
    done = _run(dataset, out, _url(hostile), "--step-timeout", "1")
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr == (
        f"condvln: error: agent server {_url(hostile)}: GET /info: no complete answer from "
        f"{_url(hostile)} within 1 s\n"
    )
    assert not out.exists() and not (tmp_path / ".run.lock").exists()


def test_in_process_sleeper_is_interrupted(dataset: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    done = _run(dataset, out, SLEEPER, "--agent-arg", "sleep=600", "--step-timeout", "1")
    records = _finished_clean(done, out)  # it sleeps 600 s per step: it was interrupted
    assert [r["reason"] for r in records] == ["act: no answer within the step timeout of 1 s"] * 2


PROBE = '''
import signal


class TimerProbe:
    """Logs the seconds left on the step watchdog's interval timer at each ``act``; stops."""

    def __init__(self, log_file):
        self.log_file = log_file

    def reset(self, episode):
        pass

    def act(self, observation):
        with open(self.log_file, "a") as fh:
            fh.write("%r\\n" % signal.getitimer(signal.ITIMER_REAL)[0])
        return 0
'''


@pytest.mark.parametrize(
    ("options", "low", "high", "manifest"),
    [
        ((), DEFAULT_STEP_TIMEOUT - 30, DEFAULT_STEP_TIMEOUT, DEFAULT_STEP_TIMEOUT),
        (("--step-timeout", "2.5"), 0.0001, 2.5, 2.5),
        (("--step-timeout", "0"), 0.0, 0.0, None),
    ],
)
def test_the_step_timeout_reaches_in_process_agents(
    dataset: Path, tmp_path: Path, options: tuple, low: float, high: float, manifest: float | None
) -> None:
    """The default arms a 60 s watchdog around every call; ``0`` arms none (seen by the agent)."""
    probe, log = tmp_path / "probe.py", tmp_path / "timer.log"
    probe.write_text(PROBE)
    out = tmp_path / "run"
    done = _run(dataset, out, f"{probe}:TimerProbe", "--agent-arg", f'log_file="{log}"', *options)
    assert done.returncode == 0, done.stdout + done.stderr
    left = [float(line) for line in log.read_text().split()]
    assert len(left) == 2 and all(low <= s <= high for s in left), left
    assert orjson.loads((out / "manifest.json").read_bytes())["step_timeout"] == manifest


@pytest.mark.slow
def test_no_limit_lets_a_slow_answer_finish(
    dataset: Path, tmp_path: Path, hostile: http.server.HTTPServer
) -> None:
    """An answer sent one byte every 20 ms (about 2 s) is cut at ``--step-timeout 1`` and
    waited for under ``--step-timeout 0``."""
    hostile.modes["/act"] = "slow"  # type: ignore[attr-defined]
    cut = _finished_clean(_run(dataset, tmp_path / "a", _url(hostile), "--step-timeout", "1"),
                          tmp_path / "a")  # fmt: skip
    assert {r["status"] for r in cut} == {"timeout"}
    done = _run(dataset, tmp_path / "b", _url(hostile), "--step-timeout", "0")
    assert done.returncode == 0, done.stdout + done.stderr
    records = read_trajectories(tmp_path / "b" / "trajectories.jsonl")
    assert [(r["status"], r["actions"]) for r in records] == [("ok", [0])] * 2


def test_remote_client_deadline_covers_the_whole_answer(hostile: http.server.HTTPServer) -> None:
    hostile.modes["/act"] = "drip"  # type: ignore[attr-defined]
    agent = RemoteAgent(_url(hostile), read_timeout=0.5)
    agent.reset(EpisodeView(1, "s", "go", 10, ObservationProtocol(), None, 0))
    started = time.monotonic()
    with pytest.raises(AgentTimeout, match=r"POST /act: no complete answer .* within 0\.5 s"):
        agent.act({"step": 0})  # the drip never ends: returning at all is the deadline's doing
    assert time.monotonic() - started < BOUND
    hostile.modes["/info"] = "silent"  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match=r"GET /info: no complete answer .* within 0\.5 s"):
        RemoteAgent(_url(hostile), read_timeout=0.5)
    hostile.modes["/info"] = "ok"  # type: ignore[attr-defined]
    assert RemoteAgent(_url(hostile), read_timeout=0).read_timeout is None


def test_step_timeout_values() -> None:
    assert RunOptions().step_timeout == DEFAULT_STEP_TIMEOUT == 60.0
    assert RunOptions(step_timeout=0).step_timeout is None
    for bad in (-1, float("inf"), float("nan"), 1e7):
        with pytest.raises(ValueError, match="step_timeout"):
            RunOptions(step_timeout=bad)


def test_a_bad_step_timeout_is_one_line(dataset: Path, tmp_path: Path) -> None:
    done = _run(dataset, tmp_path / "run", "random", "--step-timeout", "-1")
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "step_timeout" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "run").exists()


def test_the_watchdog_leaves_the_alarm_as_it_found_it(dataset: Path, tmp_path: Path) -> None:
    """After a run, SIGALRM has its old handler and the interval timer is the caller's again
    (none, or pytest-timeout's own, with no more time left than before)."""
    from condvln.agents import run_agent

    handler, before = signal.getsignal(signal.SIGALRM), signal.getitimer(signal.ITIMER_REAL)[0]
    summary = run_agent(SLEEPER, dataset, "train", tmp_path, limit=2, step_timeout=5)
    after = signal.getitimer(signal.ITIMER_REAL)[0]
    assert summary.failures == {} and signal.getsignal(signal.SIGALRM) is handler
    assert after == before == 0.0 or 5.0 < after <= before


def test_an_enclosing_interval_timer_survives_agent_calls() -> None:
    """A caller's own SIGALRM time limit is rearmed after each watched call, never dropped."""
    fired: list[int] = []
    outer = signal.getitimer(signal.ITIMER_REAL)[0]  # pytest-timeout's, when it runs
    previous = signal.signal(signal.SIGALRM, lambda *args: fired.append(1))
    try:
        signal.setitimer(signal.ITIMER_REAL, 100.0)
        with pytest.raises(AgentFault, match=r"act: no answer within the step timeout of 0\.2 s"):
            call_agent("act", time.sleep, 30.0, timeout=0.2)
        assert call_agent("act", len, [1, 2], timeout=60.0) == 2
        assert 0 < signal.getitimer(signal.ITIMER_REAL)[0] < 100.0 and not fired
    finally:
        signal.setitimer(signal.ITIMER_REAL, outer)
        signal.signal(signal.SIGALRM, previous)
