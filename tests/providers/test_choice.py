"""`_choice`: what a request says about tools, and how a JSON Schema becomes an output format.

Pure functions, no HTTP: `tool_choice`, `strict_schema` (OpenAI's strict mode),
`anthropic_schema` (Anthropic's structured-output limits) and which models take native output.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from _internals import (
    Choice,
    _choice,
    anthropic_schema,
    check_native_output,
    json_schema_format,
    native_output_with_tools,
    strict_schema,
    supports_native_output,
    tool_choice,
)

import agentcore as ac

WEATHER = ac.Tool("get_weather", "Weather.", {"type": "object", "properties": {}})
TIME = ac.Tool("get_time", "Time.", {"type": "object", "properties": {}})
TOOLS = [WEATHER, TIME]


def obj(properties: dict[str, Any], required: list[str] | None = None,
        **more: Any) -> dict[str, Any]:
    """An object schema; every property required unless `required` says otherwise."""
    return {"type": "object", "properties": properties,
            "required": list(properties) if required is None else required, **more}


def closed(schema: dict[str, Any]) -> dict[str, Any]:
    return {**schema, "additionalProperties": False}


STR = {"type": "string"}
INT = {"type": "integer"}


# --- tool_choice ---------------------------------------------------------------------------


@pytest.mark.parametrize(("given", "expected"), [
    (None, None),
    ("auto", Choice("auto")),
    ("none", Choice("none")),
    ("required", Choice("required")),
    ("get_time", Choice("tool", "get_time")),
])
def test_choice_tool_choice_of_each_mode(given: str | None, expected: Choice | None) -> None:
    assert tool_choice(ac.StreamOptions(tool_choice=given), TOOLS) == expected


@pytest.mark.parametrize("given", ["auto", "none", "required", "get_time", "nonexistent"])
@pytest.mark.parametrize("tools", [[], None])
def test_choice_tool_choice_says_nothing_without_tools(given: str, tools: Any) -> None:
    assert tool_choice(ac.StreamOptions(tool_choice=given), tools) is None


def test_choice_unknown_tool_name_raises_naming_the_field_and_the_tools() -> None:
    with pytest.raises(ValueError, match="'tool_choice'") as caught:
        tool_choice(ac.StreamOptions(tool_choice="get_weather_now"), TOOLS)
    assert str(caught.value) == (
        "'tool_choice' 'get_weather_now' is neither 'auto', 'none' nor 'required' and names no "
        "tool of the run (its tools: 'get_weather', 'get_time')")


def test_choice_a_tool_named_like_a_mode_is_the_mode() -> None:
    tools = [ac.Tool("none", "A tool called none.", {"type": "object"})]
    assert tool_choice(ac.StreamOptions(tool_choice="none"), tools) == Choice("none")


# --- strict_schema (OpenAI) ----------------------------------------------------------------


def test_choice_strict_schema_closes_every_object() -> None:
    schema = obj({"name": STR, "address": obj({"city": STR})})
    address = closed(obj({"city": STR}))
    assert strict_schema(schema) == closed(obj({"name": STR, "address": address}))


def test_choice_strict_schema_keeps_objects_already_closed() -> None:
    schema = closed(obj({"n": INT}))
    assert strict_schema(schema) == schema


def test_choice_strict_schema_closes_defs_array_items_and_any_of() -> None:
    point = obj({"x": INT, "y": INT})
    schema = {**obj({"points": {"type": "array", "items": {"$ref": "#/$defs/Point"}},
                     "shape": {"anyOf": [obj({"r": INT}), {"type": "null"}]},
                     "pair": {"type": "array", "prefixItems": [obj({"a": STR}), STR]}}),
              "$defs": {"Point": point}}
    assert strict_schema(schema) == {
        **closed(obj({"points": {"type": "array", "items": {"$ref": "#/$defs/Point"}},
                      "shape": {"anyOf": [closed(obj({"r": INT})), {"type": "null"}]},
                      "pair": {"type": "array", "prefixItems": [closed(obj({"a": STR})), STR]}})),
        "$defs": {"Point": closed(point)}}


@pytest.mark.parametrize("schema", [
    pytest.param(obj({"a": STR, "b": STR}, required=["a"]), id="optional property"),
    pytest.param(obj({"a": obj({"b": STR}, required=[])}), id="nested optional property"),
    pytest.param(obj({"a": STR}, additionalProperties=True), id="additionalProperties true"),
    pytest.param(obj({"tags": {"type": "object", "additionalProperties": INT}}),
                 id="a dict type"),
    pytest.param(obj({"anything": {"type": "object"}}), id="an object without properties"),
    pytest.param({**obj({"a": {"$ref": "#/$defs/A"}}),
                  "$defs": {"A": obj({"b": STR}, required=[])}}, id="optional in $defs"),
    pytest.param(obj({"a": {"allOf": [STR]}}), id="allOf"),
])
def test_choice_strict_schema_is_none_when_it_cannot_be_strict(schema: dict[str, Any]) -> None:
    assert strict_schema(schema) is None


def test_choice_strict_schema_leaves_its_input_alone() -> None:
    schema = obj({"a": obj({"b": STR}), "c": {"anyOf": [obj({"d": INT})]}})
    before = copy.deepcopy(schema)
    strict_schema(schema)
    assert schema == before
    assert "additionalProperties" not in schema["properties"]["a"]


def test_choice_json_schema_format_is_strict_when_it_can_be() -> None:
    strictable = obj({"a": STR})
    loose = obj({"a": STR}, required=[])
    assert json_schema_format(strictable) == (closed(strictable), True)
    assert json_schema_format(loose) == (loose, False)
    assert json_schema_format(loose)[0] is loose  # sent as given


# --- anthropic_schema --------------------------------------------------------------------------


def test_choice_anthropic_schema_closes_objects_and_keeps_optional_properties() -> None:
    schema = {**obj({"a": STR, "b": {"$ref": "#/$defs/B"}}, required=["a"]),
              "$defs": {"B": obj({"c": {"type": "array", "items": obj({"d": INT})}})}}
    assert anthropic_schema(schema) == {
        **closed(obj({"a": STR, "b": {"$ref": "#/$defs/B"}}, required=["a"])),
        "$defs": {"B": closed(obj({"c": {"type": "array", "items": closed(obj({"d": INT}))}}))}}


def test_choice_anthropic_schema_moves_unsupported_constraints_into_the_description() -> None:
    schema = obj({
        "age": {"type": "integer", "minimum": 0, "maximum": 150, "description": "Age"},
        "code": {"type": "string", "minLength": 2, "maxLength": 3, "pattern": "^[A-Z]+$"},
        "when": {"type": "string", "format": "date-time"},
        "net": {"type": "string", "format": "ipv4-cidr"},
        "few": {"type": "array", "items": STR, "minItems": 1},
        "many": {"type": "array", "items": STR, "minItems": 2, "maxItems": 5},
    })
    assert anthropic_schema(schema)["properties"] == {
        "age": {"type": "integer", "description": "Age (minimum: 0, maximum: 150)"},
        "code": {"type": "string", "pattern": "^[A-Z]+$",
                 "description": "(minLength: 2, maxLength: 3)"},
        "when": {"type": "string", "format": "date-time"},
        "net": {"type": "string", "description": '(format: "ipv4-cidr")'},
        "few": {"type": "array", "items": STR, "minItems": 1},
        "many": {"type": "array", "items": STR, "description": "(maxItems: 5, minItems: 2)"},
    }


def test_choice_anthropic_schema_one_of_becomes_any_of() -> None:
    schema = obj({"v": {"oneOf": [obj({"a": STR}), INT]}})
    assert anthropic_schema(schema)["properties"]["v"] == {
        "anyOf": [closed(obj({"a": STR})), INT]}


@pytest.mark.parametrize(("schema", "where"), [
    (obj({"tags": {"type": "object", "additionalProperties": INT}}), "/properties/tags"),
    (obj({"a": STR}, additionalProperties=True), "/"),
    (obj({"x": {"anyOf": [{"type": "object"}, STR]}}), "/properties/x/anyOf/0"),
])
def test_choice_anthropic_schema_refuses_open_objects(schema: dict[str, Any], where: str) -> None:
    with pytest.raises(ValueError, match="'output_schema'") as caught:
        anthropic_schema(schema)
    assert repr(where) in str(caught.value)
    assert "output_mode='tool'" in str(caught.value)


def test_choice_anthropic_schema_leaves_its_input_alone() -> None:
    schema = obj({"n": {"type": "integer", "minimum": 1}, "o": {"oneOf": [obj({"a": STR})]}})
    before = copy.deepcopy(schema)
    anthropic_schema(schema)
    assert schema == before


# --- which models take native output -----------------------------------------------------------


def model(api: str, compat: dict[str, Any] | None = None) -> ac.Model:
    return ac.Model("m", "m", api, "p", "http://127.0.0.1:1", compat=compat)


@pytest.mark.parametrize("api", sorted(_choice.NATIVE_OUTPUT_APIS))
def test_choice_native_output_by_default_on_the_json_schema_apis(api: str) -> None:
    assert supports_native_output(model(api))
    assert not supports_native_output(model(api, {"supports_native_output": False}))


def test_choice_native_output_on_anthropic_only_where_compat_says_so() -> None:
    assert not supports_native_output(model("anthropic-messages"))
    assert supports_native_output(model("anthropic-messages", {"supportsNativeOutput": True}))
    with pytest.raises(ValueError, match="'output_mode' 'native' is not supported by model 'm'"):
        check_native_output(model("anthropic-messages"))
    check_native_output(model("anthropic-messages", {"supports_native_output": True}))


@pytest.mark.parametrize("api", sorted(_choice.NATIVE_OUTPUT_APIS | {"anthropic-messages"}))
def test_choice_native_output_with_tools_by_default_except_on_gemini(api: str) -> None:
    gemini = api in ("google-generative-ai", "google-vertex")
    assert native_output_with_tools(model(api)) is not gemini
    assert native_output_with_tools(model(api, {"native_output_with_tools": True}))
    assert not native_output_with_tools(model(api, {"native_output_with_tools": False}))


@pytest.mark.parametrize("entry", [*ac.get_models("google"), *ac.get_models("google-vertex")],
                         ids=lambda m: f"{m.provider}/{m.id}")
def test_choice_catalogue_gemini_3_rows_take_native_output_with_tools(entry: ac.Model) -> None:
    assert native_output_with_tools(entry) is entry.id.startswith("gemini-3")
    check_native_output(entry)  # without tools every Gemini takes it
    if not entry.id.startswith("gemini-3"):
        with pytest.raises(ValueError, match="not supported together with tools"):
            check_native_output(entry, with_tools=True)


NATIVE_CLAUDES = {"claude-opus-4-5", "claude-opus-4-5-20251101", "claude-sonnet-4-5",
                  "claude-sonnet-4-5-20250929", "claude-haiku-4-5", "claude-haiku-4-5-20251001"}
"""The catalogue's Claude models with structured outputs generally available (Anthropic's
structured-outputs page: Claude Opus 4.5, Sonnet 4.5, Haiku 4.5 and later)."""


@pytest.mark.parametrize("entry", ac.get_models("anthropic"), ids=lambda m: m.id)
def test_choice_catalogue_claude_rows_say_which_take_native_output(entry: ac.Model) -> None:
    assert supports_native_output(entry) == (entry.id in NATIVE_CLAUDES)
