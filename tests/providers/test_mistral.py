"""Mistral (`mistral`) over Chat Completions, against the scripted server.

Mistral's rules come with its provider or its host (`api.mistral.ai`); the catalogue's models
keep their real `base_url` here and their requests are delivered to the scripted server (by a
session of the test's own over real HTTP, or by `mock_server` answering for Mistral's host
too): the body is what Mistral would receive. The rules: no field Mistral does not know
(`store`, `stream_options`, `max_completion_tokens`), no `developer` role, an assistant line
between tool results and a user message, and tool-call ids of exactly 9 letters and digits
(compat `tool_call_id_format`), other providers' ids rewritten both ways of a call and its
result. Fixtures: `tests/fixtures/mistral/` (see `tests/fixtures/README.md`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import attrs
import paths
import pytest
import requests
from _internals import mistral_ids
from mock_server import MockServer, ScriptedServer
from sse_server import SSEServer

import agentcore as ac
from agentcore.providers import openai_completions

FIXTURES = paths.FIXTURES / "mistral"
WAIT_S = 5.0
KEY = "Xq7LmN2pR8sT4vW9yZ3bC6dF1gH5jK0a"
MISTRAL_ID = re.compile(r"[A-Za-z0-9]{9}")
WEATHER = ac.Tool("get_weather", "Current weather for a city.", {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


class _ToServer(requests.adapters.HTTPAdapter):
    """Sends each request to the local server instead, keeping its path and query."""

    def __init__(self, server: SSEServer) -> None:
        super().__init__()
        self.server = server

    def send(self, request: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        request.url = urlunsplit(urlsplit(self.server.url)[:2] + urlsplit(request.url)[2:])
        return super().send(request, **kwargs)


@contextlib.contextmanager
def to_server(server: ScriptedServer) -> Iterator[requests.Session | None]:
    """A session whose requests to Mistral's API land on `server`; for a `MockServer`, None
    (the shared client, which it answers) once it answers for Mistral's host too."""
    if isinstance(server, MockServer):
        server.also_answer("https://api.mistral.ai")
        yield None
        return
    with requests.Session() as session:
        session.trust_env = False
        session.mount("https://api.mistral.ai/", _ToServer(server))
        yield session


def run(model: ac.Model, context: ac.Context, session: requests.Session | None,
        **options: Any) -> ac.AssistantMessage:
    options.setdefault("api_key", KEY)
    stream = ac.stream(model, context, ac.StreamOptions(http_session=session, **options))
    list(stream)
    return stream.result(WAIT_S)


def body_of(model: ac.Model, context: ac.Context, **options: Any) -> dict[str, Any]:
    return openai_completions.build_body(model, context, ac.StreamOptions(**options))


# --- the body Mistral gets ----------------------------------------------------------------------


def test_mistral_body_has_only_fields_mistral_knows(sse_server: SSEServer,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MISTRAL_API_KEY", KEY)
    sse_server.sse(fixture("text.sse"), chunking="random")
    model = ac.get_model("mistral", "mistral-large-latest")
    context = ac.Context("You are terse.", [ac.UserMessage("Weather?")], [WEATHER])

    with to_server(sse_server) as session:
        stream = ac.stream(model, context, ac.StreamOptions(http_session=session))
        events = list(stream)
    message = stream.result(WAIT_S)

    request = sse_server.requests[-1]
    assert request.path == "/v1/chat/completions"
    assert request.header("Authorization") == f"Bearer {KEY}"
    body = request.json
    assert set(body) == {"model", "messages", "stream", "max_tokens", "tools"}
    assert body["model"] == "mistral-large-latest"
    assert body["messages"][0] == {"role": "system", "content": "You are terse."}
    assert events[-1].type == "done"
    assert message.text == "Sunny in Paris, rainy in Tokyo."
    assert (message.usage.input, message.usage.output, message.usage.total_tokens) == (160, 11,
                                                                                       171)
    assert message.usage.cost.total == pytest.approx((160 * 0.5 + 11 * 1.5) / 1e6)


def test_mistral_rules_follow_the_provider_through_a_gateway() -> None:
    gateway = ac.Model("mistral-large-latest", "Mistral Large via a gateway", "openai-completions",
                       "mistral", "https://llm-gateway.example.com/mistral/v1")
    context = ac.Context(None, list(FOREIGN), [WEATHER])
    body = body_of(gateway, context)
    assert {"store", "stream_options", "max_completion_tokens"}.isdisjoint(body)
    assert all(MISTRAL_ID.fullmatch(call["id"]) for m in body["messages"]
               for call in m.get("tool_calls") or ())
    own = attrs.evolve(gateway, compat={"tool_call_id_format": None})  # compat wins
    assert body_of(own, context)["messages"][1]["tool_calls"][0]["id"].startswith("call_k3JH")


def test_mistral_reasoning_model_gets_system_role_and_mistral_efforts() -> None:
    model = ac.get_model("mistral", "mistral-small-latest")
    context = ac.Context("Think first.", [ac.UserMessage("15 + 27?")])
    thinking = body_of(model, context, reasoning=ac.ThinkingLevel.LOW)
    assert thinking["messages"][0]["role"] == "system"  # Mistral knows no developer role
    assert thinking["reasoning_effort"] == "high"  # the one effort Mistral's models take
    assert body_of(model, context)["reasoning_effort"] == "none"  # thinking off: say so
    assert "reasoning_effort" not in body_of(ac.get_model("mistral", "codestral-latest"),
                                             context, reasoning=ac.ThinkingLevel.HIGH)


def test_mistral_reasoning_chunks_become_thinking_and_are_replayed(mock_server: MockServer) -> None:
    mock_server.sse(fixture("reasoning.sse"), chunking="bytewise")
    model = ac.get_model("mistral", "mistral-small-latest")
    context = ac.Context(None, [ac.UserMessage("15 + 27?")])

    with to_server(mock_server) as session:
        stream = ac.stream(model, context, ac.StreamOptions(api_key=KEY, http_session=session,
                                                            reasoning=ac.ThinkingLevel.HIGH))
        types = [event.type for event in stream]
    message = stream.result(WAIT_S)

    assert types == ["start", "thinking_start", "thinking_delta", "thinking_delta",
                     "thinking_delta", "thinking_end", "text_start", "text_delta", "text_delta",
                     "text_end", "done"]
    assert message.content == [
        ac.ThinkingContent("15 + 27: 15 + 20 = 35, 35 + 7 = 42.", "content"),
        ac.TextContent("15 + 27 = 42.")]
    # Mistral wants its thinking back as it came: chunks of the assistant's content
    later = ac.Context(None, [*context.messages, message, ac.UserMessage("And 42 + 1?")])
    replayed = body_of(model, later)["messages"][1]
    assert replayed == {"role": "assistant", "content": [
        {"type": "thinking", "thinking": [
            {"type": "text", "text": "15 + 27: 15 + 20 = 35, 35 + 7 = 42."}]},
        {"type": "text", "text": "15 + 27 = 42."}]}


def test_mistral_model_length_is_a_length_stop(mock_server: MockServer) -> None:
    text = fixture("text.sse").replace(b'"finish_reason":"stop"', b'"finish_reason":"model_length"')
    mock_server.sse(text)
    with to_server(mock_server) as session:
        message = run(ac.get_model("mistral", "mistral-large-latest"),
                      ac.Context(None, [ac.UserMessage("Weather?")]), session)
    assert message.stop_reason == ac.StopReason.LENGTH


@pytest.mark.parametrize(("status", "name", "text"), [
    (400, "http_400_message_order.json", "400 Unexpected role 'user' after role 'tool'"),
    (422, "http_422_extra_forbidden.json", "422 body.store: Extra inputs are not permitted"),
])
def test_mistral_errors_are_readable(mock_server: MockServer, status: int, name: str,
                                     text: str) -> None:
    mock_server.status(status, fixture(name))
    with to_server(mock_server) as session:
        message = run(ac.get_model("mistral", "mistral-large-latest"),
                      ac.Context(None, [ac.UserMessage("Weather?")]), session)
    assert message.error_message == text


# --- tool-call ids, both ways -------------------------------------------------------------------


def _turn(provider: str, api: str, model: str, *ids: str) -> list[Any]:
    """An assistant turn of `provider` calling get_weather once per id, then the results."""
    calls = [ac.ToolCall(call_id, "get_weather", {"city": f"City {n}"})
             for n, call_id in enumerate(ids)]
    results = [ac.ToolResultMessage(call.id, "get_weather", [ac.TextContent(f"{n} degrees")])
               for n, call in enumerate(calls)]
    return [ac.AssistantMessage(list(calls), api, provider, model, stop_reason="toolUse"),
            *results]


FOREIGN = [
    ac.UserMessage("Weather in six cities, three turns?"),
    *_turn("openai", "openai-responses", "gpt-5", "call_k3JH9aB2cD4eF6gH8iJ0lM1n|fc_68b0c1d2e3f4"),
    *_turn("anthropic", "anthropic-messages", "claude-sonnet-4-5", "toolu_01A09q90qw90lq917835lq9",
           "toolu_01BzDx4mNwVqG8h2pR5sT7uW"),
    *_turn("ollama", "openai-completions", "llama3.1:8b", "call_0"),
    *_turn("ollama", "openai-completions", "llama3.1:8b", "call_0"),  # numbered per reply
    *_turn("mistral", "openai-completions", "mistral-medium-latest", "D681PevKs"),
    ac.UserMessage("Thanks. And tomorrow?"),
]
"""A transcript written by four other models (one of them Mistral's own)."""


def test_mistral_rewrites_foreign_tool_call_ids_both_ways(mock_server: MockServer) -> None:
    mock_server.sse(fixture("text.sse"))
    mock_server.sse(fixture("text.sse"))
    model = ac.get_model("mistral", "mistral-large-latest")
    context = ac.Context(None, list(FOREIGN), [WEATHER])

    with to_server(mock_server) as session:
        run(model, context, session)
        run(model, context, session)

    first, second = (request.json for request in mock_server.requests)
    assert first == second  # the same transcript, the same request (prompt caching)
    messages = first["messages"]
    calls = [call["id"] for m in messages if m["role"] == "assistant"
             for call in m.get("tool_calls") or ()]
    results = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    assert len(calls) == 6
    assert all(MISTRAL_ID.fullmatch(call_id) for call_id in calls)
    assert results == calls  # each result answers its own call
    assert len(set(calls)) == 6  # the two "call_0" of two turns are two calls
    assert calls[-1] == "D681PevKs"  # Mistral's own id is kept
    # an assistant line between the last tool result and the user's message
    assert [m["role"] for m in messages[-3:]] == ["tool", "assistant", "user"]
    assert messages[-2] == {"role": "assistant", "content": "I have processed the tool results."}
    # what Mistral does not take
    assert all("reasoning_content" not in m for m in messages)
    assert {"store", "stream_options", "max_completion_tokens"}.isdisjoint(first)


def test_mistral_own_ids_come_back_unchanged(mock_server: MockServer,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MISTRAL_API_KEY", KEY)
    mock_server.sse(fixture("tool_calls.sse"), chunking="bytewise")
    mock_server.sse(fixture("text.sse"))
    weather = ac.AgentTool(WEATHER.name, WEATHER.description, WEATHER.parameters,
                           lambda call_id, args, signal, on_update: ac.AgentToolResult(
                               [ac.TextContent(f"{args['city']}: sunny")]))

    with to_server(mock_server) as session, ac.Agent(
            ac.get_model("mistral", "mistral-large-latest"), tools=[weather],
            http_session=session) as agent:
        agent.prompt("Weather in Paris and Tokyo?").result(WAIT_S)

    reply = agent.state.messages[1]
    assert [call.id for call in reply.tool_calls] == ["D681PevKs", "kQ3uTz8Wb"]
    assert [call.arguments for call in reply.tool_calls] == [{"city": "Paris"}, {"city": "Tokyo"}]
    sent = mock_server.requests[1].json["messages"]
    assert [c["id"] for c in sent[1]["tool_calls"]] == ["D681PevKs", "kQ3uTz8Wb"]
    assert sent[1]["content"] == ""  # tool calls only: content is no null for Mistral
    assert [(m["tool_call_id"], m["content"]) for m in sent[2:]] == [
        ("D681PevKs", "Paris: sunny"), ("kQ3uTz8Wb", "Tokyo: sunny")]
    assert agent.state.messages[-1].text == "Sunny in Paris, rainy in Tokyo."


def test_mistral_ids_avoid_an_id_already_in_the_conversation() -> None:
    call = ac.ToolCall("call_x", "get_weather", {})
    foreign = ac.AssistantMessage([call], "anthropic-messages", "anthropic", "claude",
                                  stop_reason="toolUse")
    hashed = mistral_ids([])("call_x", foreign)  # what "call_x" becomes when nothing clashes
    assert MISTRAL_ID.fullmatch(hashed)
    native = ac.AssistantMessage([ac.ToolCall(hashed, "get_weather", {})], "openai-completions",
                                 "mistral", "mistral-large-latest", stop_reason="toolUse")
    normalize = mistral_ids([native, foreign])
    other = normalize("call_x", foreign)
    assert MISTRAL_ID.fullmatch(other)
    assert other != hashed
    assert normalize("call_x", foreign) == other  # asked again: the same answer
    assert normalize(hashed, native) == hashed


def test_mistral_id_rule_is_a_compat_key_for_any_server(mock_server: MockServer) -> None:
    # Mistral's models on vLLM need the same ids: the key, not the host, decides.
    mock_server.sse(fixture("text.sse"))
    mock_server.sse(fixture("text.sse"))
    local = ac.Model("mistralai/Mistral-Small-3.2-24B", "Mistral on vLLM", "openai-completions",
                     "vllm", f"{mock_server.url}/v1", compat={"tool_call_id_format": "mistral"})
    context = ac.Context(None, [FOREIGN[0], *FOREIGN[3:6]], [WEATHER])  # Anthropic's turn

    ac.complete(local, context)
    ac.complete(attrs.evolve(local, compat=None), context)

    rewritten, kept = (r.json["messages"][1]["tool_calls"][0]["id"] for r in mock_server.requests)
    assert MISTRAL_ID.fullmatch(rewritten)
    assert kept == "toolu_01A09q90qw90lq917835lq9"


def test_mistral_transcript_continues_on_another_provider() -> None:
    # Mistral's 9-character ids are valid everywhere: nothing to rewrite on the way back.
    context = ac.Context(None, [ac.UserMessage("Weather?"), *FOREIGN[-3:-1]])
    openai = ac.Model("gpt-4o-mini", "GPT-4o mini", "openai-completions", "openai",
                      "https://api.openai.com/v1")
    body = body_of(openai, context)
    assert body["messages"][1]["tool_calls"][0]["id"] == "D681PevKs"
    assert body["messages"][2]["tool_call_id"] == "D681PevKs"


# --- secrets ------------------------------------------------------------------------------------


def test_mistral_key_never_leaves_the_header(mock_server: MockServer,
                                             monkeypatch: pytest.MonkeyPatch,
                                             caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("MISTRAL_API_KEY", KEY)
    mock_server.status(401, json.dumps({"message": f"Unauthorized: {KEY}",
                                        "request_id": "8a1f0c2e"}))
    seen: list[str] = []

    with to_server(mock_server) as session, ac.Agent(
            ac.get_model("mistral", "codestral-latest"), http_session=session) as agent:
        agent.subscribe(lambda event, signal: seen.append(ac.to_json(event)))
        agent.prompt("Hi").result(WAIT_S)

    assert agent.state.messages[-1].error_message == "401 Unauthorized: ***"
    everything = "\n".join([*seen, ac.to_json(agent.state.messages), caplog.text, repr(agent)])
    assert KEY not in everything
    assert KEY.encode() not in mock_server.requests[-1].body
