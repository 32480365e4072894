"""`UsageLimits`: the bounds a run stops at (turns, model and tool calls, tokens, cost)."""

from __future__ import annotations

import math
from typing import Any

import attrs

from ._budget import Budget
from ._validators import optional_instance_of, type_error

__all__ = ["UsageLimits"]


def _count(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    """None, or a non-negative int that is not a bool."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise type_error(attribute.name, "a non-negative int or None", value)
    if value < 0:
        raise ValueError(f"'{attribute.name}' must be a non-negative int or None, got {value!r}")


def _dollars(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    """None, or a non-negative, finite number (of dollars) that is not a bool."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise type_error(attribute.name, "a number of dollars or None", value)
    if not 0 <= value < math.inf:
        raise ValueError(f"'{attribute.name}' must be a non-negative, finite number of dollars, "
                         f"got {value!r}")


@attrs.frozen(kw_only=True)
class UsageLimits:
    """Bounds on one run; the run ends as an error once it reaches one (None: no bound).

    Checked by the loop before every model call: `max_turns` and `max_model_calls` when the
    call would exceed them (with `max_model_calls=50` the 51st call is not made); the token
    limits and `max_cost` (in dollars, `usage.cost.total`) when the run's usage so far, its
    assistant messages' `usage` summed, has reached them. `max_tool_calls` is checked before
    every batch of tool calls: a batch that would exceed it is not run, each of its calls gets
    an error result, and the run ends. The run then ends with an assistant message of
    `stop_reason` `"error"` and `error_message` `"usage limit reached: max_model_calls=50"`
    (the limit's name and value), for which `AgentRun.raise_for_error()` raises
    `UsageLimitExceeded`. Counted per run: a new prompt starts from zero. `budget` is shared
    instead (API §24): every model call of every run holding it is charged to it, and once it
    is spent no such run starts another model call (`"usage limit reached: budget
    max_cost=1.0"`). Failed model calls count too, in every limit, when a fallback model
    takes their turn over.

    Attributes:
        max_turns: Turns of the loop (each starting with a `turn_start` event).
        max_model_calls: Model calls (structured-output retries included).
        max_tool_calls: Tool calls run.
        max_input_tokens: Input tokens (`usage.input`), summed over the run's replies.
        max_output_tokens: Output tokens (`usage.output`), summed.
        max_total_tokens: All tokens (`usage.total_tokens`), summed.
        max_cost: Dollars (`usage.cost.total`), summed.
        budget: A `Budget` shared with other runs.
    """

    max_turns: int | None = attrs.field(default=None, validator=_count)
    max_model_calls: int | None = attrs.field(default=None, validator=_count)
    max_tool_calls: int | None = attrs.field(default=None, validator=_count)
    max_input_tokens: int | None = attrs.field(default=None, validator=_count)
    max_output_tokens: int | None = attrs.field(default=None, validator=_count)
    max_total_tokens: int | None = attrs.field(default=None, validator=_count)
    max_cost: float | None = attrs.field(default=None, validator=_dollars)
    budget: Budget | None = attrs.field(default=None, validator=optional_instance_of(Budget))
