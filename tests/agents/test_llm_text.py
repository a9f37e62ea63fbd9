"""The ``llm`` agent's language side without a server: text observations, prompts, answers,
settings and the protocol stamp."""

from __future__ import annotations

import importlib.util
import math
import re
import shlex
from pathlib import Path

import pytest

from condvln.agents import load_agent, parse_agent_args
from condvln.agents.llm import LLMConfig, parse_config
from condvln.agents.llm_prompt import PLACEHOLDERS, load_prompt, read_answer
from condvln.errors import ConfigError
from condvln.sim.protocol import Detection, Observation, ObservationProtocol, protocol_stamp
from condvln.sim.text_obs import RENDERER, VERSION, Seen, TextObsConfig, TextRenderer

OBS = Observation(
    instruction="Go to the stool.",
    step=4,
    position=(1.0, 0.0, -2.5),
    heading=math.radians(-90),  # facing east
    room_type="kitchen",
    detections=(
        Detection("toaster", math.radians(90), 3.24, position=(1.0, 0.9, 0.74)),
        Detection("stool", math.radians(-30), 1.05, position=(1.9, 0.3, -3.0)),
    ),
)


def test_view_lists_what_the_protocol_gives_nearest_first() -> None:
    text = TextRenderer().view(OBS, budget=120, room_of=lambda p: "kitchen" if p[2] < 0 else None)
    assert text.splitlines() == [
        "Step 4 of 120.",
        "You are in a kitchen, at x 1.00, z -2.50, facing east (-90°).",
        "In view, nearest first:",
        "- stool in the kitchen, 1.1 m away at 1 o'clock (x 1.90, z -3.00)",
        "- toaster, 3.2 m away at 9 o'clock (x 1.00, z 0.74)",
    ]
    degrees = TextRenderer(TextObsConfig(bearing="degrees", coordinates=False)).view(OBS)
    assert "- stool, 1.1 m away at 30° right" in degrees and "x 1.90" not in degrees
    assert "- toaster, 3.2 m away at 90° left" in degrees


def test_view_says_what_the_agent_cannot_know() -> None:
    hidden = TextRenderer(protocol=ObservationProtocol(room_type=False, detections=False))
    text = hidden.view(OBS)
    assert "You do not know which room you are in" in text and "stool" not in text
    outside = TextRenderer().view(
        Observation("x", 0, None, None, None, (), collided=True), budget=None
    )
    assert outside.splitlines() == [
        "Step 0.",
        "You are outside every room (in a doorway or passage).",
        "Your last forward move was blocked.",
        "Nothing in view.",
    ]


def test_objects_and_history_are_bounded() -> None:
    renderer = TextRenderer(TextObsConfig(history=2, max_objects=2))
    seen = [Seen(i, "chair", float(5 - i), 0.0) for i in range(4)]
    listed = renderer.objects(seen, "Seen:", "none").splitlines()
    assert listed == [
        "Seen:",
        "- [3] chair, 2.0 m away at 12 o'clock",
        "- [2] chair, 3.0 m away at 12 o'clock",
        "- … and 2 more, farther away",
    ]
    history = renderer.history(["a", "b", "c"]).splitlines()
    assert history == ["Recent history, oldest first (1 earlier entry not shown):", "- b", "- c"]
    assert renderer.history([]) == "Recent history: nothing yet."
    assert TextRenderer(TextObsConfig(history=0)).history(["a"]) == ""


def test_renderer_stamp_changes_the_protocol_hash() -> None:
    stamp = TextObsConfig().stamp()
    assert stamp == {
        "renderer": RENDERER,
        "version": VERSION,
        "bearing": "clock",
        "history": 8,
        "max_objects": 60,
        "coordinates": True,
    }
    protocol = ObservationProtocol()
    plain, plain_hash = protocol_stamp(protocol)
    assert plain == protocol.model_dump(mode="json") and plain_hash == protocol.protocol_hash()
    clock = protocol_stamp(protocol, stamp)
    degrees = protocol_stamp(protocol, TextObsConfig(bearing="degrees").stamp())
    assert clock[0]["text"] == stamp and len({plain_hash, clock[1], degrees[1]}) == 3


def test_packaged_prompts_fill_every_placeholder() -> None:
    for mode in ("actions", "subgoals"):
        prompt = load_prompt(mode)
        assert prompt.name == f"{mode}.v1.txt" and len(prompt.sha256) == 64
        system, user = prompt.messages({"instruction": "Go to the sofa.", "history": ""})
        assert system["role"] == "system" and '"reasoning"' in system["content"]
        assert user["content"].splitlines()[0] == "Instruction: Go to the sofa."
        assert "$" not in system["content"] + user["content"]
        assert "\n\n\n" not in user["content"]  # an empty placeholder leaves one blank line
    assert set(PLACEHOLDERS) >= {"instruction", "observation", "history"}


def test_custom_prompt_files_are_checked(tmp_path: Path) -> None:
    good = tmp_path / "mine.txt"
    good.write_text("header\n### system\nCost: $$5\n### user\n$instruction\n")
    prompt = load_prompt("actions", good)
    assert prompt.messages({"instruction": "hi"})[0]["content"] == "Cost: $5"
    assert prompt.stamp()["template"] == "mine.txt"
    bad = tmp_path / "bad.txt"
    bad.write_text("### system\nx\n### user\n$weather\n")
    with pytest.raises(ConfigError, match=r"bad.txt: bad placeholder 'weather'"):
        load_prompt("actions", bad)
    bad.write_text("no sections\n")
    with pytest.raises(ConfigError, match="needs a '### system' and a '### user' line"):
        load_prompt("actions", bad)
    with pytest.raises(ConfigError, match="no such file"):
        load_prompt("actions", tmp_path / "missing.txt")


@pytest.mark.parametrize(
    ("text", "problem", "action"),
    [
        ('{"reasoning": "go", "action": "forward"}', None, "forward"),
        ('```json\n{"action": "Turn_Left"}\n```', None, "turn left"),
        ('Thinking {not json} then {"action": "stop"}', None, "stop"),
        ("forward", "no_answer", None),
        ("", "no_answer", None),
        ('{"action": ' + '"x' * 3000 + '"}', "too_long", None),
        ('{"action": 3}', None, None),
    ],
)
def test_answers_are_read_leniently(text: str, problem: str | None, action: str | None) -> None:
    answer = read_answer(text)
    assert answer.problem == problem and answer.choice("action") == action


def test_condition_verdicts_are_read() -> None:
    answer = read_answer(
        '{"reasoning": " I saw\\n a toaster ", "conditions": [{"condition": "a toaster in the '
        'kitchen", "holds": true}, {"condition": "bad", "holds": "yes"}, 7]}'
    )
    assert answer.conditions == (("a toaster in the kitchen", True),)
    assert answer.reasoning == "I saw a toaster"
    single = read_answer('{"condition": {"condition": "c", "holds": false}}')
    assert single.conditions == (("c", False),)


def test_settings_errors_are_one_line() -> None:
    with pytest.raises(ConfigError, match=r"^llm agent: base_url: Field required \(pass"):
        parse_config({"model": "m"})
    with pytest.raises(ConfigError, match="API keys are never arguments"):
        parse_config({"base_url": "u", "model": "m", "api_key": "sk-123"})
    with pytest.raises(ConfigError, match="llm agent: mode: Input should be 'actions' or"):
        parse_config({"base_url": "u", "model": "m", "mode": "dance"})
    with pytest.raises(ConfigError, match="fallback 'jump' is not one of"):
        load_agent("llm", {"base_url": "u", "model": "m", "fallback": "jump"})
    config = LLMConfig(base_url="u", model="m", mode="actions")
    assert config.fallback_choice() == "left"
    assert LLMConfig(base_url="u", model="m").fallback_choice() == "explore"
    agent = load_agent("llm", {"base_url": "u", "model": "m", "bearing": "degrees"})
    assert agent.text_protocol["bearing"] == "degrees"
    assert agent.text_protocol["prompt"]["template"] == "subgoals.v1.txt"


def test_docs_commands_build_the_agent() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "llm.md").read_text()
    assert page.startswith("# Language-model agents")
    section = page.split("\n## ", 1)[0]
    (bash,) = re.findall(r"```bash\n(.*?)```", section, flags=re.S)
    runs = [shlex.split(line, comments=True) for line in bash.splitlines() if "--agent llm" in line]
    assert len(runs) == 4
    for words in runs:
        items = [words[i + 1] for i, w in enumerate(words) if w == "--agent-arg"]
        agent = load_agent("llm", parse_agent_args(items))
        assert agent.config.base_url.endswith("/v1") and agent.config.model
    for name in re.findall(r"condvln/data/prompts/(\w+\.v\d+\.txt)", section):
        assert load_prompt(name.split(".")[0]).name == name


def test_missing_client_libraries_are_named(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "openai" else real(name, *a)
    )
    with pytest.raises(ConfigError, match=r'openai not installed: pip install "condvln\[llm\]"'):
        load_agent("llm", {"base_url": "u", "model": "m"})
    assert load_agent("llm", {"base_url": "u", "model": "m", "cache": "readonly"})
