"""The public surface, pinned: `__all__`, public submodules, docstrings, wire tags, enums,
errors, the command line and import cost."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import json
import subprocess
import sys
import textwrap
import typing
from pathlib import Path

import pytest
from _internals import _registry, cli
from mypy_report import MypyReport

import agentcore
from agentcore import (
    AbortError,
    AgentBusyError,
    AgentClosedError,
    AgentcoreError,
    AgentEndEvent,
    AgentStartEvent,
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionEndEvent,
    CompactionStartEvent,
    CompactionSummaryMessage,
    DoneEvent,
    ErrorEvent,
    GuardrailTripped,
    GuardrailTrippedEvent,
    HandoffEvent,
    ImageContent,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    MissingApiKeyError,
    ModelFallbackEvent,
    ModelNotFoundError,
    OutputValidationError,
    ProviderNotFoundError,
    QueueMode,
    RunError,
    SerializationError,
    SessionBusyError,
    StartEvent,
    StopReason,
    SubagentEvent,
    TextContent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ThinkingContent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingLevel,
    ThinkingStartEvent,
    ToolApprovalMessage,
    ToolApprovalRequestEvent,
    ToolArgumentsError,
    ToolCall,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
    ToolExecutionEndEvent,
    ToolExecutionMode,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    ToolResultMessage,
    TurnEndEvent,
    TurnStartEvent,
    UsageLimitExceeded,
    UserMessage,
)

PACKAGE_DIR = Path(agentcore.__file__).resolve().parent
REPO_ROOT = PACKAGE_DIR.parent

EXPECTED_ALL = [
    "AbortController",
    "AbortError",
    "AbortSignal",
    "AfterToolCallContext",
    "AfterToolCallResult",
    "Agent",
    "AgentBusyError",
    "AgentClosedError",
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
    "Budget",
    "CircuitBreaker",
    "CompactionEndEvent",
    "CompactionSettings",
    "CompactionStartEvent",
    "CompactionSummaryMessage",
    "Context",
    "Cost",
    "DoneEvent",
    "ErrorEvent",
    "EventSink",
    "EventStream",
    "GuardrailTripped",
    "GuardrailTrippedEvent",
    "HandoffEvent",
    "ImageContent",
    "JsonlSession",
    "Message",
    "MessageEndEvent",
    "MessageStartEvent",
    "MessageUpdateEvent",
    "MissingApiKeyError",
    "Model",
    "ModelCost",
    "ModelFallbackEvent",
    "ModelNotFoundError",
    "OutputValidationError",
    "PrepareNextTurnContext",
    "ProviderNotFoundError",
    "QueueMode",
    "RunError",
    "SerializationError",
    "Session",
    "SessionBusyError",
    "SqliteSession",
    "StartEvent",
    "StopReason",
    "StreamFn",
    "StreamOptions",
    "SubagentEvent",
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
    "ToolApprovalMessage",
    "ToolApprovalRequestEvent",
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
    "UsageLimitExceeded",
    "UsageLimits",
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
    "handoff",
    "is_context_overflow",
    "register_provider",
    "retry_guardrail",
    "run_agent_loop",
    "run_agent_loop_continue",
    "stream",
    "to_dict",
    "to_json",
    "tool",
    "tool_idempotency_key",
    "unregister_provider",
    "validate_tool_arguments",
]

TYPE_ALIASES = {
    "AgentEvent",
    "AgentMessage",
    "AssistantMessageEvent",
    "EventSink",
    "Message",
    "StreamFn",
}
"""Names in `__all__` that are typing objects (unions, callables), which carry no docstring."""

AGENT_EVENT_TYPES = {
    AgentStartEvent: "agent_start",
    AgentEndEvent: "agent_end",
    TurnStartEvent: "turn_start",
    TurnEndEvent: "turn_end",
    MessageStartEvent: "message_start",
    MessageUpdateEvent: "message_update",
    MessageEndEvent: "message_end",
    ToolExecutionStartEvent: "tool_execution_start",
    ToolExecutionUpdateEvent: "tool_execution_update",
    ToolExecutionEndEvent: "tool_execution_end",
    ToolApprovalRequestEvent: "tool_approval_request",
    CompactionStartEvent: "compaction_start",
    CompactionEndEvent: "compaction_end",
    ModelFallbackEvent: "model_fallback",
    SubagentEvent: "subagent",
    HandoffEvent: "handoff",
    GuardrailTrippedEvent: "guardrail_tripped",
}

ASSISTANT_MESSAGE_EVENT_TYPES = {
    StartEvent: "start",
    TextStartEvent: "text_start",
    TextDeltaEvent: "text_delta",
    TextEndEvent: "text_end",
    ThinkingStartEvent: "thinking_start",
    ThinkingDeltaEvent: "thinking_delta",
    ThinkingEndEvent: "thinking_end",
    ToolCallStartEvent: "toolcall_start",
    ToolCallDeltaEvent: "toolcall_delta",
    ToolCallEndEvent: "toolcall_end",
    DoneEvent: "done",
    ErrorEvent: "error",
}


def test_all_is_pinned_and_sorted() -> None:
    assert agentcore.__all__ == EXPECTED_ALL
    assert sorted(EXPECTED_ALL) == EXPECTED_ALL


def test_all_names_are_importable() -> None:
    missing = [name for name in agentcore.__all__ if not hasattr(agentcore, name)]
    assert missing == []


def test_version_is_a_string() -> None:
    assert isinstance(agentcore.__version__, str)
    assert agentcore.__version__


def test_type_aliases_are_typing_objects() -> None:
    for name in sorted(TYPE_ALIASES):
        obj = getattr(agentcore, name)
        assert not inspect.isclass(obj), name
        assert typing.get_args(obj), name


def _public_objects() -> list[tuple[str, object]]:
    skipped = TYPE_ALIASES | {"__version__"}
    return [(n, getattr(agentcore, n)) for n in agentcore.__all__ if n not in skipped]


def test_every_public_name_has_a_docstring() -> None:
    undocumented = [name for name, obj in _public_objects() if not (obj.__doc__ or "").strip()]
    assert undocumented == []


def test_every_public_name_is_a_class_or_function() -> None:
    others = [
        name
        for name, obj in _public_objects()
        if not (inspect.isclass(obj) or inspect.isfunction(obj))
    ]
    assert others == []


def _public_members(cls: type) -> list[tuple[str, object]]:
    members = []
    for name, value in vars(cls).items():
        if name.startswith("_"):
            continue
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        if isinstance(value, property) or inspect.isfunction(value):
            members.append((name, value))
    return members


def test_every_public_method_and_property_has_a_docstring() -> None:
    undocumented = []
    checked = 0
    for name, obj in _public_objects():
        if not inspect.isclass(obj) or not obj.__module__.startswith("agentcore"):
            continue
        for member, value in _public_members(obj):
            checked += 1
            if not (inspect.getdoc(value) or "").strip():
                undocumented.append(f"{name}.{member}")
    assert undocumented == []
    assert checked > 10  # the walk really found methods and properties


def test_public_functions_are_defined_in_agentcore() -> None:
    foreign = [
        name
        for name, obj in _public_objects()
        if not getattr(obj, "__module__", "").startswith("agentcore")
    ]
    assert foreign == []


def test_content_type_tags_are_pinned() -> None:
    assert {cls: cls.type for cls in (TextContent, ThinkingContent, ImageContent, ToolCall)} == {
        TextContent: "text",
        ThinkingContent: "thinking",
        ImageContent: "image",
        ToolCall: "toolCall",
    }


def test_message_role_tags_are_pinned() -> None:
    classes = (
        UserMessage,
        AssistantMessage,
        ToolResultMessage,
        BashExecutionMessage,
        CompactionSummaryMessage,
        BranchSummaryMessage,
        ToolApprovalMessage,
    )
    assert {cls: cls.role for cls in classes} == {
        UserMessage: "user",
        AssistantMessage: "assistant",
        ToolResultMessage: "toolResult",
        BashExecutionMessage: "bashExecution",
        CompactionSummaryMessage: "compactionSummary",
        BranchSummaryMessage: "branchSummary",
        ToolApprovalMessage: "toolApproval",
    }


def test_message_unions_cover_the_tagged_classes() -> None:
    assert set(typing.get_args(agentcore.Message)) == {
        UserMessage,
        AssistantMessage,
        ToolResultMessage,
    }
    assert set(typing.get_args(agentcore.AgentMessage)) >= {
        UserMessage,
        AssistantMessage,
        ToolResultMessage,
        BashExecutionMessage,
        CompactionSummaryMessage,
        BranchSummaryMessage,
        ToolApprovalMessage,
    }


def test_agent_event_type_tags_are_pinned() -> None:
    assert {cls: cls.type for cls in AGENT_EVENT_TYPES} == AGENT_EVENT_TYPES
    assert set(typing.get_args(agentcore.AgentEvent)) == set(AGENT_EVENT_TYPES)


def test_assistant_message_event_type_tags_are_pinned() -> None:
    assert {cls: cls.type for cls in ASSISTANT_MESSAGE_EVENT_TYPES} == (
        ASSISTANT_MESSAGE_EVENT_TYPES
    )
    assert set(typing.get_args(agentcore.AssistantMessageEvent)) == set(
        ASSISTANT_MESSAGE_EVENT_TYPES
    )


def test_wire_tags_are_unique_per_union() -> None:
    tags = list(AGENT_EVENT_TYPES.values())
    assert len(tags) == len(set(tags))
    tags = list(ASSISTANT_MESSAGE_EVENT_TYPES.values())
    assert len(tags) == len(set(tags))


def test_wire_tags_are_class_level_not_fields() -> None:
    assert "type" not in TextContent.__init__.__code__.co_varnames
    assert "role" not in UserMessage.__init__.__code__.co_varnames
    assert "type" not in AgentStartEvent.__init__.__code__.co_varnames


def test_enum_values_are_pinned() -> None:
    assert {e.__name__: {m.name: m.value for m in e} for e in (
        StopReason, ThinkingLevel, ToolExecutionMode, QueueMode
    )} == {
        "StopReason": {
            "STOP": "stop",
            "LENGTH": "length",
            "TOOL_USE": "toolUse",
            "ERROR": "error",
            "ABORTED": "aborted",
        },
        "ThinkingLevel": {
            "OFF": "off",
            "MINIMAL": "minimal",
            "LOW": "low",
            "MEDIUM": "medium",
            "HIGH": "high",
            "XHIGH": "xhigh",
        },
        "ToolExecutionMode": {"SEQUENTIAL": "sequential", "PARALLEL": "parallel"},
        "QueueMode": {"ALL": "all", "ONE_AT_A_TIME": "one-at-a-time"},
    }


def test_enums_are_str_enums() -> None:
    for enum in (StopReason, ThinkingLevel, ToolExecutionMode, QueueMode):
        assert issubclass(enum, str)


def test_every_public_error_derives_from_agentcore_error() -> None:
    errors = [
        obj
        for _, obj in _public_objects()
        if inspect.isclass(obj) and issubclass(obj, BaseException)
    ]
    assert set(errors) == {
        AgentcoreError,
        AgentBusyError,
        AgentClosedError,
        AbortError,
        ToolArgumentsError,
        ProviderNotFoundError,
        ModelNotFoundError,
        MissingApiKeyError,
        RunError,
        GuardrailTripped,
        UsageLimitExceeded,
        OutputValidationError,
        SerializationError,
        SessionBusyError,
    }
    for error in errors:
        assert issubclass(error, AgentcoreError), error
        # UsageLimitExceeded is named by API.md §14, after the peers' MaxTurnsExceeded
        # the contract's names for a limit reached and a guardrail tripped (API §14, §26)
        assert error.__name__.endswith("Error") or error in (UsageLimitExceeded,
                                                             GuardrailTripped), error
    assert issubclass(AgentcoreError, Exception)


def test_errors_also_derive_from_the_matching_builtin() -> None:
    assert issubclass(ToolArgumentsError, ValueError)
    assert issubclass(SerializationError, ValueError)
    assert issubclass(ProviderNotFoundError, LookupError)
    assert issubclass(ModelNotFoundError, LookupError)


_IMPORT_PROBE = textwrap.dedent(
    f"""
    import importlib, json, logging, sys, threading
    before = set(sys.modules)
    import agentcore
    _registry = importlib.import_module({_registry.__name__!r})
    print(json.dumps({{
        "providers": sorted(_registry._providers),
        "threads": [t.name for t in threading.enumerate()],
        "jsonschema": sorted(m for m in sys.modules if m.split(".")[0] == "jsonschema"),
        "root_handlers": len(logging.getLogger().handlers),
        "agentcore_handlers": len(logging.getLogger("agentcore").handlers),
    }}))
    """
)


@pytest.mark.slow
def test_import_agentcore_does_no_work() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", _IMPORT_PROBE],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=REPO_ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert json.loads(proc.stdout) == {
        "providers": [],
        "threads": ["MainThread"],
        "jsonschema": [],
        "root_handlers": 0,
        "agentcore_handlers": 0,
    }


def test_package_ships_py_typed() -> None:
    assert (PACKAGE_DIR / "py.typed").is_file()


def _run_tool(module: str, *args: str) -> subprocess.CompletedProcess[str]:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed")
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        capture_output=True,
        text=True,
        timeout=280,
        check=False,
        cwd=REPO_ROOT,
    )


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_mypy_strict_passes_on_the_package(mypy_report: MypyReport) -> None:
    """The session's one mypy run (tests/conftest.py) also checks tests/typing/, whose
    `*_fail.py` snippets must fail: only those may have errors, and mypy itself ran."""
    assert mypy_report.returncode in (0, 1), mypy_report.output  # 2: mypy failed to run
    assert {path: lines for path, lines in mypy_report.by_file.items()
            if not path.endswith("_fail.py")} == {}, mypy_report.output
    assert all(path.startswith("tests/typing/") for path in mypy_report.by_file)
    [summary] = mypy_report.other
    assert summary.startswith(("Success: no issues found", "Found ")), mypy_report.output


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_ruff_passes_on_package_and_tests() -> None:
    proc = _run_tool("ruff", "check", "agentcore", "tests")
    assert proc.returncode == 0, proc.stdout + proc.stderr


TESTING_ALL = [
    "EventRecorder",
    "FauxProvider",
    "MockTransport",
    "ModelCall",
    "Reply",
    "ScriptedModel",
    "faux_assistant_message",
    "faux_text",
    "faux_thinking",
    "faux_tool_call",
    "record_events",
    "register_faux_provider",
    "scripted_model",
    "tool_call",
]

FAUX_ALL = [
    "FauxProvider",
    "FauxResponse",
    "faux_assistant_message",
    "faux_text",
    "faux_thinking",
    "faux_tool_call",
    "register_faux_provider",
]

PUBLIC_SUBMODULE_NAMES = {
    "agentcore.compaction": {"CompactionSettings", "compact", "estimate_tokens"},
    "agentcore.testing": set(TESTING_ALL),
    "agentcore.evals": {"Case", "Contains", "Dataset", "Equals", "Judge", "MaxCost",
                        "MaxDuration", "Regex", "Report", "RunResult", "Score", "ToolCalled",
                        "evaluate"},
    "agentcore.notebook": {"display"},
    "agentcore.otel": {"instrument"},
    "agentcore.mcp": {"MCPServerError", "MCPServerHTTP", "MCPServerStdio", "MCPToolError"},
    "agentcore.sessions": {"JournalEntry", "JsonlSession", "PostgresSession", "Session",
                           "SessionJournal", "SqliteSession"},
    "agentcore.web": {"APPROVAL_EVENT", "APPROVAL_REASON", "DEFAULT_MAX_BODY_BYTES",
                      "DEFAULT_MAX_THREADS", "DEFAULT_UPLOAD_TIMEOUT", "MemoryCatalog",
                      "SqliteCatalog", "ThreadCatalog", "ThreadInfo", "ag_ui_events", "app"},
    "agentcore.providers.faux": set(FAUX_ALL),
    "agentcore.providers.models": {
        "env_var_for",
        "get_env_api_key",
        "get_model",
        "get_models",
        "get_providers",
        "require_api_key",
    },
    "agentcore.providers.openai_completions": {"build_body", "stream_openai_completions"},
    "agentcore.providers.openai_responses": {"build_body", "stream_openai_responses"},
    "agentcore.providers.anthropic": {"build_body", "headers_for", "stream_anthropic"},
    "agentcore.providers.google": {"build_body", "stream_google"},
}
"""Each public module path and the names it must keep exporting (it may add more)."""

PROVIDERS_ALL_AT_LEAST = {
    "StreamFn",
    "complete",
    "get_env_api_key",
    "get_model",
    "get_models",
    "get_providers",
    "register_provider",
    "stream",
    "unregister_provider",
}

PROVIDERS_HTTP = {"HttpClient", "RequestsTransport", "Transport", "Urllib3Transport"}
"""The HTTP layer's public names, exported from `agentcore.providers` (API §23)."""

WIRE_MODULES = [
    "agentcore.providers.anthropic",
    "agentcore.providers.google",
    "agentcore.providers.openai_completions",
    "agentcore.providers.openai_responses",
]


def test_testing_all_is_pinned_and_sorted() -> None:
    import agentcore.testing

    assert agentcore.testing.__all__ == TESTING_ALL


def test_faux_all_is_pinned_and_sorted() -> None:
    import agentcore.providers.faux

    assert agentcore.providers.faux.__all__ == FAUX_ALL


@pytest.mark.parametrize("module_name", sorted(PUBLIC_SUBMODULE_NAMES))
def test_public_submodule_exports_its_names(module_name: str) -> None:
    module = importlib.import_module(module_name)
    exported = set(module.__all__)
    assert exported >= PUBLIC_SUBMODULE_NAMES[module_name]
    assert [name for name in sorted(exported) if not hasattr(module, name)] == []
    assert (module.__doc__ or "").strip()
    undocumented = [
        name
        for name in sorted(exported)
        if (inspect.isclass(getattr(module, name)) or inspect.isfunction(getattr(module, name)))
        and not (getattr(module, name).__doc__ or "").strip()
    ]
    assert undocumented == []


@pytest.mark.parametrize("module_name", WIRE_MODULES)
def test_wire_module_stream_function_is_callable(module_name: str) -> None:
    module = importlib.import_module(module_name)
    [name] = [n for n in module.__all__ if n.startswith("stream_")]
    function = getattr(module, name)
    assert inspect.isfunction(function)
    assert list(inspect.signature(function).parameters)[:3] == ["model", "context", "options"]


def test_public_submodules_share_the_faux_helpers() -> None:
    import agentcore.providers.faux as faux
    import agentcore.testing as testing

    for name in FAUX_ALL:
        if name != "FauxResponse":
            assert getattr(testing, name) is getattr(faux, name), name


def test_providers_package_reexports_the_registry_and_catalogue() -> None:
    import agentcore.providers as providers

    exported = set(getattr(providers, "__all__", ()))
    assert exported >= PROVIDERS_ALL_AT_LEAST, sorted(PROVIDERS_ALL_AT_LEAST - exported)
    for name in sorted(PROVIDERS_ALL_AT_LEAST):
        assert getattr(providers, name) is getattr(agentcore, name), name


def test_providers_package_exports_the_http_layer() -> None:
    from _internals import HttpClient, RequestsTransport, Transport, Urllib3Transport

    import agentcore.providers as providers
    import agentcore.testing as testing

    assert set(providers.__all__) >= PROVIDERS_HTTP
    layer = {"HttpClient": HttpClient, "RequestsTransport": RequestsTransport,
             "Transport": Transport, "Urllib3Transport": Urllib3Transport}
    for name in sorted(PROVIDERS_HTTP):
        assert getattr(providers, name) is layer[name], name
    assert testing.MockTransport.__module__ == HttpClient.__module__.replace("_client", "_mock")


@pytest.mark.slow
def test_python_m_agentcore_help_works() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "agentcore", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=REPO_ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert proc.stdout.startswith("usage: python -m agentcore")
    for command in ("demo", "chat"):
        assert f"    {command} " in proc.stdout, proc.stdout


_HEAVY_PROBE = textwrap.dedent(
    """
    import json, sys
    import agentcore
    print(json.dumps(sorted(sys.modules)))
    """
)

NOT_LOADED_BY_IMPORT = [
    cli.__name__,
    "agentcore.evals",
    "agentcore.mcp",
    "agentcore.notebook",
    "agentcore.otel",
    "agentcore.providers.anthropic",
    "agentcore.providers.google",
    "agentcore.providers.openai_completions",
    "agentcore.providers.openai_responses",
    "agentcore.testing",
    "agentcore.web",
    "ag_ui",
    "cattrs",
    "jsonschema",
    "mcp",
    "opentelemetry",
    "psycopg",
    "psycopg_pool",
    "requests",
    "starlette",
    "uvicorn",
]
"""Loaded only when first used (a call to a provider, `to_json`, a tool's validation), never by
`import agentcore` itself."""


@pytest.mark.slow
def test_import_agentcore_leaves_heavy_modules_unloaded() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", _HEAVY_PROBE],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=REPO_ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    loaded = set(json.loads(proc.stdout))
    assert [name for name in NOT_LOADED_BY_IMPORT if name in loaded] == []
