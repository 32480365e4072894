"""What a model call sees (`Context`) and what a run works on (`AgentContext`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from ._messages import LLM_TYPES, AgentMessage, Message
from ._tools import AgentTool, Tool, tool_hint
from ._unchecked import unchecked_constructor
from ._validators import (
    dict_message_hint,
    instance_of,
    list_of,
    list_of_messages,
    optional_instance_of,
    type_error,
)

__all__ = ["AgentContext", "Context", "unchecked_context"]

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


unchecked_context: Callable[[str | None, list[Message], list[Tool] | None], Context] = (
    unchecked_constructor(Context))
"""`Context(system_prompt, messages, tools)` without its validators, for the loop alone.

Checking every message's class costs time linear in the transcript on every model call; the
loop skips it when it knows the list holds only LLM messages (`default_convert_to_llm` has just
made it, or nothing but such messages was ever added). Not exported from `agentcore`.
"""


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
