"""Markdown views of messages and runs, for rich display in Jupyter (`_repr_markdown_`).

Pure functions of values; no IPython here (`agentcore.notebook` does the displaying). Whatever
came from a user, a model or a tool is escaped, so it shows as the text it is and never becomes
markup, math or raw HTML: prose is backslash-escaped with `<`, `>`, `&` as entities, names and
ids go in code spans, arguments and tool output in fenced code blocks. The only HTML is the
`<details>` written here around thinking.

The views dispatch on the wire tags (a message's `role`, a block's or an event's `type`),
which are public API forever, not on the classes: the module imports no message, content or
event module (their classes are named for the type checker only), so that a message can show
itself (`_repr_markdown_`) without an import cycle.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

from ._enums import StopReason
from ._usage import Usage

if TYPE_CHECKING:
    from ._content import ImageContent, TextContent, ThinkingContent, ToolCall
    from ._events import (
        AgentEvent,
        MessageEndEvent,
        MessageStartEvent,
        MessageUpdateEvent,
        ModelFallbackEvent,
        ToolApprovalRequestEvent,
        ToolExecutionEndEvent,
        ToolExecutionStartEvent,
        ToolExecutionUpdateEvent,
    )
    from ._messages import (
        AgentMessage,
        AssistantMessage,
        BashExecutionMessage,
        BranchSummaryMessage,
        CompactionSummaryMessage,
        ToolApprovalMessage,
        ToolResultMessage,
        UserMessage,
    )
    from ._tools import AgentToolResult

__all__ = ["OUTPUT_CLIP", "escape_markdown", "message_markdown", "run_markdown", "usage_markdown"]

OUTPUT_CLIP = 2_000
"""How many characters of tool and shell output a run's view shows (a message's shows all)."""

_INLINE = re.compile(r"([\\`*_{}\[\]()!|~$^])")  # markup anywhere in a line; `$` starts math
_HTML = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})
_BLOCK_START = re.compile(r"[#+\-=]|\d{1,9}[.)]")  # headings, list items, setext underlines
_BLANK_LINES = re.compile(r"\n(?:[ \t]*\n)+")
_BACKTICKS = re.compile(r"`+")
_RULE = "\n\n---\n\n"


def escape_markdown(text: str) -> str:
    """`text` as Markdown that renders as exactly that text, its line breaks kept."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").strip("\n")
    paragraphs = _BLANK_LINES.split(text)
    return "\n\n".join("\\\n".join(map(_escape_line, p.split("\n"))) for p in paragraphs)


def _escape_line(line: str) -> str:
    body = line.lstrip(" \t")
    indent = line[: len(line) - len(body)].replace("\t", "    ")
    body = _INLINE.sub(r"\\\1", body.rstrip()).translate(_HTML)
    start = _BLOCK_START.match(body)
    if start:  # only a line's first character can start a block; escape its last mark char
        end = start.end() - 1
        body = body[:end] + "\\" + body[end:]
    return "&nbsp;" * len(indent) + body  # leading spaces would otherwise make a code block


def _code(text: str) -> str:
    """`text` as an inline code span (on one line)."""
    text = text.replace("\n", " ")
    if not text:
        return "*(empty)*"
    fence = "`" * (max(map(len, _BACKTICKS.findall(text)), default=0) + 1)
    pad = " " if text[0] in "` " or text[-1] in "` " else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _code_block(text: str, info: str = "") -> str:
    fence = "`" * max(3, max(map(len, _BACKTICKS.findall(text)), default=0) + 1)
    body = text.removesuffix("\n")
    return f"{fence}{info}\n{body}\n{fence}"


def _clip(text: str, limit: int | None) -> tuple[str, str]:
    """`text` cut to `limit` characters, and a note saying how much was cut (or "")."""
    if limit is None or len(text) <= limit:
        return text, ""
    return text[:limit], f"\n\n*… {len(text) - limit:,} more characters*"


def _output(text: str, limit: int | None) -> str:
    if not text:
        return "*(no output)*"
    shown, note = _clip(text, limit)
    return _code_block(shown, "text") + note


def _image(block: ImageContent) -> str:
    return f"*\\[image: {escape_markdown(block.mime_type)}, {len(block.data) * 3 // 4:,} bytes\\]*"


def _cost(dollars: float) -> str:
    return "\\$0" if dollars == 0 else f"\\${dollars:,.4f}"


def usage_markdown(usage: Usage) -> str:
    """One line: tokens in, out, cached and in total, and the cost in USD."""
    parts = [f"{usage.input:,} in", f"{usage.output:,} out"]
    if usage.cache_read:
        parts.append(f"{usage.cache_read:,} cache read")
    if usage.cache_write:
        parts.append(f"{usage.cache_write:,} cache write")
    tokens = f"tokens: {', '.join(parts)} ({usage.total_tokens:,} total)"
    return f"{tokens} · cost {_cost(usage.cost.total)}"


def _header(label: str, *notes: str) -> str:
    return " · ".join((f"**{label}**", *notes))


def _user_content(content: str | Sequence[TextContent | ImageContent], limit: int | None,
                  code: bool) -> str:
    blocks = [] if isinstance(content, str) else content
    text = content if isinstance(content, str) else "".join(
        cast("TextContent", b).text for b in blocks if b.type == "text")
    parts: list[str] = []
    if code:
        parts.append(_output(text, limit))
    elif text:
        parts.append(escape_markdown(text))
    parts.extend(_image(cast("ImageContent", b)) for b in blocks if b.type == "image")
    return "\n\n".join(parts)


def _thinking(block: ThinkingContent, open_: bool) -> str:
    if block.redacted:
        return "*thinking (redacted)*"
    quoted = "\n".join(f"> {line}".rstrip() for line in escape_markdown(block.thinking).split("\n"))
    details = "<details open>" if open_ else "<details>"
    return f"{details}<summary>thinking</summary>\n\n{quoted}\n\n</details>"


def _user(m: UserMessage, clip: int | None, streaming: bool) -> str:
    return f"**User**\n\n{_user_content(m.content, None, code=False)}"


def _assistant(m: AssistantMessage, clip: int | None, streaming: bool) -> str:
    notes = [_code(f"{m.provider}/{m.model}")]
    notes.append("*streaming…*" if streaming else f"stop: {_code(str(m.stop_reason))}")
    parts = [_header("Assistant", *notes)]
    content = list(m.content)  # a streaming partial's list may grow on the run's thread
    for i, block in enumerate(content):
        if block.type == "text":
            text = cast("TextContent", block).text
            if text:
                parts.append(escape_markdown(text))
        elif block.type == "thinking":
            parts.append(_thinking(cast("ThinkingContent", block),
                                   open_=streaming and i == len(content) - 1))
        elif block.type == "toolCall":
            call = cast("ToolCall", block)
            args = json.dumps(call.arguments, indent=2, ensure_ascii=False, default=repr)
            parts.append(f"{_header('Tool call', _code(call.name), _code(call.id))}\n\n"
                         f"{_code_block(args, 'json')}")
    if m.error_message:
        parts.append(f"**Error:** {escape_markdown(m.error_message)}")
    if not streaming:
        parts.append(f"*{usage_markdown(m.usage)}*")
    return "\n\n".join(parts)


def _tool_result(m: ToolResultMessage, clip: int | None, streaming: bool) -> str:
    header = _header("Tool result", _code(m.tool_name), _code(m.tool_call_id),
                     *(["**error**"] if m.is_error else []))
    return f"{header}\n\n{_user_content(m.content, clip, code=True)}"


def _bash(m: BashExecutionMessage, clip: int | None, streaming: bool) -> str:
    status = "cancelled" if m.cancelled else f"exit code {m.exit_code}"
    parts = [_header("Shell", _code(f"$ {m.command}"), status), _output(m.output, clip)]
    if m.truncated:
        where = f": full output in {_code(m.full_output_path)}" if m.full_output_path else ""
        parts.append(f"*output truncated{where}*")
    return "\n\n".join(parts)


def _compaction(m: CompactionSummaryMessage, clip: int | None, streaming: bool) -> str:
    header = _header("Compaction summary", f"{m.tokens_before:,} tokens before")
    return f"{header}\n\n{escape_markdown(m.summary)}"


def _branch(m: BranchSummaryMessage, clip: int | None, streaming: bool) -> str:
    header = _header("Branch summary", f"from {_code(m.from_id)}")
    return f"{header}\n\n{escape_markdown(m.summary)}"


def _approval(m: ToolApprovalMessage, clip: int | None, streaming: bool) -> str:
    lines = [f"- allowed {_code(call_id)}" for call_id in m.approved]
    lines += [f"- denied {_code(call_id)}: {escape_markdown(reason)}"
              for call_id, reason in m.denied.items()]
    return f"{_header('Tool approvals')}\n\n" + "\n".join(lines)


_VIEWS: dict[str, Callable[[Any, int | None, bool], str]] = {
    "user": _user,
    "assistant": _assistant,
    "toolResult": _tool_result,
    "bashExecution": _bash,
    "compactionSummary": _compaction,
    "branchSummary": _branch,
    "toolApproval": _approval,
}
"""The view of each built-in message, by its `role` (which no other message may take)."""


def message_markdown(message: object, *, clip: int | None = None,
                     streaming: bool = False) -> str:
    """A message as Markdown: its role, text, thinking, tool calls or results, and usage.

    Tool and shell output longer than `clip` characters is cut. `streaming` marks an assistant
    reply still being written: its latest thinking shows open and it has no usage line yet.
    An application's own message kinds show their role and `repr`.
    """
    role = getattr(message, "role", None)
    view = _VIEWS.get(role) if isinstance(role, str) else None
    if view is not None:
        return view(message, clip, streaming)
    role = escape_markdown(str(getattr(message, "role", type(message).__name__)))
    return f"**{role}**\n\n{_code_block(repr(message))}"


def _status(messages: Sequence[AgentMessage], ended: bool, abort_requested: bool,
            waiting: bool) -> str:
    if not ended:
        return "⏹ aborting…" if abort_requested else "⏳ running"
    if waiting:
        return "⏸ waiting for approval"
    replies = [cast("AssistantMessage", m) for m in messages if m.role == "assistant"]
    reason = replies[-1].stop_reason if replies else None
    if reason == StopReason.ABORTED:
        return "⏹ aborted"
    if reason == StopReason.ERROR:
        return "❌ failed"
    return "✅ done"


def run_markdown(events: Sequence[AgentEvent], *, abort_requested: bool = False,
                 clip: int | None = OUTPUT_CLIP) -> str:
    """A run as Markdown, from its events so far: status, transcript and usage totals.

    The status is running (aborting once `abort_requested`), then done, aborted or failed by
    the run's last reply, or waiting for approval when tool calls wait for a person (API §20).
    Below the messages the run added come the reply being streamed, the tools still running
    with their latest progress, and the calls waiting for approval.
    """
    messages: list[AgentMessage] = []
    streaming: AgentMessage | None = None
    running: dict[str, tuple[str, AgentToolResult | None]] = {}  # call id -> (tool, progress)
    waiting: dict[str, str] = {}  # call id -> tool, for calls waiting for approval
    discarded = Usage()  # of replies a fallback model took over (API §24)
    ended = False
    for event in events:
        kind = event.type
        if kind in ("message_start", "message_update"):
            streaming = cast("MessageStartEvent | MessageUpdateEvent", event).message
        elif kind == "message_end":
            messages.append(cast("MessageEndEvent", event).message)
            streaming = None
        elif kind == "tool_approval_request":
            request = cast("ToolApprovalRequestEvent", event)
            waiting[request.tool_call_id] = request.tool_name
        elif kind == "tool_execution_start":
            start = cast("ToolExecutionStartEvent", event)
            waiting.pop(start.tool_call_id, None)
            running[start.tool_call_id] = (start.tool_name, None)
        elif kind == "tool_execution_update":
            update = cast("ToolExecutionUpdateEvent", event)
            running[update.tool_call_id] = (update.tool_name, update.partial_result)
        elif kind == "tool_execution_end":
            running.pop(cast("ToolExecutionEndEvent", event).tool_call_id, None)
        elif kind == "model_fallback":  # the failed reply is dropped; its usage counts
            streaming = None
            failed = cast("ModelFallbackEvent", event).failed
            if failed is not None:
                discarded += failed.usage
        elif kind == "agent_end":
            ended = True
    usages = [cast("AssistantMessage | ToolResultMessage", m).usage for m in messages
              if m.role in ("assistant", "toolResult")]
    total = sum((usage for usage in usages if usage is not None), discarded)
    count = f"{len(messages)} message{'' if len(messages) == 1 else 's'}"
    status = _status(messages, ended, abort_requested, bool(waiting))
    parts = [_header("Agent run", status, count, usage_markdown(total))]
    parts.extend(message_markdown(m, clip=clip) for m in messages)
    if streaming is not None:
        parts.append(message_markdown(streaming, clip=clip, streaming=True))
    for call_id, (name, progress) in running.items():
        view = _header("Running tool", _code(name), _code(call_id))
        if progress is not None and progress.content:
            view += "\n\n" + _user_content(progress.content, clip, code=True)
        parts.append(view)
    for call_id, name in waiting.items():
        parts.append(_header("⏸ waiting for approval", _code(name), _code(call_id)))
    return _RULE.join(parts)
