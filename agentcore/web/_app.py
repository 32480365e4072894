"""`app(make_agent)`: the ASGI app serving the AG-UI endpoint and the chat page.

Routes: `GET /` the page, and `GET /static/{name}` the vendored scripts it loads; `POST /ag-ui`
a run, streamed back as Server-Sent Events; `GET /ag-ui/threads/{thread_id}` a conversation's
history (what the page shows after a reload).
The run itself goes on the agent's own background thread as always; the endpoint only reads
its events (`async for`, never blocking the event loop), translates and sends them. A client
that goes away is noticed by a task waiting on the connection, which aborts the run at once;
the endpoint then waits for the run to end, so the agent is idle (and its session holds the
aborted reply) before the next request on that thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib.resources
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, MutableMapping
from typing import Any

import ag_ui.core as ag
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .._agent import AgentRun
from .._core import AgentBusyError, AgentClosedError
from ._events import Translator
from ._history import history
from ._input import MAX_ID_CHARS, BadInput, RunRequest, parse_run_input
from ._threads import MakeAgent, Thread, Threads

__all__ = ["DEFAULT_MAX_BODY_BYTES", "DEFAULT_MAX_THREADS", "app"]

_log = logging.getLogger(__name__)

DEFAULT_MAX_BODY_BYTES = 1_000_000
"""The largest `POST /ag-ui` body accepted by default (413 beyond)."""

DEFAULT_MAX_THREADS = 1_000
"""How many conversations the app keeps open by default (least recently used idle ones close)."""

HEARTBEAT_SECONDS = 15.0
"""An SSE comment goes out this often while a run streams, so proxies keep the stream open."""

ABORT_GRACE_SECONDS = 5.0
"""How long a new request waits for a thread's aborted run to wind down before a 409."""

_PAGE_SECURITY = {
    # the page is one file with inline script and style, plus the vendored scripts it loads
    # from this server (`GET /static/{name}`); it may talk to this server only
    "Content-Security-Policy": "default-src 'none'; script-src 'self' 'unsafe-inline'; "
    "style-src 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; "
    "form-action 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-cache",
}

_STATIC_SCRIPTS = ("marked-18.3.0.umd.js", "purify-3.5.0.min.js")
"""The vendored scripts the page loads (`static/README.md`): their names carry their versions,
so a browser may keep them for good."""

_STATIC_SECURITY = {
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "public, max-age=31536000, immutable",
    "Cross-Origin-Resource-Policy": "same-origin",
}

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


def _error(status: int, message: str, headers: Mapping[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=headers)


def _internal_error(request: Request, exc: Exception) -> JSONResponse:
    _log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
    return _error(500, f"internal error: {type(exc).__name__}")


def _json_errors(
    handler: Callable[[Request], Awaitable[Response]],
) -> Callable[[Request], Awaitable[Response]]:
    """`handler`, with `BadInput` answered as its 4xx and any other failure as a JSON 500.

    Answered here rather than by an exception handler, which Starlette re-raises after
    responding: uvicorn would then drop the keep-alive connection the client reuses.
    """

    @functools.wraps(handler)
    async def handle(request: Request) -> Response:
        try:
            return await handler(request)
        except BadInput as exc:
            return _error(exc.status, exc.message)
        except Exception as exc:
            return _internal_error(request, exc)

    return handle


def app(make_agent: MakeAgent, *, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        max_threads: int = DEFAULT_MAX_THREADS) -> Starlette:
    """An ASGI app serving agents over AG-UI, with the chat page at `/`.

    Args:
        make_agent: Called with an AG-UI `threadId` the first time the app sees it (on a worker
            thread), returning that conversation's `Agent`; give it a session keyed by the id
            (`SqliteSession(path, session_id=thread_id)`) for conversations that outlive the
            process. The app owns the agents it gets: it closes them (and their sessions, when
            they have a `close`) when it shuts down or drops an idle conversation.
        max_body_bytes: The largest request body accepted (413 beyond).
        max_threads: How many conversations stay open; past it the least recently used idle
            ones are closed (with a session, they reopen on their next request).

    Returns:
        A Starlette app: mount it in FastAPI/Starlette or serve it with uvicorn.

    Raises:
        TypeError: `make_agent` is not callable, or a limit is not an int.
        ValueError: A limit is below 1.
    """
    if not callable(make_agent):
        raise TypeError(f"'make_agent' must be a callable taking a thread id and returning an "
                        f"Agent, got {make_agent!r}")
    for name, value in (("max_body_bytes", max_body_bytes), ("max_threads", max_threads)):
        if type(value) is not int:
            raise TypeError(f"{name!r} must be an int, got {value!r}")
        if value < 1:
            raise ValueError(f"{name!r} must be at least 1, got {value!r}")
    threads = Threads(make_agent, max_threads)
    files = importlib.resources.files(__package__)
    page = files.joinpath("page.html").read_bytes()
    scripts = {name: files.joinpath("static").joinpath(name).read_bytes()
               for name in _STATIC_SCRIPTS}

    async def chat_page(request: Request) -> Response:
        return Response(page, media_type="text/html; charset=utf-8", headers=_PAGE_SECURITY)

    async def static_script(request: Request) -> Response:
        name: str = request.path_params["name"]
        if name not in scripts:
            return _error(404, f"no static file {name!r}")
        return Response(scripts[name], media_type="text/javascript; charset=utf-8",
                        headers=_STATIC_SECURITY)

    @_json_errors
    async def run_endpoint(request: Request) -> Response:
        body = await _read_body(request, max_body_bytes)
        run_request = parse_run_input(body)
        thread = await threads.get(run_request.thread_id)
        thread.starting += 1  # no await since `get`: no eviction can have taken it meanwhile
        try:
            run = await _start(thread, run_request)
        finally:
            thread.starting -= 1
        return _EventStream(run, Translator(run_request.thread_id, run_request.run_id))

    @_json_errors
    async def thread_history(request: Request) -> Response:
        thread_id: str = request.path_params["thread_id"]
        if len(thread_id) > MAX_ID_CHARS or not thread_id.isprintable():
            raise BadInput(422, f"threadId must be 1 to {MAX_ID_CHARS} printable characters")
        thread = await threads.find(thread_id)
        if thread is None:
            raise BadInput(404, f"unknown threadId {thread_id!r}: no conversation has it")
        if thread.agent.session is not None and not thread.busy():
            # other processes may have moved the conversation on (several workers; API §27)
            with contextlib.suppress(AgentBusyError):  # a run started meanwhile: it reloaded
                await asyncio.to_thread(thread.agent.reload)
        state = thread.agent.state
        return JSONResponse({"threadId": thread_id, "running": thread.busy(),
                             **history(state.messages, state.pending_approvals)})

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        return _error(exc.status_code, exc.detail, exc.headers)

    async def internal_error(request: Request, exc: Exception) -> Response:
        return _internal_error(request, exc)

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await threads.close_all()

    return Starlette(
        routes=[Route("/", chat_page, methods=["GET"]),
                Route("/static/{name}", static_script, methods=["GET"]),
                Route("/ag-ui", run_endpoint, methods=["POST"]),
                Route("/ag-ui/threads/{thread_id:path}", thread_history, methods=["GET"])],
        exception_handlers={HTTPException: http_error, Exception: internal_error},
        lifespan=lifespan,
    )


async def _read_body(request: Request, limit: int) -> bytes:
    """The request body, refused with 413 as soon as it is known to exceed `limit` bytes."""
    too_big = BadInput(413, f"the body is larger than {limit} bytes")
    length = request.headers.get("content-length", "")
    if length.isdigit() and int(length) > limit:
        raise too_big
    chunks = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise too_big
        chunks.append(chunk)
    return b"".join(chunks)


async def _start(thread: Thread, request: RunRequest) -> AgentRun:
    """Start the run `request` asks for on `thread`'s agent, or say why not (`BadInput`)."""
    previous = thread.run
    if previous is not None and not previous.done() and previous.signal.aborted:
        # a stopped run winds down within moments: let the next prompt wait for it
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(previous.wait_async(), ABORT_GRACE_SECONDS)
    agent = thread.agent
    try:  # on the event loop: starting a run takes a thread start (about 0.3 ms), while a
        # hop through a worker thread can wait for the GIL behind every run going on
        if request.approvals is not None:
            run = agent.continue_(approvals=request.approvals)
        else:
            run = agent.prompt(request.prompt)
    except AgentBusyError:  # a run of this process, or of another (the session's lease)
        raise BadInput(409, f"thread {thread.thread_id!r} is running: wait for its run to "
                       "finish, or stop it") from None
    except AgentClosedError:
        raise BadInput(503, f"thread {thread.thread_id!r} is closing; try again") from None
    except (TypeError, ValueError) as exc:
        # asked after the call: with a shared session, the call loaded what other
        # processes stored, so this is the conversation as it is now (API §27)
        pending = agent.state.pending_approvals
        if request.approvals is not None and not pending:
            raise BadInput(409, f"nothing on thread {thread.thread_id!r} waits for approval: "
                           "'resume' has no interrupt to answer") from None
        if request.approvals is None and pending:
            raise BadInput(409, f"{len(pending)} tool call(s) on thread {thread.thread_id!r} "
                           "wait for approval: answer their interrupts with 'resume' first"
                           ) from None
        raise BadInput(422, f"invalid RunAgentInput: {exc}") from None
    thread.run = run
    return run


class _EventStream(Response):
    """The SSE response of one run: its AG-UI events, aborting the run if the client leaves.

    Two tasks share the work: this one reads the run and translates its events into a
    buffer, a writer sends whatever the buffer holds whenever the reader waits for news. The
    events a run produced while the event loop was busy elsewhere (under load, many at a time)
    thus go out in one write, not one write each.
    """

    def __init__(self, run: AgentRun, translator: Translator) -> None:
        super().__init__(media_type="text/event-stream", headers={
            "Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
        self.raw_headers = [(k, v) for k, v in self.raw_headers if k != b"content-length"]
        self.run = run
        self.translator = translator
        self.gone = False  # the client left (or a write failed): nothing more is sent
        self._buffer = bytearray()
        self._ready = asyncio.Event()  # the buffer has something, or the stream is over
        self._over = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": self.status_code,
                    "headers": self.raw_headers})
        writer = asyncio.create_task(self._writer(send))
        watcher = asyncio.create_task(self._watch(receive))
        heartbeat = asyncio.create_task(self._heartbeat())
        try:
            self._put(self.translator.start())
            async for event in self.run:
                if self.gone:
                    break
                out = self.translator.feed(event)
                if out:
                    self._put(out)
            if not self.gone:
                self._put(self.translator.finish(self.run))
        except Exception as exc:  # a translation that failed: say so, end the stream
            _log.exception("streaming the run failed")
            with contextlib.suppress(Exception):
                self._put(self.translator.error(f"streaming failed: {exc}"))
        finally:
            heartbeat.cancel()
            watcher.cancel()
            self._over = True
            self._ready.set()
            with contextlib.suppress(Exception):
                await writer  # the last events go out before the body ends
            if self.gone or not self.run.done():
                self.run.abort()
            with contextlib.suppress(asyncio.CancelledError):
                await self.run.wait_async()  # the agent is idle before the next request
        if not self.gone:
            with contextlib.suppress(Exception):
                await send({"type": "http.response.body", "body": b"", "more_body": False})

    def _put(self, events: list[ag.BaseEvent]) -> None:
        for event in events:
            self._buffer += b"data: " + event.model_dump_json(by_alias=True).encode() + b"\n\n"
        self._ready.set()

    async def _writer(self, send: Send) -> None:
        """Send what the buffer holds each time it fills, until the stream is over."""
        while True:
            await self._ready.wait()
            self._ready.clear()
            if self._buffer and not self.gone:
                body = bytes(self._buffer)
                self._buffer.clear()
                try:
                    await send({"type": "http.response.body", "body": body, "more_body": True})
                except Exception:  # the client is gone: the reader stops at its next event
                    self._gone()
            if self._over and (not self._buffer or self.gone):
                return

    async def _watch(self, receive: Receive) -> None:
        """Wait for the client to disconnect; then abort the run (the reader sees it)."""
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                self._gone()
                return

    async def _heartbeat(self) -> None:
        while True:
            await asyncio.sleep(HEARTBEAT_SECONDS)
            if not self._buffer:
                self._buffer += b": heartbeat\n\n"
                self._ready.set()

    def _gone(self) -> None:
        self.gone = True
        self._buffer.clear()
        self.run.abort()
