"""`AgentRun`: a handle on one background run of an `Agent`.

A run has one producer, the `Agent` that started it, and any number of consumers. The
producer uses `start`, `publish` and `finish`, as an executor uses `Future.set_result`; the
consumers wait on the run through `result`, `wait`, iteration, `snapshot`, `wait_for_news`
and `add_finisher`. One Condition guards the event log; nothing outside this class touches it.

The log is bounded (`max_events`): a long reply streams one `message_update` per chunk, and
those are what it drops, oldest first, never an event of another kind. Every kept event carries
its sequence number (how many events were published before it), and consumers count events
*published*, not list positions, so a drop never makes one skip or repeat an event it keeps.
"""

from __future__ import annotations

import bisect
import logging
import threading
import time
from array import array
from collections.abc import Callable, Iterator
from typing import final

from .._core import (
    AbortController,
    AbortSignal,
    AgentEndEvent,
    AgentEvent,
    AgentMessage,
    MessageUpdateEvent,
    run_markdown,
)
from .._loop import serving

__all__ = ["AgentRun"]

_log = logging.getLogger(__name__)

MAX_EVENTS = 100_000
"""How many events a run keeps for late iteration by default (`Agent(max_events=...)`)."""


@final
class AgentRun:
    """One run of an `Agent` on its background thread.

    Iterate it (from any thread, any number of times, however late) for every event from
    `agent_start` to `agent_end`; `result()` waits for the new messages. A `KeyboardInterrupt`
    while waiting aborts the run, then propagates.

    The run keeps at most `max_events` events: past that, the oldest `message_update` events
    are dropped (in batches, down to about 90 % of the bound), never events of other kinds, so
    a late iteration or a live one that lags may miss `message_update`s and nothing else. A run
    whose log is mostly other kinds (a very long run of tool calls) keeps them all and so may
    hold more than `max_events`; its `message_update`s are then dropped once they are a tenth
    of the log.
    """

    def __init__(self, controller: AbortController, *, max_events: int = MAX_EVENTS) -> None:
        if type(max_events) is not int:
            raise TypeError(f"'max_events' must be an int, got {max_events!r}")
        if max_events < 1:
            raise ValueError(f"'max_events' must be at least 1, got {max_events!r}")
        self._controller = controller
        self._cond = threading.Condition(threading.Lock())
        self._max_events = max_events
        self._events: list[AgentEvent] = []
        self._seqs = array("q")  # the sequence number of each kept event, ascending
        self._published = 0  # events published so far: the next one's sequence number
        self._updates = 0  # how many of the kept events are message_updates
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

    @property
    def max_events(self) -> int:
        """How many events this run keeps, at most, for late iteration (see the class)."""
        return self._max_events

    def __iter__(self) -> Iterator[AgentEvent]:
        seen = 0
        while True:
            self.wait_for_news(seen)
            with self._cond:
                fresh = self._kept_since(seen)
                seen, finished = self._published, self._finished
            yield from fresh
            if finished:
                return

    def __repr__(self) -> str:
        state = "done" if self._finished else "running"
        with self._cond:
            published, kept = self._published, len(self._events)
        dropped = "" if kept == published else f", {kept} kept"
        return f"<AgentRun {state}, {published} events{dropped}>"

    def _repr_markdown_(self) -> str:
        events, _ = self.snapshot()
        return run_markdown(events, abort_requested=self.signal.aborted)

    def snapshot(self) -> tuple[list[AgentEvent], bool]:
        """The events kept so far, and whether the run has emitted its last one (`agent_end`)."""
        with self._cond:
            return list(self._events), self._ended()

    def counted_snapshot(self) -> tuple[list[AgentEvent], bool, int]:
        """`snapshot()` and, taken at the same moment, how many events have been published.

        The count is what `wait_for_news` takes: it goes on growing when events are dropped.
        """
        with self._cond:
            return list(self._events), self._ended(), self._published

    def wait_for_news(self, seen: int, timeout: float | None = None) -> bool:
        """Wait until more than `seen` events have been published or the run has finished.

        `seen` counts every event published, dropped ones included (the third value of
        `counted_snapshot`). False on timeout.
        """
        return self._wait(lambda: seen < self._published or self._finished, timeout)

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
        """Whether the run waits on the caller: its own thread, or one running its tool call."""
        return self._thread is threading.current_thread() or serving(self._controller.signal)

    def publish(self, event: AgentEvent) -> None:
        """Producer: append `event` to the run's log and wake the consumers.

        O(1) amortized: when the log outgrows `max_events`, one pass drops enough of its
        oldest `message_update`s to bring it down to about 90 % of the bound.
        """
        with self._cond:
            self._events.append(event)
            self._seqs.append(self._published)
            self._published += 1
            if isinstance(event, MessageUpdateEvent):
                self._updates += 1
            # A pass costs the log's length, so it runs only when it can drop a tenth of the
            # log: publishing stays O(1) amortized even in a log mostly of kinds never dropped.
            if len(self._events) > self._max_events and self._updates * 10 >= len(self._events):
                self._drop_updates()
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

    def _drop_updates(self) -> None:
        """Drop the oldest message_updates, down to about 90 % of `max_events` if they allow."""
        target = self._max_events - self._max_events // 10
        excess = drop = min(self._updates, len(self._events) - target)
        events: list[AgentEvent] = []
        seqs = array("q")
        for index, event in enumerate(self._events):
            if not excess:
                break
            if isinstance(event, MessageUpdateEvent):
                excess -= 1
            else:
                events.append(event)
                seqs.append(self._seqs[index])
        else:
            index = len(self._events)
        events += self._events[index:]
        seqs += self._seqs[index:]
        self._events, self._seqs = events, seqs
        self._updates -= drop

    def _kept_since(self, seen: int) -> list[AgentEvent]:
        """The kept events published after the first `seen` ones (under the lock)."""
        return self._events[bisect.bisect_left(self._seqs, seen):]

    def _ended(self) -> bool:
        return self._finished or (bool(self._events) and isinstance(self._events[-1],
                                                                    AgentEndEvent))

    def _wait(self, ready: Callable[[], bool], timeout: float | None) -> bool:
        """Wait until `ready()`; False on timeout. From a thread the run waits on, raise instead.

        A listener or hook on the run's thread, or a tool call on a worker, waiting for the run
        would wait forever: the run cannot go on until it returns. `Thread.join` raises in the
        same situation.
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
