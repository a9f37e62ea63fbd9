"""Parse instruction text back into a :class:`~condvln.program.ast.Program`.

The grammar is generated from the same paraphrase templates the renderer uses (see
:func:`grammar_text`), so every rendered instruction parses back to the program it came from.
It is vocabulary-free: an object or room name is a run of words that stops before a reserved
template word or a relation phrase followed by "the" (see
:attr:`~condvln.program.templates.Templates.name_pattern`), so the parser works on the text
alone and is the language front end of symbolic agents. The grammar is LALR(1), so a text has at
most one reading (lark refuses to build a grammar with conflicts) and parsing takes about a
millisecond. Parsing is case-insensitive and ignores extra spaces.

>>> program = parse("If there is an egg in the kitchen, go to the chest of drawers near the bed; "
...                 "otherwise, head to the light switch in the living room.")
>>> program.steps[0].condition
Exists(category='egg', room='kitchen')
>>> program.steps[0].then[0].target
Ref(category='chest of drawers', room=None, relation='near', anchor='bed')
>>> tokenize("First go to the sofa, then go to the TV stand.")
['first', 'go', 'to', 'the', 'sofa', 'then', 'go', 'to', 'the', 'tv', 'stand', '.']
>>> parse("If there is a sofa in the kitchen go to the bed.")
Traceback (most recent call last):
...
condvln.program.parse.InstructionParseError: instruction: cannot parse at character 37 ('to the bed.'): expected ','
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

from lark import Lark, Token, Transformer, UnexpectedInput
from lark.exceptions import UnexpectedCharacters, UnexpectedToken, VisitError

from condvln.errors import FormatError
from condvln.program.ast import Condition, Exists, Go, If, Program, Ref, Relation, Step
from condvln.program.templates import WORD_PATTERN, Phrasing, Templates, load_templates, pieces

_TOKEN = re.compile(rf"{WORD_PATTERN}|\.")

#: template slot → grammar symbol
_SYMBOL = {
    "relation": "relation",
    "anchor": "anchor",
    "room": "room",
    "category": "category",
    "a": "article",
    "subject": "subject",
    "target": "target",
    "ref": "ref",
    "rest": "arm",
    "go": "go",
    "if": "top_if",
    "cond": "condition",
    "neg": "negation",
    "then": "then_arm",
    "else": "else_arm",
}

#: construct → grammar rule generated from its templates
_RULES = {
    "qualifier": "qualifier",
    "room": "room_part",
    "exists": "exists",
    "not_exists": "not_exists",
    "exists_here": "exists_here",
    "not_exists_here": "not_exists_here",
    "relation": "relation_condition",
    "not_relation": "not_relation",
    "go": "go",
    "sequence": "sequence",
    "then_to": "then_to",
    "linear_first": "linear_first",
    "linear_then": "linear_then",
    "linear_finally": "linear_finally",
    "horizon": "horizon",
    "if": "if_head",
    "check": "check_head",
    "if_not_first": "if_not_first",
    "check_not_first": "check_not_first",
    "else": "else_clause",
    "else_target": "else_target",
    "else_if": "else_if",
    "sentence_separator": "_sentence_separator",
    "clause_separator": "_clause_separator",
}

_SKELETON = r"""
start: linear "."                 -> linear_program
     | top_if "."                 -> conditional_program
     | linear "." horizon "."     -> horizon_program
linear: go | linear_first linear_then* linear_finally?
top_if: if_head top_tail | if_not_first
top_tail: _sentence_separator else_part          -> tail_else
        | _sentence_separator else_if top_tail   -> tail_link
check_if: check_head check_tail | check_not_first
check_tail: _clause_separator else_part          -> tail_else
          | _clause_separator else_if check_tail -> tail_link
else_part: else_clause | else_target
arm: go then_to* | go then_to* sequence | check_if
then_arm: arm
else_arm: arm
condition: exists | exists_here | relation_condition
negation: not_exists | not_exists_here | not_relation
ref: "the" category qualifier? room_part?
subject: ref
target: ref
category: NAME
anchor: NAME
room: NAME
article: "a" | "an"
%ignore /\s+/
"""


_HERE = ""
"""The room of a presence check that leaves it unnamed ("it also has a mug") until
:func:`_place_rooms` puts the room in focus there."""


class InstructionParseError(FormatError):
    """Instruction text that does not read as a program; the message says where it stopped."""


def tokenize(text: str) -> list[str]:
    """VLN-CE instruction tokens: lower-cased words and ``"."``; other punctuation is dropped.

    >>> tokenize("If not, check whether the lamp is north-east of the bed: if so, stop.")
    ['if', 'not', 'check', 'whether', 'the', 'lamp', 'is', 'north-east', 'of', 'the', 'bed', 'if', 'so', 'stop', '.']
    """
    return _TOKEN.findall(text.lower())


def _alternative(template: str) -> str:
    return " ".join(
        _SYMBOL[text] if kind == "slot" else f'"{text}"' for kind, text in pieces(template)
    )


def grammar_text(templates: Templates | None = None) -> str:
    """The lark grammar generated from ``templates`` (default: the packaged ones)."""
    t = templates or load_templates()
    lines = [_SKELETON]
    for construct, rule in _RULES.items():
        lines.append(f"{rule}: " + " | ".join(_alternative(v) for v in t.variants(construct)))
    phrases = (p for ps in t.relations.values() for p in ps)
    lines.append("!relation: " + " | ".join(_alternative(p) for p in phrases))
    lines.append(f"NAME: /{t.name_pattern}/")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True, slots=True)
class _Head:
    condition: Condition
    then: tuple[Step, ...]


@dataclass(frozen=True, slots=True)
class _Tail:
    negation: Condition | None
    steps: tuple[Step, ...]


def _resolve(tail: _Tail, condition: Condition) -> tuple[Step, ...]:
    """The else-arm of a conditional, checking that a restated negation matches its condition."""
    if tail.negation is not None and tail.negation != condition:
        raise InstructionParseError(
            f"the else clause negates {tail.negation!r}, not the condition {condition!r}",
            record="instruction",
        )
    return tail.steps


def _slots(children: list[Any]) -> dict[str, Any]:
    return dict(
        c for c in children if isinstance(c, tuple) and len(c) == 2 and isinstance(c[0], str)
    )


class _ToProgram(Transformer[Token, Program]):
    """Bottom-up: names and slots become ``(slot, value)`` pairs, constructs become AST nodes."""

    def __init__(self, templates: Templates) -> None:
        super().__init__()
        self.predicate_of_phrase = templates.predicate_of_phrase

    def relation(self, tokens: list[Token]) -> tuple[str, str]:
        return ("relation", self.predicate_of_phrase[" ".join(t.value for t in tokens)])

    def category(self, c: list[Token]) -> tuple[str, str]:
        return ("category", c[0].value)

    def anchor(self, c: list[Token]) -> tuple[str, str]:
        return ("anchor", c[0].value)

    def room(self, c: list[Token]) -> tuple[str, str]:
        return ("room", c[0].value)

    def article(self, _: list[Any]) -> None:
        return None

    def qualifier(self, c: list[Any]) -> tuple[str, tuple[str, str]]:
        d = _slots(c)
        return ("qualifier", (d["relation"], d["anchor"]))

    def room_part(self, c: list[Any]) -> tuple[str, str]:
        return c[0]

    def ref(self, c: list[Any]) -> Ref:
        d = _slots(c)
        relation, anchor = d.get("qualifier", (None, None))
        return Ref(d["category"], d.get("room"), relation, anchor)

    def subject(self, c: list[Ref]) -> tuple[str, Ref]:
        return ("subject", c[0])

    def target(self, c: list[Ref]) -> tuple[str, Ref]:
        return ("target", c[0])

    def exists(self, c: list[Any]) -> Exists:
        d = _slots(c)
        return Exists(d["category"], d["room"])

    not_exists = exists

    def exists_here(self, c: list[Any]) -> Exists:
        return Exists(_slots(c)["category"], _HERE)

    not_exists_here = exists_here

    def relation_condition(self, c: list[Any]) -> Relation:
        d = _slots(c)
        return Relation(d["subject"], d["relation"], d["target"])

    not_relation = relation_condition

    def condition(self, c: list[Condition]) -> tuple[str, Condition]:
        return ("cond", c[0])

    def negation(self, c: list[Condition]) -> tuple[str, Condition]:
        return ("neg", c[0])

    def go(self, c: list[Any]) -> Go:
        return Go(next(x for x in c if isinstance(x, Ref)))

    def arm(self, c: list[Any]) -> tuple[Step, ...]:
        rest = c[-1] if isinstance(c[-1], tuple) else ()
        return (*(x for x in c if not isinstance(x, tuple)), *rest)

    then_to = go

    def sequence(self, c: list[Any]) -> tuple[Step, ...]:
        return c[0]

    def then_arm(self, c: list[Any]) -> tuple[str, tuple[Step, ...]]:
        return ("then", c[0])

    def else_arm(self, c: list[Any]) -> tuple[str, tuple[Step, ...]]:
        return ("else", c[0])

    def if_head(self, c: list[Any]) -> _Head:
        d = _slots(c)
        return _Head(d["cond"], d["then"])

    check_head = if_head

    def else_clause(self, c: list[Any]) -> _Tail:
        d = _slots(c)
        return _Tail(d.get("neg"), d["else"])

    def else_target(self, c: list[Any]) -> _Tail:
        return _Tail(None, (Go(next(x for x in c if isinstance(x, Ref))),))

    def else_part(self, c: list[_Tail]) -> _Tail:
        return c[0]

    def else_if(self, c: list[Any]) -> tuple[Condition | None, _Head]:
        d = _slots(c)
        return (d.get("neg"), _Head(d["cond"], d["then"]))

    def tail_else(self, c: list[_Tail]) -> _Tail:
        return c[0]

    def tail_link(self, c: list[Any]) -> _Tail:
        (negation, head), tail = c
        node = If(head.condition, head.then, _resolve(tail, head.condition))
        return _Tail(negation, (node,))

    def top_if(self, c: list[Any]) -> If:
        if len(c) == 1:  # said else-arm first: already an If
            return c[0]
        head, tail = c
        return If(head.condition, head.then, _resolve(tail, head.condition))

    def if_not_first(self, c: list[Any]) -> If:
        d = _slots(c)
        return If(d["neg"], d["then"], d["else"])

    check_not_first = if_not_first

    check_if = top_if

    def linear(self, c: list[Go]) -> tuple[Go, ...]:
        return tuple(c)

    def linear_first(self, c: list[Any]) -> Go:
        return c[0]

    linear_then = linear_finally = linear_first

    def horizon(self, c: list[If]) -> If:
        return c[0]

    def linear_program(self, c: list[Any]) -> Program:
        return Program(c[0])

    def conditional_program(self, c: list[If]) -> Program:
        return Program(_place_rooms((c[0],), None))

    def horizon_program(self, c: list[Any]) -> Program:
        return Program(_place_rooms((*c[0], c[1]), None))


def _place_rooms(steps: tuple[Step, ...], focus: str | None) -> tuple[Step, ...]:
    """``steps`` with each unnamed room of a presence check set to the room in focus: the room
    of the presence condition whose then-arm the check opens (the renderer's rule)."""
    out: list[Step] = []
    for index, step in enumerate(steps):
        if not isinstance(step, If):
            out.append(step)
            continue
        condition = step.condition
        if isinstance(condition, Exists) and condition.room == _HERE:
            if focus is None or index > 0:
                raise InstructionParseError(
                    f"'{condition.category}': the check names no room and none is in focus",
                    record="instruction",
                )
            condition = Exists(condition.category, focus)
        then_focus = condition.room if isinstance(condition, Exists) else None
        out.append(
            If(condition, _place_rooms(step.then, then_focus), _place_rooms(step.orelse, None))
        )
    return tuple(out)


class Parser:
    """A reusable instruction parser for one set of templates.

    Args:
        templates: The paraphrase tables the text was rendered with (default: packaged ones).
    """

    def __init__(self, templates: Templates | None = None) -> None:
        self.templates = templates or load_templates()
        self._lark = Lark(grammar_text(self.templates), parser="lalr")
        self._transformer = _ToProgram(self.templates)

    def parse(self, text: str) -> Program:
        """The program ``text`` describes; :class:`InstructionParseError` if it has none."""
        source = " ".join(text.lower().split())
        try:
            tree = self._lark.parse(source)
        except UnexpectedInput as exc:
            raise _error(source, exc, self._lark) from None
        try:
            return self._transformer.transform(tree)
        except VisitError as exc:
            if isinstance(exc.orig_exc, InstructionParseError):
                raise exc.orig_exc from None
            raise


def _error(source: str, exc: UnexpectedInput, lark: Lark) -> InstructionParseError:
    position = getattr(exc, "pos_in_stream", None)
    at_end = isinstance(exc, UnexpectedToken) and exc.token.type == "$END"
    if at_end or position is None or position < 0:
        position = len(source)
    expected: set[str] = set()
    if isinstance(exc, UnexpectedToken):
        expected = exc.accepts or exc.expected
    elif isinstance(exc, UnexpectedCharacters):
        expected = set(exc.allowed or ())
    shown = sorted(_describe(name, lark) for name in expected)
    hint = (
        f": expected {' or '.join(shown[:6])}{' or …' if len(shown) > 6 else ''}" if shown else ""
    )
    near = source[position : position + 30] or "end of text"
    return InstructionParseError(
        f"cannot parse at character {position} ({near!r}){hint}", record="instruction"
    )


def _describe(terminal: str, lark: Lark) -> str:
    if terminal == "NAME":
        return "a name"
    if terminal == "$END":
        return "the end"
    try:
        return repr(lark.get_terminal(terminal).pattern.value)
    except KeyError:
        return terminal.lower()


@functools.cache
def packaged_parser(phrasing: Phrasing = "all") -> Parser:
    """The parser of the packaged templates, built once: every phrasing, or (``"seen"``) only
    those train is worded with, as a reader that learnt from train alone would know them."""
    return Parser(load_templates(phrasing))


def parse(text: str, phrasing: Phrasing = "all") -> Program:
    """Parse instruction text with the packaged templates (see :func:`packaged_parser`).

    >>> text = "Provided that the kitchen holds a mug, get to the sofa; otherwise, the bed."
    >>> parse(text).steps[0].condition
    Exists(category='mug', room='kitchen')
    >>> parse(text, "seen")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    condvln.program.parse.InstructionParseError: instruction: cannot parse at character 0 ('provided that the kitchen hold'): expected ...

    Raises:
        InstructionParseError: The text is not an instruction the templates can produce.
    """
    return packaged_parser(phrasing).parse(text)
