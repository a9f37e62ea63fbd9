"""Provenance in manifests: command line, versions, git commit (issue #12, item 4)."""

from __future__ import annotations

import platform
import subprocess
from pathlib import Path

import numba
import numpy
import scipy

import condvln
from condvln.provenance import command_line, git_state, provenance

PACKAGE = Path(condvln.__file__).resolve().parent


def _git(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(PACKAGE), *args], capture_output=True, text=True)


def test_versions_are_the_imported_ones() -> None:
    versions = provenance()["versions"]
    assert versions == {
        "condvln": condvln.__version__,
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "numba": numba.__version__,
        "scipy": scipy.__version__,
    }


def test_git_commit_of_the_checkout_or_none() -> None:
    tracked = _git("ls-files", "--error-unmatch", "__init__.py").returncode == 0
    state = git_state()
    if not tracked:  # an installed copy or an exported tree: nothing to report
        assert state is None
        return
    assert state is not None and state["commit"] == _git("rev-parse", "HEAD").stdout.strip()
    dirty = bool(_git("status", "--porcelain", "--untracked-files=no").stdout.strip())
    assert state["dirty"] is dirty


def test_no_commit_outside_a_checkout(tmp_path: Path) -> None:
    assert git_state(tmp_path) is None


def test_command_line_is_a_shell_line() -> None:
    argv = ["/venv/lib/condvln/__main__.py", "run", "--agent", "my agents:Agent", "split=val seen"]
    assert command_line(argv) == "condvln run --agent 'my agents:Agent' 'split=val seen'"
    assert command_line(["/usr/bin/condvln", "agents"]) == "condvln agents"
    assert command_line(["bench.py", "-n", "3"]) == "bench.py -n 3"
