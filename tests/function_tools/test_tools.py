"""Tools as the model sees them, tools that run, their results, and argument validation."""

from __future__ import annotations

import json
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentcore import (
    AbortSignal,
    AgentcoreError,
    AgentTool,
    AgentToolResult,
    ImageContent,
    TextContent,
    Tool,
    ToolArgumentsError,
    ToolCall,
    ToolExecutionMode,
    Usage,
    validate_tool_arguments,
)

OBJECT: dict[str, Any] = {"type": "object", "properties": {}}


def _execute(
    tool_call_id: str, args: Any, signal: AbortSignal, on_update: Any
) -> AgentToolResult:
    return AgentToolResult([TextContent("ok")])


def _tool(properties: dict[str, Any], required: list[str] | None = None, **extra: Any) -> AgentTool:
    schema: dict[str, Any] = {"type": "object", "properties": properties, **extra}
    if required is not None:
        schema["required"] = required
    return AgentTool("t", "a test tool", schema, _execute)


def _call(arguments: dict[str, Any]) -> ToolCall:
    return ToolCall("call_1", "t", arguments)


# --- Tool, AgentTool, AgentToolResult --------------------------------------------------------


def test_tool_positional_construction() -> None:
    schema = {"type": "object", "properties": {"path": {"type": "string"}}}
    assert Tool("read", "Read a file", schema) == Tool(
        name="read", description="Read a file", parameters=schema
    )


def test_tool_is_frozen() -> None:
    tool = Tool("read", "Read a file", OBJECT)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        tool.name = "write"  # type: ignore[misc]


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "nonsense"},
        {"type": "object", "properties": {"a": {"type": 5}}},
        {"type": "object", "required": "a"},
        {"type": "object", "properties": {"a": {"minimum": "zero"}}},
    ],
)
def test_tool_rejects_an_invalid_json_schema_naming_parameters(schema: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="'parameters'"):
        Tool("t", "d", schema)
    with pytest.raises(ValueError, match="'parameters'"):
        AgentTool("t", "d", schema, _execute)


def test_agent_tool_is_a_tool_with_defaults() -> None:
    tool = AgentTool("t", "d", OBJECT, _execute)
    assert isinstance(tool, Tool)
    assert (tool.name, tool.description, tool.parameters) == ("t", "d", OBJECT)
    assert tool.execute is _execute
    assert (tool.label, tool.execution_mode, tool.prepare_arguments) == (None, None, None)


def test_agent_tool_accepts_execution_mode_as_string() -> None:
    tool = AgentTool("t", "d", OBJECT, _execute, execution_mode="sequential")
    assert tool.execution_mode is ToolExecutionMode.SEQUENTIAL


def test_agent_tools_compare_by_value() -> None:
    assert AgentTool("t", "d", OBJECT, _execute, label="T") == AgentTool(
        "t", "d", OBJECT, _execute, label="T"
    )
    assert AgentTool("t", "d", OBJECT, _execute) != AgentTool("t", "other", OBJECT, _execute)


def test_agent_tool_result_defaults() -> None:
    assert AgentToolResult() == AgentToolResult(
        content=[], details=None, usage=None, added_tool_names=None, terminate=None
    )


def test_agent_tool_result_is_mutable() -> None:
    result = AgentToolResult([TextContent("partial")])
    result.content.append(ImageContent("aGk=", "image/png"))
    result.details = {"lines": 3}
    result.terminate = True
    result.usage = Usage(1, 2, 0, 0, 3)
    assert result == AgentToolResult(
        [TextContent("partial"), ImageContent("aGk=", "image/png")],
        details={"lines": 3},
        usage=Usage(1, 2, 0, 0, 3),
        terminate=True,
    )


def test_agent_tool_result_validates_on_assignment() -> None:
    result = AgentToolResult()
    with pytest.raises(TypeError, match="'terminate'"):
        result.terminate = "yes"  # type: ignore[assignment]


# --- validate_tool_arguments: the happy path and copies --------------------------------------


def test_validate_tool_arguments_returns_valid_arguments_unchanged() -> None:
    tool = _tool({"path": {"type": "string"}, "limit": {"type": "integer"}}, ["path"])
    assert validate_tool_arguments(tool, _call({"path": "a.txt", "limit": 5})) == {
        "path": "a.txt",
        "limit": 5,
    }


def test_validate_tool_arguments_returns_a_deep_copy() -> None:
    tool = _tool({"opts": {"type": "object"}, "tags": {"type": "array"}})
    call = _call({"opts": {"depth": 1}, "tags": ["a"]})
    args = validate_tool_arguments(tool, call)
    args["opts"]["depth"] = 99
    args["tags"].append("b")
    args["new"] = True
    assert call.arguments == {"opts": {"depth": 1}, "tags": ["a"]}


def test_validate_tool_arguments_coerced_result_is_a_copy() -> None:
    tool = _tool({"n": {"type": "integer"}, "opts": {"type": "object"}})
    call = _call({"n": "42", "opts": {"k": [1]}})
    args = validate_tool_arguments(tool, call)
    assert args == {"n": 42, "opts": {"k": [1]}}
    args["opts"]["k"].append(2)
    assert call.arguments == {"n": "42", "opts": {"k": [1]}}


def test_validate_tool_arguments_works_for_a_plain_tool() -> None:
    tool = Tool("t", "d", {"type": "object", "properties": {"n": {"type": "integer"}}})
    assert validate_tool_arguments(tool, _call({"n": "7"})) == {"n": 7}
    with pytest.raises(ToolArgumentsError, match="n"):
        validate_tool_arguments(tool, _call({"n": "seven"}))


# --- validate_tool_arguments: coercion -------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "given", "expected"),
    [
        ("integer", "42", 42),
        ("integer", " -12 ", -12),
        ("number", "4.5", 4.5),
        ("number", "-2.5e1", -25.0),
        ("number", "3", 3),
        ("boolean", "true", True),
        ("boolean", "false", False),
        ("boolean", "True", True),
        ("string", 3, "3"),
        ("string", 2.5, "2.5"),
        ("string", True, "true"),
        (["integer", "null"], "5", 5),
    ],
)
def test_validate_tool_arguments_coerces_mistyped_scalars(
    kind: str | list[str], given: Any, expected: Any
) -> None:
    tool = _tool({"value": {"type": kind}})
    args = validate_tool_arguments(tool, _call({"value": given}))
    assert args == {"value": expected}
    assert type(args["value"]) is type(expected)


def test_validate_tool_arguments_coerces_inside_objects_and_arrays() -> None:
    tool = _tool(
        {
            "filter": {
                "type": "object",
                "properties": {"min": {"type": "number"}, "exact": {"type": "boolean"}},
            },
            "ids": {"type": "array", "items": {"type": "integer"}},
            "rows": {
                "type": "array",
                "items": {"type": "object", "properties": {"label": {"type": "string"}}},
            },
        }
    )
    call = _call(
        {
            "filter": {"min": "0.5", "exact": "false"},
            "ids": ["1", 2, "3"],
            "rows": [{"label": 10}, {"label": "ok"}],
        }
    )
    assert validate_tool_arguments(tool, call) == {
        "filter": {"min": 0.5, "exact": False},
        "ids": [1, 2, 3],
        "rows": [{"label": "10"}, {"label": "ok"}],
    }


@pytest.mark.parametrize(
    ("kind", "given"),
    [
        ("integer", "abc"),
        ("integer", "4.5"),
        ("integer", 4.5),
        ("integer", "1_000"),
        ("number", "four"),
        ("number", "nan"),
        ("number", "1e999"),
        ("boolean", "yes"),
        ("boolean", 1),
        ("string", {"a": 1}),
        ("string", [1]),
    ],
)
def test_validate_tool_arguments_does_not_coerce_ambiguous_values(kind: str, given: Any) -> None:
    tool = _tool({"value": {"type": kind}})
    with pytest.raises(ToolArgumentsError, match="value"):
        validate_tool_arguments(tool, _call({"value": given}))


# --- ToolArgumentsError ----------------------------------------------------------------------


def test_tool_arguments_error_is_a_value_error_and_agentcore_error() -> None:
    tool = _tool({"n": {"type": "integer"}})
    with pytest.raises(ToolArgumentsError) as info:
        validate_tool_arguments(tool, _call({"n": "abc"}))
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, AgentcoreError)


def test_tool_arguments_error_lists_every_failing_path_and_the_arguments() -> None:
    tool = _tool(
        {
            "count": {"type": "integer"},
            "verbose": {"type": "boolean"},
            "path": {"type": "string"},
            "nested": {"type": "object", "properties": {"depth": {"type": "integer"}}},
        },
        required=["path"],
    )
    arguments = {"count": "abc", "verbose": "maybe", "nested": {"depth": "deep"}}
    with pytest.raises(ToolArgumentsError) as info:
        validate_tool_arguments(tool, _call(arguments))
    message = str(info.value)
    assert "'t'" in message
    assert "count" in message
    assert "'abc'" in message
    assert "verbose" in message
    assert "'maybe'" in message
    assert "nested/depth" in message
    assert "'path' is a required property" in message
    assert json.dumps(arguments, indent=2) in message


def test_tool_arguments_error_keeps_the_received_arguments_not_the_coerced_ones() -> None:
    tool = _tool({"n": {"type": "integer"}, "m": {"type": "integer"}})
    with pytest.raises(ToolArgumentsError) as info:
        validate_tool_arguments(tool, _call({"n": "1", "m": "x"}))
    assert json.dumps({"n": "1", "m": "x"}, indent=2) in str(info.value)


def test_validate_tool_arguments_reports_schema_keywords_beyond_types() -> None:
    tool = _tool(
        {"mode": {"enum": ["fast", "slow"]}, "n": {"type": "integer", "minimum": 1}},
        additionalProperties=False,
    )
    with pytest.raises(ToolArgumentsError) as info:
        validate_tool_arguments(tool, _call({"mode": "medium", "n": "0", "extra": 1}))
    message = str(info.value)
    assert "mode" in message
    assert "'medium'" in message
    assert "minimum" in message or "less than" in message
    assert "'extra'" in message


# --- property: valid arguments validate to an equal dict -------------------------------------

_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "integer": st.integers(),
    "number": st.one_of(st.integers(), st.floats(allow_nan=False, allow_infinity=False)),
    "boolean": st.booleans(),
    "string": st.text(),
}


@st.composite
def _schema_and_valid_arguments(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    kinds = draw(
        st.dictionaries(
            st.text(min_size=1, max_size=8), st.sampled_from(sorted(_VALUES)), max_size=6
        )
    )
    present = draw(st.lists(st.sampled_from(sorted(kinds)), unique=True) if kinds else st.just([]))
    schema = {
        "type": "object",
        "properties": {name: {"type": kind} for name, kind in kinds.items()},
        "required": sorted(present),
    }
    arguments = {name: draw(_VALUES[kinds[name]]) for name in present}
    return schema, arguments


@settings(max_examples=100, database=None, deadline=None)
@given(_schema_and_valid_arguments())
def test_validate_tool_arguments_valid_arguments_validate_to_an_equal_dict(
    case: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    schema, arguments = case
    call = _call(arguments)
    for tool in (Tool("t", "d", schema), AgentTool("t", "d", schema, _execute)):
        result = validate_tool_arguments(tool, call)
        assert result == arguments
        assert {k: type(v) for k, v in result.items()} == {
            k: type(v) for k, v in arguments.items()
        }
        assert result is not call.arguments


def test_validate_tool_arguments_reports_unreadable_arguments() -> None:
    from agentcore import AgentTool, AgentToolResult, ToolArgumentsError, ToolCall
    from agentcore import validate_tool_arguments as validate

    tool = AgentTool("t", "d", {"type": "object", "properties": {"a": {"type": "string"}},
                                "required": ["a"]},
                     lambda *a: AgentToolResult([]))
    call = ToolCall("c", "t", {}, arguments_error="not valid JSON: Expecting value at 0")
    with pytest.raises(ToolArgumentsError, match=r"could not be read: not valid JSON.*Re-issue"):
        validate(tool, call)
