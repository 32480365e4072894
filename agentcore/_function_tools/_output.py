"""The `final_result` tool: how a run returns a typed value (`output_type`, API §14).

Its schema is built from the output type by the same code as `@tool`'s parameters, so every
type a tool parameter may have is an output type too. An object type (an attrs class, a
dataclass, a `TypedDict`) is the tool's arguments object itself; anything else (`int`, a
`Literal`, `list[...]`) is wrapped as the one required property `response`.
"""

from __future__ import annotations

import typing
from typing import Any

import attrs

from .._core import AbortSignal, AgentTool, AgentToolResult, TextContent, ToolUpdate
from ._schema import UnsupportedError, is_dataclass, object_schema, property_spec

__all__ = ["FINAL_RESULT", "output_tool"]

FINAL_RESULT = "final_result"
"""The name of the tool through which the model gives a run's structured output."""

_DESCRIPTION = ("Give your final answer by calling this tool; its arguments are the answer. "
                "Call it once, when you are done.")
_ACCEPTED = "Final result processed."


def _is_record(cls: Any) -> bool:
    return isinstance(cls, type) and (attrs.has(cls) or is_dataclass(cls)
                                      or typing.is_typeddict(cls))


def output_tool(output_type: Any) -> AgentTool:
    """The `final_result` tool whose validated arguments become a value of `output_type`.

    Its result's `details` hold that value, converted with cattrs to the exact type (an
    instance of the attrs class or dataclass, a dict for a `TypedDict`, an enum member, ...);
    its content tells the model the answer was received, and it ends the run's batch.

    Raises:
        TypeError: `output_type` has no JSON Schema (the message says which part and why).
    """
    try:
        schema, _ = property_spec(output_type, None, ())
    except UnsupportedError as exc:
        raise TypeError(f"'output_type' {output_type!r} is not supported: {exc}") from None
    wrapped = not _is_record(output_type)
    parameters = object_schema({"response": schema}, ["response"]) if wrapped else schema

    from cattrs import Converter  # here: `import agentcore` does not load cattrs

    converter = Converter()

    def execute(tool_call_id: str, args: Any, signal: AbortSignal,
                on_update: ToolUpdate) -> AgentToolResult:
        value = converter.structure(args["response"] if wrapped else args, output_type)
        return AgentToolResult([TextContent(_ACCEPTED)], details=value, terminate=True)

    return AgentTool(FINAL_RESULT, _DESCRIPTION, parameters, execute)
