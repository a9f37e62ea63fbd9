"""Prompt templates (data files) and reading the model's answers.

**Templates** live in ``condvln/data/prompts/<mode>.v<N>.txt`` (or any file given with
``--agent-arg prompt=PATH``): a free header, then a ``### system`` and a ``### user`` section,
each a :class:`string.Template` (``$observation``, ``$history``, …; ``$$`` is a dollar sign).
A template's stamp — file name and SHA-256 of its bytes — goes into the run manifest with the
text rendering, so an edited prompt is never mistaken for the old one.

**Answers** are one JSON object, found as the first ``{...}`` that parses anywhere in the reply
(code fences and chatter around it are ignored): ``"reasoning"`` (text), ``"conditions"`` (a list
of ``{"condition": text, "holds": bool}``; one such object is accepted too) and the choice —
``"action"`` or ``"subgoal"``. :func:`read_answer` never raises: a reply without such an object,
or longer than the limit (or cut off at ``max_tokens``), is a :class:`Problem`, which the agent
answers with its fallback and counts.

>>> answer = read_answer('Sure! ```json\\n{"reasoning": "I see it", "action": "Forward"}\\n```')
>>> answer.choice("action"), answer.reasoning, answer.conditions
('forward', 'I see it', ())
>>> read_answer("I would go forward.").problem, read_answer("x" * 50, max_chars=10).problem
('no_answer', 'too_long')
"""

from __future__ import annotations

import hashlib
import importlib.resources
import json
import string
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from condvln.errors import ConfigError

PLACEHOLDERS = ("instruction", "observation", "history", "actions", "objects", "progress")
"""The names a template may use."""

Problem = Literal["no_answer", "too_long"]

_DECODER = json.JSONDecoder()


@dataclass(frozen=True)
class PromptTemplate:
    """A system and a user message template.

    Attributes:
        name: The file name (``subgoals.v1.txt``).
        sha256: SHA-256 of the file's bytes.
        system: The system message template.
        user: The user message template.
    """

    name: str
    sha256: str
    system: string.Template
    user: string.Template

    def stamp(self) -> dict[str, str]:
        """``{"template", "sha256"}`` for the run manifest."""
        return {"template": self.name, "sha256": self.sha256}

    def messages(self, values: Mapping[str, str]) -> list[dict[str, str]]:
        """The chat messages for ``values`` (missing placeholders become empty)."""
        filled = {name: values.get(name, "") for name in PLACEHOLDERS}
        return [
            {"role": "system", "content": self.system.substitute(filled).strip()},
            {"role": "user", "content": _tidy(self.user.substitute(filled))},
        ]


def _tidy(text: str) -> str:
    """Strip, and collapse the blank lines an empty placeholder leaves into one."""
    lines, blank = [], False
    for line in text.strip().splitlines():
        if not line.strip():
            if not blank:
                lines.append("")
            blank = True
            continue
        lines.append(line.rstrip())
        blank = False
    return "\n".join(lines)


def load_prompt(mode: str, path: str | Path | None = None) -> PromptTemplate:
    """The packaged template of ``mode`` (``<mode>.v1.txt``), or the file at ``path``.

    Raises:
        ConfigError: A missing file, a missing section or an unknown placeholder.
    """
    if path is None:
        name = f"{mode}.v1.txt"
        data = (
            importlib.resources.files("condvln.data")
            .joinpath("prompts")
            .joinpath(name)
            .read_bytes()
        )
    else:
        file = Path(path)
        if not file.is_file():
            raise ConfigError(f"prompt template {file}: no such file")
        name, data = file.name, file.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"prompt template {name}: not UTF-8 text") from None
    _, has_system, rest = ("\n" + text.replace("\r\n", "\n")).partition("\n### system\n")
    system, has_user, user = rest.partition("\n### user\n")
    if not has_system or not has_user:
        raise ConfigError(f"prompt template {name}: needs a '### system' and a '### user' line")
    template = PromptTemplate(
        name, hashlib.sha256(data).hexdigest(), string.Template(system), string.Template(user)
    )
    try:
        template.messages({})
    except (KeyError, ValueError) as exc:
        raise ConfigError(
            f"prompt template {name}: bad placeholder {exc} (known: "
            + ", ".join(f"${p}" for p in PLACEHOLDERS)
            + ")"
        ) from None
    return template


@dataclass(frozen=True)
class Answer:
    """What a reply says (or the problem that makes it unusable).

    Attributes:
        fields: The JSON object (empty with a problem).
        problem: ``"no_answer"`` / ``"too_long"``, or ``None`` for a usable answer.
    """

    fields: Mapping[str, Any]
    problem: Problem | None = None

    @property
    def reasoning(self) -> str:
        """The stated reasoning (empty when none)."""
        value = self.fields.get("reasoning")
        return " ".join(value.split()) if isinstance(value, str) else ""

    @property
    def conditions(self) -> tuple[tuple[str, bool], ...]:
        """``(condition, holds)`` of each well-formed verdict in ``"conditions"``."""
        value = self.fields.get("conditions", self.fields.get("condition"))
        items = [value] if isinstance(value, Mapping) else value
        if not isinstance(items, list):
            return ()
        return tuple(
            (" ".join(item["condition"].split()), item["holds"])
            for item in items
            if isinstance(item, Mapping)
            and isinstance(item.get("condition"), str)
            and isinstance(item.get("holds"), bool)
        )

    def choice(self, key: str) -> str | None:
        """The lower-cased, space-normalised text of ``key`` (``None`` when not a string)."""
        value = self.fields.get(key)
        return " ".join(value.lower().replace("_", " ").split()) if isinstance(value, str) else None


def first_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in ``text`` that parses, or ``None``.

    >>> first_object('noise {"a": {"b": 1}} {"c": 2}'), first_object("{oops}")
    ({'a': {'b': 1}}, None)
    """
    start = text.find("{")
    while start >= 0:
        try:
            value, _ = _DECODER.raw_decode(text, start)
        except ValueError:
            value = None
        if isinstance(value, dict):
            return value
        start = text.find("{", start + 1)
    return None


def read_answer(text: str, *, max_chars: int = 4000, truncated: bool = False) -> Answer:
    """The answer in a reply; a problem when it is over ``max_chars``, cut off, or has no object."""
    if truncated or len(text) > max_chars:
        return Answer({}, "too_long")
    fields = first_object(text)
    if fields is None:
        return Answer({}, "no_answer")
    return Answer(fields)
