"""Which conditions are worth asking (issue 32 item 1): the presence band and related objects."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from condvln.config import resolve
from condvln.dataset.generate import GenerateConfig
from condvln.errors import ConfigError
from condvln.graph import SEMANTIC_PREDICATES, build_scene_graph
from condvln.scene.model import Room, Scene, SceneObject
from condvln.synth.groups import scene_group_counts
from condvln.synth.informative import ConditionConfig, relatable


def _obj(oid: str, category: str, center: tuple, size: tuple, **kw: object) -> SceneObject:
    return SceneObject(id=oid, category=category, label=category, center=center, size=size, **kw)


def _bedroom() -> Scene:
    """An L-shaped bedroom: a bed with a nightstand beside it and a mug on the nightstand, a
    dresser with a book far across the room, a painting on the wall, a plant round the corner."""
    objects = (
        _obj("bed", "bed", (1.0, 0.3, 1.2), (1.6, 0.6, 2.1)),
        _obj("stand", "nightstand", (2.1, 0.3, 0.4), (0.5, 0.6, 0.5)),
        _obj("mug", "mug", (2.1, 0.65, 0.4), (0.1, 0.1, 0.1), parent_id="stand"),
        _obj("dresser", "dresser", (3.5, 0.5, 3.6), (1.0, 1.0, 0.5)),
        _obj("book", "book", (3.5, 1.05, 3.6), (0.2, 0.1, 0.3), parent_id="dresser"),
        _obj("art", "painting", (1.0, 1.6, -0.02), (0.8, 0.6, 0.04)),
        _obj("plant", "house plant", (7.5, 0.5, 0.5), (0.4, 1.0, 0.4)),
    )
    outline = ((0.0, 0.0), (8.0, 0.0), (8.0, 1.5), (4.0, 1.5), (4.0, 4.0), (0.0, 4.0))
    room = Room(
        id="r", room_type="bedroom", label="Bedroom", objects=objects, floor_polygon=outline
    )
    return Scene(id="t/bedroom", source="test", rooms=(room,))


def _pairs(mask: np.ndarray, ids: tuple[str, ...]) -> set[tuple[str, str]]:
    return {(ids[i], ids[j]) for i, j in zip(*np.nonzero(mask), strict=True)}


def test_presence_band_follows_the_catalogue() -> None:
    cfg = ConditionConfig()
    assert not cfg.presence_informative("light switch", "kitchen")  # 0.9: every room has one
    assert not cfg.presence_informative("fridge", "kitchen")  # 1.0
    assert not cfg.presence_informative("bed", "kitchen")  # never placed there: 0.0
    assert cfg.presence_informative("mug", "kitchen")
    assert cfg.presence_informative("no such category", "kitchen")  # unknown: 0.5
    assert ConditionConfig(presence_high=0.95).presence_informative("light switch", "kitchen")


def test_config_is_validated_hashed_and_set_by_dotted_overrides() -> None:
    with pytest.raises(ValidationError, match="presence_low must be below presence_high"):
        ConditionConfig(presence_low=0.5, presence_high=0.5)
    with pytest.raises(ValidationError, match="version must be 1"):
        ConditionConfig(version=2)
    assert ConditionConfig(side_by_side=0.5).config_hash != ConditionConfig().config_hash
    config = resolve(GenerateConfig, overrides=["conditions.presence_low=0.2"])
    assert config.conditions.presence_low == 0.2
    assert config.config_hash() != GenerateConfig().config_hash()
    with pytest.raises(ConfigError, match=r"conditions\.presence_lo"):
        resolve(GenerateConfig, overrides=["conditions.presence_lo=0.2"])


def test_height_comparisons_only_between_objects_seen_together() -> None:
    graph = build_scene_graph(_bedroom())
    ids = graph.relations("r").object_ids
    height = _pairs(relatable(graph, "r", ConditionConfig())[2], ids)  # higher than
    assert ("mug", "stand") in height and ("stand", "mug") in height  # support
    assert ("mug", "bed") in height  # the nightstand it rests on stands by the bed
    assert ("art", "bed") in height  # a painting hangs above a bed (catalogue)
    assert ("book", "dresser") in height
    assert ("book", "mug") not in height and ("mug", "book") not in height  # across the room
    assert ("book", "bed") not in height
    close = _pairs(relatable(graph, "r", ConditionConfig(side_by_side=4.0))[2], ids)
    assert ("book", "mug") in close  # 3.3 m apart: side by side at 4 m


def test_other_relations_need_a_line_of_sight() -> None:
    graph = build_scene_graph(_bedroom())
    ids = graph.relations("r").object_ids
    masks = relatable(graph, "r", ConditionConfig())
    sight = _pairs(masks[0], ids)
    assert ("plant", "book") not in sight and ("book", "plant") not in sight  # round the corner
    assert ("art", "plant") in sight  # the painting sits in the wall, 2 cm off the floor
    assert ("plant", "bed") in sight and ("book", "bed") in sight
    for p, predicate in enumerate(SEMANTIC_PREDICATES):
        if predicate not in ("higher than", "lower than"):
            assert (masks[p] == masks[0]).all()
    assert not masks[:, range(len(ids)), range(len(ids))].any()  # never an object with itself


def test_group_scan_counts_only_what_may_be_asked() -> None:
    graph = build_scene_graph(_bedroom())
    counts = scene_group_counts(graph)
    keys = {key for key, _ in counts}
    assert ("higher than", "book", "bed") not in keys
    assert ("higher than", "mug", "bed") in keys
    assert ("near", "house plant", "book") not in keys
    loose = scene_group_counts(graph, ConditionConfig(side_by_side=10.0, wall_tolerance=5.0))
    assert ("higher than", "book", "bed") in {key for key, _ in loose}
    assert ("near", "house plant", "book") in {key for key, _ in loose}
