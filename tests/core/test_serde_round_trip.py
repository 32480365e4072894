"""`to_json` → `from_json` → `to_json` gives identical text for every value (API §17).

NaN and ±infinity have no strict-JSON spelling: `to_json` writes them as `null`, which reads
back as None. The second pass must write what the first wrote, whether the non-finite number is
a whole `details` (or `args`) or sits inside one, and whatever carries it: a message, a tool
result, an event, a hook's context or result, a transcript.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agentcore as ac
from agentcore import from_json, to_json

NON_FINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
PLACES: dict[str, Callable[[float], Any]] = {
    "top-level": lambda x: x,
    "in-a-dict": lambda x: {"score": x, "ok": 1.5},
    "in-a-list": lambda x: [x, 2],
    "deep": lambda x: {"runs": [{"scores": [0.5, x]}]},
}


def _reply(arguments: dict[str, Any]) -> ac.AssistantMessage:
    return ac.AssistantMessage([ac.ToolCall("c1", "t", arguments)], "api", "p", "m",
                               stop_reason="toolUse", timestamp=1)


def _result_message(details: Any) -> ac.ToolResultMessage:
    return ac.ToolResultMessage("c1", "t", [ac.TextContent("ok")], details=details, timestamp=1)


CARRIERS: dict[str, tuple[Any, Callable[[Any], Any]]] = {
    # name: (what from_json decodes, the value carrying `d` as its details or args)
    "ToolResultMessage": (ac.AgentMessage, _result_message),
    "AgentToolResult": (ac.AgentToolResult, lambda d: ac.AgentToolResult(details=d)),
    "AfterToolCallResult": (ac.AfterToolCallResult, lambda d: ac.AfterToolCallResult(details=d)),
    "ToolExecutionStartEvent": (ac.AgentEvent, lambda d: ac.ToolExecutionStartEvent("c1", "t", d)),
    "ToolExecutionUpdateEvent": (ac.AgentEvent, lambda d: ac.ToolExecutionUpdateEvent(
        "c1", "t", d, ac.AgentToolResult(details=d))),
    "ToolApprovalRequestEvent": (ac.AgentEvent, lambda d: ac.ToolApprovalRequestEvent(
        "c1", "t", d)),
    "ToolExecutionEndEvent": (ac.AgentEvent, lambda d: ac.ToolExecutionEndEvent(
        "c1", "t", ac.AgentToolResult(details=d), False)),
    "MessageStartEvent": (ac.AgentEvent, lambda d: ac.MessageStartEvent(_result_message(d))),
    "MessageEndEvent": (ac.AgentEvent, lambda d: ac.MessageEndEvent(_result_message(d))),
    "TurnEndEvent": (ac.AgentEvent, lambda d: ac.TurnEndEvent(
        _reply({"x": d}), [_result_message(d)])),
    "AgentEndEvent": (ac.AgentEvent, lambda d: ac.AgentEndEvent(
        [_reply({"x": d}), _result_message(d)])),
    "AgentContext": (ac.AgentContext, lambda d: ac.AgentContext("s", [_result_message(d)])),
    "BeforeToolCallContext": (ac.BeforeToolCallContext, lambda d: ac.BeforeToolCallContext(
        _reply({"x": d}), ac.ToolCall("c1", "t", {"x": d}), d, ac.AgentContext("s", []))),
    "AfterToolCallContext": (ac.AfterToolCallContext, lambda d: ac.AfterToolCallContext(
        _reply({"x": d}), ac.ToolCall("c1", "t", {"x": d}), d, ac.AgentToolResult(details=d),
        False, ac.AgentContext("s", [_result_message(d)]))),
    "transcript": (list[ac.AgentMessage], lambda d: [_reply({"x": d}), _result_message(d)]),
}


def _strict_loads(text: str) -> Any:
    def refuse(constant: str) -> Any:
        raise AssertionError(f"not strict JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


def _second_pass(kind: Any, text: str) -> str:
    return to_json(from_json(kind, text))


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("number", NON_FINITE)
@pytest.mark.parametrize("carrier", CARRIERS)
def test_to_json_of_non_finite_details_is_the_same_on_the_second_pass(
        carrier: str, number: str, place: str) -> None:
    kind, build = CARRIERS[carrier]
    first = to_json(build(PLACES[place](NON_FINITE[number])))

    _strict_loads(first)
    assert _second_pass(kind, first) == first


def test_to_json_leaves_out_a_top_level_non_finite_details_as_it_does_none() -> None:
    for number in NON_FINITE.values():
        assert to_json(_result_message(number)) == to_json(_result_message(None))
        assert to_json(ac.AgentToolResult(details=number)) == '{"content":[]}'
    assert to_json(_result_message([math.nan])).endswith(',"details":[null]}')


@pytest.mark.parametrize(
    ("text", "written"),
    [
        pytest.param("\ud800\udc00", "\U00010000", id="a-pair"),
        pytest.param("\ud83d\ude00!", "😀!", id="a-pair-then-text"),
        pytest.param("\ud83d\ud83d\ude00", "\\ud83d😀", id="lone-then-pair"),
        pytest.param("\ude00\ud83d", "\\ude00\\ud83d", id="low-then-high"),
    ],
)
def test_to_json_writes_a_surrogate_pair_as_the_character_it_spells(text: str,
                                                                     written: str) -> None:
    """json.loads reads two escapes back as one character: write that character at once."""
    first = to_json(ac.TextContent(text))

    assert first == f'{{"type":"text","text":"{written}"}}'
    assert _second_pass(ac.TextContent, first) == first


def test_round_trip_cases_cover_every_public_class_with_an_any_field() -> None:
    """A new value class with a `details`-like field must be added to `CARRIERS`."""
    not_values = {"Agent", "AgentLoopConfig", "AgentTool"}  # code, not data: never serialized
    found = set()
    for name in ac.__all__:
        cls = getattr(ac, name)
        if name in not_values or not (isinstance(cls, type) and attrs.has(cls)):
            continue
        if any(a.type in (Any, "Any") for a in attrs.fields(cls)):  # annotations are strings
            found.add(name)
    assert found <= set(CARRIERS), sorted(found - set(CARRIERS))


text = st.text(
    st.characters() | st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF,
                                    exclude_categories=()),
    max_size=6,
)
"""Text with surrogates too, lone or paired (as a provider's decoded escapes may be)."""

json_like = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4),
    max_leaves=16,
)
"""JSON-ish values whose floats include NaN, the infinities and -0.0."""


@pytest.mark.slow  # a stress test: over a second on an idle 2-core machine
@settings(deadline=None, database=None, max_examples=150)
@given(json_like, st.sampled_from(sorted(CARRIERS)))
def test_to_json_of_any_json_like_details_is_the_same_on_the_second_pass(
        details: Any, carrier: str) -> None:
    kind, build = CARRIERS[carrier]
    first = to_json(build(details))

    _strict_loads(first)
    assert _second_pass(kind, first) == first
