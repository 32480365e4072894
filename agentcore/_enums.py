"""String enums that travel on the wire; each member compares equal to its plain string."""

from __future__ import annotations

from enum import Enum

__all__ = ["QueueMode", "StopReason", "ThinkingLevel", "ToolExecutionMode"]


class _StrEnum(str, Enum):
    def __str__(self) -> str:
        return str(self.value)


class StopReason(_StrEnum):
    """Why an assistant message ended."""

    STOP = "stop"
    LENGTH = "length"
    TOOL_USE = "toolUse"
    ERROR = "error"
    ABORTED = "aborted"


class ThinkingLevel(_StrEnum):
    """How hard a reasoning model should think; `OFF` sends no reasoning option."""

    OFF = "off"
    MINIMAL = "minimal"
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    XHIGH = "xhigh"


class ToolExecutionMode(_StrEnum):
    """Whether a batch of tool calls runs one after another or concurrently."""

    SEQUENTIAL = "sequential"
    PARALLEL = "parallel"


class QueueMode(_StrEnum):
    """How many queued messages one poll of a queue hands over."""

    ALL = "all"
    ONE_AT_A_TIME = "one-at-a-time"
