"""Read agent predictions: the VLN-CE leaderboard JSON and CondVLN's own JSONL.

Two formats (DESIGN §3), both turned into ``{episode_id: Trajectory}``:

* **VLN-CE leaderboard JSON** (``*.json``): ``{"<episode_id>": [{"position": [x, y, z],
  "heading": h, "stop": bool}, ...]}`` — the poses from the start pose on; the agent called STOP
  when the last pose's ``stop`` is true. No actions are logged.
* **CondVLN JSONL** (``*.jsonl``): one episode per line, ``{"episode_id": 17, "positions":
  [[x, y, z], ...], "headings": [h, ...], "actions": [1, 2, ..., 0], "stop": true}`` with
  ``len(positions) == len(headings) == len(actions) + 1`` (start pose first; VLN-CE action ids
  0 STOP, 1 FORWARD, 2 LEFT, 3 RIGHT). ``actions`` may be omitted; ``status`` (``"ok"`` or an
  agent failure of :data:`AGENT_FAILURES`, written by ``condvln run``) and ``agent_notes`` (an
  object an agent recorded, e.g. the ``llm`` agent's token usage and branch decisions) are kept;
  other keys are ignored.

The format follows the extension (``.jsonl`` / ``.json``, optionally ``.gz``); any other name is
read as JSONL unless the whole file parses as one JSON object without ``"positions"``. Episode
ids must be integers (leaderboard keys: strings of integers). Every problem — bad JSON, a
missing or ill-typed field, a non-finite number, an empty trajectory, a duplicate id — raises
one :class:`~condvln.errors.FormatError` naming the file, the line or episode, and the field.

>>> import tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp()) / "run.jsonl"
>>> _ = p.write_text('{"episode_id": 3, "positions": [[0, 0, 0], [0, 0, 0.25]], '
...                  '"headings": [0, 0], "actions": [1], "stop": false}\\n')
>>> t = read_predictions(p)[3]
>>> t.positions.shape, t.actions.tolist(), t.stop
((2, 3), [1], False)
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np
import orjson
from numpy.typing import NDArray

from condvln.errors import FormatError
from condvln.io import parse_json, read_bytes

N_ACTIONS = 4
"""VLN-CE action ids are ``0 .. N_ACTIONS - 1`` (STOP, FORWARD, LEFT, RIGHT)."""

AGENT_FAILURES = ("agent_error", "invalid_action", "timeout")
"""Statuses of episodes the agent failed (``condvln.agents.run.FAILURES``)."""


@dataclass(frozen=True)
class Trajectory:
    """One episode's prediction.

    Attributes:
        positions: ``(N, 3)`` recorded positions, the start pose first (N ≥ 1).
        headings: ``(N,)`` headings (radians) of the same poses.
        actions: ``(N - 1,)`` action ids, or ``None`` when the format does not log them.
        stop: whether the agent called STOP.
        status: ``"ok"`` or an agent failure (JSONL ``status``; ``None`` when not recorded).
        notes: The record's ``agent_notes`` object (``None`` when not recorded).
    """

    positions: NDArray[np.float64]
    headings: NDArray[np.float64]
    actions: NDArray[np.int64] | None
    stop: bool
    status: str | None = None
    notes: dict[str, Any] | None = None


Predictions = dict[int, Trajectory]


def _fail(message: str, file: Path, record: str, field: str | None = None) -> FormatError:
    return FormatError(message, file=str(file), record=record, field=field)


def _numbers(value: Any, depth: int) -> bool:
    """Whether ``value`` is ``depth`` levels of lists of JSON numbers (text and true / false,
    which numpy would turn into numbers, are not), checked a level at a time without a call
    per number (positions are N x 3)."""
    level = [value]
    for _ in range(depth):
        if not set(map(type, level)) <= {list}:
            return False
        level = list(chain.from_iterable(level))
    return set(map(type, level)) <= {int, float}


def _floats(value: Any, shape: tuple[int | None, ...], where: tuple[Path, str, str]) -> NDArray:
    """``value`` as a finite float array of ``shape`` (``None`` = any length ≥ 1)."""
    if not _numbers(value, len(shape)):
        raise _fail("must be an array of numbers", *where)
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        raise _fail("must be an array of numbers", *where) from None
    ok = arr.ndim == len(shape) and all(
        s in (None, n) for s, n in zip(shape, arr.shape, strict=True)
    )
    if not ok or arr.size == 0:
        want = "x".join("N" if s is None else str(s) for s in shape)
        raise _fail(f"must be a non-empty {want} array of numbers", *where)
    if not np.all(np.isfinite(arr)):
        raise _fail("must be finite", *where)
    return arr


def _episode_id(value: Any, file: Path, record: str) -> int:
    """An integer episode id (an ``int``, or a string of one)."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise _fail("must be an integer", file, record, "episode_id")
    try:
        return int(value)
    except ValueError:
        raise _fail(f"must be an integer, got {value!r}", file, record, "episode_id") from None


def _stop(value: Any, file: Path, record: str, field: str = "stop") -> bool:
    if not isinstance(value, bool):
        raise _fail("must be true or false", file, record, field)
    return value


def _actions(value: Any, n_positions: int, file: Path, record: str) -> NDArray[np.int64]:
    """Action ids: integers in ``0 .. 3``, one fewer than positions."""
    ok = isinstance(value, list) and set(map(type, value)) <= {int}  # true / false are not
    if not ok:
        raise _fail("must be a list of integers", file, record, "actions")
    arr = np.asarray(value, dtype=np.int64)
    if np.any((arr < 0) | (arr >= N_ACTIONS)):
        raise _fail(f"action ids must be in 0..{N_ACTIONS - 1}", file, record, "actions")
    if len(arr) != n_positions - 1:
        message = f"must have len(positions) - 1 = {n_positions - 1} entries, got {len(arr)}"
        raise _fail(message, file, record, "actions")
    return arr


def _jsonl_record(doc: Any, file: Path, record: str) -> tuple[int, Trajectory]:
    """One JSONL line → ``(episode_id, Trajectory)``."""
    if not isinstance(doc, dict):
        raise _fail("must be a JSON object", file, record)
    for key in ("episode_id", "positions", "headings", "stop"):
        if key not in doc:
            raise _fail("missing", file, record, key)
    episode = _episode_id(doc["episode_id"], file, record)
    positions = _floats(doc["positions"], (None, 3), (file, record, "positions"))
    headings = _floats(doc["headings"], (len(positions),), (file, record, "headings"))
    actions = doc.get("actions")
    if actions is not None:
        actions = _actions(actions, len(positions), file, record)
    status = doc.get("status")
    if status is not None and status not in ("ok", *AGENT_FAILURES):
        known = ", ".join(("ok", *AGENT_FAILURES))
        raise _fail(f"must be one of {known}, got {status!r}", file, record, "status")
    stop = _stop(doc["stop"], file, record)
    notes = doc.get("agent_notes")
    if notes is not None and not isinstance(notes, dict):
        raise _fail("must be an object", file, record, "agent_notes")
    return episode, Trajectory(positions, headings, actions, stop, status, notes)


def _lines(data: bytes) -> Iterator[tuple[int, bytes]]:
    """Non-blank lines with their 1-based numbers."""
    for number, line in enumerate(data.splitlines(), start=1):
        if line.strip():
            yield number, line


def _parse(text: bytes, file: Path, record: str | None = None) -> Any:
    """JSON through the input layer (NaN / Infinity accepted, so validation names the field)."""
    return parse_json(text, str(file), record)


def _jsonl(data: bytes, file: Path) -> Predictions:
    out: Predictions = {}
    for number, line in _lines(data):
        record = f"line {number}"
        episode, trajectory = _jsonl_record(_parse(line, file, record), file, record)
        if episode in out:
            raise _fail(f"duplicate episode id {episode}", file, record, "episode_id")
        out[episode] = trajectory
    return out


def _leaderboard_episode(poses: Any, file: Path, record: str) -> Trajectory:
    """The pose list of one leaderboard episode → :class:`Trajectory` (no actions)."""
    if not isinstance(poses, list) or not poses:
        raise _fail("must be a non-empty list of poses", file, record)
    for index, pose in enumerate(poses):
        if not isinstance(pose, dict):
            raise _fail("must be an object", file, f"{record}, pose {index}")
        for key in ("position", "heading", "stop"):
            if key not in pose:
                raise _fail("missing", file, f"{record}, pose {index}", key)
    where = (file, record, "position")
    positions = _floats([pose["position"] for pose in poses], (None, 3), where)
    headings = _floats(
        [pose["heading"] for pose in poses], (len(poses),), (file, record, "heading")
    )
    stops = [_stop(pose["stop"], file, f"{record}, pose {i}") for i, pose in enumerate(poses)]
    return Trajectory(positions, headings, None, stops[-1])


def _leaderboard(doc: Any, file: Path) -> Predictions:
    if not isinstance(doc, dict):
        raise FormatError("must be an object {episode_id: [poses]}", file=str(file))
    out: Predictions = {}
    for key, poses in doc.items():
        record = f"episode {key}"
        episode = _episode_id(key, file, record)
        if episode in out:
            raise _fail(f"duplicate episode id {episode}", file, record, "episode_id")
        out[episode] = _leaderboard_episode(poses, file, record)
    return out


def _format_of(file: Path, data: bytes) -> str:
    """``"jsonl"`` or ``"leaderboard"``: by extension, else by content."""
    name = file.name.removesuffix(".gz")
    if name.endswith(".jsonl"):
        return "jsonl"
    if name.endswith(".json"):
        return "leaderboard"
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError:
        return "jsonl"
    return "leaderboard" if isinstance(doc, dict) and "positions" not in doc else "jsonl"


def read_predictions(path: str | os.PathLike[str]) -> Predictions:
    """Read predictions in either format (detected as the module docstring says).

    Args:
        path: the predictions file.

    Returns:
        ``{episode_id: Trajectory}``.

    Raises:
        FormatError: unreadable or malformed file (one line: file, line / episode, field).
    """
    file = Path(path)
    data = read_bytes(file)
    if _format_of(file, data) == "jsonl":
        return _jsonl(data, file)
    return _leaderboard(_parse(data, file), file)


def read_jsonl(path: str | os.PathLike[str]) -> Predictions:
    """Read CondVLN JSONL predictions whatever the file name."""
    return _jsonl(read_bytes(path), Path(path))


def read_leaderboard(path: str | os.PathLike[str]) -> Predictions:
    """Read VLN-CE leaderboard JSON predictions whatever the file name."""
    return _leaderboard(_parse(read_bytes(path), Path(path)), Path(path))
