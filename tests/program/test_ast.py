"""Program AST: Table 1 depth and chain, JSON round trip, execution paths."""

from __future__ import annotations

import pytest

from condvln.errors import FormatError
from condvln.program.ast import (
    CATEGORIES,
    Exists,
    Go,
    If,
    Program,
    Ref,
    Relation,
    leaf_paths,
    program_from_dict,
)
from condvln.synth.shapes import SKELETONS

A, B, C = (Exists(c, "kitchen") for c in ("stool", "kettle", "toaster"))
X, Y, Z, W = (Go(Ref(c)) for c in ("sofa", "bed", "sink", "desk"))


@pytest.mark.parametrize(
    ("program", "depth", "chain"),
    [
        (Program((If(A, (X,), (Y,)),)), 1, 1),
        (Program((If(A, (If(B, (X,), (Y,)),), (Z,)),)), 2, 1),
        (Program((If(A, (If(B, (If(C, (X,), (Y,)),), (Z,)),), (W,)),)), 3, 1),
        (Program((If(A, (X,), (If(B, (Y,), (Z,)),)),)), 1, 2),
        (Program((If(A, (X,), (If(B, (Y,), (If(C, (Z,), (W,)),)),)),)), 1, 3),
        (Program((If(A, (If(B, (X,), (Y,)),), (If(C, (Z,), (W,)),)),)), 2, 2),
        (Program((X, Y)), 0, 0),
        # an else-arm that is not a lone If nests rather than chains
        (Program((If(A, (X,), (Y, If(B, (Z,), (W,)))),)), 2, 1),
    ],
)
def test_depth_and_chain(program: Program, depth: int, chain: int) -> None:
    assert (program.depth, program.chain) == (depth, chain)


def test_table_1_categories_and_skeletons_agree() -> None:
    for name, skeleton in SKELETONS.items():
        program = skeleton.build(
            [Exists(f"c{i}", "kitchen") for i in range(skeleton.n_conditions)],
            [Ref(f"leaf {i}") for i in range(skeleton.n_leaves)],
        )
        assert program.category == name
        assert CATEGORIES[(program.depth, program.chain)] == name
        paths = leaf_paths(program.steps)
        assert len(paths) == skeleton.n_leaves
        for leaf, (decisions, goes) in enumerate(paths):
            assert decisions == skeleton.decisions(leaf)
            assert goes[-1].target.category == f"leaf {leaf}"


def test_horizon_counts_waypoints_before_the_first_decision() -> None:
    program = SKELETONS["simple"].build([A], [Ref("sofa"), Ref("bed")], [Ref("desk"), Ref("tv")])
    assert program.horizon == 2
    assert leaf_paths(program.steps)[1][1] == (Go(Ref("desk")), Go(Ref("tv")), Go(Ref("bed")))


def test_json_round_trip_with_every_node_type() -> None:
    rel = Relation(Ref("lamp", "bedroom"), "near", Ref("bed", None, "east of", "desk"))
    program = Program((X, If(rel, (If(A, (Y,), (Z,)),), (W,))))
    assert program_from_dict(program.to_dict()) == program


@pytest.mark.parametrize(
    ("raw", "needle"),
    [
        ({}, "field 'steps'"),
        ({"steps": []}, "at least one step"),
        ({"steps": [{"type": "jump"}]}, "unknown step type"),
        (
            {
                "steps": [
                    {
                        "type": "if",
                        "condition": {"type": "exists", "category": "x", "room": "k"},
                        "then": [],
                        "else": [],
                    }
                ]
            },
            "both arms",
        ),
    ],
)
def test_malformed_programs(raw: dict, needle: str) -> None:
    with pytest.raises(FormatError, match=needle):
        program_from_dict(raw)
