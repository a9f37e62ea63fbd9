"""The ``llm`` agent against a scripted OpenAI-compatible server on 127.0.0.1 (real HTTP, the
real ``openai`` client; no network, no model): happy path, malformed answers, 429 / 5xx /
timeouts, the response cache and byte-identical offline replay, batches, the protocol stamp,
usage in ``metrics.json`` and the recorded reasoning in the report."""

from __future__ import annotations

import importlib.util
import re
import socket
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from condvln.agents import run_agent
from condvln.agents.run import read_trajectories
from condvln.errors import ConfigError, FormatError
from condvln.evaluation.evaluate import evaluate_run
from condvln.evaluation.predictions import read_predictions
from condvln.io import read_json
from condvln.report.html import build_report
from condvln.report.results import load_results
from condvln.report.viz import caption, viz_episode

pytest.importorskip("openai")
pytest.importorskip("tenacity")


def _chat_server() -> Any:
    path = Path(__file__).resolve().parent / "data" / "chat_server.py"
    spec = importlib.util.spec_from_file_location("condvln_test_chat_server", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


chat = _chat_server()
Scripted = chat.Scripted
SPLIT = "val_seen"
"""Its first three episodes are reachable by the llm agent's skills. (val_unseen's second asks
for a wall cabinet the ``explore`` skill never brings into view: the perfect reader chooses the
right branch and stops 1.7 m short, an exploration weakness of the agent, not of the reader.)"""


def _sequence(*answers: Any) -> Any:
    """A script answering in order (the last answer repeats)."""
    replies = list(answers)

    def script(body: dict[str, Any]) -> Any:
        return replies.pop(0) if len(replies) > 1 else replies[0]

    return script


def _act(word: str) -> str:
    return chat.answer(word, key="action", reasoning=f"I choose {word}")


def _run(dataset: Path, out: Path, server: Any, **args: Any) -> dict[str, Any]:
    """Run ``llm`` on the first episode (or ``limit``); its first record."""
    limit = args.pop("limit", 1)
    batch_size = args.pop("batch_size", 1)
    agent_args = {"base_url": server.url if server else "http://127.0.0.1:9/v1", "model": "m"}
    agent_args |= {"cache_dir": str(out.parent / f"{out.name}-cache"), "backoff": 0.0} | args
    run_agent("llm", dataset, SPLIT, out, agent_args=agent_args, limit=limit,
              batch_size=batch_size)  # fmt: skip
    return read_trajectories(out / "trajectories.jsonl")[0]


def test_actions_mode_walks_as_told_and_accounts_tokens(
    dataset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret-4711")
    script = _sequence(_act("forward"), _act("left"), _act("forward"), _act("stop"))
    with chat.ChatServer(script) as server:
        record = _run(dataset, tmp_path / "run", server, mode="actions", price_prompt=2.0)
    assert record["status"] == "ok" and record["actions"] == [1, 2, 1, 0] and record["stop"]
    prompts = [b["messages"][1]["content"] for b in server.requests]
    assert all(b["model"] == "m" and b["temperature"] == 0.0 for b in server.requests)
    assert prompts[0].startswith("Instruction: ") and "Step 0 of " in prompts[0]
    assert "Actions: forward (move 0.25 m ahead), left (turn 15° left)" in prompts[0]
    assert "- step 0: forward" in prompts[1] and "- step 1: left" in prompts[2]
    prompt_tokens = sum(chat.words(b["messages"]) for b in server.requests)
    usage = record["agent_notes"]["usage"]
    assert usage == {
        "requests": 4,
        "prompt_tokens": prompt_tokens,
        "completion_tokens": 4 * len(_act("left").split()),
        "cost": pytest.approx(prompt_tokens * 2.0 / 1e6),
    }
    assert record["agent_notes"]["fallbacks"] == {}
    assert server.auth == ["Bearer sk-test-secret-4711"] * 4
    for file in (tmp_path / "run").iterdir():
        assert b"sk-test-secret" not in file.read_bytes(), file
    text = read_json(tmp_path / "run" / "manifest.json")["protocol"]["text"]
    assert text["renderer"] == "condvln-text" and text["prompt"]["template"] == "actions.v1.txt"


def test_malformed_answers_fall_back_and_are_counted(dataset: Path, tmp_path: Path) -> None:
    script = _sequence(
        "I would walk forward.",
        chat.answer("jump", key="action"),
        "x" * 5000,
        Scripted('{"action": "forw', finish_reason="length"),
        _act("stop"),
    )
    with chat.ChatServer(script) as server:
        record = _run(dataset, tmp_path / "run", server, mode="actions")
    assert record["status"] == "ok" and record["actions"] == [2, 2, 2, 2, 0]
    fallbacks = {"no_answer": 1, "too_long": 2, "unknown_action": 1}
    assert record["agent_notes"]["fallbacks"] == fallbacks
    script = _sequence(chat.answer("go 99"), chat.answer("dance"), chat.answer("stop"))
    with chat.ChatServer(script) as server:
        record = _run(dataset, tmp_path / "sub", server, fallback="look around")
    assert record["agent_notes"]["fallbacks"] == {"unknown_action": 1, "unknown_object": 1}
    assert record["actions"][:-1] and set(record["actions"][:-1]) == {2}  # two looks around


def test_rate_limits_are_retried_with_backoff(dataset: Path, tmp_path: Path) -> None:
    limited = Scripted(status=429, headers={"Retry-After": "0"})
    script = _sequence(limited, limited, _act("stop"))
    with chat.ChatServer(script) as server:
        record = _run(dataset, tmp_path / "run", server, mode="actions", backoff=0.01)
    assert record["status"] == "ok" and record["actions"] == [0]
    assert len(server.requests) == 3 and record["agent_notes"]["usage"]["requests"] == 1


def test_persistent_errors_end_the_episode_not_the_run(dataset: Path, tmp_path: Path) -> None:
    with chat.ChatServer(_sequence(Scripted(status=503))) as server:
        record = _run(dataset, tmp_path / "run", server, mode="actions", retries=2)
    assert record["status"] == "agent_error" and len(server.requests) == 3
    assert re.search(r"127\.0\.0\.1.* \(m\) after 3 attempts: HTTP 503", record["reason"])
    with chat.ChatServer(_sequence(Scripted(status=400))) as server:
        record = _run(dataset, tmp_path / "bad", server, mode="actions", retries=2)
    assert record["status"] == "agent_error" and len(server.requests) == 1  # not retried
    assert "HTTP 400" in record["reason"]


def test_timeouts_are_retried_then_reported(dataset: Path, tmp_path: Path) -> None:
    slow = Scripted(_act("forward"), delay=1.5)
    with chat.ChatServer(_sequence(slow, _act("stop"))) as server:
        record = _run(dataset, tmp_path / "run", server, mode="actions", timeout=0.3)
    assert record["status"] == "ok" and record["actions"] == [0] and len(server.requests) == 2
    with chat.ChatServer(_sequence(slow)) as server:
        record = _run(dataset, tmp_path / "dead", server, mode="actions", timeout=0.2, retries=1)
    assert record["status"] == "agent_error" and len(server.requests) == 2
    assert "after 2 attempts: no answer within the timeout of 0.2 s" in record["reason"]


@pytest.fixture(scope="module")
def perfect_run(dataset: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The scripted perfect reader in ``subgoals`` mode on three episodes (cache filled)."""
    out = tmp_path_factory.mktemp("llm") / "perfect"
    plans = chat.reader_plans(dataset, SPLIT, "perfect")
    with chat.ChatServer(chat.Reader(plans)) as server:
        _run(dataset, out, server, limit=3)
    assert len(server.requests) > 3
    return out


def test_perfect_reader_decides_and_succeeds(perfect_run: Path, dataset: Path) -> None:
    records = read_trajectories(perfect_run / "trajectories.jsonl")
    assert [r["status"] for r in records] == ["ok"] * 3
    for record in records:
        notes = record["agent_notes"]
        assert notes["fallbacks"] == {} and notes["decisions"]
        decision = notes["decisions"][0]
        assert decision["step"] == 0 and isinstance(decision["holds"], bool)
        assert decision["reasoning"].startswith("perfect reader: ")
    result = evaluate_run(dataset, perfect_run / "trajectories.jsonl", perfect_run.parent / "ev",
                          split=SPLIT)  # fmt: skip
    scored = [r for r in result["records"] if r["agent_status"] == "ok"]
    assert [r["success"] for r in scored] == [True] * 3
    usage = result["metrics"]["counts"]["agent_usage"]
    assert usage["episodes"] == 3 and usage["fallbacks"] == 0
    assert usage["requests"] == sum(r["agent_notes"]["usage"]["requests"] for r in records)
    assert usage["prompt_tokens"] > usage["completion_tokens"] > 0


def test_cached_run_replays_byte_identically_offline(
    perfect_run: Path, dataset: Path, tmp_path: Path
) -> None:
    replay = tmp_path / "replay"
    with socket.socket() as closed:  # a port nobody listens on
        closed.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{closed.getsockname()[1]}/v1"
    args = {"base_url": url, "model": "m", "cache_dir": str(perfect_run.parent / "perfect-cache"),
            "cache": "readonly", "backoff": 0.0}  # fmt: skip
    summary = run_agent("llm", dataset, SPLIT, replay, agent_args=args, limit=3)
    assert summary.failures == {}
    for name in ("trajectories.jsonl", "predictions.json"):
        assert (replay / name).read_bytes() == (perfect_run / name).read_bytes()
    empty = args | {"cache_dir": str(tmp_path / "empty")}
    run_agent("llm", dataset, SPLIT, tmp_path / "miss", agent_args=empty, limit=1)
    record = read_trajectories(tmp_path / "miss" / "trajectories.jsonl")[0]
    assert record["status"] == "agent_error"
    assert re.search(
        r"cache=readonly: no cached response for key [0-9a-f]{64} in ", record["reason"]
    )


def test_batches_overlap_requests_and_change_nothing(dataset: Path, tmp_path: Path) -> None:
    def script(body: dict[str, Any]) -> Any:
        step = int(re.search(r"Step (\d+) of", body["messages"][1]["content"]).group(1))
        word = "stop" if step >= 5 else "left" if step % 3 == 2 else "forward"
        return Scripted(_act(word), delay=0.05)

    outputs = []
    for batch in (1, 3):
        with chat.ChatServer(script) as server:
            args = {"mode": "actions", "cache": "off", "max_concurrency": 3}
            _run(dataset, tmp_path / f"b{batch}", server, limit=3, batch_size=batch, **args)
        outputs.append((tmp_path / f"b{batch}" / "trajectories.jsonl").read_bytes())
        assert server.max_in_flight == (1 if batch == 1 else 3)
    assert outputs[0] == outputs[1] and outputs[0].count(b"\n") == 3


def test_another_prompt_is_another_protocol(dataset: Path, tmp_path: Path) -> None:
    prompt = tmp_path / "mine.txt"
    prompt.write_text("v1\n### system\nAnswer in JSON.\n### user\n$instruction\n$observation\n")
    with chat.ChatServer(_sequence(_act("stop"))) as server:
        _run(dataset, tmp_path / "run", server, mode="actions", prompt=str(prompt))
        first = read_json(tmp_path / "run" / "manifest.json")
        prompt.write_text("v2\n### system\nAnswer in JSON!\n### user\n$instruction\n")
        with pytest.raises(ConfigError, match="cannot resume: 'protocol' differs"):
            _run(dataset, tmp_path / "run", server, mode="actions", prompt=str(prompt))
    assert first["protocol"]["text"]["prompt"]["template"] == "mine.txt"
    assert first["agent_args"]["prompt"] == str(prompt)


def test_reasoning_appears_under_the_episode_map(perfect_run: Path, dataset: Path) -> None:
    record = read_trajectories(perfect_run / "trajectories.jsonl")[0]
    episode_id = record["episode_id"]
    _, figure, path = viz_episode(perfect_run, episode_id, perfect_run.parent / "ep.png")
    decision = record["agent_notes"]["decisions"][0]
    verdict = "TRUE" if decision["holds"] else "FALSE"
    line = f"Decision at step 0: {decision['condition']} → {verdict}. Reasoning: perfect reader"
    assert any(text.startswith(line) for text in caption(figure, path))
    evaluated = perfect_run.parent / "ev-report"
    evaluate_run(dataset, perfect_run / "trajectories.jsonl", evaluated, split=SPLIT)
    _, data, _ = build_report(load_results(evaluated), title="llm")
    row = next(r for r in data["rows"] if r["id"] == episode_id)
    assert row["why"] == list(path.reasoning) and row["why"][0].startswith(line)


def test_agent_notes_must_be_an_object(tmp_path: Path) -> None:
    line = {"episode_id": 1, "positions": [[0, 0, 0]], "headings": [0], "stop": True}
    path = tmp_path / "p.jsonl"
    path.write_bytes(orjson.dumps(line | {"agent_notes": {"usage": {"requests": 2}}}) + b"\n")
    assert read_predictions(path)[1].notes == {"usage": {"requests": 2}}
    path.write_bytes(orjson.dumps(line | {"agent_notes": [1]}) + b"\n")
    with pytest.raises(
        FormatError, match=r"p.jsonl: line 1: field 'agent_notes': must be an object"
    ):
        read_predictions(path)


def test_cli_reports_missing_settings_in_one_line(cli: Any, dataset: Path, tmp_path: Path) -> None:
    base = ["run", "--agent", "llm", "--dataset", str(dataset), "--out", str(tmp_path / "r")]
    done = cli(*base, "--agent-arg", "model=m")
    assert done.returncode == 2 and "llm agent: base_url: Field required" in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "r").exists()
