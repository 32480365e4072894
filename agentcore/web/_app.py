"""`app(make_agent)`: the ASGI app serving the AG-UI endpoint, the AI SDK's, and the chat page.

Routes: `GET /` the page, and `GET /static/{name}` the vendored scripts it loads; `POST /ag-ui`
a run, streamed back as Server-Sent Events; `GET /ag-ui/threads/{thread_id}` a conversation's
history (what the page shows after a reload); `POST /api/chat` a run for the Vercel AI SDK's
`useChat`, streamed back as its UI message stream (`_ai_sdk.py`), on the same conversations
(the chat id is the thread id); `GET`/`PATCH`/`DELETE /ag-ui/threads[/{thread_id}]` the
conversations (`_conversations`). Every request passes `Guard` first (`_guard`: Host, Origin,
JSON bodies, the token or the application's `auth`); a run's response is an `EventStream`
(`_sse`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib.resources
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence

import attrs
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .._agent import AgentRun
from .._core import AgentBusyError, AgentClosedError, AgentMessage
from ._ai_sdk import DONE, HEADERS, ChatTranslator, encode_chunk
from ._ai_sdk_input import parse_chat_request
from ._body import BadInput, json_error
from ._catalog import MemoryCatalog, ThreadCatalog, title_of
from ._client import answers, offered, open_client_calls
from ._conversations import conversation_routes
from ._events import Translator
from ._guard import Auth, Guard, check_hosts, check_origins
from ._history import history
from ._input import MAX_ID_CHARS, RunRequest, parse_run_input
from ._sse import EventStream
from ._threads import MakeAgent, Thread, Threads

__all__ = ["DEFAULT_MAX_BODY_BYTES", "DEFAULT_MAX_THREADS", "DEFAULT_UPLOAD_TIMEOUT", "app"]

_log = logging.getLogger(__name__)

DEFAULT_MAX_BODY_BYTES = 1_000_000
"""The largest `POST /ag-ui` or `POST /api/chat` body accepted by default (413 beyond)."""

DEFAULT_UPLOAD_TIMEOUT = 30.0
"""How long a request body may take to arrive by default, in seconds (408 beyond)."""

DEFAULT_MAX_THREADS = 1_000
"""How many conversations the app keeps open by default (least recently used idle ones close)."""

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

@attrs.frozen
class _Refusals:
    """How `_start` words a refusal that depends on the protocol (AG-UI's by default)."""

    request: str = "RunAgentInput"
    answer_first: str = "answer their interrupts with 'resume' first"
    nothing_to_answer: str = "'resume' has no interrupt to answer"


_CHAT_REFUSALS = _Refusals(
    "chat request", "answer them with tool approval responses first",
    "the request answers tool approvals that no call waits for")


_STATIC_SCRIPTS = ("marked-18.3.0.umd.js", "purify-3.5.0.min.js")
"""The vendored scripts the page loads (`static/README.md`): their names carry their versions,
so a browser may keep them for good."""

_STATIC_SECURITY = {
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "public, max-age=31536000, immutable",
    "Cross-Origin-Resource-Policy": "same-origin",
}


def _internal_error(request: Request, exc: Exception) -> JSONResponse:
    _log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
    return json_error(500, f"internal error: {type(exc).__name__}")


def _json_errors(
    handler: Callable[[Request], Awaitable[Response]],
) -> Callable[[Request], Awaitable[Response]]:
    """`handler`, with `BadInput` answered as its 4xx and any other failure as a JSON 500.

    Answered here rather than by an exception handler, which Starlette re-raises after
    responding: uvicorn would then drop the keep-alive connection the client reuses. A client
    that leaves while its body uploads gets one line in the log (nobody reads the answer).
    """

    @functools.wraps(handler)
    async def handle(request: Request) -> Response:
        try:
            return await handler(request)
        except BadInput as exc:
            return json_error(exc.status, exc.message)
        except ClientDisconnect:
            _log.info("%s %s: the client left while sending its body", request.method,
                      request.url.path)
            return json_error(400, "the client left while sending its body")
        except Exception as exc:
            return _internal_error(request, exc)

    return handle


def app(make_agent: MakeAgent, *, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        max_threads: int = DEFAULT_MAX_THREADS, allowed_origins: Sequence[str] = (),
        allowed_hosts: Sequence[str] | None = None, token: str | None = None,
        auth: Auth | None = None, upload_timeout: float = DEFAULT_UPLOAD_TIMEOUT,
        catalog: ThreadCatalog | None = None) -> Starlette:
    """An ASGI app serving agents over AG-UI, with the chat page at `/`.

    `POST /ag-ui` takes an AG-UI `RunAgentInput` and streams AG-UI events; `POST /api/chat`
    takes the Vercel AI SDK's `useChat` request and streams its UI message stream (the chat
    `id` is the thread id: both endpoints drive the same conversations); `GET /ag-ui/threads/
    {thread_id}` returns a conversation's history. A client that disconnects aborts its run.

    Safe by default (API §28): a request that changes something (a run, say) from a web page
    of another origin is refused (403), and so is a body that is not JSON (415), so no other
    site's form or script drives the agent; served on a loopback address, a request whose
    `Host` names another site is refused too (403: DNS rebinding).

    Args:
        make_agent: Called with a thread id (AG-UI's `threadId`, the AI SDK's chat `id`) the
            first time the app sees it (on a worker thread), returning that conversation's
            `Agent`; give it a session keyed by the id
            (`SqliteSession(path, session_id=thread_id)`) for conversations that outlive the
            process. The app owns the agents it gets: it closes them (and their sessions, when
            they have a `close`) when it shuts down or drops an idle conversation.
        max_body_bytes: The largest request body accepted (413 beyond).
        max_threads: How many conversations stay open; past it the least recently used idle
            ones are closed (with a session, they reopen on their next request).
        allowed_origins: Origins besides the page's own whose pages may call the endpoints
            (`"https://app.example.com"`); they get CORS headers, preflights included.
        allowed_hosts: `Host` values the app answers besides its own loopback names: needed
            behind a proxy that forwards the public name to an app served on 127.0.0.1 (then
            only these and loopback names pass); served beyond loopback, None accepts any.
        token: A secret every request must carry (`Authorization: Bearer <token>`, or
            `?token=<token>` once: the page then keeps it in an HttpOnly cookie), as Jupyter
            asks; `python -m agentcore web --host 0.0.0.0` makes one up and prints the URL.
        auth: The application's own check, called with each Starlette `Request` (its headers,
            cookies, client); a false result (or an exception) answers 401. It may be async.
        upload_timeout: Seconds a request body may take to arrive (408 beyond).
        catalog: Where the conversations' titles and last activity are kept, for the page's
            sidebar (`GET /ag-ui/threads`): `MemoryCatalog()` (the default) for the process's
            life, `SqliteCatalog(path)` beside the sessions to keep the list across restarts
            (closed by the app at shutdown).

    Returns:
        A Starlette app: mount it in FastAPI/Starlette or serve it with uvicorn.

    Raises:
        TypeError: `make_agent` or `auth` is not callable, a limit is not an int, `token` is
            not a string, or an origin or host list is not a list of strings.
        ValueError: A limit is below 1, `upload_timeout` is not positive, `token` is empty, or
            an origin or host is malformed.
    """
    if not callable(make_agent):
        raise TypeError(f"'make_agent' must be a callable taking a thread id and returning an "
                        f"Agent, got {make_agent!r}")
    for name, value in (("max_body_bytes", max_body_bytes), ("max_threads", max_threads)):
        if type(value) is not int:
            raise TypeError(f"{name!r} must be an int, got {value!r}")
        if value < 1:
            raise ValueError(f"{name!r} must be at least 1, got {value!r}")
    origins, hosts = check_origins(allowed_origins), check_hosts(allowed_hosts)
    if token is not None and not isinstance(token, str):
        raise TypeError(f"'token' must be a string or None, got {type(token).__name__}")
    if token is not None and (not token.strip() or not token.isprintable()):
        raise ValueError("'token' must be a non-empty printable string")
    if auth is not None and not callable(auth):
        raise TypeError(f"'auth' must be a callable taking a Request, got {auth!r}")
    if isinstance(upload_timeout, bool) or not isinstance(upload_timeout, (int, float)):
        raise TypeError(f"'upload_timeout' must be a number of seconds, got {upload_timeout!r}")
    if not upload_timeout > 0:
        raise ValueError(f"'upload_timeout' must be positive, got {upload_timeout!r}")
    if catalog is None:
        catalog = MemoryCatalog()
    elif not isinstance(catalog, ThreadCatalog):
        raise TypeError(f"'catalog' must have the methods of a ThreadCatalog (threads, touch, "
                        f"rename, forget), got {catalog!r}")
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
            return json_error(404, f"no static file {name!r}")
        return Response(scripts[name], media_type="text/javascript; charset=utf-8",
                        headers=_STATIC_SECURITY)

    @_json_errors
    async def run_endpoint(request: Request) -> Response:
        body = await _read_body(request, max_body_bytes, upload_timeout)
        run_request = parse_run_input(body)
        thread = await threads.get(run_request.thread_id)
        thread.starting += 1  # no await since `get`: no eviction can have taken it meanwhile
        try:
            run = await _start(thread, run_request)
        finally:
            thread.starting -= 1
        await note_use(run_request)
        return EventStream(run, Translator(run_request.thread_id, run_request.run_id,
                                            first_position=functools.partial(
                                                thread.first_position, run),
                                            durations=thread.durations,
                                            given=[result.tool_call_id
                                                   for result in run_request.results]))

    async def note_use(request: RunRequest) -> None:
        """Tell the catalog the conversation was used now (titled by its first prompt)."""
        first = next((m.text for m in request.prompt if m.text.strip()), "")
        await asyncio.to_thread(catalog.touch, request.thread_id, title_of(first) or "New chat")

    @_json_errors
    async def chat_endpoint(request: Request) -> Response:
        body = await _read_body(request, max_body_bytes, upload_timeout)
        chat = parse_chat_request(body)
        thread = await threads.get(chat.run.thread_id)
        thread.starting += 1  # as in `run_endpoint`
        try:
            run = await _start(thread, chat.run, _CHAT_REFUSALS)
        finally:
            thread.starting -= 1
        await note_use(chat.run)
        translator = ChatTranslator(chat.message_id, answered=chat.run.approvals or ())
        return EventStream(run, translator, encode=encode_chunk, headers=HEADERS, trailer=DONE)

    @_json_errors
    async def thread_history(request: Request) -> Response:
        thread_id: str = request.path_params["thread_id"]
        if len(thread_id) > MAX_ID_CHARS or not thread_id.isprintable():
            raise BadInput(422, f"threadId must be 1 to {MAX_ID_CHARS} printable characters")
        thread = await threads.find(thread_id)
        if thread is None:
            raise BadInput(404, f"unknown threadId {thread_id!r}: no conversation has it")
        agent = thread.agent
        if agent.session is not None and not thread.busy() and not open_client_calls(agent):
            # other processes may have moved the conversation on (several workers; API §27);
            # not while a client's tool call waits here: a reload would answer it (_client)
            with contextlib.suppress(AgentBusyError):  # a run started meanwhile: it reloaded
                await asyncio.to_thread(thread.agent.reload)
        state = thread.agent.state
        return JSONResponse({"threadId": thread_id, "running": thread.busy(),
                             **history(state.messages, state.pending_approvals,
                                       thread.durations)})

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        return json_error(exc.status_code, exc.detail, exc.headers)

    async def internal_error(request: Request, exc: Exception) -> Response:
        return _internal_error(request, exc)

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await threads.close_all()
            close = getattr(catalog, "close", None)
            if close is not None:
                with contextlib.suppress(Exception):
                    await asyncio.to_thread(close)

    return Starlette(
        routes=[Route("/", chat_page, methods=["GET"]),
                Route("/static/{name}", static_script, methods=["GET"]),
                Route("/ag-ui", run_endpoint, methods=["POST"]),
                *conversation_routes(threads, catalog, MAX_ID_CHARS, _read_body,
                                     _json_errors),
                Route("/ag-ui/threads/{thread_id:path}", thread_history, methods=["GET"]),
                Route("/api/chat", chat_endpoint, methods=["POST"])],
        exception_handlers={HTTPException: http_error, Exception: internal_error},
        lifespan=lifespan,
        middleware=[Middleware(
            Guard, allowed_origins=origins, allowed_hosts=hosts,
            token=token, auth=auth)],
    )


async def _read_body(request: Request, limit: int,
                     timeout: float = DEFAULT_UPLOAD_TIMEOUT) -> bytes:
    """The request body: 413 once it exceeds `limit` bytes, 408 past `timeout` seconds.

    The timeout ends a stalled upload (a client that sends its headers and then little or
    nothing), which would otherwise hold its connection and its task for ever.
    """
    too_big = BadInput(413, f"the body is larger than {limit} bytes")
    length = request.headers.get("content-length", "")
    if length.isdigit() and int(length) > limit:
        raise too_big
    chunks = []
    size = 0

    async def read() -> None:
        nonlocal size
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise too_big
            chunks.append(chunk)

    try:
        await asyncio.wait_for(read(), timeout)
    except TimeoutError:
        raise BadInput(408, f"the body did not arrive within {timeout:g} s") from None
    return b"".join(chunks)


async def _start(thread: Thread, request: RunRequest,
                 refusals: _Refusals = _Refusals()) -> AgentRun:
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
            with offered(agent, request):
                run = agent.continue_(approvals=request.approvals)
        else:  # open calls of the client's tools are answered first (_client)
            prompt: list[AgentMessage] = [*answers(agent, request), *request.prompt]
            with offered(agent, request):
                run = agent.prompt(prompt)
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
                           f"{refusals.nothing_to_answer}") from None
        if request.approvals is None and pending:
            raise BadInput(409, f"{len(pending)} tool call(s) on thread {thread.thread_id!r} "
                           f"wait for approval: {refusals.answer_first}") from None
        raise BadInput(422, f"invalid {refusals.request}: {exc}") from None
    thread.run = run
    return run
