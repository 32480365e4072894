"""Agent events → the Vercel AI SDK's UI message stream (`POST /api/chat`, API §28).

The AI SDK's `useChat` reads a run as one assistant UI message built from chunks: `start`, then
per model call a step (`start-step` … `finish-step`) holding text (`text-start/delta/end`),
reasoning (`reasoning-start/delta/end`) and tool parts (`tool-input-start/delta/available`,
then `tool-output-available`, `tool-output-error` or `tool-output-denied`), and at the end
`finish` (or `error` then `finish` for a failed model, or `abort` for an aborted run), each
sent as `data: <json>` and closed by `data: [DONE]`. `ChatTranslator` keeps the little state
the mapping needs and turns each agent event into zero or more chunks, plain dicts shaped as
the `ai` package's own `uiMessageChunkSchema` wants them (the node tests read them with it).

Choices where the protocols differ:
- Tool parts are static ones (`tool-<name>`), as `streamText` makes them for its own tools; a
  result's `output` is its text, or a list of text and file (`data:` URL) parts when it has
  images.
- A step opens at the first part a turn shows and closes when the next turn shows one, or at
  the end: a run's approval requests land in the step of their calls, and the results of calls
  approved in an earlier request update those calls' parts without a step of their own.
- A run that pauses for approval (API §20) uses the SDK's own approvals: a
  `tool-approval-request` per waiting call (the approval id is the call id), then `finish`
  with reason `tool-calls`. A child agent's waiting call (API §25) first gets its tool part
  (`toolMetadata.agentcore.path` names the agents). `addToolApprovalResponse` answers it; the
  next request resumes (see `_ai_sdk_input`), a denied call's part ending `output-denied`.
- Every part a reply opened is closed: a reply that failed or was aborted mid-call ends that
  call with `tool-input-error`, and its finished calls, which will not run, with
  `tool-output-error`. A fallback to another model (API §24) then puts a
  `data-agentcore-model-fallback` part (`{model, reason, circuitOpen}`) in the step holding the
  failed reply's parts, and ends that step: a client may drop those parts.
- A tool's progress (`on_update`) is a preliminary `tool-output-available`; a child agent's
  events are transient `data-agentcore-subagent` chunks (the AG-UI custom event's value).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from .._core import (
    AgentEvent,
    AgentMessage,
    AssistantMessage,
    GuardrailTrippedEvent,
    ImageContent,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    ModelFallbackEvent,
    StopReason,
    SubagentEvent,
    TextContent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    ToolApprovalMessage,
    ToolCall,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
    ToolExecutionUpdateEvent,
    ToolResultMessage,
    TurnEndEvent,
    to_dict,
)
from ._events import guardrail

if TYPE_CHECKING:
    from .._agent import AgentRun

__all__ = ["DONE", "FALLBACK_PART", "GUARDRAIL_PART", "HEADERS", "SUBAGENT_PART",
           "ChatTranslator", "Chunk", "encode_chunk"]

Chunk = dict[str, Any]
"""One UI message chunk, as JSON."""

HEADERS = {"content-type": "text/event-stream", "cache-control": "no-cache",
           "x-vercel-ai-ui-message-stream": "v1", "x-accel-buffering": "no"}
"""The response headers, as the `ai` package's `UI_MESSAGE_STREAM_HEADERS` (less the hop-by-hop
`connection`, which is the server's to set)."""

DONE = b"data: [DONE]\n\n"
"""What ends the stream after the last chunk."""

SUBAGENT_PART = "data-agentcore-subagent"
"""A transient data chunk per child agent event (API §25): `{toolCallId, agentName, path,
event}`, as AG-UI's `agentcore.subagent` custom event."""

FALLBACK_PART = "data-agentcore-model-fallback"
"""The data part saying the step's parts came from a model that failed (API §24)."""

GUARDRAIL_PART = "data-agentcore-guardrail"
"""The data part of a guardrail that tripped (API §26): `{kind, name, reason, retry}`, as
AG-UI's `agentcore.guardrail_tripped` custom event."""

_FINISH_REASONS = {StopReason.STOP: "stop", StopReason.LENGTH: "length",
                   StopReason.TOOL_USE: "tool-calls"}


def _new_id() -> str:
    return uuid.uuid4().hex[:16]


def encode_chunk(chunk: Chunk) -> bytes:
    """`chunk` as the JSON of one SSE `data:` line (a lone surrogate becomes `?`)."""
    return json.dumps(chunk, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "replace")


def _output(content: Sequence[TextContent | ImageContent], text: str) -> Any:
    """A tool result as the tool part's `output`: its text, or text and file parts if images."""
    if all(isinstance(block, TextContent) for block in content):
        return text
    return [{"type": "file", "mediaType": b.mime_type, "url": f"data:{b.mime_type};base64,{b.data}"}
            if isinstance(b, ImageContent) else {"type": "text", "text": b.text} for b in content]


class ChatTranslator:
    """Turns one run's agent events into UI message chunks: `start`, `feed` each, `finish`.

    Not thread-safe: one consumer feeds it, in order. `message_id` is the assistant UI message
    the chunks build (the one a resumed run continues); `answered` are the calls the request
    decided (approvals), whose results may come from a child agent; `new_id` makes the ids of
    text and reasoning parts.
    """

    def __init__(self, message_id: str, *, answered: Iterable[str] = (),
                 new_id: Callable[[], str] = _new_id) -> None:
        self.message_id = message_id
        self._new_id = new_id
        self._answered = set(answered)  # calls whose results end their parts, at any depth
        self._denied: set[str] = set()
        self._in_step = False
        self._turn_over = False  # the open step's turn has ended: the next part starts a step
        self._open: dict[int, tuple[str, str]] = {}  # content index -> (kind, part or call id)
        self._calls: dict[str, ToolCall] = {}  # every call this stream showed, by id
        self._reply_calls: list[str] = []  # calls of the reply streaming now, input complete

    def start(self) -> list[Chunk]:
        """The stream's opening chunk."""
        return [{"type": "start", "messageId": self.message_id}]

    def feed(self, event: AgentEvent) -> list[Chunk]:
        """The chunks `event` brings (none for most bookkeeping events)."""
        if isinstance(event, MessageUpdateEvent):
            return self._update(event)
        if isinstance(event, MessageStartEvent) and isinstance(event.message, AssistantMessage):
            self._reply_calls = []
            return []
        if isinstance(event, MessageEndEvent):
            return self._message_end(event.message)
        if isinstance(event, ToolExecutionUpdateEvent):
            partial = event.partial_result
            text = "".join(b.text for b in partial.content if isinstance(b, TextContent))
            return [{"type": "tool-output-available", "toolCallId": event.tool_call_id,
                     "output": _output(partial.content, text), "preliminary": True}]
        if isinstance(event, TurnEndEvent):
            self._turn_over = self._in_step
            return []
        if isinstance(event, ModelFallbackEvent):
            out = [*self._step(), *self._abandon(f"dropped: {event.reason}")]
            out.append({"type": FALLBACK_PART, "data": {
                "model": f"{event.model.provider}/{event.model.id}", "reason": event.reason,
                "circuitOpen": event.failed is None}})
            return out + self._end_step()
        if isinstance(event, SubagentEvent):
            return self._subagent(event)
        if isinstance(event, GuardrailTrippedEvent):
            return [*self._step(), {"type": GUARDRAIL_PART, "data": guardrail(event)}]
        return []

    def error(self, message: str) -> list[Chunk]:
        """The chunk ending a stream that could not be translated to its end."""
        return [{"type": "error", "errorText": message}]

    def finish(self, run: AgentRun) -> list[Chunk]:
        """The closing chunks of `run`, once its events are all fed (the run has ended).

        Approval requests and `finish` (reason `tool-calls`) when calls wait for approval;
        `error` and `finish` (reason `error`) when the model failed; `abort` when the run was
        aborted; else `finish` with the last reply's stop reason.
        """
        messages = run.result(0)  # ended: this does not wait
        out = self._abandon("the run ended")  # nothing, unless the run ended mid-reply
        pending = run.pending_approvals
        if pending:
            paths = run.pending_paths
            if not self._in_step:  # else the requests go in the step of the calls they ask for
                out += self._step()
            for call in pending:
                if call.id not in self._calls:  # a child agent's call: show it first
                    out.append(self._input_available(call, paths.get(call.id)))
                out.append({"type": "tool-approval-request", "approvalId": call.id,
                            "toolCallId": call.id})
            return [*out, *self._end_step(), {"type": "finish", "finishReason": "tool-calls"}]
        out += self._end_step()
        last = next((m for m in reversed(messages) if isinstance(m, AssistantMessage)), None)
        if last is not None and last.stop_reason is StopReason.ERROR:
            return [*out, {"type": "error", "errorText": last.error_message or "the model failed"},
                    {"type": "finish", "finishReason": "error"}]
        if run.error is not None:
            return [*out, {"type": "abort", "reason": run.error}]
        reason = "stop" if last is None else _FINISH_REASONS.get(last.stop_reason, "other")
        return [*out, {"type": "finish", "finishReason": reason}]

    def _step(self) -> list[Chunk]:
        """The chunks opening a step for a part, if the open one is over (or none is open)."""
        if self._in_step and not self._turn_over:
            return []
        out = self._end_step()
        self._in_step = True
        return [*out, {"type": "start-step"}]

    def _end_step(self) -> list[Chunk]:
        if not self._in_step:
            return []
        self._in_step = self._turn_over = False
        return [{"type": "finish-step"}]

    def _update(self, event: MessageUpdateEvent) -> list[Chunk]:
        inner = event.assistant_message_event
        index = getattr(inner, "content_index", -1)
        if isinstance(inner, (TextDeltaEvent, ThinkingDeltaEvent, ToolCallDeltaEvent)):
            if not inner.delta or index not in self._open:
                return []
            kind, item_id = self._open[index]
            if kind == "tool":
                return [{"type": "tool-input-delta", "toolCallId": item_id,
                         "inputTextDelta": inner.delta}]
            return [{"type": f"{kind}-delta", "id": item_id, "delta": inner.delta}]
        if isinstance(inner, (TextStartEvent, ThinkingStartEvent)):
            kind = "text" if isinstance(inner, TextStartEvent) else "reasoning"
            self._open[index] = (kind, self._new_id())
            return [*self._step(), {"type": f"{kind}-start", "id": self._open[index][1]}]
        if isinstance(inner, ToolCallStartEvent):
            block = inner.partial.content[index]
            if not isinstance(block, ToolCall):
                return []
            self._open[index] = ("tool", block.id)
            self._calls[block.id] = block
            return [*self._step(), {"type": "tool-input-start", "toolCallId": block.id,
                                    "toolName": block.name}]
        if isinstance(inner, ToolCallEndEvent):
            self._open.pop(index, None)
            self._calls[inner.tool_call.id] = inner.tool_call
            self._reply_calls.append(inner.tool_call.id)
            return [*self._step(), self._input_available(inner.tool_call, None)]
        if isinstance(inner, (TextEndEvent, ThinkingEndEvent)) and index in self._open:
            kind, item_id = self._open.pop(index)
            return [{"type": f"{kind}-end", "id": item_id}]
        return []

    def _input_available(self, call: ToolCall, path: list[str] | None) -> Chunk:
        chunk: Chunk = {"type": "tool-input-available", "toolCallId": call.id,
                        "toolName": call.name, "input": call.arguments}
        if path is not None:
            chunk["toolMetadata"] = {"agentcore": {"path": path}}
        return chunk

    def _abandon(self, reason: str) -> list[Chunk]:
        """Close what the reply streaming now left open; its calls that will not run fail."""
        out: list[Chunk] = []
        for index in sorted(self._open):
            kind, item_id = self._open.pop(index)
            if kind != "tool":
                out.append({"type": f"{kind}-end", "id": item_id})
                continue
            call = self._calls[item_id]
            out.append({"type": "tool-input-error", "toolCallId": item_id,
                        "toolName": call.name, "input": call.arguments, "errorText": reason})
        out += [{"type": "tool-output-error", "toolCallId": call_id, "errorText": reason}
                for call_id in self._reply_calls]
        self._reply_calls = []
        return out

    def _message_end(self, message: AgentMessage) -> list[Chunk]:
        if isinstance(message, AssistantMessage):
            if message.stop_reason in (StopReason.ERROR, StopReason.ABORTED):
                reason = message.error_message or f"the reply ended {message.stop_reason.value}"
                return self._abandon(f"not run: {reason}")
            self._reply_calls = []  # they run (or wait for approval)
            return self._abandon("the reply ended")  # nothing is open after a whole reply
        if isinstance(message, ToolApprovalMessage):
            self._denied.update(message.denied)
            return []
        if isinstance(message, ToolResultMessage):
            return [self._result(message)]
        return []

    def _result(self, message: ToolResultMessage) -> Chunk:
        call_id = message.tool_call_id
        if call_id in self._denied:
            return {"type": "tool-output-denied", "toolCallId": call_id}
        if message.is_error:
            return {"type": "tool-output-error", "toolCallId": call_id, "errorText": message.text}
        return {"type": "tool-output-available", "toolCallId": call_id,
                "output": _output(message.content, message.text)}

    def _subagent(self, event: SubagentEvent) -> list[Chunk]:
        """A child agent's event, as a transient data chunk.

        The result of a child's call that this conversation approved or denied also ends
        that call's part (shown when the run paused for it).
        """
        inner = event.innermost()
        child = inner.event
        out: list[Chunk] = []
        body: dict[str, Any]
        if isinstance(child, MessageUpdateEvent):
            update = child.assistant_message_event
            if isinstance(update, TextDeltaEvent) and update.delta:
                body = {"type": "text_delta", "delta": update.delta}
            elif isinstance(update, ThinkingDeltaEvent) and update.delta:
                body = {"type": "thinking_delta", "delta": update.delta}
            else:
                return []
        else:
            body = to_dict(child)
            if isinstance(child, MessageEndEvent):
                message = child.message
                if isinstance(message, ToolApprovalMessage):
                    self._denied.update(message.denied)
                elif (isinstance(message, ToolResultMessage)
                      and message.tool_call_id in self._answered):
                    out.append(self._result(message))
        out.append({"type": SUBAGENT_PART, "transient": True, "data": {
            "toolCallId": event.tool_call_id, "agentName": inner.agent_name,
            "path": list(inner.path), "event": body}})
        return out
