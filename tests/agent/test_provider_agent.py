"""An `Agent` end to end over real HTTP: a real tool, parallel calls, a provider switch, abort.

The local scripted server (`tests/sse_server.py`) speaks `openai-completions` first, then
`openai-responses` for the same conversation; every request body is read back from what the
server received.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import paths
import pytest
from sse_server import SSEServer

import agentcore as ac

FIXTURES = paths.FIXTURES
WAIT_S = 5.0
KEY = "sk-test"
PRICES = ac.ModelCost(input=0.15, output=0.6)
SYSTEM = "You answer weather questions with the get_weather tool."
QUESTION = "What's the weather in Paris and in Tokyo?"
PARIS_ID = "call_Ab12Cd34Ef56Gh78Ij90Kl12"  # the ids in openai_completions/tool_calls.sse
TOKYO_ID = "call_Mn34Op56Qr78St90Uv12Wx34"
WEATHER = {"Paris": "18°C, light rain", "Tokyo": "24°C, sunny"}
ANSWER = "Paris: 18°C with light rain. Tokyo: 24°C and sunny."


def fixture(path: str) -> bytes:
    return (FIXTURES / path).read_bytes()


def completions_text(pieces: list[str], usage: tuple[int, int]) -> bytes:
    """A Chat Completions stream of text `pieces`, a `stop` chunk, a usage chunk and [DONE]."""
    head = {"id": "chatcmpl-agent", "object": "chat.completion.chunk", "created": 1756400020,
            "model": "gpt-4o-mini-2024-07-18", "system_fingerprint": "fp_560af6e559"}

    def chunk(delta: dict[str, Any] | None, finish: str | None = None,
              usage: dict[str, int] | None = None) -> str:
        choices = [] if delta is None else [
            {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
        data = {**head, "choices": choices, "usage": usage}
        return f"data: {json.dumps(data, separators=(',', ':'))}\n\n"

    prompt, completion = usage
    return "".join([
        chunk({"role": "assistant", "content": ""}),
        *(chunk({"content": piece}) for piece in pieces),
        chunk({}, "stop"),
        chunk(None, usage={"prompt_tokens": prompt, "completion_tokens": completion,
                           "total_tokens": prompt + completion}),
        "data: [DONE]\n\n",
    ]).encode()


def weather_tool(calls: list[str], both_running: threading.Barrier | None = None) -> ac.AgentTool:
    """`get_weather`, backed by a dict; with `both_running`, each call waits for the other."""

    def execute(tool_call_id: str, args: Any, signal: ac.AbortSignal,
                on_update: Any) -> ac.AgentToolResult:
        calls.append(args["city"])
        if both_running is not None:
            both_running.wait()  # breaks (raises) after its timeout if the calls ran one by one
        city = args["city"]
        if city not in WEATHER:
            raise ValueError(f"no weather station in {city!r}")
        return ac.AgentToolResult([ac.TextContent(f"{city}: {WEATHER[city]}")],
                                  details={"city": city})

    return ac.AgentTool(
        "get_weather", "Get the current weather for a city.",
        {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
         "additionalProperties": False},
        execute,
    )


def completions_model(server: SSEServer) -> ac.Model:
    return ac.Model("gpt-4o-mini", "GPT-4o mini", "openai-completions", "openai",
                    f"{server.url}/v1", cost=PRICES)


def responses_model(server: SSEServer) -> ac.Model:
    return ac.Model("gpt-4o", "GPT-4o", "openai-responses", "openai", f"{server.url}/v1",
                    input=["text", "image"], cost=ac.ModelCost(input=2.5, output=10.0))


def roles(messages: list[Any]) -> list[str]:
    return [m.role for m in messages]


def test_agent_runs_parallel_tool_calls_then_switches_to_responses(sse_server: SSEServer) -> None:
    sse_server.sse(fixture("openai_completions/tool_calls.sse"), chunking="random", seed=7)
    sse_server.sse(completions_text(["Paris: 18°C with light rain. ", "Tokyo: 24°C and sunny."],
                                    (140, 18)))
    calls: list[str] = []
    agent = ac.Agent(model=completions_model(sse_server), system_prompt=SYSTEM,
                     tools=[weather_tool(calls, threading.Barrier(2, timeout=WAIT_S))],
                     api_key=KEY)
    tool_events: list[str] = []
    agent.subscribe(lambda event, signal: tool_events.append(event.type)
                    if event.type.startswith("tool_execution") else None)

    new = agent.prompt(QUESTION).result(WAIT_S)

    state = agent.state
    assert state.error_message is None
    assert not state.is_streaming
    assert state.pending_tool_calls == frozenset()
    assert new == state.messages
    assert roles(state.messages) == ["user", "assistant", "toolResult", "toolResult", "assistant"]
    first, paris, tokyo, answer = state.messages[1:]
    assert first.stop_reason == ac.StopReason.TOOL_USE
    assert first.tool_calls == [ac.ToolCall(PARIS_ID, "get_weather", {"city": "Paris"}),
                                ac.ToolCall(TOKYO_ID, "get_weather", {"city": "Tokyo"})]
    assert sorted(calls) == ["Paris", "Tokyo"]  # both ran, at the same time (the barrier)
    assert tool_events.count("tool_execution_start") == 2
    assert tool_events.count("tool_execution_end") == 2
    assert paris == ac.ToolResultMessage(
        PARIS_ID, "get_weather", [ac.TextContent("Paris: 18°C, light rain")],
        details={"city": "Paris"}, timestamp=paris.timestamp)
    assert tokyo == ac.ToolResultMessage(
        TOKYO_ID, "get_weather", [ac.TextContent("Tokyo: 24°C, sunny")],
        details={"city": "Tokyo"}, timestamp=tokyo.timestamp)
    assert answer.text == ANSWER
    assert answer.stop_reason == ac.StopReason.STOP
    assert (first.usage.input, first.usage.output) == (61, 48)
    assert (answer.usage.input, answer.usage.output) == (140, 18)
    total = first.usage + answer.usage
    assert (total.input, total.output, total.total_tokens) == (201, 66, 267)
    assert total.cost.total == pytest.approx((201 * 0.15 + 66 * 0.6) / 1e6)

    assert [r.path for r in sse_server.requests] == ["/v1/chat/completions"] * 2
    assert all(r.header("Authorization") == f"Bearer {KEY}" for r in sse_server.requests)
    sent = sse_server.requests[1].json["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "tool"]
    assert sent[0] == {"role": "system", "content": SYSTEM}
    assert sent[1] == {"role": "user", "content": QUESTION}
    calls_sent = sent[2]["tool_calls"]
    assert [(c["id"], c["type"], c["function"]["name"], json.loads(c["function"]["arguments"]))
            for c in calls_sent] == [(PARIS_ID, "function", "get_weather", {"city": "Paris"}),
                                     (TOKYO_ID, "function", "get_weather", {"city": "Tokyo"})]
    assert sent[3:] == [
        {"role": "tool", "tool_call_id": PARIS_ID, "content": "Paris: 18°C, light rain"},
        {"role": "tool", "tool_call_id": TOKYO_ID, "content": "Tokyo: 24°C, sunny"},
    ]
    assert [t["function"]["name"] for t in sse_server.requests[1].json["tools"]] == [
        "get_weather"]

    # Same conversation, another provider: the Responses API replays the whole transcript.
    agent.model = responses_model(sse_server)
    sse_server.sse(fixture("openai_responses/text.sse"), chunking="bytewise")
    follow_up = "Thanks. Say hello."
    more = agent.prompt(follow_up).result(WAIT_S)

    assert agent.state.error_message is None
    assert roles(more) == ["user", "assistant"]
    reply = more[-1]
    assert (reply.api, reply.provider, reply.model) == ("openai-responses", "openai", "gpt-4o")
    assert reply.text == "Hello test successful"
    assert roles(agent.state.messages) == ["user", "assistant", "toolResult", "toolResult",
                                           "assistant", "user", "assistant"]
    request = sse_server.requests[2]
    assert request.path == "/v1/responses"
    assert request.header("Authorization") == f"Bearer {KEY}"
    items = request.json["input"]
    assert items[:2] == [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": [{"type": "input_text", "text": QUESTION}]},
    ]
    assert [(i["type"], i["call_id"], i["name"], json.loads(i["arguments"])) for i in items[2:4]] \
        == [("function_call", PARIS_ID, "get_weather", {"city": "Paris"}),
            ("function_call", TOKYO_ID, "get_weather", {"city": "Tokyo"})]
    assert all("id" not in i for i in items[2:4])  # no Responses item id for a foreign call
    assert items[4:6] == [
        {"type": "function_call_output", "call_id": PARIS_ID, "output": "Paris: 18°C, light rain"},
        {"type": "function_call_output", "call_id": TOKYO_ID, "output": "Tokyo: 24°C, sunny"},
    ]
    assert items[6] == {  # a completions reply has no item id: one is made from its index
        "type": "message", "role": "assistant", "status": "completed", "id": "msg_4",
        "content": [{"type": "output_text", "text": ANSWER, "annotations": []}]}
    assert items[7:] == [{"role": "user", "content": [{"type": "input_text", "text": follow_up}]}]
    assert len(items) == 8
    assert [t["name"] for t in request.json["tools"]] == ["get_weather"]


def test_agent_tool_failure_reaches_the_model_as_an_error_result(sse_server: SSEServer) -> None:
    body = fixture("openai_completions/tool_calls.sse").replace(b'okyo\\"}', b'imbuktu\\"}')
    sse_server.sse(body)
    sse_server.sse(completions_text(["No data for Timbuktu."], (90, 6)))
    agent = ac.Agent(model=completions_model(sse_server), tools=[weather_tool([])], api_key=KEY)

    agent.prompt(QUESTION).result(WAIT_S)

    results = [m for m in agent.state.messages if isinstance(m, ac.ToolResultMessage)]
    assert [(r.tool_call_id, r.is_error, r.text) for r in results] == [
        (PARIS_ID, False, "Paris: 18°C, light rain"),
        (TOKYO_ID, True, "ValueError: no weather station in 'Timbuktu'"),
    ]
    sent = sse_server.requests[1].json["messages"]
    assert sent[-1] == {"role": "tool", "tool_call_id": TOKYO_ID,
                        "content": "ValueError: no weather station in 'Timbuktu'"}
    assert agent.state.error_message is None


def test_agent_abort_while_the_server_streams_slowly(sse_server: SSEServer) -> None:
    piece = completions_text([" and"], (1, 1)).split(b"\n\n")[1] + b"\n\n"  # one text chunk
    gone = sse_server.slow_sse([piece], interval_s=0.02)  # a stream without end
    agent = ac.Agent(model=completions_model(sse_server), api_key=KEY)
    streaming = threading.Event()
    agent.subscribe(lambda event, signal: streaming.set()
                    if event.type == "message_update" else None)

    run = agent.prompt("Tell me a very long story.")
    assert streaming.wait(WAIT_S)
    aborted_at = time.monotonic()
    run.abort()
    messages = run.result(WAIT_S)  # the stream never ends by itself: the abort ended it

    last = messages[-1]
    assert isinstance(last, ac.AssistantMessage)
    assert last.stop_reason == ac.StopReason.ABORTED
    assert last.error_message == "Request was aborted"
    assert last.text.startswith(" and")  # what streamed before the abort is kept
    assert roles(messages) == ["user", "assistant"]
    assert gone.seen.wait(WAIT_S), "the server never saw the connection close"
    assert gone.at is not None
    assert gone.at >= aborted_at  # the client closed the connection after the abort
    assert agent.wait_for_idle(WAIT_S)
    state = agent.state
    assert not state.is_streaming
    assert state.error_message == "Request was aborted"
    assert len(sse_server.requests) == 1  # no retry, no second model call


def test_loop_sink_raising_mid_stream_closes_the_connection(sse_server: SSEServer) -> None:
    piece = completions_text([" and"], (1, 1)).split(b"\n\n")[1] + b"\n\n"  # one text chunk
    gone = sse_server.slow_sse([piece], interval_s=0.02)

    class Stop(Exception):
        pass

    def sink(event: Any) -> None:
        if event.type == "message_update":
            raise Stop

    config = ac.AgentLoopConfig(model=completions_model(sse_server), api_key=KEY)
    with pytest.raises(Stop):
        ac.run_agent_loop([ac.UserMessage("Tell me a story.")], ac.AgentContext(), config, sink)
    assert gone.seen.wait(WAIT_S), "the reply cut short kept its connection open"
