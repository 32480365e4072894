"""uvicorn on a thread of the test process, which says when it serves and stops when asked.

uvicorn's main loop looks at `should_exit` every 0.1 s, so each server took up to that long
to begin stopping, and its shutdown sleeps another 0.1 s: about 0.2 s a server, for the ~40
tests of `tests/web/test_app.py` that start one, 8 s. This one's main loop wakes as soon as
`stop()` asks (the shutdown's own 0.1 s remains); `run_on_loop` runs a coroutine on its event
loop (`tests/web/test_app.py` drives its apps' lifespans so, on one server for the module).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

import uvicorn

__all__ = ["ThreadServer"]

T = TypeVar("T")


class ThreadServer(uvicorn.Server):
    """`start()` runs it on a thread, `ready` is set once it serves (or failed to start),
    `stop()` ends it and joins the thread."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = threading.Event()
        self.thread: threading.Thread | None = None
        self._wake: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def start(self, sockets: list[socket.socket] | None = None,
              name: str = "uvicorn") -> threading.Thread:
        self.thread = threading.Thread(target=self.run, kwargs={"sockets": sockets}, name=name)
        self.thread.start()
        return self.thread

    async def startup(self, sockets: Any = None) -> None:
        try:
            await super().startup(sockets)
        finally:
            self.ready.set()

    async def main_loop(self) -> None:
        """uvicorn's, waiting on an event instead of sleeping 0.1 s between its ticks."""
        self._wake = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        counter = 0
        while not await self.on_tick(counter):
            counter = (counter + 1) % 864000
            with contextlib.suppress(asyncio.TimeoutError):  # TimeoutError on 3.11+
                await asyncio.wait_for(self._wake.wait(), 0.1)

    def run_on_loop(self, work: Coroutine[Any, Any, T], timeout: float) -> T:
        """Run `work` on the server's event loop (while it serves) and wait for its result."""
        assert self._loop is not None, "the server is not serving"
        return asyncio.run_coroutine_threadsafe(work, self._loop).result(timeout)

    def stop(self, timeout: float = 10.0) -> None:
        """Ask it to stop, at once, and join its thread (which must end within `timeout`)."""
        self.should_exit = True
        loop, wake = self._loop, self._wake
        if loop is not None and wake is not None:
            with contextlib.suppress(RuntimeError):  # the loop has closed already
                loop.call_soon_threadsafe(wake.set)
        if self.thread is not None:
            self.thread.join(timeout)
            assert not self.thread.is_alive(), "uvicorn did not stop"
