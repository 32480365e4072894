"""The threads a run lends its tool calls when the config names no executor.

A `ThreadPoolExecutor` hand-off (a `Future`, a semaphore, its queue) costs about 60 µs there
and back on a small VM, and its exit hook refuses work at shutdown. `WorkerPool` is the least a
run needs: daemon threads started on demand (one ignoring its abort never holds up exit), one
`queue.SimpleQueue` (about 5 µs), and work run on the caller's thread when no thread starts.
"""

from __future__ import annotations

import itertools
import logging
import queue
import threading
import time
from collections.abc import Callable

__all__ = ["Work", "WorkerPool"]

_log = logging.getLogger(__name__)
_pool_numbers = itertools.count(1)

Work = Callable[[], object]
"""A pool's work item; what it returns, if callable, is its hand-back (see `WorkerPool`)."""


class WorkerPool:
    """At most `max_workers` daemon threads running the callables given to `submit`.

    A work item may return a hand-back, a callable that the thread calls once it counts as
    idle, as its last act before it waits for more work. The loop's items hand their result to
    the run's thread that way: the run's thread then wakes to a free GIL (a thread that wakes
    while another still runs Python sleeps again, waiting for the GIL, and on a VM each
    wake-up costs tens of µs), and finds an idle thread for its next call.

    Thread-safety: `submit` and `shutdown` may be called from any thread. A callable must not
    raise (the loop's work items report through their run's inbox); one that does is logged.
    """

    def __init__(self, max_workers: int = 64, name: str = "agentcore-tool") -> None:
        self._tasks: queue.SimpleQueue[Work | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._idle = 0
        self._max = max_workers
        self._name = f"{name}-{next(_pool_numbers)}"
        self._closed = False

    def submit(self, work: Work) -> None:
        """Run `work`, then its hand-back, on a pool thread; on this one if none can start.

        A thread is started, or the work queued, under the pool's lock, so that `shutdown`
        from another thread finds every thread started and every queued work ahead of its
        stop markers (a start waits only for the new thread to run, not for its work).
        """
        with self._lock:
            if self._closed:
                raise RuntimeError("cannot submit to a pool that was shut down")
            if self._idle or len(self._threads) >= self._max:
                self._idle -= 1
                self._tasks.put(work)
                return
            # a new thread takes its first work as it starts, not from the queue
            thread = threading.Thread(target=self._serve, args=(work,), daemon=True,
                                      name=f"{self._name}_{len(self._threads)}")
            try:
                thread.start()
            except RuntimeError:  # interpreter shutdown, or no threads left: run it here
                pass
            else:
                self._threads.append(thread)
                return
        _log.debug("no thread for a tool call; running it on the caller's thread")
        hand_back = work()
        if callable(hand_back):
            hand_back()

    def shutdown(self, wait: bool = True, timeout: float | None = None) -> None:
        """Let every thread end once its work is done; with `wait`, join them.

        `timeout` bounds the whole wait (seconds): a thread still busy then is left running.
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
            threads = list(self._threads)
        for _ in threads:
            self._tasks.put(None)
        if wait:
            deadline = None if timeout is None else time.monotonic() + timeout
            for thread in threads:
                thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))

    def _serve(self, work: Work | None) -> None:
        """Run `work`, then what the queue brings, until it brings None (`shutdown`)."""
        tasks, lock = self._tasks, self._lock
        while work is not None:
            hand_back: object = None
            try:
                hand_back = work()
            except BaseException:  # the loop's work items never raise; keep serving
                _log.exception("a tool work item raised")
            with lock:
                self._idle += 1
            if callable(hand_back):
                try:
                    hand_back()
                except BaseException:
                    _log.exception("a tool work item's hand-back raised")
            work = hand_back = None  # an idle thread keeps no call's result alive
            work = tasks.get()
