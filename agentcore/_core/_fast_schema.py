"""A fast yes for the tool-argument schemas models actually get, before jsonschema's full check.

`compile_fast(schema)` returns a predicate that answers True only when the value certainly
satisfies the schema, or None when the schema uses anything beyond a small, common subset
(`type`, `properties`, `required`, `additionalProperties: bool`, `items`, primitive `enum`, and
annotations such as `description`). False means "not sure": the caller then runs the full
validator, which also reports errors and coerces. A True from here is always a True from
jsonschema, so the fast path can never accept what the full check would reject.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

__all__ = ["compile_fast", "json_copy"]

Check = Callable[[Any], bool]

_ANNOTATIONS = frozenset({"description", "title", "default", "examples", "$comment", "$schema",
                          "deprecated", "readOnly", "writeOnly"})
_KNOWN = _ANNOTATIONS | {"type", "properties", "required", "additionalProperties", "items",
                         "enum"}
_PRIMITIVE = (str, int, float, bool, type(None))
_KINDS: dict[str, frozenset[type]] = {  # exact classes: a bool is not an integer here
    "string": frozenset({str}),
    "integer": frozenset({int}),
    "number": frozenset({int, float}),
    "boolean": frozenset({bool}),
    "null": frozenset({type(None)}),
    "object": frozenset({dict}),
    "array": frozenset({list}),
}


def compile_fast(schema: Any) -> Check | None:
    """A predicate that is True only for values `schema` certainly accepts; None if unsupported."""
    if schema is True or schema == {}:
        return lambda _: True
    kinds = _kinds(schema)
    if kinds is None:
        return None
    if kinds:  # only a type: one set lookup
        return lambda v: type(v) in kinds
    checks: list[Check] = []
    kind = schema.get("type")
    if "enum" in schema:
        allowed = schema["enum"]
        if not isinstance(allowed, list) or not all(type(e) in _PRIMITIVE for e in allowed):
            return None
        pairs = frozenset((type(e), e) for e in allowed)
        checks.append(lambda v: type(v) in _PRIMITIVE and (type(v), v) in pairs)
    if "items" in schema:
        item = compile_fast(schema["items"])
        if item is None:
            return None
        checks.append(lambda v: type(v) is not list or all(item(x) for x in v))
    if {"properties", "required", "additionalProperties"} & schema.keys():
        check = _object_check(schema, only_objects=kind == "object")
        if check is None:
            return None
        if kind == "object":  # the tool schemas' case: the type is checked inside
            kind = None
        checks.append(check)
    if kind is not None:
        names = [kind] if isinstance(kind, str) else kind
        if not isinstance(names, list) or not names or not all(n in _KINDS for n in names):
            return None
        allowed_kinds = frozenset().union(*(_KINDS[n] for n in names))
        checks.insert(0, lambda v: type(v) in allowed_kinds)
    if len(checks) == 1:
        return checks[0]
    return lambda v: all(check(v) for check in checks)


def _kinds(schema: Any) -> frozenset[type] | None:
    """For a schema of known keywords: the classes its `type` allows, if that is all it says.

    None for a schema this module does not support; an empty set when it says more.
    """
    if not isinstance(schema, dict) or not _KNOWN.issuperset(schema):
        return None
    kind = schema.get("type")
    if kind is None or not _ANNOTATIONS.issuperset(k for k in schema if k != "type"):
        return frozenset()
    names = [kind] if isinstance(kind, str) else kind
    if not isinstance(names, list) or not names or not all(n in _KINDS for n in names):
        return None
    return frozenset().union(*(_KINDS[n] for n in names))


def _object_check(schema: dict[str, Any], only_objects: bool) -> Check | None:
    """The check of `properties`, `required` and `additionalProperties`, in one function.

    With `only_objects` (the schema says `"type": "object"`) anything but a dict fails it;
    otherwise these keywords constrain dicts only. A property whose schema is only a type is
    checked by a set lookup, without a call.
    """
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    extra = schema.get("additionalProperties", True)
    if (not isinstance(properties, dict) or not isinstance(required, list)
            or not isinstance(extra, bool)):
        return None
    typed: dict[str, frozenset[type]] = {}
    compiled: dict[str, Check] = {}
    for name, sub in properties.items():
        kinds = _kinds(sub)
        if kinds:
            typed[name] = kinds
            continue
        check = compile_fast(sub)
        if check is None:
            return None
        compiled[name] = check
    needed = tuple(required)

    def check_object(value: Any) -> bool:
        if type(value) is not dict:
            return not only_objects
        for name in needed:
            if name not in value:
                return False
        for name, item in value.items():
            kinds = typed.get(name)
            if kinds is not None:
                if type(item) not in kinds:
                    return False
                continue
            sub = compiled.get(name)
            if sub is None:
                if not extra:
                    return False
            elif not sub(item):
                return False
        return True

    return check_object


def json_copy(value: Any) -> Any:
    """A deep copy of a JSON value (dicts, lists and scalars), faster than `copy.deepcopy`."""
    kind = type(value)
    if kind is dict:
        return {k: json_copy(v) for k, v in value.items()}
    if kind is list:
        return [json_copy(v) for v in value]
    if kind in _PRIMITIVE:
        return value
    return copy.deepcopy(value)  # not JSON (a caller's own ToolCall): copied the slow way
