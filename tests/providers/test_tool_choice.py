"""`StreamOptions.tool_choice` on every wire API (API §18), read back from `mock_server`.

Each API gets each choice in its own form; a request without tools says nothing; a name that is
no tool of the request ends the reply as an error event before anything is sent; Anthropic keeps
extended thinking off when the choice forces a call.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from mock_server import MockServer
from replies import completions_reply
from wire_apis import WIRES, WITH_TOOLS, options

import agentcore as ac

NO_TOOLS = ac.Context("Be brief.", [ac.UserMessage("Weather in Paris?")])

FIELD = {"openai-completions": "tool_choice", "openai-responses": "tool_choice",
         "anthropic-messages": "tool_choice", "google-generative-ai": "toolConfig"}
"""Where each API's body says what it asks of the tools."""

FORMS: dict[str, dict[str, Any]] = {
    "openai-completions": {
        "auto": "auto", "none": "none", "required": "required",
        "get_time": {"type": "function", "function": {"name": "get_time"}}},
    "openai-responses": {
        "auto": "auto", "none": "none", "required": "required",
        "get_time": {"type": "function", "name": "get_time"}},
    "anthropic-messages": {
        "auto": {"type": "auto"}, "none": {"type": "none"}, "required": {"type": "any"},
        "get_time": {"type": "tool", "name": "get_time"}},
    "google-generative-ai": {
        "auto": {"functionCallingConfig": {"mode": "AUTO"}},
        "none": {"functionCallingConfig": {"mode": "NONE"}},
        "required": {"functionCallingConfig": {"mode": "ANY"}},
        "get_time": {"functionCallingConfig": {"mode": "ANY",
                                               "allowedFunctionNames": ["get_time"]}}},
}
"""Each API's own form of each choice (the name of a tool: `get_time`)."""

CASES = [(api, choice) for api in WIRES for choice in FORMS[api]]


def sent(server: MockServer, api: str, context: ac.Context = WITH_TOOLS,
         model: ac.Model | None = None, **opts: Any) -> tuple[dict[str, Any], ac.AssistantMessage]:
    """The body the server received for one reply, and the reply."""
    wire = WIRES[api]
    server.sse(wire.reply("Sunny."))
    message = ac.complete(model or wire.model(server.url), context, options(**opts))
    assert message.stop_reason == "stop", message.error_message
    [request] = server.requests
    return request.json, message


@pytest.mark.parametrize(("api", "choice"), CASES)
def test_tool_choice_is_sent_in_each_apis_form(mock_server, api: str, choice: str) -> None:
    body, message = sent(mock_server, api, tool_choice=choice)
    assert body[FIELD[api]] == FORMS[api][choice]
    assert message.text == "Sunny."


@pytest.mark.parametrize(("api", "choice"), CASES)
def test_tool_choice_changes_nothing_else_in_the_body(api: str, choice: str) -> None:
    wire = WIRES[api]
    model = wire.model("http://127.0.0.1:1")
    plain = wire.build_body(model, WITH_TOOLS, options())
    chosen = wire.build_body(model, WITH_TOOLS, options(tool_choice=choice))
    assert FIELD[api] not in plain
    assert chosen == {**plain, FIELD[api]: FORMS[api][choice]}


@pytest.mark.parametrize("api", WIRES)
def test_tool_choice_none_by_default_sends_nothing(mock_server, api: str) -> None:
    body, _ = sent(mock_server, api)
    assert FIELD[api] not in body


@pytest.mark.parametrize("choice", ["auto", "none", "required", "get_time"])
@pytest.mark.parametrize("api", WIRES)
def test_tool_choice_without_tools_sends_nothing(mock_server, api: str, choice: str) -> None:
    body, _ = sent(mock_server, api, NO_TOOLS, tool_choice=choice)
    assert FIELD[api] not in body
    assert "tools" not in body


def test_tool_choice_not_sent_with_the_empty_tools_of_a_history_with_calls(mock_server) -> None:
    call = ac.AssistantMessage([ac.ToolCall("call_1", "get_weather", {"city": "Paris"})],
                               "openai-completions", "openai", "gpt-4o-mini", ac.Usage(),
                               "toolUse")
    result = ac.ToolResultMessage("call_1", "get_weather", [ac.TextContent("21C")])
    context = ac.Context("Be brief.", [ac.UserMessage("Weather in Paris?"), call, result])
    body, _ = sent(mock_server, "openai-completions", context, tool_choice="required")
    assert body["tools"] == []  # servers want the calls' tools declared, even none
    assert "tool_choice" not in body  # ...and reject a choice among no tools


@pytest.mark.parametrize("api", WIRES)
def test_tool_choice_unknown_name_ends_the_reply_before_sending(mock_server, api: str) -> None:
    model = WIRES[api].model(mock_server.url)
    events = list(ac.stream(model, WITH_TOOLS, options(tool_choice="get_weather_now")))
    [error] = events
    assert isinstance(error, ac.ErrorEvent)
    assert error.reason == "error"
    assert error.error.error_message == (
        "'tool_choice' 'get_weather_now' is neither 'auto', 'none' nor 'required' and names no "
        "tool of the run (its tools: 'get_weather', 'get_time')")
    assert mock_server.requests == []


@pytest.mark.parametrize("api", WIRES)
def test_tool_choice_unknown_name_raises_from_build_body(api: str) -> None:
    wire = WIRES[api]
    with pytest.raises(ValueError, match="'tool_choice' 'nope'"):
        wire.build_body(wire.model("http://127.0.0.1:1"), WITH_TOOLS, options(tool_choice="nope"))


# --- Anthropic: a forced choice and extended thinking ------------------------------------------


def claude(url: str, **compat: Any) -> ac.Model:
    return ac.Model("claude-sonnet-4-5", "Claude", "anthropic-messages", "anthropic", url,
                    reasoning=True, max_tokens=64_000, compat=compat or None)


@pytest.mark.parametrize("choice", ["required", "get_time"])
def test_tool_choice_forced_leaves_anthropic_extended_thinking_off(
        mock_server, caplog, choice: str) -> None:
    caplog.set_level(logging.DEBUG, logger="agentcore.providers.anthropic")
    body, _ = sent(mock_server, "anthropic-messages", model=claude(mock_server.url),
                   reasoning="high", temperature=0.5, tool_choice=choice)
    assert body["tool_choice"] == FORMS["anthropic-messages"][choice]
    assert "thinking" not in body
    assert body["temperature"] == 0.5  # allowed again: thinking is off
    assert body["max_tokens"] == 32_000  # no thinking budget added
    [record] = [r for r in caplog.records if "thinking left off" in r.getMessage()]
    assert record.levelno == logging.DEBUG
    assert repr(choice) in record.getMessage()


@pytest.mark.parametrize("choice", ["auto", "none"])
def test_tool_choice_not_forced_keeps_anthropic_extended_thinking(mock_server, choice) -> None:
    body, _ = sent(mock_server, "anthropic-messages", model=claude(mock_server.url),
                   reasoning="high", tool_choice=choice)
    assert body["tool_choice"] == FORMS["anthropic-messages"][choice]
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 16384}


def test_tool_choice_forced_keeps_anthropic_adaptive_thinking(mock_server) -> None:
    body, _ = sent(mock_server, "anthropic-messages",
                   model=claude(mock_server.url, adaptive_thinking=True), reasoning="high",
                   tool_choice="required")
    assert body["tool_choice"] == {"type": "any"}
    assert body["thinking"] == {"type": "adaptive"}
    assert body["output_config"] == {"effort": "high"}


def test_tool_choice_forced_without_tools_keeps_anthropic_thinking(mock_server) -> None:
    body, _ = sent(mock_server, "anthropic-messages", NO_TOOLS, model=claude(mock_server.url),
                   reasoning="low", tool_choice="required")
    assert "tool_choice" not in body
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}


# --- "required" only where the server takes it (Chat Completions) ------------------------------


def llama_cpp(url: str, **compat: Any) -> ac.Model:
    """A model on a local OpenAI-compatible server, as llama-cpp-python serves one."""
    return ac.Model("qwen2.5-7b-instruct", "Qwen 2.5 7B", "openai-completions", "llama-cpp",
                    url, compat=compat or None)


def openai(url: str, **compat: Any) -> ac.Model:
    return ac.Model("gpt-4o-mini", "GPT-4o mini", "openai-completions", "openai", url,
                    compat=compat or None)


ONE_TOOL = ac.Context("Be brief.", [ac.UserMessage("Weather in Paris?")], [WITH_TOOLS.tools[0]])
NAMED = {"type": "function", "function": {"name": "get_weather"}}


@pytest.mark.parametrize(("make", "compat", "context", "wire"), [
    (openai, {}, WITH_TOOLS, "required"),
    (openai, {}, ONE_TOOL, "required"),
    (llama_cpp, {}, WITH_TOOLS, "auto"),  # not known to take it: the model may call any tool
    (llama_cpp, {}, ONE_TOOL, NAMED),  # the only tool named: the same demand as "required"
    (llama_cpp, {"supports_required_tool_choice": True}, WITH_TOOLS, "required"),
    (openai, {"supportsRequiredToolChoice": False}, ONE_TOOL, NAMED),
], ids=["openai", "openai-one-tool", "llama-cpp", "llama-cpp-one-tool", "compat-true",
        "compat-false"])
def test_tool_choice_required_only_where_the_server_takes_it(
        mock_server, make: Any, compat: dict[str, Any], context: ac.Context, wire: Any) -> None:
    body, message = sent(mock_server, "openai-completions", context,
                         model=make(mock_server.url, **compat), tool_choice="required")
    assert body["tool_choice"] == wire
    assert message.text == "Sunny."


@pytest.mark.parametrize("base_url", ["https://openrouter.ai/api/v1",
                                      "https://api.groq.com/openai/v1", "https://api.x.ai/v1",
                                      "https://api.deepseek.com", "https://api.mistral.ai/v1"])
def test_tool_choice_required_goes_to_the_catalogue_servers_that_take_it(base_url: str) -> None:
    model = ac.Model("m", "M", "openai-completions", "custom", base_url)
    body = WIRES["openai-completions"].build_body(model, WITH_TOOLS,
                                                  options(tool_choice="required"))
    assert body["tool_choice"] == "required"


@pytest.mark.parametrize(("tools", "wire"), [
    ([], {"type": "function", "function": {"name": "final_result"}}),
    ([WITH_TOOLS.tools[0]], "auto"),
])
def test_tool_choice_output_type_on_a_llama_cpp_server(mock_server, tools: list[ac.Tool],
                                                       wire: Any) -> None:
    """`output_type` answers on a server without "required": `final_result` named when it is
    the only tool; with others, "auto" and a nudge when the model answers in text."""
    mock_server.sse(WIRES["openai-completions"].reply("It is sunny."))
    mock_server.sse(completions_reply(calls=[("call_1", "final_result", {"response": 21})]))
    agent_tools = [ac.AgentTool(t.name, t.description, t.parameters,
                                lambda *_: ac.AgentToolResult([ac.TextContent("21C")]))
                   for t in tools]
    with ac.Agent(llama_cpp(mock_server.url), tools=agent_tools, api_key="sk-test") as agent:
        run = agent.prompt("Temperature in Paris?", output_type=int)
        assert run.output == 21
    assert [r.json["tool_choice"] for r in mock_server.requests] == [wire, wire]
    assert [t["function"]["name"] for t in mock_server.requests[0].json["tools"]] == [
        *(t.name for t in tools), "final_result"]
