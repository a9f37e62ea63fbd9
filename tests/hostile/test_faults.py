"""Fault tests: ``generate --overwrite``, ``run`` and ``benchmark`` killed (SIGKILL) at random
points lose nothing, and reruns give the bytes of an uninterrupted run."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from condvln.io import atomic_directory, reclaim

RNG = np.random.default_rng(16)
"""Kill points are random but reproducible."""


def _start(*args: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.Popen(
        [sys.executable, "-m", "condvln", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )


def _finish(*args: str) -> float:
    """Run a command to completion; returns its wall time."""
    started = time.perf_counter()
    proc = _start(*args)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err.decode()[-2000:]
    return time.perf_counter() - started


def _kill_at(delay: float, *args: str, sig: int = signal.SIGKILL) -> int | None:
    """Start a command and send ``sig`` after ``delay`` s (if it is still running)."""
    proc = _start(*args)
    try:
        proc.wait(timeout=delay)
    except subprocess.TimeoutExpired:
        proc.send_signal(sig)
    proc.communicate(timeout=600)
    return proc.returncode


def _files(root: Path, skip: tuple[str, ...] = ()) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not any(s in str(p.relative_to(root)) for s in skip)
    }


def _leftovers(out: Path) -> list[str]:
    return sorted(p.name for p in out.parent.glob(f".{out.name}.*"))


GEN = ("--scenes", "4", "--per-scene", "12", "-j", "1", "-q")


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[int, Path], float]:
    """Uninterrupted datasets of seeds 0 and 1 (read-only references) and the longer wall time."""
    root = tmp_path_factory.mktemp("generated")
    refs = {seed: root / f"ref{seed}" for seed in (0, 1)}
    seconds = max(_finish("generate", "--out", str(refs[s]), "--seed", str(s), *GEN) for s in refs)
    return refs, seconds


def _copy_of(ref: Path, out: Path) -> Path:
    """``out``: a copy of a reference dataset, as ``generate --out OUT`` would have left it."""
    shutil.copytree(ref, out, symlinks=True)
    return out


@pytest.mark.slow
def test_generate_overwrite_killed_at_random_points(generated: Any, tmp_path: Path) -> None:
    refs, seconds = generated
    expected = {seed: _files(path) for seed, path in refs.items()}
    assert expected[0] != expected[1]
    out = _copy_of(refs[0], tmp_path / "data")
    state = 0
    for delay in sorted(RNG.uniform(0.2, 1.1, size=3) * seconds):
        target = 1 - state
        _kill_at(delay, "generate", "--out", str(out), "--overwrite", "--seed", str(target), *GEN)
        now = _files(out)
        assert now in (expected[state], expected[target]), (
            f"mixed or lost files after {delay:.2f} s"
        )
        _finish("generate", "--out", str(out), "--overwrite", "--seed", str(target), *GEN)
        assert _files(out) == expected[target]  # the rerun gives the uninterrupted bytes
        assert _leftovers(out) == [], _leftovers(out)  # reclaimed by the rerun
        state = target


@pytest.mark.slow
def test_generate_overwrite_interrupted_by_ctrl_c(generated: Any, tmp_path: Path) -> None:
    refs, seconds = generated
    out = _copy_of(refs[0], tmp_path / "data")
    before = _files(out)
    _kill_at(0.6 * seconds, "generate", "--out", str(out), "--overwrite", "--seed", "1",
             *GEN, sig=signal.SIGINT)  # fmt: skip
    assert _files(out) in (before, _files(refs[1]))  # the old dataset, or the new one complete
    assert _leftovers(out) == []


def test_swap_leftovers_are_reclaimed(tmp_path: Path) -> None:
    """The states a kill can leave inside a replace: each is repaired by the next writer."""
    out = tmp_path / "data"
    out.mkdir()
    (out / "old.txt").write_text("old")
    # killed after the old folder was renamed aside, before the new one moved in (fallback swap)
    out.rename(tmp_path / ".data.old-123")
    reclaim(out)
    assert (out / "old.txt").read_text() == "old"
    # killed after the swap, before the old copy was deleted
    (tmp_path / ".data.old-456").mkdir()
    (tmp_path / ".data.tmp-abc").mkdir()
    reclaim(out)
    assert _leftovers(out) == [] and (out / "old.txt").exists()
    with pytest.raises(RuntimeError), atomic_directory(out, replace=True) as tmp:
        (tmp / "new.txt").write_text("new")
        raise RuntimeError("failed while building")
    assert sorted(p.name for p in out.iterdir()) == ["old.txt"] and _leftovers(out) == []
    with atomic_directory(out, replace=True) as tmp:
        (tmp / "new.txt").write_text("new")
    assert sorted(p.name for p in out.iterdir()) == ["new.txt"] and _leftovers(out) == []


def test_swap_without_rename_exchange(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import condvln.io as cio

    monkeypatch.setattr(cio, "_exchange", lambda a, b: False)
    out = tmp_path / "data"
    for text in ("one", "two"):
        with atomic_directory(out, replace=True) as tmp:
            (tmp / "f.txt").write_text(text)
        assert (out / "f.txt").read_text() == text and _leftovers(out) == []


RUN = ("--agent", "neurosymbolic", "--split", "train", "--limit", "30", "-j", "1", "-q")


@pytest.mark.slow
def test_run_killed_at_random_points_resumes_to_identical_bytes(base: Any, tmp_path: Path) -> None:
    ref = tmp_path / "ref"
    seconds = _finish("run", "--dataset", str(base.full), "--out", str(ref), *RUN)
    expected = _files(ref, ("manifest.json",))
    assert "INCOMPLETE" not in expected
    for k, delay in enumerate(sorted(RNG.uniform(0.3, 1.0, size=2) * seconds)):
        out = tmp_path / f"run{k}"
        _kill_at(delay, "run", "--dataset", str(base.full), "--out", str(out), *RUN)
        if (
            out.exists()
            and (out / "trajectories.jsonl").exists()
            and not (out / "predictions.json").exists()
        ):
            assert (out / "INCOMPLETE").exists(), "an unfinished run folder must say so"
        _kill_at(0.5 * delay, "run", "--dataset", str(base.full), "--out", str(out), *RUN)
        _finish("run", "--dataset", str(base.full), "--out", str(out), *RUN)
        assert _files(out, ("manifest.json",)) == expected, f"resume after a kill at {delay:.2f} s"
        assert _manifest(out) == _manifest(ref)
        assert _leftovers(out) == []


def _manifest(run: Path) -> Any:
    """A run manifest without its provenance (which names the command line, so the folder)."""
    import orjson

    data = orjson.loads((run / "manifest.json").read_bytes())
    data.pop("provenance", None)
    return data


BENCH = ("--scenes", "6", "--per-scene", "16", "--no-ithor", "-j", "1", "-q")
BENCH_VOLATILE = ("manifest.json", "results.json", "report.html")
"""Files with timestamps or wall times (compared separately)."""


def _results(out: Path) -> Any:
    import orjson

    data = orjson.loads((out / "results.json").read_bytes())
    for run in data["runs"].values():
        run.pop("seconds")
    data.pop("dataset")
    data.pop("provenance", None)
    return data


@pytest.mark.slow
def test_benchmark_killed_at_random_points_reruns_identically(tmp_path: Path) -> None:
    ref = tmp_path / "ref"
    seconds = _finish("benchmark", "--out", str(ref), *BENCH)
    expected = _files(ref, BENCH_VOLATILE)
    out = tmp_path / "bench"
    for delay in sorted(RNG.uniform(0.15, 0.9, size=2) * seconds):
        _kill_at(delay, "benchmark", "--out", str(out), *BENCH)
    _finish("benchmark", "--out", str(out), *BENCH)
    assert _files(out, BENCH_VOLATILE) == expected
    assert _results(out) == _results(ref)
    assert _leftovers(out) == [] and _leftovers(out / "dataset") == []
