"""What a model call sees (`Context`) and what a run works on (`AgentContext`)."""

from __future__ import annotations

from typing import Any

import attrs

from ._messages import LLM_TYPES, AgentMessage, Message
from ._tools import AgentTool, Tool, tool_hint
from ._validators import (
    dict_message_hint,
    instance_of,
    list_of,
    list_of_messages,
    optional_instance_of,
    type_error,
)

__all__ = ["AgentContext", "Context"]

_LLM_KINDS = "a UserMessage, an AssistantMessage or a ToolResultMessage"


def _llm_messages(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    # This runs on every model call, so the common case is one pass in C over the classes.
    if not isinstance(value, list):
        raise type_error(attribute.name, "a list of messages", value)
    if LLM_TYPES.issuperset(map(type, value)):
        return
    for index, message in enumerate(value):
        if message.__class__ not in LLM_TYPES and not isinstance(
            message, tuple(LLM_TYPES)
        ):
            raise type_error(f"{attribute.name}[{index}]", _LLM_KINDS, message,
                             dict_message_hint(message))


@attrs.frozen
class Context:
    """One model request: the system prompt, the messages and the tools on offer."""

    system_prompt: str | None = attrs.field(validator=optional_instance_of(str))
    messages: list[Message] = attrs.field(validator=_llm_messages)
    tools: list[Tool] | None = attrs.field(
        default=None, validator=list_of(Tool, optional=True)
    )

    @classmethod
    def unchecked(cls, system_prompt: str | None, messages: list[Message],
                  tools: list[Tool] | None) -> Context:
        """A `Context` built without its validators, for the loop's own checked parts.

        Checking every message's class costs time linear in the transcript on every model
        call; the loop skips it when `default_convert_to_llm` has just made the list.
        """
        context = object.__new__(cls)
        object.__setattr__(context, "system_prompt", system_prompt)
        object.__setattr__(context, "messages", messages)
        object.__setattr__(context, "tools", tools)
        return context


@attrs.define
class AgentContext:
    """The state a run works on; mutable, and copied by the loop before use."""

    system_prompt: str = attrs.field(default="", validator=instance_of(str))
    messages: list[AgentMessage] = attrs.field(
        factory=list, validator=list_of_messages
    )
    tools: list[AgentTool] = attrs.field(
        factory=list, validator=list_of(AgentTool, hint=tool_hint)
    )
