"""`ReplyBuilder`: how every HTTP provider turns wire deltas into the event protocol.

It owns the one live partial message of a reply (its `content` list grows in place), opens and
closes text, thinking and tool-call blocks by a provider-chosen key, and produces the final
`done` or `error` event, so the four providers only translate their wire format.

Consuming a reply costs time linear in its bytes (API §10). Text grows without copying the text
so far (see `_grow`); a tool call's partial arguments are parsed again only when the argument
text has grown by a quarter (or is still short), and exactly once more, in full, when the call
closes.
"""

from __future__ import annotations

import enum
from collections.abc import Generator, Hashable, Iterable, Iterator
from typing import Any

import attrs

from ..._core import (
    AssistantContent,
    AssistantMessage,
    AssistantMessageEvent,
    DoneEvent,
    ErrorEvent,
    Model,
    StartEvent,
    StopReason,
    TextContent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ThinkingContent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    ToolCall,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
    Usage,
    calculate_cost,
    error_reply,
    now_ms,
    unchecked_constructor,
)
from ._partial_json import parse_arguments, parse_partial_json

__all__ = ["ReplyBuilder"]


class _Kind(enum.Enum):
    TEXT = "text"
    THINKING = "thinking"
    TOOL_CALL = "toolCall"


_TEXT, _THINKING, _TOOL_CALL = _Kind.TEXT, _Kind.THINKING, _Kind.TOOL_CALL
_NO_USAGE = Usage()  # frozen: every reply starts with it
_EAGER_ARGS = 1024
"""Argument text up to this many characters is parsed on every delta."""
_REPARSE_GROWTH = 4
"""Past that, it is parsed again once it has grown by 1/`_REPARSE_GROWTH` since the last parse:
the parses then cost about `_REPARSE_GROWTH + 1` times the final text, whatever the deltas."""


@attrs.define(eq=False)
class _Block:
    """The wire-side state of one content block while it streams.

    `index` is its place in the reply's `content`; `text` (text or thinking) or `args` (the
    tool call's argument JSON so far) accumulate deltas, and the content block is rebuilt from
    them. `spare` is `text` without its last delta `lag` (see `_grow`). `arguments` is the
    partial parse of the first `parsed` characters of `args` (the exact arguments once closed,
    `arguments_error` saying why they could not be read). `signature` is the text or thinking
    signature, `thought_signature` a tool call's.
    """

    index: int
    kind: _Kind
    text: str = ""
    spare: str = ""
    lag: str = ""
    signature: str | None = None
    redacted: bool = False
    call_id: str = ""
    name: str = ""
    args: str = ""
    parsed: int = 0
    arguments: dict[str, Any] = attrs.Factory(dict)
    arguments_error: str | None = None
    thought_signature: str | None = None
    closed: bool = False


class ReplyBuilder:
    """Builds one assistant reply; every method returns the events to yield, in order."""

    def __init__(self, model: Model, auto_close: bool = True) -> None:
        self.model = model
        self.auto_close = auto_close
        """Close the open block when another opens (False: blocks close only by `end`)."""
        self.content: list[AssistantContent] = []
        self.partial = AssistantMessage(self.content, model.api, model.provider, model.id,
                                        timestamp=now_ms())
        self.usage = _NO_USAGE
        self.stop_reason: StopReason | None = None
        self.response_id: str | None = None
        self._blocks: dict[Hashable, _Block] = {}
        self._current: _Block | None = None

    def text(
        self, key: Hashable, delta: str, signature: str | None = None
    ) -> Iterable[AssistantMessageEvent]:
        """Add `delta` to the text block `key`, opening it (and closing another) if needed."""
        block = self._current
        if block is not None and block.kind is _TEXT and self._blocks.get(key) is block:
            # the hot path: another delta for the open text block, one event, no generator;
            # `_grow` inlined
            text = block.spare
            block.spare = ""
            text += block.lag + delta
            block.spare, block.text, block.lag = block.text, text, delta
            if signature is not None:
                block.signature = signature
            kept = block.signature  # `_text_block` inlined
            self.content[block.index] = (_text(text, kept) if kept is None or kept.__class__ is str
                                         else TextContent(text, kept))
            return [TextDeltaEvent(block.index, delta, self.partial)] if delta else []
        return self._opening_text(key, delta, signature)

    def _opening_text(self, key: Hashable, delta: str,
                      signature: str | None) -> Iterator[AssistantMessageEvent]:
        block = yield from self._open(key, _TEXT)
        self._add_text(block, delta, signature)
        if delta:
            yield TextDeltaEvent(block.index, delta, self.partial)

    def _add_text(self, block: _Block, delta: str, signature: str | None) -> None:
        text = _grow(block, delta)
        if signature is not None:
            block.signature = signature
        self.content[block.index] = _text_block(text, block.signature)

    def thinking(self, key: Hashable, delta: str, signature: str | None = None,
                 redacted: bool = False) -> Iterable[AssistantMessageEvent]:
        """Add `delta` to the thinking block `key`, opening it if needed."""
        block = self._current
        if block is not None and block.kind is _THINKING and self._blocks.get(key) is block:
            # the hot path, as for text: another delta for the open thinking block
            self._add_thinking(block, delta, signature, redacted)
            return [ThinkingDeltaEvent(block.index, delta, self.partial)] if delta else []
        return self._opening_thinking(key, delta, signature, redacted)

    def _opening_thinking(self, key: Hashable, delta: str, signature: str | None,
                          redacted: bool) -> Iterator[AssistantMessageEvent]:
        block = yield from self._open(key, _THINKING)
        self._add_thinking(block, delta, signature, redacted)
        if delta:
            yield ThinkingDeltaEvent(block.index, delta, self.partial)

    def _add_thinking(self, block: _Block, delta: str, signature: str | None,
                      redacted: bool) -> None:
        text = _grow(block, delta)
        if signature is not None:
            block.signature = signature
        block.redacted = block.redacted or redacted
        self.content[block.index] = _thinking(text, block.signature, block.redacted)

    def tool_call(self, key: Hashable, call_id: str | None = None, name: str | None = None,
                  args_delta: str = "", always_emit: bool = False,
                  thought_signature: str | None = None) -> Iterator[AssistantMessageEvent]:
        """Add argument JSON to the tool call `key`, opening it if needed.

        The partial `arguments` of the call are parsed again only when the argument text is
        short or has grown enough (see `_REPARSE_GROWTH`); in between they are those of a
        shorter prefix.
        """
        block = yield from self._open(key, _TOOL_CALL, call_id=call_id or "", name=name or "")
        changed = False
        if call_id and call_id != block.call_id:
            block.call_id, changed = call_id, True
        if name and name != block.name:
            block.name, changed = name, True
        if thought_signature is not None and thought_signature != block.thought_signature:
            block.thought_signature, changed = thought_signature, True
        if args_delta:
            args = block.args
            block.args = ""  # the only reference left is `args`: CPython appends in place
            args += args_delta
            block.args = args
            size = len(args)
            if size <= _EAGER_ARGS or size - block.parsed >= block.parsed // _REPARSE_GROWTH:
                block.arguments, block.parsed, changed = parse_partial_json(args), size, True
        if changed:
            self.content[block.index] = self._call(block)
        if args_delta or always_emit:
            yield ToolCallDeltaEvent(block.index, args_delta, self.partial)

    def set_signature(self, key: Hashable, signature: str) -> None:
        """Attach a signature to block `key` (no event: signatures are not streamed)."""
        block = self._blocks.get(key)
        if block is None:
            return
        if block.kind is _TOOL_CALL:
            block.thought_signature = signature
            self.content[block.index] = self._call(block)
        else:
            block.signature = signature
            self._refresh(block)

    def text_delta_event(self, key: Hashable) -> list[AssistantMessageEvent]:
        """An empty `text_delta` for block `key` (Gemini's final empty part is one)."""
        block = self._blocks.get(key)
        if block is None or block.closed:
            return []
        return [TextDeltaEvent(block.index, "", self.partial)]

    def append_signature(self, key: Hashable, part: str) -> None:
        """Extend the signature of thinking block `key` (signatures stream in pieces)."""
        block = self._blocks.get(key)
        if block is not None and block.kind is _THINKING:
            block.signature = (block.signature or "") + part
            self._refresh(block)

    def replace_text(self, key: Hashable, text: str) -> None:
        """Set the whole text of block `key` (an authoritative final text from the server)."""
        block = self._blocks.get(key)
        if block is not None and block.kind is not _TOOL_CALL:
            block.text = block.spare = text
            block.lag = ""
            self._refresh(block)

    def replace_args(self, key: Hashable, args: str) -> None:
        """Set the whole argument JSON of tool call `key`."""
        block = self._blocks.get(key)
        if block is not None and block.kind is _TOOL_CALL:
            block.args = args
            if block.closed:
                block.arguments, block.arguments_error = parse_arguments(args)
            else:
                block.arguments = parse_partial_json(args)
            block.parsed = len(args)
            self.content[block.index] = self._call(block)

    def has(self, key: Hashable) -> bool:
        """Whether block `key` exists."""
        return key in self._blocks

    def end(self, key: Hashable) -> list[AssistantMessageEvent]:
        """Close block `key` (no-op if it is closed or unknown)."""
        block = self._blocks.get(key)
        if block is not None and not block.closed:
            return [self._close(block)]
        return []

    def end_all(self) -> list[AssistantMessageEvent]:
        """Close every open block, in order."""
        return [self._close(block) for block in sorted(self._blocks.values(),
                                                        key=lambda b: b.index)
                if not block.closed]

    @property
    def has_tool_calls(self) -> bool:
        """Whether the reply holds a tool call."""
        return any(b.kind is _TOOL_CALL for b in self._blocks.values())

    def start(self) -> StartEvent:
        """The `start` event (yield it once the server answered 2xx)."""
        return StartEvent(self.partial)

    def set_usage(self, usage: Usage) -> None:
        """Record usage; the total is recomputed as the sum and the cost is priced."""
        total = usage.input + usage.output + usage.cache_read + usage.cache_write
        if total != usage.total_tokens:
            usage = (Usage(usage.input, usage.output, usage.cache_read, usage.cache_write, total,
                           usage.cost) if usage.__class__ is Usage
                     else attrs.evolve(usage, total_tokens=total))
        self.usage = calculate_cost(self.model, usage)

    def done(self) -> Iterator[AssistantMessageEvent]:
        """Close open blocks and finish with `done`; raises if the stop reason is unknown."""
        yield from self.end_all()
        reason = self.stop_reason
        if reason is None:
            raise RuntimeError("the stream ended without a stop reason")
        if reason is StopReason.STOP and self.has_tool_calls:
            reason = StopReason.TOOL_USE
        if reason in (StopReason.ERROR, StopReason.ABORTED):
            raise RuntimeError(f"the provider ended the reply with stop reason {reason.value!r}")
        yield DoneEvent(reason, self.final(reason))

    def error(self, message: str, aborted: bool) -> ErrorEvent:
        """The terminal `error` event, keeping the content and usage received so far.

        An open tool call keeps the partial arguments of all its argument text.
        """
        for block in self._blocks.values():
            if block.kind is _TOOL_CALL and not block.closed and block.parsed != len(block.args):
                block.arguments, block.parsed = parse_partial_json(block.args), len(block.args)
                self.content[block.index] = self._call(block)
        reply = error_reply(self.model, message, aborted=aborted, content=self._kept())
        reply = attrs.evolve(reply, usage=self.usage, response_id=self.response_id,
                             timestamp=self.partial.timestamp)
        return ErrorEvent(reply.stop_reason, reply)

    def final(self, reason: StopReason) -> AssistantMessage:
        """The final message: a value of its own, no longer tied to the live partial."""
        partial = self.partial  # built here: `attrs.evolve` would walk its fields to copy them
        return AssistantMessage(self._kept(), partial.api, partial.provider, partial.model,
                                self.usage, reason, partial.error_message, self.response_id,
                                partial.timestamp)

    def _kept(self) -> list[AssistantContent]:
        """The content to keep: all but tool calls that never got an id or a name."""
        return [c for c in self.content if not _empty_call(c)]

    def _open(
        self, key: Hashable, kind: _Kind, **fields: Any
    ) -> Generator[AssistantMessageEvent, None, _Block]:
        """Block `key`, opening it if new.

        A generator, so a consumer sees the partial exactly as each event describes it: the
        old block closed, the new one still empty.
        """
        block = self._blocks.get(key)
        if block is not None and block.kind is kind:
            if not block.closed and self._current is not block:
                self._current = block
            return block
        if self.auto_close and self._current is not None and not self._current.closed:
            yield self._close(self._current)
        block = _Block(len(self.content), kind, **fields)
        self._blocks[key] = block
        self._current = block
        if kind is _TEXT:
            self.content.append(TextContent(""))
            yield TextStartEvent(block.index, self.partial)
        elif kind is _THINKING:
            self.content.append(ThinkingContent(""))
            yield ThinkingStartEvent(block.index, self.partial)
        else:
            self.content.append(self._call(block))
            yield ToolCallStartEvent(block.index, self.partial)
        return block

    def _call(self, block: _Block) -> ToolCall:
        # Rebuilt as the arguments stream in: without validators when the wire gave the types
        # they check (`.__class__`: a subclass, or anything else, takes them and their errors).
        signature, error = block.thought_signature, block.arguments_error
        if (block.call_id.__class__ is str and block.name.__class__ is str
                and block.arguments.__class__ is dict
                and (signature is None or signature.__class__ is str)
                and (error is None or error.__class__ is str)):
            return _tool_call(block.call_id, block.name, block.arguments, signature, error)
        return ToolCall(block.call_id, block.name, block.arguments, signature,
                        arguments_error=error)

    def _refresh(self, block: _Block) -> None:
        if block.kind is _TEXT:
            self.content[block.index] = _text_block(block.text, block.signature)
        else:
            self.content[block.index] = ThinkingContent(block.text, block.signature,
                                                        block.redacted)

    def _close(self, block: _Block) -> AssistantMessageEvent:
        block.closed = True
        if self._current is block:
            self._current = None
        block.spare = block.lag = ""  # no more deltas: free the spare copy of the text
        if block.kind is _TEXT:
            self._refresh(block)
            return TextEndEvent(block.index, block.text, self.partial)
        if block.kind is _THINKING:
            self._refresh(block)
            return ThinkingEndEvent(block.index, block.text, self.partial)
        block.arguments, block.arguments_error = parse_arguments(block.args)
        block.parsed = len(block.args)
        call = self._call(block)
        self.content[block.index] = call
        return ToolCallEndEvent(block.index, call, self.partial)


# Blocks rebuilt on every delta, built without their validators when the types are those they
# check (`unchecked_constructor`: the fields in order, their defaults for the rest).
_text = unchecked_constructor(TextContent)
_thinking_block = unchecked_constructor(ThinkingContent)
_tool_call = unchecked_constructor(ToolCall)


def _text_block(text: str, signature: str | None) -> TextContent:
    """The text block, without validators when the signature is a `str` or None.

    (A signature of another type from the wire, Gemini's `thoughtSignature` say, takes the
    validators and their error, as it does for thinking and tool calls.)
    """
    if signature is None or signature.__class__ is str:
        return _text(text, signature)
    return TextContent(text, signature)


def _thinking(text: str, signature: str | None, redacted: bool) -> ThinkingContent:
    """The thinking block, without validators when the types are those they check.

    The text is always a `str` (`_grow` concatenates); a signature or a redaction flag from the
    wire of another type takes the validators, and their error.
    """
    if (signature is None or signature.__class__ is str) and redacted.__class__ is bool:
        return _thinking_block(text, signature, redacted)
    return ThinkingContent(text, signature, redacted)


def _grow(block: _Block, delta: str) -> str:
    """Append `delta` to `block.text` and return the new text, in time linear in `delta`.

    `str` is immutable, so `text + delta` copies the text so far: quadratic over a long reply.
    CPython appends in place instead when the left operand's only reference is the local
    being assigned. The visible text cannot be that operand (the content block holds it, and a
    reader on another thread must never see the block without it), so the block keeps a second
    string, `spare`, equal to the text without its last delta `lag`: the spare, which nothing
    else references once the content block that showed it is replaced, takes `lag + delta` in
    place and becomes the new text; the old text becomes the spare. Where the spare is still
    referenced (someone kept an old content block), or on another interpreter, `+=` copies:
    slower, never wrong.
    """
    text = block.spare
    block.spare = ""
    text += block.lag + delta
    block.spare, block.text, block.lag = block.text, text, delta
    return text


def _empty_call(block: AssistantContent) -> bool:
    return isinstance(block, ToolCall) and not block.id and not block.name
