"""Local processes kept for several calls, each item pinned to one of them by its key."""

from __future__ import annotations

import os

import pytest

from condvln.parallel.executors import PinnedProcesses, ordered_map, pinned


def _pid_of(item: int) -> tuple[int, int]:
    return item, os.getpid()


def _fail_on_three(item: int) -> int:
    if item == 3:
        raise ValueError(f"item {item}")
    return item * 10


def test_an_item_runs_on_the_same_process_in_every_call() -> None:
    with PinnedProcesses(2) as processes:
        first = list(ordered_map(_pid_of, [5, 2, 7, 4, 9], processes, key=lambda i: i))
        second = list(ordered_map(_pid_of, [4, 9, 5], processes, key=lambda i: i))
    assert [i for i, _ in first] == [5, 2, 7, 4, 9]  # input order
    pids = dict(first)
    assert {i: pid for i, pid in second} == {i: pids[i] for i in (4, 9, 5)}
    assert {pids[i] for i in (5, 7, 9)} != {pids[i] for i in (2, 4)}  # odd and even keys apart
    assert len(set(pids.values())) == 2 and os.getpid() not in pids.values()


def test_a_task_error_reaches_the_caller_and_the_processes_stay_usable() -> None:
    done: list[int] = []
    with PinnedProcesses(2) as processes:
        results = processes.map(_fail_on_three, [1, 2, 3, 4], on_done=lambda: done.append(1))
        with pytest.raises(ValueError, match="item 3"):
            list(results)
        assert len(done) == 2
        assert list(ordered_map(_fail_on_three, [4, 5], processes)) == [40, 50]


def test_pinned_gives_processes_only_for_several_local_workers() -> None:
    with pinned(1) as one:
        assert one == 1
    with pinned(2) as two:
        assert isinstance(two, PinnedProcesses) and two.workers == 2
        with pinned(two) as same:
            assert same is two
