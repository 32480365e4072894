"""Structured output in the loop: when a run with an `output_type` is done, retried or failed.

The model answers through the `final_result` tool. A valid call ends the run; an invalid one
(its error result goes back to the model) or a reply with no tool call at all (the loop asks
for the tool in a user message) uses one of `output_retries`; past them the run ends in error.
"""

from __future__ import annotations

import enum

import attrs

from .._core import (
    OUTPUT_FAILED_TEXT,
    AgentTool,
    AssistantMessage,
    StopReason,
    ToolResultMessage,
    UserMessage,
)
from .._function_tools import FINAL_RESULT

__all__ = ["NUDGE_TEXT", "OutputState", "Verdict"]

NUDGE_TEXT = (f"Please give your final answer by calling the `{FINAL_RESULT}` tool with valid "
              "arguments.")
"""The user message that answers a reply without the `final_result` call."""


class Verdict(enum.Enum):
    """What the loop does after a turn of a run with an `output_type`."""

    GO_ON = "go_on"  # other tools ran (or final_result failed): the model goes on as usual
    DONE = "done"  # a valid final_result: the run ends
    NUDGE = "nudge"  # no tool call: ask for final_result in a user message
    FAILED = "failed"  # out of retries: the run ends in error


@attrs.define(eq=False)
class OutputState:
    """Per run: the `final_result` tool and how many of the retries are used."""

    tool: AgentTool
    retries: int
    failures: int = 0
    last_error: str = "no final_result call"

    def after_turn(self, reply: AssistantMessage,
                   results: list[ToolResultMessage]) -> Verdict:
        """Judge a finished turn (its reply ended neither in error nor aborted)."""
        outputs = [r for r in results if r.tool_name == FINAL_RESULT]
        if any(not r.is_error for r in outputs):
            return Verdict.DONE
        if outputs:
            self.last_error = outputs[-1].text
        elif results:
            return Verdict.GO_ON
        elif reply.stop_reason is StopReason.LENGTH:
            self.last_error = "the reply hit the output token limit"
        else:
            self.last_error = "the reply did not call final_result"
        self.failures += 1
        if self.failures > self.retries:
            return Verdict.FAILED
        return Verdict.GO_ON if outputs else Verdict.NUDGE

    def failure_text(self) -> str:
        """The run's error message once the retries are used up."""
        attempts = self.failures
        return (f"{OUTPUT_FAILED_TEXT}{FINAL_RESULT} was not called with valid arguments in "
                f"{attempts} attempt{'s' if attempts != 1 else ''} "
                f"(output_retries={self.retries}); last: {self.last_error}")

    @staticmethod
    def nudge() -> UserMessage:
        return UserMessage(NUDGE_TEXT)
