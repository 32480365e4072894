"""agentcore: a small, synchronous, thread-based library that runs LLM agents.

It streams a model's reply, runs the tools the model asks for, feeds the results back and
repeats until the work is done, telling the caller everything that happens as events.
"""

from __future__ import annotations

from ._abort import AbortController, AbortSignal
from ._agent import Agent, AgentState
from ._agent_run import AgentRun
from ._content import ImageContent, TextContent, ThinkingContent, ToolCall
from ._context import AgentContext, Context
from ._enums import QueueMode, StopReason, ThinkingLevel, ToolExecutionMode
from ._errors import (
    AbortError,
    AgentBusyError,
    AgentcoreError,
    MissingApiKeyError,
    ModelNotFoundError,
    ProviderNotFoundError,
    SerializationError,
    ToolArgumentsError,
)
from ._events import (
    AgentEndEvent,
    AgentEvent,
    AgentStartEvent,
    AssistantMessageEvent,
    DoneEvent,
    ErrorEvent,
    EventSink,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    StartEvent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    TurnEndEvent,
    TurnStartEvent,
)
from ._loop import agent_loop, agent_loop_continue, run_agent_loop, run_agent_loop_continue
from ._loop_types import (
    AfterToolCallContext,
    AfterToolCallResult,
    AgentLoopConfig,
    AgentLoopTurnUpdate,
    BeforeToolCallContext,
    BeforeToolCallResult,
    PrepareNextTurnContext,
)
from ._messages import (
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    Message,
    ToolResultMessage,
    UserMessage,
    default_convert_to_llm,
)
from ._model import Model, ModelCost, calculate_cost
from ._options import StreamOptions
from ._overflow import is_context_overflow
from ._serde import from_dict, from_json, to_dict, to_json
from ._stream import AssistantMessageEventStream, EventStream
from ._tool_decorator import tool
from ._tools import AgentTool, AgentToolResult, Tool, validate_tool_arguments
from ._usage import Cost, Usage
from .providers._registry import StreamFn, complete, register_provider, stream, unregister_provider
from .providers.models import get_env_api_key, get_model, get_models, get_providers

__version__ = "0.1.0"

__all__ = [
    "AbortController",
    "AbortError",
    "AbortSignal",
    "AfterToolCallContext",
    "AfterToolCallResult",
    "Agent",
    "AgentBusyError",
    "AgentContext",
    "AgentEndEvent",
    "AgentEvent",
    "AgentLoopConfig",
    "AgentLoopTurnUpdate",
    "AgentMessage",
    "AgentRun",
    "AgentStartEvent",
    "AgentState",
    "AgentTool",
    "AgentToolResult",
    "AgentcoreError",
    "AssistantMessage",
    "AssistantMessageEvent",
    "AssistantMessageEventStream",
    "BashExecutionMessage",
    "BeforeToolCallContext",
    "BeforeToolCallResult",
    "BranchSummaryMessage",
    "CompactionSummaryMessage",
    "Context",
    "Cost",
    "DoneEvent",
    "ErrorEvent",
    "EventSink",
    "EventStream",
    "ImageContent",
    "Message",
    "MessageEndEvent",
    "MessageStartEvent",
    "MessageUpdateEvent",
    "MissingApiKeyError",
    "Model",
    "ModelCost",
    "ModelNotFoundError",
    "PrepareNextTurnContext",
    "ProviderNotFoundError",
    "QueueMode",
    "SerializationError",
    "StartEvent",
    "StopReason",
    "StreamFn",
    "StreamOptions",
    "TextContent",
    "TextDeltaEvent",
    "TextEndEvent",
    "TextStartEvent",
    "ThinkingContent",
    "ThinkingDeltaEvent",
    "ThinkingEndEvent",
    "ThinkingLevel",
    "ThinkingStartEvent",
    "Tool",
    "ToolArgumentsError",
    "ToolCall",
    "ToolCallDeltaEvent",
    "ToolCallEndEvent",
    "ToolCallStartEvent",
    "ToolExecutionEndEvent",
    "ToolExecutionMode",
    "ToolExecutionStartEvent",
    "ToolExecutionUpdateEvent",
    "ToolResultMessage",
    "TurnEndEvent",
    "TurnStartEvent",
    "Usage",
    "UserMessage",
    "__version__",
    "agent_loop",
    "agent_loop_continue",
    "calculate_cost",
    "complete",
    "default_convert_to_llm",
    "from_dict",
    "from_json",
    "get_env_api_key",
    "get_model",
    "get_models",
    "get_providers",
    "is_context_overflow",
    "register_provider",
    "run_agent_loop",
    "run_agent_loop_continue",
    "stream",
    "to_dict",
    "to_json",
    "tool",
    "unregister_provider",
    "validate_tool_arguments",
]
