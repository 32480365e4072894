"""API keys never leak: not in reprs, events, messages, error messages or log records.

Runs go to the scripted server, whose error bodies echo the key back the way real providers do
("Incorrect API key provided: sk-..."), so redaction is what keeps it out: on `mock_server` (no
socket), and for a whole successful run with tools over real HTTP (`sse_server`), the HTTP
libraries' own DEBUG logs included.
"""

from __future__ import annotations

import base64
import json
import logging
import re
from collections.abc import Callable
from typing import Any

import attrs
import paths
import pytest
from mock_server import MockServer, ScriptedServer
from sse_server import SSEServer

import agentcore as ac

FIXTURES = paths.FIXTURES
WAIT_S = 5.0
KEY = "sk-live-SECRET0123456789abcdef"
PLAIN_KEY = "live-SECRET0123456789abcdef"  # shaped like no known key: only exact redaction helps
SECRET = "SECRET0123456789abcdef"  # the part of both keys that must never show


def leaks(text: str, key: str) -> bool:
    return key in text or SECRET in text


def model_at(server: ScriptedServer, **fields: Any) -> ac.Model:
    return ac.Model("gpt-4o-mini", "GPT-4o mini", "openai-completions", "openai",
                    f"{server.url}/v1", cost=ac.ModelCost(0.15, 0.6), **fields)


def chunk(delta: dict[str, Any] | None, finish: str | None = None,
          usage: dict[str, int] | None = None, **extra: Any) -> bytes:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    data = {"id": "chatcmpl-s", "object": "chat.completion.chunk", "created": 1,
            "model": "gpt-4o-mini", "choices": choices, "usage": usage, **extra}
    return b"data: " + json.dumps(data).encode() + b"\n\n"


def text_reply(text: str) -> bytes:
    return (chunk({"role": "assistant", "content": text}) + chunk({}, "stop")
            + chunk(None, usage={"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12})
            + b"data: [DONE]\n\n")


def echo_401(key: str) -> str:
    return json.dumps({"error": {
        "message": f"Incorrect API key provided: {key}. You can find your API key at "
                   "https://platform.openai.com/account/api-keys.",
        "type": "invalid_request_error", "param": None, "code": "invalid_api_key"}})


@attrs.define
class Recorded:
    """Everything a run exposed that could carry a key, as text."""

    events: list[str] = attrs.Factory(list)
    texts: list[str] = attrs.Factory(list)

    def all_text(self) -> str:
        return "\n".join(self.events + self.texts)


def run_agent(agent: ac.Agent, caplog: pytest.LogCaptureFixture) -> tuple[Recorded, list[Any]]:
    recorded = Recorded()
    agent.subscribe(lambda event, signal: recorded.events.append(
        f"{ac.to_json(event)}\n{event!r}"))
    run = agent.prompt("What's the weather?")
    messages = run.result(WAIT_S)
    assert agent.wait_for_idle(WAIT_S)
    recorded.texts += [ac.to_json(m) for m in agent.state.messages]
    recorded.texts += [repr(agent), repr(run), repr(agent.state), str(agent.state)]
    recorded.texts.append(caplog.text)
    for record in caplog.records:
        recorded.texts.append(record.getMessage())
        recorded.texts.append(repr(record.args))
    return recorded, messages


KeySource = Callable[[pytest.MonkeyPatch, str], dict[str, Any]]


def _by_option(monkeypatch: pytest.MonkeyPatch, key: str) -> dict[str, Any]:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    return {"api_key": key}


def _by_env(monkeypatch: pytest.MonkeyPatch, key: str) -> dict[str, Any]:
    monkeypatch.setenv("OPENAI_API_KEY", key)
    return {}


def _by_hook(monkeypatch: pytest.MonkeyPatch, key: str) -> dict[str, Any]:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    return {"get_api_key": lambda provider: key}


SOURCES = {"option": _by_option, "env": _by_env, "hook": _by_hook}


@pytest.fixture(params=[(source, key) for source in SOURCES for key in (KEY, PLAIN_KEY)],
                ids=lambda p: f"{p[0]}-{'sk' if p[1] == KEY else 'plain'}")
def keyed(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch,
          caplog: pytest.LogCaptureFixture) -> tuple[str, dict[str, Any]]:
    """(key, Agent keyword arguments that supply it), with DEBUG logs captured everywhere."""
    source, key = request.param
    caplog.set_level(logging.DEBUG)
    return key, SOURCES[source](monkeypatch, key)


def assert_sent_only_in_the_header(server: ScriptedServer, key: str) -> None:
    assert server.requests, "no request reached the server"
    for request in server.requests:
        assert request.header("Authorization") == f"Bearer {key}"
        assert key.encode() not in request.body


# --- reprs --------------------------------------------------------------------------------------


def test_secrets_reprs_hide_the_key_and_auth_headers() -> None:
    headers = {"Authorization": f"Bearer {KEY}", "x-api-key": KEY}
    model = ac.Model("m", "M", "openai-completions", "openai", "https://api.openai.com/v1",
                     headers=headers)
    options = ac.StreamOptions(api_key=KEY, headers=headers)
    config = ac.AgentLoopConfig(model=model, api_key=KEY, headers=headers)
    agent = ac.Agent(model=model, api_key=KEY, headers=headers,
                     get_api_key=lambda provider: KEY)
    for value in (model, options, config, agent, agent.state):
        assert not leaks(repr(value), KEY), type(value).__name__
        assert not leaks(str(value), KEY), type(value).__name__
    assert "'Authorization': '***'" in repr(options)  # the header names stay visible


@pytest.mark.parametrize("bad", [KEY.encode(), bytearray(KEY.encode()), [KEY]])
def test_secrets_a_key_of_the_wrong_type_is_not_echoed(bad: Any) -> None:
    model = ac.Model("m", "M", "openai-completions", "openai", "https://api.openai.com/v1")
    attempts: list[Callable[[], object]] = [
        lambda: ac.StreamOptions(api_key=bad),
        lambda: ac.AgentLoopConfig(model=model, api_key=bad),
        lambda: ac.Agent(model=model, api_key=bad),
        lambda: ac.StreamOptions(headers={"Authorization": bad}),
        lambda: ac.AgentLoopConfig(model=model, headers={"Authorization": bad}),
        lambda: ac.Agent(model=model, headers={"Authorization": bad}),
        lambda: ac.Model("m", "M", "a", "p", "u", headers={"Authorization": bad}),
    ]
    for attempt in attempts:
        with pytest.raises(TypeError) as raised:
            attempt()
        text = f"{raised.value}\n{raised.value!r}"
        assert not leaks(text, KEY), text
        assert type(bad).__name__ in str(raised.value)


def test_secrets_setting_a_bad_key_on_an_agent_is_not_echoed() -> None:
    agent = ac.Agent(model=ac.Model("m", "M", "a", "p", "u"))
    with pytest.raises(TypeError) as raised:
        agent.api_key = KEY.encode()  # type: ignore[assignment]
    assert not leaks(str(raised.value), KEY)
    with pytest.raises(TypeError) as raised:
        agent.headers = {"Authorization": KEY.encode()}  # type: ignore[dict-item]
    assert not leaks(str(raised.value), KEY)


# --- runs ---------------------------------------------------------------------------------------


def test_secrets_a_successful_run_with_tools_shows_no_key(
    sse_server: SSEServer, keyed: tuple[str, dict[str, Any]], caplog: pytest.LogCaptureFixture
) -> None:
    key, kwargs = keyed
    sse_server.sse(FIXTURES.joinpath("openai_completions/tool_calls.sse").read_bytes())
    sse_server.sse(text_reply("Sunny in both."))
    weather = ac.AgentTool("get_weather", "Weather for a city.", {
        "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        lambda call_id, args, signal, on_update: ac.AgentToolResult(
            [ac.TextContent(f"{args['city']}: sunny")]))
    agent = ac.Agent(model=model_at(sse_server), tools=[weather], **kwargs)

    recorded, messages = run_agent(agent, caplog)

    assert messages[-1].text == "Sunny in both."
    assert agent.state.error_message is None
    assert_sent_only_in_the_header(sse_server, key)
    assert len(recorded.events) > 10
    assert any(r.levelno == logging.DEBUG for r in caplog.records)  # DEBUG really captured
    assert not leaks(recorded.all_text(), key)


def _stream_error(key: str) -> bytes:
    return chunk({"role": "assistant", "content": "Once upon"}) + chunk(
        None, error={"message": f"key {key} was revoked mid-stream", "type": "server_error"})


FAILURES: dict[str, Callable[[MockServer, str], None]] = {
    "401 echoing the key": lambda server, key: server.status(401, echo_401(key)),
    "html 403 echoing the key": lambda server, key: server.status(
        403, f"<html><body>Forbidden for token {key}</body></html>",
        headers={"Content-Type": "text/html"}),
    "429 retry-after too long": lambda server, key: server.status(
        429, echo_401(key), headers={"retry-after": "3600"}),
    "error event in the stream": lambda server, key: server.sse(_stream_error(key)),
    "stream without a finish": lambda server, key: server.sse(
        chunk({"role": "assistant", "content": f"I saw {key}"}) + b"data: [DONE]\n\n"),
}


@pytest.mark.parametrize("failure", list(FAILURES))
def test_secrets_a_failing_run_shows_no_key(
    failure: str, mock_server: MockServer, keyed: tuple[str, dict[str, Any]],
    caplog: pytest.LogCaptureFixture,
) -> None:
    key, kwargs = keyed
    FAILURES[failure](mock_server, key)
    agent = ac.Agent(model=model_at(mock_server), max_retry_delay_ms=1000, **kwargs)

    recorded, messages = run_agent(agent, caplog)

    last = messages[-1]
    assert last.stop_reason == ac.StopReason.ERROR
    assert last.error_message
    assert agent.state.error_message == last.error_message
    assert_sent_only_in_the_header(mock_server, key)
    if failure != "stream without a finish":  # there the key is in the model's own text
        assert not leaks(recorded.all_text(), key), recorded.all_text()
    else:
        assert not leaks(last.error_message + caplog.text, key)
        # the debug traceback was logged, as redacted text rather than as exc_info
        assert any("Traceback" in r.getMessage() and not r.exc_info for r in caplog.records)


def test_secrets_redacted_error_messages_stay_useful(
    mock_server: MockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", PLAIN_KEY)
    mock_server.status(401, echo_401(PLAIN_KEY))
    reply = ac.complete(model_at(mock_server), ac.Context(None, [ac.UserMessage("hi")]))
    assert reply.error_message == (
        "401 Incorrect API key provided: ***. You can find your API key at "
        "https://platform.openai.com/account/api-keys.")


def test_secrets_a_key_from_a_hook_of_the_wrong_type_is_not_echoed(
    mock_server: MockServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    agent = ac.Agent(model=model_at(mock_server), get_api_key=lambda provider: KEY.encode())
    recorded, messages = run_agent(agent, caplog)
    assert messages[-1].stop_reason == ac.StopReason.ERROR
    assert "'api_key' must be a str" in (messages[-1].error_message or "")
    assert not leaks(recorded.all_text(), KEY), recorded.all_text()
    assert mock_server.requests == []


def test_secrets_a_key_in_model_headers_is_redacted_when_echoed(
    mock_server: MockServer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    mock_server.status(401, echo_401(PLAIN_KEY))
    model = model_at(mock_server, headers={"Authorization": f"Bearer {PLAIN_KEY}"})
    recorded, messages = run_agent(ac.Agent(model=model), caplog)
    assert mock_server.requests[0].header("Authorization") == f"Bearer {PLAIN_KEY}"
    assert messages[-1].error_message.startswith("401 Incorrect API key provided: ***.")
    assert not leaks(recorded.all_text(), PLAIN_KEY), recorded.all_text()


def test_secrets_the_transcript_serializes_without_the_key(
    mock_server: MockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    mock_server.sse(text_reply("Hi."))
    mock_server.status(401, echo_401(KEY))
    agent = ac.Agent(model=model_at(mock_server))
    agent.prompt("one").result(WAIT_S)
    agent.prompt("two").result(WAIT_S)
    assert [getattr(m, "stop_reason", None) for m in agent.state.messages] == [
        None, "stop", None, "error"]
    for message in agent.state.messages:
        text = ac.to_json(message)
        assert not leaks(text, KEY)
        assert not leaks(json.dumps(ac.to_dict(message)), KEY)


def test_secrets_the_local_placeholder_key_is_not_redacted(
    mock_server: MockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OLLAMA_API_KEY", raising=False)
    mock_server.status(404, json.dumps({"error": {
        "message": 'model "nonexistent" not found, try pulling it first'}}))
    model = ac.Model("nonexistent", "x", "openai-completions", "ollama", f"{mock_server.url}/v1")
    reply = ac.complete(model, ac.Context(None, [ac.UserMessage("hi")]))
    assert mock_server.requests[0].header("Authorization") == "Bearer none"
    assert reply.error_message == '404 model "nonexistent" not found, try pulling it first'


# --- keys of any shape, in any encoding ---------------------------------------------------------

ODD_KEY = "az-7f/Q+x=\"quoted\"\\back%slash'é-0123456789"  # escapes differently everywhere
WIRE_APIS = {  # case: (api, provider, base-URL suffix)
    "openai-completions": ("openai-completions", "openai", "/v1"),
    "openai-responses": ("openai-responses", "openai", "/v1"),
    "anthropic-messages": ("anthropic-messages", "anthropic", ""),
    "google-generative-ai": ("google-generative-ai", "google", "/v1beta"),
    "google-vertex": ("google-vertex", "google-vertex", "/v1"),  # express: key in x-goog-api-key
    "bedrock-converse-stream": ("bedrock-converse-stream", "amazon-bedrock", ""),  # API key
    "azure-openai-completions": ("openai-completions", "azure-openai", "/openai/v1"),  # api-key
    "azure-openai-responses": ("openai-responses", "azure-openai", "/openai/v1"),
    "mistral": ("openai-completions", "mistral", "/v1"),
}


def encodings(key: str) -> dict[str, str]:
    """How a key can show up in text, Basic credentials at each base64 alignment included."""
    from urllib.parse import quote, quote_plus

    percent = quote(key, safe="")
    forms = {"raw": key, "repr": repr(key)[1:-1], "ascii": ascii(key)[1:-1],
             "json": json.dumps(key)[1:-1],
             "json-utf8": json.dumps(key, ensure_ascii=False)[1:-1], "percent": percent,
             "percent-lower": re.sub(r"%[0-9A-F]{2}", lambda m: m.group().lower(), percent),
             "form": quote_plus(key), "stripped": key.strip()}
    for user in ("", "u", "us", "user"):
        forms[f"basic({user!r}:key)"] = base64.b64encode(f"{user}:{key}".encode()).decode()
    return forms


def shows(text: str, key: str) -> list[str]:
    """The encodings of `key` (or of its middle part, for base64) found in `text`."""
    found = [name for name, form in encodings(key).items()
             if not name.startswith("basic") and form in text]
    middle = key.strip().encode()[3:-3]  # what base64 cannot hide at any alignment
    for shift in range(3):
        piece = base64.b64encode(middle[shift: shift + (len(middle) - shift) // 3 * 3]).decode()
        if len(piece) >= 8 and piece[:-4] in text:
            found.append(f"base64 at {shift}")
    return found


@pytest.mark.parametrize("key", [ODD_KEY, PLAIN_KEY, "short-key-1", "k" * 64])
def test_secrets_redact_covers_every_encoding(key: str) -> None:
    from _internals import redact

    for name, form in encodings(key).items():
        text = f"before [{form}] after"
        redacted = redact(text, (key,))
        assert shows(redacted, key) == [], (name, redacted)
        assert redacted.startswith("before ["), name
        assert redacted.endswith("] after"), name


def test_secrets_redact_leaves_other_text_alone() -> None:
    from _internals import redact

    text = "401 Unauthorized: the key you sent (ending in 6789) is not valid for this project"
    assert redact(text, (PLAIN_KEY,)) == text


BAD_KEYS = {
    "trailing newline": (PLAIN_KEY + "\n", "line break"),
    "crlf inside": (PLAIN_KEY[:8] + "\r\n" + PLAIN_KEY[8:], "line break"),
    "nul": (PLAIN_KEY + "\x00", "control character"),
    "escape": ("\x1b" + PLAIN_KEY, "control character"),
    "leading space": (" " + PLAIN_KEY, "starts with whitespace"),
    "not latin-1": (PLAIN_KEY + "\u2019", "not Latin-1"),
}


@pytest.mark.parametrize("case", list(WIRE_APIS))
@pytest.mark.parametrize("bad", list(BAD_KEYS))
def test_secrets_a_key_that_is_no_header_value_is_named_not_shown(
    mock_server: MockServer, caplog: pytest.LogCaptureFixture, case: str, bad: str
) -> None:
    caplog.set_level(logging.DEBUG)
    key, problem = BAD_KEYS[bad]
    api, provider, suffix = WIRE_APIS[case]
    model = ac.Model("m-1", "M", api, provider, mock_server.url + suffix)
    stream = ac.stream(model, ac.Context(None, [ac.UserMessage("hi")]),
                       ac.StreamOptions(api_key=key))
    events = list(stream)
    reply = stream.result()

    assert reply.stop_reason == ac.StopReason.ERROR
    assert reply.error_message is not None
    assert reply.error_message.startswith(f"{provider} ({api}): the API key is not a valid HTTP "
                                          "header value: it ")
    assert problem in reply.error_message
    assert mock_server.requests == []
    texts = [ac.to_json(e) for e in events] + [repr(e) for e in events]
    texts += [ac.to_json(reply), repr(reply), str(reply), caplog.text]
    texts += [r.getMessage() for r in caplog.records] + [repr(r.args) for r in caplog.records]
    assert shows("\n".join(texts), key) == []


def test_secrets_a_bad_header_value_names_the_header_not_the_value(
    mock_server: MockServer,
) -> None:
    model = ac.Model("m-1", "M", "openai-completions", "openai", f"{mock_server.url}/v1")
    reply = ac.complete(model, ac.Context(None, [ac.UserMessage("hi")]), ac.StreamOptions(
        api_key=PLAIN_KEY, headers={"X-Team": "alpha\nbeta-0123456789"}))
    assert reply.error_message == (
        "openai (openai-completions): the value of header 'X-Team' is not a valid HTTP header "
        "value: it contains a line break (often a trailing newline copied with the key)")
    assert mock_server.requests == []


@pytest.mark.parametrize("case", list(WIRE_APIS))
def test_secrets_an_echo_in_any_encoding_is_redacted(
    mock_server: MockServer, caplog: pytest.LogCaptureFixture, case: str
) -> None:
    caplog.set_level(logging.DEBUG)
    key = ODD_KEY.replace("é", "e")  # sent in a header: Latin-1 only
    api, provider, suffix = WIRE_APIS[case]
    echo = " | ".join(f"{name}={form}" for name, form in encodings(key).items())
    mock_server.status(401, json.dumps({"error": {"message": f"bad key: {echo}"}}))
    model = ac.Model("m-1", "M", api, provider, mock_server.url + suffix)
    stream = ac.stream(model, ac.Context(None, [ac.UserMessage("hi")]),
                       ac.StreamOptions(api_key=key))
    events = list(stream)
    reply = stream.result()
    assert reply.stop_reason == ac.StopReason.ERROR
    assert "bad key: raw=***" in (reply.error_message or "")
    texts = [ac.to_json(e) for e in events] + [repr(e) for e in events]
    texts += [ac.to_json(reply), caplog.text]
    assert shows("\n".join(texts), key) == []


def test_secrets_basic_credentials_in_headers_are_redacted_decoded_too(
    mock_server: MockServer,
) -> None:
    password = "vllm-token-0123456789"
    basic = base64.b64encode(f"admin:{password}".encode()).decode()
    mock_server.status(403, f"user admin with password {password} may not use this model")
    model = ac.Model("m-1", "M", "openai-completions", "openai", f"{mock_server.url}/v1")
    reply = ac.complete(model, ac.Context(None, [ac.UserMessage("hi")]), ac.StreamOptions(
        api_key="none", headers={"Authorization": f"Basic {basic}"}))
    assert reply.error_message == "403 user admin with password *** may not use this model"
    assert mock_server.requests[0].header("Authorization") == f"Basic {basic}"
