"""The faux provider: scripted replies streamed through the full assistant-message protocol."""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Iterator

import attrs
import pytest

import agentcore
from agentcore import (
    AbortController,
    AssistantMessage,
    AssistantMessageEvent,
    Context,
    DoneEvent,
    ErrorEvent,
    ImageContent,
    Model,
    ModelCost,
    ModelNotFoundError,
    ProviderNotFoundError,
    StartEvent,
    StopReason,
    StreamOptions,
    TextContent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ThinkingContent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    Tool,
    ToolCall,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
    ToolResultMessage,
    Usage,
    UserMessage,
    calculate_cost,
    complete,
    stream,
)
from agentcore.providers.faux import (
    FauxProvider,
    faux_assistant_message,
    faux_text,
    faux_thinking,
    faux_tool_call,
    register_faux_provider,
)

WAIT_S = 10.0
ABORTED_TEXT = "Request was aborted"
ALPHABET = "abcdefghijklmnopqrstuvwxyz"


def _context(text: str = "hi", system_prompt: str | None = None) -> Context:
    return Context(system_prompt, [UserMessage(text, timestamp=1)])


def _tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


def _usage(input: int, output: int, cache_read: int = 0, cache_write: int = 0) -> Usage:
    return Usage(input, output, cache_read, cache_write, input + output + cache_read + cache_write)


def _reply(content, stop_reason: StopReason | str = StopReason.STOP,
           error_message: str | None = None) -> AssistantMessage:
    """A scripted reply with a fixed timestamp, so served messages compare by value."""
    return attrs.evolve(faux_assistant_message(content, stop_reason, error_message), timestamp=5)


def _served(faux: FauxProvider, reply: AssistantMessage, usage: Usage,
            model: Model | None = None) -> AssistantMessage:
    """What the faux provider should return for `reply`."""
    model = model or faux.get_model()
    return attrs.evolve(reply, api=faux.api, provider=faux.provider, model=model.id, usage=usage)


@pytest.fixture
def make_faux() -> Iterator:
    """Register faux providers with custom settings; all are unregistered after the test."""
    made: list[FauxProvider] = []

    def make(**kwargs) -> FauxProvider:
        provider = register_faux_provider(**kwargs)
        made.append(provider)
        return provider

    yield make
    for provider in made:
        provider.unregister()


def test_faux_default_registration_has_one_model():
    faux = register_faux_provider()
    try:
        assert faux.api.startswith("faux:")
        assert faux.provider == "faux"
        assert faux.models == [
            Model("faux-1", "Faux Model", faux.api, "faux", "http://localhost:0",
                  input=["text", "image"])
        ]
        assert faux.get_model() is faux.models[0]
        assert faux.call_count == 0
        assert faux.pending_response_count() == 0
    finally:
        faux.unregister()


def test_faux_each_registration_gets_a_fresh_api(make_faux):
    assert make_faux().api != make_faux().api


def test_faux_complete_estimates_usage_without_session(faux):
    reply = _reply("hello world")
    faux.set_responses([reply])
    context = _context("hi there", system_prompt="Be concise.")

    message = complete(faux.get_model(), context)

    prompt = "system:Be concise.\n\nuser:hi there"
    assert message == _served(faux, reply, _usage(_tokens(prompt), _tokens("hello world")))
    assert message.usage.input > 0
    assert message.usage.output > 0
    assert message.usage.total_tokens == message.usage.input + message.usage.output
    assert faux.call_count == 1


def test_faux_usage_estimate_formula_is_exact(faux):
    reply = _reply("done")
    faux.set_responses([reply])
    parameters = {"type": "object", "properties": {"text": {"type": "string"}},
                  "required": ["text"]}
    tool = Tool("echo", "Echo back text", parameters)
    context = Context(
        "sys",
        [
            UserMessage([TextContent("hello"), ImageContent("abcd", "image/png")], timestamp=1),
            faux_assistant_message("prior"),
            ToolResultMessage("tool-1", "echo", [TextContent("tool out")], timestamp=2),
        ],
        tools=[tool],
    )

    message = complete(faux.get_model(), context)

    tools_json = json.dumps(
        [{"name": "echo", "description": "Echo back text", "parameters": parameters}]
    )
    prompt = "\n\n".join([
        "system:sys",
        "user:hello\n[image:image/png:4]",
        "assistant:prior",
        "toolResult:echo\ntool out",
        f"tools:{tools_json}",
    ])
    assert message.usage == _usage(_tokens(prompt), _tokens("done"))


def test_faux_usage_estimate_renders_assistant_blocks_like_the_prompt(faux):
    args = {"text": "hi"}
    reply = _reply([faux_thinking("think"), faux_tool_call("echo", args, id="t1"),
                    faux_text("done")])
    faux.set_responses([reply, _reply("next")])

    first = complete(faux.get_model(), _context())
    output_text = f"think\necho:{json.dumps(args)}\ndone"
    assert first.usage == _usage(_tokens("user:hi"), _tokens(output_text))

    replay = Context(None, [UserMessage("hi", timestamp=1), first])
    second = complete(faux.get_model(), replay)
    assert second.usage.input == _tokens(f"user:hi\n\nassistant:{output_text}")


def test_faux_usage_is_priced_with_the_model_cost(make_faux):
    priced = Model("priced", "Priced", "x", "x", "http://x",
                   cost=ModelCost(input=2.0, output=8.0))
    faux = make_faux(models=[priced])
    faux.set_responses([_reply("a reply long enough to cost")])

    message = complete(faux.get_model(), _context())

    expected = _usage(_tokens("user:hi"), _tokens("a reply long enough to cost"))
    assert message.usage == calculate_cost(faux.get_model(), expected)
    assert message.usage.cost.total > 0


@pytest.mark.parametrize("retention", ["short", "long", None])
def test_faux_prompt_cache_is_simulated_per_session(faux, retention):
    faux.set_responses([_reply("first"), _reply("second")])
    options = StreamOptions(session_id="session-1", cache_retention=retention)
    context = _context("hello", system_prompt="Be concise.")

    first = complete(faux.get_model(), context, options)
    first_prompt = "system:Be concise.\n\nuser:hello"
    assert first.usage == _usage(0, _tokens("first"), cache_write=_tokens(first_prompt))

    context = Context(context.system_prompt,
                      [*context.messages, first, UserMessage("follow up", timestamp=2)])
    second = complete(faux.get_model(), context, options)
    second_prompt = f"{first_prompt}\n\nassistant:first\n\nuser:follow up"
    new_part = second_prompt[len(first_prompt):]
    assert second.usage == _usage(
        max(0, _tokens(second_prompt) - _tokens(first_prompt) - _tokens(new_part)),
        _tokens("second"),
        cache_read=_tokens(first_prompt),
        cache_write=_tokens(new_part),
    )
    assert second.usage.cache_read > 0


def test_faux_prompt_cache_is_not_shared_across_sessions_or_without_session(faux):
    faux.set_responses([_reply("first"), _reply("second"), _reply("third")])
    context = _context("hello")

    first = complete(faux.get_model(), context,
                     StreamOptions(session_id="session-1", cache_retention="short"))
    assert first.usage.cache_write > 0

    context = Context(None, [*context.messages, first, UserMessage("follow up", timestamp=2)])
    prompt = "user:hello\n\nassistant:first\n\nuser:follow up"
    second = complete(faux.get_model(), context,
                      StreamOptions(session_id="session-2", cache_retention="short"))
    assert second.usage == _usage(0, _tokens("second"), cache_write=_tokens(prompt))

    third = complete(faux.get_model(), context)
    assert third.usage == _usage(_tokens(prompt), _tokens("third"))


def test_faux_prompt_cache_is_off_with_retention_none(faux):
    faux.set_responses([_reply("first"), _reply("second")])
    options = StreamOptions(session_id="session-1", cache_retention="none")
    context = _context("hello")

    first = complete(faux.get_model(), context, options)
    assert first.usage == _usage(_tokens("user:hello"), _tokens("first"))

    context = Context(None, [*context.messages, first, UserMessage("follow up", timestamp=2)])
    second = complete(faux.get_model(), context, options)
    prompt = "user:hello\n\nassistant:first\n\nuser:follow up"
    assert second.usage == _usage(_tokens(prompt), _tokens("second"))


def test_faux_helpers_build_blocks():
    assert faux_text("x") == TextContent("x")
    assert faux_thinking("hmm") == ThinkingContent("hmm")
    assert faux_tool_call("echo", {"a": 1}, id="call-1") == ToolCall("call-1", "echo", {"a": 1})
    assert faux_tool_call("echo", {}, "call-2") == ToolCall("call-2", "echo", {})


def test_faux_tool_call_default_ids_are_unique():
    ids = {faux_tool_call("echo", {}).id for _ in range(100)}

    assert len(ids) == 100
    assert all(i.startswith("tool:") for i in ids)


def test_faux_assistant_message_accepts_string_block_or_blocks():
    call = faux_tool_call("echo", {}, id="c")

    assert faux_assistant_message("hi").content == [TextContent("hi")]
    assert faux_assistant_message(faux_thinking("t")).content == [ThinkingContent("t")]
    assert faux_assistant_message([faux_text("a"), call]).content == [TextContent("a"), call]
    assert faux_assistant_message((faux_text("a"),)).content == [TextContent("a")]


def test_faux_assistant_message_stop_reasons():
    call = faux_tool_call("echo", {}, id="c")

    assert faux_assistant_message("hi").stop_reason == StopReason.STOP
    assert faux_assistant_message("hi").error_message is None
    assert faux_assistant_message([call]).stop_reason == StopReason.TOOL_USE
    assert faux_assistant_message([call], "length").stop_reason == StopReason.LENGTH
    failed = faux_assistant_message("x", stop_reason="error", error_message="upstream failed")
    assert (failed.stop_reason, failed.error_message) == (StopReason.ERROR, "upstream failed")


def test_faux_helper_blocks_round_trip_through_complete(faux):
    blocks = [faux_thinking("think"), faux_tool_call("echo", {"text": "hi"}, id="t1"),
              faux_text("done")]
    faux.set_responses([_reply(blocks, stop_reason="toolUse")])

    message = complete(faux.get_model(), _context())

    assert message.content == [ThinkingContent("think"), ToolCall("t1", "echo", {"text": "hi"}),
                               TextContent("done")]
    assert message.stop_reason == StopReason.TOOL_USE
    assert message.tool_calls == [ToolCall("t1", "echo", {"text": "hi"})]
    assert message.text == "done"


def test_faux_multiple_models_and_model_aware_factories(make_faux):
    thinker = Model("faux-thinker", "Faux Thinker", "ignored-api", "ignored", "http://x",
                    reasoning=True)
    faux = make_faux(models=["faux-fast", thinker])

    def answer(context: Context, options: StreamOptions, model: Model) -> AssistantMessage:
        return faux_assistant_message(f"{model.id}:{model.reasoning}")

    faux.set_responses([answer, answer])

    assert [m.id for m in faux.models] == ["faux-fast", "faux-thinker"]
    assert all((m.api, m.provider) == (faux.api, "faux") for m in faux.models)
    assert faux.get_model() is faux.models[0]
    assert faux.get_model("faux-fast").reasoning is False
    assert faux.get_model("faux-thinker") == attrs.evolve(thinker, api=faux.api, provider="faux")

    fast = complete(faux.get_model("faux-fast"), _context())
    slow = complete(faux.get_model("faux-thinker"), _context())

    assert (fast.model, fast.content) == ("faux-fast", [TextContent("faux-fast:False")])
    assert (slow.model, slow.content) == ("faux-thinker", [TextContent("faux-thinker:True")])


def test_faux_get_model_unknown_id_raises_naming_it(faux):
    with pytest.raises(ModelNotFoundError, match="no-such-model"):
        faux.get_model("no-such-model")


def test_faux_rewrites_api_provider_and_model(make_faux):
    faux = make_faux(api="faux:test-rewrite", provider="faux-provider", models=["faux-model"])
    reply = attrs.evolve(_reply("hello"), api="elsewhere", provider="someone", model="other")
    faux.set_responses([reply])

    message = complete(faux.get_model(), _context())

    assert (message.api, message.provider, message.model) == (
        "faux:test-rewrite", "faux-provider", "faux-model"
    )
    assert message == _served(faux, reply, _usage(_tokens("user:hi"), _tokens("hello")))


def test_faux_rewrites_api_provider_and_model_in_every_partial(make_faux):
    faux = make_faux(api="faux:test-partials", provider="faux-provider", models=["faux-model"])
    faux.set_responses([_reply([faux_thinking("th"), faux_text("hello"),
                                faux_tool_call("echo", {"a": 1}, id="c")])])

    events = list(stream(faux.get_model(), _context()))

    partials = [e.partial for e in events if hasattr(e, "partial")]
    assert len(partials) == len(events) - 1
    assert {(p.api, p.provider, p.model) for p in partials} == {
        ("faux:test-partials", "faux-provider", "faux-model")
    }


def test_faux_queue_is_consumed_in_order_then_errors_when_exhausted(faux):
    faux.set_responses([_reply("first"), _reply("second")])
    model = faux.get_model()

    first = complete(model, _context())
    second = complete(model, _context())
    exhausted = complete(model, _context())

    assert first.content == [TextContent("first")]
    assert second.content == [TextContent("second")]
    assert exhausted == AssistantMessage(
        [], faux.api, "faux", "faux-1", usage=_usage(_tokens("user:hi"), 0),
        stop_reason=StopReason.ERROR, error_message="No more faux responses queued",
        timestamp=exhausted.timestamp,
    )
    assert faux.pending_response_count() == 0
    assert faux.call_count == 3


def test_faux_exhausted_queue_gives_a_lone_error_event(faux):
    events = list(stream(faux.get_model(), _context()))

    assert [e.type for e in events] == ["error"]
    assert events[0].reason == StopReason.ERROR
    assert events[0].error.error_message == "No more faux responses queued"
    assert faux.call_count == 1


def test_faux_set_responses_replaces_and_append_responses_appends(faux):
    model = faux.get_model()
    faux.set_responses([_reply("first")])
    assert complete(model, _context()).text == "first"
    assert faux.pending_response_count() == 0

    faux.set_responses([_reply("dropped")])
    faux.set_responses([_reply("second")])
    assert faux.pending_response_count() == 1
    assert complete(model, _context()).text == "second"

    faux.append_responses([_reply("third"), _reply("fourth")])
    assert faux.pending_response_count() == 2
    assert complete(model, _context()).text == "third"
    assert complete(model, _context()).text == "fourth"
    assert faux.pending_response_count() == 0


@pytest.mark.parametrize("items", ["not a list", [object()], [_reply("ok"), 42], None])
def test_faux_set_responses_rejects_bad_items(faux, items):
    with pytest.raises(TypeError, match="'items"):
        faux.set_responses(items)
    with pytest.raises(TypeError, match="'items"):
        faux.append_responses(items)
    assert faux.pending_response_count() == 0


def test_faux_factory_sees_context_options_and_call_count(faux):
    seen: list[tuple[int, int, str | None, int]] = []

    def factory(context: Context, options: StreamOptions, model: Model) -> AssistantMessage:
        seen.append((len(context.messages), faux.call_count, options.session_id,
                     threading.get_ident()))
        return faux_assistant_message(f"{len(context.messages)}:{faux.call_count}")

    faux.set_responses([factory])
    message = complete(faux.get_model(), _context(), StreamOptions(session_id="s-9"))

    assert message.content == [TextContent("1:1")]
    assert seen == [(1, 1, "s-9", threading.get_ident())]


def test_faux_factory_result_is_served_like_a_queued_message(faux):
    reply = _reply("from a factory")
    faux.set_responses([lambda context, options, model: reply])

    message = complete(faux.get_model(), _context())

    assert message == _served(faux, reply, _usage(_tokens("user:hi"), _tokens("from a factory")))


def test_faux_factory_raising_gives_exactly_one_error_event(faux):
    def factory(context: Context, options: StreamOptions, model: Model) -> AssistantMessage:
        raise RuntimeError("boom")

    faux.set_responses([factory])
    out = stream(faux.get_model(), _context())
    events = list(out)

    assert len(events) == 1
    expected = ErrorEvent(
        StopReason.ERROR,
        AssistantMessage([], faux.api, "faux", "faux-1", stop_reason=StopReason.ERROR,
                         error_message="boom", timestamp=events[0].error.timestamp),
    )
    assert events == [expected]
    assert out.result(timeout=WAIT_S) == expected.error
    assert faux.call_count == 1


def test_faux_factory_returning_a_non_message_gives_an_error_event(faux):
    faux.set_responses([lambda context, options, model: "just a string"])

    events = list(stream(faux.get_model(), _context()))

    assert [e.type for e in events] == ["error"]
    assert events[0].error.stop_reason == StopReason.ERROR
    assert "not an AssistantMessage" in events[0].error.error_message


def _consume(events_stream):
    """Every event with a copy of its partial's content as it was when the event arrived."""
    out = []
    for event in events_stream:
        partial = getattr(event, "partial", None)
        out.append((event, None if partial is None else list(partial.content)))
    return out


def test_faux_exact_event_sequence_with_one_token_chunks(faux):
    call = faux_tool_call("echo", {}, id="tool-1")
    reply = _reply([faux_thinking("go"), faux_text("ok"), call], stop_reason="toolUse")
    faux.set_responses([reply])

    seen = _consume(stream(faux.get_model(), _context()))
    events = [e for e, _ in seen]

    final = _served(faux, reply, _usage(_tokens("user:hi"), _tokens("go\nok\necho:{}")))
    thinking, text = ThinkingContent("go"), TextContent("ok")
    empty_call = ToolCall("tool-1", "echo", {})
    assert seen == [
        (events[0], []),
        (ThinkingStartEvent(0, events[0].partial), [ThinkingContent("")]),
        (ThinkingDeltaEvent(0, "go", events[0].partial), [thinking]),
        (ThinkingEndEvent(0, "go", events[0].partial), [thinking]),
        (TextStartEvent(1, events[0].partial), [thinking, TextContent("")]),
        (TextDeltaEvent(1, "ok", events[0].partial), [thinking, text]),
        (TextEndEvent(1, "ok", events[0].partial), [thinking, text]),
        (ToolCallStartEvent(2, events[0].partial), [thinking, text, empty_call]),
        (ToolCallDeltaEvent(2, "{}", events[0].partial), [thinking, text, empty_call]),
        (ToolCallEndEvent(2, call, events[0].partial), [thinking, text, call]),
        (DoneEvent(StopReason.TOOL_USE, final), None),
    ]
    # Partials carry the default stop reason until the terminal event gives the real one.
    assert events[0] == StartEvent(attrs.evolve(final, stop_reason=StopReason.STOP))
    assert [e.type for e in events] == [
        "start",
        "thinking_start", "thinking_delta", "thinking_end",
        "text_start", "text_delta", "text_end",
        "toolcall_start", "toolcall_delta", "toolcall_end",
        "done",
    ]


def test_faux_every_event_carries_the_same_live_partial(faux):
    faux.set_responses([_reply("abcdefghij")])
    events = list(stream(faux.get_model(), _context()))
    partials = {id(e.partial) for e in events if hasattr(e, "partial")}
    assert len(partials) == 1
    assert events[-1].message is not events[0].partial  # the final message is its own value


def test_faux_streams_thinking_text_and_tool_deltas_that_concatenate(make_faux):
    faux = make_faux()
    args = {"text": "hi", "count": 12, "nested": {"list": [1, 2, 3], "flag": True}}
    thinking = "thinking text that is long enough to need several chunks of output"
    text = "answer text, also long enough to arrive in more than one delta for sure"
    faux.set_responses([_reply([faux_thinking(thinking), faux_text(text),
                                faux_tool_call("echo", args, id="tool-1")])])

    events = list(stream(faux.get_model(), _context()))

    def deltas(kind: str, index: int) -> list[str]:
        return [e.delta for e in events if e.type == kind and e.content_index == index]

    assert len(deltas("thinking_delta", 0)) > 1
    assert "".join(deltas("thinking_delta", 0)) == thinking
    assert len(deltas("text_delta", 1)) > 1
    assert "".join(deltas("text_delta", 1)) == text
    assert len(deltas("toolcall_delta", 2)) > 1
    assert "".join(deltas("toolcall_delta", 2)) == json.dumps(args)
    assert json.loads("".join(deltas("toolcall_delta", 2))) == args
    assert events[-1].type == "done"


@pytest.mark.parametrize(("token_size", "sizes"), [((3, 5), {12, 16, 20}), ((2, 2), {8})])
def test_faux_chunks_are_token_size_times_four_characters(make_faux, token_size, sizes):
    faux = make_faux(token_size=token_size)
    text = ALPHABET * 8
    faux.set_responses([_reply(text)])

    chunks = [e.delta for e in stream(faux.get_model(), _context()) if e.type == "text_delta"]

    assert "".join(chunks) == text
    assert all(len(c) in sizes for c in chunks[:-1])
    assert 0 < len(chunks[-1]) <= max(sizes)


def test_faux_partial_holds_the_text_so_far_at_each_event(faux):
    faux.set_responses([_reply("abcdefghij")])

    seen = _consume(stream(faux.get_model(), _context()))

    assert [e.type for e, _ in seen] == [
        "start", "text_start", "text_delta", "text_delta", "text_delta", "text_end", "done"
    ]
    assert seen[0][1] == []
    assert seen[1][1] == [TextContent("")]
    so_far = ""
    for event, content in seen[2:5]:
        so_far += event.delta
        assert content == [TextContent(so_far)]
    assert [e.delta for e, _ in seen[2:5]] == ["abcd", "efgh", "ij"]
    assert seen[5][0] == TextEndEvent(0, "abcdefghij", seen[4][0].partial)


def test_faux_tool_call_partials_hold_empty_arguments_until_the_end(faux):
    call = faux_tool_call("echo", {"text": "hello there"}, id="c1")
    faux.set_responses([_reply([call])])

    seen = _consume(stream(faux.get_model(), _context()))

    opened = [c for e, c in seen if e.type in ("toolcall_start", "toolcall_delta")]
    assert len(opened) > 2
    assert all(c == [ToolCall("c1", "echo", {})] for c in opened)
    end, content = next((e, c) for e, c in seen if e.type == "toolcall_end")
    assert (end.tool_call, content) == (call, [call])


def test_faux_two_tool_calls_give_two_start_end_pairs(make_faux):
    faux = make_faux()
    first = faux_tool_call("echo", {"text": "one"}, id="tool-1")
    second = faux_tool_call("echo", {"text": "two"}, id="tool-2")
    faux.set_responses([_reply([first, second])])

    events = list(stream(faux.get_model(), _context()))

    starts = [e.content_index for e in events if e.type == "toolcall_start"]
    ends = [(e.content_index, e.tool_call) for e in events if e.type == "toolcall_end"]
    assert starts == [0, 1]
    assert ends == [(0, first), (1, second)]
    assert events[-1].message.tool_calls == [first, second]
    assert events[-1].reason == StopReason.TOOL_USE


@pytest.mark.parametrize(
    ("reason", "error_message"),
    [(StopReason.ERROR, "upstream failed"), (StopReason.ABORTED, ABORTED_TEXT)],
)
def test_faux_explicit_error_message_streams_blocks_then_error(make_faux, reason, error_message):
    faux = make_faux(token_size=(2, 2))
    reply = _reply("partial", stop_reason=reason, error_message=error_message)
    faux.set_responses([reply])
    out = stream(faux.get_model(), _context())

    events = list(out)

    assert [e.type for e in events] == ["start", "text_start", "text_delta", "text_end", "error"]
    final = _served(faux, reply, _usage(_tokens("user:hi"), _tokens("partial")))
    assert events[-1] == ErrorEvent(reason, final)
    assert out.result(timeout=WAIT_S) == final
    assert events[0].partial.stop_reason == StopReason.STOP
    assert events[0].partial.error_message is None


@pytest.mark.parametrize("tokens_per_second", [None, 50])
def test_faux_aborted_before_start_gives_a_single_error_event(make_faux, tokens_per_second):
    faux = make_faux(tokens_per_second=tokens_per_second, token_size=(3, 3))
    reply = _reply(ALPHABET)
    faux.set_responses([reply])
    controller = AbortController()
    controller.abort()

    out = stream(faux.get_model(), _context(), StreamOptions(signal=controller.signal))
    events = list(out)

    aborted = attrs.evolve(
        _served(faux, reply, _usage(_tokens("user:hi"), _tokens(ALPHABET))),
        content=[], stop_reason=StopReason.ABORTED, error_message=ABORTED_TEXT,
    )
    assert events == [ErrorEvent(StopReason.ABORTED, aborted)]
    assert out.result(timeout=WAIT_S) == aborted
    assert faux.call_count == 1


def _abort_at_first(kind: str, events_source, controller: AbortController):
    """Iterate, aborting on the first event of `kind`; return every event seen."""
    seen: list[AssistantMessageEvent] = []
    for event in events_source:
        seen.append(event)
        if event.type == kind and not controller.signal.aborted:
            controller.abort()
    return seen


@pytest.mark.parametrize(
    ("block", "kind", "partial_block"),
    [
        (faux_text(ALPHABET), "text", TextContent("abcd")),
        (faux_thinking(ALPHABET), "thinking", ThinkingContent("abcd")),
        (faux_tool_call("echo", {"text": ALPHABET, "count": 123456789}, id="tool-1"),
         "toolcall", ToolCall("tool-1", "echo", {})),
    ],
)
def test_faux_abort_mid_block_gives_one_delta_then_aborted_error(faux, block, kind,
                                                                 partial_block):
    faux.set_responses([_reply([block])])
    controller = AbortController()
    out = stream(faux.get_model(), _context(), StreamOptions(signal=controller.signal))

    events = _abort_at_first(f"{kind}_delta", out, controller)

    assert [e.type for e in events] == ["start", f"{kind}_start", f"{kind}_delta", "error"]
    assert events[2].partial.content == [partial_block]
    expected = attrs.evolve(events[2].partial, stop_reason=StopReason.ABORTED,
                            error_message=ABORTED_TEXT)
    assert events[-1] == ErrorEvent(StopReason.ABORTED, expected)
    assert out.result(timeout=WAIT_S) == expected


def test_faux_abort_between_blocks_does_not_open_the_next_block(faux):
    faux.set_responses([_reply([faux_text("ab"), faux_text("cd")])])
    controller = AbortController()
    out = stream(faux.get_model(), _context(), StreamOptions(signal=controller.signal))

    events = _abort_at_first("text_end", out, controller)

    assert [e.type for e in events] == ["start", "text_start", "text_delta", "text_end", "error"]
    assert events[-1].error.content == [TextContent("ab")]
    assert events[-1].error.stop_reason == StopReason.ABORTED


def test_faux_stream_is_produced_on_the_consumer_thread(faux):
    producer_threads: list[int] = []

    def factory(context: Context, options: StreamOptions, model: Model) -> AssistantMessage:
        producer_threads.append(threading.get_ident())
        return faux_assistant_message("lazy")

    faux.set_responses([factory])
    out = stream(faux.get_model(), _context())
    assert producer_threads == []
    assert faux.call_count == 1

    consumer_thread: list[int] = []

    def consume() -> None:
        consumer_thread.append(threading.get_ident())
        list(out)

    worker = threading.Thread(target=consume, daemon=True)
    worker.start()
    worker.join(WAIT_S)
    assert not worker.is_alive()
    assert producer_threads == consumer_thread


def test_faux_pacing_spreads_chunks_over_time(make_faux):
    faux = make_faux(tokens_per_second=20, token_size=(1, 1))
    faux.set_responses([_reply("abcdefghijklmnop")])

    started = time.monotonic()
    message = complete(faux.get_model(), _context())
    elapsed = time.monotonic() - started

    assert message.text == "abcdefghijklmnop"
    assert elapsed >= 0.15  # four one-token chunks at 20 tokens/s take at least 0.2 s


def test_faux_abort_while_paced_wakes_promptly(make_faux):
    faux = make_faux(tokens_per_second=1e-4, token_size=(1, 1))  # hours per chunk
    faux.set_responses([_reply(ALPHABET)])
    controller = AbortController()
    first_delta = threading.Event()

    def abort_after_first_delta() -> None:
        if first_delta.wait(WAIT_S):
            controller.abort()

    aborter = threading.Thread(target=abort_after_first_delta, daemon=True)
    aborter.start()
    events: list[AssistantMessageEvent] = []
    for event in stream(faux.get_model(), _context(), StreamOptions(signal=controller.signal)):
        events.append(event)
        if event.type == "text_delta":
            first_delta.set()
    aborter.join(WAIT_S)

    # the abort woke the paced wait: the next chunk was hours away
    assert [e.type for e in events] == ["start", "text_start", "text_delta", "error"]
    assert events[-1].reason == StopReason.ABORTED


def test_faux_on_response_is_called_once_per_call(faux):
    responses: list[tuple[int, dict[str, str]]] = []
    faux.set_responses([_reply("ok")])
    options = StreamOptions(on_response=lambda status, headers: responses.append(
        (status, dict(headers))))

    complete(faux.get_model(), _context(), options)
    complete(faux.get_model(), _context(), options)

    assert responses == [(200, {}), (200, {})]


def test_faux_complete_returns_the_final_message_of_the_stream(faux):
    reply = _reply([faux_thinking("hmm"), faux_text("the answer")])
    faux.set_responses([reply, reply])

    streamed = list(stream(faux.get_model(), _context()))
    completed = complete(faux.get_model(), _context())

    assert streamed[-1] == DoneEvent(StopReason.STOP, completed)
    assert completed == _served(faux, reply,
                                _usage(_tokens("user:hi"), _tokens("hmm\nthe answer")))


def test_faux_unregister_makes_stream_raise_provider_not_found():
    faux = register_faux_provider()
    faux.set_responses([_reply("hello")])
    faux.unregister()

    with pytest.raises(ProviderNotFoundError, match=faux.api):
        agentcore.stream(faux.get_model(), _context())
    with pytest.raises(ProviderNotFoundError, match=faux.api):
        complete(faux.get_model(), _context())
    with pytest.raises(ProviderNotFoundError):
        faux.unregister()
    assert faux.call_count == 0


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"tokens_per_second": 0}, ValueError),
        ({"tokens_per_second": -1.0}, ValueError),
        ({"token_size": (0, 1)}, ValueError),
        ({"token_size": (3, 2)}, ValueError),
        ({"token_size": [1, 1]}, ValueError),
        ({"models": []}, ValueError),
        ({"models": "faux-1"}, ValueError),
        ({"models": [42]}, TypeError),
        ({"api": ""}, TypeError),
        ({"provider": 1}, TypeError),
    ],
)
def test_faux_register_rejects_bad_arguments(kwargs, error):
    with pytest.raises(error, match=f"'{next(iter(kwargs))}"):
        register_faux_provider(**kwargs)
