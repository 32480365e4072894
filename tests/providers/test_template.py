"""`DeltaReader`: deltas read by a learned template are exactly what parsing gives (issue 26).

Two levels: the template itself (what it matches parses to the learned chunk but for the cuts,
on generated chunks and on mutated texts), and each handler whose `WireApi.deltas` names kinds
of plain delta, whose events and partials must be those of the same handler without those kinds
(every chunk parsed and read member by member), on every fixture and on generated streams mixing
every kind of chunk (issue 34: the framework applies the readers, `apply_deltas`).
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable, Iterator
from typing import Any

import attrs
import paths
import pytest
from _internals import (
    DeltaReader,
    ReplyBuilder,
    ServerSentEvent,
    SSEDecoder,
    _builder,
    _deltas,
    _template,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import agentcore as ac
from agentcore.providers import anthropic, openai_completions

CONTENT = ("choices", 0, "delta", "content")
FIXTURES = paths.FIXTURES


def chunk_text(content: str, *, obfuscation: str | None = None, ascii_only: bool = True,
               created: int = 1756400000, spaced: bool = False) -> str:
    chunk: dict[str, Any] = {
        "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": created,
        "model": "gpt-4o-mini", "choices": [{"index": 0, "delta": {"content": content},
                                             "logprobs": None, "finish_reason": None}],
        "usage": None}
    if obfuscation is not None:
        chunk["obfuscation"] = obfuscation
    separators = (", ", ": ") if spaced else (",", ":")
    return json.dumps(chunk, ensure_ascii=ascii_only, separators=separators)


def learned(text: str, path: tuple[Any, ...] = CONTENT,
            ignored: tuple[str, ...] = ("obfuscation",)) -> DeltaReader:
    reader = DeltaReader(path, ignored)
    for _ in range(2):  # the first plain delta is parsed only
        reader.learn(text, json.loads(text))
    assert reader.read is not _template._no_template
    return reader


def without_cuts(value: dict[str, Any], path: tuple[Any, ...],
                 ignored: tuple[str, ...]) -> dict[str, Any]:
    value = copy.deepcopy(value)
    place = value
    for step in path[:-1]:
        place = place[step]
    place[path[-1]] = None
    for name in ignored:
        value.pop(name, None)
    return value


def check_match(reader: DeltaReader, learned_from: str, text: str) -> str | None:
    """`reader.read(text)`, checked against `json.loads(text)` when it matched."""
    delta = reader.read(text)
    if delta is not None:
        parsed = json.loads(text)  # a match is valid JSON...
        place = parsed
        for step in reader.path:
            place = place[step]
        assert place == delta  # ...whose delta is what was read
        assert without_cuts(parsed, reader.path, reader.ignored) == without_cuts(
            json.loads(learned_from), reader.path, reader.ignored)
    return delta


strings = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)


@given(first=strings, second=strings, obfuscation=st.none() | st.tuples(strings, strings),
       ascii_only=st.booleans(), spaced=st.booleans())
def test_template_reads_any_delta_of_the_learned_form(first, second, obfuscation, ascii_only,
                                                      spaced) -> None:
    pads = obfuscation or (None, None)
    text = chunk_text(first, obfuscation=pads[0], ascii_only=ascii_only, spaced=spaced)
    other = chunk_text(second, obfuscation=pads[1], ascii_only=ascii_only, spaced=spaced)
    reader = learned(text)
    assert check_match(reader, text, other) == second


@settings(max_examples=150)
@given(content=strings, edits=st.lists(st.tuples(st.integers(0, 400), st.sampled_from(
    ['"', "\\", "x", "", "}", ",", "\n", "\x01", "\\u00e9", "\\ud800", " ", "0", "1.5"])),
    min_size=1, max_size=3), drop=st.booleans())
def test_template_matches_only_what_parses_to_the_learned_form(content, edits, drop) -> None:
    text = chunk_text("hello", obfuscation="abc")
    reader = learned(text)
    other = chunk_text(content, obfuscation="xyz")
    for position, insert in edits:
        position = min(position, len(other))
        other = other[:position] + insert + other[position + (1 if drop else 0):]
    check_match(reader, text, other)


def test_template_refuses_a_text_that_is_not_json() -> None:
    reader = learned(chunk_text("a"))
    for text in [chunk_text("b") + " ", chunk_text("b")[:-1], chunk_text("b").replace(
            '"content":"b"', '"content":"b\x01"'), chunk_text("b").replace(
            '"content":"b"', '"content":"b\\q"'), "[DONE]", ""]:
        assert check_match(reader, chunk_text("a"), text) is None


def test_template_other_forms_are_not_matched() -> None:
    reader = learned(chunk_text("a"))
    base = json.loads(chunk_text("b"))
    variants = [
        {**base, "usage": {"prompt_tokens": 1}},
        {**base, "created": 1756400001},
        {**base, "obfuscation": "pad"},
        {**base, "choices": [{**base["choices"][0], "finish_reason": "stop"}]},
        {**base, "choices": [{**base["choices"][0], "delta": {"content": "b", "role": "x"}}]},
    ]
    for variant in variants:
        assert reader.read(json.dumps(variant, separators=(",", ":"))) is None
    assert reader.read(json.dumps(base, separators=(",", ":"))) == "b"


def not_learned(text: str) -> bool:
    reader = DeltaReader(CONTENT, ("obfuscation",))
    for _ in range(3):
        reader.learn(text, json.loads(text))
    return reader.read is _template._no_template


def test_template_is_not_learned_where_a_cut_could_not_be_proven() -> None:
    text = chunk_text("same")
    # the delta's value under the same name before the delta: the first cut found is wrong
    assert not_learned(json.dumps({"content": "same", **json.loads(text)}))
    # two names in the delta, the last wins: the first cut found is the one that loses
    assert not_learned(text.replace('"delta":{"content":"same"}',
                                    '"delta":{"content":"same","content":"same"}'))
    # a value that is the sentinel itself proves nothing
    assert not_learned(chunk_text(_template._SENTINEL.format(0)))
    # the same value after the delta is no trouble
    tricky = {**json.loads(text), "content": "same"}
    reader = learned(json.dumps(tricky, separators=(",", ":")))
    assert reader.read(json.dumps({**tricky, "choices": [{**tricky["choices"][0], "delta": {
        "content": "new"}}]}, separators=(",", ":"))) == "new"


def test_reader_learns_after_two_deltas_and_gives_up_on_forms_that_never_repeat() -> None:
    reader = DeltaReader(CONTENT, ("obfuscation",))
    first = chunk_text("a")
    reader.learn(first, json.loads(first))
    assert reader.read(chunk_text("b")) is None  # one delta: not worth a template
    reader.learn(first, json.loads(first))
    assert reader.read(chunk_text("b")) == "b"
    changing = DeltaReader(CONTENT)
    learns = 0
    original = _template._learn

    def counting(*args: Any) -> Any:
        nonlocal learns
        learns += 1
        return original(*args)

    _template._learn = counting  # type: ignore[assignment]
    try:
        for n in range(200):  # `created` differs in every chunk: the form never repeats
            text = chunk_text("x", created=n)
            assert changing.read(text) is None
            changing.learn(text, json.loads(text))
    finally:
        _template._learn = original
    assert learns <= 2


# --- handlers: the readers change nothing ------------------------------------------------------


def handled(module: Any, builder: ReplyBuilder, items: list[Any],
            reference: bool = False) -> Iterator[Any]:
    """The module's handler on `items` as the framework feeds it: with its kinds of plain delta,
    or (`reference`) without any, so that every chunk is parsed and read member by member."""
    deltas = module._WIRE.deltas
    if reference:
        deltas = attrs.evolve(deltas, kinds=())
    return module._handle(builder, _deltas.apply_deltas(iter(items), deltas))


def run(module: Any, items: list[Any], reference: bool,
        chunks: list[bytes] | None = None) -> list[Any]:
    """Every event's fields and a copy of the partial's content as it was, then the outcome."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(_builder, "now_ms", lambda: 1756400000000)
        model = ac.Model("m", "m", "openai-completions", "openai", "http://x",
                         cost=ac.ModelCost(1.0, 2.0))
        builder = ReplyBuilder(model, module._WIRE.auto_close)
        seen: list[Any] = []
        if chunks is not None:
            decoder = SSEDecoder()
            items = [item for chunk in chunks for item in decoder.feed(chunk)]
            items += decoder.end()
        try:
            for event in handled(module, builder, items, reference):
                fields = {k: v for k, v in vars_of(event).items() if k != "partial"}
                seen.append((event.type, fields, list(event.partial.content)))
            seen += [("done", list(builder.done()))]
        except Exception as exc:
            seen.append(("raised", type(exc), str(exc)))
        seen.append(builder.usage)
        return seen


def vars_of(event: Any) -> dict[str, Any]:
    return {name: getattr(event, name) for name in event.__slots__ if name != "__weakref__"}


COMPLETIONS_FIXTURES = sorted([*FIXTURES.glob("openai_completions/*.sse"),
                               *FIXTURES.glob("mistral/*.sse"), *FIXTURES.glob("azure/chat_*")])


@pytest.mark.parametrize("path", COMPLETIONS_FIXTURES, ids=lambda p: p.name)
def test_completions_handler_with_reader_is_the_handler_without(path) -> None:
    body = path.read_bytes()
    events = body.split(b"\n\n")
    # the fixture's text chunks repeated, so that the reader learns and reads
    middle = [e for e in events if b'"content":"' in e and b"finish_reason\":null" in e][1:]
    longer = b"\n\n".join([*events[:3], *middle * 5, *events[3:]])
    for stream in (body, longer):
        chunks = [stream[i : i + 97] for i in range(0, len(stream), 97)]
        assert run(openai_completions, [], True, chunks) == run(
            openai_completions, [], False, chunks)


def completions_stream(kinds: list[int], texts: list[str], rng: random.Random) -> list[Any]:
    """Chat Completions chunks of every kind, in the order `kinds` says."""
    out = []
    for kind, text in zip(kinds, texts, strict=False):
        choice: dict[str, Any] = {"index": 0, "delta": {"content": text}, "logprobs": None,
                                  "finish_reason": None}
        chunk: dict[str, Any] = {"id": "c1", "object": "chat.completion.chunk",
                                 "created": 1756400000 + (kind == 1), "choices": [choice]}
        if kind == 2:
            choice["delta"] = {"role": "assistant", "content": text}
        elif kind == 3:
            choice["delta"] = {"reasoning_content": text or "r"}
        elif kind == 4:
            choice["delta"] = {"tool_calls": [{"index": 0, "id": "call_1", "function": {
                "name": "f", "arguments": '{"a":'}}]}
        elif kind == 5:
            chunk["usage"] = {"prompt_tokens": 3, "completion_tokens": 4}
        elif kind == 6:
            choice["finish_reason"] = "stop"
        elif kind == 7:
            chunk["obfuscation"] = "x" * rng.randint(0, 4)
        elif kind == 8:
            choice["delta"] = {"content": [{"type": "text", "text": text or "t"}]}
        elif kind in (10, 11):  # a new call at wire index 0 or 1
            choice["delta"] = {"tool_calls": [{"index": kind - 10, "id": f"call_{rng.random()}",
                                               "function": {"name": "g", "arguments": ""}}]}
        elif kind in (12, 13):  # more argument text for the call at wire index 0 or 1
            choice["delta"] = {"tool_calls": [{"index": kind - 12, "function": {
                "arguments": text}}]}
        elif kind == 15:  # usage in the choice, as some servers send it
            choice["usage"] = {"prompt_tokens": 2, "completion_tokens": len(text)}
        elif kind == 14:  # llama-cpp-python's: the name again in every argument chunk
            choice["delta"] = {"tool_calls": [{"index": 0, "function": {
                "name": "g", "arguments": text}}]}
        separators = (", ", ": ") if kind == 9 else (",", ":")
        out.append(ServerSentEvent(None, json.dumps(chunk, separators=separators,
                                                    ensure_ascii=rng.random() < 0.5)))
    return [*out, ServerSentEvent(None, "[DONE]")]


@settings(max_examples=100, deadline=None)
@given(kinds=st.lists(st.sampled_from([0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 7, 8, 9, 10, 11, 12, 12,
                                       12, 13, 13, 14, 15]), max_size=30),
       texts=st.lists(st.sampled_from(["", "a", " b", "é", '"q"', "\\", "\n", "日本"]),
                      min_size=30, max_size=30), seed=st.integers(0, 99))
def test_completions_handler_with_reader_on_any_stream(kinds, texts, seed) -> None:
    items = completions_stream(kinds, texts, random.Random(seed))
    assert run(openai_completions, items, False) == run(openai_completions, items, True)


ANTHROPIC_FIXTURES = sorted(FIXTURES.glob("anthropic/*.sse"))


@pytest.mark.parametrize("path", ANTHROPIC_FIXTURES, ids=lambda p: p.name)
def test_anthropic_handler_with_reader_is_the_handler_without(path) -> None:
    body = path.read_bytes()
    events = body.split(b"\n\n")
    texts = [e for e in events if b'"text_delta"' in e]
    at = events.index(texts[-1]) if texts else len(events)
    longer = b"\n\n".join([*events[:at], *texts * 4, *events[at:]])
    for stream in (body, longer):
        chunks = [stream[i : i + 89] for i in range(0, len(stream), 89)]
        assert run(anthropic, [], True, chunks) == run(anthropic, [], False, chunks)


def anthropic_stream(steps: list[tuple[int, int]], texts: list[str]) -> list[Any]:
    """Anthropic events: three text blocks started, then deltas (and stops) in any order."""
    def event(data: dict[str, Any]) -> ServerSentEvent:
        return ServerSentEvent(data["type"], json.dumps(data, separators=(",", ":")))

    out = [event({"type": "message_start", "message": {"id": "msg_1", "usage": {
        "input_tokens": 5, "output_tokens": 1}}})]
    out += [event({"type": "content_block_start", "index": i, "content_block": {
        "type": "text", "text": ""}}) for i in range(3)]
    for (action, index), text in zip(steps, texts, strict=False):
        if action == 0:
            out.append(event({"type": "content_block_delta", "index": index,
                              "delta": {"type": "text_delta", "text": text}}))
        elif action == 1:
            out.append(event({"type": "content_block_stop", "index": index}))
        else:
            out.append(event({"type": "content_block_delta", "index": index,
                              "delta": {"type": "text_delta", "text": text, "extra": 1}}))
    out.append(event({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                      "usage": {"output_tokens": 9}}))
    return out


@settings(max_examples=100, deadline=None)
@given(steps=st.lists(st.tuples(st.sampled_from([0, 0, 0, 0, 1, 2]), st.integers(0, 2)),
                      max_size=30),
       texts=st.lists(st.sampled_from(["", "a", " b", "é", '"q"', "\\", "\n"]), min_size=30,
                      max_size=30))
def test_anthropic_handler_with_reader_on_any_stream(steps, texts) -> None:
    items = anthropic_stream(steps, texts)
    assert run(anthropic, items, False) == run(anthropic, items, True)


@pytest.mark.parametrize("name", ["ping", "error", "message_stop"])
def test_anthropic_handler_data_without_type_is_read_by_its_event_name(name) -> None:
    # A proxy's data may leave `type` out: the event's name says the kind. Data of a learned
    # text delta's form under another event's name is that event, not one more text delta.
    def event(event_name: str, data: dict[str, Any]) -> ServerSentEvent:
        return ServerSentEvent(event_name, json.dumps(data, separators=(",", ":")))

    def delta(text: str) -> dict[str, Any]:
        return {"index": 0, "delta": {"type": "text_delta", "text": text}}

    items = [event("message_start", {"message": {"id": "msg_1", "usage": {"input_tokens": 5}}}),
             event("content_block_start", {"index": 0, "content_block": {"type": "text"}}),
             *[event("content_block_delta", delta(text)) for text in "abcdef"],
             event(name, delta("not text")),
             event("content_block_delta", delta("g")),
             event("message_delta", {"delta": {"stop_reason": "end_turn"}})]
    assert run(anthropic, items, False) == run(anthropic, items, True)


def test_completions_handler_reads_parallel_calls_arguments_as_without_reader() -> None:
    rng = random.Random(7)
    opens = [10, *[12] * 10, 11, *[13] * 12, *[12, 13] * 6, 14, 14, 14, 10, *[12] * 9]
    texts = ['{"a', '": "', "x\\\"", "é", "1", "}", "[", "2, ", "null", "]"] * 6
    items = completions_stream(opens, texts, rng)
    assert run(openai_completions, items, False) == run(openai_completions, items, True)
    readers: list[DeltaReader] = []

    class Recording(DeltaReader):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            readers.append(self)

    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(_deltas, "DeltaReader", Recording)
        run(openai_completions, items, False)
    arguments = readers[1]
    assert arguments._learned >= 2  # both calls' forms, read by template in turn
    assert arguments._template is not None
    assert arguments._template.hits > 0


def test_completions_handler_reads_the_benchmark_reply_by_template(monkeypatch) -> None:
    readers: list[DeltaReader] = []

    class Recording(DeltaReader):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            readers.append(self)

    monkeypatch.setattr(_deltas, "DeltaReader", Recording)
    texts = [f" word{n}" for n in range(40)]
    items = [ServerSentEvent(None, chunk_text(t, obfuscation="p" * (n % 7)))
             for n, t in enumerate(texts)]
    model = ac.Model("m", "m", "openai-completions", "openai", "http://x")
    builder = ReplyBuilder(model)
    events = list(handled(openai_completions, builder, items))
    assert "".join(e.delta for e in events if e.type == "text_delta") == "".join(texts)
    assert readers[0]._template is not None
    assert readers[0]._template.hits == 38  # all but two: learned from the second plain delta


def _unused(_: Callable[..., Iterator[Any]]) -> None:  # keeps the imports honest for mypy
    return None
