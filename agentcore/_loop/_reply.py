"""One model call of a run: its hook, the request, the reply streamed into the run's context.

A peer of `ToolBatch`: the run makes one `ModelCall` a turn, on the run's thread. Whatever
fails (the provider, a hook, a usage limit, an abort) becomes the reply, an assistant message
whose `stop_reason` is `error` or `aborted`; only the run's sink raising gets through.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import attrs

from .._core import (
    ABORTED_TEXT,
    LLM_TYPES,
    AbortSignal,
    AgentContext,
    AgentEvent,
    AgentMessage,
    AssistantContent,
    AssistantMessage,
    AssistantMessageEvent,
    Context,
    DoneEvent,
    ErrorEvent,
    EventStream,
    Message,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    Model,
    StartEvent,
    StopReason,
    StreamOptions,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
    default_convert_to_llm,
    describe,
    error_reply,
    unchecked_context,
)
from ..providers import StreamFn
from ._config import AgentLoopConfig, BeforeModelCall, BeforeModelCallContext
from ._exit import ABORT_GRACE_S
from ._observe import RunTrace

__all__ = ["ModelCall", "SinkError"]

_log = logging.getLogger(__name__)


_GROWTH = frozenset({TextStartEvent, TextDeltaEvent, TextEndEvent, ThinkingStartEvent,
                     ThinkingDeltaEvent, ThinkingEndEvent, ToolCallStartEvent, ToolCallDeltaEvent,
                     ToolCallEndEvent})
"""The classes of the events that only grow the reply: one set lookup, not an isinstance chain."""


class SinkError(Exception):
    """Carries what the caller's sink raised (its one argument) past the loop's own handlers."""


@attrs.define(eq=False)
class ModelCall:
    """The reply of one turn: streamed into `context` and added to `new_messages`.

    `signal` is what hooks get; `halt` stops the wait for the reply. `limit` says which usage
    limit the call would pass (None: go on, and the call is counted). `llm_only` says every
    message in the context is a plain LLM message, which spares the conversion; the run reads
    it back, since a `before_model_call` hook may replace the messages.
    """

    context: AgentContext
    config: AgentLoopConfig
    model: Model
    options: Callable[[], StreamOptions]  # the provider options, which the run keeps
    stream_fn: StreamFn
    signal: AbortSignal
    halt: AbortSignal
    emit: Callable[[AgentEvent], None]  # the call's own events; raises `SinkError` ...
    hook_emit: Callable[[AgentEvent], None]  # ... and any event, for `before_model_call`
    new_messages: list[AgentMessage]
    limit: Callable[[], str | None] | None
    llm_only: bool
    trace: RunTrace | None = None

    def reply(self) -> AssistantMessage:
        """Stream one reply into the context; an error reply is retried once if a hook asks.

        That is a `before_model_call` hook replacing the context (compaction after an overflow).
        """
        final = self._call(None)
        assert final is not None  # only a retry may be declined
        if (final.stop_reason == StopReason.ERROR and self.config.before_model_call is not None
                and not self.halt.aborted):
            final = self._call(final) or final
        return final

    def _call(self, failed: AssistantMessage | None) -> AssistantMessage | None:
        """One model call, its reply streamed into the context; None if `failed` is not retried."""
        partial: AssistantMessage | None = None
        final: AssistantMessage | None = None
        hook, limit = self.config.before_model_call, self.limit
        try:
            if self.halt.aborted:
                final = self._error_reply(ABORTED_TEXT)
            elif failed is None and limit is not None and (reached := limit()):
                final = self._error_reply(reached)
            elif hook is not None and not self._before_call(hook, failed):
                return None
            elif failed is not None and limit is not None and (reached := limit()):
                final = self._error_reply(reached)
            else:
                emit, messages = self.emit, self.context.messages
                for event in self._stream_events():
                    if type(event) not in _GROWTH:  # tested first: most events are growth
                        if isinstance(event, StartEvent):
                            partial = event.partial
                            messages.append(partial)
                            emit(MessageStartEvent(partial))
                            continue
                        if isinstance(event, DoneEvent):
                            final = event.message
                            break
                        if isinstance(event, ErrorEvent):
                            final = event.error
                            break
                    if partial is not None:  # a growth event, or another kind of one
                        partial = event.partial  # type: ignore[union-attr]
                        messages[-1] = partial
                        emit(MessageUpdateEvent(partial, event))
                if final is None:
                    raise RuntimeError("the model stream ended without a done or error event")
        except SinkError:
            raise
        except Exception as exc:
            _log.debug("model call failed", exc_info=True)
            final = self._error_reply(describe(exc), partial.content if partial else [])
        assert final is not None
        if partial is not None:
            self.context.messages[-1] = final
        else:
            self.context.messages.append(final)
            self.emit(MessageStartEvent(final))
        self.emit(MessageEndEvent(final))
        self.new_messages.append(final)
        return final

    def _before_call(self, hook: BeforeModelCall, failed: AssistantMessage | None) -> bool:
        """Run `before_model_call`; False when it leaves the `failed` reply standing."""
        messages = self.context.messages
        if failed is not None and messages and messages[-1] is failed:
            messages = messages[:-1]
        call = BeforeModelCallContext(
            AgentContext(self.context.system_prompt, list(messages), list(self.context.tools)),
            self.model, self.options(), failed)
        replacement = hook(call, self.hook_emit, self.signal)
        if replacement is None:
            return failed is None
        self.context.messages = list(replacement)  # validated: a list of messages
        if not LLM_TYPES.issuperset(map(type, self.context.messages)):
            self.llm_only = False
        return True

    def _stream_events(self) -> Iterator[AssistantMessageEvent]:
        config = self.config
        messages: list[AgentMessage] = list(self.context.messages)  # hooks get their own copy
        if self.llm_only:  # known plain: nothing to convert, nothing to check
            llm_messages: Sequence[Message] = messages  # type: ignore[assignment]
            make_context = unchecked_context
        else:
            if config.transform_context is not None:
                messages = list(config.transform_context(messages, self.signal))
            if config.convert_to_llm is default_convert_to_llm:  # needs no second check
                llm_messages = default_convert_to_llm(messages)
                make_context = unchecked_context
            else:
                llm_messages = list(config.convert_to_llm(messages))
                make_context = Context
        options = self.options()
        tools = list(self.context.tools) or None
        context = make_context(self.context.system_prompt, llm_messages, tools)  # type: ignore[arg-type]
        if self.trace is not None:
            self.trace.model_call(self.model, context)
        stream: Any = self.stream_fn(self.model, context, options)
        if isinstance(stream, EventStream):
            if stream.done():  # all there already (a scripted reply): nothing to wait for
                return iter(stream)
            return stream.iter_until(self.halt, ABORT_GRACE_S)  # closes a reply cut short
        return iter(stream)

    def _error_reply(self, text: str, content: Sequence[AssistantContent] = ()) -> AssistantMessage:
        return error_reply(self.model, text, aborted=self.halt.aborted, content=content)
