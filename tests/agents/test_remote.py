"""Remote agents: ``agent_server.py`` as a real server process on 127.0.0.1, and the client."""

from __future__ import annotations

import ast
import http.server
import os
import select
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import orjson
import pytest

import condvln
from condvln.agents import run_agent
from condvln.agents.base import AgentTimeout, EpisodeView
from condvln.agents.remote import RemoteAgent, decode_array, encode
from condvln.agents.run import episode_specs, read_trajectories
from condvln.errors import ConfigError
from condvln.io import read_json
from condvln.sim import ObservationProtocol

SERVER = Path(condvln.__file__).parent / "agent_server.py"
AGENT_FILE = Path(__file__).parent / "data" / "served_agent.py"
SRC = str(Path(condvln.__file__).parent.parent)
PYTHON36 = Path("/root/.pyenv/versions/3.6.15/bin/python")


class Server:
    """An agent server subprocess; ``url`` once it listens."""

    def __init__(
        self,
        spec: str,
        *args: str,
        port: int = 0,
        python: str = sys.executable,
        preexec_fn: Callable[[], None] | None = None,
    ) -> None:
        env = os.environ | {"PYTHONPATH": SRC}
        self.proc = subprocess.Popen(
            [python, str(SERVER), spec, "--port", str(port), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
            preexec_fn=preexec_fn,
        )
        ready, _, _ = select.select([self.proc.stdout], [], [], 120)  # a bound, not a wait
        assert ready, "agent server did not start"
        line = self.proc.stdout.readline()  # type: ignore[union-attr]  # the readiness line
        assert "listening on http://127.0.0.1:" in line, line
        self.url = line.split()[-1]
        self.port = int(self.url.rsplit(":", 1)[1])

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(10)


@pytest.fixture
def servers() -> Iterator[list[Server]]:
    started: list[Server] = []
    yield started
    for server in started:
        if server.proc.poll() is None:
            server.kill()


def _trajectories(run_dir: Path) -> dict[int, tuple]:
    return {
        r["episode_id"]: (r["positions"], r["headings"], r["actions"], r["stop"], r["status"])
        for r in read_trajectories(run_dir / "trajectories.jsonl")
    }


def test_server_file_is_python36_standard_library_only() -> None:
    tree = ast.parse(SERVER.read_text(), feature_version=(3, 6))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add((node.module or "").split(".")[0])
    assert imported - {"numpy"} <= set(sys.stdlib_module_names)
    assert "condvln" not in imported


def test_remote_results_equal_in_process(dataset: Path, tmp_path: Path, servers: list) -> None:
    spec = f"{AGENT_FILE}:DetectionAgent"
    local = run_agent(spec, dataset, "train", tmp_path / "local", limit=8)
    assert local.failures == {}
    pythons = [sys.executable] + ([str(PYTHON36)] if PYTHON36.is_file() else [])
    for k, python in enumerate(pythons):
        server = Server(spec, python=python)
        servers.append(server)
        remote = run_agent(server.url, dataset, "train", tmp_path / f"remote{k}", limit=8)
        assert remote.failures == {} and remote.ran == 8
        assert _trajectories(tmp_path / f"remote{k}") == _trajectories(tmp_path / "local")
        manifest = read_json(tmp_path / f"remote{k}" / "manifest.json")
        assert manifest["agent"] == server.url
        assert manifest["agent_server"]["name"] == "DetectionAgent"
        assert manifest["agent_server"]["python"] == (
            "3.6.15" if python == str(PYTHON36) else sys.version.split()[0]
        )


def test_remote_random_baseline_and_batched_agent_match(
    dataset: Path, tmp_path: Path, servers: list
) -> None:
    server = Server("condvln.agents.baselines:RandomAgent")
    servers.append(server)
    run_agent("random", dataset, "train", tmp_path / "local", limit=6, workers=2)
    run_agent(server.url, dataset, "train", tmp_path / "remote", limit=6, workers=2)
    assert _trajectories(tmp_path / "remote") == _trajectories(tmp_path / "local")
    batched = Server(f"{AGENT_FILE}:BatchedDetectionAgent", "--max-batch-size", "4")
    servers.append(batched)
    one = run_agent(f"{AGENT_FILE}:DetectionAgent", dataset, "train", tmp_path / "one", limit=10)
    four = run_agent(batched.url, dataset, "train", tmp_path / "four", limit=10, batch_size=8)
    assert four.batch_size == 8 and one.batch_size == 1
    assert _trajectories(tmp_path / "four") == _trajectories(tmp_path / "one")
    shared = run_agent(
        batched.url, dataset, "train", tmp_path / "batched", limit=10, batch_size=3, workers=2
    )
    assert shared.failures == {}
    assert _trajectories(tmp_path / "batched") == _trajectories(tmp_path / "one")


def test_killed_server_fails_episodes_and_resume_completes(
    dataset: Path, tmp_path: Path, servers: list
) -> None:
    spec = f"{AGENT_FILE}:DetectionAgent"
    run_agent(spec, dataset, "train", tmp_path / "local", limit=8)
    server = Server(spec)
    servers.append(server)
    run_dir = tmp_path / "remote"

    def kill_after_three(done: int, total: int) -> None:
        if done == 3:
            server.kill()

    summary = run_agent(server.url, dataset, "train", run_dir, limit=8, progress=kill_after_three)
    assert summary.ran == 8 and summary.failures == {"agent_error": 5}
    failed = [r for r in read_trajectories(run_dir / "trajectories.jsonl") if r["status"] != "ok"]
    assert len(failed) == 5
    assert all(r["status"] == "agent_error" and "127.0.0.1" in r["reason"] for r in failed)
    assert all(r["stop"] is False for r in failed)
    restarted = Server(spec, port=server.port)
    servers.append(restarted)
    resumed = run_agent(restarted.url, dataset, "train", run_dir, limit=8)
    assert (resumed.skipped, resumed.ran, resumed.failures) == (3, 5, {})
    assert _trajectories(run_dir) == _trajectories(tmp_path / "local")


def test_slow_server_times_out(dataset: Path, tmp_path: Path, servers: list) -> None:
    """The server sleeps 1 s before each action: the calls are interrupted at 0.3 s (the
    watchdog or the request's deadline), not measured after the answer came ("took …")."""
    server = Server(f"{AGENT_FILE}:DetectionAgent", "--arg", "sleep=1.0")
    servers.append(server)
    summary = run_agent(server.url, dataset, "train", tmp_path, limit=2, step_timeout=0.3)
    assert summary.failures == {"timeout": 2}
    records = read_trajectories(tmp_path / "trajectories.jsonl")
    # the first act is cut; the server, still sleeping on it, may make the next reset late too
    assert all(r["status"] == "timeout" and r["reason"].endswith(" 0.3 s") for r in records)
    assert all(r["reason"].startswith(("act: ", "reset: ")) for r in records)
    assert not [r for r in records if "within" not in r["reason"] or "took" in r["reason"]]


class _BadServer(http.server.BaseHTTPRequestHandler):
    """Answers /info correctly and /reset, /act with whatever ``self.server.act_body`` is."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def _send(self, body: bytes, length: int | None = None) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(len(body) if length is None else length))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        info = {"protocol": "condvln-agent", "version": 1, "name": "bad", "max_batch_size": 1}
        form = getattr(self.server, "observation_format", None)
        self._send(orjson.dumps(info | ({"observation_format": form} if form else {})))

    def do_POST(self) -> None:
        self.server.last_body = self.rfile.read(int(self.headers["Content-Length"]))  # type: ignore[attr-defined]
        if self.path == "/reset":
            self._send(b'{"ok": true}')
        elif self.server.act_body == "silent":  # type: ignore[attr-defined]
            self.server.release.wait()  # type: ignore[attr-defined]  # never answers
        else:
            self._send(self.server.act_body)  # type: ignore[attr-defined]


@pytest.fixture
def bad_server() -> Iterator[http.server.ThreadingHTTPServer]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _BadServer)
    server.daemon_threads = True
    server.release = threading.Event()  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.release.set()  # type: ignore[attr-defined]
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"this is not json", "malformed response"),
        (b'{"actions": [1, 1]}', "2 actions for 1 observations"),
        (b'{"actions": "forward"}', "actions for 1 observations"),
        (b'{"actions": [' + b"1, " * 400_000 + b"1]}", "exceeds the 1048576-byte limit"),
    ],
)
def test_malformed_or_oversized_answers_are_agent_errors(
    dataset: Path, tmp_path: Path, bad_server: http.server.HTTPServer, body: bytes, reason: str
) -> None:
    bad_server.act_body = body  # type: ignore[attr-defined]
    url = f"http://127.0.0.1:{bad_server.server_address[1]}"
    summary = run_agent(url, dataset, "train", tmp_path, limit=2)
    assert summary.failures == {"agent_error": 2}
    records = read_trajectories(tmp_path / "trajectories.jsonl")
    assert all(reason in r["reason"] for r in records), records[0]["reason"]


@pytest.mark.parametrize(
    ("form", "keys"),
    [
        ("condvln", {"episode_id", "observation"}),
        ("habitat", {"episode_id", "habitat_observation"}),
        (None, {"episode_id", "observation", "habitat_observation"}),  # a server that does not say
    ],
)
def test_each_step_sends_the_observation_the_server_reads(
    dataset: Path, tmp_path: Path, bad_server: http.server.HTTPServer, form: str | None, keys: set
) -> None:
    bad_server.act_body = b'{"actions": [0]}'  # type: ignore[attr-defined]
    bad_server.observation_format = form  # type: ignore[attr-defined]
    url = f"http://127.0.0.1:{bad_server.server_address[1]}"
    assert run_agent(url, dataset, "train", tmp_path, limit=1).failures == {}
    (item,) = orjson.loads(bad_server.last_body)["batch"]  # type: ignore[attr-defined]
    assert set(item) == keys


def test_non_action_answers_are_invalid_actions(
    dataset: Path, tmp_path: Path, bad_server: http.server.HTTPServer
) -> None:
    bad_server.act_body = b'{"actions": [true]}'  # type: ignore[attr-defined]
    url = f"http://127.0.0.1:{bad_server.server_address[1]}"
    summary = run_agent(url, dataset, "train", tmp_path, limit=1)
    assert summary.failures == {"invalid_action": 1}
    (record,) = read_trajectories(tmp_path / "trajectories.jsonl")
    assert "act returned True (bool)" in record["reason"]


def test_client_read_and_connect_timeouts(bad_server: http.server.HTTPServer) -> None:
    bad_server.act_body = "silent"  # type: ignore[attr-defined]
    agent = RemoteAgent(f"http://127.0.0.1:{bad_server.server_address[1]}", read_timeout=0.3)
    view = EpisodeView(1, "s", "go", 10, ObservationProtocol(), None, 0)
    agent.reset(view)
    with pytest.raises(AgentTimeout, match=r"within 0\.3 s"):
        agent.act({"step": 0})  # the server never answers: only the deadline ends the call
    # a listening socket whose accept queue is full: the handshake never completes
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    fillers = []
    try:
        for _ in range(4):
            filler = socket.socket()
            filler.setblocking(False)
            filler.connect_ex(("127.0.0.1", port))
            fillers.append(filler)
        # once the first handshake is done the accept queue (backlog 0) is full
        assert select.select([], fillers[:1], [], 10)[1], "the first filler did not connect"
        with pytest.raises(ConfigError, match=r"cannot connect to .* within 0\.5 s"):
            RemoteAgent(f"http://127.0.0.1:{port}", connect_timeout=0.5)  # never accepted
    finally:
        for filler in fillers:
            filler.close()
        listener.close()


def test_unreachable_server_is_one_line_config_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(ConfigError, match=f"agent server http://127.0.0.1:{port}: GET /info"):
        RemoteAgent(f"http://127.0.0.1:{port}")


def test_server_reports_agent_exceptions_and_keeps_serving(
    dataset: Path, tmp_path: Path, servers: list
) -> None:
    first = _first_train_id(dataset)
    server = Server(f"{AGENT_FILE}:DetectionAgent", "--arg", f"fail_episode={first}")
    servers.append(server)
    summary = run_agent(server.url, dataset, "train", tmp_path, limit=3)
    assert summary.failures == {"agent_error": 1} and summary.ran == 3
    records = {r["episode_id"]: r for r in read_trajectories(tmp_path / "trajectories.jsonl")}
    assert "ValueError: boom at step 2" in records[first]["reason"]
    assert records[first]["steps"] == 2


def _first_train_id(dataset: Path) -> int:
    return int(episode_specs(dataset, "train", "original", 1)[0].episode_id)


def test_arrays_travel_as_base64_with_dtype_and_shape(servers: list) -> None:
    rgb = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3)
    depth = np.linspace(0, 1, 6, dtype=np.float32).reshape(2, 3, 1)
    doc = orjson.loads(encode({"rgb": rgb, "depth": depth, "gps": np.array([1.5, -2.0])}))
    assert doc["rgb"]["dtype"] == "|u1" and doc["rgb"]["shape"] == [2, 3, 3]
    assert np.array_equal(decode_array(doc["rgb"]), rgb)
    assert np.array_equal(decode_array(doc["depth"]), depth)
    assert decode_array(doc["gps"]).dtype == np.float64
    # the server decodes them into numpy arrays for the agent
    server = Server(f"{Path(__file__).parent / 'data' / 'array_agent.py'}:ArrayAgent")
    servers.append(server)
    agent = RemoteAgent(server.url)
    agent.reset(EpisodeView(1, "s", "go", 10, ObservationProtocol(), None, 0))
    assert agent.act({"rgb": rgb, "depth": depth}) == int(rgb.sum() + 1000 * depth.sum())


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # as a background job of a script inherits it


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_server_stops_on_signal(servers: list, stop: signal.Signals) -> None:
    """Started as a background job would be (SIGINT ignored), the server still stops on SIGINT
    and SIGTERM. It installs its handlers before it prints the readiness line, and prints a
    line when it stops: the test waits on those lines, not on time."""
    server = Server(f"{AGENT_FILE}:DetectionAgent", preexec_fn=_ignore_sigint)
    servers.append(server)
    server.proc.send_signal(stop)
    assert server.proc.stdout.readline().strip() == "condvln agent server stopped"  # type: ignore[union-attr]
    assert server.proc.wait(60) == 0


def _readme_agent(tmp_path: Path) -> Path:
    page = (Path(__file__).parents[2] / "docs" / "agents.md").read_text()
    block = page.split("<!-- example: my_agent.py -->\n```python\n", 1)[1].split("```", 1)[0]
    path = tmp_path / "my_agent.py"
    path.write_text(block)
    return path


def test_readme_agent_checks_and_serves(dataset: Path, tmp_path: Path, servers: list) -> None:
    from condvln.agents.check import check_agent

    path = _readme_agent(tmp_path)
    checks = check_agent(f"{path}:MyAgent", dataset=dataset, agent_args={"patience": 40})
    assert all(c.level == "ok" for c in checks), checks
    python = str(PYTHON36) if PYTHON36.is_file() else sys.executable
    server = Server(f"{path}:MyAgent", "--arg", "patience=40", python=python)
    servers.append(server)
    remote = {c.name: c.level for c in check_agent(server.url, dataset=dataset)}
    assert remote["no labels"] == "skip" and "FAIL" not in remote.values()
    run_agent(
        f"{path}:MyAgent", dataset, "train", tmp_path / "a", limit=4, agent_args={"patience": 40}
    )
    run_agent(server.url, dataset, "train", tmp_path / "b", limit=4, step_timeout=10)
    assert _trajectories(tmp_path / "a") == _trajectories(tmp_path / "b")


def _expected_gps(positions: list, start_yaw: float) -> list[list[float]]:
    """``[forward, right]`` of each position in the start frame (habitat's episodic GPS)."""
    x0, _, z0 = positions[0]
    forward = (-np.sin(start_yaw), -np.cos(start_yaw))
    right = (np.cos(start_yaw), -np.sin(start_yaw))
    return [
        [(x - x0) * forward[0] + (z - z0) * forward[1], (x - x0) * right[0] + (z - z0) * right[1]]
        for x, _, z in positions
    ]


def test_habitat_observations_reach_local_and_remote_agents_alike(
    dataset: Path, tmp_path: Path, servers: list
) -> None:
    import gzip
    import json

    spec = f"{AGENT_FILE}:HabitatAgent"
    protocol = {"sensors": ["depth"], "depth": {"width": 16, "height": 12}}
    local_log, remote_log = tmp_path / "local.jsonl", tmp_path / "remote.jsonl"
    args = {"log_file": str(local_log)}
    local = run_agent(
        spec, dataset, "train", tmp_path / "a", limit=3, protocol=protocol, agent_args=args
    )
    assert local.failures == {}
    python = str(PYTHON36) if PYTHON36.is_file() else sys.executable
    server = Server(spec, "--arg", f'log_file="{remote_log}"', python=python)
    servers.append(server)
    assert RemoteAgent(server.url).info["observation_format"] == "habitat"
    remote = run_agent(server.url, dataset, "train", tmp_path / "b", limit=3, protocol=protocol)
    assert remote.failures == {}
    assert _trajectories(tmp_path / "a") == _trajectories(tmp_path / "b")
    seen = [json.loads(line) for line in local_log.read_text().splitlines()]
    assert [json.loads(line) for line in remote_log.read_text().splitlines()] == seen
    # the dicts hold what habitat's sensors give, checked against the split file and the paths
    with gzip.open(dataset / "train" / "train.json.gz") as fh:
        episodes = {e["episode_id"]: e for e in json.load(fh)["episodes"]}
    records = {r["episode_id"]: r for r in read_trajectories(tmp_path / "a" / "trajectories.jsonl")}
    for episode_id, record in records.items():
        lines = [s for s in seen if s["episode_id"] == episode_id]
        episode = episodes[episode_id]
        assert len(lines) == len(record["actions"])
        assert {tuple(s["keys"]) for s in lines} == {
            ("compass", "depth", "gps", "heading", "instruction")
        }
        assert all(s["tokens"] == episode["instruction"]["instruction_tokens"] for s in lines)
        assert all(s["trajectory_id"] == episode["trajectory_id"] for s in lines)
        assert all(s["text"] == episode["instruction"]["instruction_text"] for s in lines)
        assert all(s["depth"][:2] == ["<f4", [12, 16, 1]] for s in lines)
        start_yaw = record["headings"][0]
        gps = _expected_gps(record["positions"][: len(lines)], start_yaw)
        np.testing.assert_allclose([s["gps"] for s in lines], gps, atol=1e-5)
        assert lines[0]["gps"] == [0.0, 0.0] and lines[0]["compass"] == 0.0
        compass = [(h - start_yaw + np.pi) % (2 * np.pi) - np.pi for h in record["headings"]]
        assert [s["compass"] for s in lines] == pytest.approx(compass[: len(lines)], abs=1e-5)
        # the agent's rule on the depth it logged: forward beyond 0.1, else turn left
        assert record["actions"][:-1] == [1 if s["depth"][2] > 0.1 else 2 for s in lines[:-1]]
    assert {1, 2} <= {a for record in records.values() for a in record["actions"]}
