"""What a model call sees (`Context`) and what a run works on (`AgentContext`)."""

from __future__ import annotations

from typing import Any

import attrs
from attrs.validators import deep_iterable, instance_of, optional

from ._messages import AgentMessage, AssistantMessage, Message, ToolResultMessage, UserMessage
from ._tools import AgentTool, Tool

__all__ = ["AgentContext", "Context"]


def _has_role(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(getattr(value, "role", None), str):
        raise TypeError(f"'{attribute.name}' must hold messages with a 'role', got {value!r}")


_LLM_TYPES = frozenset((UserMessage, AssistantMessage, ToolResultMessage))


def _llm_messages(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    # This runs on every model call, so the common case is one pass in C over the classes.
    if not isinstance(value, list):
        raise TypeError(f"'{attribute.name}' must be a list, got {value!r}")
    if _LLM_TYPES.issuperset(map(type, value)):
        return
    for message in value:
        if message.__class__ not in _LLM_TYPES and not isinstance(
            message, (UserMessage, AssistantMessage, ToolResultMessage)
        ):
            raise TypeError(f"'{attribute.name}' must hold user, assistant or tool-result "
                            f"messages, got {message!r}")


@attrs.frozen
class Context:
    """One model request: the system prompt, the messages and the tools on offer."""

    system_prompt: str | None = attrs.field(validator=optional(instance_of(str)))
    messages: list[Message] = attrs.field(validator=_llm_messages)
    tools: list[Tool] | None = attrs.field(
        default=None, validator=optional(deep_iterable(instance_of(Tool), instance_of(list)))
    )


@attrs.define
class AgentContext:
    """The state a run works on; mutable, and copied by the loop before use."""

    system_prompt: str = attrs.field(default="", validator=instance_of(str))
    messages: list[AgentMessage] = attrs.field(
        factory=list, validator=deep_iterable(_has_role, instance_of(list))
    )
    tools: list[AgentTool] = attrs.field(
        factory=list, validator=deep_iterable(instance_of(AgentTool), instance_of(list))
    )
