"""`POST /api/chat`: the Vercel AI SDK's UI message stream beside AG-UI (API §28).

The translator first, fed the events of real `Agent` runs over the faux provider (or events
built by hand where a run cannot be steered there), each stream held to the protocol's rules
by `check_stream`; then the endpoint over real HTTP on a uvicorn thread server: replies, tools,
failures, aborts, approvals, bad bodies, and one conversation driven through both endpoints;
last, the official `ai` package's own reader and `AbstractChat` (what `useChat` wraps) in node
against the running server.
"""

from __future__ import annotations

import itertools
import json
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("ag_ui")
pytest.importorskip("uvicorn")

import requests
from _internals import (
    AI_SDK_DONE,
    AI_SDK_HEADERS,
    FALLBACK_PART,
    GUARDRAIL_PART,
    SUBAGENT_PART,
    ChatTranslator,
    encode_chunk,
    parse_chat_request,
    web_sse,
)
from approval_tools import Ran
from served import Served as AppServer

import agentcore as ac
from agentcore.providers.faux import (
    FauxProvider,
    faux_assistant_message,
    faux_text,
    faux_thinking,
    faux_tool_call,
    register_faux_provider,
)
from agentcore.web import app

WAIT = 10.0
PNG = "iVBORw0KGgo="


# --- the model, the tools, the agents ----------------------------------------------------------


def brain(context: ac.Context, options: ac.StreamOptions, model: ac.Model,
          ) -> ac.AssistantMessage:
    """The faux model's reply to the conversation so far.

    After tool results: `done: <their texts>`. To `ls a b` (or `fail`, `rm`, `count`): a call
    of that tool per word, id `ls-a`...; `think X`: reasoning, then `thought about X`; `error`:
    a failed reply; `long N`: N words; else `echo <n>: <text>` (n counts the user messages the
    model saw, so a test sees the conversation go on), `+ <k> image(s)` when it had images.
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
    if words and words[0] in ("ls", "fail", "rm", "count"):
        return faux_assistant_message([faux_tool_call(words[0], {"path": w}, id=f"{words[0]}-{w}")
                                       for w in words[1:]])
    if words and words[0] == "think":
        return faux_assistant_message([faux_thinking(f"pondering {words[1]}"),
                                       faux_text(f"thought about {words[1]}")])
    if words == ["error"]:
        return faux_assistant_message([], stop_reason="error", error_message="model overloaded")
    if words and words[0] == "long":
        return faux_assistant_message(" ".join(["word"] * int(words[1])))
    users = sum(isinstance(m, ac.UserMessage) for m in context.messages)
    images = sum(isinstance(b, ac.ImageContent) for m in context.messages
                 if isinstance(m, ac.UserMessage) and isinstance(m.content, list)
                 for b in m.content)
    return faux_assistant_message(f"echo {users}: {text}" + (f" + {images} image(s)" if images
                                                             else ""))


def make_tools(ran: Ran) -> list[ac.AgentTool]:
    """`ls`, `fail` (raises), `rm` (needs approval), `count` (reports progress twice)."""

    def tool(name: str, requires_approval: bool = False) -> ac.AgentTool:
        def execute(call_id: str, args: Any, signal: ac.AbortSignal, on_update: Any,
                    ) -> ac.AgentToolResult:
            ran.add(call_id)
            if name == "fail":
                raise OSError(f"cannot touch {args['path']}")
            if name == "count":
                on_update(ac.AgentToolResult([ac.TextContent("1/2")]))
                on_update(ac.AgentToolResult([ac.TextContent("2/2")]))
            return ac.AgentToolResult([ac.TextContent(f"{name} {args['path']} ok")])

        return ac.AgentTool(name, f"The {name} tool.", {"type": "object"}, execute,
                            requires_approval=requires_approval)

    return [tool("ls"), tool("fail"), tool("rm", True), tool("count")]


class Maker:
    """A `make_agent`: threads named `slow...` get the slow model; `stop...` ones an agent that
    aborts its own run at its first text delta (as an application's stop button would)."""

    def __init__(self, fast: ac.Model, slow: ac.Model) -> None:
        self.fast, self.slow = fast, slow
        self.ran = Ran()
        self.agents: dict[str, ac.Agent] = {}

    def __call__(self, thread_id: str) -> ac.Agent:
        slow = thread_id.startswith(("slow", "stop"))
        agent = ac.Agent(self.slow if slow else self.fast, tools=make_tools(self.ran))
        if thread_id.startswith("stop"):
            agent.subscribe(stop_at_first_text(agent))
        self.agents[thread_id] = agent
        return agent


def stop_at_first_text(agent: ac.Agent) -> Callable[[ac.AgentEvent, ac.AbortSignal], None]:
    def listen(event: ac.AgentEvent, signal: ac.AbortSignal) -> None:
        if isinstance(event, ac.MessageUpdateEvent) and isinstance(
                event.assistant_message_event, ac.TextDeltaEvent):
            agent.abort()

    return listen


@pytest.fixture
def fast() -> Iterator[FauxProvider]:
    """Whole blocks in one delta each: the translator's output is exact."""
    provider = register_faux_provider(token_size=(1000, 1000))
    provider.set_responses([brain] * 100)
    yield provider
    provider.unregister()


@pytest.fixture
def slow() -> Iterator[FauxProvider]:
    """50 one-word tokens a second: a reply to stop in the middle."""
    provider = register_faux_provider(tokens_per_second=50, token_size=(1, 1))
    provider.set_responses([brain] * 20)
    yield provider
    provider.unregister()


@pytest.fixture
def maker(fast: FauxProvider, slow: FauxProvider) -> Maker:
    return Maker(fast.get_model(), slow.get_model())


# --- the stream's rules ------------------------------------------------------------------------


def check_stream(chunks: list[dict[str, Any]]) -> None:
    """The UI message stream's rules as the SDK's reader applies them: `start` first; steps
    not nested; each text and reasoning part started, filled and ended inside a step; a tool
    part's input before its output, one final output each; `finish` or `abort` last (after an
    `error` for a failed model), every part and step closed by then."""
    assert chunks[0]["type"] == "start"
    assert chunks[-1]["type"] in ("finish", "abort"), chunks[-1]
    parts: dict[str, str] = {}  # open text / reasoning part id -> kind
    calls: dict[str, str] = {}  # call id -> "input" (streaming), "available", "asked", "done"
    in_step = False
    for chunk in chunks[1:-1]:
        kind = chunk["type"]
        if kind == "start-step":
            assert not in_step
            in_step = True
        elif kind == "finish-step":
            assert in_step
            assert not parts, parts
            in_step = False
        elif kind in ("text-start", "reasoning-start"):
            assert in_step
            assert chunk["id"] not in parts
            parts[chunk["id"]] = kind.split("-")[0]
        elif kind in ("text-delta", "reasoning-delta"):
            assert parts[chunk["id"]] == kind.split("-")[0]
            assert chunk["delta"]
        elif kind in ("text-end", "reasoning-end"):
            assert parts.pop(chunk["id"]) == kind.split("-")[0]
        elif kind == "tool-input-start":
            assert in_step
            assert chunk["toolCallId"] not in calls
            calls[chunk["toolCallId"]] = "input"
        elif kind == "tool-input-delta":
            assert calls[chunk["toolCallId"]] == "input"
        elif kind == "tool-input-available":
            assert in_step
            assert calls.get(chunk["toolCallId"], "input") == "input"
            assert isinstance(chunk["input"], dict)
            calls[chunk["toolCallId"]] = "available"
        elif kind == "tool-input-error":
            assert calls[chunk["toolCallId"]] == "input"
            calls[chunk["toolCallId"]] = "done"
        elif kind == "tool-approval-request":
            assert in_step
            assert chunk["approvalId"] == chunk["toolCallId"]
            assert calls[chunk["toolCallId"]] == "available"
            calls[chunk["toolCallId"]] = "asked"
        elif kind in ("tool-output-available", "tool-output-error", "tool-output-denied"):
            # a resumed run answers calls that an earlier request's stream showed
            assert calls.get(chunk["toolCallId"], "available") == "available", chunk
            if not chunk.get("preliminary"):
                calls[chunk["toolCallId"]] = "done"
        elif kind == "error":
            assert chunks[-1] == {"type": "finish", "finishReason": "error"}
        else:
            assert kind.startswith("data-"), chunk
    assert not in_step
    assert not parts, parts
    assert "input" not in calls.values(), calls


def types(chunks: list[dict[str, Any]]) -> list[str]:
    """The chunk types, each run of deltas of one part shown once (their count varies)."""
    out: list[str] = []
    for chunk in chunks:
        if not (chunk["type"].endswith("-delta") and out and out[-1] == chunk["type"]):
            out.append(chunk["type"])
    return out


def text_of(chunks: list[dict[str, Any]], kind: str = "text") -> str:
    return "".join(c["delta"] for c in chunks if c["type"] == f"{kind}-delta")


def outputs(chunks: list[dict[str, Any]]) -> dict[str, tuple[str, Any]]:
    """Each call's final output: (chunk type, output or error text)."""
    return {c["toolCallId"]: (c["type"], c.get("output", c.get("errorText")))
            for c in chunks if c["type"].startswith("tool-output") and not c.get("preliminary")}


# --- the translator ----------------------------------------------------------------------------


class EndedRun:
    """What `ChatTranslator.finish` reads of a run that has ended, for events fed by hand."""

    def __init__(self, messages: list[ac.AgentMessage], error: str | None = None) -> None:
        self.messages = messages
        self.error = error
        self.pending_approvals: list[ac.ToolCall] = []
        self.pending_paths: dict[str, list[str]] = {}

    def result(self, timeout: float | None = None) -> list[ac.AgentMessage]:
        return list(self.messages)


def translate(run: Any, events: list[ac.AgentEvent] | None = None, *,
              answered: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """The chunks of `run` (its own events, or `events`), checked; part ids `p1`, `p2`, ..."""
    numbers = itertools.count(1)
    translator = ChatTranslator("msg", answered=answered, new_id=lambda: f"p{next(numbers)}")
    chunks = translator.start()
    for event in run if events is None else events:
        chunks += translator.feed(event)
    chunks += translator.finish(run)
    for chunk in chunks:  # each chunk goes out as JSON, and comes back the same
        assert json.loads(encode_chunk(chunk)) == chunk
    check_stream(chunks)
    return chunks


@pytest.fixture
def agent(fast: FauxProvider) -> Iterator[ac.Agent]:
    agent = ac.Agent(fast.get_model(), tools=make_tools(Ran()))
    yield agent
    agent.close()


def test_a_text_reply_is_one_step_holding_one_text_part(agent: ac.Agent) -> None:
    assert translate(agent.prompt("hello")) == [
        {"type": "start", "messageId": "msg"},
        {"type": "start-step"},
        {"type": "text-start", "id": "p1"},
        {"type": "text-delta", "id": "p1", "delta": "echo 1: hello"},
        {"type": "text-end", "id": "p1"},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]


def test_reasoning_then_a_tool_call_with_its_result_then_the_answer(
        agent: ac.Agent, fast: FauxProvider) -> None:
    fast.set_responses([faux_assistant_message([faux_thinking("look first"),
                                                faux_tool_call("ls", {"path": "a"}, id="c1")]),
                        brain])

    assert translate(agent.prompt("go")) == [
        {"type": "start", "messageId": "msg"},
        {"type": "start-step"},
        {"type": "reasoning-start", "id": "p1"},
        {"type": "reasoning-delta", "id": "p1", "delta": "look first"},
        {"type": "reasoning-end", "id": "p1"},
        {"type": "tool-input-start", "toolCallId": "c1", "toolName": "ls"},
        {"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": '{"path": "a"}'},
        {"type": "tool-input-available", "toolCallId": "c1", "toolName": "ls",
         "input": {"path": "a"}},
        {"type": "tool-output-available", "toolCallId": "c1", "output": "ls a ok"},
        {"type": "finish-step"},
        {"type": "start-step"},
        {"type": "text-start", "id": "p2"},
        {"type": "text-delta", "id": "p2", "delta": "done: ls a ok"},
        {"type": "text-end", "id": "p2"},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]


def test_a_failing_tool_ends_its_part_with_tool_output_error(agent: ac.Agent) -> None:
    chunks = translate(agent.prompt("fail x"))
    ((kind, error),) = outputs(chunks).values()
    assert kind == "tool-output-error"
    assert "cannot touch x" in error
    assert chunks[-1] == {"type": "finish", "finishReason": "stop"}


def test_tool_progress_is_a_preliminary_output(agent: ac.Agent) -> None:
    chunks = translate(agent.prompt("count a"))
    assert [(c["output"], c.get("preliminary")) for c in chunks
            if c["type"] == "tool-output-available"] == [("1/2", True), ("2/2", True),
                                                         ("count a ok", None)]


def test_an_image_result_is_output_as_text_and_file_parts(fast: FauxProvider) -> None:
    def look(call_id: str, args: Any, signal: ac.AbortSignal, on_update: Any,
             ) -> ac.AgentToolResult:
        return ac.AgentToolResult([ac.TextContent("here:"), ac.ImageContent(PNG, "image/png")])

    fast.set_responses([faux_assistant_message([faux_tool_call("look", {}, id="c1")]), brain])
    with ac.Agent(fast.get_model(), tools=[ac.AgentTool("look", "Look.", {"type": "object"},
                                                        look)]) as agent:
        chunks = translate(agent.prompt("look"))
    assert outputs(chunks)["c1"] == ("tool-output-available", [
        {"type": "text", "text": "here:"},
        {"type": "file", "mediaType": "image/png", "url": f"data:image/png;base64,{PNG}"}])


def test_a_failed_model_ends_with_error_then_finish(agent: ac.Agent) -> None:
    assert translate(agent.prompt("error")) == [
        {"type": "start", "messageId": "msg"},
        {"type": "error", "errorText": "model overloaded"},
        {"type": "finish", "finishReason": "error"},
    ]


def test_an_aborted_run_closes_its_text_and_ends_with_abort(slow: FauxProvider) -> None:
    with ac.Agent(slow.get_model()) as agent:
        agent.subscribe(stop_at_first_text(agent))
        chunks = translate(agent.prompt("long 100"))
    assert types(chunks) == ["start", "start-step", "text-start", "text-delta", "text-end",
                             "finish-step", "abort"]
    assert chunks[-1] == {"type": "abort", "reason": "Request was aborted"}
    assert 0 < len(text_of(chunks).split()) < 100


def test_a_reply_that_fails_mid_call_fails_its_calls() -> None:
    """A call whose input was cut short ends with `tool-input-error`; a whole one, which will
    not run, with `tool-output-error`: no part is left spinning."""
    whole = ac.ToolCall("c1", "ls", {"path": "a"})
    cut = ac.ToolCall("c2", "ls", {})
    partial = faux_assistant_message([whole, cut])
    failed = faux_assistant_message([whole, cut], stop_reason="error",
                                    error_message="connection reset")
    events: list[ac.AgentEvent] = [
        ac.MessageStartEvent(partial),
        ac.MessageUpdateEvent(partial, ac.ToolCallStartEvent(0, partial)),
        ac.MessageUpdateEvent(partial, ac.ToolCallEndEvent(0, whole, partial)),
        ac.MessageUpdateEvent(partial, ac.ToolCallStartEvent(1, partial)),
        ac.MessageUpdateEvent(partial, ac.ToolCallDeltaEvent(1, '{"pa', partial)),
        ac.MessageEndEvent(failed),
        ac.TurnEndEvent(failed, []),
    ]

    chunks = translate(EndedRun([failed]), events)

    assert chunks[1:-2] == [
        {"type": "start-step"},
        {"type": "tool-input-start", "toolCallId": "c1", "toolName": "ls"},
        {"type": "tool-input-available", "toolCallId": "c1", "toolName": "ls",
         "input": {"path": "a"}},
        {"type": "tool-input-start", "toolCallId": "c2", "toolName": "ls"},
        {"type": "tool-input-delta", "toolCallId": "c2", "inputTextDelta": '{"pa'},
        {"type": "tool-input-error", "toolCallId": "c2", "toolName": "ls", "input": {},
         "errorText": "not run: connection reset"},
        {"type": "tool-output-error", "toolCallId": "c1",
         "errorText": "not run: connection reset"},
        {"type": "finish-step"},
    ]
    assert chunks[-2:] == [{"type": "error", "errorText": "connection reset"},
                           {"type": "finish", "finishReason": "error"}]


def test_a_tripped_guardrail_is_a_data_part_before_the_error(fast: FauxProvider) -> None:
    fast.set_responses([faux_assistant_message("the password is hunter2")])

    def no_secrets(message: ac.AssistantMessage, output: Any) -> str | None:
        return "a secret in the reply" if "password" in message.text else None

    with ac.Agent(fast.get_model(), output_guardrails=[no_secrets]) as agent:
        chunks = translate(agent.prompt("tell me"))
    kinds = [c["type"] for c in chunks]
    (trip,) = [c for c in chunks if c["type"] == GUARDRAIL_PART]
    assert trip["data"] == {"kind": "output", "name": "no_secrets",
                            "reason": "a secret in the reply", "retry": False}
    assert kinds.index(GUARDRAIL_PART) < kinds.index("error")
    assert chunks[-2:] == [
        {"type": "error", "errorText": "guardrail tripped: no_secrets: a secret in the reply"},
        {"type": "finish", "finishReason": "error"}]


def test_a_fallback_ends_the_failed_replys_step_with_a_data_part(fast: FauxProvider) -> None:
    second = register_faux_provider(provider="backup", token_size=(1000, 1000))
    try:
        fast.set_responses([faux_assistant_message("half an ans", stop_reason="error",
                                                   error_message="server error")])
        second.set_responses([faux_assistant_message("a whole answer")])
        with ac.Agent(fast.get_model(), fallback_models=[second.get_model()]) as agent:
            chunks = translate(agent.prompt("hi"))
    finally:
        second.unregister()
    assert [c for c in chunks if c["type"] != "text-delta"] == [
        {"type": "start", "messageId": "msg"},
        {"type": "start-step"},
        {"type": "text-start", "id": "p1"},
        {"type": "text-end", "id": "p1"},
        {"type": FALLBACK_PART, "data": {"model": "backup/faux-1",
                                         "reason": "faux/faux-1 failed: server error",
                                         "circuitOpen": False}},
        {"type": "finish-step"},
        {"type": "start-step"},
        {"type": "text-start", "id": "p2"},
        {"type": "text-end", "id": "p2"},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]
    assert [c["delta"] for c in chunks if c["type"] == "text-delta"] == ["half an ans",
                                                                         "a whole answer"]


def test_a_pause_asks_for_approval_in_the_step_of_its_calls_and_resuming_ends_them(
        agent: ac.Agent) -> None:
    paused = translate(agent.prompt("rm a b"))

    assert types(paused)[-5:] == ["tool-input-available", "tool-approval-request",
                                  "tool-approval-request", "finish-step", "finish"]
    assert [c for c in paused if c["type"] == "tool-approval-request"] == [
        {"type": "tool-approval-request", "approvalId": "rm-a", "toolCallId": "rm-a"},
        {"type": "tool-approval-request", "approvalId": "rm-b", "toolCallId": "rm-b"}]
    assert paused[-1] == {"type": "finish", "finishReason": "tool-calls"}

    resumed = translate(agent.continue_(approvals={"rm-a": True, "rm-b": "not b"}),
                        answered=("rm-a", "rm-b"))

    assert resumed[:3] == [
        {"type": "start", "messageId": "msg"},
        {"type": "tool-output-available", "toolCallId": "rm-a", "output": "rm a ok"},
        {"type": "tool-output-denied", "toolCallId": "rm-b"},
    ]
    assert types(resumed)[3:] == ["start-step", "text-start", "text-delta", "text-end",
                                  "finish-step", "finish"]
    assert text_of(resumed) == "done: rm a ok; denied: not b"


def test_a_childs_events_are_transient_data_and_its_waiting_call_gets_a_part(
        fast: FauxProvider) -> None:
    model = fast.get_model()
    fast.set_responses([faux_assistant_message([faux_tool_call("helper", {"input": "rm x"},
                                                               id="h1")]),
                        brain, brain, brain])
    with ac.Agent(model, tools=make_tools(Ran()), name="helper") as child, \
            ac.Agent(model, tools=[child.as_tool()], name="boss") as parent:
        paused = translate(parent.prompt("delegate"))
        resumed = translate(parent.continue_(approvals={"rm-x": True}), answered=("rm-x",))

    data = [c for c in paused if c["type"] == SUBAGENT_PART]
    assert data
    assert all(c["transient"] and c["data"]["toolCallId"] == "h1"
               and c["data"]["path"] == ["boss", "helper"] for c in data)
    assert [c for c in paused if c["type"].startswith("tool-") and c.get("toolCallId") == "rm-x"
            ] == [
        {"type": "tool-input-available", "toolCallId": "rm-x", "toolName": "rm",
         "input": {"path": "x"}, "toolMetadata": {"agentcore": {"path": ["boss", "helper"]}}},
        {"type": "tool-approval-request", "approvalId": "rm-x", "toolCallId": "rm-x"}]
    assert paused[-1] == {"type": "finish", "finishReason": "tool-calls"}
    assert outputs(resumed) == {"rm-x": ("tool-output-available", "rm x ok"),
                                "h1": ("tool-output-available", "done: rm x ok")}
    child_text = "".join(c["data"]["event"]["delta"] for c in resumed
                         if c["type"] == SUBAGENT_PART
                         and c["data"]["event"]["type"] == "text_delta")
    assert child_text == "done: rm x ok"


def test_encode_chunk_is_compact_json_keeping_non_ascii() -> None:
    assert encode_chunk({"type": "text-delta", "id": "a", "delta": "héllo ✓"}) == (
        '{"type":"text-delta","id":"a","delta":"héllo ✓"}'.encode())
    assert json.loads(encode_chunk({"delta": "bad \ud800 surrogate"})) == {
        "delta": "bad ? surrogate"}


# --- reading a request -------------------------------------------------------------------------


def user(text: str | None = None, *parts: dict[str, Any], id: str = "u1") -> dict[str, Any]:
    """A user UI message: `text` as its text part, then `parts`."""
    return {"id": id, "role": "user",
            "parts": ([] if text is None else [{"type": "text", "text": text}]) + list(parts)}


def chat(chat_id: str, *messages: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """A `DefaultChatTransport` body."""
    return {"id": chat_id, "messages": list(messages), "trigger": "submit-message",
            "messageId": None, **fields}


def image(media: str = "image/png", url: str = f"data:image/png;base64,{PNG}") -> dict[str, Any]:
    return {"type": "file", "mediaType": media, "filename": "x", "url": url}


def test_the_trailing_user_messages_are_the_prompt() -> None:
    history = [user("old", id="u0"),
               {"id": "a0", "role": "assistant", "parts": [{"type": "text", "text": "ok"}]}]
    request = parse_chat_request(json.dumps(chat("c", *history, user("first", id="u1"), user(
        "second", image(), {"type": "data-note", "data": {"x": 1}}, id="u2"))).encode())

    assert (request.run.thread_id, request.run.approvals) == ("c", None)
    prompt = request.run.prompt
    assert [m.content for m in prompt] == [
        "first", [ac.TextContent("second"), ac.ImageContent(PNG, "image/png")]]
    assert request.message_id == request.run.run_id


def test_an_assistant_message_answering_approvals_resumes() -> None:
    def part(call_id: str, **approval: Any) -> dict[str, Any]:
        return {"type": "tool-rm", "toolCallId": call_id, "state": "approval-responded",
                "input": {}, "approval": {"id": call_id, **approval}}

    message = {"id": "a1", "role": "assistant", "parts": [
        {"type": "step-start"}, part("old", approved=True),  # an earlier step: not read
        {"type": "step-start"}, {"type": "text", "text": "may I?"},
        part("rm-a", approved=True), part("rm-b", approved=False, reason="no"),
        part("rm-c", approved=False)]}

    request = parse_chat_request(json.dumps(chat("c", user("rm a b c"), message)).encode())

    assert request.run.approvals == {"rm-a": True, "rm-b": "no", "rm-c": False}
    assert (request.run.prompt, request.message_id) == ([], "a1")


# --- over HTTP ---------------------------------------------------------------------------------


class Served(AppServer):
    """The app on a uvicorn thread server of its own; `post` and `chat` speak `/api/chat`."""

    def post(self, body: Any, path: str = "/api/chat",  # type: ignore[override]
             **kwargs: Any) -> requests.Response:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        return self.http.post(f"{self.url}{path}", data=data, timeout=WAIT,
                              headers={"Content-Type": "application/json"}, **kwargs)

    def chat(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        """POST a chat request and read its whole stream (checked, `[DONE]` last)."""
        with self.post(body, stream=True) as reply:
            assert reply.status_code == 200, reply.text
            assert {k: reply.headers[k] for k in AI_SDK_HEADERS} == AI_SDK_HEADERS
            chunks = read_chunks(reply.iter_lines(decode_unicode=True))
        check_stream(chunks)
        return chunks


def read_chunks(lines: Iterator[str]) -> list[dict[str, Any]]:
    """The chunks of an SSE body, which must end with `data: [DONE]`."""
    chunks: list[dict[str, Any]] = []
    done = False
    for line in lines:
        assert not done or line == "", f"after [DONE]: {line!r}"
        if line == AI_SDK_DONE.decode().strip():
            done = True
        elif line.startswith("data: "):
            chunks.append(json.loads(line[6:]))
        else:
            assert line == "" or line.startswith(":"), line
    assert done, "no [DONE]"
    return chunks


@pytest.fixture
def serve() -> Iterator[Callable[[Any], Served]]:
    served: list[Served] = []

    def start(asgi: Any) -> Served:
        served.append(Served(asgi))
        return served[-1]

    yield start
    for server in served:
        server.stop()


@pytest.fixture(scope="module")
def refusing() -> Iterator[Served]:
    """One server for the tests whose requests must never reach an agent."""

    def make_agent(thread_id: str) -> ac.Agent:
        raise AssertionError(f"a bad request reached make_agent({thread_id!r})")

    served = Served(app(make_agent))
    yield served
    served.stop()


def error_of(reply: requests.Response, status: int) -> str:
    assert reply.status_code == status, reply.text
    assert reply.headers["content-type"] == "application/json"
    data = reply.json()
    assert list(data) == ["error"]
    return str(data["error"])


def test_a_prompt_streams_its_reply_and_the_agent_keeps_it(
        serve: Callable[[Any], Served], maker: Maker) -> None:
    served = serve(app(maker))

    with served.post(chat("t1", user("hello there")), stream=True) as reply:
        assert reply.headers["content-type"] == "text/event-stream"
        body = reply.content.decode()

    assert body.endswith('data: {"type":"finish","finishReason":"stop"}\n\ndata: [DONE]\n\n')
    chunks = read_chunks(iter(body.splitlines()))
    check_stream(chunks)
    assert chunks[0]["type"] == "start"
    assert text_of(chunks) == "echo 1: hello there"
    agent = maker.agents["t1"]
    assert [(m.role, m.text) for m in agent.messages] == [
        ("user", "hello there"), ("assistant", "echo 1: hello there")]
    assert not agent.state.is_streaming


def test_reasoning_tools_and_images_over_http(serve: Callable[[Any], Served],
                                              maker: Maker) -> None:
    served = serve(app(maker))

    thought = served.chat(chat("t", user("think hard")))
    listed = served.chat(chat("t", user("ls docs")))
    failed = served.chat(chat("t", user("fail x")))
    seen = served.chat(chat("t", user("what is this", image())))

    assert (text_of(thought, "reasoning"), text_of(thought)) == ("pondering hard",
                                                                 "thought about hard")
    assert [c for c in listed if c["type"].startswith("tool-")] == [
        {"type": "tool-input-start", "toolCallId": "ls-docs", "toolName": "ls"},
        {"type": "tool-input-delta", "toolCallId": "ls-docs", "inputTextDelta": '{"path": "docs"}'},
        {"type": "tool-input-available", "toolCallId": "ls-docs", "toolName": "ls",
         "input": {"path": "docs"}},
        {"type": "tool-output-available", "toolCallId": "ls-docs", "output": "ls docs ok"}]
    assert text_of(listed) == "done: ls docs ok"
    ((kind, error),) = outputs(failed).values()
    assert kind == "tool-output-error"
    assert "cannot touch x" in error
    assert text_of(seen) == "echo 4: what is this + 1 image(s)"
    assert maker.agents["t"].messages[-2] == ac.UserMessage(
        [ac.TextContent("what is this"), ac.ImageContent(PNG, "image/png")],
        timestamp=maker.agents["t"].messages[-2].timestamp)


def test_a_failed_model_streams_error_then_finish(serve: Callable[[Any], Served],
                                                  maker: Maker) -> None:
    served = serve(app(maker))
    chunks = served.chat(chat("t", user("error")))
    assert chunks[1:] == [{"type": "error", "errorText": "model overloaded"},
                          {"type": "finish", "finishReason": "error"}]
    assert text_of(served.chat(chat("t", user("still there?")))) == "echo 2: still there?"


def test_a_client_that_disconnects_aborts_the_run(serve: Callable[[Any], Served],
                                                  maker: Maker) -> None:
    served = serve(app(maker))
    reply = served.post(chat("slow", user("long 500")), stream=True)
    lines = reply.iter_lines(decode_unicode=True)
    next(line for line in lines if '"text-delta"' in line)
    agent = maker.agents["slow"]
    assert agent.state.is_streaming

    reply.close()

    assert agent.wait_for_idle(WAIT)  # well before the 10 s reply's end
    last = agent.messages[-1]
    assert isinstance(last, ac.AssistantMessage)
    assert last.stop_reason is ac.StopReason.ABORTED  # nothing else aborts it
    assert 0 < len(last.text.split()) < 500
    assert text_of(served.chat(chat("slow", user("hi again")))) == "echo 2: hi again"


def test_a_run_aborted_on_the_server_ends_with_abort(serve: Callable[[Any], Served],
                                                     maker: Maker) -> None:
    served = serve(app(maker))
    chunks = served.chat(chat("stop", user("long 100")))
    assert types(chunks) == ["start", "start-step", "text-start", "text-delta", "text-end",
                             "finish-step", "abort"]
    assert maker.agents["stop"].messages[-1].stop_reason is ac.StopReason.ABORTED


def test_heartbeat_comments_keep_a_slow_stream_open(serve: Callable[[Any], Served],
                                                    maker: Maker,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(web_sse, "HEARTBEAT_SECONDS", 0.05)
    served = serve(app(maker))
    with served.post(chat("slow", user("long 15")), stream=True) as reply:
        lines = list(reply.iter_lines(decode_unicode=True))
    assert lines.count(": heartbeat") >= 2  # SSE comments: the SDK's reader skips them
    chunks = read_chunks(iter(lines))
    check_stream(chunks)
    assert text_of(chunks) == " ".join(["word"] * 15)


def test_approvals_pause_the_stream_and_a_later_request_answers_them(
        serve: Callable[[Any], Served], maker: Maker) -> None:
    served = serve(app(maker))
    paused = served.chat(chat("t", user("rm a b")))
    assert [c["toolCallId"] for c in paused if c["type"] == "tool-approval-request"] == [
        "rm-a", "rm-b"]
    assert paused[-1] == {"type": "finish", "finishReason": "tool-calls"}
    assert "2 tool call(s) on thread 't' wait for approval: answer them with tool approval " \
        "responses first" in error_of(served.post(chat("t", user("never mind"))), 409)

    def answered(call_id: str, approved: bool) -> dict[str, Any]:
        return {"type": "tool-rm", "toolCallId": call_id, "state": "approval-responded",
                "input": {"path": call_id[-1]}, "approval": {"id": call_id, "approved": approved}}

    reply = {"id": paused[0]["messageId"], "role": "assistant", "parts": [
        {"type": "step-start"}, answered("rm-a", True), answered("rm-b", False)]}
    resumed = served.chat(chat("t", user("rm a b"), reply))

    assert resumed[0] == {"type": "start", "messageId": paused[0]["messageId"]}
    assert outputs(resumed) == {"rm-a": ("tool-output-available", "rm a ok"),
                                "rm-b": ("tool-output-denied", None)}
    assert maker.ran.ids == ["rm-a"]
    assert "nothing on thread 't' waits for approval: the request answers tool approvals " \
        "that no call waits for" in error_of(served.post(chat("t", user("rm a b"), reply)), 409)


def test_one_conversation_goes_on_across_ag_ui_and_api_chat(
        serve: Callable[[Any], Served], maker: Maker) -> None:
    served = serve(app(maker))
    first = served.chat(chat("both", user("one")))
    ag_ui = {"threadId": "both", "runId": "r1", "state": None, "tools": [], "context": [],
             "forwardedProps": None, "messages": [{"id": "u", "role": "user", "content": "two"}]}
    with served.post(ag_ui, "/ag-ui", stream=True) as reply:
        assert reply.status_code == 200
        second = "".join(json.loads(line[6:]).get("delta", "")
                         for line in reply.iter_lines(decode_unicode=True)
                         if line.startswith("data: "))
    third = served.chat(chat("both", user("three")))

    assert (text_of(first), second, text_of(third)) == ("echo 1: one", "echo 2: two",
                                                        "echo 3: three")
    history = served.http.get(f"{served.url}/ag-ui/threads/both", timeout=WAIT).json()
    assert [m.get("content") for m in history["messages"]] == [
        "one", "echo 1: one", "two", "echo 2: two", "three", "echo 3: three"]
    assert list(maker.agents) == ["both"]


@pytest.mark.parametrize(("data", "status", "message"), [
    pytest.param(b"{not json", 400, "the body is not JSON", id="not-json"),
    pytest.param(b"\xff\xfe", 400, "the body is not JSON", id="not-utf8"),
    pytest.param([1, 2], 422, "invalid chat request: the body must be a JSON object, got list",
                 id="not-an-object"),
    pytest.param({"messages": [user("hi")]}, 422, "invalid chat request: id must be 1 to 200 "
                 "printable characters, got 'None'", id="no-id"),
    pytest.param(chat("a\nb", user("hi")), 422, "id must be 1 to 200", id="id-newline"),
    pytest.param(chat("t" * 201, user("hi")), 422, "id must be 1 to 200", id="id-too-long"),
    pytest.param(chat("t"), 422, "messages must be a non-empty list of UI messages",
                 id="no-messages"),
    pytest.param({"id": "t", "messages": {"role": "user"}}, 422, "messages must be a non-empty "
                 "list", id="messages-not-a-list"),
    pytest.param(chat("t", "hi"), 422, "messages[0] must be an object, got str",
                 id="message-not-an-object"),
    pytest.param(chat("t", {"role": "user", "parts": []}), 422, "messages[0].id must be 1 to "
                 "200 printable characters", id="message-without-id"),
    pytest.param(chat("t", {"id": "u", "role": "wizard", "parts": []}), 422, "messages[0].role "
                 "must be 'user', 'assistant' or 'system', got 'wizard'", id="unknown-role"),
    pytest.param(chat("t", {"id": "u", "role": "user", "content": "hi"}), 422,
                 "messages[0].parts must be a list", id="content-not-parts"),
    pytest.param(chat("t", user("hi"), {"id": "u2", "role": "user", "parts": [{"text": "x"}]}),
                 422, "messages[1].parts[0] must be an object with a string 'type'",
                 id="part-without-type"),
    pytest.param(chat("t", {"id": "u", "role": "user", "parts": [{"type": "text"}]}), 422,
                 "messages[0].parts[0].text must be a string", id="text-without-text"),
    pytest.param(chat("t", user("hi"), {"id": "a", "role": "assistant", "parts": [
        {"type": "text", "text": "yes?"}]}), 422, "nothing to run: the last of 'messages' must "
        "be a user message, or an assistant message answering tool approvals",
        id="ends-with-assistant"),
    pytest.param(chat("t", {"id": "s", "role": "system", "parts": [
        {"type": "text", "text": "be nice"}]}), 422, "nothing to run: the last of 'messages'",
        id="ends-with-system"),
    pytest.param(chat("t", user(" \n ")), 422, "nothing to run: messages[0].parts hold no text "
                 "or image", id="blank-prompt"),
    pytest.param(chat("t", user(None, {"type": "data-x", "data": 1})), 422, "nothing to run",
                 id="only-data"),
    pytest.param(chat("t", user("read", image("application/pdf", "data:application/pdf;base64,"
                                                                 "AAAA"))), 422,
                 "messages[0].parts[1]: a file part of type 'application/pdf' is not supported "
                 "(text, and images given as base64 data: URLs, are)", id="pdf"),
    pytest.param(chat("t", user("see", image(url="https://example.com/a.png"))), 422,
                 "messages[0].parts[1]: a file part not given as a base64 data: URL is not "
                 "supported", id="image-by-url"),
    pytest.param(chat("t", user("see", {"type": "file", "url": "data:,x"})), 422,
                 "messages[0].parts[1]: a file part needs a string 'mediaType' and 'url'",
                 id="file-without-media-type"),
    pytest.param(chat("t", user("hi", {"type": "reasoning", "text": "hmm"})), 422,
                 "messages[0].parts[1]: a 'reasoning' part is not supported in a user message",
                 id="reasoning-in-user-message"),
    pytest.param(chat("t", user("hi"), trigger="regenerate-message"), 422,
                 "trigger 'regenerate-message' is not supported", id="regenerate"),
    pytest.param(chat("t", user("hi"), trigger="resume-stream"), 422,
                 "trigger must be 'submit-message', got 'resume-stream'", id="unknown-trigger"),
    pytest.param(chat("t", user("rm a"), {"id": "a", "role": "assistant", "parts": [
        {"type": "tool-rm", "toolCallId": "rm-a", "state": "approval-responded",
         "approval": {"id": "rm-a", "approved": "yes"}}]}), 422,
        'messages[1].parts[0].approval: expected {"id", "approved": bool, "reason"?: str}, '
        'got {"id": "rm-a", "approved": "yes"}', id="approval-not-bool"),
])
def test_bad_bodies_are_json_errors_naming_the_problem(
        refusing: Served, data: Any, status: int, message: str) -> None:
    assert message in error_of(refusing.post(data), status)


def test_a_body_over_the_limit_is_413(serve: Callable[[Any], Served], maker: Maker) -> None:
    served = serve(app(maker, max_body_bytes=1000))
    assert error_of(served.post(chat("t", user("x" * 2000))), 413) == (
        "the body is larger than 1000 bytes")
    assert text_of(served.chat(chat("t", user("x" * 700)))).startswith("echo 1: xxx")


def test_get_on_the_endpoint_is_405(serve: Callable[[Any], Served], maker: Maker) -> None:
    served = serve(app(maker))
    reply = served.http.get(f"{served.url}/api/chat", timeout=WAIT)
    assert error_of(reply, 405) == "Method Not Allowed"
    assert reply.headers["allow"] == "POST"


# --- the official client, in node ----------------------------------------------------------------


def node(js: Path, served: Served, spec: dict[str, Any]) -> Any:
    """Run `ai_sdk_reader.mjs` against `served` and return what it printed."""
    done = subprocess.run(["node", "ai_sdk_reader.mjs", served.url, json.dumps(spec)], cwd=js,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.slow
def test_the_ai_packages_reader_builds_each_reply(serve: Callable[[Any], Served], maker: Maker,
                                                  js_clients: Path) -> None:
    served = serve(app(maker))
    requests_ = [{"body": chat(f"read-{i}", user(text))} for i, text in enumerate(
        ["hello", "think twice", "ls docs", "fail x", "error"])]
    requests_ += [{"body": chat("slow", user("long 500")), "abortAfter": "text-delta"},
                  {"body": chat("stop", user("long 100"))}]

    text, thought, tool, failing, error, left, stopped = node(
        js_clients, served, {"mode": "read", "requests": requests_})

    for result in (text, thought, tool, failing, error, left, stopped):
        assert result["status"] == 200
        assert result["headers"]["x-vercel-ai-ui-message-stream"] == "v1"
        assert result["valid"] is True  # `safeValidateUIMessages` takes the message
        assert result["message"]["role"] == "assistant"
    assert [p for p in text["message"]["parts"] if p["type"] != "step-start"] == [
        {"type": "text", "text": "echo 1: hello", "state": "done"}]
    assert [(p["type"], p.get("text")) for p in thought["message"]["parts"]] == [
        ("step-start", None), ("reasoning", "pondering twice"), ("text", "thought about twice")]
    (call,) = (p for p in tool["message"]["parts"] if p["type"] == "tool-ls")
    assert (call["toolCallId"], call["state"], call["input"], call["output"]) == (
        "ls-docs", "output-available", {"path": "docs"}, "ls docs ok")
    assert tool["message"]["parts"][-1]["text"] == "done: ls docs ok"
    (call,) = (p for p in failing["message"]["parts"] if p["type"] == "tool-fail")
    assert call["state"] == "output-error"
    assert "cannot touch x" in call["errorText"]
    assert (error["errors"], error["chunks"]) == (["model overloaded"],
                                                  ["start", "error", "finish"])
    assert left["aborted"] is True
    assert maker.agents["slow"].wait_for_idle(WAIT)  # the server aborted the run it streamed
    assert maker.agents["slow"].messages[-1].stop_reason is ac.StopReason.ABORTED
    assert stopped["chunks"][-1] == "abort"
    assert stopped["errors"] == []
    assert stopped["message"]["parts"][-1]["text"].startswith("word")


@pytest.mark.slow
def test_use_chat_drives_a_conversation_with_an_approval(
        serve: Callable[[Any], Served], maker: Maker, js_clients: Path) -> None:
    served = serve(app(maker))

    out = node(js_clients, served, {"mode": "chat", "id": "chat-1", "steps": [
        {"send": "ls a"}, {"send": "rm b c"}, {"approve": True}, {"approve": False,
                                                                   "reason": "keep c"},
        {"send": "thanks"}]})

    assert (out["status"], out["errors"]) == ("ready", [])
    assert [f["finishReason"] for f in out["finishes"]] == ["stop", "tool-calls", "stop",
                                                            "stop"]
    roles = [m["role"] for m in out["messages"]]
    assert roles == ["user", "assistant", "user", "assistant", "user", "assistant"]
    approved = out["messages"][3]["parts"]
    assert [(p["type"], p["state"], p.get("output")) for p in approved if
            p["type"] == "tool-rm"] == [("tool-rm", "output-available", "rm b ok"),
                                        ("tool-rm", "output-denied", None)]
    assert approved[-1]["text"] == "done: rm b ok; denied: keep c"
    assert out["messages"][-1]["parts"][-1]["text"] == "echo 3: thanks"
    assert maker.ran.ids == ["ls-a", "rm-b"]
    assert [m.role for m in maker.agents["chat-1"].messages] == [
        "user", "assistant", "toolResult", "assistant", "user", "assistant", "toolApproval",
        "toolResult", "toolResult", "assistant", "user", "assistant"]
