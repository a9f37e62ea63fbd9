"""The run folder as a resume store: what a run has finished, and whether it may go on.

Each finished episode is appended to ``trajectories.jsonl`` as one flushed line the moment it
ends, so an interrupted run — or one whose worker process died — resumes where it stopped: the
episodes that ended without an agent failure are skipped, failed ones are re-run. A resume must
share the interrupted run's settings and agent (:data:`MANIFEST_KEYS`: the spec, its arguments,
the hashes of its source files or its server's ``/info``, the protocol, the dataset, split, seed
and shard); otherwise it stops with one line naming what changed. ``restart`` moves the old run
aside (:func:`set_aside`) and starts over. The ``INCOMPLETE`` marker stays in the folder until
the run finishes.
"""

from __future__ import annotations

import reprlib
import shutil
from pathlib import Path
from typing import Any

import orjson

from condvln.errors import ConfigError, FormatError
from condvln.io import atomic_write_bytes, check_regular_file, dumps_json, read_json

TRAJECTORIES = "trajectories.jsonl"
PREDICTIONS = "predictions.json"
MANIFEST = "manifest.json"
INCOMPLETE = "INCOMPLETE"
"""Marker file of a run folder whose run has not finished (removed when it does)."""

INCOMPLETE_TEXT = b"This run has not finished. Rerun the same `condvln run` command to resume it.\n"

MANIFEST_KEYS = {
    "agent": "the agent spec",
    "agent_code": "the agent's source code",
    "agent_server": "the agent server's /info",
    "agent_args": "the agent arguments",
    "protocol": "the observation protocol",
    "dataset_hash": "the dataset split's files",
    "split": "the split",
    "seed": "the seed",
    "shard": "the shard",
}
"""Manifest fields a resumed run must share with the interrupted one, and how a refusal names
them."""

RECENT_KEYS = ("agent_code",)
"""Fields that runs before they existed did not record: not compared when the old manifest
lacks them."""

_RECORD_KEYS = ("episode_id", "positions", "headings", "stop")


def read_trajectories(path: Path) -> list[dict[str, Any]]:
    """Records of a trajectories file; only a torn **last** line (interrupted write) is cut off.

    Raises:
        FormatError: a malformed line before the last one (nothing is truncated then), or a
            path that is not a regular file.
    """
    if not path.exists() and not path.is_symlink():
        return []
    check_regular_file(path)
    data = path.read_bytes()
    lines = data.splitlines(keepends=True)
    records, good = [], 0
    for number, line in enumerate(lines, start=1):
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            record = None
        ok = isinstance(record, dict) and all(k in record for k in _RECORD_KEYS)
        if ok and not isinstance(record["episode_id"], int | str):
            ok = False
        if not ok or not line.endswith(b"\n"):
            if number == len(lines):
                break
            raise FormatError(
                "not a trajectory record (a JSON object with episode_id, positions, headings, "
                "stop); fix or remove the line, or start over in a new folder",
                file=str(path),
                record=f"line {number}",
            )
        records.append(record)
        good += len(line)
    if good < len(data):
        with path.open("r+b") as fh:
            fh.truncate(good)
    return records


def check_manifest(out_dir: Path, manifest: dict[str, Any]) -> None:
    """Refuse to resume a run whose settings or agent differ from the folder's run.

    Raises:
        ConfigError: One line naming what changed (e.g. the agent's source file).
        FormatError: An unreadable manifest.
    """
    path = out_dir / MANIFEST
    if not path.exists() and not path.is_symlink():
        return
    old = read_json(path, FormatError)
    if not isinstance(old, dict):
        raise FormatError("must be a JSON object (the run's manifest)", file=str(path))
    for key, what in MANIFEST_KEYS.items():
        if key in RECENT_KEYS and key not in old:
            continue
        before = old.get(key, {} if key == "agent_args" else None)  # older runs: {}
        if before != manifest.get(key):
            raise ConfigError(
                f"{out_dir}: cannot resume: '{key}' differs: {what} changed since the run began "
                f"({changed(before, manifest.get(key))}); rerun with --restart to start over "
                "(the old run is kept aside) or pick another --out"
            )


_UNSET = object()


def changed(before: Any, after: Any) -> str:
    """What differs between two manifest values, shortly.

    >>> changed({"a.py": "sha256:0123456789abcdef", "b.py": "sha256:22"},
    ...         {"a.py": "sha256:fedcba9876543210", "b.py": "sha256:22"})
    'a.py: sha256 0123456789ab… → fedcba987654…'
    >>> changed({"fov_deg": 90.0, "view_range": 5.0}, {"fov_deg": 60.0, "view_range": 5.0})
    'fov_deg: 90.0 → 60.0'
    >>> changed("random", "goal_only")
    "'random' → 'goal_only'"
    >>> changed({}, {"patience": 20})
    'patience: unset → 20'
    """
    if isinstance(before, dict) and isinstance(after, dict):
        diffs = [
            f"{k}: {changed(before.get(k, _UNSET), after.get(k, _UNSET))}"
            for k in sorted(set(before) | set(after), key=str)
            if before.get(k, _UNSET) != after.get(k, _UNSET)
        ]
        return "; ".join(diffs[:3]) + ("; …" if len(diffs) > 3 else "")
    digests = [v[7:19] + "…" for v in (before, after) if str(v).startswith("sha256:")]
    if len(digests) == 2:
        return f"sha256 {digests[0]} → {digests[1]}"
    return " → ".join("unset" if v is _UNSET else reprlib.repr(v) for v in (before, after))


def set_aside(out_dir: Path) -> Path:
    """Move an old run folder aside (``NAME.previous-K``, the first free K) for ``restart``."""
    k = 1
    while (aside := out_dir.with_name(f"{out_dir.name}.previous-{k}")).exists():
        k += 1
    out_dir.rename(aside)
    return aside


def finished(out_dir: Path) -> set[str]:
    """Ids of the episodes that ended without an agent failure (failed ones are re-run)."""
    latest = {str(r["episode_id"]): r for r in read_trajectories(out_dir / TRAJECTORIES)}
    return {k for k, r in latest.items() if r.get("status", "ok") == "ok"}


def open_folder(out_dir: Path, manifest: dict[str, Any], resume: bool) -> set[str]:
    """Create or reopen the run folder and mark it incomplete; returns the finished episode ids.

    A fresh folder gets the manifest at once; a resumed one keeps its own until the run
    succeeds (:func:`write_manifest`). ``resume=False`` drops the recorded episodes. Check a
    resume first (:func:`check_manifest`).
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    if not resume:
        for name in (TRAJECTORIES, PREDICTIONS):
            (out_dir / name).unlink(missing_ok=True)
    done = finished(out_dir)
    atomic_write_bytes(out_dir / INCOMPLETE, INCOMPLETE_TEXT)
    if not (out_dir / MANIFEST).is_file():
        atomic_write_bytes(out_dir / MANIFEST, dumps_json(manifest, indent=True))
    return done


def write_manifest(out_dir: Path, manifest: dict[str, Any]) -> None:
    """Write the manifest of a finished run (untouched when its bytes are the same)."""
    data = dumps_json(manifest, indent=True)
    path = out_dir / MANIFEST
    if not path.is_file() or path.read_bytes() != data:
        atomic_write_bytes(path, data)


def after_failure(out_dir: Path, fresh: bool) -> int:
    """A fresh run that recorded nothing leaves nothing; otherwise the folder stays resumable.

    Returns:
        The number of episode records kept in the folder.
    """
    trajectories = out_dir / TRAJECTORIES
    kept = trajectories.read_bytes().count(b"\n") if trajectories.is_file() else 0
    if fresh and not kept:
        shutil.rmtree(out_dir, ignore_errors=True)
    return kept
