"""`condvln generate` / `validate` / `oracle`: VLN-CE compatibility, determinism, validation."""

from __future__ import annotations

import dataclasses
import gzip
import math
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest

from condvln.dataset import episode as episode_module
from condvln.dataset.episode import EPISODE_KEYS, TEST_EPISODE_KEYS
from condvln.dataset.generate import GenerateConfig, generate_dataset
from condvln.dataset.oracle import oracle_transform
from condvln.dataset.validate import validate_dataset
from condvln.errors import ConfigError
from condvln.nav import ExactNavigator, GridNavigator
from condvln.program.ast import leaf_paths
from condvln.program.parse import InstructionParseError, parse
from condvln.scene.serialize import load_scene
from condvln.synth import pipeline
from condvln.synth.driver import GENERATION_GRID
from condvln.vlnce import SPLITS, split_path

pytestmark = pytest.mark.slow

CONFIG = GenerateConfig(
    scenes=10, per_scene=40, seed=3, branch_steps=(1, 2, 3), val_seen_share=0.25
)
"""Arms of 1–3 targets, so in-branch subgoals are covered (the default design takes one), and
a val_seen share that gives the pairs split two pairs (0.1 gives none here)."""


def _read(path: Path) -> Any:
    return orjson.loads(gzip.decompress(path.read_bytes()))


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("gen") / "ds"
    generate_dataset(CONFIG, out, workers=1)
    return out


# --- habitat-lab's episode classes, field for field (attrs classes reject unknown keys) -------


@dataclasses.dataclass
class NavigationGoal:
    position: list[float]
    radius: float | None = None


@dataclasses.dataclass
class InstructionData:
    instruction_text: str
    instruction_tokens: list[int] | None = None


@dataclasses.dataclass
class VLNEpisode:
    episode_id: str
    scene_id: str
    start_position: list[float]
    start_rotation: list[float]
    info: dict | None = None
    goals: list | None = None
    start_room: str | None = None
    shortest_paths: list | None = None
    reference_path: list | None = None
    instruction: Any = None
    trajectory_id: int | None = None


def _load_like_habitat(path: Path) -> list[VLNEpisode]:
    """What habitat-lab's R2RVLN-v1 dataset does with a split file."""
    doc = _read(path)
    vocab = doc["instruction_vocab"]["word_list"]
    episodes = []
    for raw in doc["episodes"]:
        episode = VLNEpisode(**raw)
        episode.instruction = InstructionData(**raw["instruction"])
        episode.goals = [NavigationGoal(**g) for g in raw.get("goals") or []]
        assert all(0 <= t < len(vocab) for t in episode.instruction.instruction_tokens)
        episodes.append(episode)
    return episodes


def test_splits_load_with_the_habitat_episode_classes(dataset: Path) -> None:
    for split in SPLITS:
        episodes = _load_like_habitat(split_path(dataset, split))
        assert episodes, split
        if split != "test":
            assert all(e.reference_path[0] == e.start_position for e in episodes)
            assert all(e.goals[0].position == e.reference_path[-1] for e in episodes)


def test_structure_matches_the_published_vlnce_format(dataset: Path, fixtures_dir: Path) -> None:
    """Key sets and value types of VLN-CE ``R2R_VLNCE_v1-3`` files (samples in ``tests/data/vlnce``
    written from FORMATS §1.2–1.4: the real files are Matterport-derived and not redistributed)."""
    folder = fixtures_dir / "vlnce"
    real = orjson.loads((folder / "val_seen_format_sample.json").read_bytes())
    ours = _read(split_path(dataset, "val_seen"))
    assert set(ours) == set(real) == {"episodes", "instruction_vocab"}
    assert "word_list" in ours["instruction_vocab"]
    real_ep, our_ep = real["episodes"][0], ours["episodes"][0]
    assert list(our_ep) == list(EPISODE_KEYS)
    assert set(our_ep) == set(real_ep)
    for key, value in real_ep.items():
        assert type(our_ep[key]) is type(value), key
    assert set(our_ep["instruction"]) == set(real_ep["instruction"])
    assert set(our_ep["goals"][0]) == set(real_ep["goals"][0])
    assert len(our_ep["start_rotation"]) == 4 and len(our_ep["start_position"]) == 3
    real_gt = orjson.loads((folder / "val_seen_gt_format_sample.json").read_bytes())
    our_gt = _read(split_path(dataset, "val_seen", "_gt"))
    assert set(next(iter(our_gt.values()))) == set(next(iter(real_gt.values())))
    test = _read(split_path(dataset, "test"))["episodes"][0]
    real_test = orjson.loads((folder / "test_format_sample.json").read_bytes())
    # VLN-CE's test episodes omit goals / reference_path; ours carry them empty so that
    # habitat-lab's R2RVLN-v1 reader (which requires them) loads the split too.
    assert (
        set(test)
        == set(TEST_EPISODE_KEYS)
        == {*real_test["episodes"][0], "goals", "reference_path"}
    )
    assert test["goals"] == [] and test["reference_path"] == []


def test_labels_programs_and_texts(dataset: Path) -> None:
    doc = _read(split_path(dataset, "train"))
    for episode in doc["episodes"]:
        info = episode["info"]["condvln"]
        assert parse(episode["instruction"]["instruction_text"]).to_dict() == info["program"]
        assert info["goal"]["position"] == episode["goals"][0]["position"]
        assert episode["goals"][0]["radius"] == 1.0
        assert info["config_hash"] == CONFIG.config_hash()
        assert info["category"] in {
            "simple",
            "nested",
            "deep_nested",
            "chain",
            "long_chain",
            "nested_chain",
        }


def _labelled(dataset: Path, split: str) -> list[tuple[str, dict[str, Any]]]:
    """(instruction text, ``info.condvln``) of every episode of a split (test: its answers)."""
    episodes = _read(split_path(dataset, split))["episodes"]
    if split != "test":
        return [(e["instruction"]["instruction_text"], e["info"]["condvln"]) for e in episodes]
    answers = _read(dataset / "test" / "test_answers.json.gz")
    return [
        (e["instruction"]["instruction_text"], answers[str(e["episode_id"])]["info"]["condvln"])
        for e in episodes
    ]


def _reads_back(text: str, program: dict[str, Any], phrasing: Any) -> bool:
    try:
        return parse(text, phrasing).to_dict() == program
    except InstructionParseError:
        return False


def test_held_out_phrasings_word_only_unseen_houses(dataset: Path) -> None:
    """Seen houses are worded with the seen paraphrases; in val_unseen and test about half the
    episodes may use held-out ones, and ``phrasing_seen`` says which, re-derived here: the
    parser of the seen paraphrases reads a text back exactly when it is flagged seen."""
    counts: Counter[tuple[str, bool]] = Counter()
    for split in SPLITS:
        for text, info in _labelled(dataset, split):
            assert _reads_back(text, info["program"], "all"), text
            assert _reads_back(text, info["program"], "seen") == info["phrasing_seen"], text
            counts[split, info["phrasing_seen"]] += 1
    assert not any(counts[split, False] for split in ("train", "val_seen", "pairs"))
    stats = orjson.loads((dataset / "stats.json").read_bytes())["held_out_phrasing"]
    assert stats == {split: counts[split, False] for split in stats} and "test" in stats
    unseen = sum(counts[split, False] for split in ("val_unseen", "test"))
    total = unseen + sum(counts[split, True] for split in ("val_unseen", "test"))
    assert min(counts["val_unseen", False], counts["test", False]) > 0
    assert 0.25 * total < unseen < 0.6 * total, (unseen, total)  # pooled: test holds 30 here


def test_held_out_share_rewords_only_the_unseen_houses(dataset: Path, tmp_path: Path) -> None:
    """Without held-out phrasings the same episodes come out, every one flagged seen, and the
    seen houses' texts are the very same."""
    config = CONFIG.model_copy(update={"held_out_phrasing_share": 0.0})
    generate_dataset(config, tmp_path / "seen_only", workers=1)
    for split in SPLITS:
        mixed, seen_only = _labelled(dataset, split), _labelled(tmp_path / "seen_only", split)
        assert [i["program"] for _, i in mixed] == [i["program"] for _, i in seen_only]
        assert all(i["phrasing_seen"] for _, i in seen_only)
        if split not in ("val_unseen", "test"):
            assert [t for t, _ in mixed] == [t for t, _ in seen_only], split


def test_scenes_do_not_leak_between_seen_and_unseen_splits(dataset: Path) -> None:
    scenes = {s: {e["scene_id"] for e in _read(split_path(dataset, s))["episodes"]} for s in SPLITS}
    seen = scenes["train"] | scenes["val_seen"]
    assert not seen & scenes["val_unseen"]
    assert not seen & scenes["test"]
    assert not scenes["val_unseen"] & scenes["test"]


def test_same_seed_same_bytes_with_one_and_two_workers(dataset: Path, tmp_path: Path) -> None:
    """Two workers in another process whose string hashes differ (``PYTHONHASHSEED``): the
    order a set is iterated in must never reach the data (it once did, through a float sum in
    balancing, and the CI machine's default benchmark data differed from ours)."""
    other = tmp_path / "ds2"
    code = (
        "import sys; from pathlib import Path; from condvln.dataset.generate import"
        " GenerateConfig, generate_dataset; generate_dataset(GenerateConfig.model_validate_json"
        "(sys.argv[1]), Path(sys.argv[2]), workers=2)"
    )
    env = {**os.environ, "PYTHONHASHSEED": "1"}
    args = [sys.executable, "-c", code, CONFIG.model_dump_json(), str(other)]
    subprocess.run(args, env=env, check=True, capture_output=True)
    assert _files(other) == _files(dataset)


def test_prepared_scenes_change_no_byte(
    dataset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fixture kept every scene prepared between sampling rounds (one process: each
    scene's graph built once); without that cache every round builds it again, and every byte
    is the same."""
    built: Counter[str] = Counter()
    original = pipeline.build_scene_graph

    def counting(scene: Any, relations: Any = None) -> Any:
        built[scene.id] += 1
        return original(scene, relations)

    monkeypatch.setattr(pipeline, "build_scene_graph", counting)
    generate_dataset(CONFIG, tmp_path / "kept", workers=1)
    assert len(built) == CONFIG.scenes and set(built.values()) == {1}
    built.clear()
    monkeypatch.setattr(pipeline, "PREPARED_MEMORY", 0)
    generate_dataset(CONFIG, tmp_path / "again", workers=1)
    assert len(built) == CONFIG.scenes and min(built.values()) >= 3  # scan + two rounds or more
    assert _files(tmp_path / "again") == _files(dataset) == _files(tmp_path / "kept")
    assert not pipeline._PREPARED  # let go when the run ends


def _without_wording(document: Any) -> Any:
    """A split or answers document without what the wording decides: instruction texts and
    tokens, the oracle text, whether held-out phrasings were drawn, the vocabulary."""
    if isinstance(document, dict):
        return {
            k: _without_wording(v)
            for k, v in document.items()
            if k not in ("instruction", "oracle_instruction", "phrasing_seen", "instruction_vocab")
        }
    if isinstance(document, list):
        return [_without_wording(v) for v in document]
    return document


def test_wording_moves_nothing_but_the_text(
    dataset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Paraphrases are drawn from a stream of their own: a renderer that draws more (as a new
    template does) changes the words and nothing else (start headings, paths, balancing)."""
    original = episode_module.render_instruction

    def wordier(program: Any, rng: Any, *args: Any) -> Any:
        rng.random(3)
        return original(program, rng, *args)

    monkeypatch.setattr(episode_module, "render_instruction", wordier)
    generate_dataset(CONFIG, tmp_path / "wordier", workers=1)
    before, after = _files(dataset), _files(tmp_path / "wordier")
    assert set(before) == set(after)
    worded = {k for k in before if k.endswith(".json.gz") and not k.endswith("_gt.json.gz")}
    assert {k for k in before if before[k] != after[k]} <= worded | {"stats.json", "README.md"}
    texts = 0
    for name in sorted(worded):
        a, b = _read(dataset / name), _read(tmp_path / "wordier" / name)
        assert _without_wording(a) == _without_wording(b), name
        texts += sum(
            x["instruction"] != y["instruction"]
            for x, y in zip(a.get("episodes", []), b.get("episodes", []), strict=True)
        )
    assert texts > 100  # the words did change


def test_validate_passes_then_catches_each_corruption(dataset: Path, tmp_path: Path) -> None:
    assert validate_dataset(dataset).ok

    def corrupt(name: str, edit) -> list[str]:
        copy = tmp_path / name
        shutil.copytree(dataset, copy)
        path = split_path(copy, "train")
        doc = _read(path)
        raw = edit(doc)
        path.write_bytes(gzip.compress(raw if isinstance(raw, bytes) else orjson.dumps(doc)))
        return validate_dataset(copy).problems

    def flip(doc):
        doc["episodes"][2]["info"]["condvln"]["branch_path"][0] ^= True

    def move(doc):
        doc["episodes"][2]["goals"][0]["position"][0] += 0.5

    def unknown_word(doc):
        doc["instruction_vocab"]["word_list"].remove("to")

    def reword(doc):
        doc["episodes"][2]["info"]["condvln"]["phrasing_seen"] = False

    def nan(doc):
        doc["episodes"][2]["start_position"][0] = 98765.4321
        return orjson.dumps(doc).replace(b"98765.4321", b"NaN")

    expected = {
        "flip": "train: episode 3: field 'info.condvln.program': branch_path",
        "move": "train: episode 3: field 'goals[0].position'",
        "unknown_word": "field 'instruction.instruction_tokens'",
        "nan": "train: episode 3: field 'start_position[0]': not finite",
        "reword": "train: episode 3: field 'info.condvln.phrasing_seen': is False, but the text "
        "reads back with the seen paraphrases",
    }
    for name, edit in (
        ("flip", flip),
        ("move", move),
        ("unknown_word", unknown_word),
        ("nan", nan),
        ("reword", reword),
    ):
        problems = corrupt(name, edit)
        assert any(p.startswith(expected[name]) or expected[name] in p for p in problems), (
            name,
            problems[:3],
        )


def test_oracle_changes_only_instructions(dataset: Path, tmp_path: Path) -> None:
    out = tmp_path / "oracle"
    count = oracle_transform(dataset, out)
    before, after = _files(dataset), _files(out)
    assert set(after) == set(before) | {"oracle.json"}
    changed = {k for k in before if before[k] != after[k]}
    assert changed == {str(split_path(Path(), s)) for s in SPLITS}
    total = 0
    for split in SPLITS:
        a, b = _read(split_path(dataset, split)), _read(split_path(out, split))
        assert a["instruction_vocab"] == b["instruction_vocab"]
        for ea, eb in zip(a["episodes"], b["episodes"], strict=True):
            assert {k: v for k, v in ea.items() if k != "instruction"} == {
                k: v for k, v in eb.items() if k != "instruction"
            }
            if split != "test":
                assert (
                    eb["instruction"]["instruction_text"]
                    == ea["info"]["condvln"]["oracle_instruction"]
                )
            assert parse(eb["instruction"]["instruction_text"]).depth == 0
            total += 1
    assert count == total
    assert validate_dataset(out).ok


def test_refuses_to_overwrite(dataset: Path) -> None:
    with pytest.raises(ConfigError, match="exists"):
        generate_dataset(CONFIG, dataset)


def test_cli_generate_and_validate(tmp_path: Path) -> None:
    out = tmp_path / "cli"
    run = [sys.executable, "-m", "condvln"]
    made = subprocess.run(
        [
            *run,
            "generate",
            "--scenes",
            "3",
            "--per-scene",
            "12",
            "--out",
            str(out),
            "-q",
            "-j",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert made.returncode == 0, made.stderr
    checked = subprocess.run(
        [*run, "validate", str(out)], capture_output=True, text=True, timeout=300
    )
    assert checked.returncode == 0 and checked.stdout.startswith("OK"), checked.stdout
    again = subprocess.run(
        [*run, "generate", "--out", str(out), "-q"], capture_output=True, text=True
    )
    assert again.returncode == 2 and "exists" in again.stderr


def _reference_replay(dataset: Path, split: str, out: Path) -> Path:
    """A leaderboard-format predictions file that walks every episode's reference path."""
    replay = {
        str(e["episode_id"]): [
            {"position": p, "heading": 0.0, "stop": k == len(e["reference_path"]) - 1}
            for k, p in enumerate(e["reference_path"])
        ]
        for e in _read(split_path(dataset, split))["episodes"]
    }
    out.write_bytes(orjson.dumps(replay))
    return out


def test_cli_evaluate_reference_paths_score_perfectly(dataset: Path, tmp_path: Path) -> None:
    predictions = _reference_replay(dataset, "val_seen", tmp_path / "predictions.json")
    out = tmp_path / "eval"
    run = [sys.executable, "-m", "condvln", "evaluate", str(dataset), str(predictions)]
    result = subprocess.run(
        [*run, "--out", str(out), "--split", "val_seen"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    metrics = orjson.loads((out / "metrics.json").read_bytes())
    assert metrics["metrics"]["success"]["mean"] == 1.0
    assert metrics["metrics"]["csr"]["mean"] == 1.0
    assert (out / "table2.md").is_file() and (out / "table3.csv").is_file()
    predictions.write_text("{not json")
    bad = subprocess.run([*run, "--out", str(tmp_path / "bad")], capture_output=True, text=True)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1


def test_branch_arms_hold_their_own_targets(dataset: Path) -> None:
    """Arms hold ``branch_steps`` targets (1–3 as configured; the default design takes one,
    issue 26); the gold arm's earlier ones are in-branch subgoals, more than 2τ from the
    waypoints and from every other arm's goal; the oracle lists them."""
    seen: set[int] = set()
    for split in ("train", "val_seen"):
        for episode in _read(split_path(dataset, split))["episodes"]:
            info = episode["info"]["condvln"]
            steps, horizon = info["branch_steps"], info["horizon"]
            seen.add(steps)
            program = parse(episode["instruction"]["instruction_text"])
            assert {len(goes) - horizon for _, goes in leaf_paths(program.steps)} == {steps}
            assert len(info["branch_subgoals"]) == steps - 1
            assert info["subgoals"][horizon:] == info["branch_subgoals"]
            arm = [g["position"] for g in (*info["branch_subgoals"], info["goal"])]
            others = [g["position"] for g in info["subgoals"][:horizon]] + [
                g["position"] for i, g in enumerate(info["branch_goals"]) if i != info["leaf_index"]
            ]
            radius = info["goal"]["radius"]
            assert all(math.dist(a, b) > 2 * radius for a in arm for b in others)
            oracle = parse(info["oracle_instruction"])
            executed = leaf_paths(program.steps)[info["leaf_index"]][1]
            assert oracle.steps == executed
    assert seen <= {1, 2, 3} and len(seen) >= 2


def test_gold_is_nearest_rederives_from_exact_geodesics(dataset: Path) -> None:
    """The label balancing holds at chance ("the gold goal is the leaf goal nearest the
    start") equals a fresh exact navigator's answer from the stored start to every leaf
    goal's approach point: the engine of the stored geodesic distances."""
    navs: dict[str, tuple[Any, GridNavigator, ExactNavigator]] = {}
    answers = Counter()
    for split in ("train", "val_unseen"):
        for episode in _read(split_path(dataset, split))["episodes"]:
            info = episode["info"]["condvln"]
            name = Path(episode["scene_id"]).name.removesuffix(".glb")
            if name not in navs:
                scene = load_scene(dataset / "scenes" / f"{name}.json")
                grid = GridNavigator(scene, config=GENERATION_GRID)
                navs[name] = (scene, grid, ExactNavigator(scene, config=GENERATION_GRID))
            scene, grid, exact = navs[name]
            goals = [
                grid.approach_point(scene.object(g["object_id"])) for g in info["branch_goals"]
            ]
            distances = [exact.distance(episode["start_position"], p) for p in goals]
            nearest = min(range(len(distances)), key=distances.__getitem__)
            assert info["gold_is_nearest"] is (nearest == info["leaf_index"]), episode["episode_id"]
            answers[info["gold_is_nearest"]] += 1
    assert answers[True] > 0 and answers[False] > answers[True]


def test_gold_leaves_are_balanced_in_what_is_written(dataset: Path) -> None:
    """Issue 26 item 1: episodes are built before balancing, so every bucket of every split
    group (seen = train + val_seen + pairs, val_unseen, test) holds each gold leaf equally
    often, and the episode stage's rejections are counted before balancing."""
    groups: dict[str, list[dict[str, Any]]] = {"seen": [], "val_unseen": [], "test": []}
    for split in ("train", "val_seen", "pairs", "val_unseen"):
        infos = [e["info"]["condvln"] for e in _read(split_path(dataset, split))["episodes"]]
        groups["seen" if split != "val_unseen" else split] += infos
    answers = _read(split_path(dataset, "test", "_answers"))
    groups["test"] = [entry["info"]["condvln"] for entry in answers.values()]
    for group, infos in groups.items():
        assert infos, group
        counts = Counter((i["bucket"], i["leaf_index"]) for i in infos)
        for bucket in {i["bucket"] for i in infos}:
            n = next(i["n_branches"] for i in infos if i["bucket"] == bucket)
            assert len({counts[bucket, leaf] for leaf in range(n)}) == 1, (group, bucket)
    stats = orjson.loads((dataset / "stats.json").read_bytes())
    assert stats["rejections"].get("goal_separation", 0) > 0


def test_validate_rederives_in_branch_subgoals(dataset: Path, tmp_path: Path) -> None:
    copy = tmp_path / "ds"
    shutil.copytree(dataset, copy)
    path = split_path(copy, "train")
    doc = _read(path)
    index = next(
        i for i, e in enumerate(doc["episodes"]) if e["info"]["condvln"]["branch_subgoals"]
    )
    info = doc["episodes"][index]["info"]["condvln"]
    info["branch_subgoals"] = []
    path.write_bytes(gzip.compress(orjson.dumps(doc)))
    problems = validate_dataset(copy).problems
    episode_id = doc["episodes"][index]["episode_id"]
    assert any(
        f"episode {episode_id}: field 'info.condvln.program': branch_subgoals" in p
        for p in problems
    ), problems[:3]


def _pair_ids(root: Path, split: str) -> Counter[str]:
    if split == "test":  # test episodes carry no labels; their answers do
        labels = [a["info"]["condvln"] for a in _read(split_path(root, split, "_answers")).values()]
    else:
        labels = [e["info"]["condvln"] for e in _read(split_path(root, split))["episodes"]]
    return Counter(str(i["pair_id"]) for i in labels if i.get("pair_id") is not None)


def test_counterfactual_pairs_are_whole_and_in_no_evaluation_split(dataset: Path) -> None:
    """Issue 26 item 5: the pairs of the val_seen share form the ``pairs`` split (both members,
    which share a house and a start and differ in their gold leaf); val_seen, val_unseen and
    test hold no pair member; train keeps its own pairs, none shared with ``pairs``."""
    pairs = _pair_ids(dataset, "pairs")
    assert pairs and set(pairs.values()) == {2}, pairs
    for split in ("val_seen", "val_unseen", "test"):
        assert not _pair_ids(dataset, split), split
    assert _pair_ids(dataset, "train") and not set(_pair_ids(dataset, "train")) & set(pairs)
    members: dict[str, list[dict]] = {}
    for episode in _read(split_path(dataset, "pairs"))["episodes"]:
        members.setdefault(episode["info"]["condvln"]["pair_id"], []).append(episode)
    train_houses = {e["scene_id"] for e in _read(split_path(dataset, "train"))["episodes"]}
    for a, b in members.values():
        assert a["scene_id"] == b["scene_id"] and a["scene_id"] in train_houses
        assert a["start_position"] == b["start_position"]
        assert a["info"]["condvln"]["leaf_index"] != b["info"]["condvln"]["leaf_index"]


def test_validate_refuses_a_pair_member_outside_train_and_pairs(
    dataset: Path, tmp_path: Path
) -> None:
    """A pair member moved to val_seen (the layout before the pairs split) and the pair it
    left half in ``pairs``: validate names both; a dataset without a pairs folder (older, or
    another tool's) is still valid."""
    copy = tmp_path / "moved"
    shutil.copytree(dataset, copy)
    pairs, val_seen = (_read(split_path(copy, s)) for s in ("pairs", "val_seen"))
    pairs_gt, val_seen_gt = (_read(split_path(copy, s, "_gt")) for s in ("pairs", "val_seen"))
    moved = pairs["episodes"].pop(0)
    val_seen["episodes"].append(moved)
    val_seen_gt[str(moved["episode_id"])] = pairs_gt.pop(str(moved["episode_id"]))
    for split, doc, gt in (("pairs", pairs, pairs_gt), ("val_seen", val_seen, val_seen_gt)):
        split_path(copy, split).write_bytes(gzip.compress(orjson.dumps(doc)))
        split_path(copy, split, "_gt").write_bytes(gzip.compress(orjson.dumps(gt)))
    pair = moved["info"]["condvln"]["pair_id"]
    problems = validate_dataset(copy).problems
    assert f"val_seen: episode {moved['episode_id']}: field 'info.condvln.pair_id': pair {pair} in an evaluation split (pairs belong in the pairs split)" in problems  # fmt: skip
    assert f"pairs: pair {pair} has 1 member(s), not 2" in problems
    assert any(p.startswith(f"pair {pair} is in splits ") for p in problems)
    without = tmp_path / "without"
    shutil.copytree(dataset, without)
    shutil.rmtree(without / "pairs")
    report = validate_dataset(without)
    assert report.ok and "pairs" not in report.episodes, report.problems[:3]


def test_evaluate_on_pairs_headlines_pair_consistency(dataset: Path, tmp_path: Path) -> None:
    """``condvln evaluate --split pairs``: a replay of the reference paths gets every pair
    right (pair consistency 1 over all pairs), and the summary leads with it."""
    doc = _read(split_path(dataset, "pairs"))
    predictions = _reference_replay(dataset, "pairs", tmp_path / "predictions.json")
    run = [sys.executable, "-m", "condvln", "evaluate", str(dataset), str(predictions)]
    result = subprocess.run(
        [*run, "--out", str(tmp_path / "eval"), "--split", "pairs"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    metrics = orjson.loads((tmp_path / "eval" / "metrics.json").read_bytes())
    consistency = metrics["pair_consistency"]
    assert (consistency["mean"], consistency["n"]) == (1.0, len(doc["episodes"]) // 2)
    first = [line for line in result.stdout.splitlines() if line.strip()][1]
    assert first.strip().startswith("pair_consistency (both members CSR_all): 1.000")
