"""Layer 3, the facade: `Agent`, its background `AgentRun`s and the message queues.

Builds on `_loop` and `_core`.
"""

from __future__ import annotations

from ._agent import Agent, continue_here, prompt_here
from ._compact import CompactionSettings, compact
from ._cut import estimate_tokens
from ._handoff import handoff
from ._live import AgentState
from ._run import AgentRun

__all__ = [
    "Agent",
    "AgentRun",
    "AgentState",
    "CompactionSettings",
    "compact",
    "continue_here",
    "estimate_tokens",
    "handoff",
    "prompt_here",
]
