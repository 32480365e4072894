"""Cross-provider handoff (`transform_messages`, spec §4) and the wire helpers `short_hash`,
`fitted_id` and `sanitize` (§3.8, §3.3)."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest
from _internals import (
    NO_RESULT_TEXT,
    dumps,
    fitted_id,
    is_same_model,
    sanitize,
    short_hash,
    transform_messages,
)
from hypothesis import given
from hypothesis import strategies as st

from agentcore import (
    AssistantMessage,
    ImageContent,
    Model,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

T = TextContent
PNG = ImageContent("aGk=", "image/png")
JPEG = ImageContent("aG8=", "image/jpeg")
USER_NOTE = "(image omitted: model does not support images)"
TOOL_NOTE = "(tool image omitted: model does not support images)"

TARGET = Model("gpt-5-mini", "GPT-5 mini", "openai-responses", "openai",
               "https://api.openai.com/v1", reasoning=True, input=["text", "image"])
TEXT_ONLY = Model("gpt-oss:20b", "gpt-oss", "openai-completions", "ollama",
                  "http://localhost:11434/v1", input=["text"])


def reply(content: list[Any], *, model: str = "gpt-5-mini", provider: str = "openai",
          api: str = "openai-responses", stop_reason: str = "stop") -> AssistantMessage:
    return AssistantMessage(content, api, provider, model, stop_reason=stop_reason, timestamp=1)


def foreign(content: list[Any], stop_reason: str = "stop") -> AssistantMessage:
    return reply(content, model="claude-sonnet-4-5", provider="anthropic",
                 api="anthropic-messages", stop_reason=stop_reason)


def result(call_id: str, content: list[Any] | None = None, name: str = "f",
           is_error: bool = False) -> ToolResultMessage:
    return ToolResultMessage(call_id, name, content if content is not None else [T("ok")],
                             is_error=is_error, timestamp=1)


def user(content: Any) -> UserMessage:
    return UserMessage(content, timestamp=1)


def no_result(call_id: str, name: str = "f") -> ToolResultMessage:
    return ToolResultMessage(call_id, name, [T(NO_RESULT_TEXT)], is_error=True, timestamp=0)


def strip_times(messages: list[Any]) -> list[Any]:
    """Synthetic results carry the current time; compare them without it."""
    out = []
    for message in messages:
        if isinstance(message, ToolResultMessage) and message.text == NO_RESULT_TEXT:
            message = ToolResultMessage(message.tool_call_id, message.tool_name,
                                        message.content, is_error=message.is_error, timestamp=0)
        out.append(message)
    return out


def bar(call_id: str, _: AssistantMessage) -> str:
    """A normaliser that changes every id it sees (so renames are visible)."""
    return call_id.replace("|", "_").replace(".", "_")[:10]


# --- same model -----------------------------------------------------------------------------------


def test_transform_same_model_messages_are_untouched() -> None:
    own = reply([ThinkingContent("", '{"type":"reasoning","id":"rs_1"}'),
                 ThinkingContent("[Reasoning redacted]", "opaque", redacted=True),
                 ThinkingContent("  "),  # kept too: a same-model message is not rebuilt
                 T("hi", '{"v":1,"id":"msg_1"}'),
                 ToolCall("call_1|fc_1", "f", {"a": 1}, thought_signature="sig")],
                stop_reason="toolUse")
    messages = [user("hi"), own, result("call_1|fc_1")]
    out = transform_messages(messages, TARGET, bar)
    assert out == messages
    assert all(a is b for a, b in zip(out, messages, strict=True))  # the very same objects


def test_transform_same_model_needs_provider_api_and_id() -> None:
    assert is_same_model(reply([]), TARGET)
    assert not is_same_model(reply([], model="gpt-5"), TARGET)
    assert not is_same_model(reply([], provider="azure-openai-responses"), TARGET)
    assert not is_same_model(reply([], api="openai-completions"), TARGET)


# --- another model --------------------------------------------------------------------------------


def test_transform_foreign_thinking_becomes_plain_text() -> None:
    out = transform_messages([user("q"), foreign([ThinkingContent("Let me think.", "sig"),
                                                  T("Answer.")])], TARGET)
    assert out[1] == foreign([T("Let me think."), T("Answer.")])
    assert "<thinking>" not in out[1].text


@pytest.mark.parametrize("block", [
    ThinkingContent("[Reasoning redacted]", "opaque-data", redacted=True),
    ThinkingContent("", "sig"),
    ThinkingContent(" \n\t "),
    ThinkingContent("", '{"type":"reasoning","id":"rs_1","encrypted_content":"gAAA"}'),
])
def test_transform_foreign_redacted_or_empty_thinking_is_dropped(block) -> None:
    out = transform_messages([foreign([block, T("x")])], TARGET)
    assert out == [foreign([T("x")])]


def test_transform_same_provider_other_model_is_foreign_too() -> None:
    other = reply([ThinkingContent("hm", '{"type":"reasoning"}'), T("x", '{"v":1,"id":"m"}')],
                  model="gpt-5")
    assert transform_messages([other], TARGET) == [reply([T("hm"), T("x")], model="gpt-5")]


def test_transform_foreign_text_signatures_are_dropped() -> None:
    out = transform_messages([foreign([T("a", '{"v":1,"id":"msg_1"}'), T("b", "gsig")])], TARGET)
    assert out[0].content == [T("a"), T("b")]


def test_transform_foreign_tool_call_loses_its_thought_signature() -> None:
    call = ToolCall("toolu_1", "f", {"a": 1}, thought_signature="gsig")
    out = transform_messages([foreign([call], "toolUse"), result("toolu_1")], TARGET)
    assert out == [foreign([ToolCall("toolu_1", "f", {"a": 1})], "toolUse"), result("toolu_1")]


def test_transform_ids_are_normalised_and_results_follow() -> None:
    seen: list[tuple[str, AssistantMessage]] = []

    def normalize(call_id: str, message: AssistantMessage) -> str:
        seen.append((call_id, message))
        return bar(call_id, message)

    source = foreign([ToolCall("call.1|fc_1", "f"), ToolCall("keep", "g")], "toolUse")
    out = transform_messages([user("q"), source, result("call.1|fc_1"), result("keep", name="g"),
                              user("next")], TARGET, normalize)
    assert out == [user("q"),
                   foreign([ToolCall("call_1_fc_", "f"), ToolCall("keep", "g")], "toolUse"),
                   result("call_1_fc_"), result("keep", name="g"), user("next")]
    assert seen == [("call.1|fc_1", source), ("keep", source)]


def test_transform_without_a_normaliser_ids_are_kept() -> None:
    source = foreign([ToolCall("call.1|fc_1", "f")], "toolUse")
    out = transform_messages([source, result("call.1|fc_1")], TARGET)
    assert out == [source, result("call.1|fc_1")]


def test_transform_same_model_ids_are_not_normalised() -> None:
    own = reply([ToolCall("call.1|fc_1", "f")], stop_reason="toolUse")
    assert transform_messages([own, result("call.1|fc_1")], TARGET, bar) == [
        own, result("call.1|fc_1")]


# --- failed turns and orphans ---------------------------------------------------------------------


@pytest.mark.parametrize("stop_reason", ["error", "aborted"])
def test_transform_failed_turns_are_dropped_with_their_results(stop_reason) -> None:
    failed = reply([T("partial"), ToolCall("call_1|fc_1", "f")], stop_reason=stop_reason)
    messages = [user("q"), failed, result("call_1|fc_1"), user("retry")]
    assert transform_messages(messages, TARGET) == [user("q"), user("retry")]


def test_transform_failed_foreign_turn_is_dropped_too() -> None:
    messages = [user("q"), foreign([ToolCall("toolu_1", "f")], "error"), result("toolu_1")]
    assert transform_messages(messages, TARGET, bar) == [user("q")]


def test_transform_orphaned_calls_get_a_synthetic_result_before_the_next_user_message() -> None:
    calls = reply([ToolCall("c1", "f"), ToolCall("c2", "g"), ToolCall("c3", "h")],
                  stop_reason="toolUse")
    out = transform_messages([user("q"), calls, result("c2", name="g"), user("stop")], TARGET)
    assert strip_times(out) == [user("q"), calls, result("c2", name="g"), no_result("c1", "f"),
                                no_result("c3", "h"), user("stop")]


def test_transform_orphaned_calls_are_settled_before_the_next_assistant_message() -> None:
    first = reply([ToolCall("c1", "f")], stop_reason="toolUse")
    second = reply([T("moving on")])
    out = transform_messages([user("q"), first, second], TARGET)
    assert strip_times(out) == [user("q"), first, no_result("c1"), second]


def test_transform_orphaned_calls_are_settled_before_a_failed_turn() -> None:
    first = reply([ToolCall("c1", "f")], stop_reason="toolUse")
    out = transform_messages([first, reply([T("x")], stop_reason="error")], TARGET)
    assert strip_times(out) == [first, no_result("c1")]


def test_transform_orphaned_calls_at_the_end_get_a_synthetic_result() -> None:
    calls = reply([ToolCall("c1", "f"), ToolCall("c2", "g")], stop_reason="toolUse")
    out = transform_messages([user("q"), calls, result("c1")], TARGET)
    assert strip_times(out) == [user("q"), calls, result("c1"), no_result("c2", "g")]
    synthetic = out[-1]
    assert isinstance(synthetic, ToolResultMessage)
    assert (synthetic.is_error, synthetic.text) == (True, "No result provided")


def test_transform_synthetic_results_use_normalised_ids() -> None:
    source = foreign([ToolCall("call.1|fc_1", "f")], "toolUse")
    out = transform_messages([source], TARGET, bar)
    assert strip_times(out) == [foreign([ToolCall("call_1_fc_", "f")], "toolUse"),
                                no_result("call_1_fc_")]


def test_transform_answered_calls_get_no_synthetic_result() -> None:
    calls = reply([ToolCall("c1", "f")], stop_reason="toolUse")
    messages = [user("q"), calls, result("c1"), reply([T("done")])]
    assert transform_messages(messages, TARGET) == messages


def test_transform_results_without_a_pending_call_are_dropped() -> None:
    calls = reply([ToolCall("c1", "f")], stop_reason="toolUse")
    out = transform_messages([result("stray"), calls, result("c1"), result("other")], TARGET)
    assert out == [calls, result("c1")]


# --- images for a text-only model -----------------------------------------------------------------


def test_transform_user_images_become_one_note_per_run() -> None:
    message = user([T("look"), PNG, JPEG, T("and"), PNG])
    out = transform_messages([message], TEXT_ONLY)
    assert out == [user([T("look"), T(USER_NOTE), T("and"), T(USER_NOTE)])]


def test_transform_tool_result_images_become_one_note_per_run() -> None:
    calls = reply([ToolCall("c1", "shot")], model="gpt-oss:20b", provider="ollama",
                  api="openai-completions", stop_reason="toolUse")
    out = transform_messages([calls, result("c1", [PNG, JPEG, T("caption")], "shot")], TEXT_ONLY)
    assert out == [calls, result("c1", [T(TOOL_NOTE), T("caption")], "shot")]


def test_transform_images_are_kept_for_an_image_model() -> None:
    calls = reply([ToolCall("c1", "shot")], stop_reason="toolUse")
    messages = [user([T("look"), PNG]), calls, result("c1", [PNG], "shot")]
    out = transform_messages(messages, TARGET)
    assert all(a is b for a, b in zip(out, messages, strict=True))


def test_transform_string_user_content_is_kept_for_a_text_only_model() -> None:
    message = user("plain")
    assert transform_messages([message], TEXT_ONLY)[0] is message


def test_transform_messages_without_images_pass_a_text_only_model_as_they_are() -> None:
    calls = reply([ToolCall("c1", "f")], model="gpt-oss:20b", provider="ollama",
                  api="openai-completions", stop_reason="toolUse")
    messages = [user([T("look"), T("here")]), calls, result("c1", [T("a"), T("b")])]
    out = transform_messages(messages, TEXT_ONLY)
    assert all(a is b for a, b in zip(out, messages, strict=True))


# --- the input ------------------------------------------------------------------------------------


def test_transform_does_not_mutate_its_input() -> None:
    messages = [user([T("look"), PNG]),
                foreign([ThinkingContent("t", "s"), ToolCall("call.1|fc_1", "f", {"a": [1]},
                                                              thought_signature="g")], "toolUse"),
                result("call.1|fc_1", [PNG]),
                reply([ToolCall("c2", "f")], stop_reason="toolUse"),
                reply([T("x")], stop_reason="aborted")]
    before = copy.deepcopy(messages)
    out = transform_messages(messages, TEXT_ONLY, bar)
    assert messages == before  # neither the list nor any content list changed
    assert out is not messages
    again = transform_messages(tuple(messages), TEXT_ONLY, bar)  # any sequence will do
    assert strip_times(again) == strip_times(out)
    assert len(out) == 5  # user, assistant, result, assistant, synthetic result


def test_transform_empty_transcript() -> None:
    assert transform_messages([], TARGET) == []


# --- short_hash -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "digest"), [
    # Values from the implementation, cross-checked with the reference's JavaScript algorithm.
    ("", "k4n83c7h0j2b"),
    ("hello", "1h6qa0qrowduu"),
    ("café \U0001F600", "aqhq258518xp"),  # hashed over UTF-16 code units
])
def test_short_hash_values(text, digest) -> None:
    assert short_hash(text) == digest


def test_short_hash_properties() -> None:
    texts = [f"msg_{i:03d}" + "x" * i for i in range(200)]
    digests = [short_hash(t) for t in texts]
    assert digests == [short_hash(t) for t in texts]  # stable
    assert len(set(digests)) == len(texts)  # different inputs differ
    for digest in digests:
        assert re.fullmatch(r"[0-9a-z]{2,14}", digest)
    assert short_hash("\U0001F600") == short_hash("\ud83d\ude00")  # a pair is the same units
    assert short_hash("ab") != short_hash("ba")


# --- fitted_id ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("call_id", "fitted"), [
    ("call_1", "call_1"),  # valid: kept
    ("t" * 64, "t" * 64),
    ("call/1", "call_1_jrwkvm1h7lo5d"),  # a safe prefix, then a hash of the whole id
    ("call#1", "call_1_6diepek1rfny"),
    ("", "_k4n83c7h0j2b"),
])
def test_fitted_id_values(call_id: str, fitted: str) -> None:
    assert fitted_id(call_id) == fitted


@given(st.lists(st.text(max_size=90), min_size=2, max_size=8, unique=True),
       st.integers(20, 64))
def test_fitted_id_keeps_distinct_ids_distinct_and_valid(ids: list[str], limit: int) -> None:
    fitted = [fitted_id(i, limit) for i in ids]
    assert len(set(fitted)) == len(ids)
    assert all(re.fullmatch(rf"[A-Za-z0-9_-]{{1,{limit}}}", f) for f in fitted)
    assert fitted == [fitted_id(i, limit) for i in ids]  # the same every time


# --- sanitize -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "clean"), [
    ("a\ud83db", "ab"),  # lone high surrogate
    ("\udc00x", "x"),  # lone low surrogate
    ("x\ud83d", "x"),  # high surrogate at the end
    ("\ude00\ud83d", ""),  # a pair in the wrong order is two lone halves
    ("\ud83d\ude00", "\U0001F600"),  # a valid pair becomes the emoji
    ("\ud83d\ud83d\ude00\ude00", "\U0001F600"),
    ("hi \ud83d\ude00 and \ud83d", "hi \U0001F600 and "),
])
def test_sanitize_surrogates(text, clean) -> None:
    assert sanitize(text) == clean
    clean.encode("utf-8")  # what the wire needs


@pytest.mark.parametrize("text", ["", "plain text", "héllo wörld \U0001F600 ✓", "x" * 10_000])
def test_sanitize_returns_clean_text_itself(text) -> None:
    assert sanitize(text) is text


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20)


@given(value=json_values)
def test_dumps_is_compact_json_dumps_with_lone_surrogates_escaped(value: Any) -> None:
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    expected = re.sub("[\ud800-\udfff]", lambda m: f"\\u{ord(m.group()):04x}", text)
    assert dumps(value) == expected
