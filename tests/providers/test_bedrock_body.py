"""The ConverseStream request body: messages, images, tools and results, reasoning, cache points.

Most checks build the body directly (`build_body`); those that matter on the wire are read back
from what the scripted server (`mock_server`, no socket) received, and one conversation hands off
between Bedrock and OpenAI Chat Completions and back.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from bedrock_replies import (
    MODEL_ID,
    REDACTED,
    bedrock_model,
    reasoning_block,
    reply,
    serve,
    text_block,
    tool_block,
)
from mock_server import MockServer

import agentcore as ac
from agentcore import (
    AssistantMessage,
    Context,
    ImageContent,
    StreamOptions,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from agentcore.providers.bedrock import build_body

PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5Er"
       "kJggg==")
WEATHER = Tool("get_weather", "Current weather for a city.", {
    "$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
    "properties": {"city": {"type": "string"}}, "required": ["city"]})
TIME = Tool("get_time", "", {"type": "object", "properties": {}})
CACHE = {"cachePoint": {"type": "default"}}
MODEL = bedrock_model("http://127.0.0.1:9")
PLAIN = bedrock_model("http://127.0.0.1:9", "us.meta.llama4-maverick-17b-instruct-v1:0",
                      reasoning=False, compat=None)


def assistant(*content: Any, model: ac.Model = MODEL) -> AssistantMessage:
    return AssistantMessage(list(content), model.api, model.provider, model.id, Usage(),
                            "toolUse" if any(isinstance(c, ToolCall) for c in content)
                            else "stop")


def body(messages: list[Any], model: ac.Model = MODEL, system: str | None = None,
         tools: list[Tool] | None = None, **options: Any) -> dict[str, Any]:
    return build_body(model, Context(system, messages, tools), StreamOptions(**options))


CALL = ToolCall("tooluse_1", "get_weather", {"city": "Paris"})
TRANSCRIPT = [
    UserMessage([TextContent("Weather and time in Paris?"), ImageContent(PNG, "image/png")]),
    assistant(ThinkingContent("I should call tools.", "sig-1"), TextContent("Checking."), CALL,
              ToolCall("tooluse_2", "get_time", {})),
    ToolResultMessage("tooluse_1", "get_weather", [TextContent("Sunny, 21 C"),
                                                   ImageContent(PNG, "image/jpeg")]),
    ToolResultMessage("tooluse_2", "get_time", [TextContent("no clock")], is_error=True),
    UserMessage("Thanks!"),
]


def test_bedrock_body_messages_tools_and_results() -> None:
    sent = body(TRANSCRIPT, PLAIN, "Be brief.", [WEATHER, TIME], temperature=0.2)
    assert sent == {
        "messages": [
            {"role": "user", "content": [
                {"text": "Weather and time in Paris?"},
                {"image": {"format": "png", "source": {"bytes": PNG}}}]},
            {"role": "assistant", "content": [
                {"text": "I should call tools."},  # another model's thinking: text
                {"text": "Checking."},
                {"toolUse": {"toolUseId": "tooluse_1", "name": "get_weather",
                             "input": {"city": "Paris"}}},
                {"toolUse": {"toolUseId": "tooluse_2", "name": "get_time", "input": {}}}]},
            {"role": "user", "content": [  # the results and the next prompt: one user turn
                {"toolResult": {"toolUseId": "tooluse_1", "content": [
                    {"text": "Sunny, 21 C"},
                    {"image": {"format": "jpeg", "source": {"bytes": PNG}}}]}},
                {"toolResult": {"toolUseId": "tooluse_2", "content": [{"text": "no clock"}],
                                "status": "error"}},
                {"text": "Thanks!"}]}],
        "system": [{"text": "Be brief."}],
        "inferenceConfig": {"maxTokens": 32000, "temperature": 0.2},
        "toolConfig": {"tools": [
            {"toolSpec": {"name": "get_weather", "description": "Current weather for a city.",
                          "inputSchema": {"json": {"type": "object", "properties": {
                              "city": {"type": "string"}}, "required": ["city"]}}}},
            {"toolSpec": {"name": "get_time", "inputSchema": {"json": {
                "type": "object", "properties": {}, "required": []}}}}]},
    }


def test_bedrock_body_replays_own_reasoning_signed_or_redacted_only() -> None:
    own = assistant(ThinkingContent("Signed thought.", "sig-1"),
                    ThinkingContent("[Reasoning redacted]", REDACTED, redacted=True),
                    ThinkingContent("Unsigned thought."), TextContent("Answer."))
    sent = body([UserMessage("q"), own, UserMessage("more")])
    assert sent["messages"][1]["content"] == [
        {"reasoningContent": {"reasoningText": {"text": "Signed thought.",
                                                "signature": "sig-1"}}},
        {"reasoningContent": {"redactedContent": REDACTED}},
        {"text": "Answer."}]


def test_bedrock_body_cache_points_follow_compat_and_retention() -> None:
    messages = [UserMessage("q"), assistant(TextContent("a")), UserMessage("again")]
    sent = body(messages, system="sys")
    assert sent["system"] == [{"text": "sys"}, CACHE]
    assert sent["messages"][-1]["content"] == [{"text": "again"}, CACHE]
    assert sent["messages"][0]["content"] == [{"text": "q"}]
    off = body(messages, system="sys", cache_retention="none")
    assert (off["system"], off["messages"][-1]["content"]) == ([{"text": "sys"}],
                                                               [{"text": "again"}])
    plain = body(messages, PLAIN, system="sys")
    assert CACHE not in plain["system"] + plain["messages"][-1]["content"]


@pytest.mark.parametrize(("level", "budget", "max_tokens"), [
    ("minimal", 1024, 33024), ("medium", 8192, 40192), ("xhigh", 16384, 48384)])
def test_bedrock_body_claude_thinking_budget(level: str, budget: int, max_tokens: int) -> None:
    sent = body([UserMessage("q")], reasoning=level, temperature=0.5)
    assert sent["additionalModelRequestFields"] == {
        "thinking": {"type": "enabled", "budget_tokens": budget},
        "anthropic_beta": ["interleaved-thinking-2025-05-14"]}
    assert sent["inferenceConfig"] == {"maxTokens": max_tokens}  # no temperature with thinking


def test_bedrock_body_thinking_budgets_option_and_off() -> None:
    sent = body([UserMessage("q")], reasoning="low", thinking_budgets={"low": 3000},
                max_tokens=1000)
    assert sent["additionalModelRequestFields"]["thinking"]["budget_tokens"] == 3000
    assert sent["inferenceConfig"]["maxTokens"] == 4000
    assert "additionalModelRequestFields" not in body([UserMessage("q")], reasoning="off")
    assert "additionalModelRequestFields" not in body([UserMessage("q")], PLAIN,
                                                      reasoning="high")


def test_bedrock_body_reasoning_effort_for_gpt_oss() -> None:
    model = ac.get_model("amazon-bedrock", "openai.gpt-oss-120b-1:0")
    sent = body([UserMessage("q")], model, reasoning="xhigh", temperature=0.3)
    assert sent["additionalModelRequestFields"] == {"reasoning_effort": "high"}
    assert sent["inferenceConfig"]["temperature"] == 0.3


@pytest.mark.parametrize(("choice", "wire"), [
    ("auto", {"auto": {}}), ("required", {"any": {}}),
    ("get_time", {"tool": {"name": "get_time"}})])
def test_bedrock_body_tool_choice(choice: str, wire: dict[str, Any]) -> None:
    sent = body([UserMessage("q")], tools=[WEATHER, TIME], tool_choice=choice, reasoning="high")
    assert sent["toolConfig"]["toolChoice"] == wire
    forced = choice != "auto"  # Claude takes no thinking with a forced tool call
    assert ("additionalModelRequestFields" in sent) is not forced


def test_bedrock_body_tool_choice_none_leaves_tools_out_and_writes_calls_as_text() -> None:
    sent = body(TRANSCRIPT, PLAIN, tools=[WEATHER, TIME], tool_choice="none")
    assert "toolConfig" not in sent
    blocks = [b for turn in sent["messages"] for b in turn["content"]]
    assert not any("toolUse" in b or "toolResult" in b for b in blocks)
    assert {"text": '[called tool get_weather with {"city":"Paris"}]'} in blocks
    assert {"text": "[result of tool get_weather: Sunny, 21 C]"} in blocks
    assert {"text": "[error of tool get_time: no clock]"} in blocks


def test_bedrock_body_unknown_tool_choice_and_native_output_raise() -> None:
    with pytest.raises(ValueError, match="'tool_choice' 'nope'"):
        body([UserMessage("q")], tools=[WEATHER], tool_choice="nope")
    with pytest.raises(ValueError, match="'output_mode' 'native' is not supported"):
        body([UserMessage("q")], output_schema={"type": "object"})


def test_bedrock_body_native_output_when_compat_says_so() -> None:
    model = bedrock_model("http://127.0.0.1:9", compat={"supports_native_output": True})
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    sent = body([UserMessage("q")], model, output_schema=schema)
    assert sent["outputConfig"] == {"textFormat": {"type": "json_schema", "structure": {
        "jsonSchema": {"schema": json.dumps(schema, separators=(",", ":")),
                       "name": "final_result"}}}}


def test_bedrock_body_blank_text_is_left_out_and_odd_images_refused() -> None:
    sent = body([UserMessage("   "), UserMessage([TextContent(""), TextContent("real")])])
    assert sent["messages"] == [{"role": "user", "content": [{"text": "real"}, CACHE]}]
    empty = ToolResultMessage("tooluse_1", "get_weather", [])
    sent = body([UserMessage("q"), assistant(CALL), empty], PLAIN, tools=[WEATHER])
    assert sent["messages"][-1]["content"][0]["toolResult"]["content"] == [
        {"text": "(no output)"}]
    with pytest.raises(ValueError, match="Bedrock takes images as png, jpeg, gif or webp, not "
                                         "'image/bmp'"):
        body([UserMessage([ImageContent(PNG, "image/bmp")])])


def test_bedrock_body_tool_call_ids_of_other_providers_are_made_valid() -> None:
    other = AssistantMessage([ToolCall("call_1|fc_abc.def", "get_time", {})],
                             "openai-responses", "openai", "gpt-5", Usage(), "toolUse")
    result = ToolResultMessage("call_1|fc_abc.def", "get_time", [TextContent("noon")])
    sent = body([UserMessage("q"), other, result], tools=[TIME])
    new_id = "call_1_fc_abc_def_1jf3kxxwff6um"  # its safe prefix and a hash of the whole id
    assert sent["messages"][1]["content"][0]["toolUse"]["toolUseId"] == new_id
    assert sent["messages"][2]["content"][0]["toolResult"]["toolUseId"] == new_id


LONG = "call_" + "x" * 70
FOREIGN_IDS = [LONG + "A", LONG + "B", "call/1", "call#1", "call_1", "tooluse_" + "y" * 56]
"""Ids equal in their first 64 characters, ids differing only in a character Bedrock rejects,
and two valid ids (the longest valid one is 64 characters)."""


def test_bedrock_tool_call_ids_stay_distinct_and_paired_on_the_wire(
        mock_server: MockServer, aws_env: pytest.MonkeyPatch) -> None:
    calls = [ToolCall(call_id, "get_time", {"n": n}) for n, call_id in enumerate(FOREIGN_IDS)]
    other = AssistantMessage(calls, "openai-responses", "openai", "gpt-5", Usage(), "toolUse")
    results = [ToolResultMessage(call_id, "get_time", [TextContent(f"noon {n}")])
               for n, call_id in enumerate(FOREIGN_IDS)]
    serve(mock_server, reply(text_block(0, "Noon.")))
    context = Context(None, [UserMessage("Time?"), other, *results, UserMessage("Thanks")], [TIME])
    message = ac.complete(bedrock_model(mock_server.url), context)
    assert message.error_message is None
    asked, answered = mock_server.requests[0].json["messages"][1:3]
    uses = [block["toolUse"] for block in asked["content"]]
    answers = [block["toolResult"] for block in answered["content"] if "toolResult" in block]
    ids = [use["toolUseId"] for use in uses]
    assert len(set(ids)) == len(FOREIGN_IDS)
    assert all(re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", i) for i in ids)
    assert ids[4:] == FOREIGN_IDS[4:]  # valid ids are kept
    assert [(a["toolUseId"], a["content"]) for a in answers] == [
        (use["toolUseId"], [{"text": f"noon {use['input']['n']}"}]) for use in uses]
    again = body(context.messages, tools=[TIME])  # the same ids in every request
    assert [b["toolUse"]["toolUseId"] for b in again["messages"][1]["content"]] == ids


# --- on the wire ---------------------------------------------------------------------------------


def test_bedrock_agent_hands_off_to_openai_and_back(mock_server: MockServer,
                                                    aws_env: pytest.MonkeyPatch) -> None:
    """A conversation started on Bedrock goes on over Chat Completions, then on Bedrock again."""
    signature = "bedrock-own-signature-0123456789"
    serve(mock_server, reply(reasoning_block(0, signature, "Call the tool."),
                             tool_block(1, "tooluse_abc", "get_weather", '{"city": "Paris"}'),
                             stop="tool_use"))
    serve(mock_server, reply(text_block(0, "Sunny in Paris.")))
    chunk = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
             "choices": [{"index": 0, "delta": {"content": "Still sunny."},
                          "finish_reason": "stop"}]}
    mock_server.sse(f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n".encode())
    serve(mock_server, reply(text_block(0, "Bye.")))

    def get_weather(city: str) -> str:
        """Weather for a city."""
        return f"Sunny in {city}"

    bedrock = bedrock_model(mock_server.url)
    openai = ac.Model("gpt-4o", "GPT-4o", "openai-completions", "openai",
                      mock_server.url + "/v1")
    with ac.Agent(bedrock, tools=[get_weather], thinking_level="high",
                  api_key=None) as agent:
        agent.prompt("Weather in Paris?").raise_for_error()
        agent.model = openai
        agent.api_key = "sk-test-openai-0123"
        agent.prompt("And now?").raise_for_error()
        agent.model = bedrock
        agent.api_key = None
        agent.prompt("Bye?").raise_for_error()
    to_openai = mock_server.requests[2].json["messages"]
    assert [m["role"] for m in to_openai] == ["user", "assistant", "tool", "assistant", "user"]
    assert to_openai[1]["tool_calls"][0]["id"] == "tooluse_abc"
    back = mock_server.requests[3]
    assert back.path == f"/model/{MODEL_ID.replace(':', '%3A')}/converse-stream"
    turns = back.json["messages"]
    assert [t["role"] for t in turns] == ["user", "assistant", "user", "assistant", "user",
                                          "assistant", "user"]
    assert turns[1]["content"][0] == {"reasoningContent": {"reasoningText": {
        "text": "Call the tool.", "signature": signature}}}
    assert turns[2]["content"][0]["toolResult"]["content"] == [{"text": "Sunny in Paris"}]
    assert turns[5]["content"] == [{"text": "Still sunny."}]
