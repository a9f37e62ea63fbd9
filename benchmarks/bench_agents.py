"""Benchmark remote (HTTP) agents and batched stepping.

1. Loopback HTTP overhead per step for symbolic observations (target ≤ 1 ms, and ≤ 1.2× the
   bare loopback round trip): the same trivial agent run in-process and behind
   ``condvln/agent_server.py`` on 127.0.0.1; the overhead is the difference in wall time per
   step. Beside it, in the same run: one ``/act`` call with a real observation through
   :class:`~condvln.agents.remote.RemoteAgent`, and the *bare* loopback round trip, the same
   request bytes posted with ``http.client`` (keep-alive, no Nagle) to a standard-library
   ``http.server`` in another process that reads them and answers a fixed action — HTTP on
   this machine without our protocol, the floor any HTTP agent pays. Two more lines show where
   a round trip goes: the same exchange with a minimal client (the request written in one
   ``sendall``, the answer read by its ``Content-Length``, no ``http.client``) to the bare peer
   and to the agent server, so ``http.client``'s own share and the agent server's appear apart.
2. Batched throughput with an agent that sleeps 20 ms per call (emulating a model): steps per
   second for lockstep batches of B = 1, 8, 32, in-process and over HTTP.

A small dataset is generated into a temporary folder; everything runs with one worker::

    PYTHONPATH=src python benchmarks/bench_agents.py [--episodes 32] [--steps 40] [--calls 2000]
"""

from __future__ import annotations

import argparse
import http.client
import os
import select
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HERE = Path(__file__).resolve()
SERVER = HERE.parent.parent / "src" / "condvln" / "agent_server.py"


class WalkAgent:
    """Trivial and fast: forward until a collision, then turn; STOP after ``steps``."""

    def __init__(self, steps: int = 40) -> None:
        self.steps = steps

    def reset(self, episode: object) -> None:
        pass

    def act(self, observation: object) -> int:
        if observation.step >= self.steps:  # type: ignore[attr-defined]
            return 0
        return 2 if observation.collided else 1  # type: ignore[attr-defined]


class SleepyBatchAgent:
    """:class:`WalkAgent` per episode, stepped with ``act_batch``; sleeps ``sleep`` s per call."""

    max_batch_size = 256

    def __init__(self, steps: int = 40, sleep: float = 0.02) -> None:
        self.steps, self.sleep = steps, sleep
        self.walker = WalkAgent(steps)

    def reset(self, episode: object) -> None:
        pass

    def act(self, observation: object) -> int:
        return self.act_batch([observation], [None])[0]

    def act_batch(self, observations: list, episode_ids: list) -> list[int]:
        time.sleep(self.sleep)
        return [self.walker.act(o) for o in observations]


class BareHandler(BaseHTTPRequestHandler):
    """The bare loopback peer: reads a POST body and answers one fixed action."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    ANSWER = b'{"actions": [1]}'

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response_only(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.ANSWER)))
        self.end_headers()
        self.wfile.write(self.ANSWER)


def serve_bare() -> None:
    """Run the bare peer on a free port of 127.0.0.1, printing its URL (``--bare-server``)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), BareHandler)
    print(f"listening on http://127.0.0.1:{server.server_address[1]}", flush=True)
    server.serve_forever()


def _ms_per_call(post: Callable[[], None], calls: int) -> float:
    """Milliseconds per ``post()`` over ``calls`` calls, after 100 unmeasured ones."""
    for _ in range(100):
        post()
    started = time.perf_counter()
    for _ in range(calls):
        post()
    return 1000 * (time.perf_counter() - started) / calls


def bare_round_trip(url: str, body: bytes, calls: int) -> float:
    """Milliseconds per POST of ``body`` to the bare peer over one kept-alive connection."""
    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port))
    conn.connect()
    conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    headers = {"Content-Type": "application/json"}

    def post() -> None:
        conn.request("POST", "/act", body=body, headers=headers)
        conn.getresponse().read()

    try:
        return _ms_per_call(post, calls)
    finally:
        conn.close()


def minimal_round_trip(url: str, body: bytes, calls: int) -> float:
    """Milliseconds per POST of ``body`` to ``/act`` with no HTTP library: the request written
    in one ``sendall``, the answer's header lines read up to the blank line, then its
    ``Content-Length`` bytes (one kept-alive connection, no Nagle)."""
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    head = (
        f"POST /act HTTP/1.1\r\nHost: {host}:{port}\r\nAccept-Encoding: identity\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    request, answers = head.encode("latin-1") + body, sock.makefile("rb")

    def post() -> None:
        sock.sendall(request)
        status = answers.readline()
        if not status.startswith(b"HTTP/1.1 200 "):
            raise RuntimeError(f"{url}/act answered {status!r}")
        length = 0
        while (line := answers.readline()) not in (b"\r\n", b""):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":", 1)[1])
        answers.read(length)

    try:
        return _ms_per_call(post, calls)
    finally:
        sock.close()


class Server:
    """An agent server subprocess serving a class of this file (``cls`` None: the bare peer)."""

    def __init__(self, cls: str | None, *args: str) -> None:
        env = os.environ | {"PYTHONPATH": str(SERVER.parent.parent)}
        command = [str(HERE), "--bare-server"] if cls is None else [str(SERVER), f"{HERE}:{cls}"]
        self.proc = subprocess.Popen(
            [sys.executable, *command, *(() if cls is None else ("--port", "0")), *args],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        ready, _, _ = select.select([self.proc.stdout], [], [], 60)
        if not ready:
            raise RuntimeError("agent server did not start")
        self.url = self.proc.stdout.readline().split()[-1]  # type: ignore[union-attr]

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


def _run(agent: str, data: Path, out: Path, episodes: int, **kwargs: object) -> tuple[float, int]:
    from condvln.agents import run_agent

    summary = run_agent(agent, data, "train", out, limit=episodes, resume=False, **kwargs)  # type: ignore[arg-type]
    assert not summary.failures, summary.failures
    return summary.seconds, summary.steps


def http_overhead(data: Path, tmp: Path, episodes: int, steps: int, calls: int) -> None:
    """Print the per-step overhead of the HTTP agent and of one bare /act round trip."""
    from condvln.agents.base import EpisodeView
    from condvln.agents.remote import RemoteAgent, encode
    from condvln.agents.run import episode_specs
    from condvln.scene.serialize import load_scene
    from condvln.sim import Simulator

    local = f"{HERE}:WalkAgent"
    args = {"agent_args": {"steps": steps}}
    _run(local, data, tmp / "warm", 2, **args)  # compile kernels, load scenes once
    server = Server("WalkAgent", "--arg", f"steps={steps}")
    try:
        best_local = min(_run(local, data, tmp / "local", episodes, **args)[0] for _ in range(3))
        remote, n_steps = min(_run(server.url, data, tmp / "remote", episodes) for _ in range(3))
        per_step = 1000 * (remote - best_local) / n_steps
        print(f"run of {episodes} episodes, {n_steps} steps (best of 3):")
        print(f"  in-process {best_local:.3f} s, over HTTP {remote:.3f} s")
        print(f"  HTTP overhead per step: {per_step:.3f} ms (target <= 1 ms)")
        spec = episode_specs(data, "train", "original", 1)[0]
        sim = Simulator(load_scene(data / spec.scene_id))
        obs = sim.reset(spec.start_position, spec.start_yaw, instruction=spec.instruction)
        agent = RemoteAgent(server.url)
        agent.reset(EpisodeView(1, spec.scene_id, spec.instruction, 500, sim.protocol, None, 0))
        for _ in range(100):
            agent.act(obs)
        started = time.perf_counter()
        for _ in range(calls):
            agent.act(obs)
        rtt = 1000 * (time.perf_counter() - started) / calls
        body = encode({"version": 1, "batch": [agent._item(obs, 1)]})
        bare = Server(None)
        try:
            floor = bare_round_trip(bare.url, body, calls)
            minimal = minimal_round_trip(bare.url, body, calls)
        finally:
            bare.close()
        minimal_agent = minimal_round_trip(server.url, body, calls)
        print(
            f"  /act round trip ({len(obs.detections)} detections, {len(body)} bytes): "
            f"{rtt:.3f} ms ({calls} calls)"
        )
        print(
            f"  bare loopback round trip (the same bytes, http.client -> http.server): {floor:.3f} ms"
        )
        print(
            f"  the same exchange with no HTTP library (one write, read by Content-Length): "
            f"{minimal:.3f} ms to the bare peer, {minimal_agent:.3f} ms to the agent server"
        )
        print(
            f"  ratios to the bare round trip: overhead per step {per_step / floor:.2f} "
            f"(target <= 1.2), /act {rtt / floor:.2f}; to the library-free one: overhead per "
            f"step {per_step / minimal:.2f}; load average {os.getloadavg()[0]:.2f}"
        )
    finally:
        server.close()


def batched_throughput(data: Path, tmp: Path, episodes: int, steps: int) -> None:
    """Print steps per second for B = 1, 8, 32 with a 20 ms-per-call agent."""
    spec = f"{HERE}:SleepyBatchAgent"
    server = Server("SleepyBatchAgent", "--arg", f"steps={steps}")
    try:
        print(f"\n{episodes} episodes x {steps + 1} steps, agent sleeps 20 ms per call:")
        print(f"  {'B':>3} {'in-process steps/s':>20} {'HTTP steps/s':>14}")
        for batch in (1, 8, 32):
            local, n = _run(
                spec,
                data,
                tmp / f"b{batch}",
                episodes,
                agent_args={"steps": steps},
                batch_size=batch,
            )
            remote, m = _run(server.url, data, tmp / f"r{batch}", episodes, batch_size=batch)
            print(f"  {batch:>3} {n / local:>20.1f} {m / remote:>14.1f}")
    finally:
        server.close()


def main() -> None:
    """Generate a small dataset and run both benchmarks."""
    from condvln.dataset.generate import GenerateConfig, generate_dataset

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=32)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--bare-server", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.bare_server:
        serve_bare()
        return
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        data = tmp / "data"
        generate_dataset(GenerateConfig(scenes=6, per_scene=30), data, workers=1)
        http_overhead(data, tmp, args.episodes, args.steps, args.calls)
        batched_throughput(data, tmp, args.episodes, args.steps)


if __name__ == "__main__":
    main()
