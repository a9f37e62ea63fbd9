"""The hostile-input corpus (cases in ``conftest.py``): exit code, one error line, no traceback,
nothing left behind; a sample is also run as real subprocesses under a memory cap."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

MEMORY_CAP = 4 << 30
"""Address-space cap of the subprocess sample (bytes)."""


def _digests(case: Any, ctx: Any, corpus: Any) -> dict[str, str]:
    return {name: corpus.tree_digest(ctx.tmp / name) for name in case.unchanged}


def _check(case: Any, ctx: Any, result: Any, before: str | None, corpus: Any) -> None:
    text = result.stdout + result.stderr
    assert "Traceback" not in text, text[-2000:]
    assert "internal error" not in text, text[-2000:]
    assert result.code == case.code, (result.code, text[-1500:])
    if case.code == 2:
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        usage = case.category == "options" and "Usage:" in result.stderr  # click's own usage error
        if usage:
            lines = [" ".join(result.stderr.split())]
        assert len(lines) == 1, result.stderr
        assert usage or lines[0].startswith("condvln: error: "), lines
        message = lines[0].replace(str(ctx.tmp), "{tmp}")
        for needle in case.needles:
            assert needle in message, (needle, message)
    elif case.code == 1 or case.needles:  # a report line (validate, run's agent failures)
        found = [
            line for line in result.stdout.splitlines() if all(n in line for n in case.needles)
        ]
        assert found, (case.needles, result.stdout[-2000:])
    for name in case.outputs:
        out = ctx.tmp / name
        assert not out.exists() and not out.is_symlink(), f"{out} left behind"
        leftovers = [
            p.name for p in out.parent.glob(f".{out.name}.*") if not p.name.endswith(".lock")
        ]
        assert not leftovers, leftovers
    if before is not None:
        assert corpus.tree_digest(ctx.tmp / "ds") == before, "the input dataset was modified"
    if case.after is not None:
        case.after(ctx)


def test_hostile_input(case: Any, ctx: Any, corpus: Any) -> None:
    argv = case.prepare(ctx)
    dataset = ctx.tmp / "ds"
    before = corpus.tree_digest(dataset) if dataset.is_dir() else None
    kept = _digests(case, ctx, corpus)
    result = corpus.invoke(argv, env=case.env)
    _check(case, ctx, result, before, corpus)
    assert _digests(case, ctx, corpus) == kept, "a folder that must stay as it was changed"


def _cap_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


SAMPLE_CONCURRENCY = 2
"""Sample subprocesses run at once (each has its own case folder; they share nothing)."""


def _run_sample(prepared: tuple[Any, Any, list[str]]) -> Any:
    case, _, argv = prepared
    env = {**os.environ, "COLUMNS": "400", **case.env}
    done = subprocess.run(
        [sys.executable, "-m", "condvln", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        preexec_fn=_cap_memory,
    )
    return done


@pytest.fixture(scope="session")
def sample_runs(corpus: Any, base: Any, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Every sampled case run as its own ``python -m condvln`` under the memory cap.

    The subprocesses run :data:`SAMPLE_CONCURRENCY` at a time (interpreter start-up dominates
    their time); each test then checks its own case's result and folder.
    """
    prepared, states = [], {}
    for case in corpus.sample_cases():
        ctx = corpus.Ctx(base, tmp_path_factory.mktemp("sample"))
        argv = case.prepare(ctx)
        dataset = ctx.tmp / "ds"
        before = corpus.tree_digest(dataset) if dataset.is_dir() else None
        states[case.id] = (ctx, before, _digests(case, ctx, corpus))
        prepared.append((case, ctx, argv))
    try:
        with ThreadPoolExecutor(SAMPLE_CONCURRENCY) as pool:
            done = list(pool.map(_run_sample, prepared))
    finally:
        for _, ctx, _ in prepared:
            corpus.release_holders(ctx.tmp)
    results = {}
    for (case, _, _), proc in zip(prepared, done, strict=True):
        results[case.id] = (
            *states[case.id],
            corpus.Result(proc.returncode, proc.stdout, proc.stderr),
        )
    return results


@pytest.mark.slow
def test_sample_as_subprocess(sample_case: Any, sample_runs: dict, corpus: Any) -> None:
    ctx, before, kept, result = sample_runs[sample_case.id]
    _check(sample_case, ctx, result, before, corpus)
    assert _digests(sample_case, ctx, corpus) == kept


def test_corpus_size_and_spread(corpus: Any) -> None:
    cases = corpus.all_cases()
    per_category = Counter(c.category for c in cases)
    assert len(cases) >= 300, len(cases)
    assert len({c.id for c in cases}) == len(cases), "case ids must be unique"
    assert min(per_category.values()) >= 8, per_category
    commands = Counter(c.id.split("-")[0] for c in cases)
    for command in ("validate", "run", "evaluate", "oracle", "export", "generate", "benchmark"):
        assert commands[command] >= 3, commands


def test_no_pickle_payload_ran() -> None:
    assert not Path("/tmp/condvln-pwned").exists()
