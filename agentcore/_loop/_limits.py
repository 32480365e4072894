"""Usage limits in the loop: what a run has used so far, and the first limit it reaches.

The loop asks before every model call and every tool batch; the answer is None (go on) or
the run's error message, `"usage limit reached: <name>=<value>"`. Once a limit is reached
the answer stays: a run whose tool batch was refused makes no further model call.
"""

from __future__ import annotations

import attrs

from .._core import (
    USAGE_LIMIT_TEXT,
    AssistantMessage,
    StopReason,
    Usage,
    UsageLimits,
)
from .._function_tools import FINAL_RESULT

__all__ = ["LimitCounter"]


@attrs.define(eq=False)
class LimitCounter:
    """Per run: the counts `limits` bound, kept by the run's thread alone.

    With `has_output` (a run with an `output_type`) the `final_result` calls are not tool
    calls: the answer itself never counts against `max_tool_calls`.
    """

    limits: UsageLimits
    has_output: bool = False
    model_calls: int = 0
    tool_calls: int = 0
    # The usage of the run's model calls, charged as each completes (failed ones included:
    # a fallback model's turn after them); plain numbers, not a Usage, for speed
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    cost: float = 0.0
    reached: str | None = None  # the message of the limit reached, once one is

    def before_model_call(self, turns: int) -> str | None:
        """The error message if the next model call (in turn `turns`) passes a limit.

        Otherwise None, and the call is counted. A spent `budget` counts as a limit reached.
        """
        if self.reached is None:
            used = (("max_turns", turns - 1),  # the turns before this one
                    ("max_model_calls", self.model_calls),
                    ("max_input_tokens", self.input_tokens),
                    ("max_output_tokens", self.output_tokens),
                    ("max_total_tokens", self.total_tokens), ("max_cost", self.cost))
            for name, value in used:
                limit = getattr(self.limits, name)
                if limit is not None and value >= limit:
                    self._reach(name, limit)
                    break
            else:
                budget = self.limits.budget
                spent = None if budget is None else budget.exhausted()
                if spent is not None:
                    self.reached = f"{USAGE_LIMIT_TEXT}{spent}"
                else:
                    self.model_calls += 1
        return self.reached

    def charge(self, usage: Usage) -> None:
        """Count one completed model call's `usage`, and charge it to the budget, if any."""
        self.input_tokens += usage.input
        self.output_tokens += usage.output
        self.total_tokens += usage.total_tokens
        self.cost += usage.cost.total
        budget = self.limits.budget
        if budget is not None:
            budget.charge(usage)

    def before_tools(self, reply: AssistantMessage) -> str | None:
        """The error message if running the tool calls of `reply` passes `max_tool_calls`.

        Otherwise None, and the calls are counted. The calls of a reply cut short by the
        output token limit are not run (each gets an error result), so they do not count.
        """
        if self.reached is None and reply.stop_reason is not StopReason.LENGTH:
            limit = self.limits.max_tool_calls
            calls = len(reply.tool_calls)
            if self.has_output:
                calls -= sum(c.name == FINAL_RESULT for c in reply.tool_calls)
            if limit is not None and self.tool_calls + calls > limit:
                self._reach("max_tool_calls", limit)
            else:
                self.tool_calls += calls
        return self.reached

    def _reach(self, name: str, value: float) -> None:
        self.reached = f"{USAGE_LIMIT_TEXT}{name}={value!r}"
