"""Structured output in the loop: when a run with an `output_type` is done, retried or failed.

In tool mode the model answers through the `final_result` tool. A valid call ends the run; an
invalid one (its error result goes back to the model) or a reply with no tool call at all (the
loop asks for the tool in a user message) uses one of `output_retries`; past them the run ends
in error. In native mode (API §18) the answer is the text of a reply without tool calls, read
as that tool's arguments and checked by the same code; an invalid one is answered with a user
message saying what was wrong, within the same retries.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Sequence
from typing import Any

import attrs

from .._core import (
    OUTPUT_FAILED_TEXT,
    AbortController,
    AgentTool,
    AssistantMessage,
    Model,
    StopReason,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    failure_text,
    validate_tool_arguments,
)
from .._function_tools import FINAL_RESULT
from ..providers import check_native_output, check_tool_choice
from ._config import AgentLoopConfig

__all__ = ["NUDGE_TEXT", "OutputState", "Verdict", "check_run", "native_output"]

NUDGE_TEXT = (f"Please give your final answer by calling the `{FINAL_RESULT}` tool with valid "
              "arguments.")
"""The user message that answers a reply without the `final_result` call."""
NATIVE_NUDGE_TEXT = ("Your reply is not a valid answer: {error}\n\nReply with only the JSON "
                     "answer, as the response format's schema describes it.")
"""The user message that answers an invalid native answer (`{error}` says why)."""


class Verdict(enum.Enum):
    """What the loop does after a turn of a run with an `output_type`."""

    GO_ON = "go_on"  # other tools ran (or final_result failed): the model goes on as usual
    DONE = "done"  # a valid final_result: the run ends
    NUDGE = "nudge"  # no (valid) answer: say so in a user message
    FAILED = "failed"  # out of retries: the run ends in error


def check_run(config: AgentLoopConfig, model: Model, tools: Sequence[Tool]) -> None:
    """Raise `ValueError` if a run of `config` cannot call `model` with `tools`.

    That is: a `tool_choice` naming none of `tools` (`final_result` counts in tool mode), a
    native output `model` cannot give (next to `tools`, if any: Gemini before 3 cannot), or,
    in tool mode, a tool named `final_result` or a `tool_choice` of `"none"` (the model could
    never answer). Checked when a run starts and when `prepare_next_turn` swaps the model or
    the context.
    """
    names = [tool.name for tool in tools]
    if config.output_type is not None and config.output_mode == "native":
        check_native_output(model, with_tools=bool(tools))
    elif config.output_type is not None:
        if FINAL_RESULT in names:
            raise ValueError(f"a tool is named {FINAL_RESULT!r}, the name of the tool that "
                             "gives the output of a run with an output_type")
        if config.tool_choice == "none":
            raise ValueError("'tool_choice' 'none' leaves the model no way to call "
                             f"{FINAL_RESULT!r}: use output_mode='native', or another choice")
        names.append(FINAL_RESULT)
    check_tool_choice(config.tool_choice, names)


def native_output(tool: AgentTool, reply: AssistantMessage) -> Any:
    """The value a native-mode answer gives: the reply's text read as `tool`'s arguments.

    Read, validated and converted as a `final_result` call's arguments are. Raises `ValueError`
    saying what is wrong with it (as the model is told).
    """
    if reply.tool_calls:
        raise ValueError("the reply called tools instead of answering")
    if reply.stop_reason is StopReason.LENGTH:
        raise ValueError("the reply hit the output token limit")
    text = reply.text
    if not text or text.isspace():
        raise ValueError("the reply has no text: the answer is its text, as JSON")
    try:
        args = json.loads(text, strict=False)  # as a tool call's arguments are read
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"the reply text is not JSON ({exc})") from None
    if not isinstance(args, dict):
        raise ValueError(f"the reply text is JSON but not an object, which the schema's root "
                         f"is: {text[:80]!r}")
    checked = validate_tool_arguments(tool, ToolCall(FINAL_RESULT, FINAL_RESULT, args))
    try:
        result = tool.execute(FINAL_RESULT, checked, AbortController().signal, lambda _: None)
    except Exception as exc:  # the JSON fits the schema, not the type (cattrs refused it)
        raise ValueError(failure_text(exc)) from exc
    return result.details


@attrs.define(eq=False)
class OutputState:
    """Per run: the `final_result` tool, the mode, and how many of the retries are used."""

    tool: AgentTool
    retries: int
    native: bool = False  # output_mode="native": the answer is a reply's text
    failures: int = 0
    last_error: str = "no final_result call"

    def after_turn(self, reply: AssistantMessage,
                   results: list[ToolResultMessage]) -> Verdict:
        """Judge a finished turn (its reply ended neither in error nor aborted)."""
        outputs = [] if self.native else [r for r in results if r.tool_name == FINAL_RESULT]
        if any(not r.is_error for r in outputs):
            return Verdict.DONE
        if outputs:
            self.last_error = outputs[-1].text
        elif results:
            return Verdict.GO_ON
        elif self.native:
            try:
                native_output(self.tool, reply)
            except ValueError as exc:
                self.last_error = str(exc)
            else:
                return Verdict.DONE
        elif reply.stop_reason is StopReason.LENGTH:
            self.last_error = "the reply hit the output token limit"
        else:
            self.last_error = "the reply did not call final_result"
        self.failures += 1
        if self.failures > self.retries:
            return Verdict.FAILED
        return Verdict.GO_ON if outputs else Verdict.NUDGE

    def value(self, reply: AssistantMessage, results: list[ToolResultMessage]) -> Any:
        """The answer of a turn judged `DONE`, as `AgentRun.output` gives it."""
        if self.native:
            return native_output(self.tool, reply)
        return next(r.details for r in results if r.tool_name == FINAL_RESULT and not r.is_error)

    def failure_text(self) -> str:
        """The run's error message once the retries are used up."""
        attempts = self.failures
        what = ("the reply was not a valid JSON answer" if self.native else
                f"{FINAL_RESULT} was not called with valid arguments")
        return (f"{OUTPUT_FAILED_TEXT}{what} in {attempts} attempt{'s' if attempts != 1 else ''} "
                f"(output_retries={self.retries}); last: {self.last_error}")

    def nudge(self) -> UserMessage:
        """The user message that answers a reply without a valid answer."""
        if self.native:
            return UserMessage(NATIVE_NUDGE_TEXT.format(error=self.last_error))
        return UserMessage(NUDGE_TEXT)
