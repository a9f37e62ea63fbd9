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
  the vocabulary size and the paraphrase templates per construct.

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

from condvln.dataset.generate import GenerateConfig, generate_dataset
from condvln.graph import RelationConfig
from condvln.program.ast import Ref, Relation, iter_ifs, program_from_dict
from condvln.program.templates import SLOTS, load_templates
from condvln.scene.model import SceneObject
from condvln.scene.serialize import load_scene
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


class SceneView:
    """Objects of a scene by room type and category, for the independent reading."""

    def __init__(self, scene: Any) -> None:
        self.scene = scene
        self.room_of = {o.id: r for r in scene.rooms for o in r.objects}

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


def audit(folder: Path) -> dict[str, Any]:
    """The language measurements of a dataset folder (see the module docstring)."""
    scenes: dict[str, SceneView] = {}
    cfg_cache: dict[str, RelationConfig] = {}
    words: list[int] = []
    vocab: set[str] = set()
    per_category: Counter[str] = Counter()
    flags: Counter[str] = Counter()
    total = 0
    for split in available_splits(folder):
        data = load_split(folder, split)
        vocab.update(data.get("instruction_vocab", {}).get("word_list", []))
        answers = read_gz(folder / "test" / "test_answers.json.gz") if split == "test" else {}
        for ep in data["episodes"]:
            info = (ep.get("info") or answers[str(ep["episode_id"])]["info"])["condvln"]
            text = ep["instruction"]["instruction_text"]
            total += 1
            per_category[info["category"]] += 1
            n = len(text.split())
            words.append(n)
            flags["over_80_words"] += n > MAX_WORDS
            flags["compass_word"] += bool(COMPASS_WORD.search(text.lower()))
            relations = info["config"]["relations"]
            key = json.dumps(relations, sort_keys=True)
            cfg = cfg_cache.setdefault(key, RelationConfig(**relations))
            if info["scene_file"] not in scenes:
                scenes[info["scene_file"]] = SceneView(load_scene(folder / info["scene_file"]))
            view = scenes[info["scene_file"]]
            program = program_from_dict(info["program"])
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
            flags["anchor_smaller_movable"] += smaller
            flags["anchor_rests_on_referent"] += resting
            flags["non_unique_description"] += ambiguous
    arr = np.asarray(words)
    templates = load_templates()
    return {
        "episodes": total,
        "categories": dict(sorted(per_category.items())),
        "percent": {k: round(100.0 * v / max(total, 1), 1) for k, v in sorted(flags.items())},
        "words": {
            "mean": round(float(arr.mean()), 1),
            "p50": float(np.quantile(arr, 0.5)),
            "p90": float(np.quantile(arr, 0.9)),
            "p99": float(np.quantile(arr, 0.99)),
            "max": int(arr.max()),
            "histogram_by_10": dict(sorted(Counter(int(w) // 10 * 10 for w in words).items())),
        },
        "vocabulary_size": len(vocab),
        "templates": {c: len(templates.variants(c)) for c in SLOTS},
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
