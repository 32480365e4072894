"""A socketserver mixin whose `shutdown()` returns at once instead of within a poll interval.

socketserver's `serve_forever(poll_interval)` looks at its shutdown flag only when its
`select` times out, so every `shutdown()` waits up to `poll_interval`; with the 0.02 s the
test servers used, the ~800 tests that start one waited about 15 s in all. This loop blocks
in `select` without a timeout, and `shutdown()` wakes it with a connection of its own, which
the loop never serves: it sees the stop first. (The connection is dropped with the listening
socket in `server_close()`.)
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import socketserver
import threading
from typing import Any


class PromptShutdown(socketserver.BaseServer):
    """Mix in before the server class: `class Server(PromptShutdown, ThreadingHTTPServer)`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._stop = threading.Event()
        self._stopped = threading.Event()
        super().__init__(*args, **kwargs)

    def serve_forever(self, poll_interval: float = 0.5) -> None:
        """Serve until `shutdown()`; `poll_interval` is accepted and ignored (nothing polls)."""
        try:
            with selectors.DefaultSelector() as selector:
                selector.register(self, selectors.EVENT_READ)
                while not self._stop.is_set():
                    if selector.select() and not self._stop.is_set():
                        self._handle_request_noblock()  # type: ignore[attr-defined]
                    self.service_actions()
        finally:
            self._stopped.set()

    def shutdown(self) -> None:
        """Stop `serve_forever` and wait for it to return (from another thread, as ever)."""
        self._stop.set()
        with contextlib.suppress(OSError):
            socket.create_connection(self.server_address[:2], timeout=5).close()
        self._stopped.wait()
