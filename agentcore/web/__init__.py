"""The web: agents over AG-UI and the Vercel AI SDK's protocol, and a chat page (API §21, §28).

    from agentcore import Agent
    from agentcore.web import app

    asgi = app(lambda thread_id: Agent(model=model, tools=tools))
    # uvicorn module:asgi, or fastapi_app.mount("/agent", asgi)

`app(make_agent)` serves `POST /ag-ui` (an AG-UI `RunAgentInput` in, the run's events out as
Server-Sent Events; a client that disconnects aborts its run), `POST /api/chat` (the same for
the AI SDK's `useChat`: its request in, its UI message stream out), `GET /ag-ui/threads/{id}`
(a conversation's history; `GET /ag-ui/threads` lists them, `PATCH`/`DELETE` rename and
delete one, from a `ThreadCatalog`) and the chat page at `/`: one static file, no build step,
no CDN. Each thread id (AG-UI's `threadId`, `useChat`'s chat `id`) gets its own `Agent` from
`make_agent`, whichever endpoint drives it. An AG-UI request's own `tools` (a client's
frontend tools, as CopilotKit sends them) are offered to the model for its run: a call of one
ends the run with the call left for the client (`pendingToolCallIds`), whose next request
brings its result as a tool message; its `context` reaches the model as a note after the
system prompt, for that run only. `ag_ui_events(run)` is the AG-UI translation on its own,
for serving an `AgentRun` some other way. `python -m agentcore web` runs the page on the
offline demo model.

Needs the `web` extra (`pip install 'agentcore[web]'`: ag-ui-protocol, Starlette, uvicorn);
`import agentcore` never imports it, only this module does.
"""

from __future__ import annotations

try:
    import ag_ui.core as _ag_ui
    import starlette as _starlette
except ImportError as exc:
    raise ImportError(
        "agentcore.web needs the 'web' extra: pip install 'agentcore[web]'") from exc

from ._app import DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_THREADS, DEFAULT_UPLOAD_TIMEOUT, app
from ._catalog import MemoryCatalog, SqliteCatalog, ThreadCatalog, ThreadInfo
from ._events import APPROVAL_EVENT, APPROVAL_REASON, ag_ui_events

del _ag_ui, _starlette

__all__ = ["APPROVAL_EVENT", "APPROVAL_REASON", "DEFAULT_MAX_BODY_BYTES", "DEFAULT_MAX_THREADS",
           "DEFAULT_UPLOAD_TIMEOUT", "MemoryCatalog", "SqliteCatalog", "ThreadCatalog",
           "ThreadInfo", "ag_ui_events", "app"]
