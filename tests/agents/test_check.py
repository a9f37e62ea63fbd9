"""``condvln check-agent``: conformance checks pass for the baselines and catch each fault."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from condvln.agents.check import check_agent
from condvln.cli import app

DATA = Path(__file__).parent / "data"


def _levels(checks: list) -> dict[str, str]:
    return {c.name: c.level for c in checks}


def test_baseline_and_batched_agents_pass(dataset: Path) -> None:
    levels = _levels(check_agent("random", dataset=dataset))
    assert levels == {
        "loads": "ok",
        "interface": "ok",
        "episodes": "ok",
        "actions": "ok",
        "stops": "ok",
        "deterministic": "ok",
        "no labels": "ok",
    }
    batched = _levels(
        check_agent(f"{DATA / 'served_agent.py'}:BatchedDetectionAgent", dataset=dataset)
    )
    assert batched["batched"] == "ok" and "FAIL" not in batched.values()


@pytest.mark.parametrize(
    ("cls", "check", "detail"),
    [
        ("PeekingAgent", "no labels", "train.json.gz"),
        ("MoodyAgent", "deterministic", "actions differ under the same seed"),
        ("YesAgent", "actions", "act returned True (bool)"),
        ("RudeAgent", "interface", "act(1 argument): too many positional arguments"),
    ],
)
def test_each_fault_is_reported(dataset: Path, cls: str, check: str, detail: str) -> None:
    args = {"dataset": str(dataset)} if cls == "PeekingAgent" else {}
    checks = {
        c.name: c
        for c in check_agent(f"{DATA / 'bad_agents.py'}:{cls}", dataset=dataset, agent_args=args)
    }
    assert checks[check].level == "FAIL" and detail in checks[check].detail
    assert [c.name for c in checks.values() if c.level == "FAIL"] == [check]


def test_cli_exit_codes(dataset: Path) -> None:
    runner = CliRunner()
    ok = runner.invoke(app, ["check-agent", "random", "--dataset", str(dataset), "--episodes", "2"])
    assert ok.exit_code == 0 and "all checks passed" in ok.output
    bad = runner.invoke(
        app, ["check-agent", f"{DATA / 'bad_agents.py'}:YesAgent", "--dataset", str(dataset)]
    )
    assert bad.exit_code == 1 and "FAILED: actions" in bad.output
