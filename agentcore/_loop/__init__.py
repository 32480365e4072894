"""Layer 2, the algorithm: `run_agent_loop` and its configuration, and running tool calls.

Builds on `_core` and `providers`; knows nothing of the `Agent` that drives it.
"""

from __future__ import annotations

from ._config import (
    AfterToolCallContext,
    AfterToolCallResult,
    AgentLoopConfig,
    AgentLoopTurnUpdate,
    BeforeToolCallContext,
    BeforeToolCallResult,
    PrepareNextTurnContext,
)
from ._loop import agent_loop, agent_loop_continue, run_agent_loop, run_agent_loop_continue

__all__ = [
    "AfterToolCallContext",
    "AfterToolCallResult",
    "AgentLoopConfig",
    "AgentLoopTurnUpdate",
    "BeforeToolCallContext",
    "BeforeToolCallResult",
    "PrepareNextTurnContext",
    "agent_loop",
    "agent_loop_continue",
    "run_agent_loop",
    "run_agent_loop_continue",
]
