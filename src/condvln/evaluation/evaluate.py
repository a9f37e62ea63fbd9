"""``condvln evaluate``: score a predictions file against a dataset split and write the results.

:func:`evaluate_run` reads the predictions (:mod:`.predictions`, either format), scores every
episode of the split in continuous mode with :func:`~.scoring.score_episode`, aggregates
(:mod:`.aggregate`) and writes to the output folder::

    episodes.jsonl    one record per dataset episode (dataset order): episode metadata
                      (episode_id, split, scene_id, category, depth, chain, composition,
                      observability, horizon, source_dataset, pair_id), every score key,
                      off_map_positions, the value of every plugin metric (:mod:`.specs`)
    metrics.json      counts (episodes, missing, extra, off-map, agent failures, and the
                      summed ``agent_usage`` of agents that record one), aggregates with 95 %
                      intervals, pair consistency, invariant checks, failure categories,
                      breakdowns by source, category, depth, chain, composition, observability,
                      horizon
    table2.md / .csv  paper Table 2 layout (:func:`~.tables.table2`)
    table3.md / .csv  paper Table 3 layout (:func:`~.tables.table3`)
    manifest.json     versions, dataset and predictions paths and SHA-256, split, seed, metric
                      options, navigator settings, timestamp (the only non-deterministic file)

Distances, as VLN-CE measures them:

* geodesic (goal, subgoals, every branch goal) from the exact engine — one
  :class:`~condvln.nav.ExactNavigator` per scene, one field per target (the same engine and
  the same computation that stored ``info.geodesic_distance``, so a start position scores
  exactly ℓ). Every distance a metric can depend on is exact: the last position, every
  position within the target's radius (straight line), and the nearest position (branch and
  bound on the straight-line distance); other positions carry a lower bound above the radius
  and not below that minimum — their straight-line ground distance, or the bound at which the
  branch and bound stopped measuring them (:meth:`SceneGeodesic.distances`);
* Euclidean for TL, nDTW and CLS; the reference of nDTW / SDTW / CLS is the episode's dense
  ground truth (``locations`` of ``{split}_gt.json.gz``; test: ``test_answers.json.gz``) as in
  VLN-CE's ``NDTW`` measure, or — for an episode without one — its ``reference_path``
  densified every 0.25 m (:mod:`.reference`); each record says which (``fidelity_reference``)
  and ``metrics.json`` counts both under ``fidelity`` with the threshold d_th;
* radius = the goal's radius, ℓ = ``info.geodesic_distance`` (as VLN-CE's SPL), gold branch =
  ``leaf_index``.

Scenes are scored as independent tasks on an executor (processes or Ray, gathered in dataset
order); ``shard`` scores one contiguous part of the split, and ``condvln merge`` re-aggregates
shard folders into the same files as one evaluation (:mod:`condvln.parallel.merge`).

Missing episodes (in the split, not in the predictions) score as
:func:`~.scoring.invalid_episode`; extra ids (in the predictions, not in the split) are counted
and listed, not scored. **Off-map rule:** a position the navigator cannot reach (off the
navigable area by more than ``GridConfig.max_snap``, or on an island) has no geodesic distance;
it is counted in ``off_map_positions`` and scored with its straight-line distance to each
target, raised to just above the success radius, so it is never within any radius (strict or
not) while the distances stay finite.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import platform
import sys
import zlib
from collections import Counter, OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numba
import numpy as np
import orjson
from numpy.typing import NDArray
from rich.console import Group, RenderableType
from rich.text import Text

from condvln import __version__
from condvln.dataset.schema import DESIGN_FIELDS, load_checked_split
from condvln.errors import CondVLNError, ConfigError, FormatError, ValidationError
from condvln.evaluation.aggregate import aggregate, breakdown, check_invariants, pair_consistency
from condvln.evaluation.metrics import DEFAULT_OPTIONS, MetricOptions
from condvln.evaluation.predictions import (
    AGENT_FAILURES,
    Predictions,
    Trajectory,
    read_predictions,
)
from condvln.evaluation.reference import VLNCE_STEP, fidelity_reference, gt_locations
from condvln.evaluation.scoring import Record, invalid_episode, score_episode
from condvln.evaluation.spaces import ContinuousSpace, FloatArray
from condvln.evaluation.specs import EpisodeResult, plugin_scores
from condvln.evaluation.tables import (
    FAILURE_CATEGORIES,
    NDTW_LEGEND,
    ResultTable,
    spl_legend,
    table2,
    table3,
    terminal_tables,
)
from condvln.io import atomic_write_bytes, dumps_json, output_lock, output_path, read_json
from condvln.nav import ExactField, ExactNavigator, GridConfig, Unreachable
from condvln.nav._visibility import metric_rows
from condvln.parallel.executors import (
    Executor,
    PinnedProcesses,
    fresh_local_workers,
    in_background,
    ordered_map,
)
from condvln.parallel.shards import Shard
from condvln.provenance import provenance
from condvln.scene.model import Scene
from condvln.scene.serialize import load_scene
from condvln.vlnce import (
    SPLITS,
    available_splits,
    load_scene_index,
    load_split,
    scene_json_path,
    scene_relative,
    split_path,
)

LABEL_KEYS = (*DESIGN_FIELDS, "source_dataset", "pair_id", "phrasing_seen")
"""Keys copied from ``info.condvln`` into every per-episode record."""

BREAKDOWN_KEYS = ("source_dataset", *DESIGN_FIELDS)
"""Record keys that ``metrics.json`` breaks the main metrics down by."""

MAIN_METRICS = (
    "success",
    "oracle_success",
    "spl",
    "distance_to_goal",
    "path_length",
    "ndtw",
    "sdtw",
    "cls",
    "bsa",
    "csr",
    "bsa_branch",
    "csr_all",
    "wrong_branch",
)
"""Metrics reported in breakdowns and in the printed summary."""

PAIR_CORRECT = "csr_all"
"""What makes a pair member right in ``pair_consistency``: CSR_all (every subgoal of the gold
path reached in order and the gold goal reached), so a pair counts when both members are."""

NAV_CONFIG = GridConfig()
"""Navigator settings for scoring: snapping (``max_snap``) as generation."""

GEODESIC_CACHE = 32
"""Scenes whose :class:`SceneGeodesic` a process keeps between scoring tasks (most recently
used first): evaluations of several runs on pinned processes (``condvln benchmark``) solve
each goal's exact field once, not once per run."""

EXTRA_IDS_LISTED = 100
"""At most this many extra episode ids are listed in ``metrics.json`` (all are counted)."""


class SceneGeodesic:
    """Exact geodesic distances in one scene: a navigator and one cached field per target.

    Args:
        scene: the scene, or its JSON file.
    """

    def __init__(self, scene: Scene | Path) -> None:
        scene = scene if isinstance(scene, Scene) else load_scene(scene)
        self.navigator = ExactNavigator(scene, config=NAV_CONFIG)
        self._fields: dict[tuple[float, ...], ExactField] = {}
        self._rows: dict[bytes, int] = {}  # target bytes -> row of the tables below
        polygon = self.navigator.polygon
        self._vertex_table = np.empty((0, polygon.reflex.size))  # each field's vertex distances
        self._order_table = np.empty((0, polygon.reflex.size), dtype=np.int64)  # their argsort
        self._goal_table = np.empty((0, 3))  # each field's (snapped) goal
        self._last = (b"", np.empty((1, 2)), np.zeros(1, dtype=bool))  # the last point located

    def field(self, target: FloatArray) -> ExactField:
        """The exact field of ``target`` (solved once; :class:`Unreachable` if off-map)."""
        key = tuple(np.asarray(target, dtype=np.float64).tolist())
        field = self._fields.get(key)
        if field is None:
            field = self._fields[key] = self.navigator.distance_field(key)
        return field

    def off_map(self, points: FloatArray, goal: FloatArray) -> FloatArray:
        """Boolean mask of the points the navigator cannot reach (measured with ``goal``'s field)."""
        return ~self.field(goal).reachable(points)

    def distances(self, points: FloatArray, target: FloatArray, radius: float) -> FloatArray:
        """Geodesic ``points → target`` wherever a metric can depend on it (see :meth:`rows`)."""
        return self.rows(points, np.asarray(target, dtype=np.float64)[None], radius)[0]

    def rows(self, points: FloatArray, targets: FloatArray, radius: float) -> FloatArray:
        """Geodesic ``points → targets`` ``(len(targets), len(points))`` wherever a metric can
        depend on it (the module notes); repeated positions are measured once and every
        position is snapped once.

        Exact: the last point, every point whose straight-line ground distance is at most
        ``radius`` and the minimum over all points (branch and bound: points are measured in
        order of ground distance until that exceeds the smallest measured value, each only
        below that value). Unreachable points follow the module's off-map rule. Every other
        point gets a lower bound of its geodesic that is above ``radius`` and not below the
        minimum (its ground distance, or the bound its measurement stopped at), so NE,
        success, oracle success / NE, subgoals reached and branch choice are exact
        (:func:`condvln.nav._visibility.metric_rows`).
        """
        unique, runs = distinct_runs(np.asarray(points, dtype=np.float64))
        polygon = self.navigator.polygon
        snapped, ok = self._locate(unique)
        index = self._table_rows(np.asarray(targets, dtype=np.float64))
        return metric_rows(
            *polygon.kernel_args,
            polygon.corners,
            self._vertex_table[index],
            self._order_table[index],
            self._goal_table[index],
            unique,
            np.ascontiguousarray(snapped),
            ok,
            runs,
            float(radius),
            float(np.nextafter(radius, np.inf)),
        )

    def _locate(self, unique: FloatArray) -> tuple[FloatArray, NDArray[np.bool_]]:
        """:meth:`~condvln.nav.polygon.NavPolygon.locate` of the ground points of ``unique``;
        the last point is remembered, so scoring a stop position after its trajectory (the
        leaf goals of :func:`~condvln.evaluation.scoring.score_episode`) locates it once."""
        key = unique[-1].tobytes()
        if len(unique) == 1 and key == self._last[0]:
            return self._last[1], self._last[2]
        snapped, ok = self.navigator.polygon.locate(unique[:, ::2], NAV_CONFIG.max_snap)
        self._last = (key, snapped[-1:], ok[-1:])
        return snapped, ok

    def _table_rows(self, targets: FloatArray) -> NDArray[np.int64]:
        """The rows of ``targets``' fields in the vertex and goal tables (solved once each)."""
        index = np.empty(len(targets), dtype=np.int64)
        for i, target in enumerate(targets):
            row = self._rows.get(target.tobytes())
            if row is None:
                field = self.field(target)
                row = self._rows[target.tobytes()] = len(self._goal_table)
                self._vertex_table = np.vstack([self._vertex_table, field.vertex_distance])
                order = np.argsort(field.vertex_distance, kind="stable")
                self._order_table = np.vstack([self._order_table, order])
                self._goal_table = np.vstack([self._goal_table, field.goal])
            index[i] = row
        return index


@numba.njit(cache=True, nogil=True)
def distinct_runs(points: FloatArray) -> tuple[FloatArray, NDArray[np.int64]]:
    """``points`` without in-place repeats (one row per run of equal consecutive rows) and the
    run of every row, so ``unique[runs]`` is ``points`` (at least one row)."""
    if points.shape[0] == 0:
        raise ValueError("no points")
    runs = np.zeros(points.shape[0], dtype=np.int64)
    for i in range(1, points.shape[0]):
        runs[i] = runs[i - 1] + (points[i] != points[i - 1]).any()
    unique = np.empty((runs[-1] + 1, points.shape[1]))
    for i in range(points.shape[0]):
        unique[runs[i]] = points[i]
    return unique, runs


def sha256_file(path: Path) -> str:
    """Hex SHA-256 of a file's bytes."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def load_split_episodes(dataset_dir: Path, split: str) -> list[dict[str, Any]]:
    """The schema-checked episodes of a split; for ``test`` merged with ``test_answers``.

    Raises:
        FormatError: the first malformed record (file, episode, field).
    """
    return load_checked_split(dataset_dir, split).episodes


def choose_split(dataset_dir: Path, episode_ids: Sequence[int]) -> str:
    """The split the predicted ids belong to.

    Every split numbers its episodes ``1..N``, so ids alone can be ambiguous. The split whose
    id set equals the predicted ids wins; otherwise the only split that contains them all;
    otherwise the only split sharing the most ids. Anything else is a :class:`ConfigError`
    asking for ``--split``.
    """
    ids = set(episode_ids)
    ranked = []
    for split in available_splits(dataset_dir):
        episodes = load_split(dataset_dir, split)["episodes"]
        own = {e.get("episode_id") for e in episodes if isinstance(e, dict)}
        own = {i for i in own if isinstance(i, int) and not isinstance(i, bool)}
        if own:
            ranked.append(((own == ids, own >= ids, len(own & ids)), split))
    ranked.sort(key=lambda item: item[0], reverse=True)
    if not ranked or ranked[0][0][2] == 0:
        raise ConfigError(f"no split of {dataset_dir} holds any predicted episode id")
    tied = [split for rank, split in ranked if rank == ranked[0][0]]
    if len(tied) > 1:
        raise ConfigError(
            f"the predicted episode ids fit splits {', '.join(tied)} equally; pass --split"
        )
    return tied[0]


def _metadata(episode: Mapping[str, Any], split: str) -> Record:
    labels = episode["info"]["condvln"]
    meta = {"episode_id": episode["episode_id"], "split": split, "scene_id": episode["scene_id"]}
    return meta | {key: labels.get(key) for key in LABEL_KEYS}


def score_prediction(
    episode: Mapping[str, Any],
    trajectory: Trajectory,
    geodesic: SceneGeodesic,
    reference: Any,
    options: MetricOptions = DEFAULT_OPTIONS,
) -> Record:
    """Score one predicted trajectory against its episode (continuous mode).

    Args:
        reference: the nDTW / SDTW / CLS reference (:func:`~.reference.fidelity_reference`).

    Returns:
        The :func:`~.scoring.score_episode` record plus ``off_map_positions``.
    """
    labels = episode["info"]["condvln"]
    goal = episode["goals"][0]
    radius = float(goal["radius"])
    target = np.asarray(goal["position"], dtype=np.float64)
    try:
        off_map = int(np.count_nonzero(geodesic.off_map(trajectory.positions, target)))
        record = score_episode(
            trajectory.positions,
            space=ContinuousSpace(rows=lambda p, t: geodesic.rows(p, t, radius)),
            radius=radius,
            reference_path=reference,
            goal=goal["position"],
            subgoals=[s["position"] for s in labels["subgoals"]],
            branch_subgoals=[s["position"] for s in labels.get("branch_subgoals", [])],
            stop_called=trajectory.stop,
            shortest_path_length=float(episode["info"]["geodesic_distance"]),
            branch_goals=[b["position"] for b in labels["branch_goals"]],
            gold_branch=labels["leaf_index"],
            actions=trajectory.actions,
            options=options,
        )
    except Unreachable as exc:
        raise ValidationError(f"episode {episode['episode_id']}: field 'goals': {exc}") from None
    return record | {"off_map_positions": off_map}


def score_split(
    dataset_dir: Path,
    episodes: Sequence[Mapping[str, Any]],
    predictions: Predictions,
    split: str,
    options: MetricOptions = DEFAULT_OPTIONS,
    locations: Mapping[str, Any] | None = None,
    executor: int | Executor | PinnedProcesses = 1,
) -> list[Record]:
    """One record per episode, in dataset order (missing predictions: invalid records).

    ``locations`` are the ground-truth locations by episode id (:func:`~.reference.gt_locations`;
    ``None`` reads them from the dataset). Episodes are scored scene by scene (one task per scene
    on ``executor``; on :class:`PinnedProcesses` a scene always on the same process, which
    keeps its geodesics for the next run, see :data:`GEODESIC_CACHE`).
    """
    if locations is None:
        locations, _ = gt_locations(dataset_dir, split)
    records: list[Record | None] = [None] * len(episodes)
    index = load_scene_index(dataset_dir)
    paths: dict[str, Path] = {}  # relative scene JSON → its path (resolved once per scene)
    files = []
    for ep in episodes:
        relative = scene_relative(ep, index)
        if relative not in paths:
            paths[relative] = scene_json_path(dataset_dir, dict(ep), index)
        files.append(paths[relative])
    order = sorted(range(len(episodes)), key=lambda i: files[i])
    groups, tasks = [], []
    for scene_file, group in itertools.groupby(order, key=lambda i: files[i]):
        indices = list(group)
        ids = [episodes[i]["episode_id"] for i in indices]
        mine = {k: predictions[k] for k in ids if k in predictions}
        # the scene's own ground truth only: a task is pickled to a worker, and the whole
        # split's locations once per scene made two workers slower than one
        own = {str(k): locations[str(k)] for k in ids if str(k) in locations}
        groups.append(indices)
        tasks.append(
            (dataset_dir, scene_file, [episodes[i] for i in indices], mine, split, options, own)
        )
    scored_scenes = _score_scenes(tasks, executor)
    for indices, scored in zip(groups, scored_scenes, strict=True):
        for i, record in zip(indices, scored, strict=True):
            records[i] = record
    return [r for r in records if r is not None]


_ScoreTask = tuple[Path, Path, list[Mapping[str, Any]], Predictions, str, MetricOptions, Any]
_GEODESICS: OrderedDict[tuple[str, int, int], SceneGeodesic] = OrderedDict()


def _score_scenes(
    tasks: list[_ScoreTask], executor: int | Executor | PinnedProcesses
) -> Iterator[list[Record]]:
    """Each task's records, in order, on ``executor``.

    Fresh local worker processes fork from this one after it has scored the first scene
    itself, so they inherit numba's set-up and the kernels that scene loaded instead of each
    loading them again (about 0.4 s of two workers' 2,050 episodes).
    """
    if not fresh_local_workers(executor) or len(tasks) < 2:
        yield from ordered_map(_score_scene, tasks, executor, key=_scene_task_key)
        return
    yield _score_scene(tasks[0])
    yield from ordered_map(_score_scene, tasks[1:], executor)


def _scene_task_key(task: _ScoreTask) -> int:
    """The pinned process of a scene's task: a stable hash of its scene file."""
    return zlib.crc32(str(task[1]).encode())


def _scene_geodesic(scene_file: Path) -> SceneGeodesic:
    """The scene's :class:`SceneGeodesic`, kept for the process's next tasks (the file's
    size and modification time are part of the key, so a rewritten scene is loaded again)."""
    try:
        stat = scene_file.stat()
    except OSError:
        return SceneGeodesic(scene_file)  # the loader says what is wrong with the file
    key = (str(scene_file), stat.st_mtime_ns, stat.st_size)
    geodesic = _GEODESICS.get(key)
    if geodesic is None:
        geodesic = _GEODESICS[key] = SceneGeodesic(scene_file)
        while len(_GEODESICS) > GEODESIC_CACHE:
            _GEODESICS.popitem(last=False)
    _GEODESICS.move_to_end(key)
    return geodesic


def _score_scene(task: _ScoreTask) -> list[Record]:
    """The records of one scene's episodes (an executor task)."""
    dataset_dir, scene_file, episodes, predictions, split, options, locations = task
    try:
        geodesic = _scene_geodesic(scene_file) if predictions else None
    except FormatError as exc:
        raise exc.with_file(str(scene_file)) from None
    records = []
    for episode in episodes:
        try:
            records.append(_score_one(episode, predictions, geodesic, split, options, locations))
        except ValidationError as exc:
            raise ValidationError(f"{split_path(dataset_dir, split)}: {exc}") from None
        except (KeyError, IndexError, TypeError) as exc:
            raise FormatError(
                f"missing or malformed episode field ({exc!r})",
                file=str(split_path(dataset_dir, split)),
                record=f"episode {episode.get('episode_id')}",
            ) from None
    return records


def _score_one(
    episode: Mapping[str, Any],
    predictions: Predictions,
    geodesic: SceneGeodesic | None,
    split: str,
    options: MetricOptions,
    locations: Mapping[str, Any],
) -> Record:
    """The record of one episode: scored, or invalid when it has no prediction."""
    trajectory = predictions.get(episode["episode_id"])
    reference, source = fidelity_reference(episode, locations)
    if trajectory is None or geodesic is None:
        labels = episode["info"]["condvln"]
        n_arm = len(labels.get("branch_subgoals", []))
        score = invalid_episode(len(labels["subgoals"]), n_arm) | {"off_map_positions": 0}
    else:
        score = score_prediction(episode, trajectory, geodesic, reference, options)
    status = None if trajectory is None else trajectory.status
    agent = {
        "agent_status": status,
        "agent_fault": None if status is None else status in AGENT_FAILURES,
    } | agent_usage(trajectory)
    meta = _metadata(episode, split) | {"fidelity_reference": source}
    record = meta | score | _branch_choice(episode, score) | agent
    plugins = plugin_scores(EpisodeResult(score, episode, trajectory))
    if taken := sorted(plugins.keys() & record.keys()):
        raise ConfigError(f"metric '{taken[0]}' has the name of a key of every episode record")
    return record | plugins


def _branch_choice(episode: Mapping[str, Any], score: Record) -> Record:
    """Which branch the agent chose, next to the gold one and the chance level.

    ``branch_correct``: the agent ended nearest the gold leaf goal (``None`` when it never
    moved towards any: invalid episodes); ``reached_branch_goal``: it stopped within the radius
    of *some* branch goal — plausible navigation, whether or not the branch was right.
    """
    labels = episode["info"]["condvln"]
    gold, committed = labels["leaf_index"], score.get("branch_commitment")
    return {
        "gold_branch": gold,
        "n_branches": labels["n_branches"],
        "branch_chance": 1.0 / labels["n_branches"],
        "branch_correct": None if committed is None else committed == gold,
        "reached_branch_goal": bool(score.get("success")) or bool(score.get("wrong_branch")),
    }


def _group_name(values: tuple[Any, ...]) -> str:
    return ",".join("null" if v is None else str(v) for v in values)


def _breakdowns(
    records: Sequence[Record], seed: int, executor: int | Executor | PinnedProcesses
) -> Record:
    """``{key: {group: {"episodes": n, "metrics": {metric: aggregate}}}}`` for the main metrics,
    a key a task on ``executor`` (each key's bootstrap resamples every record)."""
    tasks = [(records, key, seed) for key in BREAKDOWN_KEYS]
    return dict(zip(BREAKDOWN_KEYS, ordered_map(_key_breakdown, tasks, executor), strict=True))


def _key_breakdown(task: tuple[Sequence[Record], str, int]) -> Record:
    """The breakdown of the main metrics by one key (an executor task)."""
    records, key, seed = task
    sizes = Counter(r.get(key) for r in records)
    return {
        _group_name(group): {
            "episodes": sizes[group[0]],
            "metrics": {k: a.to_dict() for k, a in aggs.items()},
        }
        for group, aggs in breakdown(records, key, MAIN_METRICS, seed=seed).items()
    }


def summarize(
    records: Sequence[Record], *, seed: int = 0, executor: int | Executor | PinnedProcesses = 1
) -> Record:
    """Aggregates, pair consistency, invariant checks, failure categories and breakdowns.

    Args:
        records: per-episode records (:func:`score_split` output).
        seed: bootstrap seed.
        executor: where the breakdowns are computed (a task per key; the same numbers anywhere).

    Returns:
        The ``metrics.json`` body without the run counts.
    """
    overall = aggregate(records, seed=seed)
    violations = check_invariants(overall)
    failures = Counter(r.get("failure_category") for r in records)
    n = max(len(records), 1)
    return {
        "metrics": {k: a.to_dict() for k, a in overall.items()},
        "pair_consistency": pair_consistency(records, correct_key=PAIR_CORRECT).to_dict(),
        "invariants": {"ok": not violations, "violations": violations},
        "failure_categories": {
            c: {"count": failures[c], "share": failures[c] / n} for c in FAILURE_CATEGORIES
        },
        "breakdowns": _breakdowns(records, seed, executor),
    }


def _counts(
    records: Sequence[Record], predictions: Predictions, split_ids: set[int] | None = None
) -> Record:
    """``metrics.json`` counts; ``split_ids``: ids of the whole split when ``records`` is a shard."""
    episode_ids = {r["episode_id"] for r in records}
    extra = sorted(set(predictions) - (episode_ids if split_ids is None else split_ids))
    return {
        "episodes": len(records),
        "predicted": len(predictions),
        "scored": len(episode_ids & set(predictions)),
        "missing": len(episode_ids - set(predictions)),
        "extra": len(extra),
        "extra_ids": extra[:EXTRA_IDS_LISTED],
        **record_counts(records),
    }


USAGE_KEYS = ("requests", "prompt_tokens", "completion_tokens", "cost", "fallbacks")
"""Per-episode model usage an agent may record (``agent_notes.usage``, e.g. the ``llm`` agent)."""


def _amount(value: Any) -> int | float:
    """A recorded count or cost: a finite non-negative number, else 0."""
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    return value if ok and 0 <= value < float("inf") else 0


def agent_usage(trajectory: Trajectory | None) -> Record:
    """``{"agent_usage": {requests, tokens, cost, fallbacks}}`` from the trajectory's
    ``agent_notes`` (``usage`` and ``fallbacks`` by kind), or ``{}`` when it records none."""
    notes = trajectory.notes if trajectory is not None else None
    usage = notes.get("usage") if notes is not None else None
    if not isinstance(usage, dict):
        return {}
    fallbacks = notes.get("fallbacks") if notes is not None else None
    totals = {k: _amount(usage.get(k)) for k in USAGE_KEYS[:-1]}
    kinds = fallbacks.values() if isinstance(fallbacks, dict) else ()
    return {"agent_usage": totals | {"fallbacks": sum(_amount(n) for n in kinds)}}


def record_counts(records: Sequence[Record]) -> Record:
    """The counts that follow from the per-episode records alone (off-map, agent failures,
    summed ``agent_usage`` when some record has one)."""
    off_map = [r["off_map_positions"] for r in records]
    usage = [r["agent_usage"] for r in records if r.get("agent_usage")]
    totals = {"episodes": len(usage)} | {k: sum(u[k] for u in usage) for k in USAGE_KEYS}
    extra = {"agent_usage": totals | {"cost": round(totals["cost"], 8)}} if usage else {}
    return {
        "off_map_positions": int(sum(off_map)),
        "off_map_episodes": int(sum(1 for k in off_map if k)),
        "agent_failures": {
            status: sum(r.get("agent_status") == status for r in records)
            for status in AGENT_FAILURES
        },
        **extra,
    }


def fidelity_summary(
    records: Sequence[Record], options: MetricOptions, gt_file: str | None
) -> Record:
    """The ``fidelity`` block of ``metrics.json``: d_th and where every reference came from."""
    sources = Counter(r.get("fidelity_reference") for r in records)
    return {
        "ndtw_threshold": options.fidelity_threshold,
        "reference": "ground-truth locations (VLN-CE NDTW measure)",
        "dtw": "exact",
        "gt_file": gt_file,
        "episodes_gt": sources["gt"],
        "episodes_densified": sources["densified"],
        "densify_step": VLNCE_STEP,
        "spl_gt_replay": gt_replay_spl(records),
    }


def gt_replay_spl(records: Sequence[Record]) -> float | None:
    """Mean SPL a perfect replay of the nDTW reference (the ``_gt`` locations) scores on the
    scored episodes: it stops at the goal (success), so ``ℓ / max(ℓ, reference length)``.

    >>> gt_replay_spl([{"geodesic_distance": 3.0, "reference_path_length": 4.0},
    ...                {"geodesic_distance": 2.0, "reference_path_length": 2.0},
    ...                {"geodesic_distance": None, "reference_path_length": None}])
    0.875
    """
    values = [
        ell / max(ell, length) if max(ell, length) > 0 else 1.0
        for r in records
        if (ell := r.get("geodesic_distance")) is not None
        and (length := r.get("reference_path_length")) is not None
    ]
    return float(np.mean(values)) if values else None


def fidelity_note(fidelity: Mapping[str, Any]) -> str:
    """One caption line for the tables: d_th and the reference of nDTW / SDTW / CLS.

    >>> fidelity_note({"ndtw_threshold": 3.0, "episodes_gt": 5, "episodes_densified": 0,
    ...                "densify_step": 0.25, "spl_gt_replay": 0.7})  # doctest: +NORMALIZE_WHITESPACE
    'nDTW / SDTW / CLS: d_th = 3.0 m; reference = _gt locations (5 episodes); nDTW: exact DTW
    (VLN-CE `FDTW=False`); SPL of a perfect _gt replay: 0.700 (ℓ = start → goal geodesic, as
    VLN-CE; the subgoals lengthen the path)'
    """
    parts = [f"_gt locations ({fidelity['episodes_gt']} episodes)"]
    if fidelity["episodes_densified"]:
        parts.append(
            f"reference_path densified every {fidelity['densify_step']} m "
            f"({fidelity['episodes_densified']} episodes without _gt)"
        )
    legend = "; ".join(legend_lines(fidelity).values())
    return f"nDTW / SDTW / CLS: d_th = {fidelity['ndtw_threshold']} m; reference = " + (
        f"{', '.join(parts)}; {legend}"
    )


def legend_lines(fidelity: Mapping[str, Any]) -> dict[str, str]:
    """The legend of every table and of ``metrics.json``: nDTW's DTW and the SPL of a perfect
    ``_gt`` replay (:func:`gt_replay_spl`) beside SPL."""
    return {"ndtw": NDTW_LEGEND, "spl": spl_legend(fidelity.get("spl_gt_replay"))}


def metrics_and_tables(
    name: str,
    split: str,
    records: Sequence[Record],
    counts: Mapping[str, Any],
    options: MetricOptions,
    gt_file: str | None,
    seed: int,
    executor: int | Executor | PinnedProcesses = 1,
) -> tuple[Record, dict[str, Any]]:
    """The ``metrics.json`` content and Tables 2 / 3 of one run's scored records (breakdowns
    computed on ``executor``)."""
    fidelity = fidelity_summary(records, options, gt_file)
    metrics = {
        "run": name,
        "split": split,
        "legend": legend_lines(fidelity),
        "counts": counts,
        "fidelity": fidelity,
        **summarize(records, seed=seed, executor=executor),
    }
    runs = {name: list(records)}
    note = fidelity_note(fidelity)
    tables = {
        "table2": dataclasses.replace(table2(runs), note=note),
        "table3": dataclasses.replace(table3(runs), note=note),
    }
    return metrics, tables


def _manifest(
    dataset_dir: Path, predictions_path: Path, split: str, seed: int, options: MetricOptions
) -> Record:
    split_file = split_path(dataset_dir, split)
    dataset: Record = {
        "path": str(dataset_dir.resolve()),
        "split": split,
        "split_file": str(split_file.relative_to(dataset_dir)),
        "sha256": sha256_file(split_file),
    }
    if split == "test":
        answers = split_path(dataset_dir, split, "_answers")
        dataset |= {
            "answers_file": str(answers.relative_to(dataset_dir)),
            "answers_sha256": sha256_file(answers),
        }
    return {
        "condvln_version": __version__,
        "command": "evaluate",
        "provenance": provenance(),
        "dataset": dataset,
        "predictions": {
            "path": str(predictions_path.resolve()),
            "sha256": sha256_file(predictions_path),
        },
        "seed": seed,
        "metric_options": dataclasses.asdict(options),
        "navigator": {"backend": "exact", "max_snap": NAV_CONFIG.max_snap},
        "off_map_rule": "unreachable positions: straight-line distance, raised above the radius",
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "platform": platform.platform(),
        "timestamp": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def _write_outputs(out_dir: Path, result: Record) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    lines = b"".join(orjson.dumps(r) + b"\n" for r in result["records"])
    atomic_write_bytes(out_dir / "episodes.jsonl", lines)
    atomic_write_bytes(out_dir / "metrics.json", dumps_json(result["metrics"], indent=True))
    for name, table in result["tables"].items():
        atomic_write_bytes(out_dir / f"{name}.md", table.to_markdown().encode())
        atomic_write_bytes(out_dir / f"{name}.csv", table.to_csv().encode())
    atomic_write_bytes(out_dir / "manifest.json", dumps_json(result["manifest"], indent=True))


def run_name_of(predictions_path: Path, manifest: Mapping[str, Any] | None = None) -> str:
    """Default run name: the run's agent (``file.py:Class`` → ``Class``; an agent server's
    ``/info`` name), else the predictions file name without its extensions.

    >>> run_name_of(Path("runs/mine/trajectories.jsonl"), {"agent": "my_agent.py:Seek"})
    'Seek'
    >>> run_name_of(Path("out/preds.json"))
    'preds'
    """
    spec = (manifest or {}).get("agent")
    if isinstance(spec, str) and spec:
        server = (manifest or {}).get("agent_server")
        if isinstance(server, Mapping) and isinstance(server.get("name"), str):
            return str(server["name"])
        return spec.split("//", 1)[-1] if "://" in spec else spec.rpartition(":")[2] or spec
    return predictions_path.name.split(".")[0] or predictions_path.name


RUN_FILES = ("manifest.json", "trajectories.jsonl", "predictions.json")
"""A ``condvln run`` folder's manifest, trajectories and predictions (named as
:mod:`condvln.agents.runner.resume` writes them; evaluation does not import the runner)."""


def run_input(path: Path) -> tuple[Path, dict[str, Any] | None]:
    """The predictions file of ``path`` and the manifest of the run it belongs to: a
    ``condvln run`` folder gives its ``trajectories.jsonl``; a file inside a run folder (next to
    its ``manifest.json``) gives itself; any other file, no manifest.

    Raises:
        ConfigError: A folder that is not a run folder.
        FormatError: An unreadable manifest.
    """
    folder = path if path.is_dir() else path.parent
    manifest_file, trajectories, _ = (folder / name for name in RUN_FILES)
    if path.is_dir():
        path = trajectories
        if not path.is_file():
            raise ConfigError(f"{folder}: not a run folder (no {trajectories.name})")
    elif path.name not in RUN_FILES[1:]:
        return path, None
    if not manifest_file.is_file():
        return path, None
    manifest = read_json(manifest_file, FormatError)
    if not isinstance(manifest, dict):
        raise FormatError("must be a JSON object (the run's manifest)", file=str(manifest_file))
    return path, manifest


def _known_split(split: str | None) -> str | None:
    """``split`` when it is one of :data:`SPLITS` (or ``None``: not chosen yet)."""
    if split is not None and split not in SPLITS:
        raise ConfigError(f"unknown split {split!r} (one of {', '.join(SPLITS)})")
    return split


def _read_inputs(
    dataset_dir: Path,
    predictions_path: Path,
    split: str | None,
    executor: int | Executor | PinnedProcesses,
) -> tuple[str, Predictions, list[dict[str, Any]], tuple[dict[str, Any], str | None]]:
    """The split (``None``: told from the predicted ids), the predictions, the split's checked
    episodes and its ground-truth locations with their file.

    With several local processes the predictions are read in one of them while this process
    reads the split (they are the two largest inputs); a bad predictions file is still the
    error reported first, as when the files are read one after the other.
    """
    with in_background(read_predictions, predictions_path, executor) as predicted:
        split = split or choose_split(dataset_dir, list(predicted()))
        try:
            episodes = load_split_episodes(dataset_dir, split)
            if not episodes:
                raise ConfigError(f"split {split!r} of {dataset_dir} has no episodes")
            locations = gt_locations(dataset_dir, split)
        except CondVLNError:
            predicted()
            raise
        return split, predicted(), episodes, locations


def evaluate_run(
    dataset_dir: str | Path,
    predictions_path: str | Path,
    out_dir: str | Path,
    *,
    split: str | None = None,
    seed: int = 0,
    options: MetricOptions = DEFAULT_OPTIONS,
    run_name: str | None = None,
    executor: int | Executor | PinnedProcesses = 1,
    shard: Shard | None = None,
) -> Record:
    """Score a predictions file against a dataset split and write the output folder.

    Args:
        dataset_dir: dataset folder written by ``condvln generate``.
        predictions_path: VLN-CE leaderboard JSON or CondVLN JSONL, or a ``condvln run``
            folder (its ``trajectories.jsonl``; its manifest gives the split and name).
        out_dir: output folder (created; files in it are replaced).
        split: the split to score (default: the run manifest's, else :func:`choose_split` from
            the predicted ids).
        seed: bootstrap seed of the confidence intervals.
        options: metric conventions.
        run_name: row name in the tables (default: :func:`run_name_of`).
        executor: where scenes are scored (processes, pinned ones or Ray; a task a scene).
        shard: score only this shard of the split (``condvln merge`` joins shard folders).

    Returns:
        ``{"run", "split", "records", "metrics", "tables": {"table2", "table3"}, "manifest",
        "out_dir"}``; ``metrics`` is the ``metrics.json`` content.

    Raises:
        FormatError: unreadable dataset or predictions file.
        ConfigError: unknown split, or one that cannot be told from the predicted ids.
        ValidationError: inconsistent dataset (e.g. a goal off the navigable area).
    """
    dataset_dir, out_dir = Path(dataset_dir), output_path(out_dir)
    predictions_path, run_manifest = run_input(Path(predictions_path))
    split = _known_split(split or (run_manifest or {}).get("split"))
    split, predictions, episodes, (locations, gt_file) = _read_inputs(
        dataset_dir, predictions_path, split, executor
    )
    split_ids = {e["episode_id"] for e in episodes}
    episodes = shard.select(episodes) if shard else episodes
    records = score_split(dataset_dir, episodes, predictions, split, options, locations, executor)
    name = run_name or run_name_of(predictions_path, run_manifest)
    counts = _counts(records, predictions, split_ids)
    gt_rel = None if gt_file is None else str(Path(gt_file).relative_to(dataset_dir))
    metrics, tables = metrics_and_tables(
        name, split, records, counts, options, gt_rel, seed, executor
    )
    manifest = _manifest(dataset_dir, predictions_path, split, seed, options) | {"run": name}
    if shard is not None:
        manifest["shard"] = shard.to_json(len(split_ids))
    result: Record = {"run": name, "split": split, "records": records, "metrics": metrics}
    result |= {"tables": tables, "manifest": manifest, "out_dir": str(out_dir)}
    with output_lock(out_dir):
        _write_outputs(out_dir, result)
    return result


def _fmt(aggregate_dict: Mapping[str, Any]) -> str:
    mean, lo, hi = (aggregate_dict[k] for k in ("mean", "ci_low", "ci_high"))
    if mean is None:
        return "–"
    interval = "" if lo is None else f" [{lo:.3f}, {hi:.3f}]"
    return f"{mean:.3f}{interval} (n={aggregate_dict['n']})"


def render_summary(result: Mapping[str, Any]) -> RenderableType:
    """What ``condvln evaluate`` prints: counts, main metrics, Tables 2 and 3, problems."""
    metrics, counts = result["metrics"], result["metrics"]["counts"]
    lines = [
        Text(
            f"{result['run']} on {result['split']}: {counts['episodes']} episodes, "
            f"{counts['scored']} scored, {counts['missing']} missing, {counts['extra']} extra ids, "
            f"{counts['off_map_positions']} off-map positions in {counts['off_map_episodes']} "
            "episodes",
            style="yellow" if counts["missing"] or counts["extra"] else "",
        )
    ]
    lines += [
        Text(f"  {key}: {_fmt(metrics['metrics'][key])}")
        for key in MAIN_METRICS
        if key in metrics["metrics"]
    ]
    lines.append(
        Text(
            f"  {fidelity_note(metrics['fidelity'])}",
            style="yellow" if metrics["fidelity"]["episodes_densified"] else "",
        )
    )
    pairs = f"pair_consistency (both members CSR_all): {_fmt(metrics['pair_consistency'])}"
    if result["split"] == "pairs":  # the diagnostic split is scored per pair: its headline
        lines.insert(1, Text(f"  {pairs}", style="bold"))
    else:
        lines.append(Text(f"  {pairs}"))
    failed = {k: n for k, n in counts["agent_failures"].items() if n}
    if failed:
        listed = ", ".join(f"{n} {k}" for k, n in failed.items())
        lines.append(Text(f"agent failures (scored as failed episodes): {listed}", style="yellow"))
    lines += [
        Text(f"invariant violated: {v}", style="bold red")
        for v in metrics["invariants"]["violations"]
    ]
    tables: Mapping[str, ResultTable] = result["tables"]
    lines += terminal_tables(tables["table2"], tables["table3"])
    lines.append(Text(f"wrote {result['out_dir']}"))
    return Group(*lines)
