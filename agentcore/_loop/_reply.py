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
    AssistantMessage,
    AssistantMessageEvent,
    CircuitBreaker,
    Context,
    DoneEvent,
    ErrorEvent,
    EventStream,
    Message,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    Model,
    ModelFallbackEvent,
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
    Usage,
    default_convert_to_llm,
    describe,
    error_reply,
    unchecked_context,
)
from ..providers import StreamFn
from ._config import AgentLoopConfig, BeforeModelCall, BeforeModelCallContext
from ._exit import ABORT_GRACE_S
from ._fallback import falls_back, health, tried_text
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
    options: Callable[[Model], StreamOptions]  # a model's provider options (the run keeps them)
    stream_fn: StreamFn
    signal: AbortSignal
    halt: AbortSignal
    emit: Callable[[AgentEvent], None]  # the call's own events; raises `SinkError` ...
    hook_emit: Callable[[AgentEvent], None]  # ... and any event, for `before_model_call`
    new_messages: list[AgentMessage]
    limit: Callable[[], str | None] | None
    llm_only: bool
    trace: RunTrace | None = None
    breaker: CircuitBreaker | None = None  # None: no circuit is consulted (a breaker that is off)
    charge: Callable[[Usage], None] | None = None  # each attempt's usage, to the run's limits
    tripped: Callable[[], str | None] | None = None  # an input guardrail's trip (API §26)

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
        hook, limit = self.config.before_model_call, self.limit
        try:
            if self.halt.aborted:
                return self._finish(self._error_reply(ABORTED_TEXT))
            if failed is None and limit is not None and (reached := limit()):
                return self._finish(self._error_reply(reached))
            if hook is not None and not self._before_call(hook, failed):
                return None
            if failed is not None and limit is not None and (reached := limit()):
                return self._finish(self._error_reply(reached))
        except SinkError:
            raise
        except Exception as exc:  # a hook's, or a limit's
            _log.debug("before the model call", exc_info=True)
            return self._finish(self._error_reply(describe(exc)))
        return self._chain()

    def _chain(self) -> AssistantMessage:
        """The call on the run's model, then on each fallback model while they fail (API §24).

        A model whose circuit is open is skipped without a request. A failed attempt that had
        streamed output leaves the context again (its events told listeners so); the turn's
        reply is the first success, or the last failure, which then names every model tried.
        """
        models = (self.model, *self.config.fallback_models)
        breaker, limit, last = self.breaker, self.limit, len(models) - 1
        tried: list[tuple[Model, str]] = []
        context: Context | None = None
        for i, model in enumerate(models):
            if i and limit is not None and (reached := limit()):  # a fallback is a call too
                return self._finish(error_reply(model, reached))
            permit = breaker.permit(model) if breaker is not None else None
            if breaker is not None and permit is None:  # open: fail at once, no request
                reason = breaker.refusal(model)
                tried.append((model, reason))
                if i == last:
                    return self._finish(error_reply(model, _failed_text(tried)))
                self.emit(ModelFallbackEvent(None, models[i + 1], reason))
                continue
            try:
                if context is None:
                    try:
                        context = self._request_context()
                    except SinkError:
                        raise
                    except Exception as exc:  # a conversion hook's
                        _log.debug("building the model's context failed", exc_info=True)
                        return self._finish(error_reply(model, describe(exc)))
                final, shown = self._attempt(model, context)
                if permit is not None:
                    permit.settle(health(final))
            finally:  # a permit never settled (the sink raised) gives back a trial
                if permit is not None:
                    permit.settle(None)
            if self.charge is not None:
                self.charge(final.usage)
            if i == last or self.halt.aborted or not self._falls_back(final):
                if tried and final.stop_reason is StopReason.ERROR:
                    text = _failed_text([*tried, (model, final.error_message or "failed")])
                    final = attrs.evolve(final, error_message=text)
                return self._finish(final, shown)
            why = final.error_message or "failed"
            tried.append((model, why))
            if shown:  # not part of the transcript: the event tells listeners to drop it
                self.context.messages.pop()
            self.emit(ModelFallbackEvent(final, models[i + 1],
                                         f"{model.provider}/{model.id} failed: {why}"))
        raise AssertionError("unreachable: the last model's reply ends the chain")

    def _attempt(self, model: Model, context: Context) -> tuple[AssistantMessage, bool]:
        """Stream `model`'s reply into the context; the final message, and whether it streamed.

        While output streams, the partial reply is the context's last message (announced by a
        `message_start`); whatever fails becomes an error reply keeping the content so far.
        """
        partial: AssistantMessage | None = None
        final: AssistantMessage | None = None
        try:
            emit, messages = self.emit, self.context.messages
            for event in self._stream_events(model, context):
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
            final = error_reply(model, describe(exc), aborted=self.halt.aborted,
                                content=partial.content if partial else [])
        if self.tripped is not None and (text := self.tripped()) is not None:  # cut short
            final = error_reply(model, text, content=final.content)
        return final, partial is not None

    def _falls_back(self, reply: AssistantMessage) -> bool:
        """Whether the failed `reply` goes to the next model; a raising `fallback_on` says no."""
        try:
            return falls_back(reply, self.config.fallback_on)
        except Exception:
            _log.warning("fallback_on raised; the failed reply stands", exc_info=True)
            return False

    def _finish(self, final: AssistantMessage, shown: bool = False) -> AssistantMessage:
        """End the call with `final`: in place of its partial if one `shown`, else appended."""
        if shown:
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
            self.model, self.options(self.model), failed)
        replacement = hook(call, self.hook_emit, self.signal)
        if replacement is None:
            return failed is None
        self.context.messages = list(replacement)  # validated: a list of messages
        if not LLM_TYPES.issuperset(map(type, self.context.messages)):
            self.llm_only = False
        return True

    def _request_context(self) -> Context:
        """The context the provider gets: the run's messages converted (hooks get a copy)."""
        config = self.config
        messages: list[AgentMessage] = list(self.context.messages)
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
        tools = list(self.context.tools) or None
        return make_context(self.context.system_prompt, llm_messages, tools)  # type: ignore[arg-type]

    def _stream_events(self, model: Model, context: Context) -> Iterator[AssistantMessageEvent]:
        options = self.options(model)
        if self.trace is not None:
            self.trace.model_call(model, context)
        stream: Any = self.stream_fn(model, context, options)
        if isinstance(stream, EventStream):
            if stream.done():  # all there already (a scripted reply): nothing to wait for
                return iter(stream)
            return stream.iter_until(self.halt, ABORT_GRACE_S)  # closes a reply cut short
        return iter(stream)

    def _error_reply(self, text: str) -> AssistantMessage:
        return error_reply(self.model, text, aborted=self.halt.aborted)


def _failed_text(tried: list[tuple[Model, str]]) -> str:
    """One model's reason as it is; several models' reasons, each named (`tried_text`)."""
    return tried[0][1] if len(tried) == 1 else tried_text(tried)
