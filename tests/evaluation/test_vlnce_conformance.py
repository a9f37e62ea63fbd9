"""Trajectory metrics and dataset files exactly as VLN-CE computes and reads them (issue #13).

(a) Replaying every episode's ``_gt`` locations scores NE = 0, SR = 1, nDTW = 1 and SDTW = 1
    exactly; standing at the start scores NE = the stored ``info.geodesic_distance`` to 1e-6 m
    on every episode of every split (one geodesic engine for data and metrics).
(b) Over 200 continuous trajectories (noisy copies, in-place turns, detours, wrong branches,
    stops short, overshoots, resampled copies, agents that never move) are scored by the
    evaluator and by this file's own plain O(n·m) Python DTW / nDTW / SDTW / CLS — written from
    the published definitions (VLN-CE's ``NDTW`` measure, R4R's CLS) and sharing no code with
    the package — and agree to 1e-9.
(c) Every split, test included, loads through habitat-lab's real ``VLNDatasetV1.from_json``
    (``R2RVLN-v1``) and through a reader with VLN-CE's ``VLNCEDatasetV1`` (``VLN-CE-v1``)
    semantics.
"""

from __future__ import annotations

import gzip
import importlib.abc
import importlib.machinery
import itertools
import json
import math
import random
import shutil
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from condvln.dataset.generate import GenerateConfig, generate_dataset
from condvln.dataset.validate import validate_dataset
from condvln.errors import ValidationError
from condvln.evaluation import GraphSpace, MetricOptions, score_episode
from condvln.evaluation.evaluate import evaluate_run
from condvln.vlnce import SPLITS

D_TH = 3.0  # VLN-CE's TASK.NDTW.SUCCESS_DISTANCE
STEP = 0.25  # VLN-CE's FORWARD_STEP_SIZE
Point = list[float]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Six houses whose every split, ``pairs`` included, holds episodes (seed 5)."""
    out = tmp_path_factory.mktemp("vlnce") / "ds"
    generate_dataset(GenerateConfig(scenes=6, per_scene=30, unseen_share=0.5, seed=5), out)
    return out


def _read_gz(path: Path) -> Any:
    with gzip.open(path, "rt") as f:
        return json.load(f)


def _episodes(dataset: Path, split: str) -> list[dict[str, Any]]:
    return _read_gz(dataset / split / f"{split}.json.gz")["episodes"]


@pytest.fixture(scope="module")
def truth(dataset: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """Per split and episode id: the gt locations, goal and reference path, read from the files
    directly (the test split's from ``test_answers.json.gz``)."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for split in SPLITS:
        if split == "test":
            answers = _read_gz(dataset / "test" / "test_answers.json.gz")
            out[split] = {k: {"locations": a["gt"]["locations"], **a} for k, a in answers.items()}
            continue
        gt = _read_gz(dataset / split / f"{split}_gt.json.gz")
        out[split] = {
            str(e["episode_id"]): {**e, "locations": gt[str(e["episode_id"])]["locations"]}
            for e in _episodes(dataset, split)
        }
    return out


def _leaderboard(path: Path, paths: dict[str, list[Point]]) -> Path:
    """VLN-CE leaderboard predictions: ``{id: [{"position", "heading", "stop"}, ...]}``."""
    doc = {
        key: [{"position": p, "heading": 0.0, "stop": k == len(ps) - 1} for k, p in enumerate(ps)]
        for key, ps in paths.items()
    }
    path.write_text(json.dumps(doc))
    return path


def _records(out: Path) -> dict[str, dict[str, Any]]:
    lines = (out / "episodes.jsonl").read_text().splitlines()
    return {str(r["episode_id"]): r for r in map(json.loads, lines)}


# --- the independent implementation ---------------------------------------------------------


_dist = math.dist  # Euclidean point distance, as VLN-CE's euclidean_distance


def _dtw(reference: list[Point], query: list[Point]) -> float:
    """Plain O(n·m) DTW, steps (1,0), (0,1), (1,1), Euclidean cost, no window."""
    n, m = len(reference), len(query)
    table = [[math.inf] * (m + 1) for _ in range(n + 1)]
    table[0][0] = 0.0
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            best = min(table[i - 1][j], table[i][j - 1], table[i - 1][j - 1])
            table[i][j] = _dist(reference[i - 1], query[j - 1]) + best
    return table[n][m]


def _recorded(positions: list[Point]) -> list[Point]:
    """VLN-CE's NDTW measure appends a position only when it differs from the last one."""
    kept: list[Point] = []
    for p in positions:
        if not kept or p != kept[-1]:
            kept.append(p)
    return kept


def _length(path: list[Point]) -> float:
    return sum(_dist(path[i], path[i + 1]) for i in range(len(path) - 1))


def _ndtw(reference: list[Point], positions: list[Point], d_th: float) -> float:
    return math.exp(-_dtw(reference, _recorded(positions)) / (len(reference) * d_th))


def _cls(reference: list[Point], positions: list[Point], d_th: float) -> float:
    """R4R: PC = mean_r exp(−min_p d(r, p) / d_th), EPL = PC·L(R), LS = EPL / (EPL + |EPL − L(P)|)."""
    coverage = sum(math.exp(-min(_dist(r, p) for p in positions) / d_th) for r in reference)
    coverage /= len(reference)
    expected = coverage * _length(reference)
    taken = _length(positions)
    if expected == 0 and taken == 0:
        return coverage
    return coverage * expected / (expected + abs(expected - taken))


def _densified(path: list[Point]) -> list[Point]:
    """A point every 0.25 m of arc length along ``path``, plus its last point."""
    out = [list(path[0])]
    carried = 0.0  # arc length walked since the last emitted point
    for a, b in itertools.pairwise(path):
        seg = _dist(a, b)
        s = STEP - carried
        while s < seg - 1e-9:
            out.append([a[k] + (b[k] - a[k]) * s / seg for k in range(3)])
            s += STEP
        carried = seg - (s - STEP)
    if _dist(out[-1], path[-1]) > 1e-9:
        out.append(list(path[-1]))
    return out


# --- trajectories ---------------------------------------------------------------------------


def _walk(a: Point, b: Point) -> list[Point]:
    """Positions 0.25 m apart from a (excluded) to b (included)."""
    n = max(1, math.ceil(_dist(a, b) / STEP))
    return [[a[k] + (b[k] - a[k]) * i / n for k in range(3)] for i in range(1, n + 1)]


def _variant(kind: str, gt: list[Point], answer: dict[str, Any], rng: random.Random) -> list:
    """One trajectory of the given kind built from an episode's ground truth."""
    start, goal = gt[0], answer["goals"][0]["position"]
    if kind == "noisy":
        return [start] + [[x + rng.gauss(0, 0.1), y, z + rng.gauss(0, 0.1)] for x, y, z in gt[1:]]
    if kind == "turns":  # in-place turns repeat positions: VLN-CE records them once
        return [p for p in gt for _ in range(rng.choice((1, 1, 2, 4)))]
    if kind == "short":
        return gt[: max(1, int(len(gt) * rng.uniform(0.2, 0.8)))]
    if kind == "detour":
        i = rng.randrange(len(gt))
        side = [gt[i][0] + rng.uniform(1.0, 2.5), gt[i][1], gt[i][2] + rng.uniform(-1.0, 1.0)]
        return gt[: i + 1] + _walk(gt[i], side) + _walk(side, gt[i]) + gt[i + 1 :]
    if kind == "wrong_branch":
        leaves = answer["info"]["condvln"]["branch_goals"]
        gold = answer["info"]["condvln"]["leaf_index"]
        others = [b["position"] for i, b in enumerate(leaves) if i != gold] or [start]
        half = gt[: len(gt) // 2 + 1]
        return half + _walk(half[-1], rng.choice(others))
    if kind == "overshoot":
        beyond = [goal[0] + rng.uniform(-3, 3), goal[1], goal[2] + rng.uniform(-3, 3)]
        return gt + _walk(gt[-1], beyond)
    if kind == "resampled":  # the same route at another spacing, slightly off
        route = [start]
        for p in [*gt[:: rng.choice((2, 3))], gt[-1]]:
            route += [[x + rng.gauss(0, 0.05), y, z] for x, y, z in _walk(route[-1], p)]
        return route
    assert kind == "still"
    return [start] * rng.randint(1, 4)


KINDS = ("noisy", "turns", "short", "detour", "wrong_branch", "overshoot", "resampled", "still")


# --- (a) ------------------------------------------------------------------------------------


@pytest.mark.parametrize("split", SPLITS)
def test_gt_replay_scores_ndtw_one(dataset: Path, truth: dict, split: str, tmp_path: Path) -> None:
    paths = {k: t["locations"] for k, t in truth[split].items()}
    result = evaluate_run(dataset, _leaderboard(tmp_path / "gt.json", paths), tmp_path, split=split)
    records = _records(tmp_path)
    assert set(records) == set(paths) and records
    for r in records.values():
        assert r["ndtw"] == 1.0 and r["dtw"] == 0.0
        assert r["distance_to_goal"] == 0.0 and r["success"] == 1 and r["sdtw"] == 1.0
        assert r["fidelity_reference"] == "gt"
    fidelity = result["metrics"]["fidelity"]
    assert fidelity["ndtw_threshold"] == D_TH
    assert (fidelity["episodes_gt"], fidelity["episodes_densified"]) == (len(paths), 0)
    gt_file = "test/test_answers.json.gz" if split == "test" else f"{split}/{split}_gt.json.gz"
    assert fidelity["gt_file"] == gt_file
    assert "d_th = 3.0 m" in (tmp_path / "table2.md").read_text()
    # the legend beside SPL is exactly what this perfect replay scores
    replay_spl = sum(r["spl"] for r in records.values()) / len(records)
    assert fidelity["spl_gt_replay"] == pytest.approx(replay_spl, abs=1e-12)
    legend = result["metrics"]["legend"]
    assert legend["ndtw"] == "nDTW: exact DTW (VLN-CE `FDTW=False`)"
    assert legend["spl"].startswith(f"SPL of a perfect _gt replay: {replay_spl:.3f} ")
    for table in ("table2.md", "table3.md"):
        text = (tmp_path / table).read_text()
        assert legend["ndtw"] in text and legend["spl"] in text


@pytest.mark.parametrize("split", SPLITS)
def test_stored_geodesic_is_the_evaluated_distance(
    dataset: Path, truth: dict, split: str, tmp_path: Path
) -> None:
    """An agent that stops at its start scores NE = ℓ: the stored and the evaluated start → goal
    distance agree to 1e-6 m on every episode (and ℓ is the record's geodesic_distance)."""
    starts = {str(e["episode_id"]): [e["start_position"]] for e in _episodes(dataset, split)}
    evaluate_run(dataset, _leaderboard(tmp_path / "still.json", starts), tmp_path, split=split)
    records = _records(tmp_path)
    stored = {k: t["info"]["geodesic_distance"] for k, t in truth[split].items()}
    assert set(records) == set(stored) and records
    for key, r in records.items():
        assert abs(r["distance_to_goal"] - stored[key]) <= 1e-6, key
        assert r["geodesic_distance"] == stored[key] and r["spl"] == 0.0


# --- (b) ------------------------------------------------------------------------------------


def _check_run(
    out: Path, truth: dict[str, dict[str, Any]], paths: dict[str, list], d_th: float, dense: bool
) -> int:
    """Compare every record of a run with the independent implementation; return the count."""
    records = _records(out)
    for key, positions in paths.items():
        t, r = truth[key], records[key]
        reference = _densified(t["reference_path"]) if dense else t["locations"]
        ndtw = _ndtw(reference, positions, d_th)
        assert r["ndtw"] == pytest.approx(ndtw, abs=1e-9, rel=0), key
        assert r["sdtw"] == pytest.approx(r["success"] * ndtw, abs=1e-9, rel=0), key
        assert r["cls"] == pytest.approx(_cls(reference, positions, d_th), abs=1e-9, rel=0), key
        assert r["reference_path_length"] == pytest.approx(_length(reference), abs=1e-9)
    return len(paths)


@pytest.mark.slow
def test_trajectories_match_independent_dtw(dataset: Path, truth: dict, tmp_path: Path) -> None:
    rng = random.Random(13)
    scored = 0
    for split in SPLITS:
        for kind in KINDS:
            paths = {k: _variant(kind, t["locations"], t, rng) for k, t in truth[split].items()}
            out = tmp_path / f"{split}-{kind}"
            evaluate_run(dataset, _leaderboard(out.with_suffix(".json"), paths), out, split=split)
            scored += _check_run(out, truth[split], paths, D_TH, dense=False)
    assert scored >= 200


@pytest.mark.slow
def test_ndtw_threshold_option_and_cli(dataset: Path, truth: dict, tmp_path: Path, cli) -> None:
    rng = random.Random(5)
    paths = {k: _variant("noisy", t["locations"], t, rng) for k, t in truth["train"].items()}
    preds = _leaderboard(tmp_path / "p.json", paths)
    result = evaluate_run(
        dataset,
        preds,
        tmp_path / "api",
        split="train",
        options=MetricOptions(fidelity_threshold=1.5),
    )
    assert result["metrics"]["fidelity"]["ndtw_threshold"] == 1.5
    _check_run(tmp_path / "api", truth["train"], paths, 1.5, dense=False)
    done = cli(
        "evaluate",
        str(dataset),
        str(preds),
        "--out",
        str(tmp_path / "cli"),
        "--split",
        "train",
        "--ndtw-threshold",
        "1.5",
    )
    assert done.returncode == 0, done.stderr
    assert "d_th = 1.5 m" in done.stdout
    assert _records(tmp_path / "cli") == _records(tmp_path / "api")
    bad = cli(
        "evaluate",
        str(dataset),
        str(preds),
        "--out",
        str(tmp_path / "bad"),
        "--ndtw-threshold",
        "0",
    )
    assert bad.returncode == 2 and "fidelity_threshold" in bad.stderr
    assert "Traceback" not in bad.stderr and not (tmp_path / "bad").exists()


def test_missing_gt_is_densified_and_recorded(dataset: Path, truth: dict, tmp_path: Path) -> None:
    copy = tmp_path / "ds"
    shutil.copytree(dataset, copy)
    gt_file = copy / "train" / "train_gt.json.gz"
    gt = _read_gz(gt_file)
    dropped = sorted(gt)[0]
    del gt[dropped]
    with gzip.open(gt_file, "wt") as f:
        json.dump(gt, f)
    rng = random.Random(7)
    paths = {k: _variant("noisy", t["locations"], t, rng) for k, t in truth["train"].items()}
    preds = _leaderboard(tmp_path / "p.json", paths)
    result = evaluate_run(copy, preds, tmp_path / "one", split="train")
    records = _records(tmp_path / "one")
    assert records[dropped]["fidelity_reference"] == "densified"
    assert {r["fidelity_reference"] for k, r in records.items() if k != dropped} == {"gt"}
    fidelity = result["metrics"]["fidelity"]
    assert (fidelity["episodes_gt"], fidelity["episodes_densified"]) == (len(paths) - 1, 1)
    assert "densified every 0.25 m (1 episodes without _gt)" in result["tables"]["table2"].note
    _check_run(tmp_path / "one", truth["train"], {dropped: paths[dropped]}, D_TH, dense=True)

    gt_file.unlink()
    result = evaluate_run(copy, preds, tmp_path / "none", split="train")
    assert result["metrics"]["fidelity"]["gt_file"] is None
    assert result["metrics"]["fidelity"]["episodes_densified"] == len(paths)
    _check_run(tmp_path / "none", truth["train"], paths, D_TH, dense=True)


# --- SPL's shortest path and the nav-graph Euclidean variant (items 3 and 4) ----------------

CYCLE = ["S", "A", "B", "G"]
CYCLE_DIST = {
    u: {v: 4.0 * min(abs(i - j), 4 - abs(i - j)) for j, v in enumerate(CYCLE)}
    for i, u in enumerate(CYCLE)
}
CYCLE_XY = {"S": [0.0, 0.0], "A": [4.0, 0.0], "B": [4.0, 4.0], "G": [0.0, 4.0]}


def test_nav_graph_spl_uses_the_reference_start() -> None:
    # R2R eval.py: shortest path = d(reference[0], goal), even when the prediction starts elsewhere
    space = GraphSpace.from_dict(CYCLE_DIST)
    r = score_episode(["A", "B", "G"], space=space, radius=3.0, reference_path=CYCLE)
    assert r["geodesic_distance"] == 4.0  # S → G, not A → G (8.0)
    assert r["spl"] == pytest.approx(4.0 / 8.0)


def test_nav_graph_euclidean_ndtw() -> None:
    graph = GraphSpace.from_dict(CYCLE_DIST)
    euclid = GraphSpace.from_dict(CYCLE_DIST, CYCLE_XY, fidelity="euclidean")
    reference, route = ["S", "A"], ["B"]  # B is 8 m from S along the cycle, 5.66 m straight
    a = score_episode(route, space=graph, radius=3.0, reference_path=reference)
    b = score_episode(route, space=euclid, radius=3.0, reference_path=reference)
    xyz = {k: [x, 0.0, y] for k, (x, y) in CYCLE_XY.items()}
    expected = _ndtw([xyz[n] for n in reference], [xyz[n] for n in route], 3.0)
    assert b["ndtw"] == pytest.approx(expected, abs=1e-12)
    assert b["ndtw"] == pytest.approx(math.exp(-(math.sqrt(32) + 4) / 6), abs=1e-12)
    assert a["ndtw"] == pytest.approx(math.exp(-(8 + 4) / 6), abs=1e-12)
    diagonal = score_episode(["S", "B"], space=euclid, radius=3.0, reference_path=["S", "B"])
    assert diagonal["dtw"] == 0.0 and diagonal["path_length"] == 8.0  # TL stays a graph length


def test_euclidean_fidelity_needs_coordinates() -> None:
    with pytest.raises(ValidationError, match="needs node coordinates"):
        GraphSpace.from_dict(CYCLE_DIST, fidelity="euclidean")
    with pytest.raises(ValidationError, match="graph distance missing for node 'G'"):
        GraphSpace.from_dict(CYCLE_DIST, {k: v for k, v in CYCLE_XY.items() if k != "G"})


# --- (c) ------------------------------------------------------------------------------------


class _Anything(type):
    """A class whose every attribute, call and subscript is again such a class."""

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _Anything(name, (), {})

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        return cls

    def __getitem__(cls, item: Any) -> Any:
        return cls

    def __or__(cls, other: Any) -> Any:
        return cls

    __ror__ = __or__


class _StubModule(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        value = _Anything(name, (), {})
        setattr(self, name, value)
        return value


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Answers ``import magnum``, ``import habitat_sim.x``, ``import corrade`` with stubs."""

    roots = ("magnum", "habitat_sim", "corrade")

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname.split(".")[0] in self.roots:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = _StubModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        return None


def _is_stubbed(name: str) -> bool:
    root = name.split(".")[0]
    return root in (*_StubFinder.roots, "habitat")


@pytest.fixture(scope="module")
def habitat() -> Iterator[types.SimpleNamespace]:
    """habitat-lab's dataset and episode classes, imported with habitat-sim stood in for.

    habitat-lab installs from the package index (the ``test`` extra pins it) but habitat-sim
    and its magnum / corrade bindings do not. ``import habitat`` imports them at module level
    (simulator registration, rearrange and visualisation helpers) without using them to read
    a dataset, so this fixture puts a meta-path finder first on ``sys.meta_path`` that answers
    every ``magnum*``, ``habitat_sim*`` and ``corrade*`` import with an empty module whose
    attributes are inert placeholder classes. The dataset readers (``VLNDatasetV1``,
    ``VLNEpisode``, ``NavigationGoal``, ``InstructionData``, ``VocabDict``) are habitat-lab's
    real code. On teardown the finder and every stub and ``habitat`` module are removed again,
    so no other test sees a fake habitat-sim.
    """
    for name in [n for n in sys.modules if _is_stubbed(n)]:
        del sys.modules[name]
    finder = _StubFinder()
    sys.meta_path.insert(0, finder)
    try:
        import attr
        from habitat.core.utils import not_none_validator
        from habitat.datasets.utils import VocabDict
        from habitat.datasets.vln.r2r_vln_dataset import VLNDatasetV1
        from habitat.tasks.nav.nav import NavigationGoal
        from habitat.tasks.vln.vln import InstructionData, VLNEpisode

        @attr.s(auto_attribs=True, kw_only=True)
        class VLNCEEpisode(VLNEpisode):
            """VLN-CE's episode: goals, reference path and trajectory id may be absent."""

            goals: list | None = attr.ib(default=None)
            reference_path: list | None = attr.ib(default=None)
            trajectory_id: int | str | None = attr.ib(default=None)
            instruction: Any = attr.ib(default=None, validator=not_none_validator)

        yield types.SimpleNamespace(
            VLNDatasetV1=VLNDatasetV1,
            VLNCEEpisode=VLNCEEpisode,
            NavigationGoal=NavigationGoal,
            InstructionData=InstructionData,
            VocabDict=VocabDict,
        )
    finally:
        sys.meta_path.remove(finder)
        for name in [n for n in sys.modules if _is_stubbed(n)]:
            del sys.modules[name]


def _read_vlnce(hab: types.SimpleNamespace, text: str, scenes_dir: str) -> list[Any]:
    """A reader with VLN-CE's ``VLNCEDatasetV1.from_json`` semantics (habitat-lab classes):
    ids cast to str, the vocabulary built from ``word_list``, goals converted only when
    present, the scene path joined to ``scenes_dir``."""
    doc = json.loads(text)
    hab.VocabDict(word_list=doc["instruction_vocab"]["word_list"])
    episodes = []
    for raw in doc["episodes"]:
        raw = {**raw, "episode_id": str(raw["episode_id"])}
        raw["trajectory_id"] = str(raw["trajectory_id"])
        episode = hab.VLNCEEpisode(**raw)
        episode.scene_id = str(Path(scenes_dir) / episode.scene_id)
        episode.instruction = hab.InstructionData(**episode.instruction)
        if episode.goals is not None:
            episode.goals = [hab.NavigationGoal(**g) for g in episode.goals]
        episodes.append(episode)
    return episodes


@pytest.mark.parametrize("split", SPLITS)
def test_every_split_loads_in_habitat_lab_and_vlnce_readers(
    dataset: Path, habitat: types.SimpleNamespace, split: str
) -> None:
    with gzip.open(dataset / split / f"{split}.json.gz", "rt") as f:
        text = f.read()
    n = len(json.loads(text)["episodes"])
    assert n > 0
    lab = habitat.VLNDatasetV1()
    lab.from_json(text, scenes_dir=str(dataset))
    vlnce = _read_vlnce(habitat, text, str(dataset))
    assert len(lab.episodes) == len(vlnce) == n
    assert lab.instruction_vocab.get_size() > 4
    for ours, theirs in zip(lab.episodes, vlnce, strict=True):
        assert Path(ours.scene_id).is_file() and ours.scene_id == theirs.scene_id
        assert isinstance(ours.instruction, habitat.InstructionData)
        assert ours.instruction.instruction_text == theirs.instruction.instruction_text
        assert theirs.episode_id == str(ours.episode_id)
        if split == "test":  # no answers in the public file
            assert ours.goals == theirs.goals == [] and ours.reference_path == []
            assert ours.info is None
        else:
            assert len(ours.goals) == 1 and isinstance(ours.goals[0], habitat.NavigationGoal)
            assert _dist(ours.goals[0].position, ours.reference_path[-1]) < 1e-6
            assert ours.goals[0].radius == theirs.goals[0].radius > 0
            assert ours.info["geodesic_distance"] > 0


def test_validate_flags_answers_in_the_public_test_split(dataset: Path, tmp_path: Path) -> None:
    copy = tmp_path / "ds"
    shutil.copytree(dataset, copy)
    test_file = copy / "test" / "test.json.gz"
    doc = _read_gz(test_file)
    answers = _read_gz(copy / "test" / "test_answers.json.gz")
    first = doc["episodes"][0]
    first["goals"] = answers[str(first["episode_id"])]["goals"]
    with gzip.open(test_file, "wt") as f:
        json.dump(doc, f)
    problems = validate_dataset(copy).problems
    assert problems == [
        f"test: episode {first['episode_id']}: field 'goals': must be an empty list"
    ]
