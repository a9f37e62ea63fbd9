"""Every condition a generated dataset asks is worth asking (issue 32 item 1): presence inside
the catalogue band, relations only between related objects — minimal-pair siblings included."""

from __future__ import annotations

import functools
from collections import Counter
from pathlib import Path

import pytest

from condvln.dataset.generate import GenerateConfig, generate_dataset
from condvln.graph import SEMANTIC_PREDICATES, SceneGraph, build_scene_graph
from condvln.program.ast import Exists, condition_from_dict
from condvln.program.interpret import ground
from condvln.scene.catalogue import load_catalogue
from condvln.scene.serialize import load_scene
from condvln.synth.informative import ConditionConfig, relatable
from condvln.vlnce import load_scene_index, load_split, scene_json_path

LABELLED = ("train", "val_seen", "val_unseen", "pairs")
"""The splits whose episodes carry their labels (test's are held back)."""


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("informative") / "ds"
    config = GenerateConfig(scenes=12, per_scene=20, unseen_share=0.5, counterfactual_share=0.6)
    generate_dataset(config, out)
    return out


def test_every_condition_is_informative_and_relates_related_objects(dataset: Path) -> None:
    index = load_scene_index(dataset)
    graphs = functools.cache(lambda path: build_scene_graph(load_scene(path)))
    rooms = {c.name: c.rooms for c in load_catalogue().categories}
    config = ConditionConfig()
    asked: Counter[str] = Counter()
    for split in LABELLED:
        for episode in load_split(dataset, split)["episodes"]:
            graph: SceneGraph = graphs(scene_json_path(dataset, episode, index))
            for item in episode["info"]["condvln"]["condition_truths"]:
                condition = condition_from_dict(item["condition"])
                asked[f"{split}:{type(condition).__name__}"] += 1
                if isinstance(condition, Exists):
                    p = rooms.get(condition.category, {}).get(condition.room, 0.0)
                    assert 0.15 <= p <= 0.85, (episode["episode_id"], condition)
                    continue
                s, t = ground(graph, condition.subject), ground(graph, condition.target)
                room = graph.room_of(s)
                ids = graph.relations(room).object_ids
                masks = relatable(graph, room, config)
                predicate = SEMANTIC_PREDICATES.index(condition.predicate)
                assert masks[predicate, ids.index(s), ids.index(t)], (
                    episode["episode_id"],
                    condition,
                )
    assert asked["train:Exists"] > 20 and asked["train:Relation"] > 20
    assert asked["pairs:Exists"] + asked["pairs:Relation"] > 0  # siblings were checked too
