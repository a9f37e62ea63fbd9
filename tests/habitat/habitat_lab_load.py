"""Load a habitat-lab config and its VLN dataset the way habitat-lab does; print what it found.

Usage: python habitat_lab_load.py CONFIG.yaml SPLIT...

habitat-sim (with magnum and corrade, its native bindings) does not install on this Python, and
habitat-lab imports it at package import. This script therefore stands in for exactly those
three top-level modules with empty modules whose every attribute is an inert placeholder, before
importing habitat-lab; nothing of habitat-lab itself is replaced. Configs are composed by
habitat-lab's own ``habitat.get_config`` (Hydra + its structured configs, which reject unknown
keys) and episodes are read by its own ``R2RVLN-v1`` dataset class. It runs in its own process
so the stand-ins never reach the rest of the test session.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import json
import sys
import types

STOOD_IN = ("habitat_sim", "magnum", "corrade")


class _Placeholder:
    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, *args, **kwargs):
        return _Placeholder()

    def __getattr__(self, name):
        return _Placeholder()

    def __mro_entries__(self, bases):
        return ()

    def __iter__(self):
        return iter(())

    def __or__(self, other):
        return self


class _Module(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Placeholder()


class _StandIn(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in STOOD_IN:
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        module = _Module(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module):
        pass


def main(config_path: str, splits: list[str]) -> None:
    sys.meta_path.insert(0, _StandIn())
    from habitat.config import read_write
    from habitat.config.default import get_config
    from habitat.datasets.vln.r2r_vln_dataset import VLNDatasetV1
    from omegaconf import OmegaConf

    config = get_config(config_path)
    out = {
        "dataset": OmegaConf.to_container(config.habitat.dataset),
        "max_episode_steps": config.habitat.environment.max_episode_steps,
        "success_distance": config.habitat.task.measurements.success.success_distance,
        "forward_step_size": config.habitat.simulator.forward_step_size,
        "turn_angle": config.habitat.simulator.turn_angle,
        "scene_dataset": config.habitat.simulator.scene_dataset,
        "default_agent_navmesh": config.habitat.simulator.default_agent_navmesh,
        "agent": {
            key: config.habitat.simulator.agents.main_agent[key]
            for key in ("radius", "height", "max_climb")
        },
        "splits": {},
    }
    for split in splits:
        with read_write(config):
            config.habitat.dataset.split = split
        dataset = VLNDatasetV1(config.habitat.dataset)
        out["splits"][split] = {
            "episodes": len(dataset.episodes),
            "scene_ids": sorted({e.scene_id for e in dataset.episodes}),
            "goal_radii": sorted({g.radius for e in dataset.episodes for g in e.goals}),
        }
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
