"""Compaction: the older part of a transcript summarised by the model, the recent part kept.

`compact` cuts a transcript at a turn boundary, asks the model for a summary of what comes
before the cut (folding in a summary left by an earlier compaction) and returns that summary,
as one `CompactionSummaryMessage`, followed by the messages after the cut. `auto_compactor`
is the `before_model_call` hook behind `Agent(auto_compact=...)`. Token counts are estimates
(`estimate_tokens`): no tokenizer is loaded.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal

import attrs

from .._core import (
    AbortError,
    AbortSignal,
    AgentcoreError,
    AgentMessage,
    AssistantMessage,
    CompactionEndEvent,
    CompactionStartEvent,
    CompactionSummaryMessage,
    Context,
    DoneEvent,
    ErrorEvent,
    EventSink,
    ImageContent,
    Message,
    Model,
    StopReason,
    StreamOptions,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    count,
    default_convert_to_llm,
    describe,
    is_context_overflow,
    type_error,
)
from .._loop import BeforeModelCall, BeforeModelCallContext
from ..providers import StreamFn, stream
from ._cut import Plan, context_tokens, estimate_tokens, find_cut

__all__ = ["TOOL_RESULT_CHARS", "CompactionSettings", "auto_compactor", "compact"]

TOOL_RESULT_CHARS = 2_000
"""The longest tool result the summary request quotes; the rest is cut (the summary needs the
gist, and the request must fit the model's context window)."""


@attrs.frozen(kw_only=True)
class CompactionSettings:
    """When `Agent(auto_compact=...)` compacts, and how much it keeps.

    The agent compacts before a model call whose estimated context (see `estimate_tokens`)
    exceeds `model.context_window - reserve_tokens`, and once after a reply the provider
    refused as too long (`is_context_overflow`), then retries that call.

    Attributes:
        reserve_tokens: Tokens left free for the reply and the estimate's error (the summary's
            own reply gets at most 80 % of them).
        keep_recent_tokens: The estimated tokens of recent messages kept verbatim; keep it well
            below the context window less `reserve_tokens`, or compaction cannot make room.
    """

    reserve_tokens: int = attrs.field(default=16_384, validator=count)
    keep_recent_tokens: int = attrs.field(default=20_000, validator=count)


_SYSTEM = (
    "You write summaries of conversations between a user and an AI assistant that uses "
    "tools. The summary replaces the conversation: another assistant will read it and carry "
    "on the work from it alone. Do not continue the conversation, answer its questions or do "
    "what it asks; write only the summary."
)

_SECTIONS = """Write the summary in Markdown under these headings:

## Goals
What the user wants done (every task, if there are several), with any constraints and
preferences they stated.

## Progress
What has been done, and what was in hand when the conversation stopped.

## Decisions
The choices made along the way, each with the reason for it.

## Open work
What remains to be done, in the order to do it; questions still unanswered; errors not yet
resolved.

## Names
Every file path, URL, command, function, class, variable and other identifier the work
depends on, and the exact text of error messages that matter, spelled exactly as in the
conversation.

Be brief, but leave out nothing the next steps need."""

_FIRST = ("The conversation above is being shortened: its messages will be replaced by your "
          "summary.")
_UPDATE = ("The conversation above continues from the earlier summary below, and is being "
           "shortened: your summary will replace both. Keep everything from the earlier "
           "summary that still matters, add what the new messages bring, move work that got "
           "done from open work to progress, and drop what no longer applies.")


def _request(plan: Plan, instructions: str | None) -> str:
    """The text of the summary request."""
    parts = [f"<conversation>\n{_transcript(plan.older)}\n</conversation>"]
    if plan.previous is not None:
        parts.append(_UPDATE)
        parts.append(f"<earlier-summary>\n{plan.previous.summary}\n</earlier-summary>")
    else:
        parts.append(_FIRST)
    parts.append(_SECTIONS)
    if instructions:
        parts.append(f"Also: {instructions}")
    return "\n\n".join(parts)


def _transcript(messages: Sequence[AgentMessage]) -> str:
    """The messages as plain text: a conversation to read, not one to continue."""
    lines: list[str] = []
    for message in default_convert_to_llm(messages):
        lines.extend(_lines(message))
    return "\n\n".join(lines)


def _lines(message: Message) -> list[str]:
    if isinstance(message, AssistantMessage):
        lines = []
        for block in message.content:
            if isinstance(block, ThinkingContent) and block.thinking:
                lines.append(f"[assistant, thinking]: {block.thinking}")
            elif isinstance(block, TextContent) and block.text:
                lines.append(f"[assistant]: {block.text}")
            elif isinstance(block, ToolCall):
                arguments = json.dumps(block.arguments, ensure_ascii=False, default=str)
                lines.append(f"[assistant calls {block.name}]: {arguments}")
        if message.error_message:
            lines.append(f"[assistant's reply failed]: {message.error_message}")
        return lines
    text = _content_text(message.content)
    if isinstance(message, ToolResultMessage):
        if len(text) > TOOL_RESULT_CHARS:
            text = (f"{text[:TOOL_RESULT_CHARS]}\n[... {len(text) - TOOL_RESULT_CHARS} more "
                    "characters left out]")
        status = ", failed" if message.is_error else ""
        return [f"[result of {message.tool_name}{status}]: {text}"]
    return [f"[user]: {text}"]


def _content_text(content: str | Sequence[TextContent | ImageContent]) -> str:
    if isinstance(content, str):
        return content
    return "".join(b.text if isinstance(b, TextContent) else "[image]" for b in content)


def _summarise(plan: Plan, model: Model, instructions: str | None,
               options: StreamOptions | None, stream_fn: StreamFn | None) -> str:
    """Ask the model for the summary; raises `AgentcoreError` (or `AbortError`) if it fails."""
    context = Context(_SYSTEM, [UserMessage(_request(plan, instructions))])
    reply: AssistantMessage | None = None
    try:
        events: Iterable[Any] = (stream_fn or stream)(model, context, options or StreamOptions())
        for event in events:
            if isinstance(event, DoneEvent):
                reply = event.message
                break
            if isinstance(event, ErrorEvent):
                reply = event.error
                break
    except AbortError:
        raise
    except Exception as exc:
        raise AgentcoreError(f"compaction failed: {describe(exc)}") from exc
    if reply is None:
        raise AgentcoreError("compaction failed: the model stream ended without a done or "
                             "error event")
    if reply.stop_reason == StopReason.ABORTED:
        raise AbortError(f"compaction aborted: {reply.error_message or 'Request was aborted'}")
    if reply.stop_reason == StopReason.ERROR:
        raise AgentcoreError(f"compaction failed: {reply.error_message or 'unknown error'}")
    summary = reply.text.strip()
    if not summary:
        raise AgentcoreError("compaction failed: the model's summary was empty")
    return summary


def _check(messages: object, model: object, keep_recent_tokens: object, instructions: object,
           options: object, stream_fn: object) -> None:
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise type_error("messages", "a list of messages", messages)
    for i, message in enumerate(messages):
        if not isinstance(getattr(message, "role", None), str):
            raise type_error(f"messages[{i}]", "a message such as UserMessage", message)
    if not isinstance(model, Model):
        raise type_error("model", "a Model", model)
    if isinstance(keep_recent_tokens, bool) or not isinstance(keep_recent_tokens, int):
        raise type_error("keep_recent_tokens", "an int", keep_recent_tokens)
    if keep_recent_tokens < 0:
        raise ValueError(f"'keep_recent_tokens' must be >= 0, got {keep_recent_tokens!r}")
    if instructions is not None and not isinstance(instructions, str):
        raise type_error("instructions", "a str or None", instructions)
    if options is not None and not isinstance(options, StreamOptions):
        raise type_error("options", "a StreamOptions or None", options)
    if stream_fn is not None and not callable(stream_fn):
        raise type_error("stream_fn", "callable as stream_fn(model, context, options)",
                         stream_fn)


def compact(
    messages: Sequence[AgentMessage],
    model: Model,
    *,
    keep_recent_tokens: int = 20_000,
    instructions: str | None = None,
    options: StreamOptions | None = None,
    stream_fn: StreamFn | None = None,
) -> list[AgentMessage]:
    """Summarise the older part of a transcript with the model; keep the recent part.

    The cut is the latest turn boundary keeping at least `keep_recent_tokens` (estimated) of
    recent messages, never between a tool call and its result. The model is asked for a
    summary of the older part's goals, progress, decisions, open work and exact names, folding
    in an earlier `CompactionSummaryMessage`; it later reads it as a `<summary>` user message.

    Args:
        messages: The transcript, oldest first; not modified.
        model: The model that writes the summary.
        keep_recent_tokens: The estimated tokens of recent messages to keep verbatim.
        instructions: What the summary should also attend to, added to the request.
        options: Provider options for the summary call (API key, `max_tokens`, `signal`...).
        stream_fn: The stream function to call (an agent passes its own); default
            `agentcore.stream`, which picks the provider by `model.api`.

    Returns:
        A new list: the summary followed by the kept messages, or a copy of `messages` when
        nothing lies before a possible cut (the transcript is all recent).

    Raises:
        AgentcoreError: The summary call failed (`"compaction failed: <why>"`, with the
            model's error message); `AbortError` if it was aborted. Nothing is lost: the
            caller's transcript is untouched.
        TypeError, ValueError: An argument of the wrong type or value (named).
    """
    _check(messages, model, keep_recent_tokens, instructions, options, stream_fn)
    plan = find_cut(messages, keep_recent_tokens)
    if plan is None:
        return list(messages)
    text = _summarise(plan, model, instructions, options, stream_fn)
    return [CompactionSummaryMessage(text, estimate_tokens(messages)), *plan.recent]


def auto_compactor(
    settings: CompactionSettings,
    stream_fn: StreamFn | None,
    replace: Callable[[list[AgentMessage]], None],
) -> BeforeModelCall:
    """The `before_model_call` hook of an agent with `auto_compact=settings`.

    It compacts before a call whose estimated context exceeds the model's window less
    `settings.reserve_tokens` (reason `"threshold"`), and after a reply recognised by
    `is_context_overflow` (reason `"overflow"`; the loop then retries the call once). Between
    `compaction_start` and `compaction_end` it calls `replace(messages)`, which stores the
    compacted transcript (the agent's, its session's). When nothing can be cut it leaves the
    context alone and emits nothing.
    """

    def before_model_call(call: BeforeModelCallContext, emit: EventSink,
                          signal: AbortSignal) -> list[AgentMessage] | None:
        model = call.model
        reason: Literal["threshold", "overflow"]
        if call.failed is not None:
            if not is_context_overflow(call.failed):
                return None
            reason = "overflow"
        elif context_tokens(call.context) > model.context_window - settings.reserve_tokens:
            reason = "threshold"
        else:
            return None
        messages = call.context.messages
        plan = find_cut(messages, settings.keep_recent_tokens)
        if plan is None:
            return None
        emit(CompactionStartEvent(reason))
        budget = max(1, settings.reserve_tokens * 4 // 5)
        if model.max_tokens:
            budget = min(budget, model.max_tokens)
        # The summary is plain text from a call without tools: the run's choice and format
        # (API §18) are not for it
        options = attrs.evolve(call.options, max_tokens=budget, tool_choice=None,
                               output_schema=None)
        summary = CompactionSummaryMessage(
            _summarise(plan, model, None, options, stream_fn), estimate_tokens(messages))
        compacted: list[AgentMessage] = [summary, *plan.recent]
        replace(compacted)
        emit(CompactionEndEvent(summary, summary.tokens_before, estimate_tokens(compacted)))
        return compacted

    return before_model_call
