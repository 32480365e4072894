"""`ReplyBuilder`'s fast paths give exactly what its general paths give (issue 26).

The hot paths (another text or thinking delta for the open block, returned as a list) and the
blocks built without validators (the builder's `_text`, `_thinking_block` and `_tool_call`,
made by `unchecked_constructor`) are compared with a builder that always takes the generator
path and always validates, on generated sequences of every builder call, values of wrong types
included (a signature of the wrong type is refused by the validators on both paths).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs
import pytest
from _internals import ReplyBuilder, _builder
from hypothesis import given, settings
from hypothesis import strategies as st

import agentcore as ac
from agentcore import TextContent, ThinkingContent, ToolCall

MODEL = ac.Model("m", "m", "openai-completions", "openai", "http://x",
                 cost=ac.ModelCost(1.0, 2.0, 0.5, 0.25))


class General(ReplyBuilder):
    """The reference: every delta through `_open`'s generator, every block validated."""

    def text(self, key: Any, delta: str, signature: str | None = None) -> Iterable[Any]:
        return list(self._opening_text(key, delta, signature))

    def thinking(self, key: Any, delta: str, signature: str | None = None,
                 redacted: bool = False) -> Iterable[Any]:
        return list(self._opening_thinking(key, delta, signature, redacted))

    def _add_thinking(self, block: Any, delta: str, signature: str | None,
                      redacted: bool) -> None:
        text = _builder._grow(block, delta)
        if signature is not None:
            block.signature = signature
        block.redacted = block.redacted or redacted
        self.content[block.index] = ThinkingContent(text, block.signature, block.redacted)

    def _add_text(self, block: Any, delta: str, signature: str | None) -> None:
        text = _builder._grow(block, delta)
        if signature is not None:
            block.signature = signature
        self.content[block.index] = TextContent(text, block.signature)

    def _call(self, block: Any) -> ToolCall:
        return ToolCall(block.call_id, block.name, block.arguments, block.thought_signature,
                        arguments_error=block.arguments_error)


def fields(event: Any) -> dict[str, Any]:
    return {name: getattr(event, name) for name in event.__slots__
            if name not in ("__weakref__", "partial")}


def play(builder: ReplyBuilder, steps: list[tuple[Any, ...]]) -> list[Any]:
    """Run `steps` on `builder`: each call's events (fields and the partial as it was)."""
    seen: list[Any] = []
    for name, *args in steps:
        try:
            result = getattr(builder, name)(*args)
            events = list(result) if result is not None else []
        except Exception as exc:  # a wrong type, or what a builder left half-open does next
            seen.append(("raised", name, type(exc), str(exc)))
            continue
        seen.append([(e.type, fields(e), [(type(c), vars_of(c)) for c in e.partial.content])
                     for e in events])
    builder.stop_reason = ac.StopReason.STOP
    try:
        seen.append(list(builder.done()))
    except Exception as exc:
        seen.append(("raised", "done", type(exc), str(exc)))
    return seen


def vars_of(block: Any) -> tuple[Any, ...]:
    return tuple((name, getattr(block, name)) for name in block.__slots__
                 if name != "__weakref__")


keys = st.sampled_from(["a", "b", ("text", 0), 3])
deltas = st.sampled_from(["", "x", " yz", "é", '{"k": ', '1}', "\\"])
odd = st.sampled_from([None, "sig", 5, b"b", ["l"]])
step = st.one_of(
    st.tuples(st.just("text"), keys, deltas),
    st.tuples(st.just("text"), keys, deltas, odd),
    st.tuples(st.just("thinking"), keys, deltas),
    st.tuples(st.just("thinking"), keys, deltas, odd, st.sampled_from([False, True, 1])),
    st.tuples(st.just("tool_call"), keys, odd, odd, deltas),
    st.tuples(st.just("tool_call"), keys, st.none(), st.none(), deltas, st.booleans(), odd),
    st.tuples(st.just("end"), keys),
    st.tuples(st.just("set_signature"), keys, st.sampled_from(["s1", "s2"])),
    st.tuples(st.just("append_signature"), keys, st.sampled_from(["p", "q"])),
    st.tuples(st.just("replace_text"), keys, deltas),
    st.tuples(st.just("replace_args"), keys, deltas),
    st.tuples(st.just("text_delta_event"), keys),
)


@pytest.mark.slow  # 400 examples: over a second
@settings(max_examples=200, deadline=None)
@given(steps=st.lists(step, max_size=25), auto_close=st.booleans())
def test_builder_fast_paths_give_what_the_general_paths_give(steps, auto_close) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(_builder, "now_ms", lambda: 1756400000000)
        fast = play(ReplyBuilder(MODEL, auto_close), steps)
        general = play(General(MODEL, auto_close), steps)
    assert fast == general


def test_builder_thinking_hot_path_returns_one_event_per_delta() -> None:
    builder = ReplyBuilder(MODEL)
    opening = builder.thinking("t", "a", signature="reasoning_content")
    assert [e.type for e in opening] == ["thinking_start", "thinking_delta"]
    more = builder.thinking("t", "b")
    assert isinstance(more, list)
    assert [e.type for e in more] == ["thinking_delta"]
    assert builder.content == [ThinkingContent("ab", "reasoning_content")]


UNCHECKED = [
    (_builder._text, TextContent, {"text": "t", "text_signature": "s"}),
    (_builder._thinking_block, ThinkingContent,
     {"thinking": "t", "thinking_signature": "s", "redacted": True}),
    (_builder._tool_call, ToolCall, {"id": "c", "name": "f", "arguments": {"a": 1},
                                     "thought_signature": "sig", "arguments_error": "bad"}),
]


@pytest.mark.parametrize(("unchecked", "cls", "values"), UNCHECKED,
                         ids=lambda v: getattr(v, "__name__", ""))
def test_unchecked_blocks_equal_the_validated_ones(unchecked, cls, values) -> None:
    names = [field.name for field in attrs.fields(cls)]
    assert list(values) == names  # a value for every field, in order
    required = sum(field.default is attrs.NOTHING for field in attrs.fields(cls))

    def same(made: Any, expected: Any) -> None:
        assert type(made) is cls
        assert [getattr(made, n) for n in names] == [getattr(expected, n) for n in names]

    given_ = list(values.values())
    for count in range(required, len(names) + 1):  # the rest left to their defaults
        same(unchecked(*given_[:count]), cls(*given_[:count]))
    first = dict(list(values.items())[:required])
    for name in names[required:]:  # each field with a default given alone, by keyword
        same(unchecked(**first, **{name: values[name]}), cls(**first, **{name: values[name]}))
