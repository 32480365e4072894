"""`StreamOptions.output_schema`: each API's native structured output (API §18), on the wire.

The schema goes out in the provider's own form (strict where OpenAI's strict mode allows it,
fitted to Anthropic's limits), a model without native output ends the reply as an error before
anything is sent, and the JSON the model writes comes back as the reply's text. Gemini before 3
takes no JSON format next to function declarations: with tools, the request is refused before
it is sent, and a run asking for it raises `ValueError` at the call (API §23).
"""

from __future__ import annotations

import json
import re
from typing import Any

import attrs
import pytest
from mock_server import MockServer
from replies import google_reply
from wire_apis import WIRES, WITH_TOOLS, options

import agentcore as ac

CONTEXT = ac.Context("Extract the person.", [ac.UserMessage("Ada Lovelace, born 1815.")])
PERSON = {"type": "object",
          "properties": {"name": {"type": "string"}, "born": {"type": "integer"}},
          "required": ["name", "born"]}
"""A schema strict mode takes once closed."""
LOOSE = {"type": "object",
         "properties": {"name": {"type": "string"}, "born": {"type": "integer"}},
         "required": ["name"]}
"""A schema with an optional property: not strict."""
CLOSED_PERSON = {**PERSON, "additionalProperties": False}
REPLY = '{"name": "Ada Lovelace", "born": 1815}'

FIELD = {"openai-completions": ("response_format",), "openai-responses": ("text",),
         "anthropic-messages": ("output_config",),
         "google-generative-ai": ("generationConfig", "responseMimeType", "responseJsonSchema")}
"""The body keys native output writes (Gemini's are inside `generationConfig`)."""


def sent(server: MockServer, api: str, model: ac.Model | None = None,
         context: ac.Context = CONTEXT, **opts: Any) -> tuple[dict[str, Any], ac.AssistantMessage]:
    """The body the server received for one JSON reply, and the reply."""
    wire = WIRES[api]
    server.sse(wire.reply(REPLY))
    message = ac.complete(model or wire.model(server.url), context, options(**opts))
    [request] = server.requests
    return request.json, message


def expected_form(api: str, schema: dict[str, Any], sent_schema: dict[str, Any],
                  strict: bool) -> dict[str, Any]:
    """The part of the body that asks for `schema`, in `api`'s form."""
    if api == "openai-completions":
        return {"response_format": {"type": "json_schema", "json_schema": {
            "name": "final_result", "schema": sent_schema, "strict": strict}}}
    if api == "openai-responses":
        return {"text": {"format": {"type": "json_schema", "name": "final_result",
                                    "schema": sent_schema, "strict": strict}}}
    if api == "anthropic-messages":
        return {"output_config": {"format": {"type": "json_schema",
                                             "schema": {**schema, "additionalProperties": False}}}}
    return {"responseMimeType": "application/json", "responseJsonSchema": schema}


def with_tools_model(api: str, url: str) -> ac.Model:
    """A model of `api` at `url` that takes native output next to tools: Gemini 3 on Gemini's
    API (Gemini 2.x does not, see the end of this file)."""
    if api == "google-generative-ai":
        return attrs.evolve(ac.get_model("google", "gemini-3-flash-preview"), base_url=url)
    return WIRES[api].model(url)


def native_part(api: str, body: dict[str, Any]) -> dict[str, Any]:
    if api == "google-generative-ai":
        return {k: v for k, v in body["generationConfig"].items() if k in FIELD[api][1:]}
    return {k: v for k, v in body.items() if k == FIELD[api][0]}


@pytest.mark.parametrize("api", WIRES)
def test_native_output_sends_the_schema_in_each_apis_form(mock_server, api: str) -> None:
    body, message = sent(mock_server, api, output_schema=PERSON)
    assert native_part(api, body) == expected_form(api, PERSON, CLOSED_PERSON, True)
    assert message.stop_reason == "stop"
    assert message.text == REPLY
    assert json.loads(message.text) == {"name": "Ada Lovelace", "born": 1815}


@pytest.mark.parametrize("api", ["openai-completions", "openai-responses"])
def test_native_output_not_strict_when_the_schema_cannot_be(mock_server, api: str) -> None:
    body, _ = sent(mock_server, api, output_schema=LOOSE)
    assert native_part(api, body) == expected_form(api, LOOSE, LOOSE, False)


@pytest.mark.parametrize("api", WIRES)
def test_native_output_changes_nothing_else_in_the_body(api: str) -> None:
    wire = WIRES[api]
    model = with_tools_model(api, "http://127.0.0.1:1")
    plain = wire.build_body(model, WITH_TOOLS, options())
    native = wire.build_body(model, WITH_TOOLS, options(output_schema=PERSON))
    if api == "google-generative-ai":
        config = native.pop("generationConfig")
        assert {k: v for k, v in config.items() if k not in FIELD[api][1:]} == (
            plain.pop("generationConfig"))
    else:
        assert native.pop(FIELD[api][0]) is not None
        assert FIELD[api][0] not in plain
    assert native == plain


@pytest.mark.parametrize("api", WIRES)
def test_native_output_without_a_schema_sends_no_format(mock_server, api: str) -> None:
    body, _ = sent(mock_server, api)
    assert native_part(api, body) == {}


@pytest.mark.parametrize("api", WIRES)
def test_native_output_goes_with_a_tool_choice(mock_server, api: str) -> None:
    body, _ = sent(mock_server, api, with_tools_model(api, mock_server.url), WITH_TOOLS,
                   output_schema=PERSON, tool_choice="auto")
    assert native_part(api, body) == expected_form(api, PERSON, CLOSED_PERSON, True)
    assert ("toolConfig" if api == "google-generative-ai" else "tool_choice") in body


def test_native_output_without_strict_mode_sends_no_strict(mock_server) -> None:
    model = ac.Model("qwen3", "Qwen 3", "openai-completions", "vllm", mock_server.url,
                     compat={"supports_strict_mode": False})
    body, _ = sent(mock_server, "openai-completions", model, output_schema=PERSON)
    assert body["response_format"] == {"type": "json_schema", "json_schema": {
        "name": "final_result", "schema": CLOSED_PERSON}}


@pytest.mark.parametrize("api", WIRES)
def test_native_output_refused_where_compat_says_no(mock_server, api: str) -> None:
    model = WIRES[api].model(mock_server.url)
    model = ac.Model(model.id, model.name, model.api, model.provider, model.base_url,
                     compat={"supports_native_output": False})
    message = ac.complete(model, CONTEXT, options(output_schema=PERSON))
    assert message.stop_reason == "error"
    assert message.error_message == (
        f"'output_mode' 'native' is not supported by model {model.id!r} ({api}): use "
        "output_mode='tool', or set compat={'supports_native_output': True} if it is")
    assert mock_server.requests == []


def test_native_output_refused_on_a_claude_without_it(mock_server) -> None:
    model = ac.get_model("anthropic", "claude-sonnet-4-0")
    local = ac.Model(model.id, model.name, model.api, model.provider, mock_server.url,
                     compat=model.compat)
    events = list(ac.stream(local, CONTEXT, options(output_schema=PERSON)))
    assert [e.type for e in events] == ["error"]
    assert "'output_mode' 'native' is not supported by model 'claude-sonnet-4-0'" in (
        events[0].error.error_message)
    assert mock_server.requests == []


# --- Anthropic's schema limits and its output_config --------------------------------------------


def test_native_output_anthropic_schema_fitted_to_its_limits(mock_server) -> None:
    schema = {"type": "object", "required": ["name"], "properties": {
        "name": {"type": "string", "maxLength": 80},
        "born": {"oneOf": [{"type": "integer", "minimum": 0}, {"type": "null"}]}}}
    body, message = sent(mock_server, "anthropic-messages", output_schema=schema)
    assert body["output_config"]["format"]["schema"] == {
        "type": "object", "required": ["name"], "additionalProperties": False, "properties": {
            "name": {"type": "string", "description": "(maxLength: 80)"},
            "born": {"anyOf": [{"type": "integer", "description": "(minimum: 0)"},
                               {"type": "null"}]}}}
    assert message.text == REPLY


def test_native_output_anthropic_open_object_ends_the_reply_before_sending(mock_server) -> None:
    schema = {"type": "object", "required": ["scores"], "properties": {
        "scores": {"type": "object", "additionalProperties": {"type": "integer"}}}}
    message = ac.complete(WIRES["anthropic-messages"].model(mock_server.url), CONTEXT,
                          options(output_schema=schema))
    assert message.stop_reason == "error"
    assert message.error_message.startswith(
        "'output_schema' has an object open to other properties at '/properties/scores'")
    assert mock_server.requests == []


def test_native_output_anthropic_merges_with_the_adaptive_effort(mock_server) -> None:
    model = ac.Model("claude-opus-4-6", "Claude Opus 4.6", "anthropic-messages", "anthropic",
                     mock_server.url, reasoning=True,
                     compat={"adaptive_thinking": True, "supports_native_output": True})
    body, _ = sent(mock_server, "anthropic-messages", model, reasoning="medium",
                   output_schema=PERSON)
    assert body["thinking"] == {"type": "adaptive"}
    assert body["output_config"] == {"effort": "medium", "format": {
        "type": "json_schema", "schema": CLOSED_PERSON}}


def test_native_output_anthropic_keeps_extended_thinking(mock_server) -> None:
    model = ac.get_model("anthropic", "claude-sonnet-4-5")
    local = ac.Model(model.id, model.name, model.api, model.provider, mock_server.url,
                     reasoning=True, max_tokens=model.max_tokens, compat=model.compat)
    body, message = sent(mock_server, "anthropic-messages", local, reasoning="low",
                         output_schema=PERSON)
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["output_config"] == {"format": {"type": "json_schema", "schema": CLOSED_PERSON}}
    assert "structured-outputs" not in (mock_server.requests[0].header("anthropic-beta") or "")
    assert message.text == REPLY


# --- Gemini before 3: no JSON response format next to function declarations (API §23) --------


def catalogue(provider: str, model_id: str, url: str) -> ac.Model:
    """The catalogue's model (its `compat` is the data under test), served at `url`."""
    return attrs.evolve(ac.get_model(provider, model_id), base_url=url)


def refusal(model: ac.Model) -> str:
    return (f"'output_mode' 'native' is not supported together with tools by model "
            f"{model.id!r} ({model.api}), which takes no JSON response format with function "
            "declarations (Gemini before Gemini 3): use output_mode='tool', or set "
            "compat={'native_output_with_tools': True} if it does")


GEMINI_2 = ["gemini-2.0-flash", "gemini-2.5-flash", "gemini-2.5-pro"]
GEMINI_3 = ["gemini-3-flash-preview", "gemini-3-pro-preview"]


@pytest.mark.parametrize("model_id", GEMINI_2)
def test_native_output_gemini_2_with_tools_ends_the_reply_before_sending(
        mock_server, model_id: str) -> None:
    model = catalogue("google", model_id, mock_server.url)
    message = ac.complete(model, WITH_TOOLS, options(output_schema=PERSON))
    assert (message.stop_reason, message.error_message) == ("error", refusal(model))
    assert mock_server.requests == []


@pytest.mark.parametrize("model_id", GEMINI_2)
def test_native_output_gemini_2_without_tools_is_sent(mock_server, model_id: str) -> None:
    body, message = sent(mock_server, "google-generative-ai",
                         catalogue("google", model_id, mock_server.url), output_schema=PERSON)
    assert native_part("google-generative-ai", body) == {
        "responseMimeType": "application/json", "responseJsonSchema": PERSON}
    assert "tools" not in body
    assert message.text == REPLY


@pytest.mark.parametrize("model_id", GEMINI_3)
def test_native_output_gemini_3_with_tools_is_sent(mock_server, model_id: str) -> None:
    body, message = sent(mock_server, "google-generative-ai",
                         catalogue("google", model_id, mock_server.url), WITH_TOOLS,
                         output_schema=PERSON)
    assert native_part("google-generative-ai", body) == {
        "responseMimeType": "application/json", "responseJsonSchema": PERSON}
    assert [d["name"] for d in body["tools"][0]["functionDeclarations"]] == [
        "get_weather", "get_time"]
    assert message.text == REPLY


@pytest.mark.parametrize(("model_id", "refused"), [
    *((m, True) for m in GEMINI_2), *((m, False) for m in GEMINI_3)])
def test_native_output_with_tools_on_vertex_follows_the_same_rows(model_id: str,
                                                                  refused: bool) -> None:
    model = catalogue("google-vertex", model_id, "http://127.0.0.1:1")
    build = WIRES["google-generative-ai"].build_body  # Vertex sends Gemini's body
    if refused:
        with pytest.raises(ValueError, match=re.escape(refusal(model))):
            build(model, WITH_TOOLS, options(output_schema=PERSON))
    else:
        body = build(model, WITH_TOOLS, options(output_schema=PERSON))
        assert body["generationConfig"]["responseJsonSchema"] == PERSON
    assert "generationConfig" in build(model, CONTEXT, options(output_schema=PERSON))


@pytest.mark.parametrize(("api", "compat", "refused"), [
    ("google-generative-ai", {"native_output_with_tools": True}, False),
    ("google-generative-ai", {}, True),  # a Gemini of one's own: Gemini's API default
    ("openai-completions", {"nativeOutputWithTools": False}, True),
    ("openai-completions", {}, False),
])
def test_native_output_with_tools_follows_compat_on_every_api(
        mock_server, api: str, compat: dict[str, Any], refused: bool) -> None:
    model = attrs.evolve(WIRES[api].model(mock_server.url), compat=compat or None)
    mock_server.sse(WIRES[api].reply(REPLY))
    message = ac.complete(model, WITH_TOOLS, options(output_schema=PERSON))
    if refused:
        assert (message.stop_reason, message.error_message) == ("error", refusal(model))
        assert mock_server.requests == []
    else:
        assert message.text == REPLY


@attrs.frozen
class Person:
    name: str
    born: int


def tool_time(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> ac.AgentToolResult:
    return ac.AgentToolResult([ac.TextContent("noon")])


TIME_TOOL = ac.AgentTool("get_time", "The time in a city.", WITH_TOOLS.tools[1].parameters,
                         tool_time)


def test_native_output_run_with_tools_on_gemini_2_raises_at_the_call(mock_server) -> None:
    model = catalogue("google", "gemini-2.5-flash", mock_server.url)
    with ac.Agent(model, tools=[TIME_TOOL], api_key="sk-test") as agent:
        with pytest.raises(ValueError, match=re.escape(refusal(model))):
            agent.prompt("Who?", output_type=Person, output_mode="native")
        assert agent.messages == []
    with ac.Agent(model, tools=[TIME_TOOL], api_key="sk-test") as agent:  # the tool mode works
        mock_server.sse(google_reply(calls=[("final_result", {"name": "Ada", "born": 1815})]))
        assert agent.prompt("Who?", output_type=Person).output == Person("Ada", 1815)
    assert "responseJsonSchema" not in mock_server.requests[0].json["generationConfig"]


@pytest.mark.parametrize(("model_id", "tools"), [("gemini-2.5-flash", []),
                                                 ("gemini-3-flash-preview", [TIME_TOOL])])
def test_native_output_run_on_gemini_where_it_is_taken(mock_server, model_id: str,
                                                       tools: list[ac.AgentTool]) -> None:
    mock_server.sse(google_reply(text=REPLY))
    model = catalogue("google", model_id, mock_server.url)
    with ac.Agent(model, tools=tools, api_key="sk-test") as agent:
        run = agent.prompt("Who?", output_type=Person, output_mode="native")
        assert run.output == Person("Ada Lovelace", 1815)
    [request] = mock_server.requests
    assert request.json["generationConfig"]["responseJsonSchema"]["required"] == ["name", "born"]
    assert len(request.json.get("tools", [{}])[0].get("functionDeclarations", [])) == len(tools)
