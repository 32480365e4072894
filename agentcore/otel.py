"""Tracing with OpenTelemetry: a span for every run, model call and tool call.

Needs the `otel` extra (`pip install 'agentcore[otel]'`, which installs `opentelemetry-api`);
exporting the spans needs an SDK too (`opentelemetry-sdk`, or a vendor's distribution)::

    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor
    from agentcore.otel import instrument

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter()))
    uninstrument = instrument(provider)  # every run from now on is traced
    ...
    uninstrument()

The spans follow the OpenTelemetry semantic conventions for generative AI:

- `invoke_agent`, one per run, a child of the span current where the run was started (an
  `Agent`'s `prompt`/`continue_`): `gen_ai.operation.name`, `gen_ai.provider.name`,
  `gen_ai.request.model`, the run's total `gen_ai.usage.input_tokens`/`.output_tokens`.
- `chat {model id}`, one per model call, a child of the run's span, from just before the
  request to the end of the reply: `gen_ai.request.model`, `gen_ai.response.model`,
  `gen_ai.response.id`, `gen_ai.usage.input_tokens` (`input + cache_read + cache_write`; the
  cached ones also as `gen_ai.usage.cache_read.input_tokens` and `...cache_creation...`),
  `gen_ai.usage.output_tokens`, `gen_ai.response.finish_reasons` (`"stop"`, `"length"`,
  `"tool_call"`, `"error"`, `"aborted"`); current on the run's thread while the reply streams
  (an instrumented HTTP client's spans nest under it).
- `execute_tool {tool name}`, one per tool call, a child of the run's span although the call
  runs on a worker thread: `gen_ai.tool.name`, `gen_ai.tool.call.id`, `gen_ai.tool.type`. The
  span is current on that worker while the tool runs, so the spans of an agent run inside a
  tool nest under it.

Decisions on tool calls that need a person's approval (API §20) are agentcore's own
attributes (the conventions have none):

- `agentcore.tool.approval.decision` on an `execute_tool` span: `"approved"` or `"denied"`
  (absent for a call that needed no approval). A denied call never ran; its span has the
  status ERROR, like any call whose result is an error for the model, with `error.type`
  `"denied"` (not `"tool_error"`), so that denials can be told apart from tools that failed.
  Its reason, `agentcore.tool.approval.reason`, is recorded with `capture_content=True` only
  (the model reads it in the call's result, `denied: <reason>`).
- On the `invoke_agent` span, a span event `agentcore.tool.approval.request` (attributes
  `gen_ai.tool.name` and `gen_ai.tool.call.id`) for each call that waits for approval, when
  the run asks; and, for a run that ends with calls still waiting for a decision (no
  `approve` callback: the run stops until `continue_(approvals=...)`), the attribute
  `agentcore.tool.approval.waiting_call_ids`, the ids of those calls. The run that resumes
  them records the decisions on the tools' spans.

Fallbacks (API §24): a failed `chat` span given up for the next model has
`agentcore.fallback.next_model`; the next one's, `agentcore.fallback.attempt` and
`agentcore.fallback.circuit_open_skipped`; `invoke_agent`, an event `agentcore.model_fallback`,
and one `agentcore.guardrail_tripped` per trip (`agentcore.guardrail.kind` and `.name`).

A tool call with an error result, a reply with `stop_reason` `"error"` or `"aborted"`, and a
run that ends with such a reply, is aborted, or raises, get the status ERROR (and an
`error.type`). Message contents are recorded only with `capture_content=True`, as span
attributes holding JSON (the conventions' `gen_ai.system_instructions`,
`gen_ai.input.messages` and `gen_ai.output.messages` on the run's and the model calls' spans,
`gen_ai.tool.call.arguments` and `gen_ai.tool.call.result` on the tools' spans); images are
recorded by their MIME type only. Without it no text of the conversation leaves the process:
an error status then describes a failed tool call only as failed.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ._core import (
    AgentEndEvent,
    AgentEvent,
    AgentMessage,
    AgentToolResult,
    AssistantMessage,
    GuardrailTrippedEvent,
    ImageContent,
    MessageEndEvent,
    Model,
    ModelFallbackEvent,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolApprovalMessage,
    ToolApprovalRequestEvent,
    ToolCall,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolResultMessage,
    Usage,
    UserMessage,
    __version__,
    describe,
)
from ._core import Context as LlmContext
from ._loop import RunStart, observe

if TYPE_CHECKING:
    from contextvars import Token

    from opentelemetry.context import Context
    from opentelemetry.trace import Span, Tracer, TracerProvider

__all__ = ["instrument"]

MISSING_EXTRA = "agentcore.otel needs the 'otel' extra: pip install 'agentcore[otel]'"

_PROVIDER_NAMES = {
    "google": "gcp.gemini", "google-vertex": "gcp.vertex_ai", "amazon-bedrock": "aws.bedrock",
    "azure-openai": "azure.ai.openai", "mistral": "mistral_ai", "xai": "x_ai",
}
"""agentcore's provider names that the conventions spell otherwise (`gen_ai.provider.name`)."""

_FINISH_REASONS = {StopReason.TOOL_USE: "tool_call"}
"""Stop reasons whose conventional finish reason differs from their wire value."""

_FAILED = (StopReason.ERROR, StopReason.ABORTED)


def instrument(
    tracer_provider: TracerProvider | None = None, *, capture_content: bool = False
) -> Callable[[], None]:
    """Trace every agent run started from now on; return the function that stops it.

    Args:
        tracer_provider: Where the spans go; by default OpenTelemetry's global provider
            (`opentelemetry.trace.set_tracer_provider`), looked up as each span starts.
        capture_content: Also record the system prompt, the messages, and the tool calls'
            arguments and results (as JSON span attributes). Off by default: they may hold
            personal or secret data.

    Returns:
        `uninstrument()`: runs started after it are no longer traced (runs under way finish
        their spans). Calling it again does nothing.

    Raises:
        ImportError: `opentelemetry-api` is not installed (the `otel` extra).
    """
    try:
        from opentelemetry import trace
    except ImportError as exc:
        raise ImportError(MISSING_EXTRA) from exc
    tracer = trace.get_tracer("agentcore", __version__, tracer_provider)
    return observe(functools.partial(_RunSpans, tracer, capture_content))


class _RunSpans:
    """The spans of one run; every method runs on the run's thread (see `RunTrace`).

    The run's span is current on the run's thread from start to end, the model call's span
    while its reply streams; both are detached there, innermost first.
    """

    def __init__(self, tracer: Tracer, capture: bool, start: RunStart) -> None:
        from opentelemetry import context, trace

        self._tracer, self._capture, self._signal = tracer, capture, start.signal
        self._attach, self._detach = context.attach, context.detach
        self._in_span = trace.set_span_in_context
        self._client, self._internal = trace.SpanKind.CLIENT, trace.SpanKind.INTERNAL
        model = start.model
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.provider.name": _PROVIDER_NAMES.get(model.provider, model.provider),
            "gen_ai.request.model": model.id,
        }
        if capture:
            if start.context.system_prompt:
                attributes["gen_ai.system_instructions"] = _system(start.context.system_prompt)
            if start.prompts:
                attributes["gen_ai.input.messages"] = _messages(start.prompts)
        self._span = tracer.start_span("invoke_agent", kind=self._internal,
                                       attributes=attributes)
        self._context: Context = self._in_span(self._span)
        self._token = self._attach(self._context)
        self._chat: Span | None = None
        self._chat_token: Token[Context] | None = None
        self._tools: dict[str, list[Span]] = {}
        self._decisions: dict[str, str | None] = {}  # call id -> None approved, else reason
        self._denied: set[int] = set()  # id() of the spans of denied calls (until they end)
        self._waiting: dict[str, None] = {}  # ids of calls asked about and not yet decided
        self._usage = Usage()
        self._last: AssistantMessage | None = None
        # Each message's JSON, by id (the message is kept, so the id stays its own): every
        # model call sends the whole transcript again, and encoding it anew each time made
        # a long run's turns cost O(n) json.dumps work each.
        self._encoded: dict[int, tuple[AgentMessage, str]] = {}
        self._fallbacks = self._skipped = 0  # models given up in the turn; skipped (§24)

    def event(self, event: AgentEvent) -> None:
        if isinstance(event, MessageEndEvent):
            if isinstance(event.message, AssistantMessage):
                if self._chat is not None:
                    self._end_chat(event.message)
                self._fallbacks = self._skipped = 0  # the turn's chain of models has ended
            elif isinstance(event.message, ToolApprovalMessage):
                self._decided(event.message)
        elif isinstance(event, ToolApprovalRequestEvent):
            self._waiting[event.tool_call_id] = None
            self._span.add_event("agentcore.tool.approval.request", {
                "gen_ai.tool.name": event.tool_name, "gen_ai.tool.call.id": event.tool_call_id})
        elif isinstance(event, ToolExecutionStartEvent):
            self._start_tool(event)
        elif isinstance(event, ToolExecutionEndEvent):
            self._end_tool(event)
        elif isinstance(event, ModelFallbackEvent):
            self._fallback(event)
        elif isinstance(event, GuardrailTrippedEvent):  # API §26 (its reason: the error's)
            self._span.add_event("agentcore.guardrail_tripped", {"agentcore.guardrail.kind":
                                 event.kind, "agentcore.guardrail.name": event.name})
        elif isinstance(event, AgentEndEvent):
            self._last = next((m for m in reversed(event.messages)
                               if isinstance(m, AssistantMessage)), None)

    def _fallback(self, event: ModelFallbackEvent) -> None:
        """A model given up for the next: its span ends failed, the run's span notes it."""
        to, failed = f"{event.model.provider}/{event.model.id}", event.failed
        self._fallbacks, self._skipped = self._fallbacks + 1, self._skipped + (failed is None)
        if failed is not None and self._chat is not None:  # (skipped ones made no span)
            self._chat.set_attribute("agentcore.fallback.next_model", to)
            self._end_chat(failed)
        self._span.add_event("agentcore.model_fallback", {
            "agentcore.fallback.next_model": to, "agentcore.fallback.reason": event.reason,
            "agentcore.fallback.circuit_open": failed is None})

    def model_call(self, model: Model, context: LlmContext) -> None:
        if self._chat is not None:  # a reply that never ended: not expected, but never leak
            self._fail_open_chat()
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": _PROVIDER_NAMES.get(model.provider, model.provider),
            "gen_ai.request.model": model.id,
        }
        if self._fallbacks:  # a fallback model, taking the turn over (API §24)
            attributes["agentcore.fallback.attempt"] = self._fallbacks
            attributes["agentcore.fallback.circuit_open_skipped"] = self._skipped
        if self._capture:
            if context.system_prompt:
                attributes["gen_ai.system_instructions"] = _system(context.system_prompt)
            attributes["gen_ai.input.messages"] = self._input(context.messages)
        self._chat = span = self._tracer.start_span(
            f"chat {model.id}", self._context, kind=self._client, attributes=attributes)
        self._chat_token = self._attach(self._in_span(span, self._context))

    def tool_work(self, tool_call_id: str, work: Callable[[], None]) -> Callable[[], None]:
        spans = self._tools.get(tool_call_id)
        if not spans:
            return work
        context = self._in_span(spans[-1], self._context)
        attach, detach = self._attach, self._detach

        def traced() -> None:
            token = attach(context)
            try:
                work()
            finally:
                detach(token)

        return traced

    def end(self, error: BaseException | None) -> None:
        if self._chat is not None:
            self._fail_open_chat()
        for spans in self._tools.values():
            for span in spans:
                _fail(span, "the run ended before the tool call did", "incomplete")
                span.end()
        self._tools.clear()
        span, last = self._span, self._last
        span.set_attributes(_usage(self._usage))
        if self._waiting:
            span.set_attribute("agentcore.tool.approval.waiting_call_ids", list(self._waiting))
        if self._capture and last is not None:
            span.set_attribute("gen_ai.output.messages", _messages([last], final=True))
        if error is not None:
            span.record_exception(error)
            _fail(span, describe(error), type(error).__qualname__)
        elif last is not None and last.stop_reason in _FAILED:
            _fail(span, last.error_message or last.stop_reason.value, last.stop_reason.value)
        elif self._signal.aborted:
            _fail(span, f"aborted: {self._signal.reason}", StopReason.ABORTED.value)
        self._detach(self._token)
        span.end()

    def _input(self, messages: Sequence[AgentMessage]) -> str:
        """`_messages(messages)`, each message encoded once in the run."""
        encoded, parts = self._encoded, []
        for message in messages:
            hit = encoded.get(id(message))
            if hit is None or hit[0] is not message:
                item = _message(message)
                hit = encoded[id(message)] = (message, "" if item is None else _json(item))
            if hit[1]:
                parts.append(hit[1])
        return f"[{', '.join(parts)}]"

    def _close_chat(self) -> Span:
        """The model call's span, no longer current (the caller ends it)."""
        span, token = self._chat, self._chat_token
        assert span is not None
        assert token is not None
        self._chat = self._chat_token = None
        self._detach(token)
        return span

    def _end_chat(self, message: AssistantMessage) -> None:
        span = self._close_chat()
        self._usage += message.usage
        attributes = _usage(message.usage)
        attributes["gen_ai.response.model"] = message.model
        attributes["gen_ai.response.finish_reasons"] = [
            _FINISH_REASONS.get(message.stop_reason, message.stop_reason.value)]
        if message.response_id is not None:
            attributes["gen_ai.response.id"] = message.response_id
        if self._capture:
            attributes["gen_ai.output.messages"] = _messages([message], final=True)
        span.set_attributes(attributes)
        if message.stop_reason in _FAILED:
            _fail(span, message.error_message or message.stop_reason.value,
                  message.stop_reason.value)
        span.end()

    def _fail_open_chat(self) -> None:
        span = self._close_chat()
        _fail(span, "the run ended before the reply did", "incomplete")
        span.end()

    def _decided(self, message: ToolApprovalMessage) -> None:
        """Keep the decisions for the spans of the calls they decide (which start next)."""
        for call_id in message.approved:
            self._decisions[call_id] = None
            self._waiting.pop(call_id, None)
        for call_id, reason in message.denied.items():
            self._decisions[call_id] = reason
            self._waiting.pop(call_id, None)

    def _start_tool(self, event: ToolExecutionStartEvent) -> None:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": event.tool_name,
            "gen_ai.tool.call.id": event.tool_call_id,
            "gen_ai.tool.type": "function",
        }
        if self._capture:
            attributes["gen_ai.tool.call.arguments"] = _json(event.args)
        # a call asked about but never decided (the run was aborted meanwhile) waits no more
        self._waiting.pop(event.tool_call_id, None)
        decided = event.tool_call_id in self._decisions
        reason = self._decisions.pop(event.tool_call_id, None)  # an id a later turn reuses
        if decided:
            attributes["agentcore.tool.approval.decision"] = (
                "approved" if reason is None else "denied")
            if reason is not None and self._capture:
                attributes["agentcore.tool.approval.reason"] = reason
        span = self._tracer.start_span(f"execute_tool {event.tool_name}", self._context,
                                       kind=self._internal, attributes=attributes)
        self._tools.setdefault(event.tool_call_id, []).append(span)
        if reason is not None:
            self._denied.add(id(span))

    def _end_tool(self, event: ToolExecutionEndEvent) -> None:
        spans = self._tools.get(event.tool_call_id)
        if not spans:
            return
        span = spans.pop(0)  # a model repeating an id: its calls end in some order, all end
        if not spans:
            del self._tools[event.tool_call_id]
        result = event.result
        if self._capture and isinstance(result, AgentToolResult):
            span.set_attribute("gen_ai.tool.call.result", _result_text(result.content or []))
        if event.is_error:
            denied = id(span) in self._denied
            text = "the call was denied" if denied else "the tool call failed"
            if self._capture and isinstance(result, AgentToolResult):
                text = _result_text(result.content or [])
            _fail(span, text, "denied" if denied else "tool_error")
        self._denied.discard(id(span))
        span.end()


def _fail(span: Span, description: str, error_type: str) -> None:
    from opentelemetry.trace import Status, StatusCode

    span.set_attribute("error.type", error_type)
    span.set_status(Status(StatusCode.ERROR, description))


def _usage(usage: Usage) -> dict[str, Any]:
    attributes = {"gen_ai.usage.input_tokens": usage.input + usage.cache_read + usage.cache_write,
                  "gen_ai.usage.output_tokens": usage.output}
    if usage.cache_read:
        attributes["gen_ai.usage.cache_read.input_tokens"] = usage.cache_read
    if usage.cache_write:
        attributes["gen_ai.usage.cache_creation.input_tokens"] = usage.cache_write
    return attributes


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _system(prompt: str) -> str:
    return _json([{"type": "text", "content": prompt}])


def _part(block: object) -> dict[str, Any]:
    if isinstance(block, TextContent):
        return {"type": "text", "content": block.text}
    if isinstance(block, ThinkingContent):
        return {"type": "reasoning", "content": "" if block.redacted else block.thinking}
    if isinstance(block, ToolCall):
        return {"type": "tool_call", "id": block.id, "name": block.name,
                "arguments": block.arguments}
    if isinstance(block, ImageContent):
        return {"type": "blob", "modality": "image", "mime_type": block.mime_type}
    return {"type": getattr(block, "type", type(block).__name__)}


def _result_text(content: Sequence[object]) -> str:
    """A tool result as recorded: its text when all of it is text, else its parts as JSON."""
    if all(isinstance(block, TextContent) for block in content):
        return "\n".join(block.text for block in content)  # type: ignore[attr-defined]
    return _json([_part(block) for block in content])


def _messages(messages: Sequence[AgentMessage], final: bool = False) -> str:
    """Messages in the conventions' JSON shape; `final`: as output (with finish reasons)."""
    return _json([item for m in messages if (item := _message(m, final)) is not None])


def _message(message: AgentMessage, final: bool = False) -> dict[str, Any] | None:
    """One message in the conventions' shape; None for one that never reaches a model."""
    if isinstance(message, UserMessage):
        content = message.content
        parts = ([{"type": "text", "content": content}] if isinstance(content, str)
                 else [_part(block) for block in content])
        return {"role": "user", "parts": parts}
    if isinstance(message, AssistantMessage):
        item: dict[str, Any] = {"role": "assistant",
                                "parts": [_part(block) for block in message.content]}
        if final:
            item["finish_reason"] = _FINISH_REASONS.get(message.stop_reason,
                                                        message.stop_reason.value)
        return item
    if isinstance(message, ToolResultMessage):
        return {"role": "tool", "parts": [{
            "type": "tool_call_response", "id": message.tool_call_id,
            "response": _result_text(message.content)}]}
    return None  # a custom message: converted or dropped before any model call
