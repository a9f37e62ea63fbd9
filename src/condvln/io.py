"""The input layer every reader goes through, and safe writing.

Reading (:func:`read_bytes`, :func:`read_json`, :func:`parse_json`, :func:`read_zip_member`):

* a path is checked with ``stat`` **before** it is opened: directories, named pipes, devices and
  sockets are refused (``/dev/zero`` or a FIFO never blocks or fills memory), and so are files
  larger than :attr:`Limits.max_file_bytes`;
* gzip files and zip members are decompressed as a stream with a byte budget
  (:attr:`Limits.max_decompressed_bytes`), so a compression bomb stops at the budget;
* JSON deeper than orjson's 1,024 levels is a clean one-line error (never ``RecursionError``);
  numbers beyond the float range are read as ``inf`` (never ``OverflowError``), so the
  record's validation names the field that holds them;
* :data:`LIMITS` holds the caps (environment overrides: ``CONDVLN_MAX_FILE_MB``,
  ``CONDVLN_MAX_DECOMPRESSED_MB``); :attr:`Limits.max_coordinate` bounds every coordinate a
  scene or episode may hold, before geometry libraries see it.

Paths read from data files go through :func:`inside`, which refuses anything that resolves out
of the folder it must stay in (``..``, absolute paths, symlinks pointing out).

Writing: :func:`atomic_write_bytes` (temp file + rename), :func:`atomic_directory` (a folder
built aside and swapped in: the old folder is never deleted before the new one is in place;
stale temporary siblings from killed runs are reclaimed) and :func:`output_lock` (one writer per
output folder; a second gets a clean "in use" error).

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
>>> read_json("/dev/zero")
Traceback (most recent call last):
...
condvln.errors.FormatError: /dev/zero: not a regular file (a device, named pipe or socket)
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import gzip
import io
import json
import math
import os
import re
import shutil
import stat
import tempfile
import zipfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from condvln.errors import ConfigError, FormatError

MIB = 1 << 20


def _env_mib(name: str, default: int) -> int:
    value = os.environ.get(name)
    if value is None:
        return default
    try:
        mib = int(value)
    except ValueError:
        raise ConfigError(f"environment variable {name} must be a whole number of MiB") from None
    if mib < 1:
        raise ConfigError(f"environment variable {name} must be at least 1")
    return mib * MIB


@dataclass
class Limits:
    """Caps on what a reader accepts (change them on :data:`LIMITS`).

    Attributes:
        max_file_bytes: Largest file read (default 1 GiB; ``CONDVLN_MAX_FILE_MB``).
        max_decompressed_bytes: Most bytes one gzip file or zip member may inflate to
            (default 2 GiB; ``CONDVLN_MAX_DECOMPRESSED_MB``).
        max_coordinate: Largest ``|value|`` (m) of a coordinate or size; no indoor scene
            spans 10 km, and larger values make geometry libraries spin or allocate without end.
    """

    max_file_bytes: int = 1024 * MIB
    max_decompressed_bytes: int = 2048 * MIB
    max_coordinate: float = 1.0e4


LIMITS = Limits()
"""The caps in force (the environment variables, when set, override the byte caps)."""


def _limits() -> Limits:
    return Limits(
        max_file_bytes=_env_mib("CONDVLN_MAX_FILE_MB", LIMITS.max_file_bytes),
        max_decompressed_bytes=_env_mib(
            "CONDVLN_MAX_DECOMPRESSED_MB", LIMITS.max_decompressed_bytes
        ),
        max_coordinate=LIMITS.max_coordinate,
    )


def _mib(n: int) -> str:
    return f"{n / MIB:.0f} MiB" if n >= MIB else f"{n} bytes"


def check_regular_file(
    path: str | os.PathLike[str],
    error: type[FormatError] = FormatError,
    max_bytes: int | None = None,
) -> os.stat_result:
    """``stat`` a path that is about to be read: a regular file within the size cap (the
    smaller of :attr:`Limits.max_file_bytes` and ``max_bytes``), or ``error``."""
    p = Path(path)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        reason = "dangling symbolic link" if p.is_symlink() else "no such file"
        raise error(reason, file=str(p)) from None
    except NotADirectoryError:
        raise error("no such file (a parent is not a folder)", file=str(p)) from None
    except OSError as exc:
        raise error(f"cannot read ({exc.strerror})", file=str(p)) from None
    if stat.S_ISDIR(st.st_mode):
        raise error("is a directory, expected a file", file=str(p))
    if not stat.S_ISREG(st.st_mode):
        raise error("not a regular file (a device, named pipe or socket)", file=str(p))
    cap = _cap(max_bytes)
    if st.st_size > cap:
        raise error(f"file is {_mib(st.st_size)}, over the {_limit(cap)}", file=str(p))
    return st


def _limit(cap: int) -> str:
    """``"<cap> limit"``, naming the environment variable when it is the general file cap."""
    general = cap == _limits().max_file_bytes
    return f"{_mib(cap)} limit" + (" (CONDVLN_MAX_FILE_MB)" if general else "")


def _cap(max_bytes: int | None) -> int:
    cap = _limits().max_file_bytes
    return cap if max_bytes is None else min(cap, max_bytes)


def _read_capped(p: Path, error: type[FormatError], max_bytes: int | None = None) -> bytes:
    check_regular_file(p, error, max_bytes)
    cap = _cap(max_bytes)
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise error(f"cannot read ({exc.strerror})", file=str(p)) from None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):  # swapped after the stat
            raise error("not a regular file (a device, named pipe or socket)", file=str(p))
        try:
            data = fh.read(cap + 1)
        except OSError as exc:
            raise error(f"cannot read ({exc.strerror})", file=str(p)) from None
    if len(data) > cap:
        raise error(f"file is over the {_limit(cap)}", file=str(p))
    return data


def gunzip_bounded(data: bytes, file: str, error: type[FormatError] = FormatError) -> bytes:
    """Decompress gzip ``data`` as a stream, stopping at the decompression budget."""
    budget = _limits().max_decompressed_bytes
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as fh:
            out = fh.read(budget + 1)
    except (OSError, EOFError, zlib.error) as exc:
        raise error(f"not a valid gzip file ({exc})", file=file) from None
    if len(out) > budget:
        raise error(
            f"decompresses to more than {_mib(budget)} (CONDVLN_MAX_DECOMPRESSED_MB)", file=file
        )
    return out


def read_bytes(
    path: str | os.PathLike[str],
    error: type[FormatError] = FormatError,
    *,
    max_bytes: int | None = None,
) -> bytes:
    """Read a whole file through the input layer (``.gz`` files are decompressed).

    ``max_bytes`` lowers the size cap for this file (a settings file is not a gigabyte).

    Raises:
        FormatError (or ``error``): missing, not a regular file, over a cap, bad gzip, empty.
    """
    p = Path(path)
    data = _read_capped(p, error, max_bytes)
    if p.suffix == ".gz":
        data = gunzip_bounded(data, str(p), error)
    if not data.strip():
        raise error("file is empty", file=str(p))
    return data


def read_zip_member(
    data: bytes, member: str, file: str, error: type[FormatError] = FormatError
) -> bytes:
    """One member of a zip archive, inflated as a stream within the decompression budget.

    Encrypted members, unknown compression methods and corrupt archives are ``error``.
    """
    budget = _limits().max_decompressed_bytes
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = archive.namelist()
            if member not in names:
                raise error(f"no {member!r} member (has {names[:10]})", file=file, field=member)
            info = archive.getinfo(member)
            if info.flag_bits & 0x1:
                raise error("member is encrypted", file=file, field=member)
            if info.file_size > budget:
                raise error(
                    f"member inflates to {_mib(info.file_size)}, over the {_mib(budget)} limit",
                    file=file,
                    field=member,
                )
            with archive.open(member) as fh:
                out = fh.read(budget + 1)
    except FormatError:
        raise
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, zlib.error) as exc:
        raise error(f"not a valid zip archive ({exc})", file=file) from None
    except (NotImplementedError, RuntimeError, ValueError) as exc:  # method, password, header
        raise error(f"unreadable zip member ({exc})", file=file, field=member) from None
    if len(out) > budget:
        raise error(f"member inflates to more than {_mib(budget)}", file=file, field=member)
    return out


_NON_STANDARD = re.compile(rb"NaN|Infinity")


def _python_int(text: str) -> int | float:
    """Integers beyond 64 bits become floats (``inf`` beyond the float range), as orjson does."""
    value = int(text)
    if abs(value) < 2**63:
        return value
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def parse_json(
    data: bytes,
    file: str,
    record: str | None = None,
    error: type[FormatError] = FormatError,
) -> Any:
    """Parse JSON ``data``; malformed content raises ``error`` naming ``file`` (and ``record``).

    Non-standard ``NaN`` / ``Infinity`` literals are parsed (as Python's ``json`` writes them), so
    that the caller's validation can report the record and field that hold them. Nesting deeper
    than 1,024 levels is refused; numbers beyond the float range become ``inf`` (so validation
    reports them as not finite, naming their field).
    """
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        text = str(exc)
        if "depth limit" in text or "recursion" in text.lower():
            raise error("JSON nested deeper than 1024 levels", file=file, record=record) from None
        if "infinity when parsed" in text or _NON_STANDARD.search(data):
            try:
                return json.loads(data, parse_int=_python_int)
            except RecursionError:
                raise error(
                    "JSON nested deeper than 1024 levels", file=file, record=record
                ) from None
            except ValueError:
                pass
        reason = text.split(":")[0].lower()
        raise error(
            f"not valid JSON ({reason} at line {exc.lineno}, column {exc.colno})",
            file=file,
            record=record,
        ) from None


def read_json(path: str | os.PathLike[str], error: type[FormatError] = FormatError) -> Any:
    """Read and parse a JSON (or ``.json.gz``) file through the input layer."""
    return parse_json(read_bytes(path, error), str(path), error=error)


def json_depth_exceeds(value: Any, limit: int) -> bool:
    """True when ``value`` nests lists / dicts deeper than ``limit`` (iterative: no recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > limit:
                return True
            children = item.values() if isinstance(item, dict) else item
            stack.extend((c, depth + 1) for c in children)
    return False


# --- paths that must stay inside a folder ---------------------------------------------------------


def resolve_path(path: Path, error: type[FormatError] = FormatError, **where: Any) -> Path:
    """``path.resolve()``, symlinks followed; a symbolic link loop is ``error`` (naming
    ``where``: ``file``, ``record``, ``field``), never Python's ``RuntimeError``."""
    try:
        return path.resolve()
    except (RuntimeError, OSError) as exc:  # Python 3.11: RuntimeError("Symlink loop from …")
        reason = "a symbolic link loop" if isinstance(exc, RuntimeError) else exc.strerror
        raise error(f"cannot resolve {str(path)[:200]!r}: {reason}", **where) from None


def inside(
    root: str | os.PathLike[str],
    relative: Any,
    *,
    file: str | None = None,
    record: str | None = None,
    field: str | None = None,
    error: type[FormatError] = FormatError,
) -> Path:
    """``root / relative`` when it resolves (symlinks followed) inside ``root``, else ``error``.

    Absolute paths, ``..`` that climbs out, NUL bytes and symlinks pointing out are refused.
    """
    where = {"file": file, "record": record, "field": field}
    if not isinstance(relative, str) or not relative or "\x00" in relative:
        raise error(f"must be a relative path string, got {relative!r}"[:200], **where)
    if os.path.isabs(relative) or relative.startswith("~"):
        raise error(f"must be relative to the dataset folder, got {relative!r}", **where)
    base = resolve_path(Path(root), error, **where)
    target = resolve_path(base / relative, error, **where)
    if not target.is_relative_to(base):
        raise error(f"leaves the dataset folder: {relative!r}", **where)
    return target


# --- writing ---------------------------------------------------------------------------------------


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


GZIP_LEVEL = 6
"""Compression level of every gzip file CondVLN writes."""


@contextmanager
def atomic_gzip_writer(path: str | os.PathLike[str]) -> Iterator[Callable[[bytes], None]]:
    """Write ``path`` gzip-compressed, chunk by chunk (``write(chunk)``), through a temporary
    file renamed into place when the block ends (removed if it raises). The file is byte for
    byte ``gzip.compress(b"".join(chunks), GZIP_LEVEL, mtime=0)``: deflate's output does not
    depend on how its input is split."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=f".{p.name}.", suffix=".tmp")
    deflate = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, 31)  # 31: gzip header, mtime 0
    try:
        with os.fdopen(fd, "wb") as fh:
            yield lambda chunk: fh.write(deflate.compress(chunk))
            fh.write(deflate.flush())
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


def output_path(out: str | os.PathLike[str], *, folder: bool = True) -> Path:
    """Check an output path before any work: its parent can be made, nothing odd is in the way.

    A symlink to an existing folder is followed (the folder it names is written); a dangling
    symlink, a file where a folder is wanted and a parent that is a file are refused.
    """
    p = Path(out)
    if p.is_symlink():
        if not p.exists():
            raise ConfigError(f"{p} is a dangling symbolic link; remove it or pick another path")
        p = p.resolve()
    if folder and p.exists() and not p.is_dir():
        raise ConfigError(f"{p} exists and is not a folder")
    if not folder and p.is_dir():
        raise ConfigError(f"{p} is a folder, expected a file path")
    for parent in p.parents:
        if parent.exists():
            if not parent.is_dir():
                raise ConfigError(f"cannot create {p}: {parent} is not a folder")
            if not os.access(parent, os.W_OK | os.X_OK):
                raise ConfigError(f"cannot create {p}: {parent} is not writable")
            break
    return p


_HELD: dict[str, tuple[int, int]] = {}
"""Locks this process holds: lock file → (fd, depth), so nested holders do not deadlock."""


@contextmanager
def output_lock(out: str | os.PathLike[str]) -> Iterator[Path]:
    """Hold the lock of output folder ``out`` (a ``.NAME.lock`` file beside it, removed after).

    Raises:
        ConfigError: another process holds it ("in use").
    """
    target = output_path(out)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot create {target.parent} ({exc.strerror})") from None
    lock = target.parent / f".{target.name}.lock"
    key = str(lock)
    if key in _HELD:
        fd, depth = _HELD[key]
        _HELD[key] = (fd, depth + 1)
        try:
            yield target
        finally:
            _HELD[key] = (fd, _HELD[key][1] - 1)
        return
    fd = _acquire(lock, target)
    _HELD[key] = (fd, 1)
    try:
        yield target
    finally:
        del _HELD[key]
        lock.unlink(missing_ok=True)
        os.close(fd)


def _acquire(lock: Path, target: Path) -> int:
    """Open and ``flock`` the lock file; retry when a releasing holder removed it meanwhile."""
    while True:
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        except OSError as exc:
            raise ConfigError(f"cannot create the lock file {lock} ({exc.strerror})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise ConfigError(
                f"{target} is in use by another condvln process (lock file {lock})"
            ) from None
        try:
            same = os.stat(lock).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
            return fd
        os.close(fd)


def _siblings(target: Path, kind: str) -> list[Path]:
    return sorted(target.parent.glob(f".{glob_escape(target.name)}.{kind}-*"))


def glob_escape(name: str) -> str:
    """``name`` with glob metacharacters escaped."""
    return re.sub(r"([*?\[])", r"[\1]", name)


def reclaim(target: Path) -> None:
    """Clean up after a killed writer of ``target`` (call with its lock held).

    A ``.NAME.old-*`` folder is the previous ``target`` moved aside: restored when ``target`` is
    missing, else deleted. ``.NAME.tmp-*`` folders are unfinished (or swapped-out) builds.
    """
    for old in _siblings(target, "old"):
        if not target.exists():
            old.rename(target)
        else:
            shutil.rmtree(old, ignore_errors=True)
    for tmp in _siblings(target, "tmp"):
        shutil.rmtree(tmp, ignore_errors=True)


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two paths (Linux ``renameat2(RENAME_EXCHANGE)``); False if unsupported."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_uint,
    ]
    result = renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    if result == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.EPERM):
        return False
    raise OSError(code, os.strerror(code), str(a))


def _swap_in(tmp: Path, target: Path) -> None:
    """Put the finished ``tmp`` at ``target``; an existing ``target`` is removed only afterwards."""
    if not target.exists():
        tmp.rename(target)
        return
    if _exchange(tmp, target):  # tmp now holds the old folder
        shutil.rmtree(tmp, ignore_errors=True)
        return
    old = target.parent / f".{target.name}.old-{os.getpid()}"
    target.rename(old)  # killed from here on: reclaim() restores it or finishes the swap
    tmp.rename(target)
    shutil.rmtree(old, ignore_errors=True)


@contextmanager
def atomic_directory(out: str | os.PathLike[str], *, replace: bool) -> Iterator[Path]:
    """Build a folder in a temporary sibling and move it to ``out`` when the block succeeds.

    Under the output lock: leftovers of killed runs are reclaimed first; on any error the
    temporary folder is removed and ``out`` is left as it was; with ``replace`` an existing
    ``out`` is swapped for the new one atomically (or renamed aside, then deleted once the new
    one is in place), so there is never a moment without a complete folder at ``out``.

    Raises:
        ConfigError: ``out`` exists and ``replace`` is false, is in use, or cannot be made.
    """
    with output_lock(out) as target:
        reclaim(target)
        if target.exists() and not replace:
            raise ConfigError(f"{target} exists; pass --overwrite to replace it")
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
        make_private_dir_public(tmp)
        try:
            yield tmp
            _swap_in(tmp, target)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise


def dumps_json(obj: Any, *, indent: bool = False) -> bytes:
    """Deterministic JSON bytes (sorted keys; floats in shortest round-trip form)."""
    option = orjson.OPT_SORT_KEYS | orjson.OPT_SERIALIZE_NUMPY
    if indent:
        option |= orjson.OPT_INDENT_2
    return orjson.dumps(obj, option=option)
