"""The provider registry: registration, dispatch on `model.api`, failures and misuse."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator

import pytest

import agentcore
from agentcore import (
    AbortController,
    AssistantMessage,
    AssistantMessageEventStream,
    Context,
    DoneEvent,
    ErrorEvent,
    MissingApiKeyError,
    Model,
    ProviderNotFoundError,
    StopReason,
    StreamOptions,
    TextContent,
    UserMessage,
    complete,
    register_provider,
    stream,
    unregister_provider,
)

WAIT_S = 10.0
_apis = itertools.count()
CONTEXT = Context("be brief", [UserMessage("hi", timestamp=1)])


def _model(api: str) -> Model:
    return Model("m-1", "Model One", api, "acme", "http://localhost:0")


def _reply(model: Model, text: str) -> AssistantMessage:
    return AssistantMessage([TextContent(text)], model.api, model.provider, model.id, timestamp=1)


def _done_stream(message: AssistantMessage) -> AssistantMessageEventStream:
    out = AssistantMessageEventStream()
    out.push(DoneEvent(StopReason.STOP, message))
    return out


@pytest.fixture
def api() -> Iterator[str]:
    """A fresh api name, unregistered after the test if still registered."""
    name = f"test-registry-{next(_apis)}"
    yield name
    with contextlib.suppress(ProviderNotFoundError):
        unregister_provider(name)


def test_registry_stream_dispatches_on_model_api(api):
    calls: list[tuple[Model, Context, StreamOptions]] = []
    model = _model(api)
    returned = _done_stream(_reply(model, "hello"))

    def provider(m: Model, c: Context, o: StreamOptions) -> AssistantMessageEventStream:
        calls.append((m, c, o))
        return returned

    register_provider(api, provider)
    options = StreamOptions(session_id="s1", signal=AbortController().signal)

    assert stream(model, CONTEXT, options) is returned
    assert calls == [(model, CONTEXT, options)]


def test_registry_stream_passes_default_options_when_none(api):
    seen: list[StreamOptions] = []
    model = _model(api)

    def provider(m: Model, c: Context, o: StreamOptions) -> AssistantMessageEventStream:
        seen.append(o)
        return _done_stream(_reply(m, "ok"))

    register_provider(api, provider)
    stream(model, CONTEXT)
    stream(model, CONTEXT, None)

    assert seen == [StreamOptions(), StreamOptions()]


def test_registry_stream_is_exported_from_the_package(api):
    model = _model(api)
    register_provider(api, lambda m, c, o: _done_stream(_reply(m, "pkg")))

    assert agentcore.stream is stream
    assert agentcore.complete(model, CONTEXT) == _reply(model, "pkg")


def test_registry_complete_returns_the_final_message(api):
    model = _model(api)
    register_provider(api, lambda m, c, o: _done_stream(_reply(m, "final answer")))

    assert complete(model, CONTEXT) == _reply(model, "final answer")


def test_registry_register_replaces_the_earlier_provider(api):
    model = _model(api)
    register_provider(api, lambda m, c, o: _done_stream(_reply(m, "old")))
    register_provider(api, lambda m, c, o: _done_stream(_reply(m, "new")))

    assert complete(model, CONTEXT).text == "new"


def test_registry_apis_are_independent(api):
    other = f"{api}-other"
    register_provider(api, lambda m, c, o: _done_stream(_reply(m, "first")))
    register_provider(other, lambda m, c, o: _done_stream(_reply(m, "second")))
    try:
        assert complete(_model(api), CONTEXT).text == "first"
        assert complete(_model(other), CONTEXT).text == "second"
    finally:
        unregister_provider(other)


def test_registry_unknown_api_raises_provider_not_found_naming_it():
    model = _model("no-such-api-registered")

    with pytest.raises(ProviderNotFoundError, match="no-such-api-registered"):
        stream(model, CONTEXT)
    with pytest.raises(ProviderNotFoundError, match="no-such-api-registered"):
        complete(model, CONTEXT)


def test_registry_provider_not_found_is_a_lookup_error():
    with pytest.raises(LookupError):
        stream(_model("still-no-such-api"), CONTEXT)


def test_registry_unregister_removes_the_provider(api):
    model = _model(api)
    register_provider(api, lambda m, c, o: _done_stream(_reply(m, "x")))
    unregister_provider(api)

    with pytest.raises(ProviderNotFoundError, match=api):
        stream(model, CONTEXT)


def test_registry_unregister_unknown_api_raises_naming_it():
    with pytest.raises(ProviderNotFoundError, match="never-registered-api"):
        unregister_provider("never-registered-api")


def test_registry_provider_raising_becomes_a_single_error_event(api):
    model = _model(api)

    def provider(m: Model, c: Context, o: StreamOptions) -> AssistantMessageEventStream:
        raise RuntimeError("connection refused")

    register_provider(api, provider)
    out = stream(model, CONTEXT)
    events = list(out)

    assert len(events) == 1
    expected = ErrorEvent(
        StopReason.ERROR,
        AssistantMessage([], api, "acme", "m-1", stop_reason=StopReason.ERROR,
                         error_message="connection refused", timestamp=events[0].error.timestamp),
    )
    assert events == [expected]
    assert out.result(timeout=WAIT_S) == expected.error


def test_registry_provider_raising_without_message_uses_the_exception_name(api):
    def provider(m: Model, c: Context, o: StreamOptions) -> AssistantMessageEventStream:
        raise KeyError()

    register_provider(api, provider)
    message = complete(_model(api), CONTEXT)

    assert message.stop_reason == StopReason.ERROR
    assert message.error_message == "KeyError"
    assert message.content == []


def test_registry_complete_returns_error_message_when_provider_raises(api):
    def provider(m: Model, c: Context, o: StreamOptions) -> AssistantMessageEventStream:
        raise ValueError("bad gateway")

    register_provider(api, provider)
    message = complete(_model(api), CONTEXT)

    assert message == AssistantMessage(
        [], api, "acme", "m-1", stop_reason="error", error_message="bad gateway",
        timestamp=message.timestamp,
    )


def test_registry_provider_raising_agentcore_error_propagates(api):
    def provider(m: Model, c: Context, o: StreamOptions) -> AssistantMessageEventStream:
        raise MissingApiKeyError("no API key for provider 'acme'")

    register_provider(api, provider)
    with pytest.raises(MissingApiKeyError, match="acme"):
        stream(_model(api), CONTEXT)


def test_registry_error_event_from_provider_is_not_raised(api):
    model = _model(api)
    failed = AssistantMessage([], api, "acme", "m-1", stop_reason="error",
                              error_message="HTTP 500", timestamp=1)

    def provider(m: Model, c: Context, o: StreamOptions) -> AssistantMessageEventStream:
        out = AssistantMessageEventStream()
        out.push(ErrorEvent(StopReason.ERROR, failed))
        return out

    register_provider(api, provider)
    assert complete(model, CONTEXT) == failed


@pytest.mark.parametrize(
    ("args", "name"),
    [
        (("", lambda m, c, o: None), "'api'"),
        ((42, lambda m, c, o: None), "'api'"),
        (("some-api", "not callable"), "'stream_fn'"),
        (("some-api", None), "'stream_fn'"),
    ],
)
def test_registry_register_bad_arguments_raise_type_error_naming_them(args, name):
    with pytest.raises(TypeError, match=name):
        register_provider(*args)
    with pytest.raises(ProviderNotFoundError):
        unregister_provider("some-api")


def test_registry_stream_bad_model_raises_type_error_naming_it():
    with pytest.raises(TypeError, match="'model'"):
        stream("gpt-4", CONTEXT)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="'model'"):
        complete(None, CONTEXT)  # type: ignore[arg-type]


def test_registry_stream_bad_context_raises_type_error_naming_it(api):
    register_provider(api, lambda m, c, o: _done_stream(_reply(m, "x")))
    with pytest.raises(TypeError, match="'context'"):
        stream(_model(api), [UserMessage("hi")])  # type: ignore[arg-type]


def test_registry_stream_bad_options_raise_type_error_naming_them(api):
    register_provider(api, lambda m, c, o: _done_stream(_reply(m, "x")))
    with pytest.raises(TypeError, match="'options'"):
        stream(_model(api), CONTEXT, {"session_id": "s"})  # type: ignore[arg-type]


def test_registry_faux_provider_is_served_by_agentcore_stream(faux):
    faux.set_responses([AssistantMessage([TextContent("via registry")], "x", "x", "x")])
    out = agentcore.stream(faux.get_model(), CONTEXT)

    assert [event.type for event in out][-1] == "done"
    assert out.result(timeout=WAIT_S).text == "via registry"


BUILT_IN_APIS = ["openai-completions", "openai-responses", "anthropic-messages",
                 "google-generative-ai", "google-vertex", "bedrock-converse-stream"]


def test_registry_get_apis_lists_the_built_in_apis_first():
    assert agentcore.providers.get_apis()[:len(BUILT_IN_APIS)] == BUILT_IN_APIS


def test_registry_get_apis_adds_registered_apis_sorted_once(api):
    # faux providers other tests left registered
    others = agentcore.providers.get_apis()[len(BUILT_IN_APIS):]
    register_provider(f"z-{api}", lambda m, c, o: _done_stream(_reply(m, "z")))
    register_provider(api, lambda m, c, o: _done_stream(_reply(m, "a")))
    register_provider("openai-responses", lambda m, c, o: _done_stream(_reply(m, "r")))
    try:
        apis = agentcore.providers.get_apis()
        assert apis == [*BUILT_IN_APIS, *sorted([*others, api, f"z-{api}"])]
        apis.clear()  # a fresh list each time
        assert len(agentcore.providers.get_apis()) == len(BUILT_IN_APIS) + 2 + len(others)
    finally:
        unregister_provider(f"z-{api}")
        unregister_provider("openai-responses")
    assert agentcore.providers.get_apis() == [*BUILT_IN_APIS, *sorted([*others, api])]
