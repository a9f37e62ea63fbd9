"""Instructions a person would write (issue 15, item 4), checked independently of the generator.

The readings here are this file's own: whether an object fits a qualifier is judged from the
objects' boxes and centres (a compass word by the horizontal bearing from the anchor, "near" /
"far from" by the box-to-box gap, above / below by a footprint overlap of at least
``overlap_fails`` of the smaller footprint, all against the default relation thresholds), not by the referring
expression code or the interpreter.
"""

from __future__ import annotations

import gzip
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest

from condvln.dataset.generate import GenerateConfig, generate_dataset
from condvln.graph import RelationConfig, build_scene_graph
from condvln.program.ast import Exists, Go, If, Program, Ref, Relation, iter_ifs, program_from_dict
from condvln.program.interpret import ProgramError, denote
from condvln.program.parse import parse
from condvln.program.render import MAX_WORDS, compact_words, render, render_compact
from condvln.program.templates import load_templates
from condvln.scene.model import Room, Scene, SceneObject
from condvln.scene.serialize import load_scene
from condvln.scene.sources import load
from condvln.synth.refexpr import describe
from condvln.vlnce import available_splits, load_split

BEARING = {
    name: 45.0 * k
    for k, name in enumerate(
        ("north", "north-east", "east", "south-east", "south", "south-west", "west", "north-west")
    )
}
COMPASS_WORD = re.compile(r"\b(north|south|east|west)(east|west)?\b")
TEMPLATES_BEFORE = {  # paraphrases per construct before issue 15
    "qualifier": 2,
    "room": 1,
    "exists": 2,
    "not_exists": 2,
    "relation": 2,
    "not_relation": 2,
    "go": 6,
    "sequence": 2,
    "linear_first": 2,
    "linear_then": 2,
    "linear_finally": 2,
    "horizon": 3,
    "if": 2,
    "check": 4,
    "else": 3,
    "else_if": 3,
}
CFG = RelationConfig()


# --- an independent reading of descriptions -------------------------------------------------


def _gap(a: SceneObject, b: SceneObject) -> float:
    ba, bb = a.box, b.box
    if ba is None or bb is None:
        return math.dist(a.center, b.center)
    return math.hypot(
        *(
            max(lo2 - hi1, lo1 - hi2, 0.0)
            for lo1, hi1, lo2, hi2 in zip(ba.min, ba.max, bb.min, bb.max, strict=True)
        )
    )


def _fits(obj: SceneObject, relation: str, anchor: SceneObject) -> bool:
    """Could a reader take ``obj`` for "the … {relation} the {anchor}"? (generously)"""
    if relation.removesuffix(" of") in BEARING:
        dx, dz = obj.center[0] - anchor.center[0], obj.center[2] - anchor.center[2]
        bearing = math.degrees(math.atan2(dx, -dz)) % 360.0  # north = -Z, east = +X
        off = abs((bearing - BEARING[relation.removesuffix(" of")] + 180.0) % 360.0 - 180.0)
        return off < 22.5
    if relation == "near":
        return _gap(obj, anchor) < CFG.near_fails
    if relation == "far from":
        return _gap(obj, anchor) > CFG.far_fails
    if relation in ("above", "below"):
        ba, bb = obj.box, anchor.box
        inter = [max(0.0, min(ba.max[k], bb.max[k]) - max(ba.min[k], bb.min[k])) for k in (0, 2)]
        smaller = min(ba.size[0] * ba.size[2], bb.size[0] * bb.size[2])
        overlap = inter[0] * inter[1] >= CFG.overlap_fails * smaller
        return overlap and (obj.center[1] > anchor.center[1]) == (relation == "above")
    raise AssertionError(f"no reading of {relation!r}")


def readings(scene: Scene, ref: Ref) -> tuple[list[SceneObject], SceneObject | None]:
    """Objects of the scene (or the named room) ``ref`` could mean, and its anchor."""
    rooms = [r for r in scene.rooms if ref.room is None or r.room_type == ref.room]
    pool = [o for r in rooms for o in r.objects]
    candidates = [o for o in pool if o.category == ref.category]
    if ref.anchor is None:
        return candidates, None
    anchors = [o for o in pool if o.category == ref.anchor]
    if len(anchors) != 1:
        return candidates, None
    return [o for o in candidates if _fits(o, ref.relation, anchors[0])], anchors[0]


def _volume(obj: SceneObject) -> float:
    return math.prod(obj.box.size) if obj.box is not None else 0.0


def _bad_anchor(obj: SceneObject, anchor: SceneObject) -> bool:
    movable = anchor.placement == "surface" or anchor.parent_id is not None
    return anchor.parent_id == obj.id or (movable and _volume(anchor) < _volume(obj))


def refs_of(program: Program) -> list[Ref]:
    """Every description of a program: navigation targets and relation operands."""
    out: list[Ref] = []

    def walk(steps: tuple) -> None:
        for step in steps:
            if isinstance(step, Go):
                out.append(step.target)
            else:
                walk(step.then)
                walk(step.orelse)

    walk(program.steps)
    for node in iter_ifs(program.steps):
        if isinstance(node.condition, Relation):
            out += [node.condition.subject, node.condition.target]
    return out


# --- referring expressions on houses --------------------------------------------------------


@pytest.fixture(scope="module")
def houses() -> list[Scene]:
    return [load("procedural", str(seed)) for seed in range(30)]


def test_descriptions_fit_one_object_house_wide_unless_a_room_is_named(houses) -> None:
    qualified = 0
    for scene in houses:
        graph = build_scene_graph(scene)
        for obj in scene.objects():
            ref = describe(graph, obj.id)
            if ref is None:
                continue
            qualified += ref.anchor is not None and ref.room is None
            found, _ = readings(scene, ref)
            assert [o.id for o in found] == [obj.id], (scene.id, ref, [o.id for o in found])
    assert qualified > 100  # room-less qualified descriptions are still used


def test_anchor_is_never_a_smaller_movable_item_or_resting_on_the_referent(houses) -> None:
    anchored = 0
    for scene in houses:
        graph = build_scene_graph(scene)
        for obj in scene.objects():
            ref = describe(graph, obj.id)
            if ref is None or ref.anchor is None:
                continue
            anchored += 1
            _, anchor = readings(scene, ref)
            assert anchor is not None and not _bad_anchor(obj, anchor), (scene.id, ref)
    assert anchored > 200


def _sponge_scene() -> Scene:
    """Two sinks in a kitchen, a dish sponge resting in one of them, a fridge between them."""

    def obj(oid, category, center, size, **kw) -> SceneObject:
        return SceneObject(oid, category, category, center, size, **kw)

    kitchen = Room(
        id="k",
        room_type="kitchen",
        label="Kitchen",
        floor_polygon=((0.0, 0.0), (6.0, 0.0), (6.0, 4.0), (0.0, 4.0)),
        objects=(
            obj("sink_a", "sink", (1.0, 0.8, 0.5), (0.6, 0.3, 0.5), placement="floor"),
            obj("sink_b", "sink", (5.0, 0.8, 0.5), (0.6, 0.3, 0.5), placement="floor"),
            obj(
                "sponge",
                "dish sponge",
                (1.0, 0.9, 0.5),
                (0.1, 0.04, 0.07),
                placement="surface",
                parent_id="sink_a",
            ),
            obj("fridge", "fridge", (3.0, 0.9, 0.5), (0.8, 1.8, 0.7), placement="floor"),
        ),
    )
    return Scene(id="test/sponge", source="test", rooms=(kitchen,))


def test_the_sink_is_not_described_by_the_sponge_in_it() -> None:
    graph = build_scene_graph(_sponge_scene())
    ref = describe(graph, "sink_a")
    assert ref is not None and ref.anchor == "fridge"  # "the sink west of the fridge"
    assert ref.relation == "west of"
    assert describe(graph, "sponge") == Ref("dish sponge")


def _denotes(graph, ref: Ref) -> list[str] | None:
    """The interpreter's objects for ``ref`` (``None`` when it refuses: undecided, ambiguous)."""
    try:
        return denote(graph, ref)
    except ProgramError:
        return None


def test_compass_only_when_no_room_or_semantic_qualifier_singles_the_object_out(houses) -> None:
    compass = 0
    for scene in houses:
        graph = build_scene_graph(scene)
        for obj in scene.objects():
            ref = describe(graph, obj.id)
            if (
                ref is None
                or ref.relation is None
                or ref.relation.removesuffix(" of") not in BEARING
            ):
                continue
            compass += 1
            room = scene.room_of(obj.id)
            scopes = [None] + [room.room_type] * (
                sum(r.room_type == room.room_type for r in scene.rooms) == 1
            )
            options = [Ref(obj.category, s) for s in scopes]
            options += [
                Ref(obj.category, s, p, a.category)
                for s in scopes
                for a in room.objects
                if a.category != obj.category and not _bad_anchor(obj, a)
                for p in ("near", "far from", "above", "below")
            ]
            for option in options:
                found, _ = readings(scene, option)
                assert not (_denotes(graph, option) == [obj.id] and len(found) == 1), (ref, option)
    assert compass > 10


# --- templates and rendering ----------------------------------------------------------------


def test_three_times_the_paraphrases_of_every_construct() -> None:
    templates = load_templates()
    for construct, before in TEMPLATES_BEFORE.items():
        assert len(templates.variants(construct)) >= 3 * before, construct


def _deep() -> Program:
    names = ["chest of drawers", "toilet paper hanger", "laundry hamper", "garbage can"]
    a, b, c = (Exists(n, "laundry room") for n in names[:3])
    goes = [Go(Ref(n, "living room", "far from", "television stand")) for n in names]
    w1, w2 = (Go(Ref(n, None, "north-east of", "kitchen island")) for n in ("sofa", "bed"))
    inner = If(c, (goes[0],), (goes[1],))
    return Program((w1, w2, If(a, (If(b, (inner,), (goes[2],)),), (goes[3],))))


def test_long_programs_render_within_the_limit_or_compactly() -> None:
    program = _deep()
    full = [len(render(program, seed).split()) for seed in range(20)]
    shortest = compact_words(program)
    assert shortest <= min(full)
    assert all(compact_words(program) == len(render_compact(program, s).split()) for s in range(5))
    for seed in range(20):
        limit = shortest + 3
        text = render(program, seed, max_words=limit)
        assert len(text.split()) <= limit and parse(text) == program
    assert max(full) > shortest  # the limit did something


def test_arms_of_one_to_three_targets_use_every_sequencing_paraphrase() -> None:
    templates = load_templates()
    seen: set[str] = set()
    cond = Exists("kettle", "kitchen")
    for n in (1, 2, 3):
        arm = tuple(Go(Ref(c)) for c in ("sofa", "lamp", "bed")[:n])
        program = Program((If(cond, arm, (Go(Ref("desk")),)),))
        for seed in range(80):
            text = render(program, seed).lower()
            assert parse(text) == program, text
            seen.update(s for s in templates.sequence if s.format(rest="").rstrip() in text)
    assert seen == set(templates.sequence)


# --- a generated dataset --------------------------------------------------------------------


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("lang") / "ds"
    generate_dataset(GenerateConfig(scenes=12, per_scene=30, seed=5), out, workers=1)
    return out


def _episodes(folder: Path) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    out = []
    for split in available_splits(folder):
        answers = {}
        if split == "test":
            with gzip.open(folder / "test" / "test_answers.json.gz") as fh:
                answers = json.load(fh)
        for ep in load_split(folder, split)["episodes"]:
            info = (ep.get("info") or answers[str(ep["episode_id"])]["info"])["condvln"]
            out.append((ep, info))
    return out


@pytest.mark.slow
def test_dataset_reads_like_directions(dataset: Path) -> None:
    episodes = _episodes(dataset)
    assert len(episodes) > 100
    scenes: dict[str, Scene] = {}
    compass = 0
    for ep, info in episodes:
        text = ep["instruction"]["instruction_text"]
        program = program_from_dict(info["program"])
        assert len(text.split()) <= MAX_WORDS, text
        assert parse(text) == program, text
        compass += bool(COMPASS_WORD.search(text.lower()))
        scene = scenes.setdefault(info["scene_file"], load_scene(dataset / info["scene_file"]))
        for ref in refs_of(program):
            found, anchor = readings(scene, ref)
            assert len(found) == 1, (text, ref)
            if anchor is not None:
                assert not _bad_anchor(found[0], anchor), (text, ref)
    assert compass <= 0.15 * len(episodes)


@pytest.mark.slow
def test_stats_report_words_vocabulary_and_templates(dataset: Path) -> None:
    stats = json.loads((dataset / "stats.json").read_text())
    words = stats["instruction_words"]
    lengths = [len(ep["instruction"]["instruction_text"].split()) for ep, _ in _episodes(dataset)]
    assert words["n"] == len(lengths) and words["max"] == max(lengths) <= words["limit"] == 80
    assert sum(words["histogram_10"].values()) == len(lengths)
    assert words["histogram_10"][str(max(lengths) // 10 * 10)] >= 1
    counts = stats["templates"]["constructs"]
    assert counts["go"] == len(load_templates().go) >= 18
    assert stats["vocabulary_size"] > 200
    assert "instruction_words: mean" in (dataset / "README.md").read_text()
