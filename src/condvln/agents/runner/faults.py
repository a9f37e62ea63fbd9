"""Fault isolation: an agent call that raises, hangs or answers nonsense ends one episode.

An exception in ``reset`` / ``act`` / ``act_batch`` (``SystemExit`` included), an invalid action
or a call slower than the step timeout becomes an :class:`AgentFault`: the episode ends with
``status`` ``agent_error`` / ``invalid_action`` / ``timeout`` and a one-line ``reason``, and the
run goes on.

>>> valid_action(1)
1
>>> valid_action(True)
Traceback (most recent call last):
...
condvln.agents.runner.faults.AgentFault: invalid_action: act returned True (bool); actions are the ints 0 STOP, 1 FORWARD, 2 LEFT, 3 RIGHT
"""

from __future__ import annotations

import reprlib
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Literal

import numpy as np

from condvln.agents.base import AgentTimeout
from condvln.sim.simulator import ACTIONS

AgentStatus = Literal["ok", "agent_error", "invalid_action", "timeout"]
FAILURES: tuple[AgentStatus, ...] = ("agent_error", "invalid_action", "timeout")
"""How an episode can end by the agent's fault (``status`` of its record, with a ``reason``)."""

_REASON_CHARS = 300


class AgentFault(Exception):
    """An agent call that failed: the episode ends with ``status`` and a one-line ``reason``."""

    def __init__(self, status: AgentStatus, reason: str) -> None:
        self.status = status
        self.reason = " ".join(reason.split())[:_REASON_CHARS]
        super().__init__(f"{status}: {self.reason}")


@contextmanager
def _deadline(seconds: float | None) -> Iterator[None]:
    """Raise :class:`AgentTimeout` in the block after ``seconds`` (main thread; SIGALRM).

    An interval timer already running (a caller's own time limit) is left to fire when it
    comes first, and otherwise rearmed afterwards with the time it had left.
    """
    usable = (
        seconds is not None
        and hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
    )
    outer = signal.getitimer(signal.ITIMER_REAL)[0] if usable else 0.0
    if not usable or 0 < outer <= seconds:  # type: ignore[operator]
        yield
        return

    def on_alarm(signum: int, frame: Any) -> None:
        raise AgentTimeout(f"no answer within the step timeout of {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    started = time.monotonic()
    signal.setitimer(signal.ITIMER_REAL, seconds)  # type: ignore[arg-type]
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0.0)
        signal.signal(signal.SIGALRM, previous)
        if outer:
            left = outer - (time.monotonic() - started)
            signal.setitimer(signal.ITIMER_REAL, max(left, 0.001))


def call_agent(method: str, fn: Callable[..., Any], *args: Any, timeout: float | None) -> Any:
    """``fn(*args)`` with fault isolation: any failure becomes an :class:`AgentFault`.

    Exceptions (``SystemExit`` included) become ``agent_error``; a call slower than
    ``timeout`` seconds becomes ``timeout`` (interrupted in the main thread, else detected
    when it returns). ``KeyboardInterrupt`` still stops the run.
    """
    started = time.perf_counter()
    try:
        with _deadline(timeout):
            result = fn(*args)
    except AgentTimeout as exc:
        raise AgentFault("timeout", f"{method}: {exc}") from None
    except (Exception, SystemExit) as exc:
        raise AgentFault("agent_error", f"{method}: {type(exc).__name__}: {exc}") from None
    elapsed = time.perf_counter() - started
    if timeout is not None and elapsed > timeout:
        raise AgentFault("timeout", f"{method}: took {elapsed:.3g} s (step timeout {timeout:g} s)")
    return result


def valid_action(action: Any) -> int:
    """``action`` as an action id, or :class:`AgentFault` ``invalid_action`` (bools are not)."""
    is_int = isinstance(action, (int, np.integer)) and not isinstance(action, (bool, np.bool_))
    if is_int and int(action) in ACTIONS:
        return int(action)
    raise AgentFault(
        "invalid_action",
        f"act returned {reprlib.repr(action)} ({type(action).__name__}); "
        "actions are the ints 0 STOP, 1 FORWARD, 2 LEFT, 3 RIGHT",
    )
