"""The interpreter grounds descriptions and computes every label; it never guesses."""

from __future__ import annotations

import pytest

from condvln.program.ast import Exists, Go, If, Program, Ref, Relation
from condvln.program.interpret import ProgramError, denote, ground, resolve
from condvln.program.verify import verify_labels


def test_grounding_by_category_room_and_qualifier(two_room_graph) -> None:
    assert ground(two_room_graph, Ref("dishwasher")) == "dishwasher"
    assert ground(two_room_graph, Ref("bed", "bedroom")) == "bed"
    assert sorted(denote(two_room_graph, Ref("stool"))) == ["stool_n", "stool_s"]
    assert ground(two_room_graph, Ref("stool", None, "north of", "dishwasher")) == "stool_n"
    assert ground(two_room_graph, Ref("stool", "kitchen", "south of", "dishwasher")) == "stool_s"
    assert ground(two_room_graph, Ref("cup", None, "above", "table")) == "cup"


@pytest.mark.parametrize(
    ("ref", "needle"),
    [
        (Ref("stool"), "denotes 2 objects"),
        (Ref("sofa"), "denotes 0 objects"),
        (Ref("stool", "garage"), "names no room"),
        (Ref("lamp", None, "near", "stool"), "anchor 'the stool' denotes 2 objects"),
    ],
)
def test_unusable_descriptions_are_errors(two_room_graph, ref: Ref, needle: str) -> None:
    with pytest.raises(ProgramError, match=needle):
        ground(two_room_graph, ref)


def test_resolution_of_a_nested_chain(two_room_graph) -> None:
    stool_n = Ref("stool", None, "north of", "dishwasher")
    program = Program(
        (
            Go(Ref("table")),
            If(
                Exists("cup", "kitchen"),  # true
                (If(Exists("lamp", "kitchen"), (Go(stool_n),), (Go(Ref("bed")),)),),  # false
                (If(Exists("bed", "bedroom"), (Go(Ref("lamp")),), (Go(Ref("dishwasher")),)),),
            ),
        )
    )
    res = resolve(two_room_graph, program)
    assert res.branch_path == (True, False)
    assert [t for _, t in res.condition_truths] == [True, False]
    assert res.targets == ("table", "bed")
    assert (res.goal, res.subgoals, res.leaf_index) == ("bed", ("table",), 1)
    assert res.branch_goals == ("stool_n", "bed", "lamp", "dishwasher")
    labels = res.to_dict()
    assert verify_labels(two_room_graph.scene, two_room_graph.config, program, labels) == []


def test_relation_conditions_and_undecided_facts(two_room_graph) -> None:
    near = Relation(Ref("cup"), "near", Ref("table"))
    assert (
        resolve(two_room_graph, Program((If(near, (Go(Ref("bed")),), (Go(Ref("lamp")),)),))).goal
        == "bed"
    )
    # lamp ↔ bed: a 2.07 m box gap lies in the dead band of "far from" (2–3 m)
    far = Relation(Ref("lamp"), "far from", Ref("bed"))
    with pytest.raises(ProgramError, match="undecided"):
        resolve(two_room_graph, Program((If(far, (Go(Ref("cup")),), (Go(Ref("table")),)),)))


def test_cross_room_relation_is_an_error(two_room_graph) -> None:
    cond = Relation(Ref("lamp"), "near", Ref("table"))
    with pytest.raises(ProgramError, match="different rooms"):
        resolve(two_room_graph, Program((If(cond, (Go(Ref("cup")),), (Go(Ref("bed")),)),)))


def test_verifier_flags_tampered_labels(two_room_graph) -> None:
    program = Program((If(Exists("cup", "kitchen"), (Go(Ref("bed")),), (Go(Ref("lamp")),)),))
    labels = resolve(two_room_graph, program).to_dict()
    tampered = {**labels, "branch_path": [False], "goal": "lamp"}
    problems = verify_labels(two_room_graph.scene, two_room_graph.config, program, tampered)
    assert [p.split(":")[0] for p in problems] == ["branch_path", "goal"]


def test_arms_with_their_own_targets(two_room_graph) -> None:
    """The gold arm's targets before its goal are in-branch subgoals, apart from the waypoints."""
    program = Program(
        (
            Go(Ref("table")),
            If(
                Exists("cup", "kitchen"),  # true
                (Go(Ref("lamp")), Go(Ref("bed"))),
                (Go(Ref("dishwasher")), Go(Ref("cup"))),
            ),
        )
    )
    res = resolve(two_room_graph, program)
    assert res.targets == ("table", "lamp", "bed")
    assert (res.waypoints, res.subgoals, res.branch_subgoals) == (1, ("table", "lamp"), ("lamp",))
    assert res.branch_targets == (("lamp", "bed"), ("dishwasher", "cup"))
    assert res.branch_goals == ("bed", "cup")
    labels = res.to_dict() | {"branch_steps": 2}
    scene, config = two_room_graph.scene, two_room_graph.config
    assert verify_labels(scene, config, program, labels) == []
    tampered = labels | {"branch_subgoals": ["table", "lamp"], "branch_steps": 3}
    problems = verify_labels(scene, config, program, tampered)
    assert [p.split(":")[0] for p in problems] == ["branch_subgoals", "branch_steps"]


def test_checker_flags_arms_of_unequal_length(two_room_graph) -> None:
    program = Program(
        (If(Exists("cup", "kitchen"), (Go(Ref("lamp")), Go(Ref("bed"))), (Go(Ref("cup")),)),)
    )
    labels = resolve(two_room_graph, program).to_dict() | {"branch_steps": 2}
    problems = verify_labels(two_room_graph.scene, two_room_graph.config, program, labels)
    assert problems == ["branch_steps: arms hold [1, 2] targets, not all the same"]
