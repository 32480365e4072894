"""What a model call sees (`Context`) and what a run works on (`AgentContext`)."""

from __future__ import annotations

from typing import Any

import attrs
from attrs.validators import deep_iterable, instance_of, optional

from ._messages import LLM_TYPES, AgentMessage, Message
from ._tools import AgentTool, Tool
from ._validators import has_role

__all__ = ["AgentContext", "Context"]




def _llm_messages(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    # This runs on every model call, so the common case is one pass in C over the classes.
    if not isinstance(value, list):
        raise TypeError(f"'{attribute.name}' must be a list, got {value!r}")
    if LLM_TYPES.issuperset(map(type, value)):
        return
    for message in value:
        if message.__class__ not in LLM_TYPES and not isinstance(
            message, tuple(LLM_TYPES)
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
        factory=list, validator=deep_iterable(has_role, instance_of(list))
    )
    tools: list[AgentTool] = attrs.field(
        factory=list, validator=deep_iterable(instance_of(AgentTool), instance_of(list))
    )
