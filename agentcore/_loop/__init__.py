"""Layer 2, the algorithm: `run_agent_loop` and its configuration, and running tool calls.

Builds on `_core` and `providers`; knows nothing of the `Agent` that drives it.
"""

from __future__ import annotations

from ._approvals import check_no_pause, plan_resume
from ._config import (
    AfterToolCall,
    AfterToolCallContext,
    AfterToolCallResult,
    AgentLoopConfig,
    AgentLoopTurnUpdate,
    Approve,
    BeforeModelCall,
    BeforeModelCallContext,
    BeforeToolCall,
    BeforeToolCallContext,
    BeforeToolCallResult,
    ConvertToLlm,
    GetApiKey,
    OutputMode,
    PrepareNextTurn,
    PrepareNextTurnContext,
    ShouldStopAfterTurn,
    TransformContext,
    check_output_mode,
    executor,
    hook,
)
from ._entry import agent_loop, agent_loop_continue, run_agent_loop, run_agent_loop_continue
from ._exit import in_flight
from ._fallback import FallbackOn, model_list
from ._guardrails import InputGuardrail, OutputGuardrail, retry_guardrail
from ._handoff import Handoff, HandoffCall, HandoffTarget, handed_to
from ._observe import Observer, RunStart, RunTrace, carry_context, observe
from ._output import check_run, native_output
from ._tool_messages import serving

__all__ = [
    "AfterToolCall",
    "AfterToolCallContext",
    "AfterToolCallResult",
    "AgentLoopConfig",
    "AgentLoopTurnUpdate",
    "Approve",
    "BeforeModelCall",
    "BeforeModelCallContext",
    "BeforeToolCall",
    "BeforeToolCallContext",
    "BeforeToolCallResult",
    "ConvertToLlm",
    "FallbackOn",
    "GetApiKey",
    "Handoff",
    "HandoffCall",
    "HandoffTarget",
    "InputGuardrail",
    "Observer",
    "OutputGuardrail",
    "OutputMode",
    "PrepareNextTurn",
    "PrepareNextTurnContext",
    "RunStart",
    "RunTrace",
    "ShouldStopAfterTurn",
    "TransformContext",
    "agent_loop",
    "agent_loop_continue",
    "carry_context",
    "check_no_pause",
    "check_output_mode",
    "check_run",
    "executor",
    "handed_to",
    "hook",
    "in_flight",
    "model_list",
    "native_output",
    "observe",
    "plan_resume",
    "retry_guardrail",
    "run_agent_loop",
    "run_agent_loop_continue",
    "serving",
]
