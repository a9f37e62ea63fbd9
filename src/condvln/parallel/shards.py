"""``--shard i/N``: one of N contiguous parts of a split, for runs without a cluster.

Shard ``i`` (0-based) of ``n`` items holds items ``[i·n // N, (i+1)·n // N)`` in file order, so
shards are as even as possible, keep a scene's episodes together (files list them by scene) and
together cover every item exactly once.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from condvln.errors import ConfigError

T = TypeVar("T")

_SHARD = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``count`` (0-based)."""

    index: int
    count: int

    def __post_init__(self) -> None:
        if self.count < 1 or not 0 <= self.index < self.count:
            raise ConfigError(f"shard {self.index}/{self.count}: need 0 <= i < N")

    def select(self, items: Sequence[T]) -> list[T]:
        """This shard's part of ``items``.

        >>> [Shard(i, 3).select(list(range(7))) for i in range(3)]
        [[0, 1], [2, 3], [4, 5, 6]]
        """
        n = len(items)
        return list(items[self.index * n // self.count : (self.index + 1) * n // self.count])

    def to_json(self, total: int) -> dict[str, Any]:
        """The ``shard`` entry of a shard's manifest (``total``: items of the whole split)."""
        return {"index": self.index, "count": self.count, "of_episodes": total}

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str | None) -> Shard | None:
    """``"i/N"`` as a :class:`Shard` (``None`` for no sharding).

    >>> parse_shard("1/4")
    Shard(index=1, count=4)
    """
    if text is None:
        return None
    match = _SHARD.match(text)
    if not match:
        raise ConfigError(f"--shard must look like i/N (0 <= i < N), got {text!r}")
    return Shard(int(match[1]), int(match[2]))
