"""Where work runs: executors (local processes, Ray) and shards of a split.

Every executor gathers results in the same fixed order, so outputs are byte-identical whatever
runs them (:mod:`.executors`); ``--shard i/N`` picks one contiguous part of a split
(:mod:`.shards`) and ``condvln merge`` puts shard folders back together (:mod:`condvln.merge`,
above the runner and the evaluation it merges).
"""

from condvln.parallel.executors import Executor, PinnedProcesses, ordered_map, pinned
from condvln.parallel.shards import Shard, parse_shard

__all__ = ["Executor", "PinnedProcesses", "Shard", "ordered_map", "parse_shard", "pinned"]
