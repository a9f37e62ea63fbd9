"""Instruction templates, kept as data: ``condvln/data/templates.json``, validated with pydantic.

Each construct (a navigation step, a condition, an if-head, an else clause, …) has a list of
paraphrases. A paraphrase is lower-case text with ``{slot}`` placeholders; the renderer fills the
slots and the parser's grammar is generated from the same strings, so a new paraphrase is one
line of JSON and parses back without touching code.

Object and room names are open vocabulary: the parser reads a name as any run of words that are
not *reserved* (``"the"``, ``"a"``, ``"is"``, ``"then"``, …). Every word before a name is
reserved, and no relation phrase ends with another one unless the extra words include a reserved
word, so where a name stops is never in doubt. Names may contain every other word, including
template words such as "of", "in", "up", "north", "near" or "case".

>>> t = load_templates()
>>> t.relations["north-east-and-up of"][0]
'above and to the northeast of'
>>> t.predicate_of_phrase["next to"]
'near'
>>> [indefinite_article(n) for n in ("armchair", "egg", "house plant", "tv stand", "ottoman")]
['an', 'an', 'a', 'a', 'an']
>>> [indefinite_article(n) for n in ("utensil holder", "hourglass", "umbrella stand", "mp3 player")]
['a', 'an', 'an', 'an']
"""

from __future__ import annotations

import functools
import itertools
import re
from importlib import resources
from typing import Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from condvln.errors import ConfigError
from condvln.graph.relations import PREDICATES

WORD_PATTERN = r"[a-z0-9]+(?:['-][a-z0-9]+)*"
"""One word of an instruction (the same pattern as the parser's ``WORD`` terminal)."""

_PIECE = re.compile(r"\{(\w+)\}|[a-z]+|[,;:.]|\s+|(.)")
_VOWELS = "aeiou"

#: construct → (required slots, optional slots)
SLOTS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "qualifier": (frozenset({"relation", "anchor"}), frozenset()),
    "room": (frozenset({"room"}), frozenset()),
    "exists": (frozenset({"a", "category", "room"}), frozenset()),
    "not_exists": (frozenset({"category", "room"}), frozenset({"a"})),
    "exists_here": (frozenset({"a", "category"}), frozenset()),
    "not_exists_here": (frozenset({"category"}), frozenset({"a"})),
    "relation": (frozenset({"subject", "relation", "target"}), frozenset()),
    "not_relation": (frozenset({"subject", "relation", "target"}), frozenset()),
    "go": (frozenset({"ref"}), frozenset()),
    "sequence": (frozenset({"rest"}), frozenset()),
    "then_to": (frozenset({"ref"}), frozenset()),
    "linear_first": (frozenset({"go"}), frozenset()),
    "linear_then": (frozenset({"go"}), frozenset()),
    "linear_finally": (frozenset({"go"}), frozenset()),
    "horizon": (frozenset({"if"}), frozenset()),
    "if": (frozenset({"cond", "then"}), frozenset()),
    "check": (frozenset({"cond", "then"}), frozenset()),
    "if_not_first": (frozenset({"neg", "else", "then"}), frozenset()),
    "check_not_first": (frozenset({"neg", "else", "then"}), frozenset()),
    "else": (frozenset({"else"}), frozenset({"neg"})),
    "else_target": (frozenset({"ref"}), frozenset()),
    "else_if": (frozenset({"cond", "then"}), frozenset({"neg"})),
    "sentence_separator": (frozenset(), frozenset()),
    "clause_separator": (frozenset(), frozenset()),
}
_NAME_SLOTS = frozenset({"category", "room", "anchor"})

Phrasing = Literal["seen", "all"]
"""Which paraphrases a :class:`Templates` holds: ``"seen"``, the ones train and val_seen are
worded with; ``"all"``, those and the held-out ones val_unseen and test may also use."""


def pieces(template: str) -> list[tuple[str, str]]:
    """Split a template into ``("word" | "punct" | "slot", text)`` pieces (spaces dropped).

    >>> pieces("check whether {cond}: if so, {then}")[:4]
    [('word', 'check'), ('word', 'whether'), ('slot', 'cond'), ('punct', ':')]
    """
    out = []
    for match in _PIECE.finditer(template):
        text = match.group(0)
        if match.group(2) is not None:
            raise ValueError(f"unexpected character {text!r} in template {template!r}")
        if match.group(1):
            out.append(("slot", match.group(1)))
        elif text in ",;:.":
            out.append(("punct", text))
        elif not text.isspace():
            out.append(("word", text))
    return out


class Articles(BaseModel):
    """The a / an rule's exceptions (see :func:`indefinite_article`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    a_prefixes: tuple[str, ...]
    an_prefixes: tuple[str, ...]
    initialism_an_letters: str


class Templates(BaseModel):
    """All paraphrase lists; field names are the constructs of :data:`SLOTS`.

    ``verbs`` are the words the renderer counts as verbs: no instruction uses one more than
    twice. ``exists_here`` / ``not_exists_here`` ask about the room in focus without naming it
    ("it also has a lamp", "there is no lamp there"); ``else_target`` names only the target of a
    one-step else-arm ("otherwise, the sofa"); ``if_not_first`` / ``check_not_first`` say a
    conditional's else-arm first, headed by the negated condition ("if there is no kettle in
    the kitchen, …. Otherwise, …"); see :mod:`condvln.program.render`.

    ``held_out`` holds, per construct, paraphrases train never shows: the packaged file's lists
    are the *seen* phrasings (``phrasing="seen"``), and :meth:`with_held_out` appends the
    held-out ones to them (``phrasing="all"``), which val_unseen and test may be worded with.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    version: str
    reserved: frozenset[str]
    verbs: frozenset[str]
    articles: Articles
    relations: dict[str, tuple[str, ...]]
    qualifier: tuple[str, ...]
    room: tuple[str, ...]
    exists: tuple[str, ...]
    not_exists: tuple[str, ...]
    exists_here: tuple[str, ...]
    not_exists_here: tuple[str, ...]
    relation: tuple[str, ...]
    not_relation: tuple[str, ...]
    go: tuple[str, ...]
    sequence: tuple[str, ...]
    then_to: tuple[str, ...]
    linear_first: tuple[str, ...]
    linear_then: tuple[str, ...]
    linear_finally: tuple[str, ...]
    horizon: tuple[str, ...]
    if_: tuple[str, ...] = Field(alias="if")
    check: tuple[str, ...]
    if_not_first: tuple[str, ...]
    check_not_first: tuple[str, ...]
    else_: tuple[str, ...] = Field(alias="else")
    else_target: tuple[str, ...]
    else_if: tuple[str, ...]
    sentence_separator: tuple[str, ...]
    clause_separator: tuple[str, ...]
    held_out: dict[str, tuple[str, ...]] = {}
    phrasing: Phrasing = "seen"

    def variants(self, construct: str) -> tuple[str, ...]:
        """The paraphrases of ``construct`` (a key of :data:`SLOTS`)."""
        return getattr(self, f"{construct}_" if construct in ("if", "else") else construct)

    @property
    def predicate_of_phrase(self) -> dict[str, str]:
        """Relation phrase → predicate name (the inverse of ``relations``)."""
        return {p: name for name, phrases in self.relations.items() for p in phrases}

    @property
    def keywords(self) -> frozenset[str]:
        """Every word the templates and relation phrases use."""
        words = {w for c in SLOTS for t in self.variants(c) for k, w in pieces(t) if k == "word"}
        words.update(w for ps in self.relations.values() for p in ps for w in p.split())
        return frozenset(words)

    @property
    def name_pattern(self) -> str:
        """Regex of an object or room name: words, none reserved and none starting a phrase.

        A name stops before a reserved word, before a relation phrase followed by "the", and
        before the words a template puts after a name ("in the", "has a").
        """
        word_end = r"(?![\w'-])"
        reserved = "|".join(sorted(self.reserved, key=len, reverse=True))
        phrases = "|".join(sorted(self.predicate_of_phrase, key=len, reverse=True))
        stops = [f"(?:{reserved}){word_end}", f"(?:{phrases}) the{word_end}"]
        stops += [f"{glue}{word_end}" for glue in sorted(self._glue_after_names())]
        stop = "|".join(stops)
        return f"(?!{stop}){WORD_PATTERN}(?: (?!{stop}){WORD_PATTERN})*"

    @functools.cached_property
    def held_out_phrasings(self) -> frozenset[str]:
        """Every held-out paraphrase (of any construct)."""
        return frozenset(t for phrasings in self.held_out.values() for t in phrasings)

    def with_held_out(self) -> Templates:
        """These templates with the held-out paraphrases appended to their constructs' lists
        (``phrasing="all"``); the seen paraphrases keep their places, and the seen templates
        stay the packaged lists as they are."""
        if self.phrasing == "all":
            return self
        data = self.model_dump(by_alias=True)
        for construct, phrasings in self.held_out.items():
            data[construct] = (*data[construct], *phrasings)
        return Templates.model_validate({**data, "phrasing": "all"})

    @functools.cached_property
    def name_regex(self) -> re.Pattern[str]:
        """:attr:`name_pattern`, compiled (once per templates)."""
        return re.compile(self.name_pattern)

    def is_name(self, text: str) -> bool:
        """Whether :attr:`name_regex` matches all of ``text`` (answers kept: the renderer asks
        for every name it writes, and a scene's names recur)."""
        known = self._names_checked
        if text not in known:
            known[text] = self.name_regex.fullmatch(text) is not None
        return known[text]

    @functools.cached_property
    def _names_checked(self) -> dict[str, bool]:
        return {}

    def _glue_after_names(self) -> set[str]:
        """Non-reserved words a template puts right after a name, with the word that ends them."""
        glue = set()
        runs = [pieces(t) for t in (*self.qualifier, *self.room)]
        for construct in SLOTS:
            for template in self.variants(construct):
                parts = pieces(template)
                runs += [
                    parts[i + 1 :]
                    for i, (k, v) in enumerate(parts)
                    if k == "slot" and v in _NAME_SLOTS
                ]
        for run in runs:
            words = []
            for kind, text in run:
                if kind == "slot" and text == "a":
                    words.append("(?:a|an)")
                if kind != "word":
                    break
                words.append(text)
                if text in self.reserved:
                    break
            if words and words[0] not in self.reserved:
                glue.add(" ".join(words))
        return glue

    @model_validator(mode="after")
    def _consistent(self) -> Templates:
        for construct in SLOTS:
            for template in self.variants(construct):
                _check_template(construct, template, self.reserved)
            if not self.variants(construct):
                raise ValueError(f"'{construct}' needs at least one paraphrase")
        for construct in ("else", "else_if"):
            if not any("{neg}" in t for t in self.variants(construct)):
                raise ValueError(
                    f"'{construct}' needs a paraphrase restating the condition ({{neg}})"
                )
        _check_relations(self.relations, self.reserved)
        _check_held_out(self)
        return self


def _check_held_out(t: Templates) -> None:
    """Held-out paraphrases: of known constructs, valid templates, new in ``"seen"`` templates
    and present in ``"all"`` ones."""
    for construct, phrasings in t.held_out.items():
        if construct not in SLOTS:
            raise ValueError(f"held_out: unknown construct {construct!r}")
        listed = set(t.variants(construct))
        for template in phrasings:
            _check_template(construct, template, t.reserved)
            if (template in listed) != (t.phrasing == "all"):
                where = "also in" if t.phrasing == "seen" else "missing from"
                raise ValueError(
                    f"held_out {construct} paraphrase {template!r} is {where} its list"
                )


def _check_template(construct: str, template: str, reserved: frozenset[str]) -> None:
    parts = pieces(template)
    slots = [text for kind, text in parts if kind == "slot"]
    required, optional = SLOTS[construct]
    if len(set(slots)) != len(slots) or not required <= set(slots) <= required | optional:
        raise ValueError(f"{construct} template {template!r} must use the slots {sorted(required)}")
    if construct.endswith("separator") and [k for k, _ in parts] != ["punct"]:
        raise ValueError(f"separator {template!r} must be one punctuation mark")
    for (kind, before), (next_kind, slot) in itertools.pairwise(parts):
        is_name = next_kind == "slot" and slot in _NAME_SLOTS
        if is_name and not (before == "a" if kind == "slot" else before in reserved):
            raise ValueError(
                f"{construct} template {template!r}: a reserved word must precede {{{slot}}}"
            )


def _check_relations(relations: dict[str, tuple[str, ...]], reserved: frozenset[str]) -> None:
    missing = set(PREDICATES) - set(relations)
    unknown = set(relations) - set(PREDICATES)
    if missing or unknown:
        raise ValueError(
            f"relations must cover the predicates: missing {sorted(missing)}, unknown {sorted(unknown)}"
        )
    phrases = [p.split() for ps in relations.values() for p in ps]
    if len({tuple(p) for p in phrases}) != len(phrases):
        raise ValueError("relation phrases must be unique (the table must be bijective)")
    # A name's last words followed by a phrase (up to its next reserved word) must never read
    # as another phrase: that would move the end of the name.
    heads = {
        tuple(p[:j])
        for p in phrases
        for j in range(1, len(p) + 1)
        if j == len(p) or p[j] in reserved
    }
    for long in phrases:
        for head in heads:
            extra = long[: len(long) - len(head)]
            if extra and tuple(long[len(extra) :]) == head and not reserved & set(extra):
                raise ValueError(
                    f"relation phrase {' '.join(long)!r} ends with {' '.join(head)!r}, the start of "
                    "another phrase; the extra words need a reserved word"
                )


def parse_templates(data: bytes) -> Templates:
    """Validate template JSON bytes; a :class:`ConfigError` names the first problem."""
    try:
        return Templates.model_validate(orjson.loads(data))
    except orjson.JSONDecodeError as exc:
        raise ConfigError(f"templates: not valid JSON ({exc})") from None
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "templates"
        raise ConfigError(f"templates: field '{where}': {err['msg']}") from None


@functools.cache
def load_templates(phrasing: Phrasing = "all") -> Templates:
    """The packaged templates (``condvln/data/templates.json``), parsed once and cached:
    every paraphrase (``"all"``, what the parser reads) or the seen ones only (``"seen"``,
    what train and val_seen are worded with; see :class:`Templates`).

    >>> seen, every = load_templates("seen"), load_templates()
    >>> every.go[: len(seen.go)] == seen.go, "get to {ref}" in every.go, "get to {ref}" in seen.go
    (True, True, False)
    """
    if phrasing == "all":
        return load_templates("seen").with_held_out()
    if phrasing != "seen":
        raise ConfigError(f"phrasing must be 'seen' or 'all', got {phrasing!r}")
    data = resources.files("condvln").joinpath("data/templates.json").read_bytes()
    return parse_templates(data)


def indefinite_article(name: str, articles: Articles | None = None) -> str:
    """``"a"`` or ``"an"`` for ``name``, by the sound of its first word.

    The rule: a first word with no vowel letter (``aeiouy``) is an initialism read letter by
    letter ("a tv stand", "an mp3 player"), so it takes "an" when its first letter's name starts
    with a vowel sound (f, h, l, m, n, r, s, x, a, e, i, o). Otherwise a word starting with a
    listed consonant-sound prefix takes "a" ("a utensil holder", "a one-way mirror"), one with a
    listed silent-h prefix takes "an" ("an hourglass"), and any other word takes "an" exactly
    when it starts with a vowel letter ("an egg", "an ottoman", "a house plant").
    """
    rules = articles or load_templates().articles
    word = name.split()[0].lower()
    if not set(word) & set(_VOWELS + "y"):
        return "an" if word[0] in rules.initialism_an_letters else "a"
    if word.startswith(rules.a_prefixes):
        return "a"
    if word.startswith(rules.an_prefixes):
        return "an"
    return "an" if word[0] in _VOWELS else "a"
