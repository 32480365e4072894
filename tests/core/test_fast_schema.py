"""The fast schema check never says yes where jsonschema says no."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agentcore as ac
from agentcore._core._fast_schema import compile_fast, json_copy

_TYPES = ["string", "integer", "number", "boolean", "null", "object", "array"]
scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=True),
                    st.text(max_size=3))
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3)),
    max_leaves=8,
)


def _schemas() -> st.SearchStrategy[dict[str, Any]]:
    leaf = st.one_of(
        st.builds(lambda t: {"type": t}, st.sampled_from(_TYPES)),
        st.builds(lambda ts: {"type": ts}, st.lists(st.sampled_from(_TYPES), min_size=1,
                                                     max_size=3, unique=True)),
        st.builds(lambda e: {"enum": e}, st.lists(scalars, min_size=1, max_size=3)),
        st.just({}),
        st.just({"type": "string", "minLength": 2}),  # unsupported: full check only
    )

    def extend(inner: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
        objects = st.builds(
            lambda props, req, extra: {"type": "object", "properties": props,
                                       "required": [k for k in req if k in props],
                                       "additionalProperties": extra,
                                       "description": "d"},
            st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3),
            st.lists(st.sampled_from(["a", "b", "c"]), unique=True, max_size=3),
            st.booleans(),
        )
        arrays = st.builds(lambda item: {"type": "array", "items": item}, inner)
        return st.one_of(objects, arrays)

    return st.recursive(leaf, extend, max_leaves=6)


@pytest.mark.slow  # a stress test: over a second on an idle 2-core machine
@settings(max_examples=400, deadline=None)
@given(_schemas(), values)
def test_fast_schema_yes_implies_jsonschema_yes(schema: dict[str, Any], value: Any) -> None:
    check = compile_fast(schema)
    if check is not None and check(value):
        assert jsonschema.Draft202012Validator(schema).is_valid(value), (schema, value)


def test_fast_schema_declines_what_it_does_not_know() -> None:
    assert compile_fast({"type": "string", "pattern": "^a"}) is None
    assert compile_fast({"anyOf": [{"type": "string"}]}) is None
    assert compile_fast({"type": "object", "additionalProperties": {"type": "string"}}) is None
    assert compile_fast({"enum": [[1]]}) is None


def test_fast_schema_accepts_the_common_case_and_leaves_doubt_to_jsonschema() -> None:
    check = compile_fast({"type": "object", "properties": {"n": {"type": "integer"}},
                          "required": ["n"], "additionalProperties": False})
    assert check is not None
    assert check({"n": 1})
    assert not check({"n": True})  # bool is no integer
    assert not check({"n": 1.0})  # jsonschema accepts 1.0: decided by the full check
    assert not check({})
    assert not check({"n": 1, "x": 2})


def test_fast_schema_validation_still_coerces_and_reports() -> None:
    tool = ac.AgentTool("t", "d", {"type": "object", "properties": {"n": {"type": "integer"}},
                                   "required": ["n"], "additionalProperties": False},
                        lambda *a: ac.AgentToolResult([]))
    assert ac.validate_tool_arguments(tool, ac.ToolCall("c", "t", {"n": "42"})) == {"n": 42}
    assert ac.validate_tool_arguments(tool, ac.ToolCall("c", "t", {"n": 1.0})) == {"n": 1.0}
    args = {"n": 3}
    copied = ac.validate_tool_arguments(tool, ac.ToolCall("c", "t", args))
    assert copied == args
    assert copied is not args


def test_json_copy_is_deep() -> None:
    value = {"a": [1, {"b": "c"}], "d": None}
    copied = json_copy(value)
    assert copied == value
    assert copied["a"] is not value["a"]
    assert copied["a"][1] is not value["a"][1]
    odd = {"s": (1, [2])}
    assert json_copy(odd)["s"][1] is not odd["s"][1]  # non-JSON values: deepcopy
