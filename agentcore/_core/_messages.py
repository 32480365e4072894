"""Messages: what the user, the model and tools say, plus the agent's own transcript entries."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import attrs

from ._content import AssistantContent, ImageContent, TextContent, ThinkingContent, ToolCall
from ._enums import StopReason, member_of, to_stop_reason
from ._render import message_markdown
from ._usage import Usage
from ._validators import (
    instance_of,
    list_of,
    optional_instance_of,
    strict_int,
    string,
    type_error,
)

__all__ = [
    "LLM_TYPES",
    "AgentMessage",
    "AssistantMessage",
    "BashExecutionMessage",
    "BranchSummaryMessage",
    "CompactionSummaryMessage",
    "Message",
    "ToolApprovalMessage",
    "ToolResultMessage",
    "UserMessage",
    "default_convert_to_llm",
    "error_reply",
    "unanswered_tool_calls",
]

_log = logging.getLogger(__name__)


def now_ms() -> int:
    """The current time in integer milliseconds since the epoch."""
    return time.time_ns() // 1_000_000


_str = string
_opt_str = optional_instance_of(str)
_timestamp = attrs.field(factory=now_ms, validator=strict_int)
_user_blocks = list_of(TextContent, ImageContent)
_bool = instance_of(bool)
_usage = instance_of(Usage)


def _str_dict(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise type_error(attribute.name, "a dict of str to str", value)


@attrs.frozen
class UserMessage:
    """What the user says: a string or a list of text and image blocks."""

    role: ClassVar[str] = "user"
    content: str | list[TextContent | ImageContent] = attrs.field()
    timestamp: int = _timestamp

    @content.validator
    def _check_content(self, attribute: attrs.Attribute[Any], value: object) -> None:
        if isinstance(value, str):
            return
        if not isinstance(value, list):
            raise type_error(attribute.name, "a str or a list of TextContent or ImageContent",
                             value)
        _user_blocks(self, attribute, value)

    @property
    def text(self) -> str:
        """The text of the message, its text blocks joined."""
        if isinstance(self.content, str):
            return self.content
        return "".join(b.text for b in self.content if isinstance(b, TextContent))

    _repr_markdown_ = message_markdown  # Jupyter shows the message as Markdown


@attrs.frozen
class AssistantMessage:
    """One reply of a model, final or (inside stream events) partial."""

    role: ClassVar[str] = "assistant"
    content: list[AssistantContent] = attrs.field(
        validator=list_of(TextContent, ThinkingContent, ToolCall)
    )
    api: str = attrs.field(validator=_str)
    provider: str = attrs.field(validator=_str)
    model: str = attrs.field(validator=_str)
    usage: Usage = attrs.field(default=Usage(), validator=_usage)  # frozen: shareable
    stop_reason: StopReason = attrs.field(
        default=StopReason.STOP, converter=to_stop_reason, validator=member_of(StopReason)
    )
    error_message: str | None = attrs.field(default=None, validator=_opt_str)
    response_id: str | None = attrs.field(default=None, validator=_opt_str)
    timestamp: int = _timestamp

    @property
    def text(self) -> str:
        """The text blocks joined."""
        return "".join(b.text for b in self.content if isinstance(b, TextContent))

    @property
    def tool_calls(self) -> list[ToolCall]:
        """The tool calls, in order."""
        return [b for b in self.content if isinstance(b, ToolCall)]

    _repr_markdown_ = message_markdown  # Jupyter shows the message as Markdown


@attrs.frozen
class ToolResultMessage:
    """The result of one tool call, sent back to the model; `details` stays local."""

    role: ClassVar[str] = "toolResult"
    tool_call_id: str = attrs.field(validator=_str)
    tool_name: str = attrs.field(validator=_str)
    content: list[TextContent | ImageContent] = attrs.field(factory=list, validator=_user_blocks)
    details: Any = None
    is_error: bool = attrs.field(default=False, validator=_bool)
    usage: Usage | None = attrs.field(default=None, validator=optional_instance_of(Usage))
    added_tool_names: list[str] | None = attrs.field(
        default=None, validator=list_of(str, optional=True)
    )
    timestamp: int = _timestamp

    @property
    def text(self) -> str:
        """The text blocks joined."""
        return "".join(b.text for b in self.content if isinstance(b, TextContent))

    _repr_markdown_ = message_markdown  # Jupyter shows the message as Markdown


@attrs.frozen
class BashExecutionMessage:
    """A shell command the user ran and its output, kept in the transcript."""

    role: ClassVar[str] = "bashExecution"
    command: str = attrs.field(validator=_str)
    output: str = attrs.field(validator=_str)
    exit_code: int | None = attrs.field(validator=optional_instance_of(int))
    cancelled: bool = attrs.field(default=False, validator=_bool)
    truncated: bool = attrs.field(default=False, validator=_bool)
    full_output_path: str | None = attrs.field(default=None, validator=_opt_str)
    timestamp: int = _timestamp

    _repr_markdown_ = message_markdown  # Jupyter shows the message as Markdown


@attrs.frozen
class CompactionSummaryMessage:
    """A summary that stands in for older messages removed to save context."""

    role: ClassVar[str] = "compactionSummary"
    summary: str = attrs.field(validator=_str)
    tokens_before: int = attrs.field(validator=instance_of(int))
    timestamp: int = _timestamp

    _repr_markdown_ = message_markdown  # Jupyter shows the message as Markdown


@attrs.frozen
class BranchSummaryMessage:
    """A summary of a conversation branch that was left."""

    role: ClassVar[str] = "branchSummary"
    summary: str = attrs.field(validator=_str)
    from_id: str = attrs.field(validator=_str)
    timestamp: int = _timestamp

    _repr_markdown_ = message_markdown  # Jupyter shows the message as Markdown


@attrs.frozen
class ToolApprovalMessage:
    """The decisions on tool calls that waited for approval (API §20), stored before any runs.

    `approved` lists the call ids allowed; `denied` maps each refused call id to its reason.
    Models never see it (`default_convert_to_llm` drops it): it is the transcript's durable
    record that these calls were decided, so that a process killed while they run never asks,
    or runs them, again.
    """

    role: ClassVar[str] = "toolApproval"
    approved: list[str] = attrs.field(factory=list, validator=list_of(str))
    denied: dict[str, str] = attrs.field(factory=dict, validator=_str_dict)
    timestamp: int = _timestamp

    _repr_markdown_ = message_markdown  # Jupyter shows the message as Markdown


Message = UserMessage | AssistantMessage | ToolResultMessage
"""What a provider accepts: user, assistant and tool-result messages."""

if TYPE_CHECKING:
    from ._model import Model

    class _CustomMessage(Protocol):
        """Any application message class with a class-level `role` string."""

        @property
        def role(self) -> str: ...

    AgentMessage = (
        Message
        | BashExecutionMessage
        | CompactionSummaryMessage
        | BranchSummaryMessage
        | ToolApprovalMessage
        | _CustomMessage
    )
    """A transcript entry: a `Message`, one of the agent's own kinds, or an application's class."""
else:
    AgentMessage = (
        UserMessage
        | AssistantMessage
        | ToolResultMessage
        | BashExecutionMessage
        | CompactionSummaryMessage
        | BranchSummaryMessage
        | ToolApprovalMessage
    )


def _bash_text(m: BashExecutionMessage) -> str:
    status = "cancelled" if m.cancelled else f"exit code {m.exit_code}"
    notes = " (output truncated; full output at " + m.full_output_path + ")" if (
        m.truncated and m.full_output_path
    ) else (" (output truncated)" if m.truncated else "")
    return (
        f"Ran `{m.command}` ({status}){notes}\n<output>\n{m.output}\n</output>"
    )


LLM_TYPES = frozenset((UserMessage, AssistantMessage, ToolResultMessage))
"""The message classes a provider accepts."""
_LLM_OR_APPROVAL = LLM_TYPES | {ToolApprovalMessage}


def error_reply(
    model: Model, text: str, *, aborted: bool = False, content: Sequence[AssistantContent] = ()
) -> AssistantMessage:
    """The assistant message a failed or aborted model call ends as, keeping `content` so far."""
    return AssistantMessage(
        list(content), model.api, model.provider, model.id,
        stop_reason=StopReason.ABORTED if aborted else StopReason.ERROR, error_message=text,
    )


def default_convert_to_llm(messages: Iterable[AgentMessage]) -> list[Message]:
    """Turn a transcript into what a model accepts.

    User, assistant and tool-result messages pass through; a shell run becomes a user message
    describing it; compaction and branch summaries become user messages wrapping the summary in
    a tag; tool-approval records are dropped (models never see them), and anything else is
    dropped too (logged at debug level).
    """
    items = list(messages)
    kinds = set(map(type, items))
    if kinds <= LLM_TYPES:  # the common case: nothing to convert
        return items  # type: ignore[return-value]  # checked just above
    if kinds <= _LLM_OR_APPROVAL:  # a run with approvals: only their records to drop
        return [m for m in items if type(m) is not ToolApprovalMessage]  # type: ignore[misc]
    out: list[Message] = []
    for m in items:
        if isinstance(m, (UserMessage, AssistantMessage, ToolResultMessage)):
            out.append(m)
        elif isinstance(m, BashExecutionMessage):
            out.append(UserMessage(_bash_text(m), timestamp=m.timestamp))
        elif isinstance(m, CompactionSummaryMessage):
            out.append(UserMessage(
                "The conversation so far was compacted into this summary:\n"
                f"<summary>\n{m.summary}\n</summary>",
                timestamp=m.timestamp,
            ))
        elif isinstance(m, BranchSummaryMessage):
            out.append(UserMessage(
                "A branch of this conversation was summarised as follows:\n"
                f"<branch_summary>\n{m.summary}\n</branch_summary>",
                timestamp=m.timestamp,
            ))
        elif not isinstance(m, ToolApprovalMessage):
            _log.debug("default_convert_to_llm: dropping message with role %r",
                       getattr(m, "role", None))
    return out


def unanswered_tool_calls(messages: Sequence[AgentMessage]) -> list[ToolCall]:
    """The tool calls of the last assistant message that no later tool result answers.

    An assistant message that ended in an error or an abort has none: its calls never run.
    """
    answered: set[str] = set()
    for message in reversed(messages):
        if isinstance(message, ToolResultMessage):
            answered.add(message.tool_call_id)
        elif isinstance(message, AssistantMessage):
            if message.stop_reason in (StopReason.ERROR, StopReason.ABORTED):
                return []
            return [c for c in message.tool_calls if c.id not in answered]
    return []
