"""The hostile-input corpus: cases generated here (never stored as files), run in-process.

Every case builds its hostile input in a fresh temporary folder, runs one ``condvln`` command
through :func:`condvln.cli.main` in this process, and checks the contract of the issue:

* the exit code (2 for a bad input; ``validate`` reports problems with exit code 1);
* exactly one error line on stderr naming the file, and the record and field when they exist
  (``validate``: a problem line naming split, episode and field);
* no traceback;
* nothing left behind: no output folder, no temporary sibling, the input dataset unchanged.

:func:`pytest_generate_tests` parametrises every test that takes a ``case`` with
:func:`all_cases`; ``test_corpus.py`` holds the tests.
"""

from __future__ import annotations

import copy
import functools
import gzip
import hashlib
import io
import json
import math
import os
import pickle
import shutil
import signal
import socketserver
import struct
import sys
import threading
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest

DATA = Path(__file__).resolve().parents[1] / "data"
DELETE = object()
"""Mutation value meaning "remove this key"."""


# --- running a command in-process ------------------------------------------------------------------


class Hang(BaseException):
    """A command ran past its time limit (raised by SIGALRM; not an ``Exception``)."""


@contextmanager
def _time_limit(seconds: int) -> Iterator[None]:
    def fire(signum: int, frame: Any) -> None:
        raise Hang(f"no answer after {seconds} s")

    previous = signal.signal(signal.SIGALRM, fire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@functools.cache
def _click_command() -> Any:
    """The click command Typer builds from ``condvln.cli.app`` (built once: Typer rebuilds it
    on every call, ~70 ms, which is most of a corpus case's time)."""
    import typer.main

    from condvln import cli

    return typer.main.get_command(cli.app)


def invoke(argv: list[str], env: dict[str, str] | None = None, timeout: int = 60) -> Result:
    """Run ``condvln ARGV`` through :func:`condvln.cli.main` here; capture code and output.

    ``main`` runs unchanged around the same click command ``app()`` would build (cached).
    """
    from condvln import cli

    out, err = io.StringIO(), io.StringIO()
    saved_argv, saved_app, code = sys.argv, cli.app, 0
    cli.console.width = 400  # no wrapping: one problem, one line
    sys.argv = ["condvln", *argv]
    cli.app = _click_command()
    try:
        with (
            _environment(env or {}),
            redirect_stdout(out),
            redirect_stderr(err),
            _time_limit(timeout),
        ):
            try:
                cli.main()
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        sys.argv, cli.app = saved_argv, saved_app
    return Result(code, out.getvalue(), err.getvalue())


@dataclass(frozen=True)
class Result:
    """Exit code and captured output of one command."""

    code: int
    stdout: str
    stderr: str


# --- the base data ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Base:
    """Valid inputs the cases corrupt (built once per session)."""

    full: Path  # a small generated dataset, every split non-empty
    vu: Path  # one val_unseen episode, the other splits empty
    test: Path  # one test episode, the other splits empty
    scene: Path  # a valid CondVLN scene file (the val_unseen episode's)
    each: Path  # one episode in every split
    results: Path  # a benchmark-like results folder of ``vu``: dataset/, runs/r/, eval/r/
    shards: Path  # val_unseen of ``full`` run and scored in two shards: run0, run1, eval0, eval1


def read_gz(path: Path) -> Any:
    return orjson.loads(gzip.decompress(path.read_bytes()))


def write_gz(path: Path, obj: Any) -> None:
    path.write_bytes(gzip.compress(orjson.dumps(obj), mtime=0))


def _only(source: Path, dest: Path, keep: tuple[str, ...]) -> None:
    """Copy ``source`` keeping the first episode of each split in ``keep`` (of ``pairs``: the
    first pair, both members), emptying the others."""
    from condvln.vlnce import SPLITS, split_path

    shutil.copytree(source, dest)
    for split in SPLITS:
        doc = read_gz(split_path(dest, split))
        side_name = "_answers" if split == "test" else "_gt"
        side = read_gz(split_path(dest, split, side_name))
        first = doc["episodes"][:1]
        if split == "pairs" and first:
            pair = first[0]["info"]["condvln"]["pair_id"]
            first = [e for e in doc["episodes"] if e["info"]["condvln"]["pair_id"] == pair]
        doc["episodes"] = first if split in keep else []
        ids = {str(e["episode_id"]) for e in doc["episodes"]}
        write_gz(split_path(dest, split), doc)
        write_gz(split_path(dest, split, side_name), {k: v for k, v in side.items() if k in ids})


def _results(dataset: Path, root: Path) -> Path:
    """``root`` laid out as a benchmark folder: the dataset, one run ``r`` and its evaluation."""
    shutil.copytree(dataset, root / "dataset")
    for args in (
        ["run", "--agent", "random", "--dataset", str(root / "dataset"), "--split", "val_unseen",
         "--out", str(root / "runs" / "r"), "-j", "1", "-q"],
        ["evaluate", str(root / "dataset"), str(root / "runs" / "r" / "trajectories.jsonl"),
         "--out", str(root / "eval" / "r"), "--split", "val_unseen", "--name", "r"],
    ):  # fmt: skip
        assert invoke(args).code == 0
    return root


def _shards(dataset: Path, root: Path) -> Path:
    """val_unseen of ``dataset`` run (``run0``, ``run1``) and scored (``eval0``, ``eval1``) in
    two shards."""
    for i in range(2):
        run = ["run", "--agent", "random", "--dataset", str(dataset), "--split", "val_unseen",
               "--out", str(root / f"run{i}"), "-j", "1", "-q", "--shard", f"{i}/2"]  # fmt: skip
        assert invoke(run).code == 0
    whole = root / "whole"
    run = ["run", "--agent", "random", "--dataset", str(dataset), "--split", "val_unseen",
           "--out", str(whole), "-j", "1", "-q"]  # fmt: skip
    assert invoke(run).code == 0
    for i in range(2):
        args = ["evaluate", str(dataset), str(whole / "trajectories.jsonl"), "--out",
                str(root / f"eval{i}"), "--split", "val_unseen", "--shard", f"{i}/2"]  # fmt: skip
        assert invoke(args).code == 0
    return root


@pytest.fixture(scope="session")
def base(tmp_path_factory: pytest.TempPathFactory) -> Base:
    from condvln.dataset.generate import GenerateConfig, generate_dataset
    from condvln.vlnce import split_path

    root = tmp_path_factory.mktemp("hostile-base")
    full = root / "full"
    generate_dataset(GenerateConfig(scenes=10, per_scene=30, seed=0), full, workers=1)
    _only(full, root / "vu", ("val_unseen",))
    _only(full, root / "test", ("test",))
    _only(full, root / "each", ("train", "val_seen", "val_unseen", "test", "pairs"))
    episode = read_gz(split_path(root / "vu", "val_unseen"))["episodes"][0]
    scene = episode["info"]["condvln"].get("scene_file", episode["scene_id"])
    results = _results(root / "vu", root / "results")
    shards = _shards(full, root / "shards")
    return Base(
        full, root / "vu", root / "test", root / "vu" / scene, root / "each", results, shards
    )


def tree_digest(root: Path) -> str:
    """Hash of every path and file content under ``root`` (symlinks by target)."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        digest.update(str(path.relative_to(root)).encode())
        if path.is_symlink():
            digest.update(os.readlink(path).encode())
        elif path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


# --- cases -----------------------------------------------------------------------------------------


@dataclass
class Ctx:
    """What a case's ``prepare`` gets: the base data and its own empty folder."""

    base: Base
    tmp: Path

    def dataset(self, which: str = "vu") -> Path:
        """A private copy of a base dataset."""
        dest = self.tmp / "ds"
        shutil.copytree(getattr(self.base, which), dest, symlinks=True)
        return dest


@dataclass
class Case:
    """One hostile input and the command that reads it.

    ``prepare(ctx)`` builds the input and returns the argument list; ``needles`` must all
    appear in the one error line (``{tmp}`` is replaced by the case folder); ``outputs`` are
    paths (relative to the case folder) that must not exist afterwards.
    """

    id: str
    category: str
    prepare: Callable[[Ctx], list[str]]
    needles: tuple[str, ...] = ()
    code: int = 2
    outputs: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    unchanged: tuple[str, ...] = ()
    """Folders (relative to the case folder) whose content must not change."""
    after: Callable[[Ctx], None] | None = None
    """Further checks of what the command left (e.g. the status of a failed episode)."""


# --- dataset record mutations ----------------------------------------------------------------------


def set_path(doc: Any, path: str, value: Any) -> None:
    """Set (or, with :data:`DELETE`, remove) the dotted path ``a.b[0].c`` in ``doc``."""
    keys: list[Any] = []
    for part in path.split("."):
        name, _, rest = part.partition("[")
        if name:
            keys.append(name)
        if rest:
            keys.extend(int(i) for i in rest.rstrip("]").split("]["))
    target = doc
    for key in keys[:-1]:
        target = target[key]
    if value is DELETE:
        del target[keys[-1]]
    else:
        target[keys[-1]] = copy.deepcopy(value)


NAN = float("nan")
EPISODE_MUTATIONS: list[tuple[str, Any, str]] = [
    # (path, hostile value, field the error must name)
    ("episode_id", "ep-1", "episode_id"),
    ("episode_id", 1.5, "episode_id"),
    ("episode_id", True, "episode_id"),
    ("episode_id", None, "episode_id"),
    ("episode_id", DELETE, "episode_id"),
    ("trajectory_id", "t1", "trajectory_id"),
    ("trajectory_id", DELETE, "trajectory_id"),
    ("info.condvln.scene_file", "../../outside_scene.json", "info.condvln.scene_file"),
    ("info.condvln.scene_file", "/etc/passwd", "info.condvln.scene_file"),
    ("info.condvln.scene_file", "/dev/zero", "info.condvln.scene_file"),
    ("info.condvln.scene_file", "scenes/../../../etc/hostname", "info.condvln.scene_file"),
    ("info.condvln.scene_file", "scenes/missing.json", "info.condvln.scene_file"),
    ("info.condvln.scene_file", "scenes", "info.condvln.scene_file"),
    ("scene_id", 7, "scene_id"),
    ("scene_id", "", "scene_id"),
    ("scene_id", DELETE, "scene_id"),
    ("start_position", [], "start_position"),
    ("start_position", [0.0, 0.0], "start_position"),
    ("start_position", [0.0, 0.0, 0.0, 0.0], "start_position"),
    ("start_position", ["a", 0.0, 0.0], "start_position"),
    ("start_position", "0,0,0", "start_position"),
    ("start_position", [1e308, 0.0, 0.0], "start_position"),
    ("start_position", [True, 0.0, 0.0], "start_position"),
    ("start_position", [NAN, 0.0, 0.0], "start_position"),
    ("start_position", None, "start_position"),
    ("start_position", DELETE, "start_position"),
    ("start_rotation", [], "start_rotation"),
    ("start_rotation", [0.0, 0.0, 1.0], "start_rotation"),
    ("start_rotation", [0.0, 0.0, 0.0, 1.0, 0.0], "start_rotation"),
    ("start_rotation", [0.0, 0.0, 0.0, 0.0], "start_rotation"),
    ("start_rotation", [0.0, 0.5, 0.0, 0.5], "start_rotation"),
    ("start_rotation", ["0", "0", "0", "1"], "start_rotation"),
    ("start_rotation", "identity", "start_rotation"),
    ("start_rotation", [NAN, 0.0, 0.0, 1.0], "start_rotation"),
    ("start_rotation", DELETE, "start_rotation"),
    ("goals", [], "goals"),
    ("goals", {}, "goals"),
    ("goals", [{"position": [0.0, 0.0], "radius": 1.0}], "goals[0].position"),
    ("goals", [{"position": [0.0, 0.0, 0.0], "radius": -1.0}], "goals[0].radius"),
    ("goals", [{"position": [0.0, 0.0, 0.0], "radius": "1"}], "goals[0].radius"),
    ("goals", [{"radius": 1.0}], "goals[0].position"),
    ("goals", [5], "goals[0]"),
    ("goals", DELETE, "goals"),
    ("instruction", "go to the bed", "instruction"),
    ("instruction", {}, "instruction.instruction_text"),
    ("instruction.instruction_text", 5, "instruction.instruction_text"),
    ("instruction.instruction_tokens", "abc", "instruction.instruction_tokens"),
    ("instruction.instruction_tokens", [1, -2], "instruction.instruction_tokens"),
    ("instruction", DELETE, "instruction"),
    ("reference_path", [], "reference_path"),
    ("reference_path", [[0.0, 0.0]], "reference_path[0]"),
    ("reference_path", "a path", "reference_path"),
    ("reference_path", [[1e300, 0.0, 0.0]], "reference_path[0]"),
    ("reference_path", DELETE, "reference_path"),
    ("info", [], "info"),
    ("info", "info", "info"),
    ("info", DELETE, "info"),
    ("info.geodesic_distance", "far", "info.geodesic_distance"),
    ("info.geodesic_distance", -1.0, "info.geodesic_distance"),
    ("info.condvln", [], "info.condvln"),
    ("info.condvln.goal", [], "info.condvln.goal"),
    ("info.condvln.goal.position", [0.0], "info.condvln.goal.position"),
    ("info.condvln.goal.object_id", 5, "info.condvln.goal.object_id"),
    ("info.condvln.subgoals", "none", "info.condvln.subgoals"),
    ("info.condvln.subgoals", [5], "info.condvln.subgoals[0]"),
    ("info.condvln.branch_goals", [], "info.condvln.branch_goals"),
    ("info.condvln.branch_goals", DELETE, "info.condvln.branch_goals"),
    ("info.condvln.leaf_index", "0", "info.condvln.leaf_index"),
    ("info.condvln.leaf_index", -1, "info.condvln.leaf_index"),
    ("info.condvln.leaf_index", 99, "info.condvln.leaf_index"),
    ("info.condvln.leaf_index", 1.0, "info.condvln.leaf_index"),
    ("info.condvln.n_branches", 0, "info.condvln.n_branches"),
    ("info.condvln.n_branches", "2", "info.condvln.n_branches"),
    ("info.condvln.step_budget", -5, "info.condvln.step_budget"),
    ("info.condvln.step_budget", "100", "info.condvln.step_budget"),
    ("info.condvln.step_budget", 10**12, "info.condvln.step_budget"),
    ("info.condvln.oracle_instruction", 5, "info.condvln.oracle_instruction"),
    ("info.condvln.branch_path", "yes", "info.condvln.branch_path"),
    ("info.condvln.branch_path", [1], "info.condvln.branch_path"),
    ("info.condvln.program", "if", "info.condvln.program"),
    ("info.condvln.config", {"relations": []}, "info.condvln.config.relations"),
]
"""Mis-typed, missing, out-of-range and escaping fields of one episode (all four readers)."""

VALIDATE_ONLY_MUTATIONS: list[tuple[str, Any, str]] = [
    ("info.condvln.goal.object_id", "no_such_object_7", "info.condvln.goal.object_id"),
    ("info.condvln.branch_goals[0].object_id", "no_such_object", "info.condvln.branch_goals[0]"),
    ("info.condvln.program", {"steps": "go"}, "info.condvln.program"),
    ("info.condvln.program", {"steps": []}, "info.condvln.program"),
    ("info.geodesic_distance", 123.0, "info.geodesic_distance"),
    ("start_rotation", [0.0, 0.0, 0.0, 1.0 + 1e-4], "start_rotation"),
    ("reference_path[0]", [9.5, 9.5, 9.5], "reference_path"),
    ("goals[0].position", [0.5, 0.0, 0.5], "goals[0].position"),
    ("info.condvln.branch_path", [True, True, True, True], "info.condvln.program"),
]
"""Schema-valid but wrong: only ``validate`` re-derives these from the scene."""

TEST_ANSWER_MUTATIONS: list[tuple[str, Any, str]] = [
    ("goals", DELETE, "goals"),
    ("goals", [{"position": "here", "radius": 1.0}], "goals[0].position"),
    ("reference_path", [["x", 0, 0]], "reference_path[0]"),
    ("info.condvln.leaf_index", "first", "info.condvln.leaf_index"),
    ("info.condvln.goal", DELETE, "info.condvln.goal"),
    ("info", 5, "info"),
    ("gt.actions", [1, 9, 0], "gt.actions"),
    ("gt.actions", [True, 0], "gt.actions"),
    ("gt.locations", [[0, 0]], "gt.locations[0]"),
    ("gt.forward_steps", "3", "gt.forward_steps"),
]
"""Corruptions of the test split's answers entry."""


def _label(value: Any) -> str:
    if value is DELETE:
        return "deleted"
    text = json.dumps(value) if not (isinstance(value, float) and math.isnan(value)) else "NaN"
    text = text.replace(" ", "")
    if len(text) > 24:  # keep ids short and unique
        text = text[:16] + "~" + hashlib.sha256(text.encode()).hexdigest()[:6]
    return text


def _dump_with_nan(obj: Any) -> bytes:
    return json.dumps(obj).encode()  # NaN literals, as Python's json writes them


def _mutated(split: str, path: str, value: Any, answer: bool = False) -> Callable[[Ctx], Path]:
    """A dataset copy whose first ``split`` episode (or its test answer) has ``path = value``."""

    def build(ctx: Ctx) -> Path:
        from condvln.vlnce import split_path

        ds = ctx.dataset("test" if split == "test" else "vu")
        file = split_path(ds, split, "_answers" if answer else "")
        doc = read_gz(file)
        if answer:
            set_path(doc[next(iter(doc))], path, value)
        else:
            set_path(doc["episodes"][0], path, value)
        file.write_bytes(gzip.compress(_dump_with_nan(doc), mtime=0))
        return ds

    return build


def _predictions_for(ctx: Ctx, ds: Path, split: str) -> Path:
    """A valid JSONL prediction of the episode of ``split`` (start pose, then STOP)."""
    from condvln.vlnce import split_path

    try:
        file = split_path(ds, split)
        assert file.is_file() and not file.is_symlink()  # never block on a FIFO
        start = read_gz(file)["episodes"][0]["start_position"]
    except Exception:  # the split file is the hostile part: any start will do
        start = [0.0, 0.0, 0.0]
    if not (isinstance(start, list) and len(start) == 3 and all(type(c) is float for c in start)):
        start = [0.0, 0.0, 0.0]
    eid = 1
    path = ctx.tmp / "pred.jsonl"
    record = {
        "episode_id": eid,
        "positions": [start],
        "headings": [0.0],
        "actions": [],
        "stop": True,
    }
    path.write_bytes(orjson.dumps(record) + b"\n")
    return path


def _reader_commands(
    build: Callable[[Ctx], Path], split: str
) -> dict[str, tuple[Callable[[Ctx], list[str]], tuple[str, ...]]]:
    """The four dataset readers on a prepared dataset: argv builder and outputs to check."""

    def validate(ctx: Ctx) -> list[str]:
        return ["validate", str(build(ctx)), "-q", "--show", "1000"]

    def run(ctx: Ctx) -> list[str]:
        ds = build(ctx)
        return ["run", "--agent", "random", "--dataset", str(ds), "--split", split,
                "--out", str(ctx.tmp / "run"), "-j", "1", "-q"]  # fmt: skip

    def evaluate(ctx: Ctx) -> list[str]:
        ds = build(ctx)
        pred = _predictions_for(ctx, ds, split)
        return ["evaluate", str(ds), str(pred), "--out", str(ctx.tmp / "eval"), "--split", split]

    def oracle(ctx: Ctx) -> list[str]:
        return ["oracle", str(build(ctx)), str(ctx.tmp / "oracle")]

    return {
        "validate": (validate, ()),
        "run": (run, ("run",)),
        "evaluate": (evaluate, ("eval",)),
        "oracle": (oracle, ("oracle",)),
    }


def record_cases() -> list[Case]:
    cases = []
    for path, value, field_name in EPISODE_MUTATIONS:
        build = _mutated("val_unseen", path, value)
        for command, (prepare, outputs) in _reader_commands(build, "val_unseen").items():
            needle = f"field '{field_name}"
            if command == "validate":
                cases.append(
                    Case(f"{command}-{path}={_label(value)}", "episode field", prepare,
                         ("val_unseen: episode", needle), code=1))  # fmt: skip
            else:
                cases.append(
                    Case(f"{command}-{path}={_label(value)}", "episode field", prepare,
                         ("val_unseen.json.gz", "episode", needle), outputs=outputs))  # fmt: skip
    for path, value, field_name in VALIDATE_ONLY_MUTATIONS:
        prepare = _reader_commands(_mutated("val_unseen", path, value), "val_unseen")["validate"][0]
        cases.append(
            Case(f"validate-{path}={_label(value)}", "labels (validate)", prepare,
                 ("val_unseen: episode", f"field '{field_name}"), code=1))  # fmt: skip
    for path, value, field_name in TEST_ANSWER_MUTATIONS:
        build = _mutated("test", path, value, answer=True)
        for command, (prepare, outputs) in _reader_commands(build, "test").items():
            if command == "validate":
                needles = ("test: episode", f"field 'test_answers.{field_name}")
                cases.append(Case(f"validate-answers-{path}={_label(value)}", "test answers",
                                  prepare, needles, code=1))  # fmt: skip
            elif command == "run" and path.startswith(("gt", "info.condvln.goal")):
                continue  # the runner reads only the step budget and oracle text of an answer
            else:
                needles = ("test_answers.json.gz", "episode", f"field '{field_name}")
                cases.append(Case(f"{command}-answers-{path}={_label(value)}", "test answers",
                                  prepare, needles, outputs=outputs))  # fmt: skip
    return cases


# --- whole files -----------------------------------------------------------------------------------


def _gzip_bomb(size: int) -> bytes:
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", mtime=0) as fh:
        fh.write(b'{"episodes": [' + b" " * size)
    return out.getvalue()


FILE_HOSTILES: dict[str, tuple[Callable[[Path], None], str, dict[str, str]]] = {
    # name: (turn the file at PATH into it, needle, environment)
    "fifo": (lambda p: (p.unlink(), os.mkfifo(p)), "not a regular file", {}),
    "dev-zero": (lambda p: (p.unlink(), p.symlink_to("/dev/zero")), "not a regular file", {}),
    "directory": (lambda p: (p.unlink(), p.mkdir()), "is a directory", {}),
    "dangling-symlink": (
        lambda p: (p.unlink(), p.symlink_to(p.parent / "gone")),
        "dangling symbolic link",
        {},
    ),
    "deleted": (lambda p: p.unlink(), "no such file", {}),
    "empty": (lambda p: p.write_bytes(b""), "empty", {}),
    "not-gzip": (lambda p: p.write_bytes(b"PK\x03\x04 not gzip at all"), "not a valid gzip", {}),
    "truncated-gzip": (lambda p: p.write_bytes(p.read_bytes()[:40]), "not a valid gzip", {}),
    "gzip-bomb": (
        lambda p: p.write_bytes(_gzip_bomb(3 << 20)),
        "decompresses to more than 1 MiB",
        {"CONDVLN_MAX_DECOMPRESSED_MB": "1"},
    ),
    "over-size-cap": (
        lambda p: p.write_bytes(os.urandom(2 << 20)),
        "over the 1 MiB limit",
        {"CONDVLN_MAX_FILE_MB": "1"},
    ),
    "deep-json": (
        lambda p: p.write_bytes(gzip.compress(b"[" * 5000 + b"]" * 5000)),
        "nested deeper than 1024",
        {},
    ),
    "deep-json-nan": (
        lambda p: p.write_bytes(gzip.compress(b"[" * 5000 + b"NaN" + b"]" * 5000)),
        "nested deeper than 1024",
        {},
    ),
    "not-an-object": (lambda p: p.write_bytes(gzip.compress(b"[1, 2, 3]")), "'episodes' list", {}),
    "episodes-not-list": (
        lambda p: p.write_bytes(gzip.compress(b'{"episodes": {"1": {}}}')),
        "'episodes' list",
        {},
    ),
    "no-vocab": (
        lambda p: p.write_bytes(gzip.compress(b'{"episodes": []}')),
        "instruction_vocab",
        {},
    ),
    "binary-garbage": (
        lambda p: p.write_bytes(gzip.compress(bytes(range(256)) * 4)),
        "not valid JSON",
        {},
    ),
}
"""Hostile replacements of a whole input file (split, side file, scene, predictions)."""


def split_file_cases() -> list[Case]:
    cases = []
    for name, (make, needle, env) in FILE_HOSTILES.items():
        for split_file in ("val_unseen", "val_unseen_gt"):

            def build(ctx: Ctx, make=make, split_file=split_file) -> Path:
                from condvln.vlnce import split_path

                ds = ctx.dataset()
                suffix = "_gt" if split_file.endswith("_gt") else ""
                make(split_path(ds, "val_unseen", suffix))
                return ds

            commands = _reader_commands(build, "val_unseen")
            wanted = ("validate", "run", "evaluate", "oracle")
            if split_file.endswith("_gt"):
                if name in ("not-an-object", "episodes-not-list", "no-vocab"):
                    continue  # shapes of a split file, not of a _gt file
                wanted = ("validate",)  # only validate reads the _gt file
            for command in wanted:
                prepare, outputs = commands[command]
                file_needle = f"{split_file}.json.gz"
                cases.append(
                    Case(
                        f"{command}-{split_file}-{name}",
                        "split file",
                        prepare,
                        (file_needle, needle),
                        code=1 if command == "validate" else 2,
                        outputs=outputs,
                        env=env,
                    )
                )
    # every split must be present: a missing one is a problem, not skipped
    for name in ("deleted", "directory", "dangling-symlink"):
        make = FILE_HOSTILES[name][0]

        def build_missing(ctx: Ctx, make=make) -> Path:
            from condvln.vlnce import split_path

            ds = ctx.dataset()
            make(split_path(ds, "train"))
            return ds

        prepare = _reader_commands(build_missing, "val_unseen")["validate"][0]
        cases.append(Case(f"validate-missing-train-{name}", "split file", prepare,
                          ("train.json.gz",), code=1))  # fmt: skip
    return cases


# --- scene files -----------------------------------------------------------------------------------


def _scene_edit(edit: Callable[[dict], Any]) -> Callable[[Path], None]:
    def make(path: Path) -> None:
        doc = json.loads(path.read_text())
        result = edit(doc)
        path.write_bytes(result if isinstance(result, bytes) else json.dumps(doc).encode())

    return make


def _first_object(doc: dict) -> dict:
    return next(r for r in doc["scene"]["rooms"] if r["objects"])["objects"][0]


def _huge_room(doc: dict) -> None:
    doc["scene"]["rooms"][0]["floor_polygon"] = [[0, 0], [9000, 0], [9000, 9000], [0, 9000]]


SCENE_HOSTILES: dict[str, tuple[Callable[[Path], None], str]] = {
    "metadata-list": (_scene_edit(lambda d: d["scene"].__setitem__("metadata", [1])), "metadata"),
    "metadata-deep": (
        _scene_edit(lambda d: d["scene"].__setitem__("metadata", json.loads("[" * 40 + "]" * 40))),
        "metadata",
    ),
    "rooms-not-list": (_scene_edit(lambda d: d["scene"].__setitem__("rooms", {})), "rooms"),
    "center-1e308": (
        _scene_edit(lambda d: _first_object(d).__setitem__("center", [1e308, 0, 0])),
        "center",
    ),
    "center-1e5": (
        _scene_edit(lambda d: _first_object(d).__setitem__("center", [1e5, 0, 0])),
        "center",
    ),
    "center-nan": (
        _scene_edit(lambda d: _first_object(d).__setitem__("center", [NAN, 0, 0])),
        "center",
    ),
    "center-strings": (
        _scene_edit(lambda d: _first_object(d).__setitem__("center", ["1", "2", "3"])),
        "center",
    ),
    "aabb-int": (
        _scene_edit(lambda d: _first_object(d).__setitem__("aabb", {"min": 1, "max": 2})),
        "aabb",
    ),
    "radius-text": (_scene_edit(lambda d: _first_object(d).__setitem__("radius", "big")), "radius"),
    "yaw-list": (_scene_edit(lambda d: _first_object(d).__setitem__("yaw", [1])), "yaw"),
    "grid-too-large": (_scene_edit(_huge_room), "navigation grid"),
    "wrong-format": (_scene_edit(lambda d: d.__setitem__("format", "other")), "format"),
    "schema-99": (_scene_edit(lambda d: d.__setitem__("schema_version", 99)), "schema_version"),
    "huge-int": (
        _scene_edit(
            lambda d: (
                json.dumps(d)
                .replace('"schema_version": 1', '"schema_version": 1' + "0" * 400)
                .encode()
            )
        ),
        "schema_version",
    ),
    "fifo": (FILE_HOSTILES["fifo"][0], "not a regular file"),
    "dev-zero": (FILE_HOSTILES["dev-zero"][0], "outside the dataset folder"),
    "truncated": (lambda p: p.write_bytes(p.read_bytes()[:100]), "not valid JSON"),
}
"""Hostile versions of the scene file an episode names."""


def scene_file_cases() -> list[Case]:
    cases = []
    for name, (make, needle) in SCENE_HOSTILES.items():

        def build(ctx: Ctx, make=make) -> Path:
            from condvln.vlnce import split_path

            ds = ctx.dataset()
            episode = read_gz(split_path(ds, "val_unseen"))["episodes"][0]
            make(ds / episode["info"]["condvln"].get("scene_file", episode["scene_id"]))
            return ds

        commands = _reader_commands(build, "val_unseen")
        for command in ("validate", "run", "evaluate"):
            prepare, outputs = commands[command]
            needles = ("scenes/", needle) if name != "dev-zero" else ("scene_file", needle)
            if command == "validate":
                needles = ("val_unseen: episode", needle)
            cases.append(
                Case(f"{command}-scene-{name}", "scene file", prepare, needles,
                     code=1 if command == "validate" else 2, outputs=outputs))  # fmt: skip

        def show(ctx: Ctx, make=make) -> list[str]:
            path = ctx.tmp / "scene.json"
            shutil.copyfile(ctx.base.scene, path)
            make(path)
            return [
                "scenes",
                "export",
                str(path),
                "--source",
                "condvln",
                "--out",
                str(ctx.tmp / "o.json"),
            ]

        if name == "grid-too-large":
            continue  # a large scene exports fine; only navigation refuses it
        if name == "dev-zero":
            needle = "not a regular file"  # a standalone file: no dataset folder to leave
        cases.append(Case(f"export-scene-{name}", "scene file", show, ("scene.json", needle),
                          outputs=("o.json",)))  # fmt: skip
    return cases


# --- predictions -----------------------------------------------------------------------------------


def _line(**overrides: Any) -> dict:
    record = {"episode_id": 1, "positions": [[0.0, 0.0, 0.0], [0.0, 0.0, 0.25]],
              "headings": [0.0, 0.0], "actions": [1], "stop": False}  # fmt: skip
    for key, value in overrides.items():
        if value is DELETE:
            record.pop(key)
        else:
            record[key] = value
    return record


PREDICTION_HOSTILES: dict[str, tuple[str, bytes, tuple[str, ...]]] = {
    # name: (file name, content, needles)
    "bad-json-line": ("p.jsonl", b'{"episode_id": 1,\n', ("line 1", "not valid JSON")),
    "deep-line": ("p.jsonl", b"[" * 3000 + b"]" * 3000 + b"\n", ("line 1", "nested deeper")),
    "not-object": ("p.jsonl", b"[1, 2]\n", ("line 1", "must be a JSON object")),
    "id-string": ("p.jsonl", orjson.dumps(_line(episode_id="ep1")), ("line 1", "field 'episode_id'")),
    "id-bool": ("p.jsonl", orjson.dumps(_line(episode_id=True)), ("line 1", "field 'episode_id'")),
    "id-float": ("p.jsonl", orjson.dumps(_line(episode_id=1.5)), ("line 1", "field 'episode_id'")),
    "no-positions": ("p.jsonl", orjson.dumps(_line(positions=DELETE)), ("line 1", "field 'positions'")),
    "positions-2d": ("p.jsonl", orjson.dumps(_line(positions=[[0, 0], [0, 1]])), ("line 1", "field 'positions'")),
    "positions-nan": ("p.jsonl", json.dumps(_line(positions=[[NAN, 0, 0], [0, 0, 0]])).encode(), ("line 1", "field 'positions'")),
    "positions-1e400": ("p.jsonl", orjson.dumps(_line()).replace(b"0.25", b"1e400"), ("line 1", "field 'positions'")),
    "positions-text": ("p.jsonl", orjson.dumps(_line(positions="here")), ("line 1", "field 'positions'")),
    "headings-short": ("p.jsonl", orjson.dumps(_line(headings=[0.0])), ("line 1", "field 'headings'")),
    "actions-bool": ("p.jsonl", orjson.dumps(_line(actions=[True])), ("line 1", "field 'actions'")),
    "actions-range": ("p.jsonl", orjson.dumps(_line(actions=[7])), ("line 1", "field 'actions'")),
    "actions-length": ("p.jsonl", orjson.dumps(_line(actions=[1, 1, 0])), ("line 1", "field 'actions'")),
    "stop-string": ("p.jsonl", orjson.dumps(_line(stop="yes")), ("line 1", "field 'stop'")),
    "duplicate-id": ("p.jsonl", orjson.dumps(_line()) + b"\n" + orjson.dumps(_line()), ("line 2", "duplicate")),
    "leaderboard-not-object": ("p.json", b"[1]", ("must be an object",)),
    "leaderboard-key": ("p.json", b'{"abc": [{"position": [0,0,0], "heading": 0, "stop": true}]}', ("episode abc", "field 'episode_id'")),
    "leaderboard-pose": ("p.json", b'{"1": [5]}', ("episode 1, pose 0", "must be an object")),
    "leaderboard-missing": ("p.json", b'{"1": [{"position": [0,0,0]}]}', ("episode 1, pose 0", "field 'heading'")),
    "leaderboard-empty-list": ("p.json", b'{"1": []}', ("episode 1", "non-empty list")),
    "leaderboard-huge-int": ("p.json", b'{"1": [{"position": [0,0,1' + b"0" * 400 + b'], "heading": 0, "stop": true}]}', ("episode 1", "field 'position'")),
    "gz-bomb": ("p.jsonl.gz", _gzip_bomb(3 << 20), ("decompresses to more than",)),
    "empty": ("p.jsonl", b"\n\n", ("empty",)),
}  # fmt: skip
"""Hostile prediction files for ``evaluate``."""


def _evaluate_file(ctx: Ctx, file_name: str, content: bytes) -> list[str]:
    """``evaluate`` of the one-episode dataset with ``content`` as the predictions file."""
    ds = ctx.dataset()
    path = ctx.tmp / file_name
    path.write_bytes(content)
    return ["evaluate", str(ds), str(path), "--out", str(ctx.tmp / "eval"), "--split", "val_unseen"]


def prediction_cases() -> list[Case]:
    cases = []
    for name, (file_name, content, needles) in PREDICTION_HOSTILES.items():

        def prepare(ctx: Ctx, file_name=file_name, content=content) -> list[str]:
            return _evaluate_file(ctx, file_name, content)

        env = {"CONDVLN_MAX_DECOMPRESSED_MB": "1"} if name == "gz-bomb" else {}
        cases.append(Case(f"evaluate-pred-{name}", "predictions", prepare, (file_name, *needles),
                          outputs=("eval",), env=env))  # fmt: skip
    for name in ("fifo", "dev-zero", "directory", "dangling-symlink", "deleted"):
        make = FILE_HOSTILES[name][0]

        def prepare_file(ctx: Ctx, make=make) -> list[str]:
            ds = ctx.dataset()
            path = ctx.tmp / "p.jsonl"
            path.write_bytes(b"{}\n")
            make(path)
            return [
                "evaluate",
                str(ds),
                str(path),
                "--out",
                str(ctx.tmp / "eval"),
                "--split",
                "val_unseen",
            ]

        # a folder is read as a `condvln run` folder (issue 30): one without trajectories is refused
        needle = "not a run folder" if name == "directory" else FILE_HOSTILES[name][1]
        cases.append(Case(f"evaluate-pred-{name}", "predictions", prepare_file,
                          ("p.jsonl", needle), outputs=("eval",)))  # fmt: skip
    return cases


# --- scene sources ---------------------------------------------------------------------------------


def _npy(array_header: dict, payload: bytes) -> bytes:
    header = repr(array_header).encode()
    header += b" " * (63 - (len(header) + 10) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header + payload


def _npz(member: bytes, name: str = "output.npy", method: int = zipfile.ZIP_STORED) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=method) as archive:
        archive.writestr(name, member)
    return out.getvalue()


def _pickled_npz(payload: Any) -> bytes:
    data = pickle.dumps(payload, protocol=2)
    return _npz(_npy({"descr": "|O", "fortran_order": False, "shape": ()}, data))


class _Exec:
    """A pickle payload that would run ``os.system`` when unpickled by plain pickle."""

    def __reduce__(self) -> tuple:
        return (os.system, ("touch /tmp/condvln-pwned",))


def _patch_zip(data: bytes, offset_field: int, value: int) -> bytes:
    """Set a 16-bit field (flag bits: 6, method: 8) in the local and central zip headers."""
    raw = bytearray(data)
    local = raw.find(b"PK\x03\x04")
    central = raw.find(b"PK\x01\x02")
    struct.pack_into("<H", raw, local + offset_field, value)
    struct.pack_into("<H", raw, central + offset_field + 2, value)
    return bytes(raw)


def _mp3d(edit: Callable[[str], str]) -> Callable[[Path], bytes]:
    return lambda data: edit((data / "mp3d" / "tiny.house").read_text()).encode()


def _glb(json_chunk: bytes) -> bytes:
    json_chunk += b" " * (-len(json_chunk) % 4)
    return (
        struct.pack("<4sII", b"glTF", 2, 20 + len(json_chunk))
        + struct.pack("<II", len(json_chunk), 0x4E4F534A)
        + json_chunk
    )


SOURCE_HOSTILES: dict[str, tuple[str, str, Callable[[Path], bytes], tuple[str, ...]]] = {
    # name: (source, file name, content from the tests/data folder, needles)
    "gibson-exec-pickle": ("gibson", "3DSceneGraph_X.npz", lambda d: _pickled_npz(_Exec()), ("refused pickled global",)),
    "gibson-eval-pickle": ("gibson", "3DSceneGraph_X.npz", lambda d: _pickled_npz(eval), ("refused pickled global",)),
    "gibson-encrypted": ("gibson", "3DSceneGraph_X.npz", lambda d: _patch_zip((d / "gibson" / "3DSceneGraph_Tiny.npz").read_bytes(), 6, 1), ("encrypted",)),
    "gibson-unknown-method": ("gibson", "3DSceneGraph_X.npz", lambda d: _patch_zip((d / "gibson" / "3DSceneGraph_Tiny.npz").read_bytes(), 8, 99), ("unreadable zip member",)),
    "gibson-huge-header": ("gibson", "3DSceneGraph_X.npz", lambda d: _npz(_npy({"descr": "<f8", "fortran_order": False, "shape": (10**12,)}, b"\0" * 64)), ("header announces",)),
    "gibson-zip-bomb": ("gibson", "3DSceneGraph_X.npz", lambda d: _npz(b"\0" * (3 << 20), method=zipfile.ZIP_DEFLATED), ("over the 1 MiB limit",)),
    "gibson-no-member": ("gibson", "3DSceneGraph_X.npz", lambda d: _npz(b"x", name="other.npy"), ("no 'output.npy' member",)),
    "gibson-not-zip": ("gibson", "3DSceneGraph_X.npz", lambda d: b"not a zip file at all", ("not a valid zip archive",)),
    "gibson-scn-1e308": ("gibson", "x.scn", lambda d: b'{"objects": [{"class_": "chair", "location": [1e308, 0, 0], "size": [1, 1, 1]}]}', ("location",)),
    "gibson-scn-deep": ("gibson", "x.scn", lambda d: b'{"objects": ' + b"[" * 2000 + b"]" * 2000 + b"}", ("nested deeper",)),
    "mp3d-1e308-region": ("mp3d", "x.house", _mp3d(lambda t: t.replace(" 0 4 3 2.6  2.6", " 0 1e308 3 2.6  2.6", 1)), ("x.house",)),
    "mp3d-1e5-region": ("mp3d", "x.house", _mp3d(lambda t: t.replace(" 0 4 3 2.6  2.6", " 0 100000 3 2.6  2.6", 1)), ("x.house", "±10000")),
    "mp3d-nan": ("mp3d", "x.house", _mp3d(lambda t: t.replace(" 0 4 3 2.6  2.6", " 0 nan 3 2.6  2.6", 1)), ("x.house",)),
    "mp3d-truncated": ("mp3d", "x.house", _mp3d(lambda t: t[: len(t) // 2]), ("x.house",)),
    "mp3d-binary": ("mp3d", "x.house", lambda d: b"\xff\xfe\x00garbage", ("x.house", "not a text file")),
    "replicacad-template-escape": ("replicacad", "configs/scenes/x.scene_instance.json", lambda d: b'{"object_instances": [{"template_name": "../../../../etc/passwd"}]}', ("template_name", "relative asset name")),
    "replicacad-template-absolute": ("replicacad", "configs/scenes/x.scene_instance.json", lambda d: b'{"object_instances": [{"template_name": "/etc/passwd"}]}', ("template_name",)),
    "replicacad-rotation-text": ("replicacad", "configs/scenes/x.scene_instance.json", lambda d: b'{"object_instances": [{"template_name": "objects/a", "rotation": "none"}]}', ("rotation",)),
    "replicacad-translation-1e308": ("replicacad", "configs/scenes/x.scene_instance.json", lambda d: b'{"object_instances": [{"template_name": "objects/a", "translation": [1e308, 0, 0]}]}', ("x.scene_instance.json",)),
    "replicacad-glb-children": ("replicacad", "objects/zz.glb", lambda d: _glb(b'{"nodes": [{"children": 5, "mesh": 0}], "meshes": [], "accessors": []}'), ("children",)),
    "replicacad-glb-children-list": ("replicacad", "objects/zz.glb", lambda d: _glb(b'{"nodes": [{"children": [[1]]}], "meshes": []}'), ("children",)),
    "condvln-metadata-list": ("condvln", "s.json", lambda d: b'{"format": "condvln.scene", "schema_version": 1, "scene": {"id": "s", "source": "x", "metadata": [1], "rooms": [], "doors": []}}', ("metadata",)),
    "procthor-deep": ("procthor", "h.json", lambda d: b"[" * 3000 + b"]" * 3000, ("nested deeper",)),
    "procthor-not-object": ("procthor", "h.json", lambda d: b"[1, 2]", ("h.json",)),
    "procthor-huge-int": ("procthor", "h.json", lambda d: b'{"rooms": 1' + b"0" * 5000 + b"}", ("h.json",)),
    "ithor-deep": ("ithor", "m.json", lambda d: b"{\"a\": " * 2000 + b"1" + b"}" * 2000, ("nested deeper",)),
    "ithor-not-object": ("ithor", "m.json", lambda d: b'"text"', ("m.json",)),
}  # fmt: skip
"""Hostile files for every scene source (loaded by ``scenes export``)."""


def _source_file(ctx: Ctx, source: str, name: str, make: Callable[[Path], bytes]) -> Path:
    if source == "replicacad":
        shutil.copytree(DATA / "replicacad", ctx.tmp / "rc")
        root = ctx.tmp / "rc"
        if name.endswith(".glb"):  # the chair's config names no mesh: point a scene at a bad .glb
            (root / "configs" / "objects" / "frl_apartment_chair_01.object_config.json").unlink()
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_bytes(make(DATA))
            scene = root / "configs" / "scenes" / "x.scene_instance.json"
            scene.write_bytes(b'{"object_instances": [{"template_name": "objects/zz"}]}')
            return scene
        path = root / name
    else:
        path = ctx.tmp / name
    path.write_bytes(make(DATA))
    return path


def source_cases() -> list[Case]:
    cases = []
    for name, (source, file_name, make, needles) in SOURCE_HOSTILES.items():

        def export(ctx: Ctx, source=source, file_name=file_name, make=make) -> list[str]:
            path = _source_file(ctx, source, file_name, make)
            return [
                "scenes",
                "export",
                str(path),
                "--source",
                source,
                "--out",
                str(ctx.tmp / "o.json"),
            ]

        env = {"CONDVLN_MAX_DECOMPRESSED_MB": "1"} if name.endswith("bomb") else {}
        cases.append(Case(f"export-{name}", "scene source", export, needles,
                          outputs=("o.json",), env=env))  # fmt: skip
        if name in ("gibson-exec-pickle", "mp3d-1e308-region", "replicacad-template-escape",
                    "procthor-deep", "gibson-huge-header"):  # fmt: skip

            def generate(ctx: Ctx, source=source, file_name=file_name, make=make) -> list[str]:
                path = _source_file(ctx, source, file_name, make)
                return ["generate", "--source", source, "--input", str(path),
                        "--out", str(ctx.tmp / "gen"), "-j", "1", "-q"]  # fmt: skip

            cases.append(Case(f"generate-{name}", "scene source", generate, needles,
                              outputs=("gen",)))  # fmt: skip
    for name in ("fifo", "dev-zero", "directory", "deleted"):
        make_file, needle, _ = FILE_HOSTILES[name]
        for source in ("procthor", "ithor", "mp3d", "gibson", "replicacad", "condvln"):

            def export_file(ctx: Ctx, source=source, make_file=make_file) -> list[str]:
                path = ctx.tmp / "input.json"
                path.write_bytes(b"{}")
                make_file(path)
                return [
                    "scenes",
                    "export",
                    str(path),
                    "--source",
                    source,
                    "--out",
                    str(ctx.tmp / "o.json"),
                ]

            cases.append(Case(f"export-{source}-{name}", "scene source", export_file,
                              ("input.json", needle), outputs=("o.json",)))  # fmt: skip
    return cases


# --- output paths and options ----------------------------------------------------------------------


def _writers(ctx: Ctx, out: Path) -> dict[str, list[str]]:
    ds = ctx.dataset()
    pred = _predictions_for(ctx, ds, "val_unseen")
    return {
        "generate": ["generate", "--out", str(out), "--scenes", "2", "--per-scene", "2", "-j", "1", "-q"],
        "oracle": ["oracle", str(ds), str(out)],
        "run": ["run", "--agent", "random", "--dataset", str(ds), "--split", "val_unseen", "--out", str(out), "-j", "1", "-q"],
        "evaluate": ["evaluate", str(ds), str(pred), "--out", str(out), "--split", "val_unseen"],
        "benchmark": ["benchmark", "--out", str(out), "--scenes", "2", "--per-scene", "2", "-j", "1", "-q"],
    }  # fmt: skip


OUTPUT_HOSTILES: dict[str, tuple[Callable[[Path], Path], str]] = {
    # name: (make the awkward out path inside the case folder, needle)
    "under-a-file": (lambda t: (t / "file").write_text("x") and t / "file" / "out", "is not a folder"),
    "file-in-the-way": (lambda t: (t / "out").write_text("x") and t / "out", "not a folder"),
    "dangling-symlink": (lambda t: ((t / "out").symlink_to(t / "nowhere"), t / "out")[1], "dangling symbolic link"),
}  # fmt: skip


def output_cases() -> list[Case]:
    cases = []
    for name, (make, needle) in OUTPUT_HOSTILES.items():
        for command in ("generate", "oracle", "run", "evaluate", "benchmark"):

            def prepare(ctx: Ctx, make=make, command=command) -> list[str]:
                return _writers(ctx, make(ctx.tmp))[command]

            cases.append(Case(f"{command}-out-{name}", "output path", prepare, (needle,)))
    for name, make, needle in (
        ("under-a-file", lambda t: (t / "file").write_text("x") and t / "file" / "o.json", "is not a folder"),
        ("a-folder", lambda t: (t / "o.json").mkdir() or t / "o.json", "is a folder"),
        ("dangling-symlink", lambda t: ((t / "o.json").symlink_to(t / "nowhere"), t / "o.json")[1], "dangling"),
    ):  # fmt: skip
        for command in ("export", "render", "graph"):

            def file_out(ctx: Ctx, make=make, command=command) -> list[str]:
                out = str(make(ctx.tmp))
                return {
                    "export": ["scenes", "export", "3", "--out", out],
                    "render": ["scenes", "render", "3", "--out", out],
                    "graph": ["graph", "3", "--out", out],
                }[command]

            cases.append(Case(f"{command}-out-{name}", "output path", file_out, (needle,)))
    for command in ("generate", "oracle", "run", "evaluate", "benchmark"):

        def locked(ctx: Ctx, command=command) -> list[str]:
            import fcntl

            out = ctx.tmp / "locked"
            fd = os.open(ctx.tmp / ".locked.lock", os.O_RDWR | os.O_CREAT)
            fcntl.flock(fd, fcntl.LOCK_EX)
            ctx.tmp.joinpath(".holder").write_text(str(fd))
            pid = os.fork()
            if pid == 0:  # the other writer: holds the lock (inherited) until killed
                signal.pause()
                os._exit(0)
            os.close(fd)
            ctx.tmp.joinpath(".holder").write_text(str(pid))
            return _writers(ctx, out)[command]

        cases.append(Case(f"{command}-out-locked", "output path", locked, ("in use by another",),
                          outputs=("locked",)))  # fmt: skip
    return cases


OPTION_CASES: list[tuple[str, list[str], str]] = [
    ("generate-scenes-zero", ["generate", "--out", "{tmp}/g", "--scenes", "0"], "scenes"),
    ("generate-scenes-huge", ["generate", "--out", "{tmp}/g", "--scenes", "1000000000"], "scenes"),
    ("generate-per-scene-zero", ["generate", "--out", "{tmp}/g", "--per-scene", "0"], "per"),
    ("generate-per-scene-negative", ["generate", "--out", "{tmp}/g", "--per-scene", "-3"], "per"),
    ("generate-share", ["generate", "--out", "{tmp}/g", "--counterfactual-share", "2"], "counterfactual"),
    ("generate-share-nan", ["generate", "--out", "{tmp}/g", "--counterfactual-share", "nan"], "counterfactual"),
    ("generate-seed-negative", ["generate", "--out", "{tmp}/g", "--seed", "-1"], "seed"),
    ("generate-seed-5000-digits", ["generate", "--out", "{tmp}/g", "--seed", "9" * 5000], "seed"),
    ("generate-unknown-source", ["generate", "--out", "{tmp}/g", "--source", "nosuch"], "unknown scene source"),
    ("generate-workers-zero", ["generate", "--out", "{tmp}/g", "--workers", "0"], "workers"),
    ("generate-input-missing", ["generate", "--out", "{tmp}/g", "--source", "procthor"], "needs --input"),
    ("benchmark-split", ["benchmark", "--out", "{tmp}/g", "--split", "nope"], "nope"),
    ("benchmark-scenes-zero", ["benchmark", "--out", "{tmp}/g", "--scenes", "0"], "scenes"),
    ("benchmark-too-small", ["benchmark", "--out", "{tmp}/g", "--scenes", "1", "--per-scene", "2", "-j", "1", "-q"], "has no episodes"),
    ("audit-unknown-source", ["audit", "--source", "nosuch"], "unknown scene source"),
    ("graph-seed-text", ["graph", "abc"], "abc"),
]  # fmt: skip
"""Out-of-range options: refused before any work."""


def option_cases() -> list[Case]:
    cases = []
    for name, argv, needle in OPTION_CASES:

        def prepare(ctx: Ctx, argv=argv) -> list[str]:
            return [a.replace("{tmp}", str(ctx.tmp)) for a in argv]

        outputs = ("g",) if name != "benchmark-too-small" else ()
        cases.append(Case(name, "options", prepare, (needle,), outputs=outputs))
    for name, argv, needle in (
        ("run-limit-negative", ["--limit", "-1"], "limit"),
        ("run-miss-rate", ["--miss-rate", "2"], "miss_rate"),
        ("run-seed-negative", ["--seed", "-1"], "seed"),
        ("run-workers-zero", ["--workers", "0"], "workers"),
        ("run-unknown-split", ["--split", "nope"], "nope"),
        ("run-unknown-agent", ["--agent", "nosuch"], "nosuch"),
    ):

        def run(ctx: Ctx, argv=argv) -> list[str]:
            ds = ctx.dataset()
            args = [
                "run",
                "--agent",
                "random",
                "--dataset",
                str(ds),
                "--out",
                str(ctx.tmp / "r"),
                "-q",
            ]
            return args + argv

        cases.append(Case(name, "options", run, (needle,), outputs=("r",)))
    return cases


def _run_folder(ctx: Ctx, edit: Callable[[Path], None]) -> list[str]:
    """A finished run folder of the one-episode dataset, then ``edit``-ed (a resume reads it)."""
    ds = ctx.dataset()
    run = ctx.tmp / "run"
    args = ["run", "--agent", "random", "--dataset", str(ds), "--split", "val_unseen",
            "--out", str(run), "-j", "1", "-q"]  # fmt: skip
    assert invoke(args).code == 0
    (run / "predictions.json").unlink()
    edit(run)
    return args


def _two_lines_then_garbage(run: Path) -> None:
    line = (run / "trajectories.jsonl").read_bytes()
    (run / "trajectories.jsonl").write_bytes(b'{"broken": \n' + line)


RESUME_HOSTILES: dict[str, tuple[Callable[[Path], None], tuple[str, ...]]] = {
    "manifest-list": (lambda r: (r / "manifest.json").write_bytes(b"[1, 2]"), ("manifest.json", "JSON object")),
    "manifest-invalid": (lambda r: (r / "manifest.json").write_bytes(b"{"), ("manifest.json", "not valid JSON")),
    "manifest-other-agent": (
        lambda r: (r / "manifest.json").write_bytes((r / "manifest.json").read_bytes().replace(b'"random"', b'"goal_only"')),
        ("cannot resume", "'agent'"),
    ),
    "manifest-fifo": (lambda r: ((r / "manifest.json").unlink(), os.mkfifo(r / "manifest.json")), ("manifest.json", "not a regular file")),
    "trajectories-bad-middle-line": (_two_lines_then_garbage, ("trajectories.jsonl", "line 1", "not a trajectory record")),
    "trajectories-not-objects": (lambda r: (r / "trajectories.jsonl").write_bytes(b"[1]\n[2]\n"), ("trajectories.jsonl", "line 1")),
    "trajectories-directory": (lambda r: ((r / "trajectories.jsonl").unlink(), (r / "trajectories.jsonl").mkdir()), ("trajectories.jsonl", "is a directory")),
    "trajectories-dev-zero": (lambda r: ((r / "trajectories.jsonl").unlink(), (r / "trajectories.jsonl").symlink_to("/dev/zero")), ("trajectories.jsonl", "not a regular file")),
}  # fmt: skip
"""Malformed resume state of a run folder: refused, and the folder left exactly as it was."""


def resume_cases() -> list[Case]:
    cases = []
    for name, (edit, needles) in RESUME_HOSTILES.items():

        def prepare(ctx: Ctx, edit=edit) -> list[str]:
            return _run_folder(ctx, edit)

        cases.append(
            Case(f"run-resume-{name}", "resume state", prepare, needles, unchanged=("run",))
        )
    return cases


def _results_folder(ctx: Ctx) -> tuple[Path, Path]:
    """A run folder and its evaluation folder for the one-episode dataset."""
    ds = ctx.dataset()
    run, ev = ctx.tmp / "run", ctx.tmp / "eval"
    args = ["run", "--agent", "random", "--dataset", str(ds), "--split", "val_unseen",
            "--out", str(run), "-j", "1", "-q"]  # fmt: skip
    assert invoke(args).code == 0
    args = [
        "evaluate",
        str(ds),
        str(run / "trajectories.jsonl"),
        "--out",
        str(ev),
        "--split",
        "val_unseen",
    ]
    assert invoke(args).code == 0
    return run, ev


def _write(name: str, content: bytes) -> Callable[[Path], None]:
    return lambda folder: (folder / name).write_bytes(content)


REPORT_HOSTILES: dict[str, tuple[str, Callable[[Path], None], tuple[str, ...]]] = {
    # name: (folder: run or eval, edit, needles)
    "viz-manifest-list": ("run", _write("manifest.json", b"[1]"), ("manifest.json", "JSON object")),
    "viz-manifest-invalid": ("run", _write("manifest.json", b"{"), ("manifest.json", "not valid JSON")),
    "viz-manifest-split-escape": ("run", lambda r: (r / "manifest.json").write_bytes((r / "manifest.json").read_bytes().replace(b'"val_unseen"', b'"../../x"')), ("manifest.json", "field 'split'")),
    "viz-manifest-deep": ("run", _write("manifest.json", b"[" * 3000 + b"]" * 3000), ("manifest.json", "nested deeper")),
    "viz-trajectories-bad": ("run", _write("trajectories.jsonl", b'{"episode_id": 1, "positions": 5, "headings": [], "stop": true}\n'), ("trajectories.jsonl", "field 'positions'")),
    "viz-trajectories-fifo": ("run", lambda r: ((r / "trajectories.jsonl").unlink(), os.mkfifo(r / "trajectories.jsonl")), ("trajectories.jsonl", "not a regular file")),
    "report-metrics-invalid": ("eval", _write("metrics.json", b'{"a":'), ("metrics.json", "not valid JSON")),
    "report-metrics-list": ("eval", _write("metrics.json", b"[1, 2]"), ("metrics.json",)),
    "report-metrics-dev-zero": ("eval", lambda e: ((e / "metrics.json").unlink(), (e / "metrics.json").symlink_to("/dev/zero")), ("no evaluation output found",)),
    "report-episodes-bad-line": ("eval", _write("episodes.jsonl", b'{"x": 1}\n[2]\n'), ("episodes.jsonl", "line 1")),
    "report-episodes-deep": ("eval", _write("episodes.jsonl", b"[" * 3000 + b"]" * 3000 + b"\n"), ("episodes.jsonl",)),
}  # fmt: skip
"""Hostile run and evaluation folders for ``viz`` and ``report``."""


def report_cases() -> list[Case]:
    cases = []
    for name, (which, edit, needles) in REPORT_HOSTILES.items():

        def prepare(ctx: Ctx, which=which, edit=edit) -> list[str]:
            run, ev = _results_folder(ctx)
            if which == "run":
                edit(run)
                return [
                    "viz",
                    str(run),
                    "--episode",
                    "1",
                    "--out",
                    str(ctx.tmp / "x.png"),
                    "--dataset",
                    str(ctx.tmp / "ds"),
                ]
            edit(ev)
            return ["report", str(ev), "--out", str(ctx.tmp / "r.html"), "-q"]

        outputs = ("x.png",) if which == "run" else ("r.html",)
        cases.append(Case(name, "run and results folders", prepare, needles, outputs=outputs))
    return cases


# --- agents ----------------------------------------------------------------------------------------

HOSTILE_AGENTS = """\
import sys, time


class Agent:
    def __init__(self, value=0):
        self.value = value

    def reset(self, episode):
        pass

    def act(self, observation):
        return self.value


class InitRaises(Agent):
    def __init__(self):
        raise ValueError("no weights here")


class InitExits(Agent):
    def __init__(self):
        sys.exit(0)


class InitExitsMessage(Agent):
    def __init__(self):
        sys.exit("bye\\nsecond line")


class ResetRaises(Agent):
    def reset(self, episode):
        raise RuntimeError("reset broke")


class ResetExits(Agent):
    def reset(self, episode):
        sys.exit(3)


class ResetHangs(Agent):
    def reset(self, episode):
        time.sleep(60)


class ActRaises(Agent):
    def act(self, observation):
        raise KeyError("act broke")


class ActRaisesMultiline(Agent):
    def act(self, observation):
        raise ValueError("first line\\nsecond line\\nthird line")


class ActExits(Agent):
    def act(self, observation):
        sys.exit(0)


class ActHangs(Agent):
    def act(self, observation):
        time.sleep(60)


class Loud(Agent):
    def __init__(self):
        print("hello from the constructor")

    def reset(self, episode):
        print("resetting", episode.episode_id)
        sys.stderr.write("noise on stderr\\n")

    def act(self, observation):
        print("acting at step", observation.step)
        return 0


class BatchRaises(Agent):
    max_batch_size = 4

    def act_batch(self, observations, episode_ids):
        raise RuntimeError("batch broke")


class BatchTooFew(Agent):
    max_batch_size = 4

    def act_batch(self, observations, episode_ids):
        return []


class BatchNotList(Agent):
    max_batch_size = 4

    def act_batch(self, observations, episode_ids):
        return 7


class NoMethods:
    pass


class OnlyReset:
    def reset(self, episode):
        pass


class BadSource(Agent):
    instruction_source = "labels"


class BadFormat(Agent):
    observation_format = "pixels"


NOT_A_CLASS = 42


def factory_of_nothing():
    return None
"""
"""Hostile agents: each breaks the agent contract in one way (written into the case folder)."""

AGENT_FAILURE_CASES: dict[str, tuple[str, list[str], str, tuple[str, ...]]] = {
    # name: (target in agents.py, extra run options, episode status, reason needles)
    "reset-raises": ("ResetRaises", [], "agent_error", ("reset: RuntimeError: reset broke",)),
    "reset-sys-exit": ("ResetExits", [], "agent_error", ("reset: SystemExit: 3",)),
    "reset-hangs": ("ResetHangs", ["--step-timeout", "0.3"], "timeout", ("reset", "0.3 s")),
    "act-raises": ("ActRaises", [], "agent_error", ("act: KeyError: 'act broke'",)),
    "act-raises-multiline": ("ActRaisesMultiline", [], "agent_error", ("first line second line",)),
    "act-sys-exit": ("ActExits", [], "agent_error", ("act: SystemExit: 0",)),
    "act-hangs": ("ActHangs", ["--step-timeout", "0.3"], "timeout", ("act", "0.3 s")),
    "act-returns-true": ("Agent", ["--agent-arg", "value=true"], "invalid_action", ("act returned True (bool)",)),
    "act-returns-false": ("Agent", ["--agent-arg", "value=false"], "invalid_action", ("act returned False (bool)",)),
    "act-returns-7": ("Agent", ["--agent-arg", "value=7"], "invalid_action", ("act returned 7 (int)",)),
    "act-returns-minus-1": ("Agent", ["--agent-arg", "value=-1"], "invalid_action", ("act returned -1 (int)",)),
    "act-returns-string": ("Agent", ["--agent-arg", 'value="1"'], "invalid_action", ("act returned '1' (str)",)),
    "act-returns-none": ("Agent", ["--agent-arg", "value=null"], "invalid_action", ("act returned None (NoneType)",)),
    "act-returns-float": ("Agent", ["--agent-arg", "value=1.0"], "invalid_action", ("act returned 1.0 (float)",)),
    "act-returns-list": ("Agent", ["--agent-arg", "value=[1]"], "invalid_action", ("act returned [1] (list)",)),
    "act-returns-huge": ("Agent", ["--agent-arg", "value=" + "9" * 400], "invalid_action", ("act returned '9999", "(str)")),
    "act-batch-raises": ("BatchRaises", ["--batch-size", "2"], "agent_error", ("act_batch: RuntimeError: batch broke",)),
    "act-batch-too-few": ("BatchTooFew", ["--batch-size", "2"], "invalid_action", ("act_batch returned [] for 1 episodes",)),
    "act-batch-not-a-list": ("BatchNotList", ["--batch-size", "2"], "invalid_action", ("act_batch returned [] for 1 episodes",)),
}  # fmt: skip
"""Agent faults inside an episode: the run finishes (exit 0) and the episode records why."""

AGENT_LOAD_CASES: dict[str, tuple[str, list[str], tuple[str, ...]]] = {
    # name: (--agent value, extra options, error needles); {agents} is the agents file
    "init-raises": ("{agents}:InitRaises", [], ("failed to start", "ValueError: no weights here")),
    "init-sys-exit-0": ("{agents}:InitExits", [], ("failed to start", "SystemExit: 0")),
    "init-sys-exit-message": ("{agents}:InitExitsMessage", [], ("failed to start", "SystemExit: bye")),
    "init-rejects-args": ("{agents}:Agent", ["--agent-arg", "nosuch=1"], ("rejects its arguments", "nosuch")),
    "init-needs-args": ("{agents}:InitRaises", ["--agent-arg", "x=1"], ("rejects its arguments",)),
    "no-methods": ("{agents}:NoMethods", [], ("is not an agent", "NoMethods")),
    "only-reset": ("{agents}:OnlyReset", [], ("is not an agent", "OnlyReset")),
    "factory-returns-none": ("{agents}:factory_of_nothing", [], ("is not an agent", "NoneType")),
    "not-callable": ("{agents}:NOT_A_CLASS", [], ("is not a class or factory",)),
    "missing-attribute": ("{agents}:NoSuchAgent", [], ("has no attribute 'NoSuchAgent'",)),
    "empty-attribute": ("{agents}:", [], ("has no attribute ''",)),
    "bad-instruction-source": ("{agents}:BadSource", [], ("instruction_source", "'labels'")),
    "bad-observation-format": ("{agents}:BadFormat", [], ("observation_format", "'pixels'")),
    "os-system": ("os:system", [], ("'os:system' cannot be constructed",)),
    "os-system-with-arg": ("os:system", ["--agent-arg", "nosuch=1"], ("'os:system' rejects its arguments",)),
    "os-sep": ("os:sep", [], ("'os:sep' is not a class or factory",)),
    "math-pi": ("math:pi", [], ("is not a class or factory",)),
    "builtins-print": ("builtins:print", [], ("'builtins:print' is not an agent", "NoneType")),
    "builtins-dict": ("builtins:dict", [], ("is not an agent", "dict")),
    "json-loads": ("json:loads", [], ("'json:loads' cannot be constructed",)),
    "os-getcwd": ("os:getcwd", [], ("is not an agent", "str")),
    "module-missing": ("nosuch_agent_module:Agent", [], ("cannot load agent module 'nosuch_agent_module'",)),
    "submodule-missing": ("os.nosuch:Agent", [], ("cannot load agent module 'os.nosuch'",)),
    "module-empty-name": (":Agent", [], ("cannot load agent module ''",)),
    "package-attribute-missing": ("condvln.agents.baselines:NoSuchAgent", [], ("has no attribute 'NoSuchAgent'",)),
    "unknown-name": ("randon", [], ("unknown agent 'randon'", "did you mean 'random'")),
    "file-missing": ("{tmp}/nowhere/agent.py:Agent", [], ("no file", "nowhere/agent.py")),
    "file-outside-missing": ("../../../nowhere/agent.py:Agent", [], ("no file",)),
    "file-etc-passwd": ("/etc/passwd:Agent", [], ("/etc/passwd is not a Python file",)),
    "file-dev-zero": ("/dev/zero:Agent", [], ("no file /dev/zero",)),
    "file-directory": ("{tmp}/folder.py:Agent", [], ("no file", "folder.py")),
    "file-fifo": ("{tmp}/fifo.py:Agent", [], ("no file", "fifo.py")),
    "file-symlink-dev-zero": ("{tmp}/zero.py:Agent", [], ("no file", "zero.py")),
    "file-syntax-error": ("{tmp}/broken.py:Agent", [], ("cannot load agent from", "broken.py", "SyntaxError")),
    "file-raises-on-import": ("{tmp}/raising.py:Agent", [], ("cannot load agent from", "raising.py", "RuntimeError: import-time failure")),
    "file-exits-on-import": ("{tmp}/exiting.py:Agent", [], ("cannot load agent from", "exiting.py", "SystemExit")),
    "url-unreachable": ("http://127.0.0.1:9", [], ("agent server http://127.0.0.1:9",)),
    "url-no-host": ("http://", [], ("agent URL 'http://': expected http://HOST:PORT",)),
    "url-bad-port": ("http://127.0.0.1:99999", [], ("agent",)),
    "agent-arg-no-equals": ("random", ["--agent-arg", "oops"], ("--agent-arg 'oops': expected KEY=VALUE",)),
    "agent-arg-bad-key": ("random", ["--agent-arg", "1x=2"], ("--agent-arg '1x=2': expected KEY=VALUE",)),
    "agent-arg-unknown": ("random", ["--agent-arg", "nosuch=1"], ("'random' rejects its arguments",)),
}  # fmt: skip
"""Agents that cannot start: one error line, exit 2, no run folder."""


def _agent_files(ctx: Ctx) -> Path:
    """The hostile agents and broken agent files of :data:`AGENT_LOAD_CASES` in the case folder."""
    agents = ctx.tmp / "agents.py"
    agents.write_text(HOSTILE_AGENTS)
    (ctx.tmp / "folder.py").mkdir()
    os.mkfifo(ctx.tmp / "fifo.py")
    (ctx.tmp / "zero.py").symlink_to("/dev/zero")
    (ctx.tmp / "broken.py").write_text("class Agent(:\n")
    (ctx.tmp / "raising.py").write_text("raise RuntimeError('import-time failure')\n")
    (ctx.tmp / "exiting.py").write_text("import sys\nsys.exit(5)\n")
    return agents


def _run_agent_argv(ctx: Ctx, agent: str, extra: list[str]) -> list[str]:
    ds = ctx.dataset()
    agents = _agent_files(ctx)
    agent = agent.replace("{agents}", str(agents)).replace("{tmp}", str(ctx.tmp))
    return ["run", "--agent", agent, "--dataset", str(ds), "--split", "val_unseen",
            "--out", str(ctx.tmp / "run"), "-j", "1", "-q", *extra]  # fmt: skip


def _episode_failed(status: str, needles: tuple[str, ...]) -> Callable[[Ctx], None]:
    """Check that the one episode of the run ended with ``status`` and a one-line reason."""

    def check(ctx: Ctx) -> None:
        run = ctx.tmp / "run"
        lines = (run / "trajectories.jsonl").read_text().splitlines()
        assert len(lines) == 1, lines
        record = json.loads(lines[0])
        assert record["status"] == status, record
        assert "\n" not in record["reason"] and len(record["reason"]) <= 300, record["reason"]
        for needle in needles:
            assert needle in record["reason"], (needle, record["reason"])
        assert record["stop"] is False and len(record["positions"]) == record["steps"] + 1
        predictions = json.loads((run / "predictions.json").read_text())
        assert list(predictions) == [str(record["episode_id"])]

    return check


def _loud_agent_ran(ctx: Ctx) -> None:
    (line,) = (ctx.tmp / "run" / "trajectories.jsonl").read_text().splitlines()
    record = json.loads(line)
    assert record["status"] == "ok" and record["stop"] is True and record["actions"] == [0]


def agent_cases() -> list[Case]:
    """Agents that raise, exit, hang, print, answer non-actions, or cannot be loaded at all."""
    cases = []
    for name, (target, extra, status, needles) in AGENT_FAILURE_CASES.items():

        def episode(ctx: Ctx, target=target, extra=extra) -> list[str]:
            return _run_agent_argv(ctx, f"{{agents}}:{target}", extra)

        cases.append(
            Case(
                f"run-agent-{name}",
                "agents",
                episode,
                needles=(f"agent failures: 1 {status}",),
                code=3,  # a failed episode: exit code 3 (issue 30)
                after=_episode_failed(status, needles),
            )
        )
    cases.append(
        Case(
            "run-agent-prints-to-stdout",
            "agents",
            lambda ctx: _run_agent_argv(ctx, "{agents}:Loud", []),
            needles=("1 episodes run",),
            code=0,
            after=_loud_agent_ran,
        )
    )
    for name, (agent, extra, needles) in AGENT_LOAD_CASES.items():

        def load(ctx: Ctx, agent=agent, extra=extra) -> list[str]:
            return _run_agent_argv(ctx, agent, extra)

        cases.append(Case(f"run-agent-{name}", "agents", load, needles, outputs=("run",)))
    for name in ("init-raises", "no-methods", "os-system", "file-syntax-error"):
        agent, _, needles = AGENT_LOAD_CASES[name]

        def check(ctx: Ctx, agent=agent) -> list[str]:
            ds = ctx.dataset()
            spec = agent.replace("{agents}", str(_agent_files(ctx)))
            return ["check-agent", spec, "--dataset", str(ds), "--split", "val_unseen"]

        cases.append(Case(f"check-agent-{name}", "agents", check, needles=("loads",), code=1))
    return cases


# --- report injection ------------------------------------------------------------------------------

INJECTIONS: dict[str, str] = {
    "script": "<script>alert(1)</script>",
    "close-script": "</script><script>alert(2)</script><!--",
    "img-onerror": "<img src=x onerror=alert(3)>",
    "placeholders": "{{data}}{{ title }}{% raw %}${alert(4)}`${5}`",
    "mathtext": "$x$ and $x^$ cost $5",
    "quotes": '" onmouseover="alert(6)" x=\'y\' &amp; &lt;',
}
"""Markup, template placeholders, mathtext and quotes put into data-derived fields."""


def _scene_files(dataset: Path) -> list[Path]:
    return [p for p in sorted((dataset / "scenes").glob("*.json"))
            if json.loads(p.read_text()).get("format") == "condvln.scene"]  # fmt: skip


def _edit_scenes(dataset: Path, edit: Callable[[dict], None]) -> None:
    for path in _scene_files(dataset):
        doc = json.loads(path.read_text())
        for room in doc["scene"]["rooms"]:
            edit(room)
        path.write_text(json.dumps(doc))


def _instruction(results: Path, text: str) -> None:
    from condvln.vlnce import split_path

    path = split_path(results / "dataset", "val_unseen")
    doc = read_gz(path)
    for episode in doc["episodes"]:
        episode["instruction"]["instruction_text"] = f"{text} go"
    write_gz(path, doc)


def _objects(key: str) -> Callable[[Path, str], None]:
    def edit(results: Path, text: str) -> None:
        def room(doc: dict) -> None:
            for obj in doc["objects"]:
                obj[key] = f"{text} {obj[key]}"

        _edit_scenes(results / "dataset", room)

    return edit


def _rooms(key: str) -> Callable[[Path, str], None]:
    def edit(results: Path, text: str) -> None:
        _edit_scenes(results / "dataset", lambda room: room.__setitem__(key, f"{text} {room[key]}"))

    return edit


def _records(key: str) -> Callable[[Path, str], None]:
    def edit(results: Path, text: str) -> None:
        path = results / "eval" / "r" / "episodes.jsonl"
        records = [orjson.loads(line) for line in path.read_bytes().splitlines()]
        path.write_bytes(b"".join(orjson.dumps(r | {key: text}) + b"\n" for r in records))

    return edit


def _split_key(results: Path, text: str) -> None:
    stats = json.loads((results / "dataset" / "stats.json").read_text())
    stats["splits"] = {text: 1, **stats["splits"]}
    (results / "dataset" / "stats.json").write_text(json.dumps(stats))


def _run_name(results: Path, text: str) -> None:
    metrics = json.loads((results / "eval" / "r" / "metrics.json").read_text())
    (results / "eval" / "r" / "metrics.json").write_text(json.dumps(metrics | {"run": text}))


REPORT_FIELDS: dict[str, tuple[Callable[[Path, str], None], bool]] = {
    # spot: (put the text into a results folder, whether the page shows it as text)
    "instruction": (_instruction, True),
    "scene-id": (_records("scene_id"), True),
    "category": (_records("category"), True),
    "failure": (_records("failure_category"), True),
    "split-key": (_split_key, True),
    "run-name": (_run_name, True),
    "folder": (lambda results, text: None, True),
    "object-category": (_objects("category"), False),
    "object-label": (_objects("label"), False),
    "room-type": (_rooms("room_type"), False),
    "room-label": (_rooms("label"), False),
}
"""Data-derived fields of a report; the scene fields are drawn into the map image."""


def _hostile_results(ctx: Ctx, spot: str, text: str) -> Path:
    """A copy of the base results folder with ``text`` in ``spot`` (the folder name too)."""
    name = text.replace("/", "") if spot == "folder" else "results"
    results = ctx.tmp / name
    shutil.copytree(ctx.base.results, results)
    manifest = json.loads((results / "eval" / "r" / "manifest.json").read_text())
    manifest["dataset"]["path"] = str(results / "dataset")
    manifest["predictions"]["path"] = str(results / "runs" / "r" / "trajectories.jsonl")
    (results / "eval" / "r" / "manifest.json").write_text(json.dumps(manifest))
    REPORT_FIELDS[spot][0](results, text)
    return results


def _page_shows(text: str, spot: str, shown: bool) -> Callable[[Ctx], None]:
    """The report holds only its own markup, and (``shown``) ``text`` escaped or as page data."""

    def check(ctx: Ctx) -> None:
        from markupsafe import escape

        page = (ctx.tmp / "r.html").read_text()
        assert page.count("<script") == 2 and page.count("</script>") == 2
        assert "<img src=x" not in page and 'onmouseover="alert' not in page
        data = orjson.loads(page.split('id="report-data">', 1)[1].split("</script>", 1)[0])
        strings = json.dumps(data, ensure_ascii=False)
        text_of = text.replace("/", "") if spot == "folder" else text
        if shown:
            assert str(escape(text_of)) in page or json.dumps(text_of)[1:-1] in strings, spot

    return check


def report_injection_cases() -> list[Case]:
    """Every payload into every displayed spot of ``report``; two into the drawn ones; the
    drawn ones through ``viz`` and ``scenes render`` too."""
    cases = []
    for spot, (_, shown) in REPORT_FIELDS.items():
        payloads = INJECTIONS if shown else {k: INJECTIONS[k] for k in ("mathtext", "script")}
        for name, text in payloads.items():

            def report(ctx: Ctx, spot: str = spot, text: str = text) -> list[str]:
                return ["report", str(_hostile_results(ctx, spot, text)), "--out",
                        str(ctx.tmp / "r.html"), "-q"]  # fmt: skip

            cases.append(Case(f"report-inject-{spot}-{name}", "report injection", report,
                              code=0, after=_page_shows(text, spot, shown)))  # fmt: skip
    for spot in ("instruction", "object-category", "room-type"):
        for name in ("mathtext", "script", "quotes"):

            def viz(ctx: Ctx, spot: str = spot, text: str = INJECTIONS[name]) -> list[str]:
                results = _hostile_results(ctx, spot, text)
                return ["viz", str(results / "runs" / "r"), "--episode", "1", "--out",
                        str(ctx.tmp / "v.png"), "--dataset", str(results / "dataset")]  # fmt: skip

            cases.append(Case(f"viz-inject-{spot}-{name}", "report injection", viz, code=0,
                              after=lambda ctx: _is_png(ctx.tmp / "v.png")))  # fmt: skip
    for name, text in INJECTIONS.items():

        def render(ctx: Ctx, text: str = text) -> list[str]:
            results = _hostile_results(ctx, "object-category", text)
            _rooms("room_type")(results, text)
            scene = _scene_files(results / "dataset")[0]
            return ["scenes", "render", str(scene), "--source", "condvln", "--out",
                    str(ctx.tmp / "m.png")]  # fmt: skip

        cases.append(Case(f"render-inject-{name}", "report injection", render, code=0,
                          after=lambda ctx: _is_png(ctx.tmp / "m.png")))  # fmt: skip
    return cases


def _is_png(path: Path) -> None:
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# --- hostile agent servers -------------------------------------------------------------------------

_SERVERS: dict[str, list[Any]] = {}
"""Fake servers started by a case, by case folder (stopped by :func:`release_holders`)."""


def _http(status: int, body: bytes, *headers: str, length: int | None = None) -> bytes:
    size = len(body) if length is None else length
    head = [f"HTTP/1.1 {status} X", f"Content-Length: {size}", *headers]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


INFO = {"protocol": "condvln-agent", "version": 1, "name": "fake", "max_batch_size": 1,
        "instruction_source": "original", "observation_format": "condvln"}  # fmt: skip
GOOD = {"/info": _http(200, orjson.dumps(INFO)), "/reset": _http(200, b'{"ok": true}'),
        "/act": _http(200, b'{"actions": [0]}')}  # fmt: skip


class _FakeAgentServer(socketserver.ThreadingTCPServer):
    """Answers each request path with fixed raw bytes (``None``: close without answering)."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, answers: dict[str, bytes | None]) -> None:
        self.answers = answers
        super().__init__(("127.0.0.1", 0), _FakeHandler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _FakeHandler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        self.connection.settimeout(10)
        try:
            while True:
                line = self.rfile.readline(65537)
                if not line:
                    return
                length = 0
                while (header := self.rfile.readline(65537)) not in (b"\r\n", b"\n", b""):
                    name, _, value = header.decode("latin-1").partition(":")
                    if name.strip().lower() == "content-length":
                        length = int(value)
                self.rfile.read(length)
                path = line.split()[1].decode("latin-1") if len(line.split()) > 1 else "/"
                answer = self.server.answers.get(path.rstrip("/"))  # type: ignore[attr-defined]
                if answer is None:
                    return
                self.wfile.write(answer)
                self.wfile.flush()
                if b"Connection: close" in answer.split(b"\r\n\r\n", 1)[0]:
                    return
        except OSError:
            return


def _with(**changes: bytes | None) -> dict[str, bytes | None]:
    return GOOD | {f"/{k}": v for k, v in changes.items()}


def _info(**fields: Any) -> dict[str, bytes | None]:
    return _with(info=_http(200, json.dumps(INFO | fields).encode()))


SERVER_CASES: dict[str, tuple[dict[str, bytes | None], int, tuple[str, ...]]] = {
    # name: (answers, exit code, needles) — 2: the agent cannot start; 3: the episode fails
    # (issue 30); 0: the episode runs
    "info-html": (_with(info=_http(200, b"<html>hi</html>")), 2, ("GET /info", "malformed")),
    "info-list": (_with(info=_http(200, b"[1, 2]")), 2, ("GET /info",)),
    "info-deep": (_with(info=_http(200, b"[" * 5000 + b"]" * 5000)), 2, ("GET /info",)),
    "info-500": (_with(info=_http(500, b'{"error": "boom"}')), 2, ("GET /info", "HTTP 500")),
    "info-404-text": (_with(info=_http(404, b"not here")), 2, ("GET /info",)),
    "info-closes": (_with(info=None), 2, ("GET /info",)),
    "info-garbage-status": (_with(info=b"HELLO\r\n\r\n"), 2, ("GET /info",)),
    "info-short-body": (_with(info=_http(200, b'{"protocol": "condvln-', "Connection: close", length=100)), 2, ("GET /info",)),
    "info-oversized": (_with(info=_http(200, b'{"a": "' + b"x" * (2 << 20) + b'"}')), 2, ("exceeds the 1048576-byte limit",)),
    "info-length-lies-big": (_with(info=_http(200, b"{}", length=10**12)), 2, ("exceeds the 1048576-byte limit",)),
    "info-redirect": (_with(info=_http(302, b"", "Location: http://127.0.0.1:9/")), 2, ("GET /info",)),
    "info-protocol": (_info(protocol="other"), 2, ("speaks 'other' version 1",)),
    "info-version-2": (_info(version=2), 2, ("version 2",)),
    "info-no-protocol": (_with(info=_http(200, b"{}")), 2, ("speaks None version None",)),
    "info-batch-text": (_info(max_batch_size="many"), 2, ("failed to start", "'many'")),
    "info-source": (_info(instruction_source="labels"), 2, ("instruction_source",)),
    "info-name-markup": (_info(name="<script>[/]$x^$"), 0, ("1 episodes run",)),
    "reset-500": (_with(reset=_http(500, b'{"error": "no"}')), 3, ("agent failures: 1 agent_error",)),
    "reset-not-json": (_with(reset=_http(200, b"ok")), 3, ("agent failures: 1 agent_error",)),
    "reset-closes": (_with(reset=None), 3, ("agent failures: 1 agent_error",)),
    "act-nan": (_with(act=_http(200, b'{"actions": [NaN]}')), 3, ("agent failures: 1 agent_error",)),
    "act-huge-int": (_with(act=_http(200, b'{"actions": [1' + b"0" * 400 + b"]}")), 3, ("agent failures: 1",)),
    "act-deep": (_with(act=_http(200, b'{"actions": ' + b"[" * 3000 + b"]" * 3000 + b"}")), 3, ("agent failures: 1",)),
    "act-null": (_with(act=_http(200, b'{"actions": null}')), 3, ("agent failures: 1",)),
    "act-object": (_with(act=_http(200, b'{"actions": {"0": 1}}')), 3, ("agent failures: 1",)),
    "act-text-action": (_with(act=_http(200, b'{"actions": ["1"]}')), 3, ("agent failures: 1 invalid_action",)),
    "act-bool-action": (_with(act=_http(200, b'{"actions": [true]}')), 3, ("agent failures: 1 invalid_action",)),
    "act-float-action": (_with(act=_http(200, b'{"actions": [1.0]}')), 3, ("agent failures: 1 invalid_action",)),
    "act-closes": (_with(act=None), 3, ("agent failures: 1 agent_error",)),
    "act-short-body": (_with(act=_http(200, b'{"actions": [0', "Connection: close", length=60)), 3, ("agent failures: 1 agent_error",)),
    "act-error-markup": (_with(act=_http(500, b'{"error": "[/] <b>$x^$\\n second"}')), 3, ("agent failures: 1 agent_error",)),
}  # fmt: skip
"""Agent servers that answer wrongly (no silent or byte-at-a-time ones: deadlines are #29.2)."""


def hostile_server_cases() -> list[Case]:
    cases = []
    for name, (answers, code, needles) in SERVER_CASES.items():

        def prepare(ctx: Ctx, answers: dict[str, bytes | None] = answers) -> list[str]:
            server = _FakeAgentServer(answers)
            _SERVERS.setdefault(str(ctx.tmp), []).append(server)
            return ["run", "--agent", server.url, "--dataset", str(ctx.dataset()), "--split",
                    "val_unseen", "--out", str(ctx.tmp / "run"), "-j", "1", "-q"]  # fmt: skip

        outputs = ("run",) if code == 2 else ()
        cases.append(Case(f"run-server-{name}", "hostile servers", prepare, needles, code=code,
                          outputs=outputs))  # fmt: skip
    return cases


# --- configuration files and overrides -------------------------------------------------------------


def _laughs(levels: int = 10, width: int = 9) -> str:
    lines = [f"a0: &a0 [{', '.join(['lol'] * width)}]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * width)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def _merge_bomb(levels: int = 12) -> str:
    lines = ["b0: &b0 {x0: 1, x1: 2}"]
    lines += [
        f"b{i}: &b{i} {{<<: [{', '.join([f'*b{i - 1}'] * 8)}], y{i}: 1}}" for i in range(1, levels)
    ]
    return "\n".join(lines) + "\n"


BIG = "9" * 5000
CONFIG_FILES: dict[str, tuple[str, Callable[[Path], None], str]] = {
    # name: (file name, make it, needle)
    "billion-laughs": ("c.yaml", lambda p: p.write_text(_laughs()), "aliases expand to more than"),
    "merge-key-bomb": ("c.yaml", lambda p: p.write_text(_merge_bomb()), "aliases expand to more than"),
    "recursive-alias": ("c.yaml", lambda p: p.write_text("seed: &a [*a]\n"), "refers to itself"),
    "recursive-mapping": ("c.yaml", lambda p: p.write_text("relations: &r {near_holds: *r}\n"), "refers to itself"),
    "fifo": ("c.yaml", os.mkfifo, "not a regular file"),
    "dev-zero": ("c.yaml", lambda p: p.symlink_to("/dev/zero"), "not a regular file"),
    "directory": ("c.yaml", lambda p: p.mkdir(), "is a directory"),
    "dangling": ("c.yaml", lambda p: p.symlink_to(p.parent / "gone"), "dangling"),
    "over-4-mib": ("c.yaml", lambda p: p.write_text("# " + "x" * (5 << 20) + "\n"), "over the 4 MiB limit"),
    "not-utf8": ("c.yaml", lambda p: p.write_bytes(b"seed: \xff\xfe\n"), "not UTF-8"),
    "binary-tag": ("c.yaml", lambda p: p.write_text("seed: !!binary aGVsbG8=\n"), "binary is not a setting value"),
    "set-tag": ("c.yaml", lambda p: p.write_text("inputs: !!set {a, b}\n"), "set is not a setting value"),
    "omap-tag": ("c.yaml", lambda p: p.write_text("relations: !!omap [{near_holds: 1}]\n"), "omap is not a setting value"),
    "python-tag": ("c.yaml", lambda p: p.write_text("seed: !!python/object:os.system [ls]\n"), "line 1"),
    "seed-5000-digits": ("c.yaml", lambda p: p.write_text(f"seed: {BIG}\n"), "5000 digits is too large"),
    "scenes-5000-digits": ("c.yaml", lambda p: p.write_text(f"scenes: {BIG}\n"), "5000 digits is too large"),
    "relation-5000-digits": ("c.yaml", lambda p: p.write_text(f"relations: {{near_holds: {BIG}}}\n"), "too large"),
    "hex-5000-digits": ("c.yaml", lambda p: p.write_text(f"per_scene: 0x{'f' * 5000}\n"), "too large"),
    "json-5000-digits": ("c.json", lambda p: p.write_text(f'{{"seed": {BIG}}}'), "5000 digits is too large"),
    "json-deep": ("c.json", lambda p: p.write_text('{"seed": ' + "[" * 5000 + "]" * 5000 + "}"), "nested too deeply"),
    "yaml-deep": ("c.yaml", lambda p: p.write_text("seed: " + "[" * 5000 + "]" * 5000 + "\n"), "c.yaml"),
    "two-documents": ("c.yaml", lambda p: p.write_text("seed: 1\n---\nseed: 2\n"), "another document"),
    "top-level-list": ("c.yaml", lambda p: p.write_text("- 1\n"), "top level must be a mapping"),
    "tab-indent": ("c.yaml", lambda p: p.write_text("relations:\n\tnear_holds: 1\n"), "line 2"),
    "unknown-key": ("c.yaml", lambda p: p.write_text("sed: 1\n"), "unknown key 'sed'"),
    "wrong-suffix": ("c.txt", lambda p: p.write_text("seed: 1\n"), ".yaml, .yml or .json"),
}  # fmt: skip
"""Hostile ``--config`` files: refused with one line before any work."""

OVERRIDES: dict[str, tuple[str, str]] = {
    "seed-5000-digits": (f"seed={BIG}", "5000 digits is too large"),
    "binary": ("seed=!!binary aGVsbG8=", "binary is not a setting value"),
    "recursive-alias": ("relations={a: &x [*x]}", "refers to itself"),
    "laughs": ("relations={" + ", ".join(_laughs(6, 12).splitlines()) + "}", "aliases expand"),
    "unclosed": ("seed=[[[[", "override"),
    "interpolation-5000": (f"seed=${{oc.decode:'{BIG}'}}", "config:"),
    "no-equals": ("seed", "is not key=value"),
    "bad-key": ("1seed=2", "is not key=value"),
}
"""Hostile ``key=value`` overrides."""


def config_cases() -> list[Case]:
    cases = []
    commands = {
        "config": lambda c, t: ["config", "generate", "--config", str(c)],
        "generate": lambda c, t: ["generate", "--config", str(c), "--out", str(t / "g"), "-q"],
        "run": lambda c, t: ["run", "--agent", "random", "--dataset", str(t / "nowhere"),
                             "--config", str(c), "--out", str(t / "g"), "-q"],
        "benchmark": lambda c, t: ["benchmark", "--config", str(c), "--out", str(t / "g"), "-q"],
    }  # fmt: skip
    for name, (file_name, make, needle) in CONFIG_FILES.items():
        for command, argv in commands.items():
            if command != "config" and name not in ("billion-laughs", "fifo", "seed-5000-digits",
                                                    "binary-tag", "recursive-alias"):  # fmt: skip
                continue

            def prepare(ctx: Ctx, file_name: str = file_name, make: Any = make,
                        argv: Any = argv) -> list[str]:  # fmt: skip
                make(ctx.tmp / file_name)
                return argv(ctx.tmp / file_name, ctx.tmp)

            cases.append(Case(f"{command}-config-{name}", "configs", prepare, (needle,),
                              outputs=("g",)))  # fmt: skip
    for name, (override, needle) in OVERRIDES.items():
        for command in ("config", "generate"):

            def over(ctx: Ctx, override: str = override, command: str = command) -> list[str]:
                if command == "config":
                    return ["config", "generate", override]
                return ["generate", "--out", str(ctx.tmp / "g"), "-q", override]

            cases.append(Case(f"{command}-override-{name}", "configs", over, (needle,),
                              outputs=("g",)))  # fmt: skip
    return cases


# --- shard merges ----------------------------------------------------------------------------------


def _json_edit(
    name: str, edit: Callable[[Any], Any], replace: bool = False
) -> Callable[[Path], None]:
    """Rewrite ``folder/name`` (JSON) after ``edit(doc)`` (with its result, when ``replace``)."""

    def apply(folder: Path) -> None:
        doc = json.loads((folder / name).read_text())
        result = edit(doc)
        (folder / name).write_text(json.dumps(result if replace else doc))

    return apply


def _both(corrupt: Callable[[Path], None]) -> Callable[[Path], None]:
    """The same corruption in both shards (so they still agree with each other)."""
    return lambda folder: (corrupt(folder.parent / "s0"), corrupt(folder))


def _shard_key(key: str, value: Any) -> Callable[[Path], None]:
    return _json_edit("manifest.json", lambda m: m["shard"].__setitem__(key, value))


def _lines(name: str, edit: Callable[[list[dict]], Any]) -> Callable[[Path], None]:
    """Rewrite the JSONL file ``folder/name`` with ``edit(records)`` (raw bytes when it returns
    them)."""

    def apply(folder: Path) -> None:
        records = [json.loads(x) for x in (folder / name).read_bytes().splitlines() if x.strip()]
        result = edit(records)
        data = result if isinstance(result, bytes) else b"".join(
            orjson.dumps(r) + b"\n" for r in records)  # fmt: skip
        (folder / name).write_bytes(data)

    return apply


def _set_id(records: list[dict], value: Any) -> None:
    records[0]["episode_id"] = value


def _swap_across(folder: Path) -> None:
    """Swap shard 0's last record with shard 1's first: both shards complete, each holding an
    episode of the other's part."""
    files = [folder.parent / "s0" / "trajectories.jsonl", folder / "trajectories.jsonl"]
    first, second = ([x for x in f.read_bytes().splitlines() if x.strip()] for f in files)
    first[-1], second[0] = second[0], first[-1]
    for path, lines in zip(files, (first, second), strict=True):
        path.write_bytes(b"".join(x + b"\n" for x in lines))


def _replace(name: str, make: Callable[[Path], Any]) -> Callable[[Path], None]:
    return lambda folder: ((folder / name).unlink(), make(folder / name))


MERGE_CASES: dict[str, tuple[str, Callable[[Path], None], tuple[str, ...]]] = {
    # name: (run or eval shards; corrupt shard 1's folder; needles)
    "manifest-list": ("run", _json_edit("manifest.json", lambda m: [m], replace=True), ("manifest.json", "JSON object")),
    "manifest-invalid": ("run", lambda f: (f / "manifest.json").write_text("{"), ("manifest.json", "not valid JSON")),
    "manifest-deep": ("run", lambda f: (f / "manifest.json").write_text("[" * 3000 + "]" * 3000), ("manifest.json", "nested deeper")),
    "manifest-fifo": ("run", _replace("manifest.json", os.mkfifo), ("manifest.json",)),
    "shard-not-object": ("run", _json_edit("manifest.json", lambda m: m.__setitem__("shard", [1, 2])), ("not a shard",)),
    "shard-index-text": ("run", _shard_key("index", "1"), ("field 'shard.index'",)),
    "shard-index-bool": ("run", _shard_key("index", True), ("field 'shard.index'",)),
    "shard-index-negative": ("run", _shard_key("index", -1), ("field 'shard.index'",)),
    "shard-index-past-count": ("run", _shard_key("index", 2), ("field 'shard.index'",)),
    "shard-index-huge": ("run", _shard_key("index", 10**30), ("field 'shard.index'",)),
    "shard-count-zero": ("run", _shard_key("count", 0), ("field 'shard.count'",)),
    "shard-count-float": ("run", _shard_key("count", 2.0), ("field 'shard.count'",)),
    "shard-count-missing": ("run", _json_edit("manifest.json", lambda m: m["shard"].pop("count")), ("field 'shard.count'",)),
    "shard-of-text": ("run", _shard_key("of_episodes", "all"), ("field 'shard.of_episodes'",)),
    "episodes-missing": ("run", _json_edit("manifest.json", lambda m: m.pop("episodes")), ("field 'episodes'",)),
    "dataset-hash-number": ("run", _json_edit("manifest.json", lambda m: m.__setitem__("dataset_hash", 5)), ("field 'dataset_hash'",)),
    "split-list": ("run", _json_edit("manifest.json", lambda m: m.__setitem__("split", ["x"])), ("field 'split'",)),
    "id-not-in-split": ("run", _lines("trajectories.jsonl", lambda rs: _set_id(rs, 999999)), ("episode 999999 is not in split",)),
    "id-text-not-in-split": ("run", _lines("trajectories.jsonl", lambda rs: _set_id(rs, "ghost")), ("'ghost' is not in split",)),
    "id-of-other-shard": ("run", _swap_across, ("belongs to shard 1/2, not 0/2",)),
    "trajectories-fifo": ("run", _replace("trajectories.jsonl", os.mkfifo), ("trajectories.jsonl", "not a regular file")),
    "trajectories-directory": ("run", _replace("trajectories.jsonl", Path.mkdir), ("trajectories.jsonl", "directory")),
    "trajectories-garbage": ("run", lambda f: (f / "trajectories.jsonl").write_bytes(b"[1]\n{}\n"), ("trajectories.jsonl",)),
    "eval-dataset-text": ("eval", _json_edit("manifest.json", lambda m: m.__setitem__("dataset", "x")), ("field 'dataset.path'",)),
    "eval-predictions-missing": ("eval", _json_edit("manifest.json", lambda m: m.pop("predictions")), ("field 'predictions.sha256'",)),
    "eval-run-number": ("eval", _json_edit("manifest.json", lambda m: m.__setitem__("run", 5)), ("field 'run'",)),
    "eval-seed-text": ("eval", _json_edit("manifest.json", lambda m: m.__setitem__("seed", "0")), ("field 'seed'",)),
    "eval-options-list": ("eval", _json_edit("manifest.json", lambda m: m.__setitem__("metric_options", [1])), ("field 'metric_options'",)),
    "eval-options-unknown": ("eval", _both(_json_edit("manifest.json", lambda m: m["metric_options"].__setitem__("bogus", 1))), ("field 'metric_options'",)),
    "eval-counts-missing": ("eval", _json_edit("metrics.json", lambda m: m.pop("counts")), ("metrics.json", "counts.episodes")),
    "eval-counts-text": ("eval", _json_edit("metrics.json", lambda m: m["counts"].__setitem__("episodes", "3")), ("counts.episodes",)),
    "eval-metrics-list": ("eval", _json_edit("metrics.json", lambda m: [m], replace=True), ("metrics.json", "JSON object")),
    "eval-gt-file-number": ("eval", _both(_json_edit("metrics.json", lambda m: m["fidelity"].__setitem__("gt_file", 5))), ("fidelity.gt_file",)),
    "eval-line-invalid": ("eval", lambda f: (f / "episodes.jsonl").write_bytes(b'{"episode_id": 1,\n'), ("episodes.jsonl", "line 1", "not valid JSON")),
    "eval-line-list": ("eval", _lines("episodes.jsonl", lambda rs: b"[1, 2]\n"), ("episodes.jsonl", "line 1", "episode_id")),
    "eval-record-nested": ("eval", _lines("episodes.jsonl", lambda rs: rs[0].__setitem__("success", [1])), ("field 'success'",)),
    "eval-record-text-metric": ("eval", _lines("episodes.jsonl", lambda rs: rs[0].__setitem__("spl", "high")), ("field 'spl'",)),
    "eval-episodes-fifo": ("eval", _replace("episodes.jsonl", os.mkfifo), ("episodes.jsonl", "not a regular file")),
    "eval-id-not-in-split": ("eval", _lines("episodes.jsonl", lambda rs: _set_id(rs, 999999)), ("episode 999999 is not in split",)),
    "eval-split-file-changed": ("eval", _both(_json_edit("manifest.json", lambda m: m["dataset"].__setitem__("sha256", "0" * 64))), ("cannot check", "split file has changed")),
    "run-dataset-moved": ("run", _both(_json_edit("manifest.json", lambda m: m.__setitem__("dataset", "/nowhere/ds"))), ("cannot check", "/nowhere/ds")),
}  # fmt: skip
"""Corrupt shard folders for ``merge``: one line, exit 2, nothing written."""


def merge_cases() -> list[Case]:
    cases = []
    for name, (kind, corrupt, needles) in MERGE_CASES.items():

        def prepare(
            ctx: Ctx, kind: str = kind, corrupt: Callable[[Path], None] = corrupt
        ) -> list[str]:
            folders = []
            for i in range(2):
                folder = ctx.tmp / f"s{i}"
                shutil.copytree(ctx.base.shards / f"{kind}{i}", folder)
                folders.append(str(folder))
            corrupt(ctx.tmp / "s1")
            return ["merge", *folders, "--out", str(ctx.tmp / "m")]

        cases.append(Case(f"merge-{name}", "merges", prepare, needles, outputs=("m",)))

    def mixed(ctx: Ctx) -> list[str]:
        return ["merge", str(ctx.base.shards / "run0"), str(ctx.base.shards / "eval1"), "--out",
                str(ctx.tmp / "m")]  # fmt: skip

    cases.append(Case("merge-run-and-eval", "merges", mixed, ("mix runs and evaluations",),
                      outputs=("m",)))  # fmt: skip
    cases.append(Case("merge-control", "control", lambda ctx: ["merge", str(ctx.base.shards / "run0"),
                      str(ctx.base.shards / "run1"), "--out", str(ctx.tmp / "m")], code=0))  # fmt: skip
    return cases


# --- one house in two places -----------------------------------------------------------------------


def _disguised(path: Path) -> bytes:
    """The house of scene file ``path`` under new scene, room, object and door ids, its rooms
    reversed and the file re-indented with its keys in another order."""
    doc = json.loads(path.read_text())
    scene = doc["scene"]
    rooms = {room["id"]: f"other-{k}" for k, room in enumerate(scene["rooms"])}
    scene["id"], scene["rooms"] = "elsewhere/house", scene["rooms"][::-1]
    for k, room in enumerate(scene["rooms"]):
        room["id"] = rooms[room["id"]]
        for j, obj in enumerate(room["objects"]):
            obj["id"], obj["parent_id"] = f"thing-{k}-{j}", None
    for door in scene["doors"]:
        door["room_ids"] = [rooms[r] for r in door["room_ids"]]
    return json.dumps(doc, indent=1, sort_keys=True).encode()


def _house_in(ctx: Ctx, source: str, target: str, how: str) -> Path:
    """The one-per-split dataset with ``target``'s episode pointed at ``source``'s house."""
    from condvln.vlnce import split_path

    ds = ctx.dataset("each")

    def labels(split: str) -> tuple[Path, dict, dict]:
        path = split_path(ds, split, "_answers" if split == "test" else "")
        doc = read_gz(path)
        return (
            path,
            doc,
            (next(iter(doc.values())) if split == "test" else doc["episodes"][0])["info"],
        )

    scene_id = read_gz(split_path(ds, source))["episodes"][0]["scene_id"]
    scene_file = original = labels(source)[2]["condvln"]["scene_file"]
    if how != "same-scene":
        scene_id = scene_file = f"scenes/{how}.json"
        data = (ds / original).read_bytes() if how == "byte-copy" else _disguised(ds / original)
        (ds / scene_file).write_bytes(data)
    doc = read_gz(split_path(ds, target))
    doc["episodes"][0]["scene_id"] = scene_id
    write_gz(split_path(ds, target), doc)
    path, doc, info = labels(target)
    info["condvln"]["scene_file"] = scene_file
    write_gz(path, doc)
    return ds


def _inputs(ctx: Ctx, *files: tuple[str, bytes]) -> list[str]:
    folder = ctx.tmp / "in"
    folder.mkdir()
    for name, data in files:
        (folder / name).write_bytes(data)
    return ["generate", "--source", "condvln", "--input", str(folder), "--per-scene", "5",
            "--out", str(ctx.tmp / "g"), "-j", "1", "-q"]  # fmt: skip


def _other_house() -> bytes:
    from condvln.scene.serialize import scene_to_json
    from condvln.scene.sources import load

    return scene_to_json(load("procedural", "7"))


def _same_id(ctx: Ctx) -> list[str]:
    other = json.loads(_other_house())
    other["scene"]["id"] = json.loads(ctx.base.scene.read_text())["scene"]["id"]
    return _inputs(
        ctx, ("a.json", ctx.base.scene.read_bytes()), ("b.json", json.dumps(other).encode())
    )


def _generated_once(ctx: Ctx) -> None:
    stats = json.loads((ctx.tmp / "g" / "stats.json").read_text())
    assert stats["scenes"] == 2, stats["scenes"]


def duplicate_scene_cases() -> list[Case]:
    import itertools

    from condvln.dataset.validate import SHARING_ALLOWED
    from condvln.vlnce import SPLITS

    cases = []
    for source, target in itertools.permutations(SPLITS, 2):
        if {source, target} in SHARING_ALLOWED or SPLITS.index(source) > SPLITS.index(target):
            continue
        for how in ("same-scene", "byte-copy", "disguised"):

            def prepare(
                ctx: Ctx, source: str = source, target: str = target, how: str = how
            ) -> list[str]:
                return ["validate", str(_house_in(ctx, source, target, how)), "-q", "--show", "100"]

            cases.append(Case(f"validate-house-{source}-{target}-{how}", "duplicate scenes", prepare,
                              (f"splits {source} and {target} share 1 house(s)",), code=1))  # fmt: skip
    scene = lambda ctx: ctx.base.scene.read_bytes()  # noqa: E731
    for name, files, needles, code in (
        ("disguised", lambda c: [("a.json", scene(c)), ("b.json", _disguised(c.base.scene)), ("c.json", _other_house())], ("same content as",), 0),
        ("byte-copy", lambda c: [("a.json", scene(c)), ("b.json", scene(c)), ("c.json", _other_house())], ("same content as",), 0),
    ):  # fmt: skip
        cases.append(Case(f"generate-dup-{name}", "duplicate scenes",
                          lambda ctx, files=files: _inputs(ctx, *files(ctx)), needles, code=code,
                          after=_generated_once))  # fmt: skip
    cases.append(Case("generate-dup-one-id-two-houses", "duplicate scenes", _same_id,
                      ("both give scene",), outputs=("g",)))  # fmt: skip
    return cases


# --- inputs that used to end in "internal error" ---------------------------------------------------


def _gibson(obj: Any) -> Callable[[Ctx], list[str]]:
    def prepare(ctx: Ctx) -> list[str]:
        import numpy as np

        array = np.empty((), dtype=object)
        array[()] = obj
        buffer = io.BytesIO()
        np.savez(buffer, output=array)
        path = ctx.tmp / "3DSceneGraph_X.npz"
        path.write_bytes(buffer.getvalue())
        return [
            "scenes",
            "export",
            str(path),
            "--source",
            "gibson",
            "--out",
            str(ctx.tmp / "o.json"),
        ]

    return prepare


def _chair(**fields: Any) -> dict:
    return {"object": {1: {"class_": "chair", "location": [1, 0, 0], "size": [1, 1, 1]} | fields}}


def _looped(ctx: Ctx) -> Path:
    """The one-episode dataset whose scene file is a symbolic link loop."""
    ds = ctx.dataset()
    scene = ds / ctx.base.scene.relative_to(ctx.base.vu)
    scene.unlink()
    scene.symlink_to(scene.parent / "loop")
    (scene.parent / "loop").symlink_to(scene)
    return ds


def _positions(record: dict) -> Callable[[Ctx], list[str]]:
    name = "p.jsonl" if "episode_id" in record else "p.json"
    return lambda ctx: _evaluate_file(ctx, name, orjson.dumps(record) + b"\n")


SEED_5000 = "9" * 5000
CRASH_CASES: list[tuple[str, Callable[[Ctx], list[str]], tuple[str, ...], int, tuple[str, ...]]] = [
    # (name, prepare, needles, exit code, outputs)
    ("export-seed-5000-digits", lambda c: ["scenes", "export", SEED_5000, "--out", str(c.tmp / "o.json")], ("below 2**63",), 2, ("o.json",)),
    ("render-seed-5000-digits", lambda c: ["scenes", "render", SEED_5000, "--out", str(c.tmp / "o.png")], ("below 2**63",), 2, ("o.png",)),
    ("graph-seed-5000-digits", lambda c: ["graph", SEED_5000, "--out", str(c.tmp / "o.json")], ("below 2**63",), 2, ("o.json",)),
    ("show-seed-20-digits", lambda c: ["scenes", "show", "9" * 20], ("below 2**63",), 2, ()),
    ("generate-input-seed-5000-digits", lambda c: ["generate", "--input", SEED_5000, "--out", str(c.tmp / "g"), "-q"], ("File name too long",), 2, ("g",)),
    ("generate-input-seed-20-digits", lambda c: ["generate", "--input", "9" * 20, "--out", str(c.tmp / "g"), "-q"], ("below 2**63",), 2, ("g",)),
    ("gibson-location-400-digits", _gibson(_chair(location=[10**400, 0, 0])), ("field 'location'",), 2, ("o.json",)),
    ("gibson-location-5000-digits", _gibson(_chair(location=[10**5000, 0, 0])), ("field 'location'", "too large to print"), 2, ("o.json",)),
    ("gibson-size-400-digits", _gibson(_chair(size=[1, 10**400, 1])), ("field 'size'",), 2, ("o.json",)),
    ("gibson-class-5000-digits", _gibson(_chair(class_=10**5000)), ("field 'class_'",), 2, ("o.json",)),
    ("gibson-id-5000-digits", _gibson({"object": {10**5000: _chair()["object"][1]}}), ("fit in 64 bits",), 2, ("o.json",)),
    ("validate-scene-symlink-loop", lambda c: ["validate", str(_looped(c)), "-q"], ("symbolic link loop",), 1, ()),
    ("run-scene-symlink-loop", lambda c: ["run", "--agent", "random", "--dataset", str(_looped(c)), "--split", "val_unseen", "--out", str(c.tmp / "run"), "-q"], ("symbolic link loop",), 2, ("run",)),
    ("evaluate-scene-symlink-loop", lambda c: ["evaluate", str(_looped(c)), str(_predictions_for(c, c.tmp / "ds", "val_unseen")), "--out", str(c.tmp / "eval"), "--split", "val_unseen"], ("symbolic link loop",), 2, ("eval",)),
    ("oracle-scene-symlink-loop", lambda c: ["oracle", str(_looped(c)), str(c.tmp / "oracle")], ("symbolic link loop",), 2, ("oracle",)),
    ("evaluate-text-positions", _positions({"episode_id": 1, "positions": [["1", "2", "3"]], "headings": [0.0], "actions": [], "stop": True}), ("field 'positions'",), 2, ("eval",)),
    ("evaluate-bool-positions", _positions({"episode_id": 1, "positions": [[True, 0, 0]], "headings": [0.0], "actions": [], "stop": True}), ("field 'positions'",), 2, ("eval",)),
    ("evaluate-text-headings", _positions({"episode_id": 1, "positions": [[0, 0, 0]], "headings": ["0"], "actions": [], "stop": True}), ("field 'headings'",), 2, ("eval",)),
    ("evaluate-leaderboard-text-position", _positions({"1": [{"position": ["0", "0", "0"], "heading": 0, "stop": True}]}), ("field 'position'",), 2, ("eval",)),
]  # fmt: skip
"""Each used to end in "internal error" (exit 1) or be accepted though wrong."""


def crash_cases() -> list[Case]:
    return [
        Case(name, "masked crashes", prepare, needles, code=code, outputs=outputs)
        for name, prepare, needles, code, outputs in CRASH_CASES
    ]


def control_cases() -> list[Case]:
    """The unmodified inputs succeed: the corpus's failures come from the hostile parts."""

    def ok(command: str, which: str, split: str) -> Callable[[Ctx], list[str]]:
        build = lambda ctx: ctx.dataset(which)  # noqa: E731
        return _reader_commands(build, split)[command][0]

    return [
        Case(f"control-{c}-{w}", "control", ok(c, w, s), code=0)
        for c in ("validate", "run", "evaluate", "oracle")
        for w, s in (("vu", "val_unseen"), ("test", "test"))
    ]


def all_cases() -> list[Case]:
    """Every case of the corpus, in a fixed order."""
    return (
        control_cases()
        + record_cases()
        + split_file_cases()
        + scene_file_cases()
        + prediction_cases()
        + source_cases()
        + output_cases()
        + option_cases()
        + resume_cases()
        + report_cases()
        + agent_cases()
        + report_injection_cases()
        + hostile_server_cases()
        + config_cases()
        + merge_cases()
        + duplicate_scene_cases()
        + crash_cases()
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "case" in metafunc.fixturenames:
        cases = all_cases()
        metafunc.parametrize("case", cases, ids=[c.id for c in cases])
    if "sample_case" in metafunc.fixturenames:
        cases = sample_cases()
        metafunc.parametrize("sample_case", cases, ids=[c.id for c in cases])


def sample_cases() -> list[Case]:
    """Every 25th non-control case: also run as a real subprocess under a memory cap."""
    return [c for c in all_cases() if c.category != "control"][::25]


def release_holders(tmp: Path) -> None:
    """Stop a lock-holding child a case forked (see :func:`output_cases`) and the fake agent
    servers a case started (see :func:`hostile_server_cases`)."""
    for server in _SERVERS.pop(str(tmp), []):
        server.shutdown()
        server.server_close()
    holder = tmp / ".holder"
    if holder.exists():
        pid = int(holder.read_text())
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        holder.unlink()


@pytest.fixture(scope="session")
def corpus() -> Any:
    """This module: the case builders and :func:`invoke`, for the test files."""
    return sys.modules[__name__]


@pytest.fixture
def ctx(base: Base, tmp_path: Path) -> Iterator[Ctx]:
    context = Ctx(base, tmp_path)
    yield context
    release_holders(tmp_path)
