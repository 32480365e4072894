"""`AgentRun`: a handle on one background run of an `Agent`.

A run has one producer, the `Agent` that started it, and any number of consumers. The
producer uses `start`, `publish` and `finish`, as an executor uses `Future.set_result`; the
consumers wait on the run through `result`, `wait`, iteration, `snapshot`, `wait_for_news`
and `add_finisher`. One Condition guards the event log; nothing outside this class touches it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import final

from .._core import (
    AbortController,
    AbortSignal,
    AgentEndEvent,
    AgentEvent,
    AgentMessage,
    run_markdown,
)

__all__ = ["AgentRun"]

_log = logging.getLogger(__name__)


@final
class AgentRun:
    """One run of an `Agent` on its background thread.

    Iterate it (from any thread, any number of times, however late) for every event from
    `agent_start` to `agent_end`; `result()` waits for the new messages. A `KeyboardInterrupt`
    while waiting aborts the run, then propagates.
    """

    def __init__(self, controller: AbortController) -> None:
        self._controller = controller
        self._cond = threading.Condition(threading.Lock())
        self._events: list[AgentEvent] = []
        self._messages: list[AgentMessage] = []
        self._finished = False
        self._finishing = False  # from here on, add_finisher refuses: finishers are running
        self._finishers: list[Callable[[], None]] = []
        self._name = "agentcore-run"
        self._thread: threading.Thread | None = None

    @property
    def signal(self) -> AbortSignal:
        """This run's abort signal."""
        return self._controller.signal

    @property
    def name(self) -> str:
        """The name of the run's thread."""
        return self._name

    def done(self) -> bool:
        """Whether the run has fully ended (its `agent_end` listeners included)."""
        return self._finished

    def abort(self) -> None:
        """Stop the run: the model stream is cancelled and no further tool or model call starts."""
        self._controller.abort()

    def result(self, timeout: float | None = None) -> list[AgentMessage]:
        """Wait for the run to end and return the messages it added.

        Raises `TimeoutError` if it has not ended within `timeout` seconds.
        """
        if not self.wait(timeout):
            raise TimeoutError(f"the run did not end within {timeout} s")
        return list(self._messages)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the run to end, as `result()` does; False if `timeout` seconds passed first."""
        return self._wait(lambda: self._finished, timeout)

    def display(self, *, wait: bool = False) -> None:
        """Show this run in Jupyter, updated in place as it goes; see `agentcore.notebook`."""
        from ..notebook import display  # notebook builds on this module: import it late

        display(self, wait=wait)

    def __iter__(self) -> Iterator[AgentEvent]:
        seen = 0
        while True:
            self.wait_for_news(seen)
            with self._cond:
                fresh = self._events[seen:]
            if not fresh:
                return
            seen += len(fresh)
            yield from fresh

    def __repr__(self) -> str:
        state = "done" if self._finished else "running"
        return f"<AgentRun {state}, {len(self._events)} events>"

    def _repr_markdown_(self) -> str:
        events, _ = self.snapshot()
        return run_markdown(events, abort_requested=self.signal.aborted)

    def snapshot(self) -> tuple[list[AgentEvent], bool]:
        """The events so far, and whether the run has emitted its last one (`agent_end`)."""
        with self._cond:
            return list(self._events), self._ended()

    def wait_for_news(self, seen: int, timeout: float | None = None) -> bool:
        """Wait until the run has more than `seen` events or has finished; False on timeout."""
        return self._wait(lambda: seen < len(self._events) or self._finished, timeout)

    def wait_for_end(self, timeout: float | None = None) -> bool:
        """Wait until the run has emitted its last event; False on timeout."""
        return self._wait(self._ended, timeout)

    def add_finisher(self, finisher: Callable[[], None]) -> bool:
        """Have `finisher()` run on the run's thread before `result()` returns.

        Returns False, without adding it, when the run is already finishing (too late).
        A finisher that raises is logged and skipped.
        """
        with self._cond:
            if self._finishing:
                return False
            self._finishers.append(finisher)
            return True

    def start(self, target: Callable[[], None], name: str) -> None:
        """Producer: run `target` on a new, non-daemon thread called `name`."""
        self._name = name
        self._thread = threading.Thread(target=target, name=name)
        self._thread.start()

    def on_own_thread(self) -> bool:
        """Whether the caller is this run's own thread (a listener, a hook, a lone tool)."""
        return self._thread is not None and self._thread is threading.current_thread()

    def publish(self, event: AgentEvent) -> None:
        """Producer: append `event` to the run's log and wake the consumers."""
        with self._cond:
            self._events.append(event)
            self._cond.notify_all()

    def finish(self, messages: list[AgentMessage]) -> None:
        """Producer: run the finishers, then end the run with `messages` as its result."""
        with self._cond:
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

    def _ended(self) -> bool:
        return self._finished or (bool(self._events) and isinstance(self._events[-1],
                                                                    AgentEndEvent))

    def _wait(self, ready: Callable[[], bool], timeout: float | None) -> bool:
        """Wait until `ready()`; False on timeout. From the run's own thread, raise instead.

        A listener, hook or tool on the run's thread waiting for the run would wait forever:
        the run cannot go on until it returns. `Thread.join` raises in the same situation.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            with self._cond:
                while not ready():
                    if self.on_own_thread():
                        raise RuntimeError(
                            "cannot wait for a run from its own thread (a listener, hook or "
                            "tool of this run): the run goes on only once it returns")
                    left = None if deadline is None else deadline - time.monotonic()
                    if left is not None and left <= 0:
                        return False
                    self._cond.wait(left)
        except KeyboardInterrupt:
            self.abort()
            raise
        return True
