"""`AgentRun`: a handle on one background run of an `Agent`."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from functools import partial
from typing import final

from .._core import AbortController, AbortSignal, AgentEvent, AgentMessage, run_markdown

__all__ = ["AgentRun"]

_log = logging.getLogger(__name__)


@final
class AgentRun:
    """One run of an `Agent` on its background thread.

    Iterate it (from any thread, any number of times, however late) for every event from
    `agent_start` to `agent_end`; `result()` waits for the new messages. A `KeyboardInterrupt`
    while waiting aborts the run, then propagates.
    """

    def __init__(self, controller: AbortController, on_abort: Callable[[], None]) -> None:
        self._controller = controller
        self._on_abort = on_abort
        self._cond = threading.Condition(threading.Lock())
        self._events: list[AgentEvent] = []
        self._messages: list[AgentMessage] = []
        self._finished = False
        self._thread: threading.Thread | None = None
        self._finishers: list[Callable[[], None]] = []  # run before result() returns
        self._finishing = False

    @property
    def signal(self) -> AbortSignal:
        """This run's abort signal."""
        return self._controller.signal

    def done(self) -> bool:
        """Whether the run has fully ended (its `agent_end` listeners included)."""
        return self._finished

    def abort(self) -> None:
        """Stop the run: the model stream is cancelled and no further tool or model call starts."""
        self._on_abort()

    def result(self, timeout: float | None = None) -> list[AgentMessage]:
        """Wait for the run to end and return the messages it added.

        Raises `TimeoutError` if it has not ended within `timeout` seconds.
        """
        self._wait(lambda: self._finished, timeout)
        return list(self._messages)

    def display(self, *, wait: bool = False) -> None:
        """Show this run in Jupyter, updated in place as it goes; see `agentcore.notebook`."""
        from ..notebook import display  # notebook builds on this module: import it late

        display(self, wait=wait)

    def __iter__(self) -> Iterator[AgentEvent]:
        index = 0
        while True:
            self._wait(partial(self._has_news, index), None)
            with self._cond:
                fresh = self._events[index:]
            if not fresh:
                return
            index += len(fresh)
            yield from fresh

    def __repr__(self) -> str:
        state = "done" if self._finished else "running"
        return f"<AgentRun {state}, {len(self._events)} events>"

    def _repr_markdown_(self) -> str:
        with self._cond:
            events = list(self._events)
        return run_markdown(events, abort_requested=self.signal.aborted)

    def _has_news(self, index: int) -> bool:
        return index < len(self._events) or self._finished

    def _wait(self, ready: Callable[[], bool], timeout: float | None) -> None:
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            with self._cond:
                while not ready():
                    left = None if deadline is None else deadline - time.monotonic()
                    if left is not None and left <= 0:
                        raise TimeoutError(f"the run did not end within {timeout} s")
                    self._cond.wait(left)
        except KeyboardInterrupt:
            self.abort()
            raise

    def _record(self, event: AgentEvent) -> None:
        with self._cond:
            self._events.append(event)
            self._cond.notify_all()

    def _finish(self, messages: list[AgentMessage]) -> None:
        with self._cond:  # from here on, a finisher added is too late: its owner checks this
            self._finishing = True
            finishers = list(self._finishers)
        for finisher in finishers:  # e.g. a live display showing the final view
            try:
                finisher()
            except Exception:
                _log.exception("a finisher of %r raised", self)
        with self._cond:
            self._messages = messages
            self._finished = True
            self._cond.notify_all()
