"""Tool choice and native structured output, decided once for every wire API (API §18).

Each wire module asks `tool_choice` what the request should say and writes it in its own form;
`strict_schema` and `supports_native_output` say how a JSON Schema can be sent as the
provider's structured-output format.
"""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Sequence
from typing import Any, Literal

import attrs

from ..._core import Model, StreamOptions, Tool
from ._compat import resolve

__all__ = [
    "NATIVE_OUTPUT_APIS",
    "NATIVE_OUTPUT_WITHOUT_TOOLS_APIS",
    "OUTPUT_NAME",
    "Choice",
    "anthropic_schema",
    "check_native_output",
    "check_tool_choice",
    "json_schema_format",
    "native_output_with_tools",
    "strict_schema",
    "supports_native_output",
    "tool_choice",
]

_log = logging.getLogger(__name__)

Mode = Literal["auto", "none", "required", "tool"]
_MODES = ("auto", "none", "required")

NATIVE_OUTPUT_APIS = frozenset({"openai-completions", "openai-responses", "google-generative-ai",
                                "google-vertex"})
"""The wire APIs whose models take a JSON Schema as the reply's format unless `compat` says no
(`supports_native_output`); on the others a model must say yes in its `compat`."""

NATIVE_OUTPUT_WITHOUT_TOOLS_APIS = frozenset({"google-generative-ai", "google-vertex"})
"""The wire APIs whose models take that format only in a request without tools unless `compat`
says otherwise (`native_output_with_tools`): Gemini before Gemini 3 rejects a JSON response
format together with function declarations. On the other APIs models take both at once."""

OUTPUT_NAME = "final_result"
"""The name a structured-output format is sent under, where the API wants one."""

_NOT_STRICT = frozenset({"allOf", "not", "if", "then", "else", "dependentRequired",
                         "dependentSchemas", "patternProperties", "unevaluatedProperties"})
"""Keywords OpenAI's strict mode does not accept: a schema using one is sent without `strict`."""


@attrs.frozen
class Choice:
    """What a request asks of the model: `mode`, and for `"tool"` the tool's `name`."""

    mode: Mode
    name: str | None = None


def check_tool_choice(choice: str | None, names: Sequence[str]) -> None:
    """Raise `ValueError` naming `tool_choice` when it names none of the tools in `names`."""
    if choice is None or choice in _MODES or choice in names:
        return
    known = ", ".join(repr(name) for name in names) or "none"
    raise ValueError(f"'tool_choice' {choice!r} is neither 'auto', 'none' nor 'required' and "
                     f"names no tool of the run (its tools: {known})")


def tool_choice(options: StreamOptions, tools: Sequence[Tool] | None, *,
                takes_required: bool = True) -> Choice | None:
    """What the request says about tools: None to say nothing (the provider's default).

    A request without tools says nothing either, whatever the choice: there is nothing to call
    or to refuse, and servers reject a tool choice without tools. Raises `ValueError` naming
    `tool_choice` for a name that is no tool of `tools`.

    For a server that does not take `"required"` (`takes_required` false: see `Compat`'s
    `supports_required_tool_choice`), `"required"` names the request's only tool, which asks
    the same; with more tools it becomes `"auto"`, and a run whose answer comes through
    `final_result` relies on its `output_retries` (a reply without the call is answered with a
    user message asking for it).
    """
    choice = options.tool_choice
    if choice is None or not tools:
        return None
    check_tool_choice(choice, [tool.name for tool in tools])
    if choice == "required" and not takes_required:
        if len(tools) == 1:
            return Choice("tool", tools[0].name)
        _log.debug("tool_choice 'required' sent as 'auto': the server is not known to take it")
        return Choice("auto")
    if choice in _MODES:
        return Choice(choice)  # type: ignore[arg-type]
    return Choice("tool", choice)


def supports_native_output(model: Model) -> bool:
    """Whether `model` takes a JSON Schema as its reply's format (`output_mode="native"`).

    `Model.compat`'s `supports_native_output` decides; without it, the models of
    `NATIVE_OUTPUT_APIS` do and the others do not.
    """
    said = resolve(model).supports_native_output
    return model.api in NATIVE_OUTPUT_APIS if said is None else said


def native_output_with_tools(model: Model) -> bool:
    """Whether `model` takes its reply's format (native output) in a request with tools too.

    `Model.compat`'s `native_output_with_tools` decides; without it, the models of
    `NATIVE_OUTPUT_WITHOUT_TOOLS_APIS` do not (the catalogue's Gemini 3 rows say they do) and
    the others do.
    """
    said = resolve(model).native_output_with_tools
    return model.api not in NATIVE_OUTPUT_WITHOUT_TOOLS_APIS if said is None else said


def check_native_output(model: Model, *, with_tools: bool = False) -> None:
    """Raise `ValueError` when `model` cannot be asked for native structured output.

    `with_tools`: the request declares tools, which some models do not take together with a
    reply's format (`native_output_with_tools`). Such a request is refused rather than sent
    (the server would answer with a 400), and not turned into tool mode behind the caller's
    back: `output_mode="native"` is always the caller's own choice.
    """
    if not supports_native_output(model):
        raise ValueError(
            f"'output_mode' 'native' is not supported by model {model.id!r} ({model.api}): use "
            "output_mode='tool', or set compat={'supports_native_output': True} if it is")
    if with_tools and not native_output_with_tools(model):
        raise ValueError(
            f"'output_mode' 'native' is not supported together with tools by model "
            f"{model.id!r} ({model.api}), which takes no JSON response format with function "
            "declarations (Gemini before Gemini 3): use output_mode='tool', or set "
            "compat={'native_output_with_tools': True} if it does")


def strict_schema(schema: dict[str, Any]) -> dict[str, Any] | None:
    """`schema` as OpenAI's strict mode wants it, or None when it cannot be strict.

    Strict mode wants every object closed (`additionalProperties: false`) with every property
    required; an object that allows other properties or leaves one out, an object that lists no
    `properties` (any object: closing it would allow only `{}`), or a keyword strict mode
    rejects, keeps the schema non-strict. `schema` itself is not changed.
    """
    out = copy.deepcopy(schema)
    return out if _close(out) else None


def json_schema_format(schema: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """The schema to send as OpenAI's `json_schema` format, and whether it is `strict`.

    The strict version of `schema` (`strict_schema`) when there is one, else `schema` as given.
    """
    strict = strict_schema(schema)
    return (schema, False) if strict is None else (strict, True)


_SUBSCHEMA_MAPS = ("properties", "$defs", "definitions")
_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "prefixItems")


def _close(node: Any) -> bool:
    """Close every object schema under `node` in place; False when one cannot be strict."""
    if not isinstance(node, dict):
        return True
    if _NOT_STRICT.intersection(node):
        return False
    properties = node.get("properties")
    if node.get("type") == "object" or isinstance(properties, dict):
        if not isinstance(properties, dict):
            return False
        if node.get("additionalProperties", False) is not False:
            return False
        if set(node.get("required", ())) != set(properties or ()):
            return False
        node["additionalProperties"] = False
    children: list[Any] = [node.get("items")]
    for key in _SUBSCHEMA_MAPS:
        children.extend((node.get(key) or {}).values())
    for key in _SUBSCHEMA_LISTS:
        children.extend(node.get(key) or ())
    return all(_close(child) for child in children)


_ANTHROPIC_FORMATS = frozenset({"date-time", "time", "date", "duration", "email", "hostname",
                                "uri", "ipv4", "ipv6", "uuid"})
_ANTHROPIC_DROPPED = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                      "multipleOf", "minLength", "maxLength", "maxItems", "uniqueItems",
                      "minProperties", "maxProperties")
"""Constraints Anthropic's structured outputs reject (a 400): moved into the description."""


def anthropic_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` as Anthropic's structured outputs take it (their "JSON Schema limitations").

    Every object is closed (`additionalProperties: false`, which Anthropic requires) and keeps
    its optional properties; `oneOf` becomes `anyOf`; constraints Anthropic rejects (`minimum`,
    `maxLength`, `minItems` above 1, a `format` it does not know, ...) move into the
    description, where the model still reads them (the reply is validated against the full
    schema anyway). `schema` itself is not changed.

    Raises:
        ValueError: An object open to other properties (a dict type, or an object listing no
            `properties`): closing it would allow only `{}`, so it cannot be sent natively.
    """
    out = copy.deepcopy(schema)
    _fit_anthropic(out, "")
    return out


def _fit_anthropic(node: Any, path: str) -> None:
    """Make the schema `node` (at `path`) fit Anthropic's limits in place."""
    if isinstance(node, list):
        for i, child in enumerate(node):
            _fit_anthropic(child, f"{path}/{i}")
        return
    if not isinstance(node, dict):
        return
    if "oneOf" in node and "anyOf" not in node:
        node["anyOf"] = node.pop("oneOf")
    properties = node.get("properties")
    if node.get("type") == "object" or isinstance(properties, dict):
        if not isinstance(properties, dict) or node.get("additionalProperties", False) is not False:
            raise ValueError(
                f"'output_schema' has an object open to other properties at {path or '/'!r} "
                "(a dict, or an object without 'properties'): Anthropic's structured outputs "
                "take closed objects only; use output_mode='tool' for this type")
        node["additionalProperties"] = False
    moved = {key: node.pop(key) for key in _ANTHROPIC_DROPPED if key in node}
    if node.get("minItems", 0) not in (0, 1):
        moved["minItems"] = node.pop("minItems")
    if "format" in node and node["format"] not in _ANTHROPIC_FORMATS:
        moved["format"] = node.pop("format")
    if moved:
        said = ", ".join(f"{key}: {json.dumps(value)}" for key, value in moved.items())
        description = node.get("description")
        node["description"] = f"{description} ({said})" if description else f"({said})"
    for key in _SUBSCHEMA_MAPS:
        for name, child in (node.get(key) or {}).items():
            _fit_anthropic(child, f"{path}/{key}/{name}")
    for key in (*_SUBSCHEMA_LISTS, "allOf", "items"):
        if key in node:
            _fit_anthropic(node[key], f"{path}/{key}")
