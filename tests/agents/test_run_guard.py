"""Runs a researcher can trust (issue 30): a resume refuses another agent, failed episodes give
exit code 3, and ``check-agent`` accepts every agent ``run`` accepts."""

from __future__ import annotations

import select
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

import condvln
from condvln.agents.check import check_agent
from condvln.agents.run import run_agent
from condvln.errors import ConfigError

DATA = Path(__file__).parent / "data"
AGENTS = DATA / "run_agents.py"


def _manifest(run: Path) -> dict:
    return orjson.loads((run / "manifest.json").read_bytes())


@pytest.fixture
def agent_file(tmp_path: Path) -> Path:
    """A copy of ``run_agents.py`` the test may edit."""
    path = tmp_path / "my_agent.py"
    shutil.copy(AGENTS, path)
    return path


def test_the_manifest_hashes_the_agent_source_args_and_protocol(
    dataset: Path, tmp_path: Path, agent_file: Path
) -> None:
    run = tmp_path / "run"
    run_agent(f"{agent_file}:Walker", dataset, "train", run, limit=2, agent_args={"patience": 9})
    manifest = _manifest(run)
    assert list(manifest["agent_code"]) == [str(agent_file)]
    assert manifest["agent_code"][str(agent_file)].startswith("sha256:")
    assert manifest["agent_hash"].startswith("sha256:") and manifest["agent_server"] is None
    other = tmp_path / "other"
    run_agent(f"{agent_file}:Walker", dataset, "train", other, limit=2, agent_args={"patience": 8})
    assert _manifest(other)["agent_code"] == manifest["agent_code"]
    assert _manifest(other)["agent_hash"] != manifest["agent_hash"]  # the arguments count
    builtin = tmp_path / "builtin"
    run_agent("goal_only", dataset, "train", builtin, limit=1)
    assert list(_manifest(builtin)["agent_code"]) == ["condvln.agents.baselines"]


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ("edit", "the agent's source code changed since the run began ("),
        ("class", "the agent spec changed since the run began ("),
        ("args", "the agent arguments changed since the run began (patience: unset → 20)"),
        ("protocol", "the observation protocol changed since the run began (fov_deg: 90.0 → 60.0"),
    ],
)
def test_a_resume_with_another_agent_stops_with_one_line(
    dataset: Path, tmp_path: Path, agent_file: Path, change: str, named: str
) -> None:
    run = tmp_path / "run"
    first = run_agent(f"{agent_file}:Walker", dataset, "train", run, limit=2)
    assert first.ran == 2
    before = (run / "trajectories.jsonl").read_bytes(), (run / "manifest.json").read_bytes()
    spec, fields = f"{agent_file}:Walker", {"limit": 4}
    if change == "edit":
        agent_file.write_text(agent_file.read_text().replace("patience=12", "patience=13"))
    elif change == "class":
        spec = f"{agent_file}:Stroller"
    elif change == "args":
        fields["agent_args"] = {"patience": 20}
    else:
        fields["protocol"] = {"fov_deg": 60.0}
    with pytest.raises(ConfigError) as refused:
        run_agent(spec, dataset, "train", run, **fields)
    message = str(refused.value)
    assert named in message and message.count("\n") == 0
    if change == "edit":
        assert f"({tmp_path / 'my_agent.py'}: sha256 " in message
    assert "--restart" in message and "run incomplete" not in message
    assert before == (
        (run / "trajectories.jsonl").read_bytes(),
        (run / "manifest.json").read_bytes(),
    )
    assert not (run / "INCOMPLETE").exists()
    again = run_agent(spec, dataset, "train", run, restart=True, **fields)  # starts over
    assert again.set_aside == tmp_path / "run.previous-1" and again.ran == 4
    assert (tmp_path / "run.previous-1" / "trajectories.jsonl").read_bytes() == before[0]


def test_the_same_agent_resumes(dataset: Path, tmp_path: Path, agent_file: Path) -> None:
    run = tmp_path / "run"
    run_agent(f"{agent_file}:Walker", dataset, "train", run, limit=2)
    resumed = run_agent(f"{agent_file}:Walker", dataset, "train", run, limit=4)
    assert (resumed.ran, resumed.skipped, resumed.set_aside) == (2, 2, None)


def test_cli_refusal_and_restart(cli, dataset: Path, tmp_path: Path, agent_file: Path) -> None:
    run = tmp_path / "runs" / "mine"
    args = ("run", "--agent", f"{agent_file}:Walker", "--dataset", str(dataset), "--out", str(run))
    assert cli(*args, "--split", "train", "--limit", "2", "-q").returncode == 0
    agent_file.write_text(agent_file.read_text() + "\n# edited\n")
    refused = cli(*args, "--split", "train", "--limit", "3", "-q")
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1
    assert refused.stderr.startswith(
        f"condvln: error: {run}: cannot resume: 'agent_code' differs: the agent's source code "
        "changed since the run began ("
    )
    restarted = cli(*args, "--split", "train", "--limit", "3", "-q", "--restart")
    assert restarted.returncode == 0, restarted.stderr
    assert f"moved the old run aside to {run}.previous-1" in restarted.stdout
    assert "3 episodes run, 0 resumed" in restarted.stdout


def test_failed_episodes_exit_3_with_their_counts(cli, dataset: Path, tmp_path: Path) -> None:
    run = tmp_path / "crashy"
    args = ("run", "--agent", f"{AGENTS}:Crashy", "--dataset", str(dataset), "--out", str(run))
    failed = cli(*args, "--split", "train", "--limit", "6", "-q")
    assert failed.returncode == 3, failed.stderr
    records = [
        orjson.loads(line) for line in (run / "trajectories.jsonl").read_bytes().splitlines()
    ]
    errors = sum(r["status"] == "agent_error" for r in records)
    assert errors == sum(r["episode_id"] % 2 == 0 for r in records) > 0
    assert f"condvln: {errors} of 6 episodes failed ({errors} agent_error); exit code 3" in (
        failed.stderr
    )
    assert f"agent failures: {errors} agent_error; first: episode " in failed.stdout
    assert "boom" in failed.stdout
    allowed = cli(*args, "--split", "train", "--limit", "6", "-q", "--allow-failures")
    assert allowed.returncode == 0 and "exit code 0 (--allow-failures)" in allowed.stderr
    evaluated = cli("evaluate", str(dataset), str(run), "--out", str(tmp_path / "eval"))
    assert evaluated.returncode == 3, (
        evaluated.stderr
    )  # the denominator is the run's 6, not the split's
    assert f"{errors} of 6 episodes failed ({errors} agent_error); exit code 3" in evaluated.stderr
    evaluated = cli(
        "evaluate", str(dataset), str(run), "--out", str(tmp_path / "eval"), "--allow-failures"
    )
    assert evaluated.returncode == 0, evaluated.stderr
    clean = cli("run", "--agent", "random", "--dataset", str(dataset), "--out",
                str(tmp_path / "random"), "--split", "train", "--limit", "2", "-q")  # fmt: skip
    assert clean.returncode == 0 and "failed" not in clean.stderr


@pytest.mark.parametrize("cls", ["BatchOnly", "HabitatDicts", "Trained", "make_walker"])
def test_check_agent_accepts_every_agent_run_accepts(
    dataset: Path, tmp_path: Path, cls: str
) -> None:
    spec = f"{AGENTS}:{cls}"
    summary = run_agent(spec, dataset, "train", tmp_path / "run", limit=2)
    assert summary.ran == 2 and not summary.failures
    checks = {c.name: c for c in check_agent(spec, dataset=dataset, episodes=2)}
    assert not [c for c in checks.values() if c.level == "FAIL"], checks
    assert checks["interface"].level == "ok"
    if cls == "BatchOnly":
        assert "act_batch" in checks["interface"].detail and checks["batched"].level == "ok"


def _serve(spec: str, port: int = 0) -> tuple[subprocess.Popen, int]:
    """An agent server subprocess on 127.0.0.1 and its port, once it listens."""
    server = Path(condvln.__file__).parent / "agent_server.py"
    proc = subprocess.Popen([sys.executable, str(server), spec, "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)  # fmt: skip
    ready, _, _ = select.select([proc.stdout], [], [], 60)
    assert ready, "agent server did not start"
    line = proc.stdout.readline()  # type: ignore[union-attr]
    assert "listening on http://127.0.0.1:" in line, line
    return proc, int(line.rsplit(":", 1)[1])


def test_a_resume_against_another_served_agent_stops(dataset: Path, tmp_path: Path) -> None:
    """The issue's case: the server restarted with another class on the same URL."""
    first, port = _serve(f"{AGENTS}:Walker")
    url, run = f"http://127.0.0.1:{port}", tmp_path / "remote"
    try:
        run_agent(url, dataset, "train", run, limit=2)
    finally:
        first.kill()
        first.wait(10)
    assert _manifest(run)["agent_server"]["name"] == "Walker"
    second, _ = _serve(f"{AGENTS}:Stroller", port)
    try:
        with pytest.raises(ConfigError, match=r"'agent_server' differs: the agent server's /info "
                           r"changed since the run began \(name: 'Walker' → 'Stroller'\)"):  # fmt: skip
            run_agent(url, dataset, "train", run, limit=4)
    finally:
        second.kill()
        second.wait(10)
