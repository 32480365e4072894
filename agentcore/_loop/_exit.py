"""How long a stopped run may take to end, and the runs in flight when the interpreter exits.

An aborted run gives a tool call (or a model stream) `ABORT_GRACE_S` to stop, then abandons it.
Run threads are not daemons, so the interpreter finishes every run before it exits; after a
Ctrl-C interrupts that wait, our `atexit` hook aborts the runs still in flight and gives them
`EXIT_GRACE_S` to emit their `agent_end`. On a normal exit no run is left and it does nothing.
"""

from __future__ import annotations

import atexit
import contextlib
import threading
from collections.abc import Callable, Iterator

__all__ = ["ABORT_GRACE_S", "EXIT_GRACE_S", "in_flight"]

ABORT_GRACE_S = 1.0
"""How long an aborted run waits for a tool (or a model stream) to stop before abandoning it."""

EXIT_GRACE_S = 1.5
"""How long the exit hook waits for the aborted runs to end (the process must end in 2 s)."""

_cond = threading.Condition(threading.Lock())
_runs: set[Callable[[str], object]] = set()  # how to abort each run in flight


@contextlib.contextmanager
def in_flight(abort: Callable[[str], object]) -> Iterator[None]:
    """While inside, a run is in flight: the exit hook calls `abort(reason)` to stop it."""
    with _cond:
        _runs.add(abort)
    try:
        yield
    finally:
        with _cond:
            _runs.discard(abort)
            if not _runs:
                _cond.notify_all()


def _at_exit() -> None:
    """Abort the runs still in flight and wait a little for their ends."""
    with _cond:
        runs = list(_runs)
    for abort in runs:
        abort("the interpreter is exiting")
    with _cond:
        _cond.wait_for(lambda: not _runs, EXIT_GRACE_S)


atexit.register(_at_exit)
