"""The conversations' routes: list, rename, delete (API §28, the page's sidebar).

- `GET /ag-ui/threads`: `{"threads": [{"threadId", "title", "updatedAt", "running"}]}`, the
  most recently used first (`updatedAt` in ms since the epoch), from the app's catalog.
- `PATCH /ag-ui/threads/{id}` with `{"title": "..."}`: renames it (200, the new entry).
- `DELETE /ag-ui/threads/{id}`: aborts its run if one goes (and waits for it to end), clears
  its transcript (the session's too) and forgets it: 204. A run that starts on it meanwhile
  makes it 409; an id nobody knows is 404.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .._core import AgentBusyError
from ._body import BadInput, load_json
from ._catalog import MAX_TITLE_CHARS, ThreadCatalog, ThreadInfo
from ._threads import Threads

__all__ = ["DELETE_GRACE_SECONDS", "conversation_routes"]

DELETE_GRACE_SECONDS = 10.0
"""How long a delete waits for the aborted run of its conversation to end (409 beyond)."""

MAX_PATCH_BYTES = 10_000
"""The largest rename body accepted."""

Handler = Callable[[Request], Awaitable[Response]]


def conversation_routes(threads: Threads, catalog: ThreadCatalog, max_id_chars: int,
                        read_body: Callable[[Request, int], Awaitable[bytes]],
                        json_errors: Callable[[Handler], Handler]) -> list[Route]:
    """The three routes above, for the app's registry `threads` and its `catalog`."""

    def thread_id_of(request: Request) -> str:
        thread_id: str = request.path_params["thread_id"]
        if not thread_id.strip() or len(thread_id) > max_id_chars \
                or not thread_id.isprintable():
            raise BadInput(422, f"threadId must be 1 to {max_id_chars} printable characters")
        return thread_id

    def entry(info: ThreadInfo) -> dict[str, object]:
        return {"threadId": info.thread_id, "title": info.title, "updatedAt": info.updated_ms,
                "running": threads.running(info.thread_id)}

    @json_errors
    async def list_threads(request: Request) -> Response:
        listed = await asyncio.to_thread(catalog.threads)
        return JSONResponse({"threads": [entry(info) for info in listed]})

    @json_errors
    async def rename(request: Request) -> Response:
        thread_id = thread_id_of(request)
        data = load_json(await read_body(request, MAX_PATCH_BYTES))
        title = data.get("title") if isinstance(data, dict) else None
        if not isinstance(title, str) or not title.strip() or len(title) > MAX_TITLE_CHARS \
                or not title.isprintable():
            raise BadInput(422, f"'title' must be 1 to {MAX_TITLE_CHARS} printable characters")
        if not await asyncio.to_thread(catalog.rename, thread_id, title.strip()):
            raise BadInput(404, f"unknown threadId {thread_id!r}: no conversation has it")
        listed = await asyncio.to_thread(catalog.threads)
        return JSONResponse(next(entry(i) for i in listed if i.thread_id == thread_id))

    @json_errors
    async def delete(request: Request) -> Response:
        thread_id = thread_id_of(request)
        thread = await threads.find(thread_id)  # opened if stored, None if it has no messages
        forgotten = await asyncio.to_thread(catalog.forget, thread_id)
        if thread is None:
            if not forgotten:
                raise BadInput(404, f"unknown threadId {thread_id!r}: no conversation has it")
            return Response(status_code=204)
        run = thread.run
        if run is not None and not run.done():
            run.abort()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(run.wait_async(), DELETE_GRACE_SECONDS)
        try:
            await asyncio.to_thread(thread.agent.reset)  # the transcript, and the session's
        except AgentBusyError:
            raise BadInput(409, f"thread {thread_id!r} is running: stop it, then delete it "
                           "again") from None
        await threads.drop(thread)
        return Response(status_code=204)

    return [Route("/ag-ui/threads", list_threads, methods=["GET"]),
            Route("/ag-ui/threads/{thread_id:path}", rename, methods=["PATCH"]),
            Route("/ag-ui/threads/{thread_id:path}", delete, methods=["DELETE"])]
