"""Conversations across APIs: every replayed request must be valid for its target.

An Agent talks to OpenAI Chat Completions, then Anthropic, then Gemini, then OpenAI Responses
(all served by the scripted server, `mock_server`: no socket), calling a tool and thinking on
the way; after each switch of `agent.model`, the request the new provider receives is checked
against the rules its API enforces (tool-call pairing, id formats, where thinking and
signatures may appear).
A second conversation goes the same way through the cloud providers: Bedrock (Claude, signed
reasoning), OpenAI Chat Completions, Mistral (9-character ids), Azure OpenAI Responses and
Vertex, and back to Bedrock.
"""

from __future__ import annotations

import itertools
import re
from typing import Any
from urllib.parse import quote

import attrs
import pytest
from bedrock_replies import reasoning_block, serve, text_block, tool_block
from bedrock_replies import reply as bedrock_reply
from mock_server import MockServer
from replies import anthropic_reply, completions_reply, google_reply, responses_reply

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


def test_handoff_one_conversation_across_four_apis(mock_server: MockServer) -> None:
    m = models(mock_server.url)
    agent = ac.Agent(m["chat"], system_prompt="You are a weather bot.", tools=[WEATHER],
                     thinking_level="medium", api_key="test-key")

    # 1. Chat Completions: reasoning, a tool call with an id longer than Anthropic allows chars
    mock_server.sse(completions_reply(reasoning="Paris first.",
                                      calls=[("call|with|pipes:and.dots", "get_weather",
                                             {"city": "Paris"})]))
    mock_server.sse(completions_reply(text="Paris is 21C."))
    agent.prompt("Weather in Paris?").result(10)
    check_completions(mock_server.requests[1].json)

    # 2. Anthropic: signed thinking and a tool call
    agent.model = m["claude"]
    mock_server.sse(anthropic_reply(thinking=("Now Tokyo.", SIGNATURE),
                                    calls=[("toolu_01", "get_weather", {"city": "Tokyo"})]))
    mock_server.sse(anthropic_reply(text="Tokyo is 21C."))
    agent.prompt("And Tokyo?").result(10)
    first, second = mock_server.requests[2].json, mock_server.requests[3].json
    check_anthropic(first, own_signatures=set())
    check_anthropic(second, own_signatures={SIGNATURE})
    foreign = [b for msg in first["messages"] if msg["role"] == "assistant"
               for b in msg["content"] if b.get("type") == "text"]
    assert {"type": "text", "text": "Paris first."} in foreign  # foreign thinking became text

    # 3. Gemini: two calls at once, a thought signature
    agent.model = m["gemini"]
    mock_server.sse(google_reply(thought="Both at once.", signature="c2lnbmF0dXJl",
                                 calls=[("get_weather", {"city": "Oslo"}),
                                       ("get_weather", {"city": "Rome"})]))
    mock_server.sse(google_reply(text="Oslo and Rome are 21C."))
    agent.prompt("Oslo and Rome?").result(10)
    check_gemini(mock_server.requests[4].json, own_thoughts=set())
    check_gemini(mock_server.requests[5].json, own_thoughts={"Both at once."})

    # 4. back to OpenAI, through the Responses API
    agent.model = m["gpt"]
    mock_server.sse(responses_reply("All four cities are 21C."))
    agent.prompt("Summarise.").result(10)
    check_responses(mock_server.requests[6].json)

    # and once more through Chat Completions, with the whole mixed history
    agent.model = m["chat"]
    mock_server.sse(completions_reply(text="Done."))
    agent.prompt("Thanks!").result(10)
    check_completions(mock_server.requests[7].json)

    assert agent.state.error_message is None
    replies = [msg for msg in agent.messages if isinstance(msg, ac.AssistantMessage)]
    assert [r.api for r in replies] == ["openai-completions"] * 2 + ["anthropic-messages"] * 2 + [
        "google-generative-ai"] * 2 + ["openai-responses", "openai-completions"]
    assert all(r.stop_reason in ("stop", "toolUse") for r in replies)
    results = [msg for msg in agent.messages if isinstance(msg, ac.ToolResultMessage)]
    assert [r.text for r in results] == ["Paris: 21C", "Tokyo: 21C", "Oslo: 21C", "Rome: 21C"]


def test_handoff_prepare_next_turn_switches_provider_within_a_run(mock_server: MockServer) -> None:
    m = models(mock_server.url)

    def switch(turn: ac.PrepareNextTurnContext, signal: Any) -> ac.AgentLoopTurnUpdate:
        return ac.AgentLoopTurnUpdate(model=m["claude"])

    agent = ac.Agent(m["chat"], tools=[WEATHER], prepare_next_turn=switch, api_key="k")
    mock_server.sse(completions_reply(calls=[("call_1", "get_weather", {"city": "Paris"})]))
    mock_server.sse(anthropic_reply(text="Paris is 21C."))
    agent.prompt("Weather in Paris?").result(10)
    assert [r.path for r in mock_server.requests] == ["/chat/completions", "/v1/messages"]
    check_anthropic(mock_server.requests[1].json, own_signatures=set())
    assert agent.messages[-1].text == "Paris is 21C."
    assert agent.model is m["chat"]  # the switch applied to that run only


# --- the cloud providers: Bedrock, Mistral, Azure OpenAI, Vertex --------------------------------

BEDROCK_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
MISTRAL_ID = re.compile(r"^[A-Za-z0-9]{9}$")
BEDROCK_SIGNATURE = "ErcBCkgIBhABGAIiQGJlZHJvY2sgc2lnbmF0dXJl"


def check_bedrock(body: dict[str, Any], own_signatures: set[str]) -> None:
    """Converse rules: roles alternate from a user turn; each toolUse is answered by a toolResult
    in the very next (user) message and each toolResult answers one; ids fit toolUseId; the only
    reasoning is the model's own signed thinking; no blank text; tools declared with calls."""
    messages = body["messages"]
    assert messages[0]["role"] == "user"
    for prev, message in itertools.pairwise(messages):
        assert prev["role"] != message["role"], "roles must alternate"
    asked: list[str] = []
    for message in messages:
        blocks = message["content"]
        answers = [b["toolResult"]["toolUseId"] for b in blocks if "toolResult" in b]
        assert answers == asked, "toolUse must be answered by toolResult in the next message"
        asked = [b["toolUse"]["toolUseId"] for b in blocks if "toolUse" in b]
        assert all(BEDROCK_ID.match(i) for i in asked + answers)
        for block in blocks:
            assert block.get("text", "x").strip(), "Bedrock rejects blank text"
            if "reasoningContent" in block:
                assert message["role"] == "assistant"
                assert block["reasoningContent"]["reasoningText"]["signature"] in own_signatures
    assert not asked, "a toolUse was left unanswered"
    if any("toolUse" in b or "toolResult" in b for m in messages for b in m["content"]):
        assert body["toolConfig"]["tools"], "toolUse/toolResult need a toolConfig"


def check_mistral(body: dict[str, Any]) -> None:
    """Chat Completions rules, plus Mistral's: every call id exactly 9 alphanumerics (calls and
    results matching) and no `developer` role."""
    check_completions(body)
    for message in body["messages"]:
        assert message["role"] != "developer"
        for call in message.get("tool_calls", []):
            assert MISTRAL_ID.match(call["id"]), call["id"]
        if message["role"] == "tool":
            assert MISTRAL_ID.match(message["tool_call_id"]), message["tool_call_id"]


def cloud_models(url: str) -> dict[str, ac.Model]:
    """The catalogue's models of the cloud providers, each at its own path on one local server."""
    return {
        "bedrock": attrs.evolve(ac.get_model(
            "amazon-bedrock", "us.anthropic.claude-sonnet-4-5-20250929-v1:0"), base_url=url),
        "openai": ac.Model("o4-mini", "o4-mini", "openai-completions", "openai", f"{url}/v1",
                           reasoning=True),
        "mistral": attrs.evolve(ac.get_model("mistral", "mistral-medium-latest"),
                                base_url=f"{url}/v1"),
        "azure": attrs.evolve(ac.get_model("azure-openai", "gpt-5-mini"),
                              base_url=f"{url}/openai/v1"),
        "vertex": attrs.evolve(ac.get_model("google-vertex", "gemini-2.5-flash"),
                               base_url=f"{url}/v1"),
    }


def serve_bedrock(server: MockServer, *blocks: bytes, stop: str = "end_turn") -> None:
    serve(server, bedrock_reply(*blocks, stop=stop))


def test_handoff_bedrock_openai_mistral_azure_vertex_and_back(
        mock_server: MockServer, aws_env: pytest.MonkeyPatch) -> None:
    m = cloud_models(mock_server.url)
    agent = ac.Agent(m["bedrock"], system_prompt="You are a weather bot.", tools=[WEATHER],
                     thinking_level="medium", api_key="test-key")
    requests = mock_server.requests

    # 1. Bedrock (Claude): signed reasoning and a tool call
    serve_bedrock(mock_server, reasoning_block(0, BEDROCK_SIGNATURE, "Paris first."),
                  tool_block(1, "tooluse_Q1w2E3r4T5y6U7i8", "get_weather", '{"city": "Paris"}'),
                  stop="tool_use")
    serve_bedrock(mock_server, text_block(0, "Paris is 21C."))
    agent.prompt("Weather in Paris?").result(10)
    assert [r.path for r in requests] == [f"/model/{quote(m['bedrock'].id, safe='')}"
                                          "/converse-stream"] * 2
    assert requests[0].header("Authorization") == "Bearer test-key"  # an API key: no SigV4
    check_bedrock(requests[0].json, own_signatures=set())
    check_bedrock(requests[1].json, own_signatures={BEDROCK_SIGNATURE})
    [signed] = [b for b in requests[1].json["messages"][1]["content"] if "reasoningContent" in b]
    assert signed["reasoningContent"]["reasoningText"] == {"text": "Paris first.",
                                                           "signature": BEDROCK_SIGNATURE}

    # 2. OpenAI Chat Completions: reasoning and a call with an id no other API takes as is
    agent.model = m["openai"]
    mock_server.sse(completions_reply(reasoning="Tokyo now.", calls=[
        ("call|with|pipes:and.dots", "get_weather", {"city": "Tokyo"})]))
    mock_server.sse(completions_reply(text="Tokyo is 21C."))
    agent.prompt("And Tokyo?").result(10)
    assert requests[2].path == "/v1/chat/completions"
    check_completions(requests[2].json)
    check_completions(requests[3].json)

    # 3. Mistral: every earlier id rewritten to 9 alphanumerics, its own call kept as is
    agent.model = m["mistral"]
    mock_server.sse(completions_reply(calls=[("D681PevKs", "get_weather", {"city": "Oslo"})]))
    mock_server.sse(completions_reply(text="Oslo is 21C."))
    agent.prompt("Oslo?").result(10)
    check_mistral(requests[4].json)
    check_mistral(requests[5].json)
    assert [c["id"] for msg in requests[5].json["messages"]
            for c in msg.get("tool_calls", [])][-1] == "D681PevKs"

    # 4. Azure OpenAI, through the Responses API: a call of its own
    agent.model = m["azure"]
    mock_server.sse(responses_reply(calls=[("call_azure_1", "get_weather", {"city": "Rome"})]))
    mock_server.sse(responses_reply("Rome is 21C."))
    agent.prompt("Rome?").result(10)
    assert requests[6].path == "/openai/v1/responses"
    assert requests[6].header("api-key") == "test-key"
    check_responses(requests[6].json)
    check_responses(requests[7].json)

    # 5. Vertex (express mode): a thought and a signed call
    agent.model = m["vertex"]
    mock_server.sse(google_reply(thought="Lima next.", signature="c2lnbmF0dXJl",
                                 calls=[("get_weather", {"city": "Lima"})]))
    mock_server.sse(google_reply(text="Lima is 21C."))
    agent.prompt("Lima?").result(10)
    assert requests[8].path == ("/v1/publishers/google/models/gemini-2.5-flash"
                                ":streamGenerateContent?alt=sse")
    check_gemini(requests[8].json, own_thoughts=set())
    check_gemini(requests[9].json, own_thoughts={"Lima next."})

    # 6. back to Bedrock with the whole mixed history: only its own signature replays
    agent.model = m["bedrock"]
    serve_bedrock(mock_server, text_block(0, "All five cities are 21C."))
    agent.prompt("Summarise.").result(10)
    final = requests[10].json
    check_bedrock(final, own_signatures={BEDROCK_SIGNATURE})
    texts = [b["text"] for msg in final["messages"] for b in msg["content"] if "text" in b]
    assert {"Tokyo now.", "Lima next."} <= set(texts)  # foreign thinking became text
    assert len([b for msg in final["messages"] for b in msg["content"] if "toolUse" in b]) == 5

    assert agent.state.error_message is None
    replies = [msg for msg in agent.messages if isinstance(msg, ac.AssistantMessage)]
    assert [r.api for r in replies] == ["bedrock-converse-stream"] * 2 + [
        "openai-completions"] * 4 + ["openai-responses"] * 2 + ["google-vertex"] * 2 + [
        "bedrock-converse-stream"]
    assert [r.provider for r in replies[::2]] == ["amazon-bedrock", "openai", "mistral",
                                                  "azure-openai", "google-vertex",
                                                  "amazon-bedrock"]
    assert all(r.stop_reason in ("stop", "toolUse") for r in replies)
    results = [msg for msg in agent.messages if isinstance(msg, ac.ToolResultMessage)]
    assert [r.text for r in results] == ["Paris: 21C", "Tokyo: 21C", "Oslo: 21C", "Rome: 21C",
                                         "Lima: 21C"]
