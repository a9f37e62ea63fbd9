"""Condition groups, the blind priors, and the per-scene group counts."""

from __future__ import annotations

from collections import Counter

from condvln.graph import build_scene_graph
from condvln.program.ast import Exists, Go, If, Program, Ref, Relation, leaf_paths
from condvln.scene.sources import load
from condvln.synth.groups import GroupStats, relation_allowed, scene_group_counts
from condvln.synth.priors import (
    CommonsensePrior,
    FrequencyPrior,
    can_stack,
    group_of,
    predicted_leaf,
)


def _program(a, b) -> Program:  # nested: If(a, If(b, x, y), z)
    x, y, z = (Go(Ref(c)) for c in ("sofa", "bed", "desk"))
    return Program((If(a, (If(b, (x,), (y,)),), (z,)),))


class Fixed:
    """A prior that believes exactly what it is told."""

    def __init__(self, beliefs: dict) -> None:
        self.beliefs = beliefs

    def probability(self, condition) -> float:
        return self.beliefs[condition]


def test_predicted_leaf_follows_the_guesses_through_the_tree() -> None:
    a, b = Exists("stool", "kitchen"), Exists("kettle", "kitchen")
    program = _program(a, b)
    paths = leaf_paths(program.steps)
    assert predicted_leaf(program, Fixed({a: 0.9, b: 0.2})) == 1
    assert paths[1][0] == (True, False)
    assert predicted_leaf(program, Fixed({a: 0.1, b: 0.9})) == 2  # b is never consulted
    assert predicted_leaf(program, Fixed({a: 0.5, b: 0.5})) == 0  # ties guess true


def test_frequency_prior_smooths_and_backs_off_to_the_type() -> None:
    sofa = Exists("sofa", "living room")
    lamp = Exists("lamp", "living room")
    near = Relation(Ref("cup"), "near", Ref("sink"))
    prior = FrequencyPrior([(sofa, True)] * 8 + [(sofa, False)] * 2 + [(near, False)] * 3)
    assert prior.probability(sofa) == 9 / 12
    assert prior.probability(lamp) == 0.8  # unseen group: the type's 8 / 10
    assert prior.probability(Relation(Ref("cup"), "near", Ref("stove"))) == 0.0
    assert prior.probability(Relation(Ref("cup"), "above", Ref("sink"))) == 0.5


def test_commonsense_prior_uses_catalogue_knowledge() -> None:
    prior = CommonsensePrior()
    assert prior.probability(Exists("bed", "bedroom")) == 1.0
    assert prior.probability(Exists("bed", "kitchen")) == 0.0
    mirror_over_sink = prior.probability(Relation(Ref("wall clock"), "higher than", Ref("sofa")))
    assert mirror_over_sink > 0.99
    assert prior.probability(Relation(Ref("sofa"), "lower than", Ref("wall clock"))) > 0.99
    assert prior.probability(Relation(Ref("cup"), "above", Ref("dining table"))) == 0.8
    assert prior.probability(Relation(Ref("dining table"), "below", Ref("cup"))) == 0.8
    assert prior.probability(Relation(Ref("sofa"), "above", Ref("cup"))) == 0.1
    assert prior.probability(Relation(Ref("sofa"), "far from", Ref("bed"))) == 0.5


def test_stacking_data_comes_from_the_receptacle_statistics() -> None:
    assert can_stack("dish sponge", "sink") and can_stack("pillow", "sofa")
    assert not can_stack("sink", "dish sponge") and not can_stack("bed", "cup")
    assert relation_allowed("below", "sink", "dish sponge")
    assert not relation_allowed("above", "sink", "dish sponge")
    assert relation_allowed("near", "sofa", "lamp") and not relation_allowed("near", "cup", "cup")


def test_group_stats_ask_only_groups_whose_truth_varies() -> None:
    stats = GroupStats.total(
        [
            Counter({(("exists", "a", "k"), True): 9, (("exists", "a", "k"), False): 1}),
            Counter({(("exists", "a", "k"), False): 1, (("near", "b", "c"), True): 4}),
        ]
    )
    assert stats.counts[("exists", "a", "k")] == (9, 2)
    assert stats.usable(("exists", "a", "k"))  # 2 / 11 ≥ 0.15
    assert not stats.usable(("near", "b", "c"))  # never false
    assert not stats.usable(("far from", "x", "y"))  # never seen
    assert stats.share(("exists", "a", "k"), True) == 10 / 13
    assert stats.n_usable() == 1


def test_scene_group_counts_match_the_scene_graph() -> None:
    scene = load("procedural", "3")
    graph = build_scene_graph(scene)
    counts = scene_group_counts(graph)
    room = next(r for r in scene.rooms if sum(x.room_type == r.room_type for x in scene.rooms) == 1)
    for category in {o.category for o in scene.objects()}:
        present = any(o.category == category for o in room.objects)
        assert counts[("exists", category, room.room_type), present] == 1
        assert counts[("exists", category, room.room_type), not present] == 0
    above = [k for (k, _), n in counts.items() if k[0] == "above" and n]
    assert above and all(can_stack(k[1], k[2]) for k in above)
    assert all(group_of(Exists(k[1], k[2]))[0] == "exists" for (k, _) in counts if k[0] == "exists")
