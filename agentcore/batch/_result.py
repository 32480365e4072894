"""`BatchResult`, and its JSON-ready form: what crosses a process boundary and fills the store."""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from typing import Any

import attrs

from .._core import AgentMessage, ToolCall, Usage, failure_text, from_dict, to_dict

__all__ = ["BatchResult", "Input", "failed", "from_wire", "from_wire_input", "input_json",
           "to_wire", "wire_input"]

Input = str | AgentMessage | Sequence[AgentMessage]
"""One input of a batch: what `Agent.prompt` takes (a str, a message or a list of messages)."""


@attrs.frozen
class BatchResult:
    """How one input's run ended.

    `messages` are the messages the run added (the prompt first); `text` is the text of its last
    assistant message; `output` is the structured output when the batch has an `output_type`
    (else None); `usage` sums the run's model calls. `error` is None for a run that ended
    normally, else the run's error text, or `"<ExceptionType>: <message>"` when making the agent
    or starting the run raised: a failed input is a result, never an exception.

    `pending_approvals` are the tool calls the run stopped waiting for (API §20), empty unless
    it did: a run without an `approve` callback whose model asked for a call needing approval
    ends there, without error and without `output`, and its calls of that batch have not run.
    Resume it with `resume_batch(make_agent, [(result, {call.id: True | False | "reason"})])`.
    """

    index: int
    input: Any
    messages: list[AgentMessage] = attrs.field(factory=list, repr=False)
    text: str = ""
    output: Any = None
    usage: Usage = attrs.field(factory=Usage, repr=False)
    error: str | None = None
    pending_approvals: list[ToolCall] = attrs.field(factory=list)

    @property
    def ok(self) -> bool:
        """Whether the run ended without an error (a run waiting for approval did)."""
        return self.error is None


def failed(index: int, input: Any, exc: BaseException) -> BatchResult:
    """The result of an input whose run could not be made or started."""
    return BatchResult(index, input, error=failure_text(exc))


def wire_input(input: Any) -> Any:
    """`input` as JSON-ready data: a str stays, messages become dicts (see `to_dict`)."""
    if isinstance(input, str):
        return input
    if isinstance(input, (list, tuple)):
        return to_dict(list(input))
    return to_dict(input)


def from_wire_input(data: Any) -> Any:
    """The input `wire_input` wrote: a str, a message or a list of messages."""
    if isinstance(data, str):
        return data
    if isinstance(data, list):
        return from_dict(list[AgentMessage], data)
    return from_dict(AgentMessage, data)


def input_json(input: Any) -> str:
    """The canonical JSON text of `input`: how the store recognises an input it has seen."""
    return json.dumps(wire_input(input), sort_keys=True, ensure_ascii=False,
                      separators=(",", ":"))


def to_wire(result: BatchResult) -> dict[str, Any]:
    """`result` as JSON-ready data, its input left out (the receiver has it)."""
    data: dict[str, Any] = {
        "index": result.index,
        "messages": to_dict(result.messages),
        "text": result.text,
        "usage": to_dict(result.usage),
        "error": result.error,
    }
    if result.pending_approvals:
        data["pending_approvals"] = to_dict(result.pending_approvals)
    if result.output is not None:
        data["output"] = _converter().unstructure(result.output)
    return data


def from_wire(data: dict[str, Any], input: Any, output_type: Any) -> BatchResult:
    """The `BatchResult` `to_wire` wrote, its output converted back to `output_type`.

    Raises `ValueError` (or cattrs' errors) when the data does not fit, say an output stored
    under another `output_type`.
    """
    output = data.get("output")
    if output_type is not None and data.get("error") is None:
        output = _converter().structure(output, output_type)
    elif output_type is None:
        output = None
    return BatchResult(
        index=int(data["index"]), input=input,
        messages=from_dict(list[AgentMessage], data["messages"]),
        text=str(data["text"]), output=output,
        usage=from_dict(Usage, data["usage"]), error=data.get("error"),
        pending_approvals=from_dict(list[ToolCall], data.get("pending_approvals", [])),
    )


@functools.cache
def _converter() -> Any:
    """The cattrs converter for outputs (cattrs is loaded on first use)."""
    from cattrs import Converter

    return Converter()
