"""What a model call sees (`Context`) and what a run works on (`AgentContext`)."""

from __future__ import annotations

import attrs
from attrs.validators import deep_iterable, instance_of, optional

from ._messages import AgentMessage, Message
from ._tools import AgentTool, Tool

__all__ = ["AgentContext", "Context"]


@attrs.frozen
class Context:
    """One model request: the system prompt, the messages and the tools on offer."""

    system_prompt: str | None = attrs.field(validator=optional(instance_of(str)))
    messages: list[Message] = attrs.field(validator=instance_of(list))
    tools: list[Tool] | None = attrs.field(
        default=None, validator=optional(deep_iterable(instance_of(Tool), instance_of(list)))
    )


@attrs.define
class AgentContext:
    """The state a run works on; mutable, and copied by the loop before use."""

    system_prompt: str = attrs.field(default="", validator=instance_of(str))
    messages: list[AgentMessage] = attrs.field(factory=list, validator=instance_of(list))
    tools: list[AgentTool] = attrs.field(
        factory=list, validator=deep_iterable(instance_of(AgentTool), instance_of(list))
    )
