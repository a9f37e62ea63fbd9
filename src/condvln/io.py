"""Reading and writing files safely: one-line errors on bad input, atomic writes.

>>> import tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> atomic_write_bytes(d / "a.json", b'{"x": 1}')
>>> read_json(d / "a.json")
{'x': 1}
>>> (d / "bad.json").write_text('{"x": ')
6
>>> read_json(d / "bad.json")
Traceback (most recent call last):
...
condvln.errors.FormatError: .../bad.json: not valid JSON (unexpected end of data at line 1, column 7)
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson

from condvln.errors import FormatError


def read_bytes(path: str | os.PathLike[str], error: type[FormatError] = FormatError) -> bytes:
    """Read a whole file, turning OS problems into one-line :class:`FormatError` messages."""
    p = Path(path)
    if p.is_dir():
        raise error("is a directory, expected a file", file=str(p))
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise error("no such file", file=str(p)) from None
    except OSError as exc:
        raise error(f"cannot read ({exc.strerror})", file=str(p)) from None
    if p.suffix == ".gz":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as exc:
            raise error(f"not a valid gzip file ({exc})", file=str(p)) from None
    if not data.strip():
        raise error("file is empty", file=str(p))
    return data


def read_json(path: str | os.PathLike[str], error: type[FormatError] = FormatError) -> Any:
    """Parse a JSON (or ``.json.gz``) file; malformed content raises ``error`` naming the file.

    Non-standard ``NaN`` / ``Infinity`` literals are parsed (as Python's ``json`` writes them), so
    that the caller's validation can report the record and field that hold them.
    """
    data = read_bytes(path, error)
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        try:  # NaN / Infinity literals: parse them so validation can name the record and field
            return json.loads(data)
        except ValueError:
            pass
        reason = str(exc).split(":")[0]
        raise error(
            f"not valid JSON ({reason.lower()} at line {exc.lineno}, column {exc.colno})",
            file=str(path),
        ) from None


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename: never half-written."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=f".{p.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, p)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    """The process umask (read without changing it for good)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


def make_private_dir_public(path: str | os.PathLike[str]) -> None:
    """Give a ``tempfile.mkdtemp`` folder the permissions a plain ``mkdir`` would have."""
    os.chmod(path, 0o777 & ~_umask())


@contextmanager
def atomic_directory(out: str | os.PathLike[str], *, replace: bool) -> Iterator[Path]:
    """Build a folder in a temporary sibling and rename it to ``out`` when the block succeeds.

    On any error the temporary folder is removed and ``out`` is left as it was; with
    ``replace`` an existing ``out`` is swapped for the new one.
    """
    target = Path(out)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    make_private_dir_public(tmp)
    try:
        yield tmp
        if target.exists() and replace:
            shutil.rmtree(target)
        tmp.rename(target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def dumps_json(obj: Any, *, indent: bool = False) -> bytes:
    """Deterministic JSON bytes (sorted keys; floats in shortest round-trip form)."""
    option = orjson.OPT_SORT_KEYS | orjson.OPT_SERIALIZE_NUMPY
    if indent:
        option |= orjson.OPT_INDENT_2
    return orjson.dumps(obj, option=option)
