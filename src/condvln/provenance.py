"""Provenance of a result: the command line, package versions and the git commit, and content
hashes of what made it (:func:`json_digest`, :func:`source_digests`).

Every run, evaluation and benchmark manifest carries :func:`provenance`, so a number can be
traced to the exact code and environment that produced it. Dataset files do not: they must stay
byte-identical whatever the command line (e.g. the worker count). A run manifest also carries
the agent's content hash (its source files, its server's ``/info``, its arguments and the
protocol), so a resume can tell that the agent changed.

>>> json_digest({"b": [1, 2], "a": None}) == json_digest({"a": None, "b": [1, 2]})
True

>>> info = provenance()
>>> sorted(info)
['command_line', 'git', 'versions']
>>> sorted(info["versions"])
['condvln', 'numba', 'numpy', 'python', 'scipy']
"""

from __future__ import annotations

import hashlib
import platform
import shlex
import subprocess
import sys
from collections.abc import Iterable, Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

import orjson

from condvln import __version__

LIBRARIES = ("numpy", "numba", "scipy")
"""Libraries whose versions change numbers (kernels, intervals, distance routines)."""


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def git_state(folder: Path | None = None) -> dict[str, Any] | None:
    """``{"commit", "dirty"}`` of the checkout that tracks ``folder`` (default: this package's
    source folder), or ``None`` when git does not track it (an installed wheel) or is missing.
    ``dirty`` says whether tracked files differ from the commit."""
    folder = folder or Path(__file__).resolve().parent

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", "-C", str(folder), *args],
                capture_output=True,
                text=True,
                timeout=10,
                check=False,
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    if git("ls-files", "--error-unmatch", "__init__.py") is None:
        return None  # not tracked here: e.g. installed into a .venv inside some checkout
    commit = git("rev-parse", "HEAD")
    if not commit:
        return None
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit, "dirty": bool(status) if status is not None else None}


def command_line(argv: list[str] | None = None) -> str:
    """The command as a shell line: ``condvln …`` for the command-line tool, else ``argv``."""
    argv = list(sys.argv if argv is None else argv)
    if argv and (Path(argv[0]).name in ("condvln", "__main__.py")):
        argv[0] = "condvln"
    return shlex.join(argv)


def provenance() -> dict[str, Any]:
    """The command line, the versions of condvln, Python, numpy, numba, scipy, and the git
    commit (with a dirty flag) when running from a checkout."""
    versions = {"condvln": __version__, "python": platform.python_version()}
    versions |= {name: _version(name) for name in LIBRARIES}
    return {"command_line": command_line(), "versions": versions, "git": git_state()}


def json_digest(value: Any) -> str:
    """``sha256:…`` of ``value`` as canonical JSON (sorted keys), e.g. an agent's arguments."""
    data = orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_SERIALIZE_NUMPY)
    return "sha256:" + hashlib.sha256(data).hexdigest()


def source_digests(files: Mapping[str, Path] | Iterable[tuple[str, Path]]) -> dict[str, str]:
    """``{name: "sha256:…"}`` of source files by the names they are shown under (a module name
    or the path as given); a file that cannot be read is ``"unreadable"``."""
    items = files.items() if isinstance(files, Mapping) else files
    out = {}
    for name, path in sorted(items):
        try:
            out[name] = "sha256:" + hashlib.sha256(Path(path).read_bytes()).hexdigest()
        except OSError:
            out[name] = "unreadable"
    return out
