"""A run's event log: bounded, with its end, waited on by threads and asyncio tasks alike.

Only `message_update`s (a child agent's too, in a `subagent` event) are dropped, oldest first.
Consumers count events *published* (each kept event carries its sequence number), not list
positions, so a drop never makes one skip or repeat an event it keeps. Asyncio tasks park
futures that the producer resolves through `loop.call_soon_threadsafe`: no polling, no blocked
event loop, and no asyncio import until a task waits.
"""

from __future__ import annotations

import bisect
import contextlib
import threading
import time
from array import array
from collections.abc import Callable
from typing import TYPE_CHECKING

from .._core import AgentEndEvent, AgentEvent, MessageUpdateEvent, SubagentEvent

if TYPE_CHECKING:
    import asyncio

__all__ = ["EventLog"]

Waiters = dict["asyncio.Future[None]", "asyncio.AbstractEventLoop"]
"""Parked futures, each with the event loop it belongs to."""


class EventLog:
    """The events of one run (about `max_events` at most) and whether it has finished.

    One producer (the run's thread) publishes and finishes; any number of consumers take what
    was published since they last looked, or wait, under one lock. `publish` wakes only the
    waiters there are, and only those it concerns: a consumer waiting for news is woken by
    every event, one waiting for the end (`until_end`) only by `agent_end` and `finish`, so a
    thread in `run.wait()` sleeps through the run's hundreds of events. Threads in `wait` are
    counted; asyncio tasks park futures, each in the set of the wake-up it waits for.
    """

    def __init__(self, max_events: int) -> None:
        self.max_events = max_events
        self.finished = False
        self.async_waiters: Waiters = {}  # tasks waiting for news
        self.async_end_waiters: Waiters = {}  # tasks waiting for the end
        self._lock = lock = threading.Lock()
        self._cond = threading.Condition(lock)  # threads waiting for news
        self._end_cond = threading.Condition(lock)  # threads waiting for the end
        self._events: list[AgentEvent] = []
        self._seqs = array("q")  # the sequence number of each kept event, ascending
        self._published = 0  # events published so far: the next one's sequence number
        self._updates = 0  # how many of the kept events are message_updates
        self._waiting = 0  # threads waiting for news (under the lock): woken only if any
        self._end_waiting = 0  # threads waiting for the end

    def publish(self, event: AgentEvent) -> None:
        """Append `event` and wake the consumers.

        When the log outgrows `max_events`, one pass drops enough of its oldest
        `message_update`s to bring it down to about 90 % of the bound.
        """
        with self._lock:
            events = self._events
            events.append(event)
            self._seqs.append(self._published)
            self._published += 1
            if _droppable(event):
                self._updates += 1
            # A pass costs the log's length, so it runs only when it can drop a tenth of the
            # log: publishing stays O(1) amortized even in a log mostly of kinds never dropped.
            if len(events) > self.max_events and self._updates * 10 >= len(events):
                self._drop_updates()
            if self._waiting or self._end_waiting or self.async_waiters \
                    or self.async_end_waiters:  # most events have nobody to wake
                self._wake(end=isinstance(event, AgentEndEvent))

    def finish(self) -> None:
        """Mark the log finished (the run's outcome is set) and wake every consumer."""
        with self._cond:
            self.finished = True
            self._wake(end=True)

    def take(self, seen: int) -> tuple[list[AgentEvent], int, bool]:
        """The kept events published after the first `seen`, the count now, and `finished`."""
        with self._cond:
            return (self._events[bisect.bisect_left(self._seqs, seen):], self._published,
                    self.finished)

    def counted_snapshot(self) -> tuple[list[AgentEvent], bool, int]:
        """The kept events, whether `agent_end` is among them (or it finished), the count."""
        with self._cond:
            return list(self._events), self.ended(), self._published

    def has_news(self, seen: int) -> bool:
        """Whether more than `seen` events were published, or the log finished."""
        return seen < self._published or self.finished

    def ended(self) -> bool:
        """Whether the run's last event (`agent_end`) is in, or the log finished."""
        return self.finished or (bool(self._events)
                                 and isinstance(self._events[-1], AgentEndEvent))

    def wait(self, ready: Callable[[], bool], timeout: float | None,
             refuse: Callable[[], None], *, until_end: bool = False) -> bool:
        """Wait until `ready()` (under the lock); False on timeout.

        `until_end`: `ready()` can only turn true at the end (`agent_end` or `finish`), so
        the events before it need not wake this thread. `refuse()` is called before each
        wait; it raises when this thread must not wait.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        cond = self._end_cond if until_end else self._cond
        with cond:
            while not ready():
                refuse()
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                if until_end:
                    self._end_waiting += 1
                else:
                    self._waiting += 1
                try:
                    cond.wait(left)
                finally:
                    if until_end:
                        self._end_waiting -= 1
                    else:
                        self._waiting -= 1
        return True

    async def wait_async(self, ready: Callable[[], bool], refuse: Callable[[], None], *,
                         until_end: bool = False) -> None:
        """`wait` for asyncio: await `ready()` on the running loop without blocking it."""
        import asyncio  # here, not at the top: `import agentcore` never loads asyncio

        loop = asyncio.get_running_loop()
        waiters = self.async_end_waiters if until_end else self.async_waiters
        while True:
            with self._cond:
                if ready():
                    return
                refuse()
                future: asyncio.Future[None] = loop.create_future()
                waiters[future] = loop
            try:
                await future
            except BaseException:  # cancelled: a waiter left behind would be woken for nothing
                with self._cond:
                    waiters.pop(future, None)
                raise

    def _wake(self, end: bool) -> None:
        """Wake the waiters for news, and at the end (`end`) those waiting for it too."""
        if self._waiting:  # most events have no thread waiting: skip the notify
            self._cond.notify_all()
        if end and self._end_waiting:
            self._end_cond.notify_all()
        if self.async_waiters:
            _resolve_all(self.async_waiters)
        if end and self.async_end_waiters:
            _resolve_all(self.async_end_waiters)

    def _drop_updates(self) -> None:
        """Drop the oldest message_updates, down to about 90 % of `max_events` if they allow."""
        target = self.max_events - self.max_events // 10
        excess = drop = min(self._updates, len(self._events) - target)
        events: list[AgentEvent] = []
        seqs = array("q")
        for index, event in enumerate(self._events):
            if not excess:
                break
            if _droppable(event):  # as `publish` counts them
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


def _resolve_all(waiters: Waiters) -> None:
    """Resolve each parked future on its own loop, and forget them."""
    parked = list(waiters.items())
    waiters.clear()
    for future, loop in parked:
        with contextlib.suppress(RuntimeError):  # its loop is closed: nobody to wake
            loop.call_soon_threadsafe(_resolve, future)


def _resolve(future: asyncio.Future[None]) -> None:
    """On the future's loop: wake its waiter, unless it was cancelled meanwhile."""
    if not future.done():
        future.set_result(None)


def _droppable(event: AgentEvent) -> bool:
    """Whether the log may drop `event`: a `message_update`, a child agent's one included."""
    kind = event.__class__
    if kind is SubagentEvent:
        kind = event.innermost().event.__class__  # type: ignore[union-attr]
    return kind is MessageUpdateEvent
