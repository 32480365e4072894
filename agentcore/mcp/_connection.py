"""One MCP client session, held open by one asyncio event loop on one private daemon thread.

The SDK is asyncio-based and its task groups and cancel scopes must be entered and left by one
task, so a single task (`_Connection._main`) opens the transport and the session, waits for
`close()`, and closes them again. Requests run as other tasks on the same loop, submitted from
the callers' threads with `asyncio.run_coroutine_threadsafe`; a caller waits for the result on
a `concurrent.futures.Future`, which an abort cancels at once (the task is cancelled in turn,
and the SDK tells the server with a `notifications/cancelled`).

Nothing here fails to answer: a connection that ends (a server process that dies, an HTTP
session that goes away) fails the requests in flight, and when the session task ends the tasks
still on the loop are cancelled before the loop closes, so that no caller waits forever.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import threading
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, TypeVar

import anyio
from mcp import ClientSession

from .._core import AbortError, AbortSignal, AgentcoreError
from ._errors import MCPServerError

__all__ = ["Connect", "Connection"]

_log = logging.getLogger("agentcore.mcp")

_T = TypeVar("_T")

Connect = Callable[[contextlib.AsyncExitStack], Awaitable[ClientSession]]
"""Opens a transport and a session on the exit stack; returns the session, not initialized."""

CLOSE_TIMEOUT_S = 10.0
"""How long `close()` waits for the thread: the SDK bounds its own shutdown (stdio: stdin
closed, then SIGTERM, then SIGKILL, about 4 s at worst)."""


class Connection:
    """An MCP session on its own event loop thread.

    Thread-safe: any thread may call `request` concurrently, and `close` from any thread
    (more than once). Each `Connection` owns exactly one thread, joined by `close`.
    """

    def __init__(self, connect: Connect, *, name: str, timeout: float | None) -> None:
        self._connect = connect
        self._name = name
        self._timeout = timeout
        self._loop = asyncio.new_event_loop()
        self._ready: concurrent.futures.Future[ClientSession] = concurrent.futures.Future()
        self._stop = asyncio.Event()
        self._scope: anyio.CancelScope | None = None  # the session task's, while it runs
        self._lock = threading.Lock()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name=f"agentcore-mcp {name}",
                                        daemon=True)

    @property
    def thread(self) -> threading.Thread:
        """The loop's thread (for tests and diagnostics)."""
        return self._thread

    def open(self) -> ClientSession:
        """Start the thread, connect and initialize; raise `MCPServerError` if that fails."""
        with self._lock:
            if self._closed:  # by a close() from another thread, before this started
                self._loop.close()
                raise MCPServerError(f"the MCP server {self._name!r} was closed while "
                                     "connecting")
            self._thread.start()
        try:
            return self._ready.result(timeout=self._timeout)
        except concurrent.futures.TimeoutError:
            self.close()
            raise MCPServerError(
                f"the MCP server {self._name!r} did not finish connecting within "
                f"{self._timeout:g} s") from None
        except MCPServerError:
            self.close()
            raise
        except Exception as exc:
            self.close()
            raise MCPServerError(f"could not connect to the MCP server {self._name!r}: "
                                 f"{_describe(exc)}") from exc

    def request(self, make: Callable[[], Coroutine[Any, Any, _T]],
                signal: AbortSignal | None = None) -> _T:
        """Run the coroutine `make()` on the loop and wait for its result.

        An abort of `signal` cancels the request and raises `AbortError` at once. A request
        still unanswered when the connection ends raises `MCPServerError`.
        """
        if signal is not None:
            signal.throw_if_aborted()
        with self._lock:
            if self._closed:
                raise MCPServerError(f"the MCP server {self._name!r} is closed")
            future = asyncio.run_coroutine_threadsafe(make(), self._loop)

        def cancel() -> None:
            future.cancel()

        remove = signal.add_listener(cancel) if signal is not None else None
        try:
            return future.result()
        except concurrent.futures.CancelledError:
            if signal is not None and signal.aborted:
                raise AbortError(f"the call to the MCP server {self._name!r} was cancelled: "
                                 f"{signal.reason!r}" if signal.reason is not None else
                                 f"the call to the MCP server {self._name!r} was cancelled"
                                 ) from None
            raise MCPServerError(f"the MCP server {self._name!r} failed the request: the "
                                 "connection ended during the call") from None
        except AgentcoreError:
            raise
        except Exception as exc:  # the SDK's (connection closed, timeout, error response)
            raise MCPServerError(f"the MCP server {self._name!r} failed the request: "
                                 f"{_describe(exc)}") from exc
        finally:
            if remove is not None:
                remove()

    def close(self) -> None:
        """End the session (and with it the server's process or HTTP session); join the thread.

        Idempotent. Requests still running fail with `MCPServerError`.
        """
        with self._lock:
            first, self._closed = not self._closed, True
            started = self._thread.ident is not None
        if first and started:
            # Queued even if the loop has not started yet; not once it has closed.
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._shutdown)
        if started and self._thread is not threading.current_thread():
            self._thread.join(CLOSE_TIMEOUT_S)
            if self._thread.is_alive():
                _log.warning("the MCP server %r took over %s s to close; its thread is left "
                             "behind", self._name, CLOSE_TIMEOUT_S)

    def _shutdown(self) -> None:
        """On the loop: let the session task close the session, or stop it still connecting.

        Only the `initialize` request is cancelled, by cancelling an anyio scope around it
        (the SDK's scopes may absorb a single `Task.cancel()`, while a cancelled scope stays
        cancelled until the task leaves it). Starting the transport is not: a cancellation
        there could leave a spawned process behind, and it does not wait for the server.
        """
        self._stop.set()
        if self._scope is not None:
            self._scope.cancel()

    def _run(self) -> None:
        loop = self._loop
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self._main())
        finally:
            with self._lock:
                self._closed = True
            # Fail the requests still waiting: a cancelled task cancels its caller's future.
            pending = asyncio.all_tasks(loop)
            for task in pending:
                task.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    async def _main(self) -> None:
        try:
            async with contextlib.AsyncExitStack() as stack:
                if self._stop.is_set():  # closed before this task started
                    return
                session = await self._connect(stack)
                if self._stop.is_set():  # closed while the transport started
                    return
                with anyio.CancelScope() as self._scope:
                    await session.initialize()
                self._scope = None
                if self._stop.is_set():  # closed while initializing
                    return
                self._ready.set_result(session)
                await self._stop.wait()
        except BaseException as exc:  # reported to the caller, or logged: never lost
            if not self._ready.done():
                self._ready.set_exception(exc if isinstance(exc, Exception) else MCPServerError(
                    f"connecting to the MCP server {self._name!r} was interrupted: {exc!r}"))
            elif not isinstance(exc, asyncio.CancelledError):
                _log.warning("the MCP session with %r ended with an error: %s", self._name,
                             _describe(exc))
        finally:
            if not self._ready.done():
                self._ready.set_exception(MCPServerError(
                    f"the MCP server {self._name!r} was closed while connecting"))


def _describe(exc: BaseException) -> str:
    """`exc` as `Type: message`, looking inside the exception groups anyio raises."""
    inner: Sequence[BaseException] = getattr(exc, "exceptions", ())
    while len(inner) == 1:  # an exception group (3.11+, or the backport) of one
        exc = inner[0]
        inner = getattr(exc, "exceptions", ())
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
