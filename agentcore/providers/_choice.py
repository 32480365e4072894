"""Tool choice and native structured output, decided once for every wire API (API §18).

Each wire module asks `tool_choice` what the request should say and writes it in its own form;
`strict_schema` and `supports_native_output` say how a JSON Schema can be sent as the
provider's structured-output format.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any, Literal

import attrs

from .._core import Model, StreamOptions, Tool
from ._compat import resolve

__all__ = [
    "NATIVE_OUTPUT_APIS",
    "OUTPUT_NAME",
    "Choice",
    "check_native_output",
    "check_tool_choice",
    "strict_schema",
    "supports_native_output",
    "tool_choice",
]

Mode = Literal["auto", "none", "required", "tool"]
_MODES = ("auto", "none", "required")

NATIVE_OUTPUT_APIS = frozenset({"openai-completions", "openai-responses", "google-generative-ai",
                                "google-vertex"})
"""The wire APIs whose models take a JSON Schema as the reply's format unless `compat` says no
(`supports_native_output`); on the others a model must say yes in its `compat`."""

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


def tool_choice(options: StreamOptions, tools: Sequence[Tool]) -> Choice | None:
    """What the request says about tools: None to say nothing (the provider's default).

    A `"required"` or a tool's name with no tools at all says nothing either: there is nothing
    to call. Raises `ValueError` naming `tool_choice` for a name that is no tool of `tools`.
    """
    choice = options.tool_choice
    if choice is None:
        return None
    check_tool_choice(choice, [tool.name for tool in tools])
    if not tools and choice != "none":
        return None
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


def check_native_output(model: Model) -> None:
    """Raise `ValueError` when `model` cannot be asked for native structured output."""
    if not supports_native_output(model):
        raise ValueError(
            f"'output_mode' 'native' is not supported by model {model.id!r} ({model.api}): use "
            "output_mode='tool', or set compat={'supports_native_output': True} if it is")


def strict_schema(schema: dict[str, Any]) -> dict[str, Any] | None:
    """`schema` as OpenAI's strict mode wants it, or None when it cannot be strict.

    Strict mode wants every object closed (`additionalProperties: false`) with every property
    required; an object that allows other properties or leaves one out, or a keyword strict
    mode rejects, keeps the schema non-strict. `schema` itself is not changed.
    """
    out = copy.deepcopy(schema)
    return out if _close(out) else None


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
