"""Episode payloads parked on disk while a run balances and writes.

Vetting builds every sampled instance's episode in the worker (``Instance.payload``); a run
keeps them all until balancing has chosen, and most are dropped. :class:`PayloadSpill` moves
each payload to an unnamed temporary file as its scene's instances reach the parent, leaving a
:class:`Parked` handle, so the parent holds instance metadata only and reads back just the
episodes it writes.
"""

from __future__ import annotations

import dataclasses
import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import orjson

from condvln.synth.sampler import Instance


@dataclass(frozen=True)
class Parked:
    """Where a payload lies in the spill file."""

    offset: int
    size: int


class PayloadSpill:
    """An unnamed temporary file in ``directory`` (gone when closed, or when the process ends)
    holding payloads as JSON; use as a context manager.
    """

    def __init__(self, directory: Path) -> None:
        self._file = tempfile.TemporaryFile(dir=directory, prefix=".condvln-spill-")  # noqa: SIM115 - closed by __exit__

    def park(self, instances: list[Instance]) -> list[Instance]:
        """The instances with their payloads moved to the file (JSON round-trips every float
        exactly; tuples come back as lists)."""
        parked = []
        self._file.seek(0, 2)
        for inst in instances:
            data = orjson.dumps(inst.payload, option=orjson.OPT_SERIALIZE_NUMPY)
            handle = Parked(self._file.tell(), len(data))
            self._file.write(data)
            parked.append(dataclasses.replace(inst, payload=handle))
        return parked

    def fetch(self, inst: Instance) -> Any:
        """The payload of a parked instance, read back."""
        handle = inst.payload
        self._file.seek(handle.offset)
        return orjson.loads(self._file.read(handle.size))

    def __enter__(self) -> PayloadSpill:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._file.close()
