"""Local processes: a pool's items inherited by forked workers; one function started in a
forked process while the caller goes on."""

from __future__ import annotations

import os
import threading

import pytest

from condvln.errors import FormatError
from condvln.parallel.executors import Executor, PinnedProcesses, in_background, ordered_map


def _pid_and(item: int) -> tuple[int, int]:
    return os.getpid(), item * 10


def _locked_pid(item: tuple[int, threading.Lock]) -> tuple[int, int, bool]:
    number, lock = item
    return number, os.getpid(), lock.locked()


def test_forked_pool_workers_inherit_items_that_cannot_be_pickled() -> None:
    """A lock cannot be pickled: the workers are given the items when they fork, and each task
    carries only an item's position."""
    items = [(i, threading.Lock()) for i in range(5)]
    items[3][1].acquire()
    got = list(ordered_map(_locked_pid, items, 2))
    assert [(n, locked) for n, _, locked in got] == [(i, i == 3) for i in range(5)]
    assert os.getpid() not in {pid for _, pid, _ in got}


def _bad_record(item: str) -> None:
    raise FormatError("must be finite", file=item, record="episode 3", field="positions")


@pytest.mark.parametrize("executor", [2, Executor("local", 2)])
def test_several_local_workers_compute_it_in_another_process(executor: object) -> None:
    with in_background(_pid_and, 4, executor) as result:  # type: ignore[arg-type]
        pid, value = result()
        assert result() == (pid, value)  # asked again: the same answer
    assert value == 40 and pid != os.getpid()


def test_pinned_processes_count_as_several_local_workers() -> None:
    with PinnedProcesses(2) as processes, in_background(_pid_and, 1, processes) as result:
        assert result()[0] != os.getpid()


@pytest.mark.parametrize("executor", [1, Executor("local", 1), Executor("ray", 2)])
def test_otherwise_it_runs_here_once_when_first_asked(executor: object) -> None:
    calls: list[int] = []

    def counted(item: int) -> int:
        calls.append(item)
        return item + 1

    with in_background(counted, 4, executor) as result:  # type: ignore[arg-type]
        assert calls == []
        assert result() == result() == 5
    assert calls == [4]


@pytest.mark.parametrize("executor", [1, 2])
def test_its_error_reaches_the_caller_with_file_record_and_field(executor: int) -> None:
    with (
        in_background(_bad_record, "p.jsonl", executor) as result,
        pytest.raises(FormatError) as info,
    ):
        result()
    error = info.value
    assert (error.file, error.record, error.field) == ("p.jsonl", "episode 3", "positions")
    assert str(error) == "p.jsonl: episode 3: field 'positions': must be finite"
