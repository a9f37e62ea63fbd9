"""Render programs as English instructions from the paraphrase templates (``templates.json``).

How the text reads (every choice below is a template and may be paraphrased):

* a navigation step is "go to the stool north of the dishwasher in the kitchen";
* steps of one arm are joined with ", then …" or, keeping the verb of the step before, with
  "… and then to the lamp" ("go to the sofa and then to the lamp");
* the outermost conditional is a sentence, "If C, …", and each else clause is a new sentence
  ("Otherwise, …", "If not, …", "If there is no kettle in the kitchen, …"), or, when no arm holds
  another conditional, a clause after a semicolon;
* an else-if link reads "Otherwise, if C2, …";
* a last else-arm of one step may name only its target ("…; otherwise, the bed"), unless the
  then-arm before it holds a conditional;
* a conditional inside an arm reads "check whether C: if so, …; if not, …";
* a conditional whose then-arm holds a conditional and whose else-arm holds none is said
  else-arm first, headed by its negated condition: "If the kitchen has no kettle, go to the
  desk. Otherwise, if it has no mug, go to the bed; otherwise, …" (``if_not_first``,
  ``check_not_first``), so nesting reads as a list of decisions and the nested arm, said last,
  needs nothing after it; that then-arm keeps the room in focus unless the else-arm names a
  room;
* any other else clause that follows a then-arm holding a conditional restates the negated
  condition ("if there is no kettle in the kitchen, …", "if the lamp is not near the bed but
  …"), so a reader never has to count levels to see which test it answers;
* navigation steps before the first decision form their own sentence ("First go to the sofa,
  then go to the bed. After that, if …");
* a presence check that opens the then-arm of a presence condition and asks about the same room
  does not name the room again: "If the kitchen has a kettle, check whether it also has a mug:
  if so, …; if there is no mug there, …" (the room *in focus*; an else-arm has none, nor has an
  arm whose check follows a navigation step);
* no verb (``templates.verbs``) occurs more than :data:`VERB_CAP` times, and a noun phrase has at
  most one relative clause ("the lamp that is near the bed in the kitchen", never "… that is in
  the kitchen" after a relative qualifier);
* a semicolon between the else clauses of the outermost conditional is only one of the
  ``sentence_separator`` choices when no arm of its ladder holds a conditional; otherwise the
  first choice (a full stop) is used.

The renderer words with the packaged *seen* paraphrases unless given other templates; with
``load_templates("all")`` it may also draw the held-out ones, and :func:`render_instruction`
says whether it did (:class:`Instruction`).

Every conditional has both arms, and a conditional is always the last step of its sequence, so
the text is a prefix encoding of the tree and parses back to exactly one program.

>>> from condvln.program.ast import Exists, Go, If, Program, Ref
>>> p = Program((If(Exists("coffee table", "kitchen"),
...                 (Go(Ref("stool", None, "north of", "dishwasher")),),
...                 (Go(Ref("lamp", "bathroom", "below", "sink")),)),))
>>> text = render(p, 3)
>>> text[0].isupper() and text.endswith(".") and "coffee table" in text and "kitchen" in text
True
>>> render_linear([Ref("sofa"), Ref("armchair", "living room"), Ref("bed")], 0)
'As a first step, approach the sofa, next move to the armchair in the living room, and finally head to the bed.'
"""

from __future__ import annotations

import functools
import itertools
import re
from collections import Counter
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from condvln.errors import ValidationError
from condvln.program.ast import Condition, Exists, Go, If, Program, Ref, Step
from condvln.program.draws import Draws
from condvln.program.templates import (
    WORD_PATTERN,
    Templates,
    indefinite_article,
    load_templates,
    pieces,
)

_NAME = re.compile(rf"{WORD_PATTERN}(?: {WORD_PATTERN})*")
_SENTENCE_START = re.compile(r"(^|[.] )([a-z])")

Seed = np.random.Generator | int

MAX_WORDS = 80
"""The most words (whitespace-separated) a generated instruction may have."""

LONG_RETRIES = 8
"""Fresh paraphrase draws tried when a rendering is too long, before the compact one."""

TIGHT_SLACK = 1
"""Extra words over a construct's shortest paraphrase allowed in the second round of draws."""

NEGATION_WORDS = 5
"""Words a restated negation ``{neg}`` is counted as when the compact rendering compares
paraphrases (a restated condition is usually longer than "if not")."""

VERB_CAP = 2
"""The most times one verb of ``templates.verbs`` may occur in an instruction."""

WORD_SLACK = 3
"""Words a dataset instruction may have over its program's shortest rendering
(:func:`render_instruction`)."""

_COUNTED_SLOTS = frozenset({"a", "category", "room", "anchor", "else"})
_RELATIVE = ("that", "which")


class Instruction(NamedTuple):
    """A dataset instruction and whether it uses only seen paraphrases (``phrasing_seen``)."""

    text: str
    phrasing_seen: bool


def _seen(templates: Templates | None) -> Templates:
    """``templates``, or by default the packaged *seen* ones (:func:`load_templates`)."""
    return templates or load_templates("seen")


def word_count(text: str) -> int:
    """Words of an instruction: whitespace-separated pieces ("north-east," is one word)."""
    return len(text.split())


def render(
    program: Program,
    rng: Seed,
    templates: Templates | None = None,
    max_words: int | None = None,
) -> str:
    """The instruction text of ``program``; the same program and seed give the same text.

    With ``max_words``, a text that is too long is drawn again (up to :data:`LONG_RETRIES`
    times), then drawn among paraphrases at most :data:`TIGHT_SLACK` words longer than each
    construct's shortest (as often), and finally rendered compactly (:func:`render_compact`),
    which is still too long only when the program itself is (the generator checks that first,
    see :func:`compact_words`).

    Args:
        program: Steps of Go's optionally ended by one If; each arm has the same shape.
        rng: A generator or a seed choosing the paraphrases.
        templates: Paraphrase tables (default: the packaged seen ones).
        max_words: Longest text wanted (:func:`word_count`), or ``None`` for no limit.

    Raises:
        ValidationError: A name with a reserved word or an unsupported character, an unknown
            predicate, or an If that is not the last step of its sequence.
    """
    return _render(program, _seen(templates), np.random.default_rng(rng), max_words).text


def _render(
    program: Program, t: Templates, gen: np.random.Generator, max_words: int | None
) -> Instruction:
    """:func:`render`, with whether the text uses only seen paraphrases."""
    with Draws(gen) as draws:
        renderer = _Renderer(t, draws)
        text = renderer.program(program)
        for slack in (None, TIGHT_SLACK):  # free draws, then among near-shortest paraphrases
            for _ in range(LONG_RETRIES):
                if max_words is None or word_count(text) <= max_words:
                    return Instruction(text, not renderer.held_out)
                renderer = _Renderer(t, draws, slack)
                text = renderer.program(program)
        if word_count(text) <= max_words:
            return Instruction(text, not renderer.held_out)
        return _compact(program, t, draws)


def render_instruction(
    program: Program, rng: Seed, templates: Templates | None = None
) -> Instruction:
    """A dataset instruction: :func:`render` within :data:`WORD_SLACK` words of the program's
    shortest rendering (and within :data:`MAX_WORDS`), and whether it uses only seen
    paraphrases (always, with the default seen templates).

    >>> from condvln.program.ast import Exists, Go, If, Program, Ref
    >>> p = Program((If(Exists("kettle", "kitchen"),
    ...                 (If(Exists("mug", "kitchen"), (Go(Ref("sofa")),), (Go(Ref("bed")),)),),
    ...                 (Go(Ref("desk")),)),))
    >>> text, seen = render_instruction(p, 0)
    >>> word_count(text) <= compact_words(p) + WORD_SLACK, "also" in text or "there," in text, seen
    (True, True, True)
    """
    t = _seen(templates)
    limit = min(MAX_WORDS, compact_words(program, t) + WORD_SLACK)
    return _render(program, t, np.random.default_rng(rng), limit)


def render_compact(program: Program, rng: Seed, templates: Templates | None = None) -> str:
    """The shortest rendering of ``program``: every construct takes one of its paraphrases with
    the fewest words (``rng`` chooses among those), else clauses restate a negation only where
    the readability rule requires it."""
    with Draws(np.random.default_rng(rng)) as draws:
        return _compact(program, _seen(templates), draws).text


def _compact(program: Program, templates: Templates, rng: Draws) -> Instruction:
    """The shorter of the compact rendering and the plain one (the verb cap can make the
    former longer), so a program within :func:`plain_words` always has a text that fits."""
    renderers = [_Renderer(templates, rng, 0, plain) for plain in (False, True)]
    texts = [(r.program(program), not r.held_out) for r in renderers]
    return Instruction(*min(texts, key=lambda text_seen: word_count(text_seen[0])))


def plain_words(program: Program, templates: Templates | None = None) -> int:
    """Words of the program's plain compact rendering: every construct at its shortest
    paraphrase, every name spelt out, no verb cap, no "it also has", no target-only else and
    no else-arm said first.

    The sampler admits a program by this count (at most :data:`MAX_WORDS`), so the wording
    rules, which change with the templates, never change which programs are sampled; the
    instruction itself is as long or shorter.
    """
    with Draws(np.random.default_rng(0)) as draws:
        return word_count(_Renderer(_seen(templates), draws, 0, plain=True).program(program))


def compact_words(program: Program, templates: Templates | None = None) -> int:
    """Words of :func:`render_compact` (the same for every seed): the shortest this program's
    instruction can be."""
    return word_count(render_compact(program, 0, templates))


def render_linear(targets: Sequence[Ref], rng: Seed, templates: Templates | None = None) -> str:
    """The oracle's linear instruction: "Go to g." or "First go to g1, then …, and finally …".

    Raises:
        ValidationError: No targets, or a target :func:`render` would reject.
    """
    if not targets:
        raise ValidationError("a linear instruction needs at least one target")
    with Draws(np.random.default_rng(rng)) as draws:
        renderer = _Renderer(_seen(templates), draws)
        return _capitalise(renderer.linear([Go(t) for t in targets], finally_=True) + ".")


def _capitalise(text: str) -> str:
    return _SENTENCE_START.sub(lambda m: m.group(1) + m.group(2).upper(), text)


def _split(steps: tuple[Step, ...], where: str) -> tuple[list[Go], If | None]:
    """Leading Go steps and the closing If (if any) of a step sequence."""
    *goes, last = steps
    if any(isinstance(s, If) for s in goes):
        raise ValidationError(f"{where}: a conditional must be the last step of its sequence")
    if isinstance(last, If):
        return list(goes), last  # type: ignore[arg-type]
    return [*goes, last], None  # type: ignore[list-item]


def _holds_if(steps: tuple[Step, ...]) -> bool:
    return any(isinstance(s, If) for s in steps)


def _ladder(node: If) -> list[If]:
    links = [node]
    while (link := links[-1].else_if) is not None:
        links.append(link)
    return links


def renderable_name(text: str, templates: Templates | None = None) -> bool:
    """Whether an object or room name can appear in an instruction (and parse back).

    A name may hold template words ("of", "in", "north") but no reserved word and none of the
    phrases a template puts right after a name ("in it", "has a"), where the parser would end it.

    >>> renderable_name("coffee table"), renderable_name("salt and pepper shaker")
    (True, False)
    >>> renderable_name("box in the corner"), renderable_name("lamp in it")
    (False, False)
    """
    t = templates or load_templates()
    return bool(t.name_regex.fullmatch(text))  # the parser's pattern: no reserved word either


@functools.cache
def _template_words(template: str) -> int:
    """Words of ``template`` once filled, counting a name, an article or the verb an else-arm
    starts with as one word (so "otherwise, {ref}" is shorter than "otherwise, {else}")."""
    words = sum(1 for kind, text in pieces(template) if kind == "word" or text in _COUNTED_SLOTS)
    return words + (NEGATION_WORDS if "{neg}" in template else 0)


class _Choices(NamedTuple):
    """A list of paraphrases as :meth:`_Renderer.pick` reads it (:func:`_choices`)."""

    options: tuple[str, ...]
    verbs: dict[str, tuple[tuple[str, int], ...]]  # paraphrase -> (verb, times) of its verbs
    most: int  # the most times one verb occurs in one paraphrase


@functools.lru_cache(maxsize=4096)
def _choices(options: tuple[str, ...], verbs: frozenset[str]) -> _Choices:
    """``options`` with the verbs of each, counted once per list of paraphrases."""
    counts = {
        o: tuple(Counter(t for kind, t in pieces(o) if kind == "word" and t in verbs).items())
        for o in options
    }
    most = max((n for pairs in counts.values() for _, n in pairs), default=0)
    return _Choices(options, counts, most)


@functools.lru_cache(maxsize=4096)
def _near_shortest(options: tuple[str, ...], slack: int) -> tuple[str, ...]:
    """The paraphrases at most ``slack`` words over the shortest of ``options``."""
    fewest = min(_template_words(o) for o in options)
    return tuple(o for o in options if _template_words(o) <= fewest + slack)


class _Renderer:
    def __init__(
        self,
        templates: Templates,
        rng: Draws,
        slack: int | None = None,
        plain: bool = False,
    ) -> None:
        """``slack``: pick only paraphrases at most this many words over the shortest one;
        ``plain``: no verb cap, no room left unnamed, no target-only else, no else-arm said
        first (:func:`plain_words`)."""
        self.t = templates
        self.rng = rng
        self.slack = slack
        self.plain = plain
        self.verbs_used: dict[str, int] = {}
        self.most_used = 0  # the largest count in verbs_used
        self.held_out = False  # whether a held-out paraphrase was picked

    def pick(self, options: Sequence[str]) -> str:
        """A paraphrase: within the verb cap (where one is), then near the shortest (with a
        slack), then drawn at random."""
        choices = _choices(tuple(options), self.t.verbs)
        allowed = choices.options
        # no option can break the cap while the most used verb leaves room for any of them
        if not self.plain and self.most_used + choices.most > VERB_CAP:
            used = self.verbs_used
            fits = [
                all(used.get(v, 0) + n <= VERB_CAP for v, n in choices.verbs[o]) for o in allowed
            ]
            allowed = tuple(o for o, ok in zip(allowed, fits, strict=True) if ok) or allowed
        if self.slack is not None:
            allowed = _near_shortest(allowed, self.slack)
        choice = allowed[self.rng.integers(len(allowed))]
        for verb, times in choices.verbs[choice]:
            self.verbs_used[verb] = count = self.verbs_used.get(verb, 0) + times
            self.most_used = max(self.most_used, count)
        self.held_out |= choice in self.t.held_out_phrasings
        return choice

    def name(self, text: str) -> str:
        if self.t.is_name(text):
            return text
        bad = sorted(self.t.reserved & set(text.split()))
        why = f"reserved word {bad[0]!r}" if bad else "lower-case words only"
        if not bad and _NAME.fullmatch(text):
            why = "it holds words a template puts right after a name (e.g. 'in it')"
        raise ValidationError(f"name {text!r} cannot be rendered: {why}")

    def phrase(self, predicate: str) -> str:
        if predicate not in self.t.relations:
            raise ValidationError(f"unknown predicate {predicate!r}")
        return self.pick(self.t.relations[predicate])

    def ref(self, ref: Ref) -> str:
        text = f"the {self.name(ref.category)}"
        rooms: Sequence[str] = self.t.room
        if ref.relation is not None and ref.anchor is not None:
            qualifier = self.pick(self.t.qualifier)
            text += " " + qualifier.format(
                relation=self.phrase(ref.relation), anchor=self.name(ref.anchor)
            )
            if qualifier.startswith(_RELATIVE):  # one relative clause per noun phrase
                rooms = [r for r in rooms if not r.startswith(_RELATIVE)] or rooms
        if ref.room is not None:
            text += " " + self.pick(rooms).format(room=self.name(ref.room))
        return text

    def condition(self, cond: Condition, negated: bool = False, here: bool = False) -> str:
        """The text of ``cond``; ``here``: a presence check of the room in focus."""
        if isinstance(cond, Exists):
            if here:
                options = self.t.not_exists_here if negated else self.t.exists_here
            else:
                options = self.t.not_exists if negated else self.t.exists
            template = self.pick(options)
            return template.format(
                a=indefinite_article(cond.category, self.t.articles),
                category=self.name(cond.category),
                room=self.name(cond.room),
            )
        template = self.pick(self.t.not_relation if negated else self.t.relation)
        return template.format(
            subject=self.ref(cond.subject),
            relation=self.phrase(cond.predicate),
            target=self.ref(cond.target),
        )

    def go(self, step: Go) -> str:
        return self.pick(self.t.go).format(ref=self.ref(step.target))

    def linear(self, goes: Sequence[Go], finally_: bool) -> str:
        if len(goes) == 1:
            return self.go(goes[0])
        text = self.pick(self.t.linear_first).format(go=self.go(goes[0]))
        for step in goes[1:-1]:
            text += self.pick(self.t.linear_then).format(go=self.go(step))
        last = self.t.linear_finally if finally_ and len(goes) > 2 else self.t.linear_then
        return text + self.pick(last).format(go=self.go(goes[-1]))

    def program(self, program: Program) -> str:
        goes, node = _split(program.steps, "program")
        if node is None:
            return _capitalise(self.linear(goes, finally_=True) + ".")
        text = self.conditional(node, self.t.if_, self.t.sentence_separator)
        if goes:
            text = (
                self.linear(goes, finally_=False)
                + ". "
                + self.pick(self.t.horizon).format(**{"if": text})
            )
        return _capitalise(text + ".")

    def arm(self, steps: tuple[Step, ...], focus: str | None = None) -> str:
        """An arm; ``focus``: the room a check opening the arm may leave unnamed."""
        goes, node = _split(steps, "arm")
        if not goes:
            assert node is not None
            focus = None if self.plain else focus
            return self.conditional(node, self.t.check, self.t.clause_separator, focus)
        text = self.go(goes[0])
        for index, step in enumerate(goes[1:], start=1):
            joint = self.pick([*self.t.then_to, *self.t.sequence])
            if joint not in self.t.then_to:  # a new step with its own verb: the rest of the arm
                return text + joint.format(rest=self.arm(steps[index:]))
            text += joint.format(ref=self.ref(step.target))
        if node is not None:
            rest = self.conditional(node, self.t.check, self.t.clause_separator)
            text += self.pick(self.t.sequence).format(rest=rest)
        return text

    def conditional(
        self, node: If, heads: Sequence[str], separators: Sequence[str], focus: str | None = None
    ) -> str:
        here = _in_focus(node.condition, focus)  # only the head: later links are else-arms
        if not self.plain and _not_first(node):
            top = heads is self.t.if_
            template = self.pick(self.t.if_not_first if top else self.t.check_not_first)
            return template.format(
                neg=self.condition(node.condition, negated=True, here=here),
                **{"else": self.arm(node.orelse)},
                then=self.arm(node.then, _focus_after(node)),
            )
        links = _ladder(node)
        flat = not any(_holds_if(n.then) for n in links) and not _holds_if(links[-1].orelse)
        separator = self.pick(separators if flat else separators[:1])
        text = self.pick(heads).format(
            cond=self.condition(node.condition, here=here),
            then=self.arm(node.then, _focus_of(node.condition)),
        )
        for previous, link in itertools.pairwise(links):
            template = self.else_template(self.t.else_if, previous)
            text += separator + template.format(
                neg=self.negation(template, previous, here and previous is node),
                cond=self.condition(link.condition),
                then=self.arm(link.then, _focus_of(link.condition)),
            )
        last = links[-1]
        template = self.else_template(self.t.else_, last)
        if template in self.t.else_target:
            return text + separator + template.format(ref=self.ref(last.orelse[0].target))
        negation = self.negation(template, last, here and last is node)
        return text + separator + template.format(neg=negation, **{"else": self.arm(last.orelse)})

    def else_template(self, options: Sequence[str], previous: If) -> str:
        """An else or else-if paraphrase; the last else-arm of one step, after a then-arm
        without a conditional, may also name only its target ("otherwise, the sofa")."""
        if _holds_if(previous.then):
            options = [o for o in options if "{neg}" in o]
        elif options is self.t.else_ and _is_one_step(previous.orelse) and not self.plain:
            options = [*options, *self.t.else_target]
        return self.pick(options)

    def negation(self, template: str, previous: If, here: bool) -> str:
        if "{neg}" not in template:
            return ""
        return self.condition(previous.condition, negated=True, here=here)


def _not_first(node: If) -> bool:
    """Whether ``node`` is said else-arm first: its then-arm holds a conditional and its
    else-arm none, so the then-arm, said last, needs no restated condition after it."""
    return _holds_if(node.then) and not _holds_if(node.orelse)


def _focus_after(node: If) -> str | None:
    """The room in focus for a then-arm said after its else-arm: the condition's, unless the
    else-arm names a room ("if the kitchen has no mug, go to the sofa in the hall. Otherwise,
    if it has no kettle, …": "it" could be the hall)."""
    named = any(isinstance(s, Go) and s.target.room is not None for s in node.orelse)
    return None if named else _focus_of(node.condition)


def _is_one_step(steps: tuple[Step, ...]) -> bool:
    return len(steps) == 1 and isinstance(steps[0], Go)


def _focus_of(cond: Condition) -> str | None:
    """The room a presence condition puts in focus for its then-arm (none for a relation)."""
    return cond.room if isinstance(cond, Exists) else None


def _in_focus(cond: Condition, focus: str | None) -> bool:
    """Whether ``cond`` is a presence check of the room in focus (said "it also has …")."""
    return focus is not None and isinstance(cond, Exists) and cond.room == focus
