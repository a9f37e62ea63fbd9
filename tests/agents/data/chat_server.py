"""A scripted OpenAI-compatible Chat Completions server on 127.0.0.1 — no model, no network.

Used by ``tests/agents/test_llm*.py`` and ``benchmarks/bench_llm_scripted.py``. A *script* is a
function ``request body -> Scripted | str``; the server answers ``POST /v1/chat/completions``
with it as a real ``ChatCompletion`` (or an HTTP error, after an optional delay), and records
every request body and ``Authorization`` header. Token usage is counted in words, so it is
deterministic.

It also holds the two scripted *readers* of the benchmark: :class:`Reader` answers the ``llm``
agent's ``subgoals`` prompts from a list of target objects per instruction, which the caller
takes from the dataset's gold labels (the perfect reader) or from the program's first branch
(the condition-blind reader). The agent never sees those labels: only this server does.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


@dataclass
class Scripted:
    """One scripted answer: a completion, or an HTTP error status (after ``delay`` seconds)."""

    content: str = ""
    status: int = 200
    delay: float = 0.0
    finish_reason: str = "stop"
    headers: dict[str, str] = field(default_factory=dict)


Script = Callable[[dict[str, Any]], "Scripted | str"]


def words(messages: Sequence[Mapping[str, Any]]) -> int:
    """Prompt "tokens": words in all messages."""
    return sum(len(str(m.get("content", "")).split()) for m in messages)


class ChatServer:
    """A threaded HTTP server answering Chat Completions from a script (a context manager).

    Attributes:
        url: The base URL to give the client (``http://127.0.0.1:PORT/v1``).
        requests: Every request body received, in order.
        auth: The ``Authorization`` header of every request.
        max_in_flight: Most requests handled at the same time.
    """

    def __init__(self, script: Script) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []
        self.auth: list[str | None] = []
        self.max_in_flight = 0
        self._in_flight = 0
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def __enter__(self) -> ChatServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def answer(self, body: dict[str, Any], auth: str | None) -> tuple[int, dict[str, str], bytes]:
        """Status, headers and body of the reply to one request (runs the script)."""
        with self._lock:
            self.requests.append(body)
            self.auth.append(auth)
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
        try:
            scripted = self.script(body)
            if isinstance(scripted, str):
                scripted = Scripted(scripted)
            time.sleep(scripted.delay)
        finally:
            with self._lock:
                self._in_flight -= 1
        if scripted.status != 200:
            error = {"error": {"message": f"scripted {scripted.status}", "type": "scripted"}}
            return scripted.status, scripted.headers, json.dumps(error).encode()
        prompt, completion = words(body["messages"]), len(scripted.content.split())
        reply = {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", ""),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": scripted.content},
                    "finish_reason": scripted.finish_reason,
                }
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        }
        return 200, scripted.headers, json.dumps(reply).encode()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                if self.path.rstrip("/") != "/v1/chat/completions":
                    status, headers, data = 404, {}, b'{"error": {"message": "not found"}}'
                else:
                    status, headers, data = server.answer(body, self.headers.get("Authorization"))
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for key, value in headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (its timeout): nothing to answer

            def log_message(self, *args: Any) -> None:
                pass

        return Handler


def answer(choice: str, key: str = "subgoal", reasoning: str = "", conditions: Any = ()) -> str:
    """A well-formed answer of the ``llm`` agent's templates."""
    return json.dumps({"reasoning": reasoning, "conditions": list(conditions), key: choice})


# --- scripted readers of the subgoals prompt --------------------------------------------------

_OBJECT = re.compile(
    r"^- \[(\d+)\] (.+?)(?: in the .+?)?, [\d.]+ m away .*\(x (-?[\d.]+), z (-?[\d.]+)\)$"
)
_REACHED = re.compile(r"\[\d+\] (.+?) \(x (-?[\d.]+), z (-?[\d.]+)\)")


@dataclass(frozen=True)
class Target:
    """An object a reader walks to: category and centre ``(x, z)``."""

    category: str
    x: float
    z: float


@dataclass(frozen=True)
class Plan:
    """What a reader knows about one instruction: targets in order, verdicts to state."""

    targets: tuple[Target, ...]
    conditions: tuple[tuple[str, bool], ...] = ()
    reasoning: str = ""


def _user(body: Mapping[str, Any]) -> str:
    return next(m["content"] for m in body["messages"] if m["role"] == "user")


def parse_prompt(text: str) -> tuple[str, dict[int, Target], list[Target], bool]:
    """Instruction, objects seen by index, objects reached, and whether all is explored."""
    instruction = text.split("\n", 1)[0].removeprefix("Instruction: ")
    objects, reached = {}, []
    for line in text.splitlines():
        match = _OBJECT.match(line)
        if match:
            i, category, x, z = match.groups()
            objects[int(i)] = Target(category, float(x), float(z))
        if line.startswith("Reached so far: "):
            reached = [Target(c, float(x), float(z)) for c, x, z in _REACHED.findall(line)]
    return instruction, objects, reached, "Everything has been explored." in text


class Reader:
    """Answers subgoals prompts from a :class:`Plan` per instruction text.

    Next target = the first of the plan not reached yet (a reached object at its centre, within
    ``tolerance`` metres, counts); ``go N`` once an object of its category at its centre is in
    the list, ``explore`` until then, ``stop`` when all are reached or nothing is left to
    explore. The first answer of an episode states the plan's verdicts with its reasoning.
    """

    def __init__(self, plans: Mapping[str, Plan], tolerance: float = 0.02) -> None:
        self.plans = dict(plans)
        self.tolerance = tolerance

    def _is(self, obj: Target, target: Target) -> bool:
        near = abs(obj.x - target.x) <= self.tolerance and abs(obj.z - target.z) <= self.tolerance
        return near and obj.category == target.category

    def __call__(self, body: dict[str, Any]) -> str:
        instruction, objects, reached, explored = parse_prompt(_user(body))
        plan = self.plans.get(instruction)
        if plan is None:
            return answer("stop", reasoning="unknown instruction")
        done = reached
        first = not reached and "Recent history: nothing yet." in _user(body)
        conditions = [{"condition": c, "holds": h} for c, h in plan.conditions] if first else []
        why = plan.reasoning if first else ""
        remaining = list(plan.targets)
        for obj in done:  # in order: each reached object ticks off the next matching target
            if remaining and self._is(obj, remaining[0]):
                remaining.pop(0)
        if not remaining:
            return answer("stop", reasoning=why or "all targets reached", conditions=conditions)
        found = [i for i, obj in objects.items() if self._is(obj, remaining[0])]
        if found:
            return answer(f"go {found[0]}", reasoning=why, conditions=conditions)
        if explored:
            return answer("stop", reasoning="nothing left to explore", conditions=conditions)
        return answer("explore", reasoning=why, conditions=conditions)


# --- plans from the dataset's labels (the server's knowledge, never the agent's) ---------------


def reader_plans(dataset_dir: Path, split: str, kind: str) -> dict[str, Plan]:
    """A :class:`Plan` per instruction of the split: ``"perfect"`` (the gold path's targets and
    the true verdicts) or ``"blind"`` (the first branch's targets, every condition taken as
    true — what ``condition_blind`` does)."""
    from condvln.graph import build_scene_graph
    from condvln.program.ast import If, condition_from_dict, leaf_paths, program_from_dict
    from condvln.program.interpret import ground
    from condvln.report.viz import condition_text
    from condvln.scene.serialize import load_scene
    from condvln.vlnce import load_split

    def then_conditions(steps: Sequence[Any]) -> list[Any]:
        out = []
        for step in steps:
            if isinstance(step, If):
                out += [step.condition, *then_conditions(step.then)]
        return out

    plans, scenes = {}, {}
    for ep in load_split(dataset_dir, split)["episodes"]:
        labels = ep["info"]["condvln"]
        if labels["scene_file"] not in scenes:
            scene = load_scene(dataset_dir / labels["scene_file"])
            scenes = {labels["scene_file"]: (scene, build_scene_graph(scene))}
        scene, graph = scenes[labels["scene_file"]]
        program = program_from_dict(labels["program"])
        if kind == "perfect":
            ids = [g["object_id"] for g in [*labels["subgoals"], labels["goal"]]]
            truths = [(c["condition"], c["truth"]) for c in labels["condition_truths"]]
            conditions = [(condition_text(condition_from_dict(c)), t) for c, t in truths]
        else:
            ids = [ground(graph, g.target) for g in leaf_paths(program.steps)[0][1]]
            conditions = [(condition_text(c), True) for c in then_conditions(program.steps)]
        targets = tuple(
            Target(scene.object(i).category, scene.object(i).center[0], scene.object(i).center[2])
            for i in ids
        )
        reasoning = "; ".join(f"{c}: {'yes' if t else 'no'}" for c, t in conditions)
        plans[ep["instruction"]["instruction_text"]] = Plan(
            targets, tuple(conditions), f"{kind} reader: {reasoning}"
        )
    return plans
