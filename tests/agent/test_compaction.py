"""Compaction: estimates, cut points, the summary request, and `Agent(auto_compact=...)`."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import attrs
import pytest

from agentcore import (
    AbortController,
    AbortError,
    Agent,
    AgentContext,
    AgentcoreError,
    AgentEvent,
    AgentLoopConfig,
    AgentMessage,
    AssistantMessage,
    AssistantMessageEventStream,
    BashExecutionMessage,
    CompactionEndEvent,
    CompactionSettings,
    CompactionStartEvent,
    CompactionSummaryMessage,
    Context,
    DoneEvent,
    ImageContent,
    MessageEndEvent,
    Model,
    RunError,
    StreamOptions,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    default_convert_to_llm,
    from_json,
    is_context_overflow,
    run_agent_loop,
    to_json,
)
from agentcore.compaction import compact, estimate_tokens
from agentcore.testing import faux_assistant_message, record_events, scripted_model

TS = 1_700_000_000_000
OVERFLOW = "prompt is too long: 213462 tokens > 200000 maximum"
SUMMARY = "## Goals\n- finish the report in notes/report.md"


def words(tokens: int, mark: str = "") -> str:
    """Text that `estimate_tokens` counts as exactly `tokens` tokens (4 characters each)."""
    return (mark + "x" * (4 * tokens))[: 4 * tokens]


def user(text: str) -> UserMessage:
    return UserMessage(text, timestamp=TS)


def reply(*content: str | ToolCall) -> AssistantMessage:
    blocks = [TextContent(c) if isinstance(c, str) else c for c in content]
    stop = "toolUse" if any(isinstance(c, ToolCall) for c in content) else "stop"
    return AssistantMessage(blocks, "faux", "faux", "m", Usage(), stop, timestamp=TS)


def call(id: str, path: str = "a.txt") -> ToolCall:
    return ToolCall(id, "read", {"path": path})


def result(id: str, text: str) -> ToolResultMessage:
    return ToolResultMessage(id, "read", [TextContent(text)], timestamp=TS)


def small_model(context_window: int = 1_000_000) -> Model:
    return Model("small-1", "Small", "faux", "faux", "http://localhost:0",
                 context_window=context_window, max_tokens=4_000)


def summary_reply(seen: list[Context], text: str = SUMMARY) -> Any:
    """A scripted reply that records the summary request and answers `text`."""

    def answer(context: Context, options: StreamOptions, model: Model) -> str:
        seen.append(context)
        return text

    return answer


def valid_kept_part(older: Sequence[AgentMessage], kept: Sequence[AgentMessage]) -> bool:
    """Whether `kept` starts at a turn boundary: every kept result has its call kept too."""
    called_before = {c.id for m in older if isinstance(m, AssistantMessage) for c in m.tool_calls}
    answered_later = {m.tool_call_id for m in kept if isinstance(m, ToolResultMessage)}
    return (bool(kept) and not isinstance(kept[0], ToolResultMessage)
            and not called_before & answered_later)


# A task of three turns: parallel tool calls, results out of order, a follow-up question.
TRANSCRIPT: list[AgentMessage] = [
    user(words(50, "summarise the logs ")),
    reply(words(10, "reading "), call("c1", "logs/a.log"), call("c2", "logs/b.log")),
    result("c2", words(100, "b: ")),
    result("c1", words(100, "a: ")),
    reply(words(20, "one more "), call("c3", "logs/c.log")),
    result("c3", words(100, "c: ")),
    reply(words(60, "the logs say ")),
    user(words(30, "and the errors? ")),
    reply(words(40, "two errors ")),
]


# -- estimate_tokens -------------------------------------------------------------------------


def test_estimate_tokens_is_characters_over_four_rounded_up_per_message() -> None:
    assert estimate_tokens([]) == 0
    assert estimate_tokens([user("abcd")]) == 1
    assert estimate_tokens([user("abcde")]) == 2
    assert estimate_tokens([user("a"), user("b")]) == 2  # rounded per message
    assert estimate_tokens(TRANSCRIPT) == sum(estimate_tokens([m]) for m in TRANSCRIPT)


def test_estimate_tokens_counts_every_kind_of_content() -> None:
    thinking = AssistantMessage([ThinkingContent("t" * 8), TextContent("x" * 4)], "a", "p", "m",
                                Usage(), "stop", timestamp=TS)
    assert estimate_tokens([thinking]) == 3
    assert estimate_tokens([reply(ToolCall("i", "read", {"path": "a"}))]) == 5  # 4 + 13 chars
    image = ImageContent("aGVsbG8=" * 1000, "image/png")
    assert estimate_tokens([UserMessage([TextContent("abcd"), image], timestamp=TS)]) == 1_201
    assert estimate_tokens([ToolResultMessage("i", "shot", [image], timestamp=TS)]) == 1_200
    summary = CompactionSummaryMessage("s" * 40, 100, timestamp=TS)
    assert estimate_tokens([summary]) == estimate_tokens(default_convert_to_llm([summary]))
    bash = BashExecutionMessage("ls", "a b c", 0, timestamp=TS)
    assert estimate_tokens([bash]) == estimate_tokens(default_convert_to_llm([bash])) > 0


def test_estimate_tokens_counts_an_applications_own_messages_as_zero() -> None:
    @attrs.frozen
    class Note:
        role = "note"
        text: str

    assert estimate_tokens([Note("x" * 400)]) == 0


@pytest.mark.parametrize("value", ["hello", user("hi"), 5])
def test_estimate_tokens_rejects_what_is_not_a_list_of_messages(value: Any) -> None:
    with pytest.raises(TypeError, match="'messages' must be a list of messages"):
        estimate_tokens(value)


# -- where compact cuts ----------------------------------------------------------------------


def summary_stream(model: Model, context: Context, options: StreamOptions) -> Any:
    """A stream function answering every request with `SUMMARY` at once."""
    stream = AssistantMessageEventStream()
    message = AssistantMessage([TextContent(SUMMARY)], model.api, model.provider, model.id,
                               Usage(), "stop")
    stream.push(DoneEvent("stop", message))
    return stream


def test_compact_never_cuts_between_a_tool_call_and_its_result() -> None:
    cuts = set()
    for keep in range(estimate_tokens(TRANSCRIPT) + 2):
        compacted = compact(TRANSCRIPT, small_model(), keep_recent_tokens=keep,
                            stream_fn=summary_stream)
        if not isinstance(compacted[0], CompactionSummaryMessage):  # all of it is recent
            assert compacted == TRANSCRIPT
            continue
        kept = compacted[1:]
        older = TRANSCRIPT[: len(TRANSCRIPT) - len(kept)]
        assert TRANSCRIPT[len(older):] == kept
        assert valid_kept_part(older, kept), keep
        assert estimate_tokens(kept) >= keep
        cuts.add(len(older))
    assert cuts == {1, 4, 6, 7, 8}  # before each user or assistant message after all results


def test_compact_cuts_just_before_a_user_message() -> None:
    kept_tokens = estimate_tokens(TRANSCRIPT[7:])  # the follow-up question and its answer
    with scripted_model([SUMMARY], model=small_model()) as fake:
        compacted = compact(TRANSCRIPT, fake.model, keep_recent_tokens=kept_tokens)
    assert compacted[1:] == TRANSCRIPT[7:]


def test_compact_cuts_before_an_assistant_message_once_its_tool_results_are_in() -> None:
    # Keeping a bit more than the last two turns: the results of c3 and c1/c2 cannot start the
    # kept part; the reply after c3's result can, and so can the reply asking for c3.
    keep = estimate_tokens(TRANSCRIPT[7:]) + 1
    with scripted_model([SUMMARY, SUMMARY], model=small_model()) as fake:
        compacted = compact(TRANSCRIPT, fake.model, keep_recent_tokens=keep)
        assert compacted[1:] == TRANSCRIPT[6:]
        keep = estimate_tokens(TRANSCRIPT[5:]) + 1  # reaches into c3's result
        compacted = compact(TRANSCRIPT, fake.model, keep_recent_tokens=keep)
        assert compacted[1:] == TRANSCRIPT[4:]


def test_compact_cuts_after_a_tool_call_that_never_got_a_result() -> None:
    transcript = [
        user(words(10)),
        reply(call("lost")),  # interrupted: no result anywhere
        user(words(10, "again ")),
        reply(words(10)),
    ]
    with scripted_model([SUMMARY], model=small_model()) as fake:
        compacted = compact(transcript, fake.model, keep_recent_tokens=15)
    assert compacted[1:] == transcript[2:]


def test_compact_keeps_the_shortest_recent_part_reaching_keep_recent_tokens() -> None:
    transcript = [user(words(100)), reply(words(100)), user(words(100)), reply(words(100)),
                  user(words(100)), reply(words(100))]
    with scripted_model([SUMMARY] * 3, model=small_model()) as fake:
        assert compact(transcript, fake.model, keep_recent_tokens=200)[1:] == transcript[4:]
        assert compact(transcript, fake.model, keep_recent_tokens=201)[1:] == transcript[3:]
        assert compact(transcript, fake.model, keep_recent_tokens=0)[1:] == transcript[5:]


def test_compact_returns_a_copy_when_the_transcript_is_all_recent() -> None:
    with scripted_model(model=small_model()) as fake:
        compacted = compact(TRANSCRIPT, fake.model, keep_recent_tokens=10**6)
        assert compacted == TRANSCRIPT
        assert compacted is not TRANSCRIPT
        assert compact([], fake.model) == []
        assert compact(TRANSCRIPT[:1], fake.model, keep_recent_tokens=0) == TRANSCRIPT[:1]
        fake.assert_called(times=0)


# -- what compact returns and asks -----------------------------------------------------------


def test_compact_puts_one_summary_in_place_of_the_older_messages() -> None:
    before = list(TRANSCRIPT)
    with scripted_model([f"  {SUMMARY}\n"], model=small_model()) as fake:
        compacted = compact(TRANSCRIPT, fake.model, keep_recent_tokens=100)
    assert before == TRANSCRIPT  # the caller's list is untouched
    summary = compacted[0]
    assert isinstance(summary, CompactionSummaryMessage)
    assert summary.summary == SUMMARY
    assert summary.tokens_before == estimate_tokens(TRANSCRIPT)
    assert not any(isinstance(m, CompactionSummaryMessage) for m in compacted[1:])
    [as_sent] = default_convert_to_llm([summary])
    assert as_sent == UserMessage("The conversation so far was compacted into this summary:\n"
                                  f"<summary>\n{SUMMARY}\n</summary>", timestamp=summary.timestamp)


def test_compact_request_holds_the_older_messages_and_asks_for_goals_to_names() -> None:
    seen: list[Context] = []
    transcript = [
        user("Fix the failing test in tests/test_parser.py"),
        reply("Looking.", ToolCall("c1", "read", {"path": "src/parser.py"})),
        ToolResultMessage("c1", "read", [TextContent("def parse_header(line): ...")],
                          timestamp=TS),
        reply("I decided to use a regex in parse_header because the grammar is regular."),
        user(words(50, "KEPT-QUESTION ")),
        reply(words(50, "KEPT-ANSWER ")),
    ]
    with scripted_model([summary_reply(seen)], model=small_model()) as fake:
        compact(transcript, fake.model, keep_recent_tokens=100)
    [context] = seen
    assert context.tools is None
    assert "Do not continue the conversation" in (context.system_prompt or "")
    [request] = context.messages
    assert isinstance(request, UserMessage)
    text = request.text
    for older in ("Fix the failing test in tests/test_parser.py", "Looking.",
                  '"path": "src/parser.py"', "def parse_header(line): ...",
                  "I decided to use a regex"):
        assert older in text
    assert "KEPT-QUESTION" not in text
    assert "KEPT-ANSWER" not in text
    for heading in ("## Goals", "## Progress", "## Decisions", "## Open work", "## Names"):
        assert heading in text
    assert "file path" in text
    assert "identifier" in text
    assert "error messages" in text


def test_compact_request_cuts_long_tool_results() -> None:
    seen: list[Context] = []
    transcript = [user("go"), reply(call("c1")), result("c1", "R" * 10_000),
                  user(words(10)), reply(words(10))]
    with scripted_model([summary_reply(seen)], model=small_model()) as fake:
        compact(transcript, fake.model, keep_recent_tokens=20)
    text = seen[0].messages[0].text  # type: ignore[union-attr]
    assert "R" * 2_000 in text
    assert "R" * 2_001 not in text
    assert "8000 more characters left out" in text


def test_compact_adds_the_instructions_to_the_request() -> None:
    seen: list[Context] = []
    with scripted_model([summary_reply(seen)], model=small_model()) as fake:
        compact(TRANSCRIPT, fake.model, keep_recent_tokens=50,
                instructions="keep every log file name")
    assert seen[0].messages[0].text.endswith("Also: keep every log file name")  # type: ignore[union-attr]


def test_compact_folds_an_earlier_summary_into_the_new_one() -> None:
    seen: list[Context] = []
    with scripted_model([SUMMARY, summary_reply(seen, "## Goals\n- both")],
                        model=small_model()) as fake:
        once = compact(TRANSCRIPT, fake.model, keep_recent_tokens=100)
        more = [*once, user(words(200, "NEW-QUESTION ")), reply(words(200, "NEW-ANSWER "))]
        twice = compact(more, fake.model, keep_recent_tokens=150)
    assert [type(m) for m in twice] == [CompactionSummaryMessage, AssistantMessage]
    assert twice[0].summary == "## Goals\n- both"  # type: ignore[union-attr]
    assert twice[0].tokens_before == estimate_tokens(more)  # type: ignore[union-attr]
    text = seen[0].messages[0].text  # type: ignore[union-attr]
    assert f"<earlier-summary>\n{SUMMARY}\n</earlier-summary>" in text
    assert "NEW-QUESTION" in text
    assert "The conversation so far was compacted" not in text  # not quoted as a message


def test_compact_uses_the_given_stream_fn_and_options() -> None:
    calls: list[tuple[Model, Context, StreamOptions]] = []
    with scripted_model([SUMMARY], model=small_model()) as fake:

        def stream_fn(model: Model, context: Context, options: StreamOptions) -> Any:
            calls.append((model, context, options))
            return fake.provider.stream(model, context, options)

        options = StreamOptions(max_tokens=123, api_key="k")
        compacted = compact(TRANSCRIPT, fake.model, keep_recent_tokens=50, options=options,
                            stream_fn=stream_fn)
    assert compacted[0].summary == SUMMARY  # type: ignore[union-attr]
    [(model, _, sent)] = calls
    assert model == fake.model
    assert sent is options


# -- compact failing -------------------------------------------------------------------------


def test_compact_raises_the_models_error_and_keeps_the_transcript() -> None:
    before = list(TRANSCRIPT)
    failing = faux_assistant_message([], "error", "429 rate limited")
    with (scripted_model([failing], model=small_model()) as fake,
          pytest.raises(AgentcoreError, match=r"^compaction failed: 429 rate limited$")):
        compact(TRANSCRIPT, fake.model, keep_recent_tokens=50)
    assert before == TRANSCRIPT


def test_compact_raises_when_the_stream_fn_raises_or_the_summary_is_empty() -> None:
    def broken(model: Model, context: Context, options: StreamOptions) -> Any:
        raise ConnectionError("connection refused")

    with pytest.raises(AgentcoreError, match="compaction failed: connection refused") as caught:
        compact(TRANSCRIPT, small_model(), keep_recent_tokens=50, stream_fn=broken)
    assert isinstance(caught.value.__cause__, ConnectionError)
    with (scripted_model([" \n"], model=small_model()) as fake,
          pytest.raises(AgentcoreError, match="the model's summary was empty")):
        compact(TRANSCRIPT, fake.model, keep_recent_tokens=50)


def test_compact_aborted_raises_abort_error() -> None:
    controller = AbortController()
    controller.abort()
    with (scripted_model([SUMMARY], model=small_model()) as fake,
          pytest.raises(AbortError, match="compaction aborted")):
        compact(TRANSCRIPT, fake.model, keep_recent_tokens=50,
                options=StreamOptions(signal=controller.signal))


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"messages": "hello"}, TypeError, "'messages' must be a list of messages"),
    ({"messages": [{"role": "user"}]}, TypeError, r"'messages\[0\]' must be a message"),
    ({"model": "gpt-4o"}, TypeError, "'model' must be a Model"),
    ({"keep_recent_tokens": -1}, ValueError, "'keep_recent_tokens' must be >= 0, got -1"),
    ({"keep_recent_tokens": 1.5}, TypeError, "'keep_recent_tokens' must be an int"),
    ({"keep_recent_tokens": True}, TypeError, "'keep_recent_tokens' must be an int"),
    ({"instructions": 3}, TypeError, "'instructions' must be a str or None"),
    ({"options": {"api_key": "k"}}, TypeError, "'options' must be a StreamOptions or None"),
    ({"stream_fn": "stream"}, TypeError, "'stream_fn' must be callable"),
])
def test_compact_rejects_bad_arguments_naming_them(kwargs: dict[str, Any], error: type,
                                                   match: str) -> None:
    arguments: dict[str, Any] = {"messages": TRANSCRIPT, "model": small_model(), **kwargs}
    with pytest.raises(error, match=match):
        compact(arguments.pop("messages"), arguments.pop("model"), **arguments)


# -- settings and events ---------------------------------------------------------------------


def test_compaction_settings_defaults() -> None:
    assert CompactionSettings() == CompactionSettings(reserve_tokens=16_384,
                                                      keep_recent_tokens=20_000)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        CompactionSettings().reserve_tokens = 1  # type: ignore[misc]


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"reserve_tokens": -1}, ValueError, "'reserve_tokens' must be >= 0"),
    ({"keep_recent_tokens": -5}, ValueError, "'keep_recent_tokens' must be >= 0"),
    ({"reserve_tokens": "16k"}, TypeError, "'reserve_tokens' must be an int"),
    ({"keep_recent_tokens": 2.5}, TypeError, "'keep_recent_tokens' must be an int"),
    ({"reserve_tokens": True}, TypeError, "'reserve_tokens' must be an int, not a bool"),
])
def test_compaction_settings_reject_bad_values_naming_the_field(
        kwargs: dict[str, Any], error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        CompactionSettings(**kwargs)


def test_agent_rejects_an_auto_compact_that_is_not_settings() -> None:
    with pytest.raises(TypeError, match="'auto_compact' must be a CompactionSettings or None"):
        Agent(small_model(), auto_compact=True)  # type: ignore[arg-type]


@pytest.mark.parametrize("event", [
    CompactionStartEvent("threshold"),
    CompactionStartEvent("overflow"),
    CompactionEndEvent(CompactionSummaryMessage(SUMMARY, 90_000, timestamp=TS), 90_000, 21_000),
])
def test_compaction_events_round_trip_through_json(event: Any) -> None:
    assert from_json(AgentEvent, to_json(event)) == event  # type: ignore[arg-type]


def test_compaction_event_wire_shape() -> None:
    assert to_json(CompactionStartEvent("overflow")) == (
        '{"type":"compaction_start","reason":"overflow"}')
    assert to_json(CompactionEndEvent(CompactionSummaryMessage("s", 9, timestamp=1), 9, 2)) == (
        '{"type":"compaction_end","summary":{"role":"compactionSummary","summary":"s",'
        '"tokensBefore":9,"timestamp":1},"tokensBefore":9,"tokensAfter":2}')


def test_compaction_start_event_rejects_an_unknown_reason() -> None:
    with pytest.raises(ValueError, match="'reason' must be 'threshold' or 'overflow'"):
        CompactionStartEvent("full")  # type: ignore[arg-type]


# -- Agent(auto_compact=...) -----------------------------------------------------------------

HISTORY: list[AgentMessage] = [m for i in range(10)
                               for m in (user(words(100, f"Q{i} ")), reply(words(100, f"A{i} ")))]
"""Twenty messages of 100 estimated tokens each."""
SETTINGS = CompactionSettings(reserve_tokens=200, keep_recent_tokens=300)
"""With a window of 1,000 tokens: compaction above 800, keeping the last 300 or so."""


def types(events: Sequence[AgentEvent]) -> list[str]:
    return [e.type for e in events if e.type != "message_update"]


def test_agent_compacts_at_the_threshold_within_a_run() -> None:
    seen: list[Context] = []
    with scripted_model([summary_reply(seen), "done"], model=small_model(1_000)) as fake:
        agent = Agent(fake.model, messages=HISTORY, auto_compact=SETTINGS)
        run = agent.prompt("next")
        events = record_events(run, timeout=5)
        run.raise_for_error()
        assert types(events.events) == [
            "agent_start", "turn_start", "message_start", "message_end",
            "compaction_start", "compaction_end",
            "message_start", "message_end", "turn_end", "agent_end"]
        [start] = events.of(CompactionStartEvent)
        assert start.reason == "threshold"
        [end] = events.of(CompactionEndEvent)
        kept = [*HISTORY[-3:], agent.messages[-2]]  # A8, Q9, A9 and the prompt
        assert agent.messages == [end.summary, *kept, agent.messages[-1]]
        assert end.summary.summary == SUMMARY
        assert end.tokens_before == end.summary.tokens_before == estimate_tokens(
            [*HISTORY, user("next")])
        assert end.tokens_after == estimate_tokens([end.summary, *kept])
        # the summary request had the older messages; the next call sees the summary instead
        assert "Q0 " in seen[0].messages[0].text  # type: ignore[union-attr]
        assert fake.call(1).messages == default_convert_to_llm([end.summary, *kept])
        assert run.text == "done"


def test_agent_state_is_compacted_before_listeners_see_compaction_end() -> None:
    seen: list[list[AgentMessage]] = []
    with scripted_model([SUMMARY, "done"], model=small_model(1_000)) as fake:
        agent = Agent(fake.model, messages=HISTORY, auto_compact=SETTINGS)

        def listener(event: AgentEvent, signal: Any) -> None:
            if isinstance(event, CompactionEndEvent):
                seen.append(agent.state.messages)

        agent.subscribe(listener)
        agent.prompt("next").raise_for_error()
    [messages] = seen
    assert isinstance(messages[0], CompactionSummaryMessage)
    assert len(messages) == 5


def test_agent_compacts_again_when_the_transcript_outgrows_the_window_again() -> None:
    with scripted_model([SUMMARY, "done", "## Goals\n- second", "done again"],
                        model=small_model(1_000)) as fake:
        agent = Agent(fake.model, messages=HISTORY, auto_compact=SETTINGS)
        agent.prompt("next").raise_for_error()
        agent.prompt(words(700, "big ")).raise_for_error()
        summary = agent.messages[0]
    assert isinstance(summary, CompactionSummaryMessage)
    assert summary.summary == "## Goals\n- second"
    assert sum(isinstance(m, CompactionSummaryMessage) for m in agent.messages) == 1
    assert f"<earlier-summary>\n{SUMMARY}\n</earlier-summary>" in (
        fake.call(2).messages[0].text)  # type: ignore[union-attr]


def test_agent_compacts_after_an_overflow_and_retries_the_call_once() -> None:
    overflow = faux_assistant_message([], "error", OVERFLOW)
    with scripted_model([overflow, SUMMARY, "done"], model=small_model()) as fake:
        agent = Agent(fake.model, messages=HISTORY, auto_compact=SETTINGS)
        run = agent.prompt("next")
        events = record_events(run, timeout=5)
        assert run.error is None
        assert run.text == "done"
        assert types(events.events) == [
            "agent_start", "turn_start", "message_start", "message_end",
            "message_start", "message_end",  # the overflow error
            "compaction_start", "compaction_end",
            "message_start", "message_end", "turn_end", "agent_end"]
        failed = events.of(MessageEndEvent)[1].message
        assert isinstance(failed, AssistantMessage)
        assert is_context_overflow(failed)
        assert events.of(CompactionStartEvent) == [CompactionStartEvent("overflow")]
        [end] = events.of(CompactionEndEvent)
        retry = fake.call(2).messages
        assert retry == default_convert_to_llm(agent.messages[:-1])
        assert not any(isinstance(m, AssistantMessage) and m.error_message for m in retry)
        assert agent.messages[0] == end.summary
        assert failed not in agent.messages
        assert agent.state.error_message is None


def test_agent_ends_the_run_on_a_second_overflow() -> None:
    overflow = faux_assistant_message([], "error", OVERFLOW)
    with scripted_model([overflow, SUMMARY, overflow], model=small_model()) as fake:
        agent = Agent(fake.model, messages=HISTORY, auto_compact=SETTINGS)
        run = agent.prompt("next")
        events = record_events(run, timeout=5)
        assert run.error == OVERFLOW
        fake.assert_called(times=3)
    assert len(events.of(CompactionStartEvent)) == 1
    assert isinstance(agent.messages[0], CompactionSummaryMessage)


def test_agent_neither_compacts_nor_retries_after_other_errors() -> None:
    with scripted_model([faux_assistant_message([], "error", "500 internal error")],
                        model=small_model()) as fake:
        agent = Agent(fake.model, messages=HISTORY, auto_compact=SETTINGS)
        run = agent.prompt("next")
        events = record_events(run, timeout=5)
        assert run.error == "500 internal error"
        fake.assert_called(times=1)
    assert events.of(CompactionStartEvent) == []
    assert agent.messages[:-2] == HISTORY


def test_agent_leaves_an_overflow_standing_when_nothing_can_be_cut() -> None:
    overflow = faux_assistant_message([], "error", OVERFLOW)
    with scripted_model([overflow], model=small_model()) as fake:
        agent = Agent(fake.model, auto_compact=SETTINGS)
        run = agent.prompt("hello")
        events = record_events(run, timeout=5)
        assert run.error == OVERFLOW
        fake.assert_called(times=1)
    assert events.of(CompactionStartEvent) == []


def test_agent_failing_compaction_keeps_the_transcript_and_ends_the_run_in_error() -> None:
    failing = faux_assistant_message([], "error", "503 overloaded")
    with scripted_model([failing], model=small_model(1_000)) as fake:
        agent = Agent(fake.model, messages=HISTORY, auto_compact=SETTINGS)
        run = agent.prompt("next")
        events = record_events(run, timeout=5)
        fake.assert_called(times=1)  # the summary call; no reply was asked for
    assert run.error == "compaction failed: 503 overloaded"
    with pytest.raises(RunError, match="compaction failed: 503 overloaded"):
        run.raise_for_error()
    assert types(events.events) == [
        "agent_start", "turn_start", "message_start", "message_end", "compaction_start",
        "message_start", "message_end", "turn_end", "agent_end"]
    assert agent.messages[:-1] == [*HISTORY, agent.messages[-2]]
    assert agent.messages[-2] == UserMessage("next", timestamp=agent.messages[-2].timestamp)
    assert agent.state.error_message == "compaction failed: 503 overloaded"


def test_agent_aborted_while_compacting_ends_the_run_aborted() -> None:
    started = threading.Event()

    def slow_summary(context: Context, options: StreamOptions, model: Model) -> str:
        started.set()
        assert options.signal is not None
        options.signal.wait(5)
        return SUMMARY

    with scripted_model([slow_summary], model=small_model(1_000)) as fake:
        agent = Agent(fake.model, messages=HISTORY, auto_compact=SETTINGS)
        run = agent.prompt("next")
        assert started.wait(5)
        run.abort()
        run.result(timeout=5)
    final = agent.messages[-1]
    assert isinstance(final, AssistantMessage)
    assert final.stop_reason == "aborted"
    assert agent.messages[:len(HISTORY)] == HISTORY


def test_agent_without_auto_compact_sends_the_whole_transcript() -> None:
    with scripted_model(["done"], model=small_model(1_000)) as fake:
        agent = Agent(fake.model, messages=HISTORY)
        run = agent.prompt("next")
        events = record_events(run, timeout=5)
        assert fake.last_call.messages == [*HISTORY, agent.messages[-2]]
    assert events.of(CompactionStartEvent) == []


def test_agent_compaction_gives_the_summary_call_a_bounded_reply() -> None:
    with scripted_model([SUMMARY, "done"], model=small_model(1_000)) as fake:
        agent = Agent(fake.model, messages=HISTORY, auto_compact=SETTINGS, max_tokens=3_000,
                      api_key="secret")
        agent.prompt("next").raise_for_error()
        summary_call, reply_call = fake.calls
    assert summary_call.options.max_tokens == 160  # 80 % of reserve_tokens
    assert summary_call.options.api_key == "secret"
    assert reply_call.options.max_tokens == 3_000


def test_agent_compaction_summary_call_has_no_tool_choice_or_output_format() -> None:
    model = attrs.evolve(small_model(1_000), compat={"supports_native_output": True})
    with scripted_model([SUMMARY, '{"response": 7}'], model=model) as fake:
        agent = Agent(fake.model, messages=HISTORY, auto_compact=SETTINGS, tool_choice="auto")
        assert agent.prompt("next", output_type=int, output_mode="native").output == 7
        summary_call, reply_call = fake.calls
    assert (summary_call.options.tool_choice, summary_call.options.output_schema) == (None, None)
    assert reply_call.options.tool_choice == "auto"
    assert reply_call.options.output_schema is not None


def test_agent_compaction_replaces_the_sessions_transcript() -> None:
    if "session" not in attrs.fields_dict(Agent):
        pytest.skip("Agent(session=...) is not there yet")

    class MemorySession:
        def __init__(self, messages: list[AgentMessage]) -> None:
            self.stored = list(messages)
            self.replaced: list[list[AgentMessage]] = []

        def load(self) -> list[AgentMessage]:
            return list(self.stored)

        def append(self, messages: Sequence[AgentMessage]) -> None:
            self.stored.extend(messages)

        def replace(self, messages: Sequence[AgentMessage]) -> None:
            self.stored = list(messages)
            self.replaced.append(list(messages))

        def clear(self) -> None:
            self.stored = []

        def session_ids(self) -> list[str]:
            return ["default"]

    session = MemorySession(HISTORY)
    with scripted_model([SUMMARY, "done"], model=small_model(1_000)) as fake:
        agent = Agent(fake.model, auto_compact=SETTINGS, session=session)  # type: ignore[call-arg]
        agent.prompt("next").raise_for_error()
    [replaced] = session.replaced
    assert isinstance(replaced[0], CompactionSummaryMessage)
    assert session.stored == agent.messages == [*replaced, agent.messages[-1]]


# -- the loop's hook -------------------------------------------------------------------------


def test_before_model_call_replaces_the_run_context_and_emits_into_the_run() -> None:
    hook_calls: list[Any] = []
    events: list[AgentEvent] = []

    def before_model_call(call: Any, emit: Any, signal: Any) -> list[AgentMessage] | None:
        hook_calls.append(call)
        if len(hook_calls) > 1:
            return None
        emit(CompactionStartEvent("threshold"))
        return [user("short")]

    with scripted_model(["done"]) as fake:
        config = AgentLoopConfig(model=fake.model, before_model_call=before_model_call)
        context = AgentContext("sys", list(HISTORY))
        run_agent_loop([user("next")], context, config, events.append)
        assert fake.last_call.messages == [user("short")]
    [call] = hook_calls
    assert call.failed is None
    assert call.context.messages == [*HISTORY, user("next")]
    assert call.context.system_prompt == "sys"
    assert call.model == fake.model
    assert CompactionStartEvent("threshold") in events
    assert context.messages == HISTORY  # the caller's context is not mutated


def test_before_model_call_may_decline_to_retry_a_failed_reply() -> None:
    hook_calls: list[Any] = []

    def before_model_call(call: Any, emit: Any, signal: Any) -> None:
        hook_calls.append(call)

    failing = faux_assistant_message([], "error", OVERFLOW)
    with scripted_model([failing]) as fake:
        config = AgentLoopConfig(model=fake.model, before_model_call=before_model_call)
        new = run_agent_loop([user("hi")], AgentContext(), config, lambda e: None)
    assert hook_calls[0].failed is None
    failed = hook_calls[1].failed
    assert isinstance(failed, AssistantMessage)
    assert failed.error_message == OVERFLOW
    assert hook_calls[1].context.messages == [user("hi")]  # the failed reply left out
    assert new == [user("hi"), failed]


def test_before_model_call_must_take_three_arguments() -> None:
    with pytest.raises(TypeError, match=r"'before_model_call' must accept 3 argument"):
        AgentLoopConfig(model=small_model(), before_model_call=lambda call: None)
