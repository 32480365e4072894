"""`agentcore.web.app(make_agent)` over real HTTP (API §21).

Each test serves the app with uvicorn on a thread of its own (port 0) and talks to it with
`requests`, as a browser's `fetch` would: runs streamed as Server-Sent Events, history, per-thread
agents, approvals answered with `resume`, JSON errors for bad input, a client that leaves in the
middle of a reply, sessions, eviction and shutdown. The model is the faux provider driven by
`brain`, which answers from the conversation, so concurrent threads never depend on the order
of a shared queue.
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import hashlib
import http.client
import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

pytest.importorskip("ag_ui")
pytest.importorskip("uvicorn")

import ag_ui.core as ag
import pydantic
import requests
import uvicorn
from _internals import web_sse
from approval_tools import Ran
from starlette.applications import Starlette
from uvicorn_thread import ThreadServer

import agentcore as ac
from agentcore.providers.faux import (
    FauxProvider,
    faux_assistant_message,
    faux_tool_call,
    register_faux_provider,
)
from agentcore.sessions import SqliteSession
from agentcore.web import app

WAIT = 10.0
EVENT = pydantic.TypeAdapter(ag.Event)
MESSAGE = pydantic.TypeAdapter(ag.Message)
CSP = ("default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'unsafe-inline'; "
       "connect-src 'self'; img-src 'self' data:")


# --- the model and the agents ----------------------------------------------------------------


def brain(context: ac.Context, options: ac.StreamOptions, model: ac.Model,
          ) -> ac.AssistantMessage:
    """The faux model's reply to the conversation so far.

    After tool results: `done: <their texts>`. To a prompt `rm a b` (or `ls`, `fail`): a call of
    that tool per word, with id `rm-a`...; `long N`: N words; anything else: `echo <n>: <text>`,
    n counting the user messages the model was shown (so a test sees the conversation go on).
    """
    last = context.messages[-1]
    if isinstance(last, ac.ToolResultMessage):
        results = []
        for message in reversed(context.messages):
            if not isinstance(message, ac.ToolResultMessage):
                break
            results.insert(0, message.text)
        return faux_assistant_message("done: " + "; ".join(results))
    text = last.text if isinstance(last, ac.UserMessage) else ""
    words = text.split()
    if words and words[0] in ("rm", "ls", "fail"):
        return faux_assistant_message([faux_tool_call(words[0], {"path": w}, id=f"{words[0]}-{w}")
                                       for w in words[1:]])
    if words and words[0] == "long":
        return faux_assistant_message(" ".join(["word"] * int(words[1])))
    users = sum(isinstance(m, ac.UserMessage) for m in context.messages)
    return faux_assistant_message(f"echo {users}: {text}")


def make_tools(ran: Ran) -> list[ac.AgentTool]:
    """`rm` (needs approval), `ls` and `fail` (raises); each records the calls that ran."""

    def tool(name: str, requires_approval: bool = False) -> ac.AgentTool:
        def execute(call_id: str, args: Any, signal: ac.AbortSignal, on_update: Any,
                    ) -> ac.AgentToolResult:
            ran.add(call_id)
            if name == "fail":
                raise OSError(f"cannot touch {args['path']}")
            return ac.AgentToolResult([ac.TextContent(f"{name} {args['path']} ok")])

        return ac.AgentTool(name, f"The {name} tool.", {"type": "object"}, execute,
                            requires_approval=requires_approval)

    return [tool("rm", True), tool("ls"), tool("fail")]


class Maker:
    """A `make_agent` recording each call and the agents it made (by thread id)."""

    def __init__(self, model: ac.Model, session_path: Path | None = None) -> None:
        self.model = model
        self.session_path = session_path
        self.ran = Ran()
        self.calls: list[str] = []
        self.agents: dict[str, list[ac.Agent]] = {}
        self.sessions: list[SqliteSession] = []

    def __call__(self, thread_id: str) -> ac.Agent:
        self.calls.append(thread_id)
        session = None
        if self.session_path is not None:
            session = SqliteSession(self.session_path, session_id=thread_id)
            self.sessions.append(session)
        agent = ac.Agent(self.model, tools=make_tools(self.ran), session=session)
        self.agents.setdefault(thread_id, []).append(agent)
        return agent

    def agent(self, thread_id: str) -> ac.Agent:
        (agent,) = self.agents[thread_id]
        return agent


@pytest.fixture
def fast() -> Iterator[FauxProvider]:
    provider = register_faux_provider()
    provider.set_responses([brain] * 500)
    yield provider
    provider.unregister()


@pytest.fixture
def slow() -> Iterator[FauxProvider]:
    """A faux model streaming 50 one-word tokens a second (a reply to stop, or to wait on)."""
    provider = register_faux_provider(tokens_per_second=50, token_size=(1, 1))
    provider.set_responses([brain] * 100)
    yield provider
    provider.unregister()


@pytest.fixture
def maker(fast: FauxProvider) -> Maker:
    return Maker(fast.get_model())


# --- the server and the client ---------------------------------------------------------------


class Switchboard:
    """The ASGI app of the module's one uvicorn server: it hands each request to the app a test
    has mounted, and runs that app's lifespan (its startup as it is mounted, its shutdown as it
    is unmounted) on the server's event loop, as a server of its own would. Each mount gets the
    loop a new default executor (the threads of `asyncio.to_thread`), shut down and joined at
    unmount, as a server's loop would be at its end: no test sees another's threads.

    A uvicorn server costs 0.1 s to stop (its shutdown sleeps that long); one per test, for
    the ~40 tests here, was most of the module's time.
    """

    def __init__(self) -> None:
        self.server: ThreadServer | None = None
        self.app: Any = None
        self._inbox: asyncio.Queue[dict[str, Any]] | None = None
        self._outbox: asyncio.Queue[dict[str, Any]] | None = None
        self._lifespan: asyncio.Future[None] | None = None
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":  # the server's own: nothing of its own to start
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        assert self.app is not None, "a request with no app mounted"
        await self.app(scope, receive, send)

    def mount(self, asgi: Any) -> None:
        assert self.app is None, "one app at a time"
        self.app = asgi
        self._on_loop(self._start_lifespan())

    def unmount(self) -> None:
        assert self.server is not None
        try:
            # as uvicorn's shutdown: the connections end first (the client has closed its own)
            wait_until(lambda: not self.server.server_state.connections)
            self._on_loop(self._stop_lifespan())
        finally:
            self.app = None
            if self._executor is not None:
                self._executor.shutdown(wait=True)

    def _on_loop(self, work: Any) -> None:
        assert self.server is not None
        self.server.run_on_loop(work, WAIT)

    async def _start_lifespan(self) -> None:
        self._executor = concurrent.futures.ThreadPoolExecutor(thread_name_prefix="asyncio")
        asyncio.get_running_loop().set_default_executor(self._executor)
        self._inbox, self._outbox = asyncio.Queue(), asyncio.Queue()
        scope = {"type": "lifespan", "asgi": {"version": "3.0", "spec_version": "2.0"},
                 "state": {}}
        self._lifespan = asyncio.ensure_future(
            self.app(scope, self._inbox.get, self._outbox.put))
        await self._inbox.put({"type": "lifespan.startup"})
        assert (await self._outbox.get())["type"] == "lifespan.startup.complete"

    async def _stop_lifespan(self) -> None:
        assert self._inbox is not None
        assert self._outbox is not None
        assert self._lifespan is not None
        await self._inbox.put({"type": "lifespan.shutdown"})
        assert (await self._outbox.get())["type"] == "lifespan.shutdown.complete"
        await self._lifespan


@pytest.fixture(scope="module")
def board() -> Iterator[Switchboard]:
    """The module's uvicorn server on a thread, serving whichever app a test has mounted."""
    switchboard = Switchboard()
    config = uvicorn.Config(switchboard, host="127.0.0.1", port=0, log_level="warning",
                            lifespan="on")
    switchboard.server = ThreadServer(config)
    switchboard.server.start(name="test-uvicorn")
    try:
        assert switchboard.server.ready.wait(WAIT), "uvicorn did not start in time"
        assert switchboard.server.started, "uvicorn did not start"
        yield switchboard
    finally:
        switchboard.server.stop(WAIT)


class Served:
    """An ASGI app mounted on the module's server, and a `requests` session for it."""

    def __init__(self, asgi: Starlette, board: Switchboard) -> None:
        assert board.server is not None
        self.board = board
        self.server = board.server
        board.mount(asgi)
        self.mounted = True
        port = self.server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        self.http = requests.Session()
        self.http.trust_env = False  # no proxy from the environment for 127.0.0.1

    def stop(self) -> None:
        """As stopping its own server would: its connections end, then its lifespan."""
        self.http.close()
        if self.mounted:
            self.mounted = False
            self.board.unmount()

    def post(self, body: Any, **kwargs: Any) -> requests.Response:
        """POST `body` to the endpoint: a dict as JSON, bytes (or chunks) as they are, sent
        as JSON unless `headers` say otherwise."""
        if isinstance(body, (bytes, str)) or callable(getattr(body, "__next__", None)):
            headers = {"Content-Type": "application/json", **kwargs.pop("headers", {})}
            return self.http.post(f"{self.url}/ag-ui", data=body, timeout=WAIT,
                                  headers=headers, **kwargs)
        return self.http.post(f"{self.url}/ag-ui", json=body, timeout=WAIT, **kwargs)

    def run(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        """POST a run and read its whole stream (each event checked against AG-UI's models)."""
        with self.post(body, stream=True) as reply:
            assert reply.status_code == 200, reply.text
            assert reply.headers["content-type"].startswith("text/event-stream")
            return read_events(reply.iter_lines(decode_unicode=True))

    def history(self, thread_id: str) -> requests.Response:
        return self.http.get(f"{self.url}/ag-ui/threads/{thread_id}", timeout=WAIT)


def read_events(lines: Iterator[str]) -> list[dict[str, Any]]:
    events = []
    for line in lines:
        if line.startswith("data: "):
            EVENT.validate_json(line[6:])
            events.append(json.loads(line[6:]))
        else:
            assert line == "" or line.startswith(":"), line
    return events


@pytest.fixture
def serve(board: Switchboard) -> Iterator[Callable[..., Served]]:
    """Serve an app for this test (one at a time); it is stopped at the end."""
    servers: list[Served] = []

    def start(asgi: Starlette) -> Served:
        servers.append(Served(asgi, board))
        return servers[-1]

    yield start
    for served in servers:
        served.stop()


@pytest.fixture
def shared(serve: Callable[..., Served]) -> Iterator[tuple[Served, Maker]]:
    """A server for the tests that never reach an agent, which must leave `maker.calls` empty."""
    provider = register_faux_provider()
    maker = Maker(provider.get_model())
    try:
        yield serve(app(maker)), maker
    finally:
        provider.unregister()
    assert maker.calls == []


def body(thread_id: str, text: str | None = None, *, run_id: str = "run-1",
         resume: list[dict[str, Any]] | None = None, **fields: Any) -> dict[str, Any]:
    """A `RunAgentInput` (camelCase) sending `text` as the new user message."""
    data: dict[str, Any] = {"threadId": thread_id, "runId": run_id, "messages": [], "tools": [],
                            "context": [], "state": None, "forwardedProps": None}
    if text is not None:
        data["messages"] = [{"id": "u1", "role": "user", "content": text}]
    if resume is not None:
        data["resume"] = resume
    data.update(fields)
    return data


def allow(call_id: str) -> dict[str, Any]:
    return {"interruptId": call_id, "status": "resolved", "payload": {"approved": True}}


def deny(call_id: str, reason: str | None = None) -> dict[str, Any]:
    payload: dict[str, Any] = {"approved": False}
    if reason is not None:
        payload["reason"] = reason
    return {"interruptId": call_id, "status": "resolved", "payload": payload}


def texts(events: list[dict[str, Any]]) -> str:
    return "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")


def results(events: list[dict[str, Any]]) -> dict[str, tuple[str, bool]]:
    return {e["toolCallId"]: (e["content"], e["metadata"]["agentcore"]["isError"])
            for e in events if e["type"] == "TOOL_CALL_RESULT"}


def error_of(reply: requests.Response, status: int) -> str:
    """The message of a JSON error reply with `status`."""
    assert reply.status_code == status, reply.text
    assert reply.headers["content-type"] == "application/json"
    data = reply.json()
    assert list(data) == ["error"]
    assert isinstance(data["error"], str)
    return data["error"]


def wait_until(ready: Callable[[], bool], timeout: float = WAIT) -> float:
    """Poll `ready` until true; the seconds it took (fails past `timeout`)."""
    start = time.monotonic()
    while not ready():
        assert time.monotonic() - start < timeout, "timed out"
        time.sleep(0.001)
    return time.monotonic() - start


# --- the page and a run ----------------------------------------------------------------------


def test_the_page_is_served_as_html_with_a_content_security_policy(
        shared: tuple[Served, Maker]) -> None:
    served, maker = shared
    page = served.http.get(f"{served.url}/", timeout=WAIT)
    assert page.status_code == 200
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    assert page.headers["content-security-policy"].startswith(CSP)
    assert page.headers["x-content-type-options"] == "nosniff"
    assert page.content == (Path(ac.__file__).parent / "web" / "page.html").read_bytes()
    assert maker.calls == []


def test_the_page_s_vendored_scripts_are_served_as_it_asks_for_them(
        shared: tuple[Served, Maker]) -> None:
    served, _ = shared
    static = Path(ac.__file__).parent / "web" / "static"
    html = (static.parent / "page.html").read_text()
    tags = re.findall(r'<script src="static/([^"]+)" integrity="([^"]+)"></script>', html)
    assert [name for name, _ in tags] == ["marked-18.3.0.umd.js", "purify-3.5.0.min.js"]
    readme = (static / "README.md").read_text()
    for name, integrity in tags:
        script = served.http.get(f"{served.url}/static/{name}", timeout=WAIT)
        assert script.status_code == 200
        assert script.content == (static / name).read_bytes()
        digest = base64.b64encode(hashlib.sha384(script.content).digest()).decode()
        assert integrity == f"sha384-{digest}"  # what the page checks it against
        assert script.headers["content-type"] == "text/javascript; charset=utf-8"
        assert script.headers["x-content-type-options"] == "nosniff"
        assert "immutable" in script.headers["cache-control"]  # the name carries the version
        assert f"`{name}`" in readme
    for name in ("README.md", "marked-LICENSE.md", "..%2Fpage.html", "nothing.js"):
        missing = served.http.get(f"{served.url}/static/{name}", timeout=WAIT)
        assert missing.status_code == 404
        assert "error" in missing.json()
    assert sorted(p.name for p in static.iterdir()) == [
        "README.md", "dompurify-LICENSE-Apache-2.0", "dompurify-LICENSE-MPL-2.0",
        "marked-18.3.0.umd.js", "marked-LICENSE.md", "purify-3.5.0.min.js"]


def test_a_prompt_streams_its_reply_to_run_finished_and_the_agent_keeps_it(
        serve: Callable[..., Served], maker: Maker) -> None:
    served = serve(app(maker))

    events = served.run(body("t1", "hello there", run_id="r-7"))

    assert events[0] == {"type": "RUN_STARTED", "threadId": "t1", "runId": "r-7"}
    assert [e["type"] for e in events[1:3]] == ["TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT"]
    assert texts(events) == "echo 1: hello there"
    assert events[-1]["type"] == "RUN_FINISHED"
    assert (events[-1]["threadId"], events[-1]["runId"], events[-1]["outcome"]) == (
        "t1", "r-7", {"type": "success"})
    assert events[-1]["usage"][0]["outputTokens"] > 0
    agent = maker.agent("t1")
    assert [(m.role, m.text) for m in agent.messages] == [("user", "hello there"),
                                                          ("assistant", "echo 1: hello there")]
    assert not agent.state.is_streaming


def test_the_server_reads_only_the_trailing_user_messages_of_the_input(
        serve: Callable[..., Served], maker: Maker) -> None:
    served = serve(app(maker))
    messages = [{"id": "a", "role": "user", "content": "old question"},
                {"id": "b", "role": "assistant", "content": "old answer"},
                {"id": "c", "role": "user", "content": "first"},
                {"id": "d", "role": "user", "content": [{"type": "text", "text": "second"}]}]

    events = served.run(body("t", messages=messages))

    assert texts(events) == "echo 2: second"
    assert [(m.role, m.text) for m in maker.agent("t").messages] == [
        ("user", "first"), ("user", "second"), ("assistant", "echo 2: second")]


def test_a_tool_call_streams_its_arguments_and_result(serve: Callable[..., Served],
                                                      maker: Maker) -> None:
    served = serve(app(maker))

    events = served.run(body("t", "ls docs src"))

    starts = [(e["toolCallId"], e["toolCallName"]) for e in events
              if e["type"] == "TOOL_CALL_START"]
    assert starts == [("ls-docs", "ls"), ("ls-src", "ls")]
    args = "".join(e["delta"] for e in events
                   if e["type"] == "TOOL_CALL_ARGS" and e["toolCallId"] == "ls-docs")
    assert json.loads(args) == {"path": "docs"}
    assert results(events) == {"ls-docs": ("ls docs ok", False), "ls-src": ("ls src ok", False)}
    durations = [e["metadata"]["agentcore"]["durationMs"] for e in events
                 if e["type"] == "TOOL_CALL_RESULT"]
    assert all(isinstance(d, float) and d >= 0 for d in durations)
    assert texts(events) == "done: ls docs ok; ls src ok"


def test_a_failing_tool_streams_an_error_result(serve: Callable[..., Served],
                                                maker: Maker) -> None:
    served = serve(app(maker))
    events = served.run(body("t", "fail x"))
    (content, is_error), = results(events).values()
    assert is_error
    assert "cannot touch x" in content
    assert events[-1]["outcome"] == {"type": "success"}


def test_a_model_error_streams_run_error(serve: Callable[..., Served], fast: FauxProvider,
                                        maker: Maker) -> None:
    fast.set_responses([faux_assistant_message([], stop_reason="error",
                                               error_message="model overloaded")])
    served = serve(app(maker))
    events = served.run(body("t", "hi"))
    assert [e["type"] for e in events] == ["RUN_STARTED", "RUN_ERROR"]
    assert events[-1]["message"] == "model overloaded"


# --- history ---------------------------------------------------------------------------------


def test_history_lists_the_conversation_in_ag_ui_shapes(serve: Callable[..., Served],
                                                        maker: Maker) -> None:
    served = serve(app(maker))
    served.run(body("t", "ls a"))
    served.run(body("t", "thanks"))

    reply = served.history("t")

    assert reply.status_code == 200
    data = reply.json()
    assert (data["threadId"], data["interrupts"], data["running"]) == ("t", [], False)
    for message in data["messages"]:
        MESSAGE.validate_python(message)
    streamed = served.run(body("t", "ls b"))
    model = {"model": f"{maker.model.provider}/{maker.model.id}"}
    usage = [m["metadata"]["agentcore"].pop("usage") for m in data["messages"]
             if m["role"] == "assistant"]
    assert all(set(u) == {"inputTokens", "outputTokens", "cachedInputTokens"} for u in usage)
    duration = data["messages"][2]["metadata"]["agentcore"].pop("durationMs")
    assert data["messages"] == [
        {"id": "m0", "role": "user", "content": "ls a"},
        {"id": "m1", "role": "assistant", "toolCalls": [
            {"id": "ls-a", "type": "function",
             "function": {"name": "ls", "arguments": '{"path": "a"}'}}],
         "metadata": {"agentcore": model}},
        {"id": "m2", "role": "tool", "content": "ls a ok", "toolCallId": "ls-a",
         "metadata": {"agentcore": {"isError": False}}},
        {"id": "m3", "role": "assistant", "content": "done: ls a ok",
         "metadata": {"agentcore": model}},
        {"id": "m4", "role": "user", "content": "thanks"},
        {"id": "m5", "role": "assistant", "content": "echo 2: thanks",
         "metadata": {"agentcore": model}},
    ]
    # a result's metadata is what its stream's TOOL_CALL_RESULT carried, duration included
    (result,) = [e for e in streamed if e["type"] == "TOOL_CALL_RESULT"]
    assert served.history("t").json()["messages"][8]["metadata"] == result["metadata"]
    assert duration >= 0


def test_a_stream_s_message_ids_are_the_history_s(serve: Callable[..., Served],
                                                  maker: Maker) -> None:
    served = serve(app(maker))
    streamed = [*served.run(body("t", "ls a")), *served.run(body("t", "rm x"))]
    streamed += served.run(body("t", resume=[deny("rm-x", "not that one")]))
    streamed += served.run(body("t", "thanks"))

    ids = {e.get("messageId") or e["parentMessageId"] for e in streamed
           if e["type"] in ("TOOL_CALL_START", "TOOL_CALL_RESULT", "TEXT_MESSAGE_START")}
    ids |= {e["value"]["messageId"] for e in streamed
            if e.get("name") == "agentcore.tool_approval"}
    history = served.history("t").json()["messages"]
    shown = {m["id"]: m for m in history}
    assert [m["id"] for m in history] == [f"m{i}" for i in range(len(history))]
    assert ids == {m["id"] for m in history if m["role"] in ("assistant", "tool", "activity")}
    decided = shown[next(e["value"]["messageId"] for e in streamed
                         if e.get("name") == "agentcore.tool_approval")]
    assert (decided["role"], decided["activityType"], decided["content"]["denied"]) == (
        "activity", "agentcore.tool_approval", {"rm-x": "not that one"})


def test_history_shows_an_error_result_and_reasoning(serve: Callable[..., Served],
                                                     fast: FauxProvider, maker: Maker) -> None:
    fast.set_responses([faux_assistant_message([ac.ThinkingContent("let me try"),
                                                faux_tool_call("fail", {"path": "z"}, id="f")]),
                        brain])
    served = serve(app(maker))
    served.run(body("t", "go"))

    messages = served.history("t").json()["messages"]

    for message in messages:
        MESSAGE.validate_python(message)
    assert [(m["id"], m["role"]) for m in messages] == [
        ("m0", "user"), ("m1-r0", "reasoning"), ("m1", "assistant"), ("m2", "tool"),
        ("m3", "assistant")]
    assert messages[1]["content"] == "let me try"
    assert messages[3]["error"] == messages[3]["content"]
    assert "cannot touch z" in messages[3]["error"]


def test_history_lists_the_interrupts_of_calls_that_wait(serve: Callable[..., Served],
                                                         maker: Maker) -> None:
    served = serve(app(maker))
    served.run(body("t", "rm a b"))

    data = served.history("t").json()

    assert [(i["id"], i["toolCallId"], i["reason"]) for i in data["interrupts"]] == [
        ("rm-a", "rm-a", "tool_approval"), ("rm-b", "rm-b", "tool_approval")]
    assert data["interrupts"][0]["message"] == 'Allow rm({"path": "a"})?'
    for interrupt in data["interrupts"]:
        ag.Interrupt.model_validate(interrupt)
    assert data["running"] is False
    assert [m["role"] for m in data["messages"]] == ["user", "assistant"]


def test_history_says_running_while_a_run_streams(serve: Callable[..., Served],
                                                  slow: FauxProvider) -> None:
    maker = Maker(slow.get_model())
    served = serve(app(maker))
    with served.post(body("t", "long 100"), stream=True) as reply:
        lines = reply.iter_lines(decode_unicode=True)
        assert "TEXT_MESSAGE_CONTENT" in next(line for line in lines if "CONTENT" in line)

        during = served.history("t").json()

    assert during["running"] is True
    assert during["messages"] == [{"id": "m0", "role": "user", "content": "long 100"}]
    assert maker.agent("t").wait_for_idle(WAIT)  # leaving the stream stopped the run
    after = served.history("t").json()
    assert after["running"] is False
    assert [m["role"] for m in after["messages"]] == ["user", "assistant"]
    assert after["messages"][1]["metadata"]["agentcore"]["stopReason"] == "aborted"


def test_any_printable_thread_id_finds_its_history_percent_encoded(
        serve: Callable[..., Served], maker: Maker) -> None:
    served = serve(app(maker))
    for thread_id in ("a b/c", "ünï?#%", "x/../y"):
        served.run(body(thread_id, f"hi from {thread_id}"))
        data = served.history(quote(thread_id, safe="")).json()
        assert data["threadId"] == thread_id
        assert data["messages"][0]["content"] == f"hi from {thread_id}"
    assert maker.calls == ["a b/c", "ünï?#%", "x/../y"]


def test_history_of_an_unknown_thread_is_404(serve: Callable[..., Served],
                                             maker: Maker) -> None:
    served = serve(app(maker))
    assert "'nobody'" in error_of(served.history("nobody"), 404)
    assert error_of(served.history("x" * 201), 422).startswith("threadId must be")


def test_looking_up_an_unknown_thread_closes_no_other_conversation(
        serve: Callable[..., Served], maker: Maker) -> None:
    served = serve(app(maker, max_threads=2))
    served.run(body("a", "one"))
    served.run(body("b", "two"))

    assert served.history("new-visitor").status_code == 404

    served.run(body("a", "three"))
    assert maker.calls.count("a") == 1  # "a" was still open: the same agent went on


# --- threads ---------------------------------------------------------------------------------


def test_each_thread_id_gets_its_own_agent_and_keeps_it(serve: Callable[..., Served],
                                                        maker: Maker) -> None:
    served = serve(app(maker))

    served.run(body("alice", "hi, I am Alice"))
    served.run(body("bob", "hi, I am Bob"))
    again = served.run(body("alice", "who am I?"))

    assert maker.calls == ["alice", "bob"]
    assert texts(again) == "echo 2: who am I?"  # the model saw the first prompt too
    assert [m.text for m in maker.agent("alice").messages] == [
        "hi, I am Alice", "echo 1: hi, I am Alice", "who am I?", "echo 2: who am I?"]
    assert [m.text for m in maker.agent("bob").messages] == ["hi, I am Bob",
                                                             "echo 1: hi, I am Bob"]


def test_a_second_request_while_a_thread_runs_is_409(serve: Callable[..., Served],
                                                     slow: FauxProvider) -> None:
    maker = Maker(slow.get_model())
    served = serve(app(maker))
    with served.post(body("t", "long 100"), stream=True) as first:
        lines = first.iter_lines(decode_unicode=True)
        next(line for line in lines if "TEXT_MESSAGE_CONTENT" in line)

        second = served.post(body("t", "me too", run_id="run-2"))
        other = served.post(body("elsewhere", "hi"), stream=True)

        assert "'t' is running" in error_of(second, 409)
        with other:  # another thread is not held up
            assert read_events(other.iter_lines(decode_unicode=True))[-1]["outcome"] == {
                "type": "success"}
        assert maker.agent("t").state.is_streaming  # the first run went on meanwhile
    # leaving the stream stopped its run; the refused prompt never reached the agent
    assert maker.agent("t").wait_for_idle(WAIT)
    assert [m.role for m in maker.agent("t").messages] == ["user", "assistant"]
    assert maker.agent("t").messages[0].text == "long 100"


def test_concurrent_first_requests_on_a_new_thread_make_one_agent(
        serve: Callable[..., Served], slow: FauxProvider) -> None:
    made = threading.Event()
    release = threading.Event()
    maker = Maker(slow.get_model())

    def make_agent(thread_id: str) -> ac.Agent:
        made.set()
        assert release.wait(WAIT)
        return maker(thread_id)

    served = serve(app(make_agent))
    replies: list[requests.Response] = []

    def post() -> None:
        replies.append(served.post(body("t", "long 100"), stream=True))

    first = threading.Thread(target=post)
    first.start()
    assert made.wait(WAIT)
    second = threading.Thread(target=post)
    second.start()
    wait_until(lambda: len(served.server.server_state.connections) == 2)  # the second is in
    release.set()
    first.join(WAIT)
    second.join(WAIT)

    assert maker.calls == ["t"]
    assert sorted(r.status_code for r in replies) == [200, 409]
    for reply in replies:
        reply.close()
    assert maker.agent("t").wait_for_idle(WAIT)


# --- approvals -------------------------------------------------------------------------------


def test_a_pause_ends_with_an_interrupt_and_allow_runs_the_call(serve: Callable[..., Served],
                                                                maker: Maker) -> None:
    served = serve(app(maker))

    paused = served.run(body("t", "rm a"))

    assert [e["value"] for e in paused if e["type"] == "CUSTOM"] == [
        {"toolCallId": "rm-a", "toolName": "rm", "args": {"path": "a"}}]
    outcome = paused[-1]["outcome"]
    assert outcome["type"] == "interrupt"
    assert [(i["id"], i["toolCallId"], i["reason"]) for i in outcome["interrupts"]] == [
        ("rm-a", "rm-a", "tool_approval")]
    assert maker.ran.ids == []

    resumed = served.run(body("t", resume=[allow("rm-a")], run_id="run-2"))

    assert maker.ran.ids == ["rm-a"]
    assert resumed[0] == {"type": "RUN_STARTED", "threadId": "t", "runId": "run-2"}
    assert results(resumed) == {"rm-a": ("rm a ok", False)}
    assert texts(resumed) == "done: rm a ok"
    assert resumed[-1]["outcome"] == {"type": "success"}
    assert maker.agent("t").state.pending_approvals == []


@pytest.mark.parametrize(("answer", "result"), [
    pytest.param(deny("rm-a", "not today"), "denied: not today", id="deny-with-reason"),
    pytest.param(deny("rm-a"), "denied: the user did not allow this call", id="deny"),
    pytest.param({"interruptId": "rm-a", "status": "resolved", "payload": False},
                 "denied: the user did not allow this call", id="bare-false"),
    pytest.param({"interruptId": "rm-a", "status": "cancelled"},
                 "denied: the user cancelled this call", id="cancelled"),
])
def test_a_denied_call_gets_a_denial_result_and_never_runs(
        serve: Callable[..., Served], maker: Maker, answer: dict[str, Any], result: str) -> None:
    served = serve(app(maker))
    served.run(body("t", "rm a"))

    resumed = served.run(body("t", resume=[answer]))

    assert results(resumed) == {"rm-a": (result, True)}
    assert maker.ran.ids == []
    assert resumed[-1]["outcome"] == {"type": "success"}


def test_resume_decides_several_calls_at_once(serve: Callable[..., Served],
                                              maker: Maker) -> None:
    served = serve(app(maker))
    paused = served.run(body("t", "rm a b"))
    assert [i["id"] for i in paused[-1]["outcome"]["interrupts"]] == ["rm-a", "rm-b"]

    resumed = served.run(body("t", resume=[deny("rm-b", "keep b"), allow("rm-a")]))

    assert results(resumed) == {"rm-a": ("rm a ok", False), "rm-b": ("denied: keep b", True)}
    assert maker.ran.ids == ["rm-a"]


def test_resume_with_nothing_pending_is_409(serve: Callable[..., Served], maker: Maker) -> None:
    served = serve(app(maker))
    served.run(body("t", "hi"))
    assert "nothing on thread 't' waits for approval" in error_of(
        served.post(body("t", resume=[allow("rm-a")])), 409)


def test_a_prompt_while_calls_wait_is_409(serve: Callable[..., Served], maker: Maker) -> None:
    served = serve(app(maker))
    served.run(body("t", "rm a"))
    assert "1 tool call(s) on thread 't' wait for approval" in error_of(
        served.post(body("t", "never mind")), 409)
    assert [i["id"] for i in served.history("t").json()["interrupts"]] == ["rm-a"]


@pytest.mark.parametrize(("resume", "message"), [
    pytest.param([allow("rm-a")], "missing: rm-b", id="one-missing"),
    pytest.param([allow("rm-a"), allow("rm-b"), allow("rm-zzz")], "'rm-zzz' does not wait",
                 id="unknown-id"),
    pytest.param([allow("rm-a"), deny("rm-a")], "resume[1].interruptId: 'rm-a' is answered twice",
                 id="twice"),
    pytest.param([{"interruptId": "rm-a", "status": "resolved", "payload": {"ok": 1}}],
                 "resume[0].payload: expected true, false", id="bad-payload"),
])
def test_a_resume_that_does_not_answer_the_interrupts_exactly_is_422(
        serve: Callable[..., Served], maker: Maker, resume: list[dict[str, Any]],
        message: str) -> None:
    served = serve(app(maker))
    served.run(body("t", "rm a b"))

    assert message in error_of(served.post(body("t", resume=resume)), 422)

    assert maker.ran.ids == []
    assert [i["id"] for i in served.history("t").json()["interrupts"]] == ["rm-a", "rm-b"]
    assert results(served.run(body("t", resume=[allow("rm-a"), allow("rm-b")]))) == {
        "rm-a": ("rm a ok", False), "rm-b": ("rm b ok", False)}


# --- bad input -------------------------------------------------------------------------------


@pytest.mark.parametrize(("data", "status", "message"), [
    pytest.param(b"{not json", 400, "the body is not JSON", id="not-json"),
    pytest.param(b"\xff\xfe", 400, "the body is not JSON", id="not-utf8"),
    pytest.param(b"[1, 2]", 422, "invalid RunAgentInput: body:", id="not-an-object"),
    pytest.param({k: v for k, v in body("t", "hi").items() if k != "threadId"}, 422,
                 "threadId: Field required", id="no-thread-id"),
    pytest.param(body("t", messages=[{"role": "user", "content": "hi"}]), 422,
                 "messages.0.user.id: Field required", id="message-without-id"),
    pytest.param(body("t", messages=[{"id": "u", "role": "wizard", "content": "hi"}]), 422,
                 "messages.0", id="unknown-role"),
    pytest.param(body("t", messages=[]), 422, "nothing to run: the last of 'messages' must be a "
                 "user message", id="no-messages"),
    pytest.param(body("t", messages=[{"id": "u", "role": "user", "content": "hi"},
                                     {"id": "a", "role": "assistant", "content": "yes?"}]),
                 422, "the last of 'messages' must be a user message", id="ends-with-assistant"),
    pytest.param(body("t", " \n "), 422, "nothing to run: messages[0].content is empty",
                 id="blank-prompt"),
    pytest.param(body("t", messages=[{"id": "u", "role": "user", "content": [
        {"type": "image", "source": {"type": "url", "value": "http://example.com/a.png"}}]}]),
        422, "messages[0].content[0]: an image part from a url source is not supported",
        id="image-by-url"),
    pytest.param(body("t", messages=[{"id": "u", "role": "user", "content": [
        {"type": "text", "text": "listen"},
        {"type": "audio", "source": {"type": "data", "value": "AAAA", "mimeType": "audio/wav"}}]}]),
        422, "messages[0].content[1]: an audio part", id="audio"),
    pytest.param(body("t" * 201, "hi"), 422, "threadId must be 1 to 200 printable characters",
                 id="thread-id-too-long"),
    pytest.param(body("a\nb", "hi"), 422, "threadId must be 1 to 200", id="thread-id-newline"),
    pytest.param(body(" ", "hi"), 422, "threadId must be 1 to 200", id="thread-id-blank"),
    pytest.param(body("t", "hi", run_id="r" * 201), 422, "runId must be 1 to 200",
                 id="run-id-too-long"),
])
def test_bad_input_is_a_json_error_naming_the_problem(
        shared: tuple[Served, Maker], data: Any, status: int, message: str) -> None:
    served, maker = shared
    assert message in error_of(served.post(data), status)
    assert maker.calls == []


def test_an_image_given_as_data_reaches_the_model(serve: Callable[..., Served],
                                                  maker: Maker) -> None:
    served = serve(app(maker))
    content = [{"type": "text", "text": "what is this"},
               {"type": "image", "source": {"type": "data", "value": "aGk=",
                                            "mimeType": "image/png"}}]
    served.run(body("t", messages=[{"id": "u", "role": "user", "content": content}]))
    first = maker.agent("t").messages[0]
    assert first == ac.UserMessage([ac.TextContent("what is this"),
                                    ac.ImageContent("aGk=", "image/png")],
                                   timestamp=first.timestamp)


def test_a_body_over_the_limit_is_413(serve: Callable[..., Served], maker: Maker) -> None:
    served = serve(app(maker, max_body_bytes=1000))
    small = body("t", "x" * 700)
    big = body("t", "x" * 2000)

    declared = served.post(json.dumps(big).encode())

    def chunks() -> Iterator[bytes]:  # no Content-Length: Transfer-Encoding chunked
        data = json.dumps(big).encode()
        for i in range(0, len(data), 256):
            yield data[i:i + 256]

    chunked = served.post(chunks())
    assert chunked.request.headers.get("transfer-encoding") == "chunked"

    assert error_of(declared, 413) == "the body is larger than 1000 bytes"
    assert error_of(chunked, 413) == "the body is larger than 1000 bytes"
    assert maker.calls == []
    assert texts(served.run(small)).startswith("echo 1: xxx")


def test_get_on_the_endpoint_is_405_json(shared: tuple[Served, Maker]) -> None:
    served, _ = shared
    assert error_of(served.http.get(f"{served.url}/ag-ui", timeout=WAIT), 405) == (
        "Method Not Allowed")
    assert error_of(served.http.get(f"{served.url}/nowhere", timeout=WAIT), 404) == "Not Found"


def test_a_405_says_which_methods_are_allowed(shared: tuple[Served, Maker]) -> None:
    served, _ = shared
    reply = served.http.get(f"{served.url}/ag-ui", timeout=WAIT)
    assert reply.status_code == 405
    assert reply.headers.get("allow") == "POST"


def test_make_agent_raising_is_500_and_the_server_keeps_serving(
        serve: Callable[..., Served], maker: Maker, caplog: pytest.LogCaptureFixture) -> None:
    def make_agent(thread_id: str) -> ac.Agent:
        if thread_id == "cursed":
            raise RuntimeError("no agent for you")
        return maker(thread_id)

    served = serve(app(make_agent))
    close = {"Connection": "close"}  # uvicorn drops the connection after a 500: see below

    assert error_of(served.post(body("cursed", "hi"), headers=close), 500) == (
        "internal error: RuntimeError")
    assert error_of(served.post(body("cursed", "again"), headers=close), 500) == (
        "internal error: RuntimeError")
    assert texts(served.run(body("fine", "hi"))) == "echo 1: hi"
    assert "no agent for you" in caplog.text


def test_a_500_leaves_the_connection_usable(serve: Callable[..., Served]) -> None:
    def make_agent(thread_id: str) -> ac.Agent:
        raise RuntimeError("no agent for you")

    served = serve(app(make_agent))
    connection = http.client.HTTPConnection(served.url.removeprefix("http://"), timeout=WAIT)
    try:
        connection.request("POST", "/ag-ui", json.dumps(body("t", "hi")),
                           {"Content-Type": "application/json"})
        first = connection.getresponse()
        assert (first.status, json.loads(first.read())) == (
            500, {"error": "internal error: RuntimeError"})
        connection.request("GET", "/nowhere")  # on the same connection, unless it said close
        assert connection.getresponse().status == 404
    finally:
        connection.close()


def test_make_agent_returning_something_else_is_500(serve: Callable[..., Served]) -> None:
    served = serve(app(lambda thread_id: "not an agent"))  # type: ignore[arg-type,return-value]
    assert error_of(served.post(body("t", "hi")), 500) == "internal error: TypeError"


@pytest.mark.parametrize(("args", "kwargs", "error", "match"), [
    pytest.param((None,), {}, TypeError, "'make_agent' must be a callable", id="not-callable"),
    pytest.param((print,), {"max_body_bytes": 0}, ValueError, "'max_body_bytes' must be at "
                 "least 1, got 0", id="body-zero"),
    pytest.param((print,), {"max_body_bytes": 1.5}, TypeError, "'max_body_bytes' must be an int",
                 id="body-float"),
    pytest.param((print,), {"max_threads": True}, TypeError, "'max_threads' must be an int",
                 id="threads-bool"),
    pytest.param((print,), {"max_threads": -1}, ValueError, "'max_threads' must be at least 1",
                 id="threads-negative"),
])
def test_app_checks_its_arguments(args: tuple[Any, ...], kwargs: dict[str, Any],
                                  error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        app(*args, **kwargs)


# --- a client that leaves --------------------------------------------------------------------


def test_a_client_that_disconnects_aborts_the_run_at_once(serve: Callable[..., Served],
                                                          slow: FauxProvider,
                                                          tmp_path: Path) -> None:
    path = tmp_path / "web.db"
    maker = Maker(slow.get_model(), path)
    served = serve(app(maker))
    reply = served.post(body("t", "long 500"), stream=True)
    lines = reply.iter_lines(decode_unicode=True)
    next(line for line in lines if "TEXT_MESSAGE_CONTENT" in line)
    agent = maker.agent("t")
    assert agent.state.is_streaming

    reply.close()
    wait_until(lambda: not agent.state.is_streaming)  # well before the 10 s reply's end

    with SqliteSession(path, session_id="t") as session:
        stored = session.load()
    assert [m.role for m in stored] == ["user", "assistant"]
    # aborted, and nothing else aborts it: the client's leaving did, before the reply was done
    assert stored[1].stop_reason is ac.StopReason.ABORTED
    assert 0 < len(stored[1].text.split()) < 500
    assert agent.messages == stored

    events = served.run(body("t", "still there?"))

    assert texts(events) == "echo 2: still there?"
    assert events[-1]["outcome"] == {"type": "success"}
    assert maker.calls == ["t"]


def test_heartbeat_comments_keep_a_slow_stream_open(serve: Callable[..., Served],
                                                    slow: FauxProvider,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(web_sse, "HEARTBEAT_SECONDS", 0.05)
    served = serve(app(Maker(slow.get_model())))
    with served.post(body("t", "long 15"), stream=True) as reply:
        lines = list(reply.iter_lines(decode_unicode=True))
    assert lines.count(": heartbeat") >= 2
    events = read_events(iter(lines))
    assert events[-1]["outcome"] == {"type": "success"}
    assert texts(events) == " ".join(["word"] * 15)


# --- sessions, eviction, shutdown ------------------------------------------------------------


def test_a_second_app_over_the_same_session_file_shows_the_same_history(
        serve: Callable[..., Served], fast: FauxProvider, tmp_path: Path) -> None:
    path = tmp_path / "web.db"
    first = serve(app(Maker(fast.get_model(), path)))
    first.run(body("t", "ls a"))
    first.run(body("u", "rm b"))
    before = (first.history("t").json(), first.history("u").json())
    first.stop()

    maker = Maker(fast.get_model(), path)
    second = serve(app(maker))

    # the same, but for the tool calls' durations: measured by the streams of the first app,
    # kept in its memory
    assert before[0]["messages"][2]["metadata"]["agentcore"].pop("durationMs") >= 0
    assert (second.history("t").json(), second.history("u").json()) == before
    assert before[1]["interrupts"][0]["id"] == "rm-b"
    resumed = second.run(body("u", resume=[allow("rm-b")]))  # the pause outlived the process
    assert results(resumed) == {"rm-b": ("rm b ok", False)}
    assert texts(second.run(body("t", "more"))) == "echo 2: more"


def test_past_max_threads_the_least_recently_used_idle_thread_is_closed(
        serve: Callable[..., Served], fast: FauxProvider, tmp_path: Path) -> None:
    maker = Maker(fast.get_model(), tmp_path / "web.db")
    served = serve(app(maker, max_threads=2))
    served.run(body("a", "one"))
    served.run(body("b", "two"))
    served.run(body("a", "three"))  # now "b" is the least recently used

    served.run(body("c", "four"))

    a, b = maker.agent("a"), maker.agent("b")
    with pytest.raises(ac.AgentClosedError):
        b.prompt("hello?")
    assert served.history("a").status_code == served.history("c").status_code == 200
    assert maker.calls == ["a", "b", "c"]  # "a" and "c" are still open

    events = served.run(body("b", "back again"))  # made again from its session

    assert maker.calls == ["a", "b", "c", "b"]
    assert texts(events) == "echo 2: back again"
    assert [m["content"] for m in served.history("b").json()["messages"]] == [
        "two", "echo 1: two", "back again", "echo 2: back again"]
    with pytest.raises(ac.AgentClosedError):
        a.prompt("hello?")  # "a" was the least recently used this time


def test_an_evicted_agents_session_is_closed(serve: Callable[..., Served], fast: FauxProvider,
                                             tmp_path: Path) -> None:
    maker = Maker(fast.get_model(), tmp_path / "web.db")
    served = serve(app(maker, max_threads=1))
    served.run(body("a", "one"))
    served.run(body("b", "two"))
    session_a, session_b = maker.sessions
    with pytest.raises(ValueError, match="is closed"):
        session_a.load()
    assert [m.role for m in session_b.load()] == ["user", "assistant"]


def test_shutdown_closes_every_agent_and_session(serve: Callable[..., Served],
                                                 fast: FauxProvider, tmp_path: Path) -> None:
    maker = Maker(fast.get_model(), tmp_path / "web.db")
    served = serve(app(maker))
    served.run(body("a", "one"))
    served.run(body("b", "rm x"))

    served.stop()

    for thread_id in ("a", "b"):
        with pytest.raises(ac.AgentClosedError):
            maker.agent(thread_id).prompt("hello?")
    for session in maker.sessions:
        with pytest.raises(ValueError, match="is closed"):
            session.load()
