"""The AG-UI endpoint under load, on a real uvicorn server: many streams at once, and clients
that leave mid-stream.

Each test serves `agentcore.web.app` on uvicorn (a thread of this process, port 0) with agents
on the offline model (`register_offline`) and the demo's calculator and clock, and talks to it
with httpx's asyncio client over real sockets. Every stream's events are validated with the
AG-UI package's own models. After the server stops, no thread (the conftest check) and no
socket of this process is left.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import threading
import time
from collections.abc import Iterator
from typing import Any

import attrs
import pytest
from _internals import SYSTEM_PROMPT, calculator_tool, clock_tool, register_offline

from agentcore import Agent, AssistantMessage, StopReason

ag_ui_core = pytest.importorskip("ag_ui.core", reason="ag-ui-protocol is not installed (web extra)")
uvicorn = pytest.importorskip("uvicorn", reason="uvicorn is not installed (web extra)")
httpx = pytest.importorskip("httpx", reason="httpx is not installed (the test extra)")
pydantic = pytest.importorskip("pydantic")

from uvicorn_thread import ThreadServer  # noqa: E402  (after the extra's check)

from agentcore.web import app  # noqa: E402

pytestmark = pytest.mark.slow

PROMPT = "What is 6 * 7?"
EVENT = pydantic.TypeAdapter(ag_ui_core.Event)
SOCKET_GRACE_S = 2.0
START_TIMEOUT_S = 10.0


def _sockets() -> set[str]:
    """The sockets this process has open now: the targets of its fd links (`socket:[inode]`)."""
    found = set()
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # an fd closed while we look
            target = os.readlink(f"/proc/self/fd/{fd}")
            if target.startswith("socket:"):
                found.add(target)
    return found


@attrs.define
class Served:
    """A running server: its base URL and the agents `make_agent` made, by thread id."""

    url: str
    agents: dict[str, Agent]


@contextlib.contextmanager
def serving(tokens_per_second: float | None) -> Iterator[Served]:
    """`app(make_agent)` on uvicorn in a thread; on exit stopped, joined, and checked to have
    closed every socket it opened (the client's included: close it inside the block)."""
    before = _sockets()
    faux = register_offline(tokens_per_second)
    agents: dict[str, Agent] = {}
    lock = threading.Lock()

    def make_agent(thread_id: str) -> Agent:
        agent = Agent(faux.get_model(), system_prompt=SYSTEM_PROMPT,
                      tools=[calculator_tool(), clock_tool()])
        with lock:
            assert thread_id not in agents, f"make_agent called twice for {thread_id!r}"
            agents[thread_id] = agent
        return agent

    config = uvicorn.Config(app(make_agent), host="127.0.0.1", port=0, log_level="warning",
                            lifespan="on")
    server = ThreadServer(config)
    server.start()
    try:
        assert server.ready.wait(START_TIMEOUT_S), "the server did not start"
        assert server.started, "the server failed to start"
        port = server.servers[0].sockets[0].getsockname()[1]
        yield Served(f"http://127.0.0.1:{port}", agents)
    finally:
        try:
            server.stop(15.0)
        finally:
            faux.unregister()
    deadline = time.monotonic() + SOCKET_GRACE_S
    while (left := _sockets() - before) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not left, f"{len(left)} socket(s) left open after the server stopped"


def _run_input(thread_id: str, text: str = PROMPT) -> dict[str, Any]:
    return {"threadId": thread_id, "runId": f"run-{thread_id}",
            "messages": [{"id": f"msg-{thread_id}", "role": "user", "content": text}],
            "tools": [], "context": [], "state": None, "forwardedProps": None}


@attrs.define
class Stream:
    """What a client saw of one stream: status, content type, events and when they came."""

    status: int = 0
    content_type: str = ""
    events: list[Any] = attrs.field(factory=list)
    opened_at: float = 0.0
    first_at: float = 0.0
    closed_at: float = 0.0


async def _stream(client: Any, url: str, thread_id: str, *, keep: int | None = None,
                  text: str = PROMPT) -> Stream:
    """POST one run and read its events, each validated by AG-UI's models; with `keep`,
    close the connection after that many events (a client that goes away)."""
    seen = Stream(opened_at=time.monotonic())
    async with client.stream("POST", f"{url}/ag-ui", json=_run_input(thread_id, text),
                             headers={"Accept": "text/event-stream"}) as response:
        seen.status = response.status_code
        seen.content_type = response.headers.get("content-type", "")
        async for line in response.aiter_lines():
            if not line.startswith("data: "):
                assert line == "" or line.startswith(":"), f"not an SSE line: {line!r}"
                continue
            seen.first_at = seen.first_at or time.monotonic()
            seen.events.append(EVENT.validate_python(json.loads(line[len("data: "):])))
            if keep is not None and len(seen.events) >= keep:
                break
    seen.closed_at = time.monotonic()
    return seen


def _streams(url: str, thread_ids: list[str], **kwargs: Any) -> list[Stream]:
    """All the streams at once, from one asyncio client (its pool as wide as the streams)."""

    async def main() -> list[Stream]:
        limits = httpx.Limits(max_connections=len(thread_ids) + 10,
                              max_keepalive_connections=len(thread_ids) + 10)
        async with httpx.AsyncClient(limits=limits, timeout=30.0) as client:
            return await asyncio.gather(*(_stream(client, url, t, **kwargs) for t in thread_ids))

    return asyncio.run(main())


def _check_complete(seen: Stream, thread_id: str) -> None:
    """A whole successful run: started, a calculator call answered "42", the answer, finished."""
    assert seen.status == 200
    assert seen.content_type.startswith("text/event-stream")
    types = [e.type for e in seen.events]
    assert types[0] == ag_ui_core.EventType.RUN_STARTED, types
    assert types[-1] == ag_ui_core.EventType.RUN_FINISHED, types
    assert types.count(ag_ui_core.EventType.RUN_STARTED) == 1
    assert types.count(ag_ui_core.EventType.RUN_FINISHED) == 1
    assert ag_ui_core.EventType.RUN_ERROR not in types
    first, last = seen.events[0], seen.events[-1]
    assert (first.thread_id, first.run_id) == (thread_id, f"run-{thread_id}")
    assert (last.thread_id, last.run_id) == (thread_id, f"run-{thread_id}")
    assert last.outcome is not None
    assert last.outcome.type == "success"
    starts = [e for e in seen.events if e.type == ag_ui_core.EventType.TOOL_CALL_START]
    assert [e.tool_call_name for e in starts] == ["calculator"]
    args = "".join(e.delta for e in seen.events if e.type == ag_ui_core.EventType.TOOL_CALL_ARGS
                   and e.tool_call_id == starts[0].tool_call_id)
    assert json.loads(args) == {"expression": "6 * 7"}
    results = [e for e in seen.events if e.type == ag_ui_core.EventType.TOOL_CALL_RESULT]
    assert [(r.tool_call_id, r.content) for r in results] == [(starts[0].tool_call_id, "42")]
    text = "".join(e.delta for e in seen.events
                   if e.type == ag_ui_core.EventType.TEXT_MESSAGE_CONTENT)
    assert text.endswith("The calculator says 6 * 7 = 42."), text


def _most_at_once(streams: list[Stream]) -> int:
    """The most streams open at the same moment (from the request's start to the body's end)."""
    edges = sorted([(s.opened_at, 1) for s in streams] + [(s.closed_at, -1) for s in streams])
    most = now = 0
    for _, step in edges:
        now += step
        most = max(most, now)
    return most


def test_app_serves_200_streams_at_once() -> None:
    n = 200
    thread_ids = [f"load-{i:03d}" for i in range(n)]
    with serving(tokens_per_second=100.0) as served:
        streams = _streams(served.url, thread_ids)
        for thread_id, seen in zip(thread_ids, streams, strict=True):
            _check_complete(seen, thread_id)
        assert _most_at_once(streams) >= n * 3 // 4, _most_at_once(streams)
        assert sorted(served.agents) == thread_ids  # one agent per threadId, made once
        for agent in served.agents.values():
            assert agent.wait_for_idle(5.0)
            last = agent.messages[-1]
            assert isinstance(last, AssistantMessage)
            assert last.stop_reason == StopReason.STOP
            assert last.text == "The calculator says 6 * 7 = 42."


def test_clients_that_leave_abort_their_runs_and_the_server_stays_healthy() -> None:
    n = 20
    thread_ids = [f"leave-{i:02d}" for i in range(n)]
    # paced at 20 tokens a second, the first reply alone streams for over half a second: each
    # client leaves during it, after RUN_STARTED, TEXT_MESSAGE_START and one content event
    with serving(tokens_per_second=20.0) as served:
        streams = _streams(served.url, thread_ids, keep=3)
        for seen in streams:
            assert seen.status == 200
            assert [e.type for e in seen.events] == [
                ag_ui_core.EventType.RUN_STARTED, ag_ui_core.EventType.TEXT_MESSAGE_START,
                ag_ui_core.EventType.TEXT_MESSAGE_CONTENT]
        for thread_id in thread_ids:
            agent = served.agents[thread_id]
            assert agent.wait_for_idle(START_TIMEOUT_S), f"{thread_id}: still running"
            last = agent.messages[-1]
            assert isinstance(last, AssistantMessage), last
            # aborted (by its client's leaving: nothing else aborts it) during the first reply,
            # before its tool call
            assert last.stop_reason == StopReason.ABORTED, last
            assert not last.tool_calls

        # healthy: a new conversation and one of the aborted ones both run to the end
        again = _streams(served.url, ["after-leave", thread_ids[0]])
        _check_complete(again[0], "after-leave")
        _check_complete(again[1], thread_ids[0])
        history = httpx.get(f"{served.url}/ag-ui/threads/{thread_ids[1]}", timeout=10.0)
        assert history.status_code == 200
        assert history.json()["running"] is False
