"""The AG-UI app of the multi-worker test: `uvicorn --workers 2 --factory web_workers_app:make_app`.

Each worker process serves `agentcore.web.app` with agents whose sessions are in the store
named by `AGENTCORE_TEST_STORE` (a SQLite file or a `postgresql://` URL), one session per
thread id. The scripted model calls the `hold` tool once per user message, then answers
`answered <n>`, n being how many user messages it saw (so a reply shows whether its worker
knew the whole conversation). `hold` waits until the file `AGENTCORE_TEST_GATE` exists,
keeping its run (and the session's lease) going until the test lets it end. Every response
carries the header `x-worker-pid`, so that the test knows which worker answered.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import Any

import agentcore as ac
from agentcore.testing import scripted_model, tool_call
from agentcore.web import app

_models = contextlib.ExitStack()


def reply(context: ac.Context, options: Any, model: ac.Model) -> Any:
    users = sum(isinstance(m, ac.UserMessage) for m in context.messages)
    if isinstance(context.messages[-1], ac.UserMessage):
        return tool_call("hold", {}, id=f"hold-{users}")
    return f"answered {users}"


def hold_tool(gate: Path) -> ac.AgentTool:
    def execute(call_id: str, args: dict[str, Any], signal: Any, on_update: Any,
                ) -> ac.AgentToolResult:
        deadline = time.monotonic() + 60
        while not gate.exists() and time.monotonic() < deadline and not signal.aborted:
            time.sleep(0.01)
        return ac.AgentToolResult([ac.TextContent("held")])

    return ac.AgentTool("hold", "Hold.", {"type": "object", "properties": {}}, execute)


def open_store(spec: str, session_id: str) -> Any:
    if spec.startswith("postgresql://"):
        from agentcore.sessions import PostgresSession

        return PostgresSession(spec, session_id)
    return ac.SqliteSession(spec, session_id)


def make_app() -> Any:
    store, gate = os.environ["AGENTCORE_TEST_STORE"], Path(os.environ["AGENTCORE_TEST_GATE"])
    model = _models.enter_context(scripted_model([reply] * 100)).model

    def make_agent(thread_id: str) -> ac.Agent:
        return ac.Agent(model, tools=[hold_tool(gate)], session=open_store(store, thread_id))

    inner = app(make_agent)
    pid = str(os.getpid()).encode()

    async def with_pid(scope: Any, receive: Any, send: Any) -> None:
        async def send_with_pid(message: Any) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []),
                                                  (b"x-worker-pid", pid)]}
            await send(message)

        await inner(scope, receive, send_with_pid)

    return with_pid
