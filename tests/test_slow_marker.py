"""The ``slow`` marker (tests/conftest.py): left out on a developer's machine, run with
``--slow`` and whenever ``CI`` is true."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SLOW_FILE = "tests/report/test_report.py"  # every test of it is marked slow


def _collected(*args: str, ci: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    if ci is not None:
        env["CI"] = ci
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-n", "0", "-p", "no:cacheprovider",
         "-o", "addopts=", "--import-mode=importlib", SLOW_FILE, *args],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=300,
    )  # fmt: skip
    assert done.returncode in (0, 5), done.stdout + done.stderr
    return done.stdout


def test_slow_tests_are_left_out_unless_asked_for() -> None:
    local = _collected(ci=None)
    assert "test_report.py::" not in local and " deselected" in local
    assert "test_report.py::" in _collected("--slow", ci=None)


def test_ci_runs_the_slow_tests() -> None:
    assert "test_report.py::" in _collected(ci="true")
