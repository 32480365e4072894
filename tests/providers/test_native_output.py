"""`StreamOptions.output_schema`: each API's native structured output (API §18), over HTTP.

The schema goes out in the provider's own form (strict where OpenAI's strict mode allows it,
fitted to Anthropic's limits), a model without native output ends the reply as an error before
anything is sent, and the JSON the model writes comes back as the reply's text.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from sse_server import SSEServer
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


def sent(server: SSEServer, api: str, model: ac.Model | None = None,
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


def native_part(api: str, body: dict[str, Any]) -> dict[str, Any]:
    if api == "google-generative-ai":
        return {k: v for k, v in body["generationConfig"].items() if k in FIELD[api][1:]}
    return {k: v for k, v in body.items() if k == FIELD[api][0]}


@pytest.mark.parametrize("api", WIRES)
def test_native_output_sends_the_schema_in_each_apis_form(sse_server, api: str) -> None:
    body, message = sent(sse_server, api, output_schema=PERSON)
    assert native_part(api, body) == expected_form(api, PERSON, CLOSED_PERSON, True)
    assert message.stop_reason == "stop"
    assert message.text == REPLY
    assert json.loads(message.text) == {"name": "Ada Lovelace", "born": 1815}


@pytest.mark.parametrize("api", ["openai-completions", "openai-responses"])
def test_native_output_not_strict_when_the_schema_cannot_be(sse_server, api: str) -> None:
    body, _ = sent(sse_server, api, output_schema=LOOSE)
    assert native_part(api, body) == expected_form(api, LOOSE, LOOSE, False)


@pytest.mark.parametrize("api", WIRES)
def test_native_output_changes_nothing_else_in_the_body(api: str) -> None:
    wire = WIRES[api]
    model = wire.model("http://127.0.0.1:1")
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
def test_native_output_without_a_schema_sends_no_format(sse_server, api: str) -> None:
    body, _ = sent(sse_server, api)
    assert native_part(api, body) == {}


@pytest.mark.parametrize("api", WIRES)
def test_native_output_goes_with_a_tool_choice(sse_server, api: str) -> None:
    body, _ = sent(sse_server, api, context=WITH_TOOLS, output_schema=PERSON, tool_choice="auto")
    assert native_part(api, body) == expected_form(api, PERSON, CLOSED_PERSON, True)
    assert ("toolConfig" if api == "google-generative-ai" else "tool_choice") in body


def test_native_output_without_strict_mode_sends_no_strict(sse_server) -> None:
    model = ac.Model("qwen3", "Qwen 3", "openai-completions", "vllm", sse_server.url,
                     compat={"supports_strict_mode": False})
    body, _ = sent(sse_server, "openai-completions", model, output_schema=PERSON)
    assert body["response_format"] == {"type": "json_schema", "json_schema": {
        "name": "final_result", "schema": CLOSED_PERSON}}


@pytest.mark.parametrize("api", WIRES)
def test_native_output_refused_where_compat_says_no(sse_server, api: str) -> None:
    model = WIRES[api].model(sse_server.url)
    model = ac.Model(model.id, model.name, model.api, model.provider, model.base_url,
                     compat={"supports_native_output": False})
    message = ac.complete(model, CONTEXT, options(output_schema=PERSON))
    assert message.stop_reason == "error"
    assert message.error_message == (
        f"'output_mode' 'native' is not supported by model {model.id!r} ({api}): use "
        "output_mode='tool', or set compat={'supports_native_output': True} if it is")
    assert sse_server.requests == []


def test_native_output_refused_on_a_claude_without_it(sse_server) -> None:
    model = ac.get_model("anthropic", "claude-sonnet-4-0")
    local = ac.Model(model.id, model.name, model.api, model.provider, sse_server.url,
                     compat=model.compat)
    events = list(ac.stream(local, CONTEXT, options(output_schema=PERSON)))
    assert [e.type for e in events] == ["error"]
    assert "'output_mode' 'native' is not supported by model 'claude-sonnet-4-0'" in (
        events[0].error.error_message)
    assert sse_server.requests == []


# --- Anthropic's schema limits and its output_config --------------------------------------------


def test_native_output_anthropic_schema_fitted_to_its_limits(sse_server) -> None:
    schema = {"type": "object", "required": ["name"], "properties": {
        "name": {"type": "string", "maxLength": 80},
        "born": {"oneOf": [{"type": "integer", "minimum": 0}, {"type": "null"}]}}}
    body, message = sent(sse_server, "anthropic-messages", output_schema=schema)
    assert body["output_config"]["format"]["schema"] == {
        "type": "object", "required": ["name"], "additionalProperties": False, "properties": {
            "name": {"type": "string", "description": "(maxLength: 80)"},
            "born": {"anyOf": [{"type": "integer", "description": "(minimum: 0)"},
                               {"type": "null"}]}}}
    assert message.text == REPLY


def test_native_output_anthropic_open_object_ends_the_reply_before_sending(sse_server) -> None:
    schema = {"type": "object", "required": ["scores"], "properties": {
        "scores": {"type": "object", "additionalProperties": {"type": "integer"}}}}
    message = ac.complete(WIRES["anthropic-messages"].model(sse_server.url), CONTEXT,
                          options(output_schema=schema))
    assert message.stop_reason == "error"
    assert message.error_message.startswith(
        "'output_schema' has an object open to other properties at '/properties/scores'")
    assert sse_server.requests == []


def test_native_output_anthropic_merges_with_the_adaptive_effort(sse_server) -> None:
    model = ac.Model("claude-opus-4-6", "Claude Opus 4.6", "anthropic-messages", "anthropic",
                     sse_server.url, reasoning=True,
                     compat={"adaptive_thinking": True, "supports_native_output": True})
    body, _ = sent(sse_server, "anthropic-messages", model, reasoning="medium",
                   output_schema=PERSON)
    assert body["thinking"] == {"type": "adaptive"}
    assert body["output_config"] == {"effort": "medium", "format": {
        "type": "json_schema", "schema": CLOSED_PERSON}}


def test_native_output_anthropic_keeps_extended_thinking(sse_server) -> None:
    model = ac.get_model("anthropic", "claude-sonnet-4-5")
    local = ac.Model(model.id, model.name, model.api, model.provider, sse_server.url,
                     reasoning=True, max_tokens=model.max_tokens, compat=model.compat)
    body, message = sent(sse_server, "anthropic-messages", local, reasoning="low",
                         output_schema=PERSON)
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["output_config"] == {"format": {"type": "json_schema", "schema": CLOSED_PERSON}}
    assert "structured-outputs" not in (sse_server.requests[0].header("anthropic-beta") or "")
    assert message.text == REPLY
