"""How instructions read: compass words, anchors, ambiguity, length, vocabulary (a script).

Reads a generated dataset folder (every split) and prints, per episode:

* the share whose text uses a compass word (north, southeast, …);
* the share holding a description whose anchor is a smaller movable item (placed on a surface)
  than the object described, and the share whose anchor rests on the object described
  ("the sink beneath the dish sponge");
* the share holding a description that fits more than one object in its scope — the whole house
  when no room is named — judged here from object geometry, independently of the generator
  (compass: the anchor-to-object bearing lies in the 45° sector; near / far from: the
  box-to-box gap against the relation config's thresholds; above / below: footprints overlap
  by at least the config's
  ``overlap_fails`` share and the object is higher / lower);
* the word-count distribution (words = whitespace-separated), the share above 80 words,
  the vocabulary size and the paraphrase templates per construct;
* how a person would phrase it (issue 32): the share of instructions using one verb of
  :data:`VERBS` more than twice, holding a chain of two relative clauses ("the cabinet that is
  above the sink that is in the kitchen"), asking three presence checks of one room, asking a
  presence condition outside the informative band (the catalogue's probability that the room
  type holds the category outside :data:`PRESENCE_BAND`), or relating two objects a person
  would not relate (:meth:`SceneView.related`: a height comparison between objects neither on
  one support nor one resting on the other, not placed together by the catalogue — directly
  or through what they rest on — and more than :data:`SIDE_BY_SIDE` apart; any other relation
  across a wall: the line between their centres leaves the room's floor grown by
  :data:`WALL_TOLERANCE`); and per Table-1
  category the word counts and the Flesch–Kincaid grade (``textstat``);
* the held-out phrasing split (issue 32 item 3): per split, the episodes worded with seen
  paraphrases only and those using a held-out one (``phrasing_seen``), and the parse accuracy
  (the text reads back as its program) of the full parser and of the parser that knows only
  the seen paraphrases, as the ``neurosymbolic_train_phrasing`` row reads.

    PYTHONPATH=src python benchmarks/bench_language.py /tmp/ds
    PYTHONPATH=src python benchmarks/bench_language.py --generate 20x30 --out /tmp/ds
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import re
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import shapely
import textstat

from condvln.dataset.generate import GenerateConfig, generate_dataset
from condvln.graph import RelationConfig
from condvln.program.ast import Exists, Ref, Relation, iter_ifs, program_from_dict
from condvln.program.parse import InstructionParseError, parse
from condvln.program.templates import SLOTS, load_templates
from condvln.scene.model import SceneObject
from condvln.scene.serialize import load_scene
from condvln.synth.priors import CommonsensePrior
from condvln.vlnce import available_splits, load_split

COMPASS_WORD = re.compile(r"\b(north|south|east|west|northeast|northwest|southeast|southwest)\b")
MAX_WORDS = 80
BEARING = {
    name: 45.0 * k
    for k, name in enumerate(
        ("north", "north-east", "east", "south-east", "south", "south-west", "west", "north-west")
    )
}
"""Compass word → bearing clockwise from north (degrees)."""
VERBS = frozenset((
    "go", "head", "walk", "make", "navigate", "move", "proceed", "continue", "approach", "travel", "reach",
    "find", "stand", "stop", "check", "see", "look", "get", "take", "determine", "establish",
))  # fmt: skip
"""The verbs of the navigation and check templates (``data/templates.json``)."""
RELATIVE_CHAIN = re.compile(r"\b(?:that|which) (?:is|are)\b[^,;:.]*?\b(?:that|which) (?:is|are)\b")
"""Two relative clauses in a row without a break: "the X that is … the Y that is in …"."""
PRESENCE_BAND = (0.15, 0.85)
"""Catalogue probabilities of a presence condition a person would find worth asking."""
SIDE_BY_SIDE = 1.0
"""Metres of box-to-box gap within which two objects are compared in height at a glance."""
WALL_TOLERANCE = 0.3
"""Metres the floor outline grows by for the line of sight (objects on or in a wall)."""


def read_gz(path: Path) -> Any:
    """A gzipped JSON file."""
    with gzip.open(path) as fh:
        return json.load(fh)


def _gap(a: SceneObject, b: SceneObject) -> float:
    """Box-to-box distance (centre distance when a box is missing)."""
    ba, bb = a.box, b.box
    if ba is None or bb is None:
        return math.dist(a.center, b.center)
    d = [
        max(lo2 - hi1, lo1 - hi2, 0.0)
        for lo1, hi1, lo2, hi2 in zip(ba.min, ba.max, bb.min, bb.max, strict=True)
    ]
    return math.hypot(*d)


def _footprints_overlap(a: SceneObject, b: SceneObject, cfg: RelationConfig) -> bool:
    """Footprints overlap by at least ``overlap_fails`` of the smaller one (boxes needed)."""
    ba, bb = a.box, b.box
    if ba is None or bb is None:
        return math.hypot(a.center[0] - b.center[0], a.center[2] - b.center[2]) < 0.3
    inter = [max(0.0, min(ba.max[k], bb.max[k]) - max(ba.min[k], bb.min[k])) for k in (0, 2)]
    smaller = min(ba.size[0] * ba.size[2], bb.size[0] * bb.size[2])
    return inter[0] * inter[1] >= cfg.overlap_fails * smaller


def fits(obj: SceneObject, relation: str, anchor: SceneObject, cfg: RelationConfig) -> bool:
    """Whether a reader could take ``obj`` for "the … {relation} the {anchor}" (generous)."""
    if relation.removesuffix(" of") in BEARING:
        dx, dz = obj.center[0] - anchor.center[0], obj.center[2] - anchor.center[2]
        bearing = math.degrees(math.atan2(dx, -dz)) % 360.0  # north = -Z, east = +X
        centre = BEARING[relation.removesuffix(" of")]
        return abs((bearing - centre + 180.0) % 360.0 - 180.0) < 22.5
    if relation == "near":
        return _gap(obj, anchor) < cfg.near_fails
    if relation == "far from":
        return _gap(obj, anchor) > cfg.far_fails
    if relation in ("above", "below"):
        higher = obj.center[1] > anchor.center[1]
        return _footprints_overlap(obj, anchor, cfg) and higher == (relation == "above")
    raise ValueError(f"no independent reading of {relation!r}")


def _volume(obj: SceneObject) -> float:
    box = obj.box
    return float(np.prod(box.size)) if box is not None else 0.0


def refs_of(program: Any) -> list[Ref]:
    """Every description in a program (navigation targets and condition operands)."""
    out: list[Ref] = []

    def walk(steps: tuple) -> None:
        for step in steps:
            if hasattr(step, "target"):
                out.append(step.target)
            else:
                walk(step.then)
                walk(step.orelse)

    walk(program.steps)
    for node in iter_ifs(program.steps):
        if isinstance(node.condition, Relation):
            out += [node.condition.subject, node.condition.target]
    return out


def verb_overused(text: str) -> bool:
    """Whether one verb of :data:`VERBS` occurs more than twice in ``text``."""
    counts = Counter(w for w in re.findall(r"[a-z]+", text.lower()) if w in VERBS)
    return max(counts.values(), default=0) > 2


def presence_checks(program: Any, prior: CommonsensePrior) -> tuple[int, int]:
    """The most presence conditions asked of one room, and how many presence conditions lie
    outside :data:`PRESENCE_BAND`."""
    conditions = [n.condition for n in iter_ifs(program.steps) if isinstance(n.condition, Exists)]
    per_room = Counter(c.room for c in conditions)
    low, high = PRESENCE_BAND
    outside = sum(not low <= prior.probability(c) <= high for c in conditions)
    return max(per_room.values(), default=0), outside


class SceneView:
    """Objects of a scene by room type and category, for the independent reading."""

    def __init__(self, scene: Any) -> None:
        self.scene = scene
        self.room_of = {o.id: r for r in scene.rooms for o in r.objects}
        self.objects = {o.id: o for o in scene.objects()}

    def related(
        self, a: SceneObject, predicate: str, b: SceneObject, anchors: dict[str, set[str]]
    ) -> bool:
        """Whether a person would ask ``a <predicate> b``: for higher / lower than, one rests
        on the other or both on one receptacle, the catalogue places them (or what they rest
        on) together, or they are at most :data:`SIDE_BY_SIDE` apart; for the others, no wall
        between their centres."""
        if predicate not in ("higher than", "lower than"):
            return self._in_sight(a, b)
        if (a.parent_id is not None and a.parent_id in (b.parent_id, b.id)) or b.parent_id == a.id:
            return True
        units_a, units_b = self._unit(a), self._unit(b)
        if any(
            x in anchors.get(y, ()) or y in anchors.get(x, ()) for x in units_a for y in units_b
        ):
            return True
        return _gap(a, b) <= SIDE_BY_SIDE

    def _unit(self, obj: SceneObject) -> set[str]:
        """The object's category and that of what it rests on."""
        parent = self.objects.get(obj.parent_id) if obj.parent_id else None
        return {obj.category} | ({parent.category} if parent is not None else set())

    def _in_sight(self, a: SceneObject, b: SceneObject) -> bool:
        room = self.room_of[a.id]
        if room is not self.room_of[b.id]:
            return False
        if room.floor_polygon is None:
            return True
        floor = shapely.Polygon(room.floor_polygon).buffer(WALL_TOLERANCE)
        return bool(floor.covers(shapely.LineString([a.center[::2], b.center[::2]])))

    def unrelated_relations(
        self, program: Any, cfg: RelationConfig, anchors: dict[str, set[str]]
    ) -> tuple[int, int]:
        """Relation conditions of ``program`` whose two descriptions each have one reading, and
        how many of those relate objects a person would not relate (:meth:`related`)."""
        judged = unrelated = 0
        for node in iter_ifs(program.steps):
            if not isinstance(node.condition, Relation):
                continue
            subject, _ = self.readings(node.condition.subject, cfg)
            target, _ = self.readings(node.condition.target, cfg)
            if len(subject) == 1 and len(target) == 1:
                judged += 1
                predicate = node.condition.predicate
                unrelated += not self.related(subject[0], predicate, target[0], anchors)
        return judged, unrelated

    def scope(self, room_type: str | None) -> list[SceneObject]:
        rooms = [r for r in self.scene.rooms if room_type is None or r.room_type == room_type]
        return [o for r in rooms for o in r.objects]

    def readings(
        self, ref: Ref, cfg: RelationConfig
    ) -> tuple[list[SceneObject], SceneObject | None]:
        """Objects the description could mean, and its anchor (``None`` without a qualifier)."""
        pool = self.scope(ref.room)
        candidates = [o for o in pool if o.category == ref.category]
        if ref.anchor is None:
            return candidates, None
        anchors = [o for o in pool if o.category == ref.anchor]
        if len(anchors) != 1:
            return candidates, None  # an ambiguous anchor: every candidate is a reading
        (anchor,) = anchors
        return [o for o in candidates if fits(o, ref.relation, anchor, cfg)], anchor


def text_flags(text: str) -> dict[str, bool]:
    """The measurements of the text alone (see the module docstring)."""
    lower = text.lower()
    return {
        "over_80_words": len(text.split()) > MAX_WORDS,
        "compass_word": bool(COMPASS_WORD.search(lower)),
        "verb_over_twice": verb_overused(text),
        "relative_clause_chain": bool(RELATIVE_CHAIN.search(lower)),
    }


def program_flags(
    program: Any, view: SceneView, cfg: RelationConfig, prior: CommonsensePrior
) -> tuple[dict[str, bool], int, int]:
    """The measurements of the program in its scene, and the relation conditions judged and
    judged unrelated (:meth:`SceneView.unrelated_relations`)."""
    smaller = resting = ambiguous = False
    for ref in refs_of(program):
        readings, anchor = view.readings(ref, cfg)
        ambiguous |= len(readings) != 1
        if anchor is None or len(readings) != 1:
            continue
        (obj,) = readings
        movable = anchor.placement == "surface" or anchor.parent_id is not None
        smaller |= movable and _volume(anchor) < _volume(obj)
        resting |= anchor.parent_id == obj.id
    most_in_one_room, outside = presence_checks(program, prior)
    judged, unrelated = view.unrelated_relations(program, cfg, prior.anchors)
    flags = {
        "anchor_smaller_movable": smaller,
        "anchor_rests_on_referent": resting,
        "non_unique_description": ambiguous,
        "three_presence_checks_in_one_room": most_in_one_room >= 3,
        "presence_outside_band": outside > 0,
        "relation_unrelated_objects": unrelated > 0,
    }
    return flags, judged, unrelated


def audit(folder: Path) -> dict[str, Any]:
    """The language measurements of a dataset folder (see the module docstring)."""
    scenes: dict[str, SceneView] = {}
    cfg_cache: dict[str, RelationConfig] = {}
    prior = CommonsensePrior()
    by_category: dict[str, list[tuple[int, float]]] = {}
    relations = Counter[str]()
    vocab: set[str] = set()
    flags: Counter[str] = Counter()
    phrasing: dict[str, Counter[str]] = {}
    for split in available_splits(folder):
        data = load_split(folder, split)
        vocab.update(data.get("instruction_vocab", {}).get("word_list", []))
        answers = read_gz(folder / "test" / "test_answers.json.gz") if split == "test" else {}
        for ep in data["episodes"]:
            info = (ep.get("info") or answers[str(ep["episode_id"])]["info"])["condvln"]
            text = ep["instruction"]["instruction_text"]
            grade = textstat.flesch_kincaid_grade(text)
            by_category.setdefault(info["category"], []).append((len(text.split()), grade))
            key = json.dumps(info["config"]["relations"], sort_keys=True)
            cfg = cfg_cache.setdefault(key, RelationConfig(**info["config"]["relations"]))
            if info["scene_file"] not in scenes:
                scenes[info["scene_file"]] = SceneView(load_scene(folder / info["scene_file"]))
            program = program_from_dict(info["program"])
            found, judged, unrelated = program_flags(
                program, scenes[info["scene_file"]], cfg, prior
            )
            flags.update(k for k, v in (text_flags(text) | found).items() if v)
            relations.update(judged=judged, unrelated=unrelated)
            phrasing.setdefault(split, Counter()).update(phrasing_reads(text, info))
    summary = _summary(by_category, flags, relations, vocab)
    return summary | {"phrasing": {s: _phrasing_row(c) for s, c in phrasing.items()}}


def _reads(text: str, program: dict[str, Any], phrasing: Any) -> bool:
    try:
        return parse(text, phrasing).to_dict() == program
    except InstructionParseError:
        return False


def phrasing_reads(text: str, info: dict[str, Any]) -> Counter[str]:
    """Counts of one episode: its phrasing group, and whether each parser reads it back."""
    group = "seen" if info.get("phrasing_seen", True) else "unseen"
    reads = {p: _reads(text, info["program"], p) for p in ("all", "seen")}
    return Counter({group: 1, **{f"{group}_read_{p}": int(ok) for p, ok in reads.items()}})


def _phrasing_row(counts: Counter[str]) -> dict[str, Any]:
    """Episodes per phrasing group and each parser's parse accuracy (percent) on them."""
    row: dict[str, Any] = {}
    for group in ("seen", "unseen"):
        n = counts[group]
        row[group] = n
        for p in ("all", "seen"):
            read = counts[f"{group}_read_{p}"]
            row[f"{group}_parse_accuracy_{p}_parser"] = round(100.0 * read / n, 1) if n else None
    return row


def _summary(
    by_category: dict[str, list[tuple[int, float]]],
    flags: Counter[str],
    relations: Counter[str],
    vocab: set[str],
) -> dict[str, Any]:
    """The JSON report of :func:`audit`."""
    words = [n for rows in by_category.values() for n, _ in rows]
    arr = np.asarray(words)
    total = len(words)
    templates = load_templates()
    return {
        "episodes": total,
        "categories": {name: len(rows) for name, rows in sorted(by_category.items())},
        "percent": {k: round(100.0 * v / max(total, 1), 1) for k, v in sorted(flags.items())},
        "words": {
            "mean": round(float(arr.mean()), 1),
            "p50": float(np.quantile(arr, 0.5)),
            "p90": float(np.quantile(arr, 0.9)),
            "p99": float(np.quantile(arr, 0.99)),
            "max": int(arr.max()),
            "histogram_by_10": dict(sorted(Counter(int(w) // 10 * 10 for w in words).items())),
        },
        "relations_judged": relations["judged"],
        "relations_unrelated_percent": round(
            100.0 * relations["unrelated"] / max(relations["judged"], 1), 1
        ),
        "per_category": {name: _category_row(rows) for name, rows in sorted(by_category.items())},
        "vocabulary_size": len(vocab),
        "templates": {c: len(templates.variants(c)) for c in SLOTS},
    }


def _category_row(rows: list[tuple[int, float]]) -> dict[str, float]:
    """Word-count mean / median / p90 and the mean Flesch–Kincaid grade of one category."""
    counts = np.array([n for n, _ in rows])
    return {
        "n": len(rows),
        "words_mean": round(float(counts.mean()), 1),
        "words_p50": float(np.quantile(counts, 0.5)),
        "words_p90": float(np.quantile(counts, 0.9)),
        "fk_grade": round(float(np.mean([g for _, g in rows])), 1),
    }


def main() -> None:
    """Measure a dataset folder (or generate one first) and print the numbers as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, nargs="?")
    parser.add_argument("--generate", default=None, help="SCENESxPER_SCENE, e.g. 20x30")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    folder = args.folder
    if args.generate:
        scenes, per_scene = (int(x) for x in args.generate.split("x"))
        folder = args.out or Path(tempfile.mkdtemp(prefix="condvln-lang-")) / "dataset"
        config = GenerateConfig(scenes=scenes, per_scene=per_scene, seed=args.seed)
        generate_dataset(config, folder, overwrite=True)
    if folder is None:
        parser.error("give a dataset folder or --generate")
    print(json.dumps(audit(folder), indent=1))


if __name__ == "__main__":
    main()
