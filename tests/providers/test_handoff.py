"""One conversation across four APIs: every replayed request must be valid for its target.

An Agent talks to OpenAI Chat Completions, then Anthropic, then Gemini, then OpenAI Responses
(all served by the local test server), calling a tool and thinking on the way; after each
switch of `agent.model`, the request the new provider receives is checked against the rules
its API enforces (tool-call pairing, id formats, where thinking and signatures may appear).
"""

from __future__ import annotations

import itertools
import re
from typing import Any

import pytest
from replies import anthropic_reply, completions_reply, google_reply, responses_reply
from sse_server import SSEServer

import agentcore as ac


def models(url: str) -> dict[str, ac.Model]:
    return {
        "chat": ac.Model("deepseek-reasoner", "DeepSeek R", "openai-completions", "deepseek",
                         url, reasoning=True),
        "claude": ac.Model("claude-sonnet-4-5", "Claude", "anthropic-messages", "anthropic",
                           url, reasoning=True),
        "gemini": ac.Model("gemini-2.5-flash", "Gemini", "google-generative-ai", "google", url,
                           reasoning=True),
        "gpt": ac.Model("gpt-5-mini", "GPT-5 mini", "openai-responses", "openai", url,
                        reasoning=True),
    }


def lookup(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> ac.AgentToolResult:
    return ac.AgentToolResult([ac.TextContent(f"{args['city']}: 21C")])


WEATHER = ac.AgentTool("get_weather", "Weather for a city",
                       {"type": "object", "properties": {"city": {"type": "string"}},
                        "required": ["city"]}, lookup)
ANTHROPIC_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
SIGNATURE = "EqQBCkgIARABGAIiQHNpZ25hdHVyZQ=="


def check_completions(body: dict[str, Any]) -> None:
    """Every tool message answers a call of the assistant message before it; ids fit 40."""
    open_ids: set[str] = set()
    for message in body["messages"]:
        if message["role"] == "assistant":
            open_ids = {c["id"] for c in message.get("tool_calls", [])}
            assert all(len(i) <= 40 for i in open_ids)
            assert isinstance(message.get("content"), (str, type(None)))
        elif message["role"] == "tool":
            assert message["tool_call_id"] in open_ids
            open_ids.discard(message["tool_call_id"])
        else:
            assert not open_ids, "a tool call was left unanswered"


def check_anthropic(body: dict[str, Any], own_signatures: set[str]) -> None:
    """Tool uses are answered in the very next user message; ids and signatures are valid."""
    messages = body["messages"]
    assert messages[0]["role"] == "user"
    for prev, message in itertools.pairwise(messages):
        assert prev["role"] != message["role"], "roles must alternate"
    for i, message in enumerate(messages):
        blocks = message["content"] if isinstance(message["content"], list) else []
        uses = [b["id"] for b in blocks if b.get("type") == "tool_use"]
        for block in blocks:
            if block.get("type") == "thinking":
                assert block["signature"] in own_signatures
        assert all(ANTHROPIC_ID.match(u) for u in uses)
        if uses:
            answers = [b["tool_use_id"] for b in messages[i + 1]["content"]
                       if b.get("type") == "tool_result"]
            assert answers == uses


def check_gemini(body: dict[str, Any], own_thoughts: set[str]) -> None:
    """Function calls are answered by the next user turn; only Gemini's own thoughts stay."""
    contents = body["contents"]
    for i, turn in enumerate(contents):
        calls = [p["functionCall"]["name"] for p in turn["parts"] if "functionCall" in p]
        for part in turn["parts"]:
            assert "id" not in part.get("functionCall", {}), "gemini models get no call ids"
            if part.get("thought") and part["text"] not in own_thoughts:
                pytest.fail("thinking from other models must be plain text for Gemini")
        if calls:
            answers = [p["functionResponse"]["name"] for p in contents[i + 1]["parts"]
                       if "functionResponse" in p]
            assert answers == calls
            assert contents[i + 1]["role"] == "user"


def check_responses(body: dict[str, Any]) -> None:
    """Every function_call_output follows its function_call; no foreign reasoning items."""
    seen_calls: set[str] = set()
    for item in body["input"]:
        assert item.get("type") != "reasoning", "reasoning items only replay to their model"
        if item.get("type") == "function_call":
            seen_calls.add(item["call_id"])
            assert re.match(r"^[A-Za-z0-9_-]{1,64}$", item["call_id"])
            if "id" in item:  # item ids, when replayed, must look like OpenAI's own
                assert item["id"].startswith("fc")
                assert len(item["id"]) <= 64
        if item.get("type") == "function_call_output":
            assert item["call_id"] in seen_calls


def test_handoff_one_conversation_across_four_apis(sse_server: SSEServer) -> None:
    m = models(sse_server.url)
    agent = ac.Agent(m["chat"], system_prompt="You are a weather bot.", tools=[WEATHER],
                     thinking_level="medium", api_key="test-key")

    # 1. Chat Completions: reasoning, a tool call with an id longer than Anthropic allows chars
    sse_server.sse(completions_reply(reasoning="Paris first.",
                                     calls=[("call|with|pipes:and.dots", "get_weather",
                                             {"city": "Paris"})]))
    sse_server.sse(completions_reply(text="Paris is 21C."))
    agent.prompt("Weather in Paris?").result(10)
    check_completions(sse_server.requests[1].json)

    # 2. Anthropic: signed thinking and a tool call
    agent.model = m["claude"]
    sse_server.sse(anthropic_reply(thinking=("Now Tokyo.", SIGNATURE),
                                   calls=[("toolu_01", "get_weather", {"city": "Tokyo"})]))
    sse_server.sse(anthropic_reply(text="Tokyo is 21C."))
    agent.prompt("And Tokyo?").result(10)
    first, second = sse_server.requests[2].json, sse_server.requests[3].json
    check_anthropic(first, own_signatures=set())
    check_anthropic(second, own_signatures={SIGNATURE})
    foreign = [b for msg in first["messages"] if msg["role"] == "assistant"
               for b in msg["content"] if b.get("type") == "text"]
    assert {"type": "text", "text": "Paris first."} in foreign  # foreign thinking became text

    # 3. Gemini: two calls at once, a thought signature
    agent.model = m["gemini"]
    sse_server.sse(google_reply(thought="Both at once.", signature="c2lnbmF0dXJl",
                                calls=[("get_weather", {"city": "Oslo"}),
                                       ("get_weather", {"city": "Rome"})]))
    sse_server.sse(google_reply(text="Oslo and Rome are 21C."))
    agent.prompt("Oslo and Rome?").result(10)
    check_gemini(sse_server.requests[4].json, own_thoughts=set())
    check_gemini(sse_server.requests[5].json, own_thoughts={"Both at once."})

    # 4. back to OpenAI, through the Responses API
    agent.model = m["gpt"]
    sse_server.sse(responses_reply("All four cities are 21C."))
    agent.prompt("Summarise.").result(10)
    check_responses(sse_server.requests[6].json)

    # and once more through Chat Completions, with the whole mixed history
    agent.model = m["chat"]
    sse_server.sse(completions_reply(text="Done."))
    agent.prompt("Thanks!").result(10)
    check_completions(sse_server.requests[7].json)

    assert agent.state.error_message is None
    replies = [msg for msg in agent.messages if isinstance(msg, ac.AssistantMessage)]
    assert [r.api for r in replies] == ["openai-completions"] * 2 + ["anthropic-messages"] * 2 + [
        "google-generative-ai"] * 2 + ["openai-responses", "openai-completions"]
    assert all(r.stop_reason in ("stop", "toolUse") for r in replies)
    results = [msg for msg in agent.messages if isinstance(msg, ac.ToolResultMessage)]
    assert [r.text for r in results] == ["Paris: 21C", "Tokyo: 21C", "Oslo: 21C", "Rome: 21C"]


def test_handoff_prepare_next_turn_switches_provider_within_a_run(sse_server: SSEServer) -> None:
    m = models(sse_server.url)

    def switch(turn: ac.PrepareNextTurnContext, signal: Any) -> ac.AgentLoopTurnUpdate:
        return ac.AgentLoopTurnUpdate(model=m["claude"])

    agent = ac.Agent(m["chat"], tools=[WEATHER], prepare_next_turn=switch, api_key="k")
    sse_server.sse(completions_reply(calls=[("call_1", "get_weather", {"city": "Paris"})]))
    sse_server.sse(anthropic_reply(text="Paris is 21C."))
    agent.prompt("Weather in Paris?").result(10)
    assert [r.path for r in sse_server.requests] == ["/chat/completions", "/v1/messages"]
    check_anthropic(sse_server.requests[1].json, own_signatures=set())
    assert agent.messages[-1].text == "Paris is 21C."
    assert agent.model is m["chat"]  # the switch applied to that run only
