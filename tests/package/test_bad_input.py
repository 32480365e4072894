"""Misuse of public constructors and functions raises at once, naming the offending field."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

import agentcore
from agentcore import (
    AbortController,
    AfterToolCallResult,
    AgentContext,
    AgentLoopConfig,
    AgentLoopTurnUpdate,
    AgentTool,
    AgentToolResult,
    AssistantMessage,
    BashExecutionMessage,
    BeforeToolCallResult,
    Context,
    Cost,
    ImageContent,
    Model,
    ModelCost,
    StreamOptions,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    calculate_cost,
    validate_tool_arguments,
)
from agentcore.providers.faux import FauxProvider, register_faux_provider

MODEL = Model("m", "M", "no-such-api", "p", "http://localhost:0")
SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


def _execute(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
    return AgentToolResult()


def _sink(event: object) -> None:
    return None


def _config() -> AgentLoopConfig:
    return AgentLoopConfig(model=MODEL)


def _assistant(**kw: Any) -> AssistantMessage:
    fields: dict[str, Any] = {"content": [], "api": "a", "provider": "p", "model": "m"}
    return AssistantMessage(**{**fields, **kw})


def _model(**kw: Any) -> Model:
    fields: dict[str, Any] = {
        "id": "m", "name": "M", "api": "a", "provider": "p", "base_url": "http://x"
    }
    return Model(**{**fields, **kw})


def _case(
    call: Callable[[], object], error: type[BaseException], field: str, id: str
) -> Any:
    return pytest.param(call, error, field, id=id)


BAD_CALLS = [
    # content blocks
    _case(lambda: TextContent(1), TypeError, "text", "TextContent-text-int"),
    _case(lambda: TextContent("x", text_signature=5), TypeError, "text_signature",
          "TextContent-signature-int"),
    _case(lambda: ThinkingContent("x", redacted="no"), TypeError, "redacted",
          "ThinkingContent-redacted-str"),
    _case(lambda: ImageContent(b"aGk=", "image/png"), TypeError, "data", "ImageContent-data-bytes"),
    _case(lambda: ToolCall("id", "name", arguments="x"), TypeError, "arguments",
          "ToolCall-arguments-str"),
    _case(lambda: ToolCall("id", None), TypeError, "name", "ToolCall-name-None"),
    # messages
    _case(lambda: UserMessage(5), TypeError, "content", "UserMessage-content-int"),
    _case(lambda: UserMessage([1]), TypeError, "content", "UserMessage-content-list-of-int"),
    _case(lambda: UserMessage(["hi"]), TypeError, "content", "UserMessage-content-list-of-str"),
    _case(lambda: UserMessage([ToolCall("c", "t")]), TypeError, "content",
          "UserMessage-content-toolcall"),
    _case(lambda: UserMessage("hi", timestamp=1.5), TypeError, "timestamp",
          "UserMessage-timestamp-float"),
    _case(lambda: UserMessage("hi", timestamp=True), TypeError, "timestamp",
          "UserMessage-timestamp-bool"),
    _case(lambda: _assistant(content="x"), TypeError, "content", "AssistantMessage-content-str"),
    _case(lambda: _assistant(content=[ImageContent("aGk=", "image/png")]), TypeError, "content",
          "AssistantMessage-content-image"),
    _case(lambda: _assistant(usage={}), TypeError, "usage", "AssistantMessage-usage-dict"),
    _case(lambda: _assistant(stop_reason="bogus"), ValueError, "stop_reason",
          "AssistantMessage-stop_reason-bogus"),
    _case(lambda: _assistant(api=None), TypeError, "api", "AssistantMessage-api-None"),
    _case(lambda: ToolResultMessage("c", "t", content="x"), TypeError, "content",
          "ToolResultMessage-content-str"),
    _case(lambda: ToolResultMessage("c", "t", is_error="no"), TypeError, "is_error",
          "ToolResultMessage-is_error-str"),
    _case(lambda: BashExecutionMessage("ls", "", exit_code="0"), TypeError, "exit_code",
          "BashExecutionMessage-exit_code-str"),
    # usage, cost, model
    _case(lambda: Usage(input=-1), ValueError, "input", "Usage-input-negative"),
    _case(lambda: Usage(input="3"), TypeError, "input", "Usage-input-str"),
    _case(lambda: Usage(output=True), TypeError, "output", "Usage-output-bool"),
    _case(lambda: Usage(cost=1.0), TypeError, "cost", "Usage-cost-float"),
    _case(lambda: Cost(total="1"), TypeError, "total", "Cost-total-str"),
    _case(lambda: Cost(input=True), TypeError, "input", "Cost-input-bool"),
    _case(lambda: ModelCost(cache_read=False), TypeError, "cache_read",
          "ModelCost-cache_read-bool"),
    _case(lambda: ModelCost(input="x"), TypeError, "input", "ModelCost-input-str"),
    _case(lambda: ModelCost(output=-1), ValueError, "output", "ModelCost-output-negative"),
    _case(lambda: _model(input=["video"]), ValueError, "input", "Model-input-video"),
    _case(lambda: _model(input=[]), ValueError, "input", "Model-input-empty"),
    _case(lambda: _model(input="text"), TypeError, "input", "Model-input-str"),
    _case(lambda: _model(input=["text", 1]), TypeError, "input", "Model-input-int-item"),
    _case(lambda: _model(cost={"input": 1}), TypeError, "cost", "Model-cost-dict"),
    _case(lambda: _model(context_window=-1), ValueError, "context_window",
          "Model-context_window-negative"),
    _case(lambda: _model(max_tokens="many"), TypeError, "max_tokens", "Model-max_tokens-str"),
    _case(lambda: _model(reasoning="yes"), TypeError, "reasoning", "Model-reasoning-str"),
    _case(lambda: _model(headers={"x-key": 1}), TypeError, "headers", "Model-headers-int-value"),
    _case(lambda: calculate_cost("m", Usage()), TypeError, "model", "calculate_cost-model-str"),
    _case(lambda: calculate_cost(MODEL, {}), TypeError, "usage", "calculate_cost-usage-dict"),
    # tools
    _case(lambda: Tool("n", "d", parameters="x"), TypeError, "parameters", "Tool-parameters-str"),
    _case(lambda: Tool("n", "d", {"type": "nonsense"}), ValueError, "parameters",
          "Tool-parameters-invalid-schema"),
    _case(lambda: Tool(None, "d", SCHEMA), TypeError, "name", "Tool-name-None"),
    _case(lambda: AgentTool("n", "d", SCHEMA, execute=None), TypeError, "execute",
          "AgentTool-execute-None"),
    _case(lambda: AgentTool("n", "d", SCHEMA, _execute, execution_mode="bogus"), ValueError,
          "execution_mode", "AgentTool-execution_mode-bogus"),
    _case(lambda: AgentTool("n", "d", SCHEMA, _execute, prepare_arguments=1), TypeError,
          "prepare_arguments", "AgentTool-prepare_arguments-int"),
    _case(lambda: AgentToolResult("text"), TypeError, "content", "AgentToolResult-content-str"),
    _case(lambda: AgentToolResult(["text"]), TypeError, "content",
          "AgentToolResult-content-list-of-str"),
    _case(lambda: AgentToolResult(terminate="yes"), TypeError, "terminate",
          "AgentToolResult-terminate-str"),
    _case(lambda: validate_tool_arguments("tool", ToolCall("c", "t")), TypeError, "tool",
          "validate_tool_arguments-tool-str"),
    _case(lambda: validate_tool_arguments(Tool("t", "d", SCHEMA), {"a": 1}), TypeError,
          "tool_call", "validate_tool_arguments-tool_call-dict"),
    # contexts
    _case(lambda: Context(5, []), TypeError, "system_prompt", "Context-system_prompt-int"),
    _case(lambda: Context(None, "hi"), TypeError, "messages", "Context-messages-str"),
    _case(lambda: Context(None, [BashExecutionMessage("ls", "", 0)]), TypeError, "messages",
          "Context-messages-non-llm-message"),
    _case(lambda: Context(None, [], tools=[SCHEMA]), TypeError, "tools", "Context-tools-dict"),
    _case(lambda: AgentContext(system_prompt=None), TypeError, "system_prompt",
          "AgentContext-system_prompt-None"),
    _case(lambda: AgentContext(messages=["hi"]), TypeError, "messages",
          "AgentContext-messages-str-item"),
    _case(lambda: AgentContext(tools=[Tool("t", "d", SCHEMA)]), TypeError, "tools",
          "AgentContext-tools-plain-tool"),
    # loop configuration and hook results
    _case(lambda: AgentLoopConfig(model=None), TypeError, "model", "AgentLoopConfig-model-None"),
    _case(lambda: AgentLoopConfig(model="gpt-4o"), TypeError, "model",
          "AgentLoopConfig-model-str"),
    _case(lambda: AgentLoopConfig(model=MODEL, bogus=1), TypeError, "bogus",
          "AgentLoopConfig-unknown-kwarg"),
    _case(lambda: AgentLoopConfig(MODEL), TypeError, "positional", "AgentLoopConfig-positional"),
    _case(lambda: AgentLoopConfig(model=MODEL, tool_execution="bogus"), ValueError,
          "tool_execution", "AgentLoopConfig-tool_execution-bogus"),
    _case(lambda: AgentLoopConfig(model=MODEL, reasoning="extreme"), ValueError, "reasoning",
          "AgentLoopConfig-reasoning-bogus"),
    _case(lambda: AgentLoopConfig(model=MODEL, convert_to_llm=None), TypeError,
          "convert_to_llm", "AgentLoopConfig-convert_to_llm-None"),
    _case(lambda: AgentLoopConfig(model=MODEL, before_tool_call="hook"), TypeError,
          "before_tool_call", "AgentLoopConfig-before_tool_call-str"),
    _case(lambda: AgentLoopConfig(model=MODEL, tool_executor=4), TypeError, "tool_executor",
          "AgentLoopConfig-tool_executor-int"),
    _case(lambda: AgentLoopConfig(model=MODEL, max_tokens=-1), ValueError, "max_tokens",
          "AgentLoopConfig-max_tokens-negative"),
    _case(lambda: AgentLoopConfig(model=MODEL, headers={"x-key": 1}), TypeError, "headers",
          "AgentLoopConfig-headers-int-value"),
    _case(lambda: AgentLoopConfig(model=MODEL, cache_retention="forever"), ValueError,
          "cache_retention", "AgentLoopConfig-cache_retention-bogus"),
    _case(lambda: AgentLoopConfig(model=MODEL, thinking_budgets={"low": "1k"}), TypeError,
          "thinking_budgets", "AgentLoopConfig-thinking_budgets-str-value"),
    _case(lambda: BeforeToolCallResult(block="yes"), TypeError, "block",
          "BeforeToolCallResult-block-str"),
    _case(lambda: AfterToolCallResult(content="x"), TypeError, "content",
          "AfterToolCallResult-content-str"),
    _case(lambda: AfterToolCallResult(is_error=1), TypeError, "is_error",
          "AfterToolCallResult-is_error-int"),
    _case(lambda: AgentLoopTurnUpdate(model="gpt-4o"), TypeError, "model",
          "AgentLoopTurnUpdate-model-str"),
    _case(lambda: AgentLoopTurnUpdate(thinking_level="extreme"), ValueError, "thinking_level",
          "AgentLoopTurnUpdate-thinking_level-bogus"),
    # stream options
    _case(lambda: StreamOptions(cache_retention="forever"), ValueError, "cache_retention",
          "StreamOptions-cache_retention-bogus"),
    _case(lambda: StreamOptions(max_tokens=-1), ValueError, "max_tokens",
          "StreamOptions-max_tokens-negative"),
    _case(lambda: StreamOptions(reasoning="extreme"), ValueError, "reasoning",
          "StreamOptions-reasoning-bogus"),
    _case(lambda: StreamOptions(signal=AbortController()), TypeError, "signal",
          "StreamOptions-signal-controller"),
    _case(lambda: StreamOptions(on_payload="print"), TypeError, "on_payload",
          "StreamOptions-on_payload-str"),
    _case(lambda: StreamOptions(temperature="hot"), TypeError, "temperature",
          "StreamOptions-temperature-str"),
    _case(lambda: StreamOptions("key"), TypeError, "positional", "StreamOptions-positional"),
    # abort
    _case(lambda: AbortController().signal.add_listener(None), TypeError, "fn",
          "AbortSignal.add_listener-None"),
    # the loop
    _case(lambda: agentcore.run_agent_loop("not a list", AgentContext(), _config(), _sink),
          TypeError, "prompts", "run_agent_loop-prompts-str"),
    _case(lambda: agentcore.run_agent_loop([1], AgentContext(), _config(), _sink),
          TypeError, "prompts", "run_agent_loop-prompts-int-item"),
    _case(lambda: agentcore.run_agent_loop([UserMessage("hi")], "x", _config(), _sink),
          TypeError, "context", "run_agent_loop-context-str"),
    _case(lambda: agentcore.run_agent_loop([UserMessage("hi")], AgentContext(), {}, _sink),
          TypeError, "config", "run_agent_loop-config-dict"),
    _case(lambda: agentcore.run_agent_loop([UserMessage("hi")], AgentContext(), _config(), None),
          TypeError, "emit", "run_agent_loop-emit-None"),
    _case(lambda: agentcore.run_agent_loop([UserMessage("hi")], AgentContext(), _config(), _sink,
                                           signal=AbortController()),
          TypeError, "signal", "run_agent_loop-signal-controller"),
    _case(lambda: agentcore.run_agent_loop([UserMessage("hi")], AgentContext(), _config(), _sink,
                                           stream_fn="openai"),
          TypeError, "stream_fn", "run_agent_loop-stream_fn-str"),
    _case(lambda: agentcore.run_agent_loop_continue(AgentContext(), _config(), _sink),
          ValueError, "messages", "run_agent_loop_continue-empty"),
    _case(lambda: agentcore.run_agent_loop_continue(
              AgentContext(messages=[UserMessage("hi"), _assistant()]), _config(), _sink),
          ValueError, "assistant", "run_agent_loop_continue-assistant-tail"),
    _case(lambda: agentcore.agent_loop("not a list", AgentContext(), _config()),
          TypeError, "prompts", "agent_loop-prompts-str"),
    _case(lambda: agentcore.agent_loop_continue(AgentContext(), _config()),
          ValueError, "messages", "agent_loop_continue-empty"),
    # providers
    _case(lambda: agentcore.stream("not a model", Context(None, [])), TypeError, "model",
          "stream-model-str"),
    _case(lambda: agentcore.complete("not a model", Context(None, [])), TypeError, "model",
          "complete-model-str"),
    _case(lambda: agentcore.register_provider("", _sink), TypeError, "api",
          "register_provider-api-empty"),
    _case(lambda: agentcore.register_provider(None, _sink), TypeError, "api",
          "register_provider-api-None"),
    _case(lambda: agentcore.register_provider("x-api", "fn"), TypeError, "stream_fn",
          "register_provider-stream_fn-str"),
    _case(lambda: register_faux_provider(token_size=(0, 1)), ValueError, "token_size",
          "register_faux_provider-token_size-zero"),
    _case(lambda: register_faux_provider(token_size=(5, 2)), ValueError, "token_size",
          "register_faux_provider-token_size-reversed"),
    _case(lambda: register_faux_provider(tokens_per_second=0), ValueError, "tokens_per_second",
          "register_faux_provider-tokens_per_second-zero"),
    _case(lambda: register_faux_provider(models="faux-1"), ValueError, "models",
          "register_faux_provider-models-str"),
]


@pytest.mark.parametrize(("call", "error", "field"), BAD_CALLS)
def test_bad_input_raises_naming_the_field(
    call: Callable[[], object], error: type[BaseException], field: str
) -> None:
    with pytest.raises(error, match=re.escape(field)):
        call()


MISSING_ARGUMENTS = [
    _case(lambda: TextContent(), TypeError, "text", "TextContent"),
    _case(lambda: ImageContent("aGk="), TypeError, "mime_type", "ImageContent"),
    _case(lambda: ToolCall("id"), TypeError, "name", "ToolCall"),
    _case(lambda: UserMessage(), TypeError, "content", "UserMessage"),
    _case(lambda: AssistantMessage([], "a", "p"), TypeError, "model", "AssistantMessage"),
    _case(lambda: ToolResultMessage("c"), TypeError, "tool_name", "ToolResultMessage"),
    _case(lambda: BashExecutionMessage("ls", "out"), TypeError, "exit_code",
          "BashExecutionMessage"),
    _case(lambda: Model("m", "M", "a", "p"), TypeError, "base_url", "Model"),
    _case(lambda: Tool("n", "d"), TypeError, "parameters", "Tool"),
    _case(lambda: AgentTool("n", "d", SCHEMA), TypeError, "execute", "AgentTool"),
    _case(lambda: Context(None), TypeError, "messages", "Context"),
    _case(lambda: AgentLoopConfig(), TypeError, "model", "AgentLoopConfig"),
    _case(lambda: agentcore.run_agent_loop([UserMessage("hi")], AgentContext(), _config()),
          TypeError, "emit", "run_agent_loop"),
    _case(lambda: agentcore.stream(MODEL), TypeError, "context", "stream"),
    _case(lambda: validate_tool_arguments(Tool("t", "d", SCHEMA)), TypeError, "tool_call",
          "validate_tool_arguments"),
]


@pytest.mark.parametrize(("call", "error", "field"), MISSING_ARGUMENTS)
def test_missing_required_argument_raises_type_error_naming_it(
    call: Callable[[], object], error: type[BaseException], field: str
) -> None:
    with pytest.raises(error, match=re.escape(f"'{field}'")):
        call()


@pytest.fixture
def faux_model(faux: FauxProvider) -> Model:
    return faux.get_model()


def test_stream_with_bad_context_raises_naming_context(faux_model: Model) -> None:
    with pytest.raises(TypeError, match="context"):
        agentcore.stream(faux_model, [UserMessage("hi")])  # type: ignore[arg-type]


def test_stream_with_bad_options_raises_naming_options(faux_model: Model) -> None:
    with pytest.raises(TypeError, match="options"):
        agentcore.stream(faux_model, Context(None, []), {"max_tokens": 5})  # type: ignore[arg-type]


def test_unknown_api_raises_provider_not_found_naming_the_api() -> None:
    with pytest.raises(agentcore.ProviderNotFoundError, match="no-such-api"):
        agentcore.stream(MODEL, Context(None, [UserMessage("hi")]))


def test_unregister_unknown_provider_raises_naming_the_api() -> None:
    with pytest.raises(agentcore.ProviderNotFoundError, match="never-registered"):
        agentcore.unregister_provider("never-registered")


def test_bad_faux_provider_arguments_register_nothing() -> None:
    with pytest.raises(ValueError, match="token_size"):
        register_faux_provider(api="faux-bad-input", token_size=(0, 1))
    with pytest.raises(agentcore.ProviderNotFoundError):
        agentcore.unregister_provider("faux-bad-input")


def test_agent_context_validates_on_assignment() -> None:
    context = AgentContext()
    with pytest.raises(TypeError, match="messages"):
        context.messages = "hi"  # type: ignore[assignment]
    assert context == AgentContext()
