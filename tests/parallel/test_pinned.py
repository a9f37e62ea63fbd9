"""Local processes kept for several calls, each item pinned to one of them by its key."""

from __future__ import annotations

import os
import time

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


def _slow_pid_of(item: int) -> tuple[int, int]:
    time.sleep(0.05)
    return item, os.getpid()


def test_dispatch_runs_each_item_once_at_home_and_lets_an_idle_process_help() -> None:
    with PinnedProcesses(2) as processes:
        pids = dict(processes.map(_pid_of, [0, 1]))  # process 0 and process 1
        homed = list(processes.dispatch(_slow_pid_of, [0, 1], home=lambda i: i))
        assert dict(homed) == pids  # each item at its home
        everything_at_zero = list(processes.dispatch(_slow_pid_of, range(6), home=lambda i: 0))
        assert sorted(i for i, _ in everything_at_zero) == list(range(6))
        # process 1 has no items of its own: it takes process 0's last ones
        helped = sorted(i for i, pid in everything_at_zero if pid == pids[1])
        assert helped and helped[-1] == 5 and 0 not in helped
        with pytest.raises(ValueError, match="item 3"):
            list(processes.dispatch(_fail_on_three, [1, 2, 3, 4], home=lambda i: i))
        assert sorted(processes.dispatch(_fail_on_three, [4, 5], home=lambda i: 0)) == [40, 50]
