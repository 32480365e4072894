"""The `openai-completions` provider end to end, against the scripted server.

Fixtures (`tests/fixtures/openai_completions/`) are replayed whole, one byte at a time and in
random pieces, with LF and CRLF framing; each must give exactly the events and final message
of reference §5.6. Request bodies and headers are read back from what the server received.
Translation is tested on `mock_server` (no socket); a text reply, a caller's session, a
connection cut mid-stream and aborts go over real HTTP (`sse_server`).
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import attrs
import paths
import pytest
import requests
from _internals import short_hash
from mock_server import MockServer, ScriptedServer
from sse_server import HOLD, RecordedRequest, SSEServer, free_port

import agentcore as ac
from agentcore.providers.openai_completions import build_body

FIXTURES = paths.FIXTURES / "openai_completions"
SSE_FIXTURES = sorted(p.name for p in FIXTURES.glob("*.sse"))
WAIT_S = 5.0  # the timeout on every wait for another thread
KEY = "sk-test"
API = "openai-completions"
MODEL_ID = "gpt-4o-mini"
PRICES = ac.ModelCost(0.15, 0.6)
CONTEXT = ac.Context("You are terse.", [ac.UserMessage("Say hello")])
WEATHER = ac.Tool("get_weather", "Current weather for a city.", {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})
PNG = "iVBORw0KGgo="


# --- helpers ------------------------------------------------------------------------------------


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def local_model(server: ScriptedServer, **fields: Any) -> ac.Model:
    """A model served by the local server (`base_url` may be given as a suffix of its URL)."""
    fields.setdefault("cost", PRICES)
    suffix = fields.pop("suffix", "")
    fields.setdefault("id", MODEL_ID)
    fields.setdefault("provider", "openai")
    return ac.Model(fields.pop("id"), "test model", API, fields.pop("provider"),
                    server.url + suffix, **fields)


def remote_model(base_url: str = "https://api.openai.com/v1", **fields: Any) -> ac.Model:
    """A model on a real host, for `build_body` only (nothing is sent)."""
    fields.setdefault("id", MODEL_ID)
    fields.setdefault("provider", "openai")
    return ac.Model(fields.pop("id"), "test model", API, fields.pop("provider"), base_url,
                    **fields)


class _ToLocal(requests.adapters.HTTPAdapter):
    """Sends each request to the local server instead, keeping its path and query."""

    def __init__(self, server: SSEServer) -> None:
        super().__init__()
        self.server = server

    def send(self, request: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        parts = urlsplit(request.url)
        request.url = urlunsplit(urlsplit(self.server.url)[:2] + parts[2:])
        return super().send(request, **kwargs)


@contextlib.contextmanager
def to_local(server: ScriptedServer) -> Iterator[requests.Session | None]:
    """A caller's session whose requests to OpenAI land on `server`: a model keeps OpenAI's
    `base_url` (which decides what the body holds) while the request is recorded locally. For
    a `MockServer`, None (the shared client, which it answers) once it answers for OpenAI's
    host too."""
    if isinstance(server, MockServer):
        server.also_answer("https://api.openai.com")
        yield None
        return
    with requests.Session() as session:
        session.trust_env = False  # no proxy from the environment
        session.mount("https://api.openai.com/", _ToLocal(server))
        yield session


def options(**fields: Any) -> ac.StreamOptions:
    fields.setdefault("api_key", KEY)
    return ac.StreamOptions(**fields)


@dataclass
class Run:
    events: list[ac.AssistantMessageEvent]
    snapshots: list[list[Any]]  # partial.content copied when each event arrived ([] for none)
    message: ac.AssistantMessage

    def pairs(self) -> list[tuple[Any, list[Any]]]:
        return list(zip(self.events, self.snapshots, strict=True))


def collect(stream: ac.AssistantMessageEventStream) -> Run:
    events, snapshots = [], []
    for event in stream:
        events.append(event)
        partial = getattr(event, "partial", None)
        snapshots.append(list(partial.content) if partial is not None else [])
    return Run(events, snapshots, stream.result(WAIT_S))


def run_stream(model: ac.Model, context: ac.Context = CONTEXT, **opts: Any) -> Run:
    return collect(ac.stream(model, context, options(**opts)))


def replay(server: ScriptedServer, body: bytes, chunking: str = "whole", seed: int = 0,
           **opts: Any) -> Run:
    server.sse(body, chunking=chunking, seed=seed)  # type: ignore[arg-type]
    return run_stream(local_model(server), **opts)


def sent(server: ScriptedServer, context: ac.Context = CONTEXT, model: ac.Model | None = None,
         **opts: Any) -> RecordedRequest:
    """Run one request answered by the text fixture; return what the server received."""
    server.sse(fixture("text.sse"))
    run = run_stream(model or local_model(server), context, **opts)
    assert run.events[-1].type == "done", run.message.error_message
    return server.requests[-1]


def body_of(model: ac.Model, context: ac.Context = CONTEXT, **opts: Any) -> dict[str, Any]:
    return build_body(model, context, ac.StreamOptions(**opts))


def signature(event: ac.AssistantMessageEvent) -> tuple[Any, ...]:
    """What identifies an event, without its live `partial`."""
    if isinstance(event, ac.DoneEvent):
        return ("done", event.reason)
    if isinstance(event, ac.ErrorEvent):
        return ("error", event.reason)
    if isinstance(event, ac.StartEvent):
        return ("start",)
    out: tuple[Any, ...] = (event.type, event.content_index)  # type: ignore[union-attr]
    if hasattr(event, "delta"):
        return (*out, event.delta)
    if hasattr(event, "content"):
        return (*out, event.content)
    if hasattr(event, "tool_call"):
        return (*out, event.tool_call)
    return out


def without_timestamp(message: ac.AssistantMessage) -> ac.AssistantMessage:
    return attrs.evolve(message, timestamp=0)


def reply(content: list[Any], usage: tuple[int, int, int, int, int], stop: str,
          response_id: str, error: str | None = None) -> ac.AssistantMessage:
    priced = ac.calculate_cost(ac.Model(MODEL_ID, "m", API, "openai", "http://x", cost=PRICES),
                               ac.Usage(*usage))
    return ac.AssistantMessage(content, API, "openai", MODEL_ID, priced, stop, error,
                               response_id, timestamp=0)


_KIND = {"text": ac.TextContent, "thinking": ac.ThinkingContent, "toolcall": ac.ToolCall}


def check_invariants(run: Run) -> None:
    """Reference §2: the protocol rules every stream keeps."""
    events = run.events
    types = [e.type for e in events]
    assert types.count("start") <= 1
    if types != ["error"]:  # only a lone error may come without start
        assert types[0] == "start", types
    terminal = [i for i, t in enumerate(types) if t in ("done", "error")]
    assert terminal == [len(events) - 1], types
    started: dict[int, str] = {}
    ended: set[int] = set()
    for event, snapshot in run.pairs():
        kind, _, phase = event.type.rpartition("_")
        if phase == "start" and kind:
            index = event.content_index  # type: ignore[union-attr]
            assert index not in started, f"block {index} started twice"
            assert index == len(started), "blocks are numbered in order"
            assert isinstance(snapshot[index], _KIND[kind])
            started[index] = kind
        elif phase in ("delta", "end"):
            index = event.content_index  # type: ignore[union-attr]
            assert started.get(index) == kind, f"{event.type} for a block never started"
            assert index not in ended, f"{event.type} after the block ended"
            assert isinstance(snapshot[index], _KIND[kind])
            if phase == "end":
                ended.add(index)
        for block in snapshot:
            if isinstance(block, ac.ToolCall):
                assert isinstance(block.arguments, dict)
    last = events[-1]
    if isinstance(last, ac.DoneEvent):
        assert last.reason == last.message.stop_reason == run.message.stop_reason
        assert last.reason in ("stop", "length", "toolUse")
        assert last.message == run.message
    else:
        assert isinstance(last, ac.ErrorEvent)
        assert last.reason == last.error.stop_reason == run.message.stop_reason
        assert last.reason in ("error", "aborted")
        assert last.error.error_message
        assert last.error == run.message
    for block in run.message.content:
        if isinstance(block, ac.ToolCall):
            assert isinstance(block.arguments, dict)


# --- 1. fixture replay ----------------------------------------------------------------------------

PARIS = ac.ToolCall("call_Ab12Cd34Ef56Gh78Ij90Kl12", "get_weather", {"city": "Paris"})
TOKYO = ac.ToolCall("call_Mn34Op56Qr78St90Uv12Wx34", "get_weather", {"city": "Tokyo"})
OLLAMA_PARIS = ac.ToolCall("call_k3b9x2q1", "get_weather", {"city": "Paris"})
OLLAMA_TOKYO = ac.ToolCall("call_p8d7v6m5", "get_weather", {"city": "Tokyo"})
LLAMA_CPP_ID = "cmpl-5b0e8c2a-9d4f-4c61-8a3e-7f12d6b9c043"
LLAMA_CPP_ADD = ac.ToolCall(f"call__0_add_{LLAMA_CPP_ID}", "add", {"a": 2, "b": 3})
LLAMA_CPP_ARGS = ['{"', "a", '":', " ", "2", ",", ' "', "b", '":', " ", "3", "}", ""]
DEEPSEEK_THOUGHT = "15 + 27: 10+20=30, 5+7=12, so 42."
OLLAMA_THOUGHT = "User asks 15+27. That is 42."
ONCE = [("start",), ("text_start", 0), ("text_delta", 0, "Once upon"), ("error", "error")]

EXPECTED: dict[str, tuple[list[tuple[Any, ...]], ac.AssistantMessage]] = {
    "text.sse": (
        [("start",), ("text_start", 0), ("text_delta", 0, "Hello"), ("text_delta", 0, " test"),
         ("text_delta", 0, " successful"), ("text_end", 0, "Hello test successful"),
         ("done", "stop")],
        reply([ac.TextContent("Hello test successful")], (28, 4, 0, 0, 32), "stop",
              "chatcmpl-C7xPZk2d1QwYVmV6b3oRr8sT0aHqN"),
    ),
    "tool_calls.sse": (
        [("start",), ("toolcall_start", 0), ("toolcall_delta", 0, ""),
         ("toolcall_delta", 0, '{"ci'), ("toolcall_delta", 0, 'ty": "P'),
         ("toolcall_delta", 0, 'aris"}'), ("toolcall_end", 0, PARIS),
         ("toolcall_start", 1), ("toolcall_delta", 1, ""), ("toolcall_delta", 1, '{"ci'),
         ("toolcall_delta", 1, 'ty": "T'), ("toolcall_delta", 1, 'okyo"}'),
         ("toolcall_end", 1, TOKYO), ("done", "toolUse")],
        reply([PARIS, TOKYO], (61, 48, 0, 0, 109), "toolUse", "chatcmpl-C7xQ1"),
    ),
    "tool_calls_ollama.sse": (
        [("start",), ("toolcall_start", 0), ("toolcall_delta", 0, '{"city":"Paris"}'),
         ("toolcall_end", 0, OLLAMA_PARIS), ("toolcall_start", 1),
         ("toolcall_delta", 1, '{"city":"Tokyo"}'), ("toolcall_end", 1, OLLAMA_TOKYO),
         ("done", "toolUse")],
        reply([OLLAMA_PARIS, OLLAMA_TOKYO], (150, 60, 0, 0, 210), "toolUse", "chatcmpl-412"),
    ),
    "tool_calls_llama_cpp_python.sse": (  # the name repeated in every delta, kept once
        [("start",), ("toolcall_start", 0),
         *[("toolcall_delta", 0, piece) for piece in LLAMA_CPP_ARGS],
         ("toolcall_end", 0, LLAMA_CPP_ADD), ("done", "toolUse")],
        reply([LLAMA_CPP_ADD], (0, 0, 0, 0, 0), "toolUse", f"chat{LLAMA_CPP_ID}"),
    ),
    "reasoning_content.sse": (
        [("start",), ("thinking_start", 0), ("thinking_delta", 0, "15 + 27:"),
         ("thinking_delta", 0, " 10+20=30, 5+7=12, so 42."), ("thinking_end", 0, DEEPSEEK_THOUGHT),
         ("text_start", 1), ("text_delta", 1, "15 + 27 = "), ("text_delta", 1, "42."),
         ("text_end", 1, "15 + 27 = 42."), ("done", "stop")],
        reply([ac.ThinkingContent(DEEPSEEK_THOUGHT, "reasoning_content"),
               ac.TextContent("15 + 27 = 42.")], (16, 40, 0, 0, 56), "stop",
              "5c1b7c6e-5f1e-4a9d-9d3e-2b7f0a1c9e11"),
    ),
    "reasoning_ollama.sse": (
        [("start",), ("thinking_start", 0), ("thinking_delta", 0, "User asks 15+27."),
         ("thinking_delta", 0, " That is 42."), ("thinking_end", 0, OLLAMA_THOUGHT),
         ("text_start", 1), ("text_delta", 1, "15 + 27 = "), ("text_delta", 1, "42."),
         ("text_end", 1, "15 + 27 = 42."), ("done", "stop")],
        reply([ac.ThinkingContent(OLLAMA_THOUGHT, "reasoning"), ac.TextContent("15 + 27 = 42.")],
              (72, 25, 0, 0, 97), "stop", "chatcmpl-87"),
    ),
    "error_openrouter.sse": (
        ONCE,
        reply([ac.TextContent("Once upon")], (0, 0, 0, 0, 0), "error",
              "gen-1756400030-h2Xc9P0qVbN3wRkT", "Provider disconnected unexpectedly"),
    ),
    "error_openai.sse": (
        ONCE,
        reply([ac.TextContent("Once upon")], (0, 0, 0, 0, 0), "error", "chatcmpl-C7xR9",
              "The server had an error while processing your request. Sorry about that!"),
    ),
    "error_vllm.sse": (
        ONCE,
        reply([ac.TextContent("Once upon")], (0, 0, 0, 0, 0), "error", "chatcmpl-9f2c4e1a7b3d4c8e",
              "Sampled token IDs exceed the max model length. Total number of tokens: 40961 > "
              "max_model_len: 40960"),
    ),
    "usage_cached.sse": (
        [("start",), ("text_start", 0), ("text_delta", 0, "Cached"), ("text_delta", 0, " reply."),
         ("text_end", 0, "Cached reply."), ("done", "stop")],
        reply([ac.TextContent("Cached reply.")], (86, 90, 1920, 0, 2096), "stop",
              "chatcmpl-C7xS4"),
    ),
    "length.sse": (
        [("start",), ("text_start", 0), ("text_delta", 0, "The history of"),
         ("text_delta", 0, " Rome begins"), ("text_end", 0, "The history of Rome begins"),
         ("done", "length")],
        reply([ac.TextContent("The history of Rome begins")], (14, 5, 0, 0, 19), "length",
              "chatcmpl-C7xT7"),
    ),
}
CHUNKINGS = [("whole", 0), ("bytewise", 0), ("random", 1), ("random", 2), ("random", 3)]


def test_openai_completions_every_fixture_has_an_expectation() -> None:
    assert sorted(EXPECTED) == SSE_FIXTURES


@pytest.mark.parametrize("framing", ["lf", "crlf"])
@pytest.mark.parametrize(("chunking", "seed"), CHUNKINGS, ids=[f"{c}-{s}" for c, s in CHUNKINGS])
@pytest.mark.parametrize("name", SSE_FIXTURES)
def test_openai_completions_fixture_replay_gives_the_reference_events(
        mock_server, name, chunking, seed, framing) -> None:
    body = fixture(name)
    if framing == "crlf":
        body = body.replace(b"\n", b"\r\n")
    run = replay(mock_server, body, chunking, seed)
    check_invariants(run)
    events, message = EXPECTED[name]
    assert [signature(e) for e in run.events] == events
    assert without_timestamp(run.message) == message
    assert len(mock_server.requests) == 1


@pytest.mark.parametrize("chunking", ["whole", "bytewise"])
def test_openai_completions_llama_cpp_python_repeated_name_is_kept_once(mock_server,
                                                                        chunking) -> None:
    # llama-cpp-python's server sends `"name": "add"` in every delta (the openai SDK's
    # accumulator builds "addadd..."): a name that comes again replaces, never appends.
    run = replay(mock_server, fixture("tool_calls_llama_cpp_python.sse"), chunking)
    assert run.message.tool_calls == [LLAMA_CPP_ADD]
    names = {block.name for snapshot in run.snapshots for block in snapshot
             if isinstance(block, ac.ToolCall)}
    assert names == {"add"}


def test_openai_completions_any_chunking_gives_identical_results(mock_server) -> None:
    for name in SSE_FIXTURES:
        runs = [replay(mock_server, fixture(name), chunking, seed) for chunking, seed in CHUNKINGS]
        first = runs[0]
        for run in runs[1:]:
            assert [signature(e) for e in run.events] == [signature(e) for e in first.events]
            assert without_timestamp(run.message) == without_timestamp(first.message)


def test_openai_completions_text_usage_and_cost(sse_server) -> None:
    usage = replay(sse_server, fixture("text.sse")).message.usage
    assert (usage.input, usage.output, usage.cache_read, usage.cache_write,
            usage.total_tokens) == (28, 4, 0, 0, 32)
    assert usage.cost.input == pytest.approx(4.2e-6)
    assert usage.cost.output == pytest.approx(2.4e-6)
    assert usage.cost.total == pytest.approx(6.6e-6)


def test_openai_completions_null_delta_in_an_open_text_block_is_skipped(mock_server) -> None:
    def chunk(choice: dict[str, Any]) -> bytes:
        return b"data: " + json.dumps({"id": "c1", "choices": [choice]}).encode() + b"\n\n"

    body = (chunk({"index": 0, "delta": {"content": "Hel"}})
            + chunk({"index": 0, "delta": None})
            + chunk({"index": 0, "delta": {"content": "lo"}})
            + chunk({"index": 0, "delta": {}, "finish_reason": "stop"}) + b"data: [DONE]\n\n")
    message = replay(mock_server, body).message
    assert (message.stop_reason, message.content) == (ac.StopReason.STOP, [ac.TextContent("Hello")])


def test_openai_completions_cached_usage_is_split_and_priced(mock_server) -> None:
    mock_server.sse(fixture("usage_cached.sse"))
    model = local_model(mock_server, cost=ac.ModelCost(0.25, 2.0, 0.025, 0.0))
    usage = run_stream(model).message.usage
    assert (usage.input, usage.output, usage.cache_read, usage.cache_write,
            usage.total_tokens) == (2006 - 1920, 90, 1920, 0, 2096)
    assert usage.total_tokens == usage.input + usage.output + usage.cache_read
    assert usage.cost.input == pytest.approx(86 * 0.25e-6)
    assert usage.cost.cache_read == pytest.approx(1920 * 0.025e-6)
    assert usage.cost.output == pytest.approx(90 * 2e-6)
    assert usage.cost.total == pytest.approx(
        usage.cost.input + usage.cost.output + usage.cost.cache_read)


@pytest.mark.parametrize("chunking", ["whole", "bytewise"])
def test_openai_completions_tool_call_arguments_after_each_delta(mock_server, chunking) -> None:
    run = replay(mock_server, fixture("tool_calls.sse"), chunking)
    seen = [(e.content_index, e.delta, s[e.content_index].arguments)
            for e, s in run.pairs() if isinstance(e, ac.ToolCallDeltaEvent)]
    assert seen == [
        (0, "", {}), (0, '{"ci', {}), (0, 'ty": "P', {"city": "P"}),
        (0, 'aris"}', {"city": "Paris"}),
        (1, "", {}), (1, '{"ci', {}), (1, 'ty": "T', {"city": "T"}),
        (1, 'okyo"}', {"city": "Tokyo"}),
    ]
    starts = [s[e.content_index] for e, s in run.pairs() if isinstance(e, ac.ToolCallStartEvent)]
    assert [(c.id, c.name) for c in starts] == [(PARIS.id, "get_weather"),
                                                (TOKYO.id, "get_weather")]
    ends = [e.tool_call for e in run.events if isinstance(e, ac.ToolCallEndEvent)]
    assert ends == [PARIS, TOKYO]


def test_openai_completions_ollama_tool_calls_arrive_whole(mock_server) -> None:
    run = replay(mock_server, fixture("tool_calls_ollama.sse"))
    starts = [s[e.content_index] for e, s in run.pairs() if isinstance(e, ac.ToolCallStartEvent)]
    assert [(c.id, c.name) for c in starts] == [  # the block already has its id and name
        ("call_k3b9x2q1", "get_weather"), ("call_p8d7v6m5", "get_weather")]
    assert run.message.tool_calls == [OLLAMA_PARIS, OLLAMA_TOKYO]


def test_openai_completions_partial_after_each_delta(mock_server) -> None:
    run = replay(mock_server, fixture("reasoning_content.sse"), "bytewise")
    seen = [(e.type, s) for e, s in run.pairs() if e.type.endswith("_delta")]
    thought = ac.ThinkingContent(DEEPSEEK_THOUGHT, "reasoning_content")
    assert seen == [
        ("thinking_delta", [ac.ThinkingContent("15 + 27:", "reasoning_content")]),
        ("thinking_delta", [thought]),
        ("text_delta", [thought, ac.TextContent("15 + 27 = ")]),
        ("text_delta", [thought, ac.TextContent("15 + 27 = 42.")]),
    ]


def test_openai_completions_partial_at_block_boundaries(mock_server) -> None:
    run = replay(mock_server, fixture("reasoning_content.sse"))
    seen = [(e.type, s) for e, s in run.pairs()
            if e.type.endswith(("_start", "_end")) and e.type != "start"]
    thought = ac.ThinkingContent(DEEPSEEK_THOUGHT, "reasoning_content")
    assert seen == [
        ("thinking_start", [ac.ThinkingContent("")]),
        ("thinking_end", [thought]),
        ("text_start", [thought, ac.TextContent("")]),
        ("text_end", [thought, ac.TextContent("15 + 27 = 42.")]),
    ]


def test_openai_completions_final_message_is_not_the_live_partial(mock_server) -> None:
    run = replay(mock_server, fixture("text.sse"))
    partial = run.events[0].partial  # type: ignore[union-attr]
    assert run.message is not partial
    assert run.message.content is not partial.content
    assert ac.from_json(ac.AssistantMessage, ac.to_json(run.message)) == run.message


# --- 2. request bodies and headers ----------------------------------------------------------------


@pytest.mark.parametrize(("suffix", "path"), [
    ("", "/chat/completions"), ("/", "/chat/completions"),
    ("/v1", "/v1/chat/completions"), ("/v1/", "/v1/chat/completions"),
])
def test_openai_completions_posts_to_chat_completions_under_the_base_url(
        mock_server, suffix, path) -> None:
    request = sent(mock_server, model=local_model(mock_server, suffix=suffix))
    assert (request.method, request.path) == ("POST", path)


def test_openai_completions_default_headers(mock_server) -> None:
    request = sent(mock_server)
    assert request.header("Authorization") == f"Bearer {KEY}"
    assert request.header("Content-Type") == "application/json"
    assert request.header("Accept") == "text/event-stream"


def test_openai_completions_header_precedence(mock_server) -> None:
    model = local_model(mock_server, headers={"X-Layer": "model", "X-Model-Only": "m",
                                              "Accept": "application/json"})
    request = sent(mock_server, model=model, headers={"X-Layer": "options", "X-Opt-Only": "o",
                                                      "Authorization": "Bearer override"})
    assert request.header("X-Layer") == "options"
    assert request.header("X-Model-Only") == "m"
    assert request.header("X-Opt-Only") == "o"
    assert request.header("Accept") == "application/json"  # model.headers beat defaults
    assert request.header("Authorization") == "Bearer override"  # options beat defaults


def test_openai_completions_body_is_compact_json(mock_server) -> None:
    context = ac.Context("Sys: be brief, ok?", [ac.UserMessage("Café, naïve: 😀")])
    request = sent(mock_server, context)
    assert b'": ' not in request.body
    assert b'", "' not in request.body
    assert request.body == json.dumps(request.json, separators=(",", ":"),
                                      ensure_ascii=False).encode()
    assert "Café, naïve: 😀".encode() in request.body  # non-ASCII is not escaped


def test_openai_completions_default_body(mock_server) -> None:
    # The local server is no OpenAI: the output limit goes as `max_tokens` (API.md §17).
    assert sent(mock_server).json == {
        "model": MODEL_ID,
        "messages": [{"role": "system", "content": "You are terse."},
                     {"role": "user", "content": "Say hello"}],
        "stream": True,
        "stream_options": {"include_usage": True},
        "store": False,
        "max_tokens": 16384,
    }


def test_openai_completions_default_body_to_openai(sse_server) -> None:
    with to_local(sse_server) as session:
        request = sent(sse_server, model=remote_model(), http_session=session)
    assert request.path == "/v1/chat/completions"
    assert request.json == {
        "model": MODEL_ID,
        "messages": [{"role": "system", "content": "You are terse."},
                     {"role": "user", "content": "Say hello"}],
        "stream": True,
        "stream_options": {"include_usage": True},
        "store": False,
        "max_completion_tokens": 16384,
    }


def test_openai_completions_no_system_prompt_no_system_message(mock_server) -> None:
    request = sent(mock_server, ac.Context(None, [ac.UserMessage("hi")]))
    assert request.json["messages"] == [{"role": "user", "content": "hi"}]


def test_openai_completions_developer_role_for_a_reasoning_model(mock_server) -> None:
    request = sent(mock_server, model=local_model(mock_server, id="o4-mini", reasoning=True))
    assert request.json["messages"][0] == {"role": "developer", "content": "You are terse."}


@pytest.mark.parametrize("model", [
    remote_model("https://api.x.ai/v1", id="grok-4", provider="xai", reasoning=True),
    remote_model("https://openrouter.ai/api/v1", id="deepseek/deepseek-r1",
                 provider="openrouter", reasoning=True),
    remote_model(id="o4-mini", reasoning=True, compat={"supportsDeveloperRole": False}),
], ids=["xai", "openrouter-non-openai", "compat-off"])
def test_openai_completions_system_role_where_developer_is_unsupported(model) -> None:
    assert body_of(model)["messages"][0] == {"role": "system", "content": "You are terse."}


@pytest.mark.parametrize(("model", "role"), [
    (ac.get_model("openrouter", "openai/gpt-5"), "developer"),
    (ac.get_model("openrouter", "anthropic/claude-sonnet-4.5"), "developer"),
    (ac.get_model("openrouter", "google/gemini-2.5-flash"), "system"),
    (remote_model("https://openrouter.ai/api/v1", id="openai/o4-mini", provider="openrouter",
                  reasoning=True), "system"),  # OpenRouter's default; the id says nothing
    (remote_model("https://openrouter.ai/api/v1", id="openai/o4-mini", provider="openrouter",
                  reasoning=True, compat={"supports_developer_role": True}), "developer"),
], ids=["catalogue-openai", "catalogue-anthropic", "catalogue-google", "own", "own-compat"])
def test_openai_completions_openrouter_developer_role_from_compat(model, role) -> None:
    assert body_of(model)["messages"][0]["role"] == role


@pytest.mark.parametrize(("model_max", "option", "expected"), [
    (64_000, None, 32_000), (8_000, None, 8_000), (64_000, 123, 123), (8_000, 50_000, 50_000),
])
def test_openai_completions_output_limit(mock_server, model_max, option, expected) -> None:
    request = sent(mock_server, model=local_model(mock_server, max_tokens=model_max),
                   max_tokens=option)
    assert request.json["max_tokens"] == expected
    assert "max_completion_tokens" not in request.json


@pytest.mark.parametrize(("model", "field"), [
    (remote_model(), "max_completion_tokens"),
    (remote_model("https://my-resource.openai.azure.com/openai/v1"), "max_completion_tokens"),
    (remote_model("https://api.deepseek.com/v1", id="deepseek-chat", provider="deepseek"),
     "max_tokens"),
    (remote_model("https://llm.chutes.ai/v1", id="deepseek-ai/DeepSeek-V3", provider="chutes"),
     "max_tokens"),
    (remote_model("https://api.groq.com/openai/v1", provider="groq"), "max_tokens"),
    (remote_model("http://localhost:8000/v1", provider="llama.cpp"), "max_tokens"),
    (remote_model("https://api.openai.com.example.org/v1"), "max_tokens"),
    (remote_model(compat={"maxTokensField": "max_tokens"}), "max_tokens"),
], ids=["openai", "azure", "deepseek", "chutes", "groq", "llama.cpp", "look-alike", "compat"])
def test_openai_completions_max_tokens_field(model, field) -> None:
    body = body_of(model, max_tokens=777)
    assert {k: v for k, v in body.items() if "max" in k} == {field: 777}


@pytest.mark.parametrize("temperature", [0.0, 0.7, 1])
def test_openai_completions_temperature_when_given(mock_server, temperature) -> None:
    assert sent(mock_server, temperature=temperature).json["temperature"] == temperature


def test_openai_completions_no_temperature_by_default(mock_server) -> None:
    assert "temperature" not in sent(mock_server).json


def test_openai_completions_tools_as_functions(mock_server) -> None:
    context = ac.Context("s", [ac.UserMessage("Weather in Paris?")], [WEATHER])
    request = sent(mock_server, context)
    assert request.json["tools"] == [{"type": "function", "function": {
        "name": "get_weather", "description": "Current weather for a city.",
        "parameters": WEATHER.parameters, "strict": False}}]
    assert "tool_choice" not in request.json


def test_openai_completions_no_strict_when_unsupported(mock_server) -> None:
    context = ac.Context("s", [ac.UserMessage("Weather in Paris?")], [WEATHER])
    model = local_model(mock_server, compat={"supportsStrictMode": False})
    [tool] = sent(mock_server, context, model).json["tools"]
    assert tool == {"type": "function", "function": {
        "name": "get_weather", "description": "Current weather for a city.",
        "parameters": WEATHER.parameters}}


def assistant(*content: Any, stop: str = "stop", model: str = MODEL_ID, api: str = API,
              provider: str = "openai", error: str | None = None) -> ac.AssistantMessage:
    return ac.AssistantMessage(list(content), api, provider, model, stop_reason=stop,
                               error_message=error)


CALL = ac.ToolCall("call_1", "get_weather", {"city": "Paris", "note": "né"})
TOOL_TURN = [ac.UserMessage("Weather in Paris?"), assistant(CALL, stop="toolUse"),
             ac.ToolResultMessage("call_1", "get_weather", [ac.TextContent("Sunny")])]


def test_openai_completions_empty_tools_when_history_has_tool_calls(mock_server) -> None:
    request = sent(mock_server, ac.Context("s", TOOL_TURN))
    assert request.json["tools"] == []
    assert "tools" not in sent(mock_server, ac.Context("s", [ac.UserMessage("hi")])).json


def test_openai_completions_user_images_as_data_urls(mock_server) -> None:
    message = ac.UserMessage([ac.TextContent("What is this?"), ac.ImageContent(PNG, "image/png")])
    model = local_model(mock_server, input=["text", "image"])
    request = sent(mock_server, ac.Context(None, [message]), model)
    assert request.json["messages"] == [{"role": "user", "content": [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
    ]}]


def test_openai_completions_user_images_dropped_for_a_text_only_model(mock_server) -> None:
    message = ac.UserMessage([ac.TextContent("What is this?"), ac.ImageContent(PNG, "image/png"),
                              ac.ImageContent(PNG, "image/jpeg")])
    request = sent(mock_server, ac.Context(None, [message]))
    assert "image_url" not in request.body.decode()
    assert request.json["messages"] == [{"role": "user", "content": [
        {"type": "text", "text": "What is this?"},
        {"type": "text", "text": "(image omitted: model does not support images)"},
    ]}]


def test_openai_completions_assistant_replay(mock_server) -> None:
    message = assistant(ac.ThinkingContent("Let me think.", "reasoning_content"),
                        ac.ThinkingContent("More.", "reasoning_content"),
                        ac.TextContent("Checking "), ac.TextContent("   "),
                        ac.TextContent("the weather."), CALL, stop="toolUse")
    context = ac.Context(None, [ac.UserMessage("Weather?"), message,
                                ac.ToolResultMessage("call_1", "get_weather",
                                                     [ac.TextContent("Sunny")])])
    request = sent(mock_server, context, local_model(mock_server, reasoning=True))
    assert request.json["messages"][1] == {
        "role": "assistant", "content": "Checking the weather.",
        "reasoning_content": "Let me think.\nMore.",
        "tool_calls": [{"id": "call_1", "type": "function", "function": {
            "name": "get_weather", "arguments": '{"city":"Paris","note":"né"}'}}],
    }


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning", "reasoning_text"])
def test_openai_completions_reasoning_replayed_in_its_own_field(mock_server, field) -> None:
    message = assistant(ac.ThinkingContent("Hmm.", field), ac.TextContent("42"))
    context = ac.Context(None, [ac.UserMessage("Q"), message, ac.UserMessage("Again")])
    [_, replayed, _] = sent(mock_server, context).json["messages"]
    assert replayed == {"role": "assistant", "content": "42", field: "Hmm."}


def test_openai_completions_thinking_without_a_field_is_not_replayed(mock_server) -> None:
    message = assistant(ac.ThinkingContent("Hmm.", None), ac.TextContent("42"))
    context = ac.Context(None, [ac.UserMessage("Q"), message, ac.UserMessage("Again")])
    [_, replayed, _] = sent(mock_server, context).json["messages"]
    assert replayed == {"role": "assistant", "content": "42"}


def test_openai_completions_empty_assistant_is_skipped(mock_server) -> None:
    message = assistant(ac.TextContent(" "), ac.ThinkingContent(""))
    context = ac.Context(None, [ac.UserMessage("Q"), message, ac.UserMessage("Again")])
    assert [m["role"] for m in sent(mock_server, context).json["messages"]] == ["user", "user"]


def test_openai_completions_tool_results(mock_server) -> None:
    calls = [ac.ToolCall(f"call_{i}", "shot", {}) for i in range(3)]
    context = ac.Context(None, [
        ac.UserMessage("Go"), assistant(*calls, stop="toolUse"),
        ac.ToolResultMessage("call_0", "shot",
                             [ac.TextContent("line 1"), ac.TextContent("line 2")]),
        ac.ToolResultMessage("call_1", "shot", [ac.ImageContent(PNG, "image/png")]),
        ac.ToolResultMessage("call_2", "shot", [ac.TextContent("caption"),
                                                ac.ImageContent("R0lG", "image/gif")],
                             is_error=True),
        ac.UserMessage("Thanks"),
    ])
    request = sent(mock_server, context, local_model(mock_server, input=["text", "image"]))
    assert request.json["messages"][2:] == [
        {"role": "tool", "tool_call_id": "call_0", "content": "line 1\nline 2"},
        {"role": "tool", "tool_call_id": "call_1", "content": "(see attached image)"},
        {"role": "tool", "tool_call_id": "call_2", "content": "caption"},
        {"role": "user", "content": [
            {"type": "text", "text": "Attached image(s) from tool result:"},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
            {"type": "image_url", "image_url": {"url": "data:image/gif;base64,R0lG"}},
        ]},
        {"role": "user", "content": "Thanks"},
    ]


def test_openai_completions_tool_result_images_for_a_text_only_model(mock_server) -> None:
    context = ac.Context(None, [
        ac.UserMessage("Go"), assistant(ac.ToolCall("call_1", "shot", {}), stop="toolUse"),
        ac.ToolResultMessage("call_1", "shot", [ac.ImageContent(PNG, "image/png")]),
    ])
    request = sent(mock_server, context)
    assert request.json["messages"][2:] == [{
        "role": "tool", "tool_call_id": "call_1",
        "content": "(tool image omitted: model does not support images)"}]


def test_openai_completions_tool_result_quirks_from_compat(mock_server) -> None:
    model = local_model(mock_server, compat={"requiresToolResultName": True,
                                             "requiresAssistantAfterToolResult": True})
    request = sent(mock_server, ac.Context(None, [*TOOL_TURN, ac.UserMessage("And Tokyo?")]), model)
    assert request.json["messages"][1]["content"] == ""
    assert request.json["messages"][2:] == [
        {"role": "tool", "tool_call_id": "call_1", "content": "Sunny", "name": "get_weather"},
        {"role": "assistant", "content": "I have processed the tool results."},
        {"role": "user", "content": "And Tokyo?"},
    ]


def test_openai_completions_thinking_as_text_from_compat(mock_server) -> None:
    message = assistant(ac.ThinkingContent("Hmm.", "reasoning_content"), ac.TextContent("42"))
    model = local_model(mock_server, compat={"requiresThinkingAsText": True})
    context = ac.Context(None, [ac.UserMessage("Q"), message, ac.UserMessage("Again")])
    assert sent(mock_server, context, model).json["messages"][1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "Hmm."}, {"type": "text", "text": "42"}]}


REASONING: dict[str, Any] = {"id": "o4-mini", "reasoning": True}


@pytest.mark.parametrize(("level", "effort"), [
    (ac.ThinkingLevel.MINIMAL, "minimal"), (ac.ThinkingLevel.LOW, "low"),
    (ac.ThinkingLevel.MEDIUM, "medium"), (ac.ThinkingLevel.HIGH, "high"),
    (ac.ThinkingLevel.XHIGH, "high"),
])
def test_openai_completions_reasoning_effort(mock_server, level, effort) -> None:
    request = sent(mock_server, model=local_model(mock_server, **REASONING), reasoning=level)
    assert request.json["reasoning_effort"] == effort
    for field in ("reasoning", "enable_thinking", "thinking", "chat_template_kwargs"):
        assert field not in request.json


@pytest.mark.parametrize(("compat", "effort"), [
    ({"xhigh_effort": "xhigh"}, "xhigh"), ({"xhighEffort": "xhigh"}, "xhigh"), (None, "high"),
], ids=["compat", "camelCase", "id-alone"])
def test_openai_completions_xhigh_where_compat_says(mock_server, compat, effort) -> None:
    model = local_model(mock_server, id="gpt-5.4-pro", reasoning=True, compat=compat)
    assert sent(mock_server, model=model, reasoning="xhigh").json["reasoning_effort"] == effort


@pytest.mark.parametrize(("reasoning_model", "level"), [
    (True, None), (True, ac.ThinkingLevel.OFF), (False, ac.ThinkingLevel.HIGH),
])
def test_openai_completions_no_reasoning_effort(mock_server, reasoning_model, level) -> None:
    model = local_model(mock_server, id="o4-mini", reasoning=reasoning_model)
    request = sent(mock_server, model=model, reasoning=level)
    assert "reasoning_effort" not in request.json


def test_openai_completions_no_reasoning_effort_where_unsupported(mock_server) -> None:
    model = local_model(mock_server, reasoning=True, compat={"supportsReasoningEffort": False})
    assert "reasoning_effort" not in sent(mock_server, model=model, reasoning="high").json
    xai = remote_model("https://api.x.ai/v1", id="grok-4", provider="xai", reasoning=True)
    assert "reasoning_effort" not in body_of(xai, reasoning="high")


@pytest.mark.parametrize("level", ["minimal", "low", "medium", "high", "xhigh"])
def test_openai_completions_groq_qwen3_maps_every_level_to_default(mock_server, level) -> None:
    model = attrs.evolve(ac.get_model("groq", "qwen/qwen3-32b"), base_url=mock_server.url)
    assert sent(mock_server, model=model, reasoning=level).json["reasoning_effort"] == "default"


def test_openai_completions_reasoning_effort_map_from_compat(mock_server) -> None:
    model = local_model(mock_server, reasoning=True,
                        compat={"reasoningEffortMap": {"high": "max", "low": "tiny"}})
    assert sent(mock_server, model=model, reasoning="high").json["reasoning_effort"] == "max"
    assert sent(mock_server, model=model, reasoning="medium").json["reasoning_effort"] == "medium"


@pytest.mark.parametrize(("fields", "on", "off"), [
    ({"provider": "zai"}, {"enable_thinking": True}, {"enable_thinking": False}),
    ({"compat": {"thinkingFormat": "qwen"}}, {"enable_thinking": True},
     {"enable_thinking": False}),
    ({"compat": {"thinkingFormat": "qwen-chat-template"}},
     {"chat_template_kwargs": {"enable_thinking": True}},
     {"chat_template_kwargs": {"enable_thinking": False}}),
    ({"provider": "deepseek", "id": "deepseek-reasoner"}, {"thinking": {"type": "enabled"}},
     {"thinking": {"type": "disabled"}}),
], ids=["zai", "qwen", "qwen-chat-template", "deepseek"])
def test_openai_completions_thinking_formats(mock_server, fields, on, off) -> None:
    model = local_model(mock_server, reasoning=True, **fields)
    for level, expected in [("medium", on), (None, off), ("off", off)]:
        body = sent(mock_server, model=model, reasoning=level).json
        assert {k: body[k] for k in expected} == expected
        assert "reasoning_effort" not in body


def test_openai_completions_thinking_format_needs_a_reasoning_model(mock_server) -> None:
    model = local_model(mock_server, provider="zai")
    assert "enable_thinking" not in sent(mock_server, model=model, reasoning="high").json


def test_openai_completions_deepseek_replays_empty_reasoning_content(mock_server) -> None:
    model = local_model(mock_server, id="deepseek-reasoner", provider="deepseek", reasoning=True)
    earlier = assistant(ac.TextContent("Hi"), model="deepseek-reasoner", provider="deepseek")
    context = ac.Context(None, [ac.UserMessage("Q"), earlier, ac.UserMessage("Again")])
    assert sent(mock_server, context, model).json["messages"][1] == {
        "role": "assistant", "content": "Hi", "reasoning_content": ""}


def test_openai_completions_openrouter_reasoning_object() -> None:
    model = remote_model("https://openrouter.ai/api/v1", id="openai/o4-mini",
                         provider="openrouter", reasoning=True)
    body = body_of(model, reasoning="low")
    assert body["reasoning"] == {"effort": "low"}
    assert "reasoning_effort" not in body
    assert "reasoning" not in body_of(model)


def test_openai_completions_compat_overrides_win_over_detection(mock_server) -> None:
    xai: dict[str, Any] = {"id": "grok-4", "provider": "xai", "reasoning": True}
    detected = body_of(remote_model("https://api.x.ai/v1", **xai), reasoning="high")
    assert "store" not in detected
    assert "reasoning_effort" not in detected
    model = local_model(mock_server, **xai, compat={"supportsStore": True,
                                                    "supportsReasoningEffort": True,
                                                    "supports_usage_in_streaming": False})
    body = sent(mock_server, model=model, reasoning="high").json
    assert body["store"] is False
    assert body["reasoning_effort"] == "high"
    assert "stream_options" not in body
    assert body_of(remote_model(compat={"supportsStore": False}))
    assert "store" not in body_of(remote_model(compat={"supportsStore": False}))


def test_openai_completions_unknown_compat_flag_is_named() -> None:
    model = remote_model(compat={"supportsStore": True, "supportsTeleport": True})
    with pytest.raises(ValueError, match="supportsTeleport"):
        body_of(model)


def test_openai_completions_unknown_compat_flag_fails_the_stream(mock_server) -> None:
    run = run_stream(local_model(mock_server, compat={"supportsTeleport": True}))
    check_invariants(run)
    assert [e.type for e in run.events] == ["error"]
    assert "supportsTeleport" in (run.message.error_message or "")
    assert mock_server.requests == []


@pytest.mark.parametrize(("retention", "expected"), [
    (None, {"prompt_cache_key": "session-42"}),
    ("short", {"prompt_cache_key": "session-42"}),
    ("long", {"prompt_cache_key": "session-42", "prompt_cache_retention": "24h"}),
    ("none", {}),
])
def test_openai_completions_prompt_cache_key_on_openai(retention, expected) -> None:
    body = body_of(remote_model(), session_id="session-42", cache_retention=retention)
    assert {k: body[k] for k in ("prompt_cache_key", "prompt_cache_retention")
            if k in body} == expected


def test_openai_completions_no_prompt_cache_key_elsewhere(mock_server) -> None:
    assert "prompt_cache_key" not in body_of(remote_model())  # no session
    other = remote_model("https://api.groq.com/openai/v1", provider="groq")
    assert "prompt_cache_key" not in body_of(other, session_id="s")
    assert "prompt_cache_key" not in sent(mock_server, session_id="s").json


def test_openai_completions_on_payload_inspects_and_replaces(mock_server) -> None:
    seen: list[tuple[Any, ac.Model]] = []

    def inspect(payload: Any, model: ac.Model) -> None:
        seen.append((json.loads(json.dumps(payload)), model))

    model = local_model(mock_server)
    request = sent(mock_server, model=model, on_payload=inspect)
    assert seen == [(request.json, model)]

    def replace(payload: Any, model: ac.Model) -> Any:
        return {**payload, "messages": [{"role": "user", "content": "replaced"}], "seed": 7}

    request = sent(mock_server, model=model, on_payload=replace)
    assert request.json["messages"] == [{"role": "user", "content": "replaced"}]
    assert request.json["seed"] == 7


def test_openai_completions_on_payload_failure_is_an_error_event(mock_server) -> None:
    def explode(payload: Any, model: ac.Model) -> Any:
        raise RuntimeError("payload hook broke")

    run = run_stream(local_model(mock_server), on_payload=explode)
    assert [signature(e) for e in run.events] == [("error", "error")]
    assert run.message.error_message == "payload hook broke"
    assert mock_server.requests == []


def test_openai_completions_on_response_sees_status_and_headers(mock_server) -> None:
    seen: list[tuple[int, dict[str, str]]] = []
    mock_server.status(429, fixture("http_429.json"), {"Retry-After": "0", "x-request-id": "r1"})
    mock_server.sse(fixture("text.sse"), headers={"openai-processing-ms": "42"})
    run = run_stream(local_model(mock_server), on_response=lambda s, h: seen.append((s, h)))
    assert run.message.stop_reason == "stop"
    assert [status for status, _ in seen] == [429, 200]
    assert seen[0][1]["x-request-id"] == "r1"
    assert seen[1][1]["openai-processing-ms"] == "42"


def test_openai_completions_lone_surrogates_are_removed(mock_server) -> None:
    context = ac.Context("sys\udc00tem", [
        ac.UserMessage("a\ud83db \U0001F600 \ud83d\ude00"),
        assistant(ac.TextContent("x\udfffy"), ac.ToolCall("call_1", "f", {}), stop="toolUse"),
        ac.ToolResultMessage("call_1", "f", [ac.TextContent("r\ud800")]),
        ac.UserMessage([ac.TextContent("p\ud83d")]),
    ])
    request = sent(mock_server, context)
    request.body.decode("utf-8")  # valid UTF-8 on the wire
    assert [m["content"] for m in request.json["messages"]] == [
        "system", "ab \U0001F600 \U0001F600", "xy", "r", [{"type": "text", "text": "p"}]]


def test_openai_completions_lone_surrogate_in_tool_arguments_does_not_break_the_request(
        mock_server) -> None:
    # Arguments decoded from a model's JSON may hold a lone surrogate ("\ud83d" escapes); they
    # are not sanitized, but must still be sent, escaped as JavaScript's JSON.stringify does.
    arguments = json.loads('{"q":"a\\ud83db"}')
    context = ac.Context(None, [
        ac.UserMessage("Go"),
        assistant(ac.ToolCall("call_1", "f", arguments), stop="toolUse"),
        ac.ToolResultMessage("call_1", "f", [ac.TextContent("ok")]),
    ])
    request = sent(mock_server, context)
    sent_arguments = request.json["messages"][1]["tool_calls"][0]["function"]["arguments"]
    assert sent_arguments == '{"q":"a\\ud83db"}'
    assert json.loads(sent_arguments) == arguments


# --- 2b. servers that are not OpenAI (API.md §17) ---------------------------------------------

WEATHER_TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "Current weather for a city.",
    "parameters": WEATHER.parameters, "strict": False}}
WIRE_CALL = {"id": "call_1", "type": "function", "function": {
    "name": "get_weather", "arguments": '{"city":"Paris","note":"né"}'}}


def tool_turn_body(content: str | None, limit: str) -> dict[str, Any]:
    """The whole body for `TOOL_TURN`, its assistant `content` and output limit field given."""
    return {
        "model": MODEL_ID,
        "messages": [
            {"role": "system", "content": "s"},
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": content, "tool_calls": [WIRE_CALL]},
            {"role": "tool", "tool_call_id": "call_1", "content": "Sunny"},
        ],
        "stream": True,
        "stream_options": {"include_usage": True},
        "store": False,
        limit: 100,
        "tools": [WEATHER_TOOL],
    }


def test_openai_completions_tool_turn_to_a_server_that_is_not_openai(mock_server) -> None:
    # llama-cpp-python's server answers a null `content` with a 500; such servers also ignore
    # `max_completion_tokens`.
    request = sent(mock_server, ac.Context("s", TOOL_TURN, [WEATHER]), max_tokens=100)
    assert request.json == tool_turn_body("", "max_tokens")
    assert b'"content":null' not in request.body


def test_openai_completions_tool_turn_to_openai(mock_server) -> None:
    with to_local(mock_server) as session:
        request = sent(mock_server, ac.Context("s", TOOL_TURN, [WEATHER]), remote_model(),
                       max_tokens=100, http_session=session)
    assert request.json == tool_turn_body(None, "max_completion_tokens")


@pytest.mark.parametrize(("openai", "compat", "content", "limit"), [
    (False, {"supportsNullContent": True, "maxTokensField": "max_completion_tokens"}, None,
     "max_completion_tokens"),
    (True, {"supports_null_content": False, "max_tokens_field": "max_tokens"}, "",
     "max_tokens"),
], ids=["local-as-openai", "openai-as-local"])
def test_openai_completions_tool_turn_compat_overrides_the_server(mock_server, openai, compat,
                                                                  content, limit) -> None:
    context = ac.Context("s", TOOL_TURN, [WEATHER])
    with to_local(mock_server) as session:
        model = (remote_model(compat=compat) if openai
                 else local_model(mock_server, compat=compat))
        request = sent(mock_server, context, model, max_tokens=100, http_session=session)
    assert request.json == tool_turn_body(content, limit)


def test_openai_completions_reasoning_only_assistant_gets_empty_content(mock_server) -> None:
    message = assistant(ac.ThinkingContent("Hmm.", "reasoning_content"))
    context = ac.Context(None, [ac.UserMessage("Q"), message, ac.UserMessage("Again")])
    assert sent(mock_server, context).json["messages"][1] == {
        "role": "assistant", "content": "", "reasoning_content": "Hmm."}


# --- 3. cross-provider input ----------------------------------------------------------------------

LONG_ID = "call_9aZ|fc_" + "0123456789abcdef" * 4


def test_openai_completions_foreign_assistant_is_made_safe() -> None:
    foreign = assistant(
        ac.ThinkingContent("I should check.", '{"type":"reasoning","encrypted_content":"x"}'),
        ac.ThinkingContent("secret", "opaque", redacted=True),
        ac.TextContent("Checking.", text_signature='{"v":1,"id":"msg_1"}'),
        ac.ToolCall(LONG_ID, "get_weather", {"city": "Paris"}, thought_signature="sig"),
        ac.ToolCall("call_2|fc_2", "get_weather", {"city": "Tokyo"}),
        stop="toolUse", api="openai-responses", model="gpt-5")
    context = ac.Context(None, [
        ac.UserMessage("Weather?"), foreign,
        ac.ToolResultMessage(LONG_ID, "get_weather", [ac.TextContent("Sunny")]),
        ac.ToolResultMessage("call_2|fc_2", "get_weather", [ac.TextContent("Rain")]),
    ])
    long_id = f"call_9aZ_{short_hash(LONG_ID)[:8]}"
    assert len(long_id) <= 40
    messages = body_of(remote_model(reasoning=True), context)["messages"]
    assert messages[1:] == [
        {"role": "assistant", "content": "I should check.Checking.", "tool_calls": [
            {"id": long_id, "type": "function",
             "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}},
            {"id": "call_2_fc_2", "type": "function",
             "function": {"name": "get_weather", "arguments": '{"city":"Tokyo"}'}},
        ]},
        {"role": "tool", "tool_call_id": long_id, "content": "Sunny"},
        {"role": "tool", "tool_call_id": "call_2_fc_2", "content": "Rain"},
    ]
    for message in messages:
        for call in message.get("tool_calls", []):
            assert re.fullmatch(r"[A-Za-z0-9_-]{1,40}", call["id"])
    assert "secret" not in json.dumps(messages)


def test_openai_completions_foreign_long_ids_are_cut_for_openai() -> None:
    long_plain = "toolu_" + "x" * 60
    foreign = assistant(ac.ToolCall(long_plain, "f", {}), stop="toolUse",
                        api="anthropic-messages", provider="anthropic", model="claude")
    context = ac.Context(None, [ac.UserMessage("Go"), foreign,
                                ac.ToolResultMessage(long_plain, "f", [ac.TextContent("ok")])])
    messages = body_of(remote_model(), context)["messages"]
    assert messages[1]["tool_calls"][0]["id"] == long_plain[:40]
    assert messages[2]["tool_call_id"] == long_plain[:40]
    other = remote_model("https://api.groq.com/openai/v1", provider="groq")
    assert body_of(other, context)["messages"][1]["tool_calls"][0]["id"] == long_plain


def test_openai_completions_same_model_keeps_thinking_and_ids() -> None:
    own = assistant(ac.ThinkingContent("Hmm.", "reasoning"), ac.TextContent("Hi"),
                    ac.ToolCall("call_x|y", "f", {}), stop="toolUse")
    context = ac.Context(None, [ac.UserMessage("Q"), own,
                                ac.ToolResultMessage("call_x|y", "f", [ac.TextContent("ok")])])
    messages = body_of(remote_model(), context)["messages"]
    assert messages[1] == {"role": "assistant", "content": "Hi", "reasoning": "Hmm.",
                           "tool_calls": [{"id": "call_x|y", "type": "function",
                                           "function": {"name": "f", "arguments": "{}"}}]}
    assert messages[2]["tool_call_id"] == "call_x|y"


@pytest.mark.parametrize("stop", ["error", "aborted"])
def test_openai_completions_failed_turns_are_dropped(mock_server, stop) -> None:
    failed = assistant(ac.TextContent("partial"), ac.ToolCall("call_bad", "f", {}), stop=stop,
                       error="boom")
    context = ac.Context(None, [
        ac.UserMessage("Go"), failed,
        ac.ToolResultMessage("call_bad", "f", [ac.TextContent("never")]),
        ac.UserMessage("Try again"),
    ])
    assert sent(mock_server, context).json["messages"] == [
        {"role": "user", "content": "Go"}, {"role": "user", "content": "Try again"}]


def test_openai_completions_orphaned_tool_calls_get_a_synthetic_result(mock_server) -> None:
    context = ac.Context(None, [
        ac.UserMessage("Go"),
        assistant(ac.ToolCall("call_a", "f", {}), ac.ToolCall("call_b", "g", {}), stop="toolUse"),
        ac.ToolResultMessage("call_b", "g", [ac.TextContent("done b")]),
        ac.UserMessage("Stop that"),
        assistant(ac.ToolCall("call_c", "f", {}), stop="toolUse"),
    ])
    messages = sent(mock_server, context).json["messages"]
    assert [(m["role"], m.get("tool_call_id"), m["content"]) for m in messages[2:]] == [
        ("tool", "call_b", "done b"),
        ("tool", "call_a", "No result provided"),
        ("user", None, "Stop that"),
        ("assistant", None, ""),  # tool calls only: `""`, not null, to a server not OpenAI
        ("tool", "call_c", "No result provided"),
    ]


# --- 4. errors --------------------------------------------------------------------------------

HTTP_MESSAGES = {
    400: "This model's maximum context length is 128000 tokens. However, your messages resulted "
         "in 140000 tokens. Please reduce the length of the messages.",
    401: "Incorrect API key provided: ***. You can find your API key at "
         "https://platform.openai.com/account/api-keys.",
    429: "Rate limit reached for gpt-4o-mini in organization org-Xq3pL0aB9cD2eF4gH6iJ8kM on "
         "tokens per min (TPM): Limit 200000, Used 199617, Requested 1290. Please try again in "
         "272ms. Visit https://platform.openai.com/account/rate-limits to learn more.",
    500: "The server had an error while processing your request. Sorry about that!",
}


def lone_error(run: Run) -> ac.AssistantMessage:
    check_invariants(run)
    assert [signature(e) for e in run.events] == [("error", "error")]
    assert run.message.content == []
    assert run.message.usage == ac.Usage()
    return run.message


@pytest.mark.parametrize("status", sorted(HTTP_MESSAGES))
def test_openai_completions_http_error_is_a_lone_error_event(mock_server, status) -> None:
    mock_server.status(status, fixture(f"http_{status}.json"))
    message = lone_error(run_stream(local_model(mock_server), max_retries=0))
    assert message.error_message == f"{status} {HTTP_MESSAGES[status]}"
    assert (message.api, message.provider, message.model) == (API, "openai", MODEL_ID)
    assert len(mock_server.requests) == 1


def test_openai_completions_echoed_key_never_appears(mock_server) -> None:
    mock_server.status(401, fixture("http_401.json"))
    run = run_stream(local_model(mock_server), max_retries=0)
    message = lone_error(run)
    assert message.error_message.startswith("401 Incorrect API key provided: ")  # type: ignore
    for text in (message.error_message, repr(message), ac.to_json(message), repr(run.events),
                 ac.to_json(run.events[-1])):
        assert KEY not in text


def test_openai_completions_key_shaped_secrets_are_redacted(mock_server) -> None:
    leaked = "sk-proj-AbCdEf0123456789"
    mock_server.status(401, json.dumps({"error": {"message": f"bad key {leaked} and {KEY}"}}))
    message = lone_error(run_stream(local_model(mock_server), max_retries=0))
    assert leaked not in ac.to_json(message)
    assert KEY not in ac.to_json(message)


@pytest.mark.parametrize("status", [400, 500])
def test_openai_completions_empty_error_body(mock_server, status) -> None:
    mock_server.status(status, b"")
    message = lone_error(run_stream(local_model(mock_server), max_retries=0))
    assert message.error_message == f"{status} status code (no body)"


def test_openai_completions_non_json_error_body(mock_server) -> None:
    mock_server.status(502, "<html>Bad gateway</html>", {"Content-Type": "text/html"})
    message = lone_error(run_stream(local_model(mock_server), max_retries=0))
    assert message.error_message == "502 <html>Bad gateway</html>"


@pytest.mark.parametrize(("body", "expected"), [
    ('{"error":{"message":{"detail":"x"}}}', '400 {"detail":"x"}'),
    ('{"error":{"code":"bad"}}', '400 {"code":"bad"}'),
    ('{"message":"top-level message"}', "400 top-level message"),
    ('{"error":{"message":"upstream","metadata":{"raw":"raw detail"}}}',
     "400 upstream\nraw detail"),
])
def test_openai_completions_error_body_shapes(mock_server, body, expected) -> None:
    mock_server.status(400, body)
    assert lone_error(run_stream(local_model(mock_server))).error_message == expected


@pytest.mark.parametrize(("body", "expected"), [
    # llama-cpp-python's answer to a request its chat handler cannot serve
    ('{"error":{"message":"","type":"internal_server_error"}}',
     '500 {"message":"","type":"internal_server_error"}'),
    ('{"error":{"message":"  ","code":500}}', '500 {"message":"  ","code":500}'),
    ('{"message":""}', '500 {"message":""}'),
])
def test_openai_completions_error_with_an_empty_message_says_what_it_holds(
        mock_server, body, expected) -> None:
    mock_server.status(500, body)
    message = lone_error(run_stream(local_model(mock_server), max_retries=0))
    assert message.error_message == expected


def test_openai_completions_retries_429_with_retry_after_zero(mock_server, backoffs) -> None:
    mock_server.status(429, fixture("http_429.json"), {"Retry-After": "0"})
    mock_server.sse(fixture("text.sse"))
    run = run_stream(local_model(mock_server))
    check_invariants(run)
    assert without_timestamp(run.message) == EXPECTED["text.sse"][1]
    assert len(mock_server.requests) == 2
    assert mock_server.requests[0].body == mock_server.requests[1].body
    assert backoffs == []


def test_openai_completions_retries_503_then_succeeds(mock_server, backoffs) -> None:
    mock_server.status(503, "upstream overloaded", {"Content-Type": "text/plain"})
    mock_server.sse(fixture("text.sse"))
    run = run_stream(local_model(mock_server))
    assert [signature(e) for e in run.events] == EXPECTED["text.sse"][0]
    assert len(mock_server.requests) == 2
    assert backoffs == [0]


def test_openai_completions_retries_run_out(mock_server, backoffs) -> None:
    for _ in range(3):
        mock_server.status(500, fixture("http_500.json"))
    message = lone_error(run_stream(local_model(mock_server), max_retries=2))
    assert message.error_message == f"500 {HTTP_MESSAGES[500]}"
    assert len(mock_server.requests) == 3
    assert backoffs == [0, 1]


def test_openai_completions_retry_delay_above_the_cap_fails_at_once(mock_server) -> None:
    mock_server.status(429, fixture("http_429.json"), {"Retry-After": "120"})
    mock_server.sse(fixture("text.sse"))
    message = lone_error(run_stream(local_model(mock_server), max_retry_delay_ms=1000))
    assert message.error_message == (
        f"Server requested 120s retry delay (max: 1s). 429 {HTTP_MESSAGES[429]}")
    assert len(mock_server.requests) == 1
    assert mock_server.pending() == 1


@pytest.mark.parametrize(("body", "headers", "expected"), [
    ("slow down", {"Content-Type": "text/plain", "Retry-After": "61"},
     "Server requested 61s retry delay (max: 60s). slow down"),
    ("", {"retry-after-ms": "2500"},
     "Server requested 3s retry delay (max: 2s). 503 status code (no body)"),
])
def test_openai_completions_retry_delay_refusal_other_bodies(mock_server, body, headers,
                                                             expected) -> None:
    mock_server.status(503, body, headers)
    cap = 2000 if "retry-after-ms" in headers else None
    message = lone_error(run_stream(local_model(mock_server), max_retry_delay_ms=cap))
    assert message.error_message == expected
    assert len(mock_server.requests) == 1


def test_openai_completions_max_retries_zero(mock_server, backoffs) -> None:
    mock_server.status(429, fixture("http_429.json"), {"Retry-After": "0"})
    mock_server.sse(fixture("text.sse"))
    message = lone_error(run_stream(local_model(mock_server), max_retries=0))
    assert message.error_message == f"429 {HTTP_MESSAGES[429]}"
    assert len(mock_server.requests) == 1
    assert mock_server.pending() == 1
    assert backoffs == []


@pytest.mark.parametrize("retries", [0, 2])
def test_openai_completions_connection_refused(backoffs, retries) -> None:
    base_url = f"http://127.0.0.1:{free_port()}/v1"
    model = ac.Model(MODEL_ID, "m", API, "openai", base_url)
    message = lone_error(run_stream(model, max_retries=retries))
    assert message.error_message == (f"cannot connect to {base_url}/chat/completions "
                                     "(connection refused)")
    assert len(backoffs) == retries


def test_openai_completions_connection_lost_mid_stream_keeps_the_partial(sse_server) -> None:
    body = fixture("text.sse")
    sse_server.sse(body[: body.index(b"data:", body.index(b" test"))], cut=True)
    run = run_stream(local_model(sse_server))
    check_invariants(run)
    assert [signature(e) for e in run.events] == [
        ("start",), ("text_start", 0), ("text_delta", 0, "Hello"), ("text_delta", 0, " test"),
        ("error", "error")]
    assert run.message.content == [ac.TextContent("Hello test")]
    assert run.message.error_message == "Connection error."
    assert len(sse_server.requests) == 1  # never retried once output was streamed


def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
    data = {"id": "c1", "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}
    return f"data: {json.dumps(data)}\n\n".encode()


@pytest.mark.parametrize(("tail", "expected"), [
    (chunk({}, "content_filter") + b"data: [DONE]\n\n", "Provider finish_reason: content_filter"),
    (b"data: [DONE]\n\n", "the stream ended without a stop reason"),
    (b"", "the stream ended without a stop reason"),
    (b"data: {not json\n\n", "invalid JSON from the provider: Expecting property name enclosed "
                             "in double quotes"),
])
def test_openai_completions_bad_endings_are_errors(mock_server, tail, expected) -> None:
    mock_server.sse(chunk({"content": "Hi"}) + tail)
    run = run_stream(local_model(mock_server))
    check_invariants(run)
    closed = [("text_end", 0, "Hi")] if "stop reason" in expected else []  # ended, then judged
    assert [signature(e) for e in run.events] == [
        ("start",), ("text_start", 0), ("text_delta", 0, "Hi"), *closed, ("error", "error")]
    assert run.message.content == [ac.TextContent("Hi")]
    assert run.message.error_message == expected


def test_openai_completions_stop_with_tool_calls_is_tool_use(mock_server) -> None:
    call = {"index": 0, "id": "call_1", "type": "function",
            "function": {"name": "f", "arguments": '{"a":1}'}}
    mock_server.sse(chunk({"tool_calls": [call]}) + chunk({}, "stop") + b"data: [DONE]\n\n")
    run = run_stream(local_model(mock_server))
    check_invariants(run)
    assert run.message.stop_reason == "toolUse"
    assert run.message.tool_calls == [ac.ToolCall("call_1", "f", {"a": 1})]


def call_chunk(index: int, call_id: str | None = None, name: str | None = None,
               arguments: str = "") -> bytes:
    function: dict[str, Any] = {"arguments": arguments}
    if name is not None:
        function["name"] = name
    entry: dict[str, Any] = {"index": index, "function": function}
    if call_id is not None:
        entry["id"] = call_id
    return chunk({"tool_calls": [entry]})


DONE = b"data: [DONE]\n\n"


def test_openai_completions_text_after_another_block_opens_a_new_block(mock_server) -> None:
    mock_server.sse(chunk({"reasoning_content": "R1"}) + chunk({"content": "A"})
                    + call_chunk(0, "call_a", "f", "{}") + chunk({"content": "B"})
                    + chunk({"reasoning_content": "R2"}) + chunk({"content": "C"})
                    + chunk({}, "tool_calls") + DONE)
    run = run_stream(local_model(mock_server))
    check_invariants(run)
    call = ac.ToolCall("call_a", "f", {})
    assert [signature(e) for e in run.events] == [
        ("start",),
        ("thinking_start", 0), ("thinking_delta", 0, "R1"), ("thinking_end", 0, "R1"),
        ("text_start", 1), ("text_delta", 1, "A"), ("text_end", 1, "A"),
        ("toolcall_start", 2), ("toolcall_delta", 2, "{}"), ("toolcall_end", 2, call),
        ("text_start", 3), ("text_delta", 3, "B"), ("text_end", 3, "B"),
        ("thinking_start", 4), ("thinking_delta", 4, "R2"), ("thinking_end", 4, "R2"),
        ("text_start", 5), ("text_delta", 5, "C"), ("text_end", 5, "C"),
        ("done", "toolUse"),
    ]
    assert run.message.content == [
        ac.ThinkingContent("R1", "reasoning_content"), ac.TextContent("A"), call,
        ac.TextContent("B"), ac.ThinkingContent("R2", "reasoning_content"), ac.TextContent("C")]


def test_openai_completions_reused_index_with_new_id_is_a_new_call(mock_server) -> None:
    mock_server.sse(call_chunk(0, "call_a", "f", '{"x":1}') + call_chunk(0, "call_b", "g")
                    + call_chunk(0, arguments='{"y":2}') + chunk({}, "tool_calls") + DONE)
    run = run_stream(local_model(mock_server))
    check_invariants(run)
    assert run.message.tool_calls == [ac.ToolCall("call_a", "f", {"x": 1}),
                                      ac.ToolCall("call_b", "g", {"y": 2})]


INTERLEAVED = (call_chunk(0, "call_a", "f") + call_chunk(1, "call_b", "g")
               + call_chunk(0, arguments='{"x":') + call_chunk(1, arguments='{"y":2}')
               + call_chunk(0, arguments="1}") + chunk({}, "tool_calls") + DONE)


def test_openai_completions_interleaved_tool_calls_final_arguments(mock_server) -> None:
    mock_server.sse(INTERLEAVED)
    run = run_stream(local_model(mock_server))
    assert run.message.tool_calls == [ac.ToolCall("call_a", "f", {"x": 1}),
                                      ac.ToolCall("call_b", "g", {"y": 2})]


@pytest.mark.xfail(strict=True, reason=(
    "arguments for a tool call whose block was closed when the next index started are appended "
    "to it after its toolcall_end (a delta after the end, and the end event's tool_call has "
    "partial arguments); keeping tool blocks open until the stream ends, as the reference's "
    "newer version does, would change the event order of the §5.6 transcripts"))
def test_openai_completions_interleaved_tool_calls_keep_the_protocol(mock_server) -> None:
    mock_server.sse(INTERLEAVED)
    run = run_stream(local_model(mock_server))
    check_invariants(run)
    ends = [e.tool_call for e in run.events if isinstance(e, ac.ToolCallEndEvent)]
    assert ends == run.message.tool_calls


def test_openai_completions_invariant_checker_rejects_broken_sequences(mock_server) -> None:
    good = replay(mock_server, fixture("text.sse"))
    check_invariants(good)

    def broken(keep: list[int]) -> Run:
        return Run([good.events[i] for i in keep], [good.snapshots[i] for i in keep],
                   good.message)

    for keep in ([1, 2, 3, 4, 5, 6],  # no start
                 [0, 1, 2, 3, 4, 5, 6, 6],  # two terminals
                 [0, 1, 2, 3, 4, 5],  # no terminal
                 [0, 2, 1, 3, 4, 5, 6],  # a delta before its start
                 [0, 1, 2, 5, 3, 6],  # a delta after the end
                 [0, 1, 0, 2, 3, 4, 5, 6]):  # two starts
        with pytest.raises(AssertionError):
            check_invariants(broken(keep))


def test_openai_completions_missing_key_raises(monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ac.MissingApiKeyError, match="OPENAI_API_KEY"):
        ac.stream(remote_model(), CONTEXT)
    with pytest.raises(ac.MissingApiKeyError, match="OPENAI_API_KEY"):
        ac.stream(remote_model(), CONTEXT, ac.StreamOptions(api_key=""))


def test_openai_completions_env_key_is_used(mock_server, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    request = sent(mock_server, api_key=None)
    assert request.header("Authorization") == "Bearer sk-from-env"


def test_openai_completions_local_server_needs_no_key(mock_server, monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    request = sent(mock_server, api_key=None)
    assert request.header("Authorization") == "Bearer none"


# --- 5. abort -----------------------------------------------------------------------------------


def test_openai_completions_abort_mid_stream(sse_server, run_in_thread) -> None:
    gone = sse_server.slow_sse([chunk({"role": "assistant", "content": "Hello"})],
                               interval_s=HOLD)  # then holds the stream open
    controller = ac.AbortController()
    first_delta = threading.Event()
    aborted_at: list[float] = []

    def abort_after_first_delta() -> None:
        if first_delta.wait(WAIT_S):
            aborted_at.append(time.monotonic())
            controller.abort()

    run_in_thread(abort_after_first_delta)
    events: list[ac.AssistantMessageEvent] = []
    snapshots: list[list[Any]] = []
    # no timeout set: the default read timeout (ten minutes), so only the abort can end the read
    stream = ac.stream(local_model(sse_server), CONTEXT, options(signal=controller.signal))
    for event in stream:
        events.append(event)
        partial = getattr(event, "partial", None)
        snapshots.append(list(partial.content) if partial is not None else [])
        if event.type == "text_delta":
            first_delta.set()
    assert aborted_at, "the abort never happened"
    run = Run(events, snapshots, stream.result(WAIT_S))
    check_invariants(run)
    assert [signature(e) for e in events] == [
        ("start",), ("text_start", 0), ("text_delta", 0, "Hello"), ("error", "aborted")]
    assert run.message.stop_reason == "aborted"
    assert run.message.content == [ac.TextContent("Hello")]
    assert run.message.error_message == "Request was aborted"
    assert gone.seen.wait(WAIT_S)  # the client closed the connection the server held open...
    assert gone.at is not None
    assert gone.at >= aborted_at[0]  # ...after the abort


def test_openai_completions_already_aborted_sends_nothing(sse_server) -> None:
    controller = ac.AbortController()
    controller.abort()
    sse_server.sse(fixture("text.sse"))
    run = run_stream(local_model(sse_server), signal=controller.signal)
    check_invariants(run)
    assert [signature(e) for e in run.events] == [("error", "aborted")]
    assert run.message.content == []
    assert run.message.stop_reason == "aborted"
    assert sse_server.requests == []
