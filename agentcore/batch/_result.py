"""`BatchResult`, and its JSON-ready form: what crosses a process boundary and fills the store.

A result's pending approvals are found in its transcript by `find_pause`, as an agent's are
(API §20): the result keeps only the verdict of the tools' rules, which stay with the agents
(the ids of the calls that needed approval), so its waiting calls never disagree with its
messages.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Collection, Sequence
from typing import Any

import attrs

from .._core import (
    AgentMessage,
    Pause,
    ToolCall,
    Usage,
    failure_text,
    find_pause,
    from_dict,
    to_dict,
)

__all__ = ["BatchResult", "Input", "failed", "from_wire", "from_wire_input", "input_json",
           "pause_of", "to_wire", "wire_input"]

Input = str | AgentMessage | Sequence[AgentMessage]
"""One input of a batch: what `Agent.prompt` takes (a str, a message or a list of messages)."""


def _waiting(messages: Sequence[AgentMessage], asked: Collection[str]) -> list[ToolCall]:
    """The calls of the batch at the end of `messages` that wait, by the verdict `asked`."""
    pause = find_pause(messages, (), asked=asked)
    return [] if pause is None else pause.calls


def _found_in_messages(result: BatchResult, _: attrs.Attribute[Any],
                       pending: list[ToolCall]) -> None:
    """Validator of `pending_approvals`: they are the calls `find_pause` finds waiting."""
    if not isinstance(pending, list) or not all(isinstance(c, ToolCall) for c in pending):
        raise TypeError(f"'pending_approvals' must be a list of ToolCall, got {pending!r:.80}")
    if _waiting(result.messages, {c.id for c in pending}) != pending:
        raise ValueError(f"'pending_approvals' must be the calls of the last assistant "
                         f"message of 'messages' that wait for approval, in its order (none "
                         f"answered or decided), got {[c.id for c in pending]!r}")


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
    They are checked against `messages` as `find_pause` reads them: `ValueError` for calls
    that are not the waiting ones of the last assistant message (of which they say which need
    approval, the tools' verdict, since the tools stay with the agents).
    """

    index: int
    input: Any
    messages: list[AgentMessage] = attrs.field(factory=list, repr=False)
    text: str = ""
    output: Any = None
    usage: Usage = attrs.field(factory=Usage, repr=False)
    error: str | None = None
    pending_approvals: list[ToolCall] = attrs.field(factory=list, validator=_found_in_messages)

    @property
    def ok(self) -> bool:
        """Whether the run ended without an error (a run waiting for approval did)."""
        return self.error is None


def pause_of(result: BatchResult) -> Pause | None:
    """The batch of calls `result`'s run stopped on for approval, found by `find_pause`."""
    return find_pause(result.messages, (), asked={c.id for c in result.pending_approvals})


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
    """`result` as JSON-ready data, its input left out (the receiver has it).

    `pending_approvals` are written whole, as before, though `from_wire` reads only their ids
    (the tools' verdict) and finds the calls in the messages: any version reads what any other
    wrote.
    """
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
    under another `output_type`. The pending approvals are found in the messages by
    `find_pause`; the stored ones give only the ids of the calls that needed approval.
    """
    output = data.get("output")
    if output_type is not None and data.get("error") is None:
        output = _converter().structure(output, output_type)
    elif output_type is None:
        output = None
    messages = from_dict(list[AgentMessage], data["messages"])
    asked = {c.id for c in from_dict(list[ToolCall], data.get("pending_approvals", []))}
    return BatchResult(
        index=int(data["index"]), input=input, messages=messages,
        text=str(data["text"]), output=output,
        usage=from_dict(Usage, data["usage"]), error=data.get("error"),
        pending_approvals=_waiting(messages, asked),
    )


@functools.cache
def _converter() -> Any:
    """The cattrs converter for outputs (cattrs is loaded on first use)."""
    from cattrs import Converter

    return Converter()
