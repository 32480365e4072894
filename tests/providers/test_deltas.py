"""`apply_deltas`: the framework parses JSON events once and reads plain deltas by template.

What `WireApi.deltas` makes of a body's events (issue 34): learned forms handed over as a
`Delta` of the chunk they were learned from, every other event parsed once (`Chunk`), chunks that
are no plain delta never learned, a string no template can read parsed with the parser's error,
and the end marker ending the items. That a handler treats a `Delta` exactly as its chunk is
`test_template.py`'s proof, on every fixture and on generated streams.
"""

from __future__ import annotations

import json
from typing import Any

import attrs
import pytest
from _internals import (
    Chunk,
    DeltaKind,
    Deltas,
    HttpClient,
    MockTransport,
    ServerSentEvent,
    UnframedLines,
    apply_deltas,
    stream_http_reply,
)

import agentcore as ac
from agentcore.providers import anthropic, openai_completions

COMPLETIONS = openai_completions._WIRE.deltas
DELTA = tuple  # a `Delta` is a plain tuple, `(kind, text, chunk)`


def chunk(delta: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """A Chat Completions chunk of one choice with `delta`; `extra` top-level or choice members."""
    choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": None}
    choice.update({k: v for k, v in extra.items() if k in ("finish_reason", "usage")})
    out = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1756400000,
           "model": "m", "choices": [choice]}
    out.update({k: v for k, v in extra.items() if k not in ("finish_reason", "usage")})
    return out


def event(value: Any, name: str | None = None) -> ServerSentEvent:
    return ServerSentEvent(name, json.dumps(value, separators=(",", ":")))


def text(content: str, pad: str = "") -> dict[str, Any]:
    return chunk({"content": content}, obfuscation=pad)


def arguments(args: str, index: int = 0) -> dict[str, Any]:
    return chunk({"tool_calls": [{"index": index, "function": {"arguments": args}}]})


def test_apply_deltas_hands_a_learned_form_over_as_a_delta_of_its_chunk() -> None:
    items = [event(text(t, pad="p" * n)) for n, t in enumerate("abcd")]
    out = list(apply_deltas(iter(items), COMPLETIONS))
    assert [type(item) for item in out] == [Chunk, Chunk, DELTA, DELTA]
    assert out[:2] == [Chunk(None, text("a", "")), Chunk(None, text("b", "p"))]
    assert out[2:] == [("text", "c", text("b", "p")), ("text", "d", text("b", "p"))]
    assert out[2][2] is out[1].data  # the chunk handed over before, as it was parsed


def test_apply_deltas_reads_each_kind_by_its_own_template() -> None:
    items = [event(text("a")), event(text("b")), event(arguments('{"x')),
             event(arguments('":')), event(arguments("1}")), event(text("c"))]
    out = list(apply_deltas(iter(items), COMPLETIONS))
    assert [type(item) for item in out] == [Chunk, Chunk, Chunk, Chunk, DELTA, DELTA]
    assert out[4:] == [("arguments", "1}", arguments('":')), ("text", "c", text("b"))]


NOT_PLAIN = [
    chunk({"content": "x"}, error={"message": "boom"}),
    chunk({"content": "x"}, object="error"),
    chunk({"content": "x"}, usage={"prompt_tokens": 1}),
    chunk({"content": "x"}, finish_reason="stop"),
    {**chunk({"content": "x"}), "choices": [{"index": 0, "delta": {"content": "x"},
                                             "usage": {"completion_tokens": 1}}]},
    {**chunk({"content": "x"}), "choices": [chunk({"content": "x"})["choices"][0]] * 2},
    {**chunk({"content": "x"}), "choices": []},
    chunk({"role": "assistant", "content": "x"}),
    chunk({"content": ["x"]}),
    chunk({"content": None}),
    chunk({"reasoning_content": "x"}),
    chunk({"tool_calls": [{"index": 0, "id": "call_1", "function": {"arguments": "{"}}]}),
    chunk({"tool_calls": [{"index": 0, "function": {"arguments": ""}}]}),
    chunk({"tool_calls": [{"index": 0, "function": {"name": "f"}}]}),
    chunk({"tool_calls": [{"index": 0, "function": {"arguments": "{"}}] * 2}),
    chunk({"tool_calls": ["x"]}),
    chunk({"tool_calls": [{"index": 0, "function": "x"}]}),
    chunk({"content": "x", "tool_calls": [{"index": 0, "function": {"arguments": "{"}}]}),
]


@pytest.mark.parametrize("value", NOT_PLAIN, ids=lambda v: json.dumps(v)[-60:])
def test_apply_deltas_never_learns_a_chunk_that_is_not_plain(value) -> None:
    assert not any(kind.plain(value) for kind in COMPLETIONS.kinds)
    out = list(apply_deltas(iter([event(value)] * 30), COMPLETIONS))
    assert out == [Chunk(None, value)] * 30
    assert {type(item) for item in out} == {Chunk}


def test_apply_deltas_never_learns_anthropic_data_that_does_not_name_its_kind() -> None:
    deltas = anthropic._WIRE.deltas
    untyped = {"index": 0, "delta": {"type": "text_delta", "text": "a"}}
    thinking = {"type": "content_block_delta", "index": 0,
                "delta": {"type": "thinking_delta", "thinking": "a"}}
    for value, name in [(untyped, "content_block_delta"), (thinking, None)]:
        out = list(apply_deltas(iter([event(value, name)] * 10), deltas))
        assert {type(item) for item in out} == {Chunk}
    typed = {"type": "content_block_delta", **untyped}
    out = list(apply_deltas(iter([event(typed, "content_block_delta")] * 3), deltas))
    assert out[2] == ("text", "a", typed)
    assert type(out[2]) is DELTA


def test_apply_deltas_asks_only_about_dicts_and_hands_the_rest_over() -> None:
    asked: list[Any] = []

    def plain(value: dict[str, Any]) -> bool:
        asked.append(value)
        return True

    deltas = Deltas((DeltaKind("text", ("t",), plain),), end="[DONE]")
    unframed = UnframedLines('{"error": {"message": "late"}}')
    items = [event([1]), ServerSentEvent("ping", ""), event(5, "n"), event({"t": "a"}),
             unframed, ServerSentEvent(None, "[DONE]"), ServerSentEvent(None, "{not json")]
    out = list(apply_deltas(iter(items), deltas))
    assert out == [Chunk(None, [1]), Chunk("n", 5), Chunk(None, {"t": "a"}), unframed]
    assert asked == [{"t": "a"}]  # nothing after the end marker is parsed


@pytest.mark.parametrize("bad", ["\x01", "\\q", "\\ud83d\\u", "\\"])
def test_apply_deltas_parses_a_string_no_template_reads_and_raises_the_parser_error(
        bad) -> None:
    good = [event(text(t)) for t in "abc"]
    broken = good[0].data.replace('"content":"a"', f'"content":"x{bad}"')
    with pytest.raises(json.JSONDecodeError) as raised:
        list(apply_deltas(iter([*good, ServerSentEvent(None, broken)]), COMPLETIONS))
    with pytest.raises(json.JSONDecodeError) as expected:
        json.loads(broken)
    assert str(raised.value) == str(expected.value)


def replay(wire: Any, body: bytes) -> ac.AssistantMessage:
    """The reply `wire` streams from `body`, over a `MockTransport` (its timestamp zeroed)."""
    model = ac.Model("m", "m", "openai-completions", "openai", "http://x/v1")
    client = HttpClient(MockTransport(lambda _: (200, {"Content-Type": "text/event-stream"},
                                                 [body[i : i + 61]
                                                  for i in range(0, len(body), 61)])))
    options = ac.StreamOptions(api_key="sk-test", http_client=client)
    reply = stream_http_reply(wire, model, ac.Context(None, [ac.UserMessage("hi")]),
                              options).result()
    return attrs.evolve(reply, timestamp=0)


def sse_body(*values: Any) -> bytes:
    return b"".join(b"data: " + (v if isinstance(v, bytes) else json.dumps(v).encode())
                    + b"\n\n" for v in values)


def test_stream_reads_text_by_template_as_it_would_parse_it() -> None:
    call = chunk({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                  "function": {"name": "f", "arguments": ""}}]})
    body = sse_body(text("a"), text("b"), text("c"), call, arguments('{"x":'),
                    arguments('1}'), arguments(""), text("d"), text("e"),
                    chunk({}, finish_reason="tool_calls"), b"[DONE]", b"{broken")
    without = attrs.evolve(openai_completions._WIRE,
                           deltas=attrs.evolve(COMPLETIONS, kinds=()))
    reply = replay(openai_completions._WIRE, body)
    assert reply == replay(without, body)
    assert reply.content == [ac.TextContent("abc"), ac.ToolCall("call_1", "f", {"x": 1}),
                             ac.TextContent("de")]  # text after the call: a new block
    assert reply.response_id == "chatcmpl-1"
    assert reply.stop_reason == ac.StopReason.TOOL_USE


def test_stream_with_a_bad_string_ends_with_the_parser_error() -> None:
    body = sse_body(text("a"), text("b"), text("c")).replace(b'"c"', b'"\\q"')
    without = attrs.evolve(openai_completions._WIRE,
                           deltas=attrs.evolve(COMPLETIONS, kinds=()))
    reply = replay(openai_completions._WIRE, body)
    assert reply == replay(without, body)
    assert reply.error_message is not None
    assert reply.error_message.startswith("invalid JSON from the provider: Invalid \\escape")
    assert reply.content == [ac.TextContent("ab")]
