"""The fast schema check never says yes where jsonschema says no."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from _internals import compile_fast, json_copy
from hypothesis import given, settings
from hypothesis import strategies as st

import agentcore as ac

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
@settings(max_examples=200, deadline=None)
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


def _reference(schema: Any) -> Any:
    """The first fast check (issue 11), one closure per keyword: what the compiled one must say."""
    kinds = {"string": lambda v: type(v) is str, "integer": lambda v: type(v) is int,
             "number": lambda v: type(v) is int or type(v) is float,
             "boolean": lambda v: type(v) is bool, "null": lambda v: v is None,
             "object": lambda v: type(v) is dict, "array": lambda v: type(v) is list}
    known = {"description", "title", "default", "examples", "$comment", "$schema", "deprecated",
             "readOnly", "writeOnly", "type", "properties", "required",
             "additionalProperties", "items", "enum"}
    primitive = (str, int, float, bool, type(None))
    if schema is True or schema == {}:
        return lambda _: True
    if not isinstance(schema, dict) or not known.issuperset(schema):
        return None
    checks: list[Any] = []
    kind = schema.get("type")
    if kind is not None:
        names = [kind] if isinstance(kind, str) else kind
        if not isinstance(names, list) or not names or not all(n in kinds for n in names):
            return None
        tests = [kinds[n] for n in names]
        checks.append(lambda v: any(t(v) for t in tests))
    if "enum" in schema:
        allowed = schema["enum"]
        if not isinstance(allowed, list) or not all(type(e) in primitive for e in allowed):
            return None
        pairs = frozenset((type(e), e) for e in allowed)
        checks.append(lambda v: type(v) in primitive and (type(v), v) in pairs)
    if "items" in schema:
        item = _reference(schema["items"])
        if item is None:
            return None
        checks.append(lambda v: type(v) is not list or all(item(x) for x in v))
    if {"properties", "required", "additionalProperties"} & schema.keys():
        properties = schema.get("properties", {})
        required = schema.get("required", [])
        extra = schema.get("additionalProperties", True)
        if (not isinstance(properties, dict) or not isinstance(required, list)
                or not isinstance(extra, bool)):
            return None
        compiled = {name: _reference(sub) for name, sub in properties.items()}
        if any(c is None for c in compiled.values()):
            return None
        checks.append(lambda v: type(v) is not dict or (
            all(name in v for name in required)
            and all(compiled[k](x) if k in compiled else extra for k, x in v.items())))
    return lambda v: all(check(v) for check in checks)


def _odd_schemas() -> st.SearchStrategy[Any]:
    """Schemas the compiled check must decline or judge like the reference: bad types too."""
    return st.one_of(
        _schemas(),
        st.builds(lambda t, extra: {"type": t, **extra},
                  st.one_of(st.sampled_from([*_TYPES, "objectx"]), st.just([]),
                            st.lists(st.sampled_from(_TYPES), max_size=2)),
                  st.sampled_from([{}, {"description": "d"}, {"properties": {}},
                                   {"properties": {"a": True}, "required": ["a"]},
                                   {"properties": {"a": {}}}, {"items": {"type": "null"}},
                                   {"enum": [1, "a", None]}, {"additionalProperties": 1}])),
    )


@pytest.mark.slow  # a stress test, as the one above
@settings(max_examples=300, deadline=None)
@given(_odd_schemas(), values)
def test_fast_schema_compiled_check_answers_as_the_reference(schema: Any, value: Any) -> None:
    check, reference = compile_fast(schema), _reference(schema)
    assert (check is None) == (reference is None), schema
    if check is not None:
        assert check(value) == reference(value), (schema, value)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(_schemas(), st.dictionaries(st.sampled_from(["a", "b", "c"]), values, max_size=3))
def test_fast_schema_validation_fast_path_gives_what_the_full_check_gives(
    schema: dict[str, Any], args: dict[str, Any],
) -> None:
    schema = {"type": "object", "properties": {"x": schema}}
    args = {"x": args}
    call = ac.ToolCall("c", "t", args)
    fast = ac.AgentTool("t", "d", schema, lambda *a: ac.AgentToolResult([]))
    full = ac.Tool("t", "d", schema)  # a plain Tool: jsonschema every time
    try:
        expected: Any = ac.validate_tool_arguments(full, call)
    except ac.ToolArgumentsError as exc:
        expected = str(exc)
    try:
        got: Any = ac.validate_tool_arguments(fast, call)
    except ac.ToolArgumentsError as exc:
        got = str(exc)
    assert got == expected
    assert type(got) is type(expected)
    if isinstance(got, dict):
        assert got is not args  # a copy, deep
        assert got["x"] is not args["x"]


def test_fast_schema_validation_keeps_a_dict_subclass_as_the_full_check_does() -> None:
    class Arguments(dict[str, Any]):
        pass

    tool = ac.AgentTool("t", "d", {"type": "object"}, lambda *a: ac.AgentToolResult([]))
    args = Arguments(n=1)
    copied = ac.validate_tool_arguments(tool, ac.ToolCall("c", "t", args))
    assert type(copied) is Arguments
    assert copied == args
    assert copied is not args
