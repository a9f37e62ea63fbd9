"""``condvln habitat navmesh``: without habitat-sim one line and exit 2; with it (here a stand-in
that answers from our own exact engine), one navmesh per scene, named in the scene configs, and
every episode re-measured."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path
from types import SimpleNamespace

import orjson
import pytest

import condvln.habitat.navmesh as navmesh_module
import condvln.nav.habitat as nav_habitat
from condvln.habitat.navmesh import REPORT_FILE, bake_navmeshes
from condvln.habitat.semantics import DATASET_CONFIG
from condvln.nav import ExactNavigator
from condvln.scene.serialize import load_scene
from condvln.vlnce import SPLITS


def test_without_habitat_sim_one_line_naming_what_to_install(habitat_dataset: Path, cli) -> None:
    before = sorted(p.name for p in habitat_dataset.rglob("*"))
    run = cli("habitat", "navmesh", str(habitat_dataset))
    assert run.returncode == 2
    assert run.stdout == ""
    assert run.stderr.count("\n") == 1 and "Traceback" not in run.stderr
    assert "habitat-sim" in run.stderr and "conda install habitat-sim" in run.stderr
    assert sorted(p.name for p in habitat_dataset.rglob("*")) == before  # nothing written


class _FakeSim:
    """habitat-sim's Simulator surface used by the command, answering from our exact navigator
    of the scene JSON beside the loaded GLB (a stand-in: it checks the orchestration only)."""

    def __init__(self, configuration) -> None:
        backend, (agent,) = configuration
        self.glb = Path(backend.scene_id)
        self.agent = agent
        self.pathfinder = None
        self.closed = False

    def recompute_navmesh(self, pathfinder, settings) -> bool:
        assert (settings.agent_radius, settings.agent_height) == (0.1, 1.5)
        assert (self.agent.radius, self.agent.height) == (0.1, 1.5)
        nav = ExactNavigator(load_scene(self.glb.with_suffix(".json")))
        self.pathfinder = _FakePathFinder(nav)
        return True

    def close(self) -> None:
        self.closed = True


class _FakePathFinder:
    def __init__(self, nav: ExactNavigator) -> None:
        self.nav = nav

    def save_nav_mesh(self, path: str) -> None:
        Path(path).write_bytes(b"stand-in navmesh")

    def find_path(self, request) -> bool:
        d = self.nav.distance(request.requested_start, request.requested_end)
        request.geodesic_distance = float("inf") if d is None else d
        request.points = [request.requested_start, request.requested_end]
        return d is not None


class _Settings(SimpleNamespace):
    def set_defaults(self) -> None:
        self.agent_radius, self.agent_height = 0.2, 2.0


def _fake_habitat_sim() -> SimpleNamespace:
    return SimpleNamespace(
        SimulatorConfiguration=SimpleNamespace,
        Configuration=lambda backend, agents: (backend, agents),
        agent=SimpleNamespace(AgentConfiguration=lambda **kw: SimpleNamespace(**kw)),
        Simulator=_FakeSim,
        NavMeshSettings=_Settings,
        ShortestPath=SimpleNamespace,
    )


def test_bakes_one_navmesh_per_scene_and_remeasures_every_episode(
    habitat_dataset: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake = _fake_habitat_sim()
    monkeypatch.setattr(navmesh_module, "import_habitat_sim", lambda missing: fake)
    monkeypatch.setattr(nav_habitat, "import_habitat_sim", lambda missing=None: fake)
    dataset = tmp_path / "ds"
    shutil.copytree(habitat_dataset, dataset)
    report = bake_navmeshes(dataset)
    episodes = [
        ep
        for split in SPLITS
        for ep in orjson.loads(
            gzip.decompress((dataset / split / f"{split}.json.gz").read_bytes())
        )["episodes"]
    ]
    used = {ep["scene_id"] for ep in episodes}
    assert sorted(report.navmeshes) == sorted(s.replace(".glb", ".navmesh") for s in used)
    assert all((dataset / n).read_bytes() == b"stand-in navmesh" for n in report.navmeshes)
    assert len(report.differences) == len(episodes) and not report.unreachable
    # the stand-in is our own exact engine: the stored distances come back to 1e-6 m
    assert max(abs(d) for d in report.differences) < 1e-6
    names = sorted(Path(n).stem for n in report.navmeshes)
    config = orjson.loads((dataset / DATASET_CONFIG).read_bytes())
    assert config["navmesh_instances"] == {n: f"scenes/{n}.navmesh" for n in names}
    for name in names:
        stage = orjson.loads((dataset / "scenes" / f"{name}.stage_config.json").read_bytes())
        assert (dataset / "scenes" / stage["nav_asset"]).is_file()
        instance = orjson.loads((dataset / "scenes" / f"{name}.scene_instance.json").read_bytes())
        assert instance["navmesh_instance"] == name
    written = orjson.loads((dataset / REPORT_FILE).read_bytes())
    assert written["episodes_measured"] == len(episodes)
