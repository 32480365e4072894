"""Agent events → AG-UI events: `ag_ui_events(run)` and the translator behind it.

AG-UI streams a run as messages and tool calls, each opened, filled and closed by id; agentcore
streams it as message updates keyed by content index. `Translator` keeps the little state the
mapping needs (the ids it handed out, what is still open, when each tool call started) and turns
each agent event into zero or more AG-UI events, every one built with the protocol package's own
pydantic models, so an event that would not validate raises here rather than reaching a client.

AG-UI 1.0 names reasoning `REASONING_*` (its `THINKING_*` events were retired before 1.0);
a pause for approval (API §20) ends the run with an interrupt outcome, one `Interrupt` per
waiting call, after one `CUSTOM` event `agentcore.tool_approval_request` per call. A fallback
to another model (API §24) closes what the failed reply had opened and sends a `CUSTOM` event
`agentcore.model_fallback` naming that reply's message, for the client to drop. A child
agent's events (API §25) are `CUSTOM` events `agentcore.subagent`, its text as deltas. A run
that ends with calls of a client's own tools left for the client to run (API §28) finishes with
a success outcome naming them in `pendingToolCallIds`; the results a client gave for such calls
are not sent back to it.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Collection, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import ag_ui.core as ag

from .._core import (
    AgentEvent,
    AgentMessage,
    AssistantMessage,
    CompactionEndEvent,
    CompactionStartEvent,
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
    ToolApprovalRequestEvent,
    ToolCall,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
    ToolExecutionStartEvent,
    ToolResultMessage,
    to_dict,
)

if TYPE_CHECKING:
    from .._agent import AgentRun

__all__ = ["APPROVAL_EVENT", "APPROVAL_REASON", "DECISIONS_EVENT", "FALLBACK_EVENT",
           "GUARDRAIL_EVENT",
           "SUBAGENT_EVENT", "Translator", "ag_ui_events", "interrupt_for", "message_id",
           "tool_result_content"]

SUBAGENT_EVENT = "agentcore.subagent"
"""The `CUSTOM` event's name for a child agent's event (API §25): `{"toolCallId", "agentName",
"path", "event"}`. `toolCallId` is the call of this run that runs the child (the outermost, for
a grandchild's); `agentName` and `path` are the innermost child's; `event` is its event as
JSON, a `message_update` shortened to `{"type": "text_delta" | "thinking_delta", "delta"}`
(other updates are not sent: `message_end` brings the whole message)."""

FALLBACK_EVENT = "agentcore.model_fallback"
"""The `CUSTOM` event's name for a fallback (API §24): `{"messageId", "model", "reason",
"circuitOpen"}`. `messageId` names the failed reply's text message, whose content a client
should drop (None when no reply streamed); `model` is the next one (`"provider/id"`)."""

DECISIONS_EVENT = "agentcore.tool_approval"
"""The `CUSTOM` event's name for the decisions on calls that waited (a `ToolApprovalMessage`
entering the transcript): `{"messageId", "approved": [call ids], "denied": {call id: reason}}`.
The history shows the same as an `activity` message of this type."""

GUARDRAIL_EVENT = "agentcore.guardrail_tripped"
"""The `CUSTOM` event's name for a guardrail that tripped (API §26): `{"kind": "input" |
"output", "name", "reason", "retry"}`; with `retry` the reason went back to the model and the
run goes on, else the run ends with the error `guardrail tripped: <name>: <reason>`."""

APPROVAL_EVENT = "agentcore.tool_approval_request"
"""The `CUSTOM` event's name for a call waiting for approval; its value is
`{"toolCallId", "toolName", "args"}`."""

APPROVAL_REASON = "tool_approval"
"""The `reason` of the interrupts a run pausing for approval ends with."""

APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}, "reason": {"type": "string"}},
    "required": ["approved"],
}
"""What a resume entry's `payload` answers an approval interrupt with (a bare boolean also
does)."""

_QUESTION_CHARS = 200

MAX_DURATIONS = 10_000
"""The most tool-call durations a conversation keeps for its history (the latest)."""


def _new_id() -> str:
    return uuid.uuid4().hex


def message_id(position: int) -> str:
    """The AG-UI id of the transcript's message at `position`, in a stream as in the history.

    A reasoning span of it is `m<position>-r<content index>`.
    """
    return f"m{position}"


def interrupt_for(call: ToolCall) -> ag.Interrupt:
    """The AG-UI interrupt asking whether `call` may run; its id is the call's id."""
    args = json.dumps(call.arguments, ensure_ascii=False)
    if len(args) > _QUESTION_CHARS:
        args = args[: _QUESTION_CHARS - 1] + "…"
    return ag.Interrupt(id=call.id, reason=APPROVAL_REASON, tool_call_id=call.id,
                        message=f"Allow {call.name}({args})?", response_schema=APPROVAL_SCHEMA)


def tool_result_content(message: ToolResultMessage) -> str | list[Any]:
    """A tool result as AG-UI content: its text, or text and image parts when it has images."""
    if all(isinstance(block, TextContent) for block in message.content):
        return message.text
    parts: list[Any] = []
    for block in message.content:
        if isinstance(block, ImageContent):
            parts.append(ag.ImagePart(source=ag.DataSource(value=block.data,
                                                          mime_type=block.mime_type)))
        else:
            parts.append(ag.TextPart(text=block.text))
    return parts


def _usage(messages: Sequence[AgentMessage]) -> list[ag.TokenUsage] | None:
    """Token usage per provider and model, in AG-UI's accounting (input counts cache tokens)."""
    totals: dict[tuple[str, str], list[int]] = {}
    for message in messages:
        if isinstance(message, AssistantMessage):
            usage = message.usage
            row = totals.setdefault((message.provider, message.model), [0, 0, 0, 0])
            row[0] += usage.input + usage.cache_read + usage.cache_write
            row[1] += usage.output
            row[2] += usage.cache_read
            row[3] += usage.cache_write
    if not totals:
        return None
    return [ag.TokenUsage(provider=provider, model=model, input_tokens=inp, output_tokens=out,
                          total_tokens=inp + out, cached_input_tokens=read,
                          cache_write_input_tokens=write)
            for (provider, model), (inp, out, read, write) in totals.items()]


class Translator:
    """Turns one run's agent events into AG-UI events: `start`, `feed` each event, `finish`.

    Not thread-safe: one consumer feeds it, in order. `clock` times tool calls (from
    `tool_execution_start` to their result) for the `durationMs` in `TOOL_CALL_RESULT`'s
    metadata; it is read as events are fed, so a late consumer measures nothing useful.
    `first_position()` says where the run's first message sits in the transcript (asked when
    the first message event is fed): messages then get the ids the history gives them
    (`message_id`), so a client that reloads sees the ids it streamed; without it (or when it
    says None) ids are random. Each call's `durationMs` also goes into `durations` (by call
    id), when given, for the history to show the same (at most `MAX_DURATIONS` are kept).
    `given` are the ids of calls whose results the client gave (API §28): it has them, so
    they get no `TOOL_CALL_RESULT`.
    """

    def __init__(self, thread_id: str, run_id: str, *,
                 clock: Callable[[], float] = time.monotonic,
                 first_position: Callable[[], int | None] | None = None,
                 durations: dict[str, float] | None = None,
                 given: Collection[str] = ()) -> None:
        self.thread_id = thread_id
        self.run_id = run_id
        self.finished = False
        self._clock = clock
        self._given = frozenset(given)
        self._message_id = ""  # the assistant message streaming now
        self._texts = 0  # text blocks opened in it so far
        self._open: dict[int, tuple[str, str]] = {}  # content index -> (kind, AG-UI id)
        self._args_sent: set[str] = set()  # tool calls whose arguments streamed
        self._started: dict[str, float] = {}  # tool call id -> when it began, until its result
        self._calls: dict[str, ToolCall] = {}
        self._failed: list[AssistantMessage] = []  # replies a fallback model took over
        self._first_position = first_position
        self._position: int | None = None  # the next message's place in the transcript
        self._placed = first_position is None  # asked already (or nobody to ask)
        self._durations = durations

    def start(self) -> list[ag.BaseEvent]:
        """The run's opening event."""
        return [ag.RunStartedEvent(thread_id=self.thread_id, run_id=self.run_id)]

    def feed(self, event: AgentEvent) -> list[ag.BaseEvent]:
        """The AG-UI events `event` brings (none for most bookkeeping events)."""
        if isinstance(event, MessageUpdateEvent):
            return self._update(event)
        if isinstance(event, MessageStartEvent) and isinstance(event.message, AssistantMessage):
            self._message_id = self._next_id()
            self._texts = 0
            self._open.clear()
            return []
        if isinstance(event, MessageEndEvent):
            out = self._message_end(event.message, self._next_id())
            if self._position is not None:  # it entered the transcript there
                self._position += 1
            return out
        if isinstance(event, ToolExecutionStartEvent):
            self._started[event.tool_call_id] = self._clock()
            return []
        if isinstance(event, ToolApprovalRequestEvent):
            return [ag.CustomEvent(name=APPROVAL_EVENT, value={
                "toolCallId": event.tool_call_id, "toolName": event.tool_name,
                "args": event.args})]
        if isinstance(event, ModelFallbackEvent):
            return self._fallback(event)
        if isinstance(event, SubagentEvent):
            return _subagent(event)
        if isinstance(event, GuardrailTrippedEvent):
            return [ag.CustomEvent(name=GUARDRAIL_EVENT, value=guardrail(event))]
        if isinstance(event, CompactionStartEvent):
            return [ag.CustomEvent(name="agentcore.compaction_start",
                                   value={"reason": event.reason})]
        if isinstance(event, CompactionEndEvent):
            return [ag.CustomEvent(name="agentcore.compaction_end", value={
                "summary": event.summary.summary, "tokensBefore": event.tokens_before,
                "tokensAfter": event.tokens_after})]
        return []

    def _next_id(self) -> str:
        """The id of the message that starts or ends now: its transcript position's, if known.

        A reply that a fallback model takes over never ends: its successor gets its place,
        and its id (the client dropped the failed one on `agentcore.model_fallback`).
        """
        if not self._placed:
            self._placed = True
            assert self._first_position is not None
            self._position = self._first_position()
        return _new_id() if self._position is None else message_id(self._position)

    def _fallback(self, event: ModelFallbackEvent) -> list[ag.BaseEvent]:
        """Close what the failed reply opened, and say that it is dropped (API §24)."""
        out = self._close_all()
        failed = event.failed
        if failed is not None:
            self._failed.append(failed)
        out.append(ag.CustomEvent(name=FALLBACK_EVENT, value={
            "messageId": self._message_id if failed is not None and self._message_id else None,
            "model": f"{event.model.provider}/{event.model.id}", "reason": event.reason,
            "circuitOpen": failed is None}))
        self._message_id = ""
        return out

    def error(self, message: str) -> list[ag.BaseEvent]:
        """The closing `RUN_ERROR` for a run that could not be streamed to its end."""
        self.finished = True
        return [ag.RunErrorEvent(message=message)]

    def _update(self, event: MessageUpdateEvent) -> list[ag.BaseEvent]:
        inner = event.assistant_message_event
        index = getattr(inner, "content_index", -1)
        if isinstance(inner, TextDeltaEvent):
            if not inner.delta or index not in self._open:
                return []
            return [ag.TextMessageContentEvent(message_id=self._open[index][1], delta=inner.delta)]
        if isinstance(inner, ThinkingDeltaEvent):
            if not inner.delta or index not in self._open:
                return []
            return [ag.ReasoningMessageContentEvent(message_id=self._open[index][1],
                                                    delta=inner.delta)]
        if isinstance(inner, ToolCallDeltaEvent):
            if not inner.delta or index not in self._open:
                return []
            call_id = self._open[index][1]
            self._args_sent.add(call_id)
            return [ag.ToolCallArgsEvent(tool_call_id=call_id, delta=inner.delta)]
        if isinstance(inner, TextStartEvent):
            message_id = self._message_id if not self._texts else f"{self._message_id}-{index}"
            self._texts += 1
            self._open[index] = ("text", message_id)
            return [ag.TextMessageStartEvent(message_id=message_id, role="assistant")]
        if isinstance(inner, ThinkingStartEvent):
            message_id = f"{self._message_id}-r{index}"
            self._open[index] = ("reasoning", message_id)
            return [ag.ReasoningStartEvent(message_id=message_id),
                    ag.ReasoningMessageStartEvent(message_id=message_id, role="reasoning")]
        if isinstance(inner, ToolCallStartEvent):
            block = inner.partial.content[index]
            if not isinstance(block, ToolCall):
                return []
            self._open[index] = ("tool", block.id)
            self._calls[block.id] = block
            return [ag.ToolCallStartEvent(tool_call_id=block.id, tool_call_name=block.name,
                                          parent_message_id=self._message_id)]
        if isinstance(inner, ToolCallEndEvent):
            self._calls[inner.tool_call.id] = inner.tool_call
        if isinstance(inner, (TextEndEvent, ThinkingEndEvent, ToolCallEndEvent)) and (
                index in self._open):
            return self._close(index)
        return []

    def _close_all(self) -> list[ag.BaseEvent]:
        """End whatever still streams (a failed or dropped reply can leave things open)."""
        return [event for index in sorted(self._open) for event in self._close(index)]

    def _close(self, index: int) -> list[ag.BaseEvent]:
        """End what streams at `index` (its arguments first, for a call that streamed none)."""
        kind, item_id = self._open.pop(index)
        if kind == "text":
            return [ag.TextMessageEndEvent(message_id=item_id)]
        if kind == "reasoning":
            return [ag.ReasoningMessageEndEvent(message_id=item_id),
                    ag.ReasoningEndEvent(message_id=item_id)]
        out: list[ag.BaseEvent] = []
        call = self._calls.get(item_id)
        if item_id not in self._args_sent and call is not None:
            out.append(ag.ToolCallArgsEvent(tool_call_id=item_id,
                                            delta=json.dumps(call.arguments)))
        out.append(ag.ToolCallEndEvent(tool_call_id=item_id))
        return out

    def _message_end(self, message: AgentMessage, ended_id: str) -> list[ag.BaseEvent]:
        """The events of a message that entered the transcript with the id `ended_id`."""
        if isinstance(message, AssistantMessage):  # an error or abort can leave things open
            return self._close_all()
        if isinstance(message, ToolResultMessage) and message.tool_call_id not in self._given:
            meta: dict[str, Any] = {"isError": message.is_error}
            started = self._started.pop(message.tool_call_id, None)
            if started is not None:
                meta["durationMs"] = round((self._clock() - started) * 1000, 1)
                if self._durations is not None:
                    if len(self._durations) >= MAX_DURATIONS:  # the oldest go first
                        del self._durations[next(iter(self._durations))]
                    self._durations[message.tool_call_id] = meta["durationMs"]
            return [ag.ToolCallResultEvent(
                message_id=ended_id, tool_call_id=message.tool_call_id, role="tool",
                content=tool_result_content(message), metadata={"agentcore": meta})]
        if isinstance(message, ToolApprovalMessage):
            return [ag.CustomEvent(name=DECISIONS_EVENT, value=decisions(message, ended_id))]
        return []

    def finish(self, run: AgentRun) -> list[ag.BaseEvent]:
        """The closing event of `run`, once its events are all fed (the run has ended).

        `RUN_FINISHED` with an interrupt outcome when calls wait for approval, a cancelled one
        when the run was aborted (mid-reply, or while its tools ran), else a success, naming
        the calls left for the client to run (`pendingToolCallIds`) if any; or `RUN_ERROR`
        when the model failed. Token usage goes on either.
        """
        self.finished = True
        messages = run.result(0)  # ended: this does not wait
        usage = _usage([*self._failed, *messages])
        pending = run.pending_approvals
        if pending:
            return [ag.RunFinishedEvent(
                thread_id=self.thread_id, run_id=self.run_id, usage=usage,
                outcome=ag.RunFinishedInterruptOutcome(
                    interrupts=[interrupt_for(call) for call in pending]))]
        last = next((m for m in reversed(messages) if isinstance(m, AssistantMessage)), None)
        if last is not None and last.stop_reason is StopReason.ERROR:
            return [ag.RunErrorEvent(message=last.error_message or "the model failed",
                                     usage=usage)]
        outcome: Any = ag.RunFinishedCancelledOutcome()
        if run.error is None:  # calls begun and left without a result: the client's to run
            left = list(self._started)
            outcome = ag.RunFinishedSuccessOutcome(pending_tool_call_ids=left or None)
        return [ag.RunFinishedEvent(thread_id=self.thread_id, run_id=self.run_id, usage=usage,
                                    outcome=outcome)]


def guardrail(event: GuardrailTrippedEvent) -> dict[str, Any]:
    """A tripped guardrail as `GUARDRAIL_EVENT` (and the AI SDK's data part) carry it."""
    return {"kind": event.kind, "name": event.name, "reason": event.reason,
            "retry": event.retry}


def decisions(message: ToolApprovalMessage, message_id: str) -> dict[str, Any]:
    """The decisions of `message` as `DECISIONS_EVENT` and the history carry them."""
    return {"messageId": message_id, "approved": list(message.approved),
            "denied": dict(message.denied)}


def _subagent(event: SubagentEvent) -> list[ag.BaseEvent]:
    """A child agent's event as one `CUSTOM` event (see `SUBAGENT_EVENT`), or none."""
    call_id, inner = event.tool_call_id, event.innermost()
    child = inner.event
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
    return [ag.CustomEvent(name=SUBAGENT_EVENT, value={
        "toolCallId": call_id, "agentName": inner.agent_name, "path": list(inner.path),
        "event": body})]


def ag_ui_events(run: AgentRun, *, thread_id: str | None = None,
                 run_id: str | None = None) -> Iterator[ag.BaseEvent]:
    """Yield the AG-UI events of `run`, from `RUN_STARTED` to `RUN_FINISHED` or `RUN_ERROR`.

    Iterates the run (blocking, as `for event in run` does) and translates each event; every
    yielded value is one of the `ag_ui.core` event models, so `event.model_dump_json(
    by_alias=True)` is its wire form. `thread_id` and `run_id` name the run in `RUN_STARTED`
    and `RUN_FINISHED` (fresh ids by default). A run that pauses for approval ends with an
    interrupt outcome; an aborted one with a cancelled outcome; a failed one with `RUN_ERROR`.
    """
    translator = Translator(thread_id or _new_id(), run_id or _new_id())
    yield from translator.start()
    for event in run:
        yield from translator.feed(event)
    yield from translator.finish(run)
