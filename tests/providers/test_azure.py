"""Azure OpenAI (`azure-openai`) over both OpenAI wire APIs, over real HTTP to the local server.

The fixtures in `tests/fixtures/azure/` have the shapes Azure's documentation and recorded
replies show: a prompt-filter chunk with an empty id before a Chat Completions stream,
`content_filter_results` on its choices, `content_filters` on a Responses `response`, and the
content-filter errors (`innererror.content_filter_result` for Chat Completions,
`content_filters` for Responses). See `tests/fixtures/README.md`.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

import attrs
import paths
import pytest
from sse_server import SSEServer

import agentcore as ac
from agentcore.providers import env_var_for, openai_completions, openai_responses
from agentcore.providers._clouds._azure import azure_base_url, filter_text, is_entra_token

FIXTURES = paths.FIXTURES / "azure"
WAIT_S = 5.0
KEY = "8c1f3b0e9d4a47c2b6e5f7a1d3c9e2b4"  # the shape of an Azure key: 32 hex digits
TOKEN = ("eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.eyJhdWQiOiJodHRwczovL2NvZ25pdGl2ZXNlcnZpY2VzLmF6"
         "dXJlLmNvbSIsImV4cCI6MTc2NDY3OTIwMH0.c2lnbmF0dXJlLW9mLXRoZS10b2tlbg")  # a JWT
FILTERED = ("The response was filtered due to the prompt triggering Azure OpenAI's content "
            "management policy. Please modify your prompt and retry. To learn more about our "
            "content filtering policies please read our documentation: "
            "https://go.microsoft.com/fwlink/?linkid=2198766")
CONTEXT = ac.Context("You are terse.", [ac.UserMessage("Say hello")])
ENV_VARS = ("AZURE_OPENAI_API_KEY", "AZURE_OPENAI_ENDPOINT", "AZURE_OPENAI_RESOURCE_NAME")


@pytest.fixture(autouse=True)
def no_azure_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test sets the Azure variables it wants; none comes from the machine."""
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def deployment(server: SSEServer, api: str = "openai-completions", **fields: Any) -> ac.Model:
    """A deployment `my-gpt` served by the local server, at Azure's v1 path."""
    fields.setdefault("base_url", f"{server.url}/openai/v1")
    return ac.Model("my-gpt", "my deployment", api, "azure-openai", cost=ac.ModelCost(2, 8),
                    **fields)


def run(model: ac.Model, context: ac.Context = CONTEXT,
        **options: Any) -> tuple[list[ac.AssistantMessageEvent], ac.AssistantMessage]:
    stream = ac.stream(model, context, ac.StreamOptions(**options))
    events = list(stream)
    return events, stream.result(WAIT_S)


# --- where requests go, and with which credential ----------------------------------------------


def test_azure_chat_completions_sends_the_key_as_api_key(
        sse_server: SSEServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", KEY)
    sse_server.sse(fixture("chat_text.sse"))

    events, message = run(deployment(sse_server))

    request = sse_server.requests[-1]
    assert (request.method, request.path) == ("POST", "/openai/v1/chat/completions")
    assert request.header("api-key") == KEY
    assert request.header("Authorization") is None
    body = request.json
    assert body["model"] == "my-gpt"  # the deployment
    # Azure is OpenAI's service: the OpenAI rules, not a look-alike's
    assert (body["max_completion_tokens"], body["store"]) == (16_384, False)
    assert "max_tokens" not in body
    assert body["stream_options"] == {"include_usage": True}
    assert events[-1].type == "done"
    assert (message.text, message.stop_reason, message.response_id) == (
        "Hello from Azure.", ac.StopReason.STOP, "chatcmpl-CAz7Kq2Vn4Xw8Rb1Ty5Lm3Pd6Hs9F")
    assert (message.usage.input, message.usage.output) == (28, 4)
    assert message.provider == "azure-openai"


def test_azure_responses_reads_azure_replies(sse_server: SSEServer) -> None:
    sse_server.sse(fixture("responses_text.sse"))

    events, message = run(deployment(sse_server, "openai-responses"), api_key=KEY)

    request = sse_server.requests[-1]
    assert request.path == "/openai/v1/responses"
    assert request.header("api-key") == KEY
    assert request.json["model"] == "my-gpt"
    assert [e.type for e in events][-1] == "done"
    assert message.text == "Hello from Azure."
    assert (message.usage.input, message.usage.output) == (11, 11)


@pytest.mark.parametrize("api", ["openai-completions", "openai-responses"])
def test_azure_entra_token_is_sent_as_bearer(sse_server: SSEServer, api: str) -> None:
    sse_server.sse(fixture("chat_text.sse" if api == "openai-completions"
                           else "responses_text.sse"))

    events, _ = run(deployment(sse_server, api), api_key=TOKEN)

    request = sse_server.requests[-1]
    assert request.header("Authorization") == f"Bearer {TOKEN}"
    assert request.header("api-key") is None
    assert events[-1].type == "done"


def test_azure_get_api_key_hook_supplies_an_entra_token_each_call(sse_server: SSEServer) -> None:
    # How azure-identity is used: get_bearer_token_provider(...) is asked before every call.
    sse_server.sse(fixture("chat_text.sse"))
    sse_server.sse(fixture("chat_text.sse"))
    asked: list[str] = []

    def get_api_key(provider: str) -> str:
        asked.append(provider)
        return TOKEN

    with ac.Agent(deployment(sse_server), get_api_key=get_api_key) as agent:
        agent.prompt("Say hello").result(WAIT_S)
        agent.prompt("Again").result(WAIT_S)

    assert asked == ["azure-openai", "azure-openai"]
    assert [r.header("Authorization") for r in sse_server.requests] == [f"Bearer {TOKEN}"] * 2
    assert agent.state.messages[-1].text == "Hello from Azure."


@pytest.mark.parametrize(("credential", "token"), [
    (TOKEN, True),
    (KEY, False),
    ("A1b2" * 21, False),  # the newer 84-character keys
    ("eyJhbGciOiJub25lIn0", False),  # one segment: not a JWT
    ("eyJ.a b.c", False),
    (f"Bearer {TOKEN}", False),
])
def test_azure_tokens_are_told_from_keys_by_their_shape(credential: str, token: bool) -> None:
    assert is_entra_token(credential) is token


# --- the endpoint -----------------------------------------------------------------------------


@pytest.mark.parametrize(("endpoint", "base_url"), [
    ("https://contoso.openai.azure.com", "https://contoso.openai.azure.com/openai/v1"),
    ("https://contoso.openai.azure.com/", "https://contoso.openai.azure.com/openai/v1"),
    ("https://contoso.openai.azure.com/openai", "https://contoso.openai.azure.com/openai/v1"),
    ("https://contoso.openai.azure.com/openai/v1/", "https://contoso.openai.azure.com/openai/v1"),
    ("https://contoso.cognitiveservices.azure.com/",
     "https://contoso.cognitiveservices.azure.com/openai/v1"),
    ("https://contoso.services.ai.azure.com", "https://contoso.services.ai.azure.com/openai/v1"),
    # an older deployment URL pasted whole: the deployment comes from model.id now
    ("https://contoso.openai.azure.com/openai/deployments/gpt-4o/chat/completions"
     "?api-version=2024-10-21", "https://contoso.openai.azure.com/openai/v1"),
    ("  https://contoso.openai.azure.com\n", "https://contoso.openai.azure.com/openai/v1"),
])
def test_azure_endpoint_variable_becomes_the_v1_base_url(
        monkeypatch: pytest.MonkeyPatch, endpoint: str, base_url: str) -> None:
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", endpoint)
    monkeypatch.setenv("AZURE_OPENAI_RESOURCE_NAME", "ignored")  # the endpoint wins
    assert azure_base_url(ac.get_model("azure-openai", "gpt-5")) == base_url


def test_azure_resource_name_variable_names_the_host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AZURE_OPENAI_RESOURCE_NAME", "contoso-eu")
    assert azure_base_url(ac.get_model("azure-openai", "gpt-5")) == (
        "https://contoso-eu.openai.azure.com/openai/v1")


@pytest.mark.parametrize(("base_url", "expected"), [
    ("https://contoso.openai.azure.com", "https://contoso.openai.azure.com/openai/v1"),
    ("https://gateway.example.com/azure/openai/v1/", "https://gateway.example.com/azure/openai/v1"),
    ("http://127.0.0.1:8080/v1", "http://127.0.0.1:8080/v1"),
])
def test_azure_own_base_url_wins_over_the_environment(
        monkeypatch: pytest.MonkeyPatch, base_url: str, expected: str) -> None:
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", "https://elsewhere.openai.azure.com")
    model = attrs.evolve(ac.get_model("azure-openai", "gpt-5"), base_url=base_url)
    assert azure_base_url(model) == expected


def test_azure_endpoint_is_read_from_the_environment_at_request_time(
        sse_server: SSEServer, monkeypatch: pytest.MonkeyPatch) -> None:
    model = ac.get_model("azure-openai", "gpt-5-mini")  # base_url "": from the environment
    assert model.base_url == ""
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", KEY)
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", sse_server.url)
    sse_server.sse(fixture("responses_text.sse"))

    _, message = run(model)

    assert sse_server.requests[-1].path == "/openai/v1/responses"
    assert sse_server.requests[-1].json["model"] == "gpt-5-mini"
    assert message.text == "Hello from Azure."


def test_azure_agent_on_a_catalogue_row_finds_the_endpoint_when_it_runs(
        sse_server: SSEServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", KEY)
    monkeypatch.setenv("AZURE_OPENAI_RESOURCE_NAME", "contoso")  # the endpoint wins
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", f"{sse_server.url}/openai/v1/")
    sse_server.sse(fixture("chat_text.sse"))

    with ac.Agent(ac.get_model("azure-openai", "gpt-4.1")) as agent:  # the key checked up front
        text = agent.prompt("Say hello").text

    assert text == "Hello from Azure."
    assert sse_server.requests[-1].path == "/openai/v1/chat/completions"
    assert sse_server.requests[-1].header("api-key") == KEY


def test_azure_missing_endpoint_names_both_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", KEY)
    with pytest.raises(ac.MissingApiKeyError) as raised:
        ac.stream(ac.get_model("azure-openai", "gpt-4.1"), CONTEXT)
    message = str(raised.value)
    assert message == (
        "no endpoint for provider 'azure-openai' (model 'gpt-4.1'): set AZURE_OPENAI_ENDPOINT "
        "(https://<resource>.openai.azure.com) or AZURE_OPENAI_RESOURCE_NAME, or give the model "
        "a base_url")
    assert KEY not in message


def test_azure_missing_key_is_reported_like_any_provider_s() -> None:
    with pytest.raises(ac.MissingApiKeyError, match=re.escape(
            "no API key for provider 'azure-openai': set AZURE_OPENAI_API_KEY or pass api_key")):
        ac.stream(ac.get_model("azure-openai", "gpt-4.1"), CONTEXT)
    assert env_var_for("azure-openai") == "AZURE_OPENAI_API_KEY"


@pytest.mark.parametrize(("name", "value", "message"), [
    ("AZURE_OPENAI_ENDPOINT", "contoso.openai.azure.com",
     "AZURE_OPENAI_ENDPOINT must be an endpoint URL such as "
     "'https://<resource>.openai.azure.com', got 'contoso.openai.azure.com'"),
    ("AZURE_OPENAI_RESOURCE_NAME", "https://contoso.openai.azure.com",
     "AZURE_OPENAI_RESOURCE_NAME must be a resource name (the 'x' of "
     "https://x.openai.azure.com), got 'https://contoso.openai.azure.com'; set "
     "AZURE_OPENAI_ENDPOINT for a full URL"),
])
def test_azure_malformed_variable_is_named(monkeypatch: pytest.MonkeyPatch, name: str, value: str,
                                           message: str) -> None:
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", KEY)
    monkeypatch.setenv(name, value)
    model = ac.get_model("azure-openai", "gpt-5")
    with pytest.raises(ValueError, match=re.escape(message)):
        azure_base_url(model)
    # through `stream`, a failure like any other: an error event, nothing sent
    events, reply = run(model)
    assert [e.type for e in events] == ["error"]
    assert reply.error_message == message


# --- what the catalogue's rows send -------------------------------------------------------------


def test_azure_catalogue_rows_get_openai_rules_without_an_endpoint() -> None:
    options = ac.StreamOptions(session_id="s1")
    chat = openai_completions.build_body(ac.get_model("azure-openai", "gpt-4.1"), CONTEXT, options)
    assert (chat["model"], chat["store"], chat["max_completion_tokens"]) == ("gpt-4.1", False,
                                                                             32_000)
    assert chat["messages"][0] == {"role": "system", "content": "You are terse."}
    reasoning = openai_responses.build_body(ac.get_model("azure-openai", "o4-mini"), CONTEXT,
                                            options)
    assert reasoning["input"][0]["role"] == "developer"
    assert reasoning["prompt_cache_key"] == "s1"
    assert "prompt_cache_retention" not in reasoning  # api.openai.com only


def test_azure_tool_call_ids_follow_openai_limits() -> None:
    call = ac.ToolCall("call_" + "x" * 45, "get_weather", {"city": "Paris"})
    other = ac.AssistantMessage([call], "anthropic-messages", "anthropic", "claude-sonnet-4-5",
                                stop_reason="toolUse")
    result = ac.ToolResultMessage(call.id, "get_weather", [ac.TextContent("sunny")])
    context = ac.Context(None, [ac.UserMessage("Weather?"), other, result])
    body = openai_completions.build_body(ac.get_model("azure-openai", "gpt-4.1"), context,
                                         ac.StreamOptions())
    assert body["messages"][1]["tool_calls"][0]["id"] == call.id[:40]
    assert body["messages"][2]["tool_call_id"] == call.id[:40]

    pair = ac.ToolCall("call_A1|item.42", "get_weather", {"city": "Paris"})
    codex = ac.AssistantMessage([pair], "openai-responses", "openrouter", "openai/gpt-5",
                                stop_reason="toolUse")
    context = ac.Context(None, [ac.UserMessage("Weather?"), codex,
                                ac.ToolResultMessage(pair.id, "get_weather",
                                                     [ac.TextContent("sunny")])])
    body = openai_responses.build_body(ac.get_model("azure-openai", "gpt-5"), context,
                                       ac.StreamOptions())
    call_item = next(i for i in body["input"] if i.get("type") == "function_call")
    assert (call_item["call_id"], call_item["id"]) == ("call_A1", "fc_item_42")


# --- content filter -----------------------------------------------------------------------------


def test_azure_content_filter_http_error_names_the_categories(sse_server: SSEServer) -> None:
    sse_server.status(400, fixture("http_400_content_filter.json"))

    events, message = run(deployment(sse_server), api_key=KEY)

    assert [e.type for e in events] == ["error"]
    assert message.error_message == (
        f"400 content filtered by Azure (hate: high; jailbreak: detected): {FILTERED}")
    assert len(sse_server.requests) == 1  # a 400 is not retried


def test_azure_content_filter_http_error_of_responses(sse_server: SSEServer) -> None:
    sse_server.status(400, fixture("http_400_content_filter_responses.json"))

    _, message = run(deployment(sse_server, "openai-responses"), api_key=KEY)

    assert message.error_message is not None
    assert message.error_message.startswith(
        "400 content filtered by Azure (jailbreak: detected): The response was filtered")


def test_azure_content_filter_in_a_chat_stream_ends_the_reply(sse_server: SSEServer) -> None:
    sse_server.sse(fixture("chat_content_filter.sse"), chunking="bytewise")

    events, message = run(deployment(sse_server), api_key=KEY)

    assert events[-1].type == "error"
    assert message.stop_reason == ac.StopReason.ERROR
    assert message.error_message == "content filtered by Azure (protected_material_text: detected)"
    assert message.text == "Hey Jude,"  # what arrived before the filter stays
    assert message.response_id == "chatcmpl-8JCbt5d4luUIhYCI7YH4dQK7hnHx2"


def test_azure_content_filter_in_a_responses_stream_ends_the_reply(sse_server: SSEServer) -> None:
    sse_server.sse(fixture("responses_content_filter.sse"))

    events, message = run(deployment(sse_server, "openai-responses"), api_key=KEY)

    assert events[-1].type == "error"
    assert message.error_message == "content filtered by Azure (violence: medium)"
    assert message.text == "The duel ended when"
    assert (message.usage.input, message.usage.output) == (14, 5)


@pytest.mark.parametrize(("payload", "text"), [
    ({"content_filter_results": {"hate": {"filtered": False, "severity": "low"},
                                 "violence": {"filtered": True, "severity": "high"}}},
     "content filtered by Azure (violence: high)"),
    ({"innererror": {"content_filter_results": {  # the plural, as the OpenAPI spec names it
        "self_harm": {"filtered": True, "severity": "medium"}}}},
     "content filtered by Azure (self_harm: medium)"),
    ({"content_filter_results": {"custom_blocklists": {
        "filtered": True, "details": [{"id": "brands", "filtered": True},
                                      {"id": "names", "filtered": False}]}}},
     "content filtered by Azure (custom_blocklists: brands)"),
    ({"content_filter_results": {"jailbreak": {"filtered": False, "detected": True}}},
     "content filtered by Azure (jailbreak: detected)"),  # only detected: still named
    ({"content_filter_results": {"error": {"code": "content_filter_error",
                                           "message": "The contents are not filtered"}}}, None),
    ({"content_filter_results": {"hate": {"filtered": False, "severity": "safe"}}}, None),
    ("not a dict", None),
])
def test_azure_filter_text_reads_every_shape(payload: Any, text: str | None) -> None:
    assert filter_text(payload) == text


def test_azure_unknown_deployment_is_a_clear_error(sse_server: SSEServer) -> None:
    sse_server.status(404, fixture("http_404_deployment.json"))

    _, message = run(deployment(sse_server), api_key=KEY)

    assert message.error_message == (
        "404 The API deployment for this resource does not exist. If you created the deployment "
        "within the last 5 minutes, please wait a moment and try again.")


# --- secrets ------------------------------------------------------------------------------------


@pytest.mark.parametrize("credential", [KEY, TOKEN])
def test_azure_credentials_never_leave_the_header(
        sse_server: SSEServer, caplog: pytest.LogCaptureFixture, credential: str) -> None:
    caplog.set_level(logging.DEBUG)
    echo = json.dumps({"error": {"code": "401", "message": f"Access denied: {credential} is "
                                 "not valid for this resource."}})
    sse_server.status(401, echo)
    seen: list[str] = []

    with ac.Agent(deployment(sse_server), get_api_key=lambda provider: credential) as agent:
        agent.subscribe(lambda event, signal: seen.append(ac.to_json(event)))
        agent.prompt("Say hello").result(WAIT_S)

    error = agent.state.messages[-1].error_message
    assert error == "401 Access denied: *** is not valid for this resource."
    everything = "\n".join([*seen, ac.to_json(agent.state.messages), caplog.text, repr(agent)])
    assert credential not in everything
    assert credential.encode() not in sse_server.requests[-1].body
