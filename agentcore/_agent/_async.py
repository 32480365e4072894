"""The asyncio bridge of a run's event log: `async for event in run`, `await run.wait_async()`.

Awaiting never blocks the event loop and never polls: each waiting task parks a future in the
log's `waiters` (under the log's lock), and the log's producer resolves them all through
`loop.call_soon_threadsafe` at its next publish or at the end; each waiter then checks again.
asyncio itself is imported only here, inside the functions, so `import agentcore` never loads it.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import asyncio

__all__ = ["Waiters", "wait_async", "wake"]

Waiters = dict["asyncio.Future[None]", "asyncio.AbstractEventLoop"]
"""Parked futures, each with the event loop it belongs to."""


async def wait_async(cond: threading.Condition, waiters: Waiters, ready: Callable[[], bool],
                     refuse: Callable[[], None]) -> None:
    """Await `ready()` (checked under `cond`) on the running event loop, woken by `wake`.

    `refuse()`, called under `cond` before parking, raises when this loop's thread must not wait.
    """
    import asyncio  # here, not at the top: `import agentcore` never loads asyncio

    loop = asyncio.get_running_loop()
    while True:
        with cond:
            if ready():
                return
            refuse()
            future: asyncio.Future[None] = loop.create_future()
            waiters[future] = loop
        try:
            await future
        except BaseException:  # cancelled: a waiter left behind would be woken for nothing
            with cond:
                waiters.pop(future, None)
            raise


def wake(waiters: Waiters) -> None:
    """Resolve every parked future on its own loop and forget them (under the log's lock)."""
    parked = list(waiters.items())
    waiters.clear()
    for future, loop in parked:
        with contextlib.suppress(RuntimeError):  # its loop is closed: nobody left to wake
            loop.call_soon_threadsafe(_resolve, future)


def _resolve(future: asyncio.Future[None]) -> None:
    """On the future's loop: wake its waiter, unless it was cancelled meanwhile."""
    if not future.done():
        future.set_result(None)
