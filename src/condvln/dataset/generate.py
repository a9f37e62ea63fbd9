"""``condvln generate``: scenes → balanced conditional instructions → a VLN-CE dataset folder.

Two parallel phases over scenes, each a pure function of (scene, seed, scene index): sampling
(then global balancing in the parent) and episode building (paths, ground-truth actions, text).
Results are gathered in scene order, so the dataset is byte-identical for any worker count. The
folder is written to a temporary sibling and renamed into place: nothing half-written is left.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import orjson
from pydantic import BaseModel, ConfigDict, Field

from condvln import __version__
from condvln.dataset.card import EpisodeSummary, dataset_card, dataset_stats
from condvln.dataset.episode import (
    BUDGET_FACTOR,
    EPISODE_KEYS,
    OPTIONAL_EPISODE_KEYS,
    TEST_EPISODE_KEYS,
    TURN_ALLOWANCE,
    build_episode,
    path_length,
)
from condvln.dataset.spill import PayloadSpill
from condvln.errors import ConfigError
from condvln.graph import RelationConfig
from condvln.habitat.layout import composed_scene_files, habitat_scene
from condvln.habitat.semantics import DATASET_CONFIG, dataset_config
from condvln.io import atomic_directory, atomic_gzip_writer, output_lock, output_path
from condvln.nav import ExactNavigator
from condvln.parallel.executors import Executor, ordered_map
from condvln.scene.identity import first_of_each, scene_fingerprint
from condvln.scene.serialize import scene_to_json
from condvln.synth.driver import GENERATION_GRID, success_radius
from condvln.synth.informative import ConditionConfig
from condvln.synth.pipeline import (
    SceneSpec,
    SynthesisResult,
    run_synthesis,
    scene_seed,
    scene_specs,
)
from condvln.synth.sampler import BRANCH_STEPS, Instance, Rejected
from condvln.vlnce import SCENE_INDEX, SPLITS, build_vocab, encode, split_path

UNPAIRED_SPLITS = ("val_unseen", "test")
"""Splits whose houses get no minimal-pair siblings: a reader who sees both members of a pair
guesses its branch better than chance, and these splits are audited as un-guessable. Pairs
live in the seen houses: those of train stay there (a contrastive training signal), those
that would land in val_seen form the diagnostic ``pairs`` split, scored per pair."""


class GenerateConfig(BaseModel):
    """Everything that determines a dataset; stamped (with its hash) into every episode.

    Attributes:
        source: Scene source name.
        scenes: Procedural houses (seeds ``0..scenes-1``) or the most input files to use.
        inputs: Scene files or folders for file-based sources.
        per_scene: Instructions sampled per scene before balancing.
        seed: Master seed.
        counterfactual_share: Probability that an instruction in a seen house gets a
            minimal-pair sibling (houses of :data:`UNPAIRED_SPLITS` get none).
        unseen_share: Share of scenes held out for val_unseen and test (half each).
        val_seen_share: Share of the seen scenes' episodes that go to val_seen.
        held_out_phrasing_share: Share of the episodes of :data:`UNPAIRED_SPLITS` worded with
            every paraphrase, the held-out ones train never shows included (see
            :class:`~condvln.program.templates.Templates`); the others, and every episode of
            the seen houses, use the seen paraphrases only.
        multi_room_radius: Success radius of multi-room scenes (paper: 1.0 m).
        single_room_radius: Success radius of single-room scenes (paper: 0.5 m).
        step_budget_factor: Step budget: forward steps allowed per forward step of the longest
            execution path over all branches.
        step_budget_per_target: Step budget: extra steps per navigation target (turning).
        branch_steps: Targets per branch arm the design samples (default one: the same
            workload for every Table-1 category; 2 and 3 only where a shape fits the word
            limit, so the categories' workloads then differ).
        relations: Predicate thresholds.
        conditions: Which conditions are worth asking: the presence band and the related
            objects of relations (:class:`~condvln.synth.informative.ConditionConfig`).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    source: str = "procedural"
    scenes: int | None = Field(200, ge=1, le=100_000)
    inputs: tuple[str, ...] = ()
    per_scene: int = Field(75, ge=1, le=10_000)
    seed: int = Field(0, ge=0, lt=2**63)
    counterfactual_share: float = Field(0.2, ge=0.0, le=1.0)
    unseen_share: float = Field(0.3, ge=0.0, lt=1.0)
    val_seen_share: float = Field(0.1, ge=0.0, lt=1.0)
    held_out_phrasing_share: float = Field(0.5, ge=0.0, le=1.0)
    multi_room_radius: float = Field(1.0, gt=0.0)
    single_room_radius: float = Field(0.5, gt=0.0)
    step_budget_factor: float = Field(BUDGET_FACTOR, gt=0.0)
    step_budget_per_target: int = Field(TURN_ALLOWANCE, ge=0)
    branch_steps: tuple[Annotated[int, Field(ge=1, le=3)], ...] = Field(BRANCH_STEPS, min_length=1)
    relations: RelationConfig = RelationConfig()
    conditions: ConditionConfig = ConditionConfig()

    def config_hash(self) -> str:
        """First 16 hex digits of the SHA-256 of the canonical JSON."""
        canonical = orjson.dumps(self.model_dump(mode="json"), option=orjson.OPT_SORT_KEYS)
        return hashlib.sha256(canonical).hexdigest()[:16]


Record = tuple[dict[str, Any], dict[str, Any]]
"""One episode: the VLN-CE record and its ``_gt`` entry."""


@dataclass(frozen=True)
class SceneFiles:
    """Phase-2 output of one scene: its JSON file and, when composed, its habitat assets."""

    scene_file: str
    scene_json: bytes
    habitat_scene_id: str
    assets: dict[str, bytes]


def scene_file_name(scene_id: str) -> str:
    """Dataset-relative scene path used as ``scene_id``: ``scenes/<id with / → __>.json``."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in scene_id.replace("/", "__"))
    return f"scenes/{safe}.json"


def _extras(spec: SceneSpec, config: GenerateConfig, scene_file: str) -> dict[str, Any]:
    """Provenance fields every episode of a scene carries in ``info.condvln``."""
    return {
        "source_dataset": spec.source,
        "scene_reference": spec.reference,
        "seed": config.seed,
        "config": config.model_dump(mode="json"),
        "config_hash": config.config_hash(),
        "relation_config_hash": config.relations.config_hash,
        "condvln_version": __version__,
        "scene_file": scene_file,
    }


def vet_instances(
    spec: SceneSpec,
    config: GenerateConfig,
    scene: Any,
    index: int,
    top_up: int,
    instances: list[Instance],
    nav: ExactNavigator | None = None,
    group: str = "seen",
) -> tuple[list[Instance], Counter[str]]:
    """Build the episode of every fresh instance of a scene (a :data:`~condvln.synth.pipeline.Vet`
    run in the sampling worker, before balancing): the instances whose episode could be built,
    each carrying ``(episode, gt)`` as its payload, and the rejections counted. A pair member
    whose sibling was rejected goes too (``pair_sibling_rejected``): a pair is kept whole or
    not at all, so what balancing keeps is what the dataset holds. ``nav``: the scene's exact
    navigator at :data:`~condvln.synth.driver.GENERATION_GRID`'s settings, when already built
    (built here when omitted); ``group``: the scene's split group (:func:`_assign_splits`),
    which decides whether held-out phrasings may word its episodes."""
    nav = nav or ExactNavigator(scene, config=GENERATION_GRID)
    radius = success_radius(scene, config.multi_room_radius, config.single_room_radius)
    rng = np.random.default_rng([scene_seed(config.seed, index, top_up), 1])
    words = np.random.default_rng([scene_seed(config.seed, index, top_up), 2])
    habitat = habitat_scene(scene, scene_file_name(scene.id))
    extras = _extras(spec, config, scene_file_name(scene.id))
    held_out = config.held_out_phrasing_share if group in UNPAIRED_SPLITS else 0.0
    built, rejections = [], Counter()
    for inst in instances:
        try:
            record = build_episode(
                inst,
                nav,
                rng,
                words,
                scene_id=habitat.scene_id,
                scene_dataset_config=habitat.scene_dataset_config,
                radius=radius,
                extras=extras,
                budget=(config.step_budget_factor, config.step_budget_per_target),
                held_out_share=held_out,
            )
        except Rejected as exc:
            rejections[exc.reason] += 1
            continue
        length = path_length(record[0]["reference_path"])
        built.append(dataclasses.replace(inst, payload=record, gold_length=length))
    return _whole_pairs(built, rejections), rejections


def _scene_files(spec: SceneSpec) -> SceneFiles:
    """A scene's file and habitat assets (a worker task)."""
    scene = spec.load()
    file_name = scene_file_name(scene.id)
    habitat = habitat_scene(scene, file_name)
    assets = composed_scene_files(scene, file_name) if habitat.composed else {}
    return SceneFiles(file_name, scene_to_json(scene), habitat.scene_id, assets)


def _record(inst: Instance, spill: PayloadSpill) -> Record:
    """The instance's vetted episode, read back from ``spill``, with its pair id as balancing
    left it (a pair that lost a member is no pair)."""
    episode, gt = spill.fetch(inst)
    episode["info"]["condvln"]["pair_id"] = inst.pair_id
    return episode, gt


def _whole_pairs(built: list[Instance], rejections: Counter[str]) -> list[Instance]:
    """Drop a counterfactual pair member whose sibling the episode stage rejected (counted as
    ``pair_sibling_rejected``): a pair is scored as a whole or not at all."""
    counts = Counter(inst.pair_id for inst in built if inst.pair_id)
    whole = [i for i in built if not i.pair_id or counts[i.pair_id] == 2]
    if len(whole) < len(built):
        rejections["pair_sibling_rejected"] += len(built) - len(whole)
    return whole


def _assign_splits(n_scenes: int, config: GenerateConfig) -> dict[int, str]:
    """Scene index → ``"seen"``, ``"val_unseen"`` or ``"test"`` (no scene in two groups)."""
    rng = np.random.default_rng([config.seed, 7919])
    order = rng.permutation(n_scenes).tolist()
    n_unseen = round(config.unseen_share * n_scenes) if n_scenes >= 3 else 0
    groups = {i: "seen" for i in range(n_scenes)}
    for rank, index in enumerate(order[:n_unseen]):
        groups[index] = "val_unseen" if rank % 2 == 0 else "test"
    return groups


def requested_episodes(groups: dict[int, str], config: GenerateConfig) -> dict[str, int]:
    """Episodes asked for per split: ``per_scene`` × the split's scenes (the seen scenes' share
    of train and val_seen by ``val_seen_share``).

    >>> requested_episodes({0: "seen", 1: "seen", 2: "test"}, GenerateConfig(per_scene=10))
    {'train': 18, 'val_seen': 2, 'val_unseen': 0, 'test': 10}
    """
    scenes = Counter(groups.values())
    seen = scenes["seen"] * config.per_scene
    val_seen = round(seen * config.val_seen_share)
    return {
        "train": seen - val_seen,
        "val_seen": val_seen,
        "val_unseen": scenes["val_unseen"] * config.per_scene,
        "test": scenes["test"] * config.per_scene,
    }


def _split_of(group: str, inst: Instance, config: GenerateConfig) -> str:
    """The split of an instance of a scene in ``group``: seen scenes' instances go to train or
    val_seen by a hash of the instance's scene and start (a minimal pair stays together), so
    balancing can tell the train split before episodes are built; members of a pair bound for
    val_seen go to ``pairs`` instead, so no evaluation split holds a sibling of its own
    episode."""
    if group != "seen":
        return group
    key = f"{inst.scene_id}/{inst.start}"  # a minimal pair shares its start
    digest = hashlib.sha256(f"{config.seed}:{key}".encode()).digest()
    if int.from_bytes(digest[:8], "little") / 2**64 >= config.val_seen_share:
        return "train"
    return "pairs" if inst.pair_id else "val_seen"


def _is_train(inst: Instance, group: str, config: GenerateConfig) -> bool:
    """Whether an instance of a scene in split group ``group`` lands in train."""
    return _split_of(group, inst, config) == "train"


def generate_dataset(
    config: GenerateConfig,
    out: Path,
    *,
    workers: int | Executor = 1,
    overwrite: bool = False,
    progress: Callable[[str, int], Callable[[], None]] | None = None,
) -> dict[str, Any]:
    """Generate a dataset into ``out`` and return its statistics.

    Args:
        config: What to generate.
        out: Target folder (must not exist unless ``overwrite``).
        workers: Worker processes, or an :class:`~condvln.parallel.Executor` (Ray: tasks by
            scene).
        overwrite: Replace an existing folder.
        progress: ``progress(label, total)`` returning an ``advance()`` callback.
    """
    out = output_path(out)
    if out.exists() and not overwrite:
        raise ConfigError(f"{out} exists; pass --overwrite to replace it")
    if isinstance(workers, int) and workers < 1:
        raise ConfigError(f"--workers must be at least 1, got {workers}")
    duplicates: list[tuple[str, str]] = []
    specs = _distinct_scenes(config, workers, duplicates, progress)
    with output_lock(out):
        stats = _generate(config, out, specs, workers, overwrite, progress)
    if duplicates:
        stats["duplicate_inputs"] = [{"skipped": a, "same_as": b} for a, b in duplicates]
    return stats


def _identity(spec: SceneSpec) -> tuple[str, str]:
    """A scene's id and content fingerprint (a worker task)."""
    scene = spec.load()
    return scene.id, scene_fingerprint(scene)


def _distinct_scenes(
    config: GenerateConfig,
    workers: int | Executor,
    duplicates: list[tuple[str, str]],
    progress: Callable[[str, int], Callable[[], None]] | None,
) -> list[SceneSpec]:
    """The run's scenes, each house once by content (:mod:`condvln.scene.identity`), checked
    before any work: a copy is skipped (``duplicates`` gets ``(skipped, kept)``), two houses
    under one scene id are refused. ``config.scenes`` then keeps the first N of a file source."""
    files = bool(config.inputs) or config.source != "procedural"
    count = None if files else config.scenes
    specs = scene_specs(config.source, count, config.inputs, duplicates)
    tick = progress("scene identity", len(specs)) if progress else None
    identities = list(ordered_map(_identity, specs, workers, tick))
    kept, dropped = first_of_each(
        range(len(specs)), [f for _, f in identities], lambda i: specs[i].reference
    )
    duplicates += dropped
    if files and config.scenes is not None:
        kept = kept[: config.scenes]
    _require_distinct_ids([specs[i] for i in kept], [identities[i][0] for i in kept])
    return [specs[i] for i in kept]


def _generate(
    config: GenerateConfig,
    out: Path,
    specs: list[SceneSpec],
    workers: int,
    overwrite: bool,
    progress: Callable[[str, int], Callable[[], None]] | None,
) -> dict[str, Any]:
    tick = progress or (lambda label, total: lambda: None)
    groups = _assign_splits(len(specs), config)  # balance within each split group
    with PayloadSpill(out.parent) as spill:
        synth = _synthesize(config, specs, groups, workers, tick, spill)
        return _write(out, config, specs, groups, synth, spill, workers, tick, overwrite)


def _synthesize(
    config: GenerateConfig,
    specs: list[SceneSpec],
    groups: dict[int, str],
    workers: int | Executor,
    tick: Callable[[str, int], Callable[[], None]],
    spill: PayloadSpill,
) -> SynthesisResult:
    """:func:`~condvln.synth.pipeline.run_synthesis` with the dataset's settings; the vetted
    episodes go to ``spill`` as they arrive."""
    return run_synthesis(
        specs,
        seed=config.seed,
        per_scene=config.per_scene,
        workers=workers,
        counterfactual_share=config.counterfactual_share,
        relation_config=config.relations,
        condition_config=config.conditions,
        radii=(config.multi_room_radius, config.single_room_radius),
        on_scene_done=tick("sampling", len(specs)),
        strata=[groups[i] for i in range(len(specs))],
        train=functools.partial(_is_train, config=config),
        vet=functools.partial(
            _vet,
            specs=tuple(specs),
            config=config,
            groups=tuple(groups[i] for i in range(len(specs))),
        ),
        branch_steps=tuple(sorted(set(config.branch_steps))),
        unpaired=UNPAIRED_SPLITS,
        controlled=UNPAIRED_SPLITS,  # the splits results are reported on
        park=spill.park,
    )


def _vet(
    scene: Any,
    index: int,
    top_up: int,
    instances: list[Instance],
    memo: dict[str, Any],
    *,
    specs: tuple[SceneSpec, ...],
    config: GenerateConfig,
    groups: tuple[str, ...],
) -> tuple[list[Instance], Counter[str]]:
    """:func:`vet_instances` of the run's ``index``-th scene (of split group
    ``groups[index]``), on the exact navigator its sampling used, kept in the scene's ``memo``
    (its goal fields to the leaves are solved already)."""
    spec = specs[index]
    return vet_instances(
        spec, config, scene, index, top_up, instances, memo["exact"], groups[index]
    )


def _require_distinct_ids(specs: list[SceneSpec], scene_ids: list[str]) -> None:
    """Two inputs giving one scene id would share a scene file and leak across splits."""
    first: dict[str, str] = {}
    for spec, scene_id in zip(specs, scene_ids, strict=True):
        name = scene_file_name(scene_id)
        if name in first:
            raise ConfigError(
                f"inputs {first[name]} and {spec.reference} both give scene {scene_id!r}; "
                "rename one of them (scene ids come from the file names)"
            )
        first[name] = spec.reference


def _write(  # long: the docstring states the order the folder is written in
    out: Path,
    config: GenerateConfig,
    specs: list[SceneSpec],
    groups: dict[int, str],
    synth: SynthesisResult,
    spill: PayloadSpill,
    workers: int | Executor,
    tick: Callable[[str, int], Callable[[], None]],
    overwrite: bool,
) -> dict[str, Any]:
    """Write the dataset folder: the vocabulary from every kept instruction, then (in a
    temporary sibling folder, moved to ``out`` at the end) each scene's files as its worker
    returns them, every split episode by episode from ``spill``, and the card. Only instance
    metadata and a summary per episode stay in memory (``groups``: each scene's split group)."""
    by_scene: dict[str, list[Instance]] = defaultdict(list)
    for inst in synth.instances:
        by_scene[inst.scene_id].append(inst)
    splits: dict[str, list[Instance]] = defaultdict(list)
    for index, scene_id in enumerate(synth.scene_ids):
        for inst in by_scene.get(scene_id, []):
            splits[_split_of(groups[index], inst, config)].append(inst)
    texts = (
        t
        for kept in splits.values()
        for inst in kept
        for e, _ in [_record(inst, spill)]
        for t in (e["instruction"]["instruction_text"], e["info"]["condvln"]["oracle_instruction"])
    )
    vocab = build_vocab(texts)
    index = {w: i for i, w in enumerate(vocab)}
    with atomic_directory(out, replace=overwrite) as tmp:
        scenes = _write_scenes(tmp, specs, workers, tick("episodes", len(specs)))
        _write_habitat_index(tmp, scenes)
        summaries = {}
        for split in SPLITS:  # every split, even an empty one, so loaders find them all
            records = (_record(inst, spill) for inst in splits.get(split, []))
            written = _write_split(tmp, split, records, vocab, index)
            if split in splits:
                summaries[split] = written
        requested = requested_episodes(groups, config)
        stats = dataset_stats(summaries, Counter(synth.rejections), synth, config, vocab, requested)
        (tmp / "stats.json").write_bytes(orjson.dumps(stats, option=orjson.OPT_INDENT_2))
        (tmp / "README.md").write_text(dataset_card(stats))
    return stats


def _write_scenes(
    root: Path, specs: list[SceneSpec], workers: int | Executor, done: Callable[[], None]
) -> list[tuple[str, str, bool]]:
    """Every scene's file and assets, written as the workers return them:
    ``(habitat scene id, scene file, composed)`` per scene."""
    scenes = []
    for files in ordered_map(_scene_files, specs, workers, done):
        (root / files.scene_file).parent.mkdir(parents=True, exist_ok=True)
        (root / files.scene_file).write_bytes(files.scene_json)
        for relative, data in files.assets.items():
            (root / relative).write_bytes(data)
        scenes.append((files.habitat_scene_id, files.scene_file, bool(files.assets)))
    return scenes


def _write_habitat_index(root: Path, scenes: list[tuple[str, str, bool]]) -> None:
    """``scenes/index.json`` (scene_id → scene JSON) and, when meshes were composed, the
    dataset's habitat-sim scene dataset config (``scenes``: :func:`_write_scenes`)."""
    index = {scene_id: scene_file for scene_id, scene_file, _ in scenes}
    (root / SCENE_INDEX).parent.mkdir(parents=True, exist_ok=True)
    (root / SCENE_INDEX).write_bytes(orjson.dumps(index, option=orjson.OPT_INDENT_2))
    composed = [Path(scene_file).stem for _, scene_file, assets in scenes if assets]
    if composed:
        config = orjson.dumps(dataset_config(composed), option=orjson.OPT_INDENT_2)
        (root / DATASET_CONFIG).write_bytes(config)


def _write_split(
    root: Path,
    split: str,
    records: Iterable[Record],
    vocab: list[str],
    index: dict[str, int],
) -> list[EpisodeSummary]:
    """A split's episode file and its ``_gt`` (test: ``_answers``) file, written episode by
    episode (the same bytes as dumping each whole document); the card's summary of each."""
    truth = "_answers" if split == "test" else "_gt"
    summaries = []
    with (
        atomic_gzip_writer(split_path(root, split)) as write_episodes,
        atomic_gzip_writer(split_path(root, split, truth)) as write_truth,
    ):
        write_episodes(b'{"episodes":[')
        write_truth(b"{")
        for number, (episode, actions) in enumerate(records, start=1):
            full, entry = _split_entry(split, number, episode, actions, index)
            comma = b"," if number > 1 else b""
            write_episodes(comma + _json(full))
            write_truth(comma + _json(str(number)) + b":" + _json(entry))
            summaries.append(EpisodeSummary.of(episode))
        write_episodes(b'],"instruction_vocab":' + _json({"word_list": vocab}) + b"}")
        write_truth(b"}")
    return summaries


def _split_entry(
    split: str, number: int, episode: dict[str, Any], actions: dict[str, Any], index: dict[str, int]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Episode ``number`` of ``split`` as written, and its ``_gt`` entry (test: the answers
    entry, the episode keeping no goal or reference path)."""
    text = episode["instruction"]["instruction_text"]
    full = {
        "episode_id": number,
        "trajectory_id": number,
        **{k: v for k, v in episode.items() if k != "trajectory_id"},
        "instruction": {"instruction_text": text, "instruction_tokens": encode(text, index)},
    }
    habitat_extra = {k: full[k] for k in OPTIONAL_EPISODE_KEYS if full.get(k) is not None}
    full = {k: full[k] for k in EPISODE_KEYS}
    if split != "test":
        return full | habitat_extra, actions
    answer = {k: full[k] for k in ("goals", "reference_path", "info")}
    answer["gt"] = actions
    # VLN-CE's NDTW measure reads locations at the top of each entry of GT_PATH
    answer["locations"] = actions["locations"]
    full = {k: full[k] for k in TEST_EPISODE_KEYS} | {"goals": [], "reference_path": []}
    return full | habitat_extra, answer


def _json(value: Any) -> bytes:
    """Compact JSON, as the split files are written (:func:`~condvln.vlnce.dump_gz`)."""
    return orjson.dumps(value, option=orjson.OPT_SERIALIZE_NUMPY)
