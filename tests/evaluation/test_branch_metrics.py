"""``bsa_branch`` and ``csr_all`` beside the paper's BSA / CSR, on vectors worked out by hand.

Layout (metres, Euclidean = geodesic in empty space, radius τ = 1): start S = (0, 0, 0), shared
waypoint W = (2, 0, 0); the gold arm visits A1 = (4, 0, 3) then its goal G = (6, 0, 3); the
wrong arm visits B1 = (4, 0, −3) then B = (6, 0, −3). The paper's subgoals are (W, A1); the
gold arm's own sequence is (A1, G).

| trajectory                   | SR | BSA  | CSR | bsa_branch | csr_all |
|------------------------------|----|------|-----|------------|---------|
| S W A1 G, stop               | 1  | 1    | 1   | 1          | 1       |
| S W B1 B, stop (wrong arm)   | 0  | 1/2  | 0   | 0          | 0       |
| S W A1, stop (short of G)    | 0  | 1    | 0   | 1/2        | 0       |
| S W G, stop (skips A1)       | 1  | 1/2  | 0   | 0          | 0       |
| S W A1 G W, stop (left G)    | 0  | 1    | 0   | 1/2        | 0       |

(bsa_branch counts the goal only when the episode succeeds: passing G and stopping elsewhere
earns A1 alone) and two episodes without subgoals (goal G, nothing before it): passing through G
without stopping there is excluded from BSA / CSR and scores 0 in both new metrics, and so does
never reaching G; a wrong arm whose path crosses G earns nothing for it either.
"""

from __future__ import annotations

import pytest

from condvln.evaluation import ContinuousSpace, score_episode
from condvln.evaluation.aggregate import aggregate, check_invariants
from condvln.evaluation.metrics import arm_score, arm_targets_reached, conditional_success_all
from condvln.evaluation.scoring import invalid_episode
from condvln.evaluation.tables import table2, table3

S, W = (0.0, 0.0, 0.0), (2.0, 0.0, 0.0)
A1, G = (4.0, 0.0, 3.0), (6.0, 0.0, 3.0)
B1, B = (4.0, 0.0, -3.0), (6.0, 0.0, -3.0)

ARM_CASES = {
    "gold": ([S, W, A1, G], (1, 1.0, 1, 1.0, 1)),
    "wrong_arm": ([S, W, B1, B], (0, 0.5, 0, 0.0, 0)),
    "short_of_goal": ([S, W, A1], (0, 1.0, 0, 0.5, 0)),
    "skips_subgoal": ([S, W, G], (1, 0.5, 0, 0.0, 0)),
    "left_the_goal": ([S, W, A1, G, W], (0, 1.0, 0, 0.5, 0)),
}


def _score(trajectory: list, subgoals: list, branch_subgoals: list) -> dict:
    return score_episode(
        trajectory,
        space=ContinuousSpace(),
        radius=1.0,
        goal=G,
        subgoals=subgoals,
        branch_subgoals=branch_subgoals,
        branch_goals=[G, B],
        gold_branch=0,
    )


@pytest.mark.parametrize("name", sorted(ARM_CASES))
def test_arm_cases(name: str) -> None:
    trajectory, expected = ARM_CASES[name]
    r = _score(trajectory, [W, A1], [A1])
    assert (r["success"], r["bsa"], r["csr"], r["bsa_branch"], r["csr_all"]) == expected
    assert r["branch_targets_total"] == 2
    assert r["branch_targets_reached"] == round(2 * expected[3])


def test_no_subgoal_episodes_count_in_the_new_metrics() -> None:
    passed = _score([S, G, W], [], [])
    assert (passed["success"], passed["oracle_success"]) == (0, 1)
    assert (passed["bsa_included"], passed["bsa"], passed["csr"]) == (False, None, None)
    assert (passed["bsa_branch"], passed["csr_all"]) == (0.0, 0)
    missed = _score([S, W], [], [])
    assert (missed["bsa"], missed["csr"], missed["bsa_branch"], missed["csr_all"]) == (
        None,
        None,
        0.0,
        0,
    )
    stopped = _score([S, W, G], [], [])
    assert (stopped["bsa"], stopped["csr"], stopped["bsa_branch"], stopped["csr_all"]) == (
        1.0,
        1,
        1.0,
        1,
    )


def test_aggregates_over_all_episodes() -> None:
    """The five arm cases and the two failed no-subgoal episodes.

    BSA over the 5 included: (1 + .5 + 1 + .5 + 1) / 5 = 0.8; CSR: 1/5 = 0.2; bsa_branch over
    all 7: (1 + 0 + .5 + 0 + .5 + 0 + 0) / 7 = 2/7; csr_all: 1/7; SR: 2/7.
    """
    records = [_score(t, [W, A1], [A1]) for t, _ in ARM_CASES.values()]
    records += [_score([S, G, W], [], []), _score([S, W], [], [])]
    means = {k: a.mean for k, a in aggregate(records).items()}
    assert means["bsa"] == pytest.approx(0.8) and means["csr"] == pytest.approx(0.2)
    assert means["bsa_branch"] == pytest.approx(2 / 7)
    assert means["csr_all"] == pytest.approx(1 / 7) and means["success"] == pytest.approx(2 / 7)
    assert aggregate(records)["csr_all"].n == 7 and aggregate(records)["csr"].n == 5
    assert check_invariants(aggregate(records)) == []
    t2 = table2({"run": [r | {"source_dataset": "x"} for r in records]}, diagnostics=False)
    row = dict(zip(t2.columns, t2.rows[0].values, strict=True))
    assert row["x BSA (paper)"] == pytest.approx(80.0)
    assert row["x CSR (paper)"] == pytest.approx(20.0)
    assert row["x BSA_branch"] == pytest.approx(200 / 7)
    assert row["x CSR_all"] == pytest.approx(100 / 7)
    t3 = table3({"run": [r | {"depth": 1, "chain": 1} for r in records]})
    row3 = dict(zip(t3.columns, t3.rows[0].values, strict=True))
    assert row3["base d=1,ℓ=1 BSA_branch"] == pytest.approx(200 / 7)
    assert row3["base d=1,ℓ=1 CSR_all"] == pytest.approx(100 / 7)


def test_csr_all_above_sr_is_an_invariant_violation() -> None:
    bad = aggregate([{"success": 0, "csr_all": 1}])
    assert check_invariants(bad) == ["SR >= CSR_all violated: success 0 < csr_all 1"]


def test_csr_all_above_bsa_branch_is_an_invariant_violation() -> None:
    bad = aggregate([{"bsa_branch": 0.5, "csr_all": 1}])
    assert check_invariants(bad) == ["BSA_branch >= CSR_all violated: bsa_branch 0.5 < csr_all 1"]


def test_invalid_episode_scores_zero_in_the_new_metrics() -> None:
    r = invalid_episode(2, 1)
    assert (r["bsa_branch"], r["csr_all"], r["branch_targets_total"]) == (0.0, 0, 2)
    assert invalid_episode()["csr_all"] == 0


def test_wrong_arm_crossing_the_gold_goal_earns_nothing_for_it() -> None:
    """The wrong arm's goal B2 = (10, 0, 3) lies beyond G: walking W → G → B2 passes the gold goal
    within τ and stops 4 m past it."""
    r = _score([S, W, (4.0, 0.0, 3.0), G, (10.0, 0.0, 3.0)], [W], [])
    assert (r["oracle_success"], r["success"], r["bsa"], r["csr"]) == (1, 0, 1.0, 0)
    assert (r["branch_targets_reached"], r["bsa_branch"], r["csr_all"]) == (0, 0.0, 0)


def test_pure_functions() -> None:
    assert arm_targets_reached(0, 0, 0) == 0 and arm_targets_reached(0, 0, 1) == 1
    assert arm_targets_reached(1, 2, 1) == 1 and arm_targets_reached(2, 2, 1) == 3
    with pytest.raises(ValueError):
        arm_targets_reached(3, 2, 1)
    assert arm_score(1, 3) == pytest.approx(1 / 3) and arm_score(0, 1) == 0.0
    with pytest.raises(ValueError):
        arm_score(2, 1)
    with pytest.raises(ValueError):
        arm_score(0, 0)
    assert conditional_success_all(1, 2, 1) == 0 and conditional_success_all(0, 0, 1) == 1
