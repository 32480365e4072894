"""String enums that travel on the wire; each member compares equal to its plain string."""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from typing import Any

from ._validators import got

__all__ = ["QueueMode", "StopReason", "ThinkingLevel", "ToolExecutionMode", "WireEnum"]


class WireEnum(str, Enum):
    """A `str` enum whose members print, and travel on the wire, as their plain values."""

    def __str__(self) -> str:
        return str(self.value)


class StopReason(WireEnum):
    """Why an assistant message ended."""

    STOP = "stop"
    LENGTH = "length"
    TOOL_USE = "toolUse"
    ERROR = "error"
    ABORTED = "aborted"


class ThinkingLevel(WireEnum):
    """How hard a reasoning model should think; `OFF` sends no reasoning option."""

    OFF = "off"
    MINIMAL = "minimal"
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    XHIGH = "xhigh"


class ToolExecutionMode(WireEnum):
    """Whether a batch of tool calls runs one after another or concurrently."""

    SEQUENTIAL = "sequential"
    PARALLEL = "parallel"


class QueueMode(WireEnum):
    """How many queued messages one poll of a queue hands over."""

    ALL = "all"
    ONE_AT_A_TIME = "one-at-a-time"


def _member(cls: type[WireEnum], value: Any) -> Any:
    """`cls(value)`, or `value` unchanged so that `member_of` can reject it by field name.

    A member, or a value of one, is looked up in the enum's own value map first: `cls(value)`
    goes through `EnumMeta.__call__`, ten times the cost, and this runs in every
    `AssistantMessage` built. What the map does not hold takes `cls(value)` as before.
    """
    if type(value) is cls:
        return value
    try:
        return cls._value2member_map_[value]
    except (KeyError, TypeError):
        pass
    try:
        return cls(value)
    except (ValueError, TypeError):
        return value


def to_stop_reason(value: Any) -> Any:
    """Attrs converter: a `StopReason` from its string (see `member_of`)."""
    return _member(StopReason, value)


def to_thinking_level(value: Any) -> Any:
    """Attrs converter: a `ThinkingLevel` from its string (see `member_of`)."""
    return _member(ThinkingLevel, value)


def to_queue_mode(value: Any) -> Any:
    """Attrs converter: a `QueueMode` from its string (see `member_of`)."""
    return _member(QueueMode, value)


def to_tool_execution_mode(value: Any) -> Any:
    """Attrs converter: a `ToolExecutionMode` from its string (see `member_of`)."""
    return _member(ToolExecutionMode, value)


def member_of(cls: type[WireEnum], optional: bool = False) -> Callable[[Any, Any, Any], None]:
    """Attrs validator naming the field when its value is not a member of `cls` (or None)."""

    def check(_: Any, attribute: Any, value: Any) -> None:
        if not isinstance(value, cls) and not (optional and value is None):
            allowed = ", ".join(repr(m.value) for m in cls) + (" or None" if optional else "")
            raise ValueError(f"'{attribute.name}' must be one of {allowed}, got {got(value)}")

    return check
