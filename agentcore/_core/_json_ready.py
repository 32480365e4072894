"""`json_ready`: any Python value as the plain JSON values `json.dumps` writes strictly.

A tool's return value and the `Any`-typed fields of messages and events (`details`, `args`,
tool arguments) may hold whatever the application put there. Serialization must still succeed
(API §10 "Serialization is total"), so such values are converted, never refused:

- `dict` keys that are not strings become strings (`1` → `"1"`, `True` → `"true"`, as
  `json.dumps` would write them);
- NaN and ±infinity become `None` (strict JSON has no spelling for them);
- enum members become their values; subclasses of `str`, `int` and `float` become the plain type;
- attrs instances and dataclass instances become dicts of their fields by attribute name,
  showing what their repr shows: a field the repr hides (`repr=False`, how agentcore marks
  secrets such as `StreamOptions.api_key` and `Model.headers`) is left out, and one with a
  custom repr (`StreamOptions.headers`, whose values it redacts) is that repr's text;
- `datetime`, `date` and `time` become ISO 8601 strings, `bytes`-like values base64 strings;
- tuples, lists and other mappings become lists and dicts; sets become lists, sorted when
  their items can be compared (a stable text for the model);
- anything else becomes its `repr()`.

Plain JSON (dicts with string keys, lists, strings, ints, bools, `None`, finite floats) is
copied by the first branches of one small function, so the common case stays cheap. Cycles
are caught without a per-container cost: the fast pass runs without bookkeeping, and only
when it hits the recursion limit does a careful pass run again, which tracks the containers on
its path and writes a value it meets again (or one nested deeper than `MAX_DEPTH`) as its
`repr()`.
"""

from __future__ import annotations

import datetime
import enum
import json
import math
from collections.abc import Callable, Mapping
from typing import Any

import attrs

__all__ = ["MAX_DEPTH", "json_ready", "json_ready_bounded", "json_ready_using"]

MAX_DEPTH = 100
"""How deep the careful pass goes before writing a value as its `repr()`."""

_PLAIN = frozenset({str, int, bool, type(None)})

AttrsHook = Callable[[Any], Any]
"""Converts an attrs instance in the fast pass, or returns `NotImplemented` to leave it to
`json_ready` (the serializer keeps agentcore's own values in their wire form this way)."""


def json_ready(value: object) -> Any:
    """Convert `value` to plain JSON values, recursively (see the module docstring for how).

    Never fails: what has no JSON form becomes its `repr()`, cycles included.

    Args:
        value: Any Python value.

    Returns:
        A value made only of `dict` (with `str` keys), `list`, `str`, `int`, `bool`, `None` and
        finite `float`; a new container wherever `value` has one.
    """
    try:
        return _ready(value, None, None)
    except RecursionError:
        return _ready(value, set(), None)


def json_ready_bounded(value: object) -> Any:
    """`json_ready` by the careful pass only: nothing deeper than `MAX_DEPTH` levels survives.

    For a value that may be too deep for `json.dumps` itself.
    """
    return _ready(value, set(), None)


def json_ready_using(attrs_hook: AttrsHook) -> Callable[[Any], Any]:
    """`json_ready`, with attrs instances converted by `attrs_hook` in the fast pass.

    The serializer passes its converter, so an agentcore value kept in `details` keeps its wire
    form (tag, camelCase keys, redacted headers). If `attrs_hook` returns `NotImplemented` or
    raises, the instance is converted as `json_ready` would; the careful pass (after a cycle)
    never calls it.
    """

    def ready(value: object) -> Any:
        try:
            return _ready(value, None, attrs_hook)
        except RecursionError:
            return _ready(value, set(), None)

    return ready


def _ready(value: Any, path: set[int] | None, hook: AttrsHook | None) -> Any:
    """Convert one value; `path` holds the ids of the containers above it in the careful pass."""
    kind = type(value)
    if kind in _PLAIN:
        return value
    if kind is float:
        return value if math.isfinite(value) else None
    if path is None:
        if kind is dict:
            return {k if type(k) is str else _key(k): _ready(v, None, hook)
                    for k, v in value.items()}
        if kind is list:
            return [_ready(v, None, hook) for v in value]
        return _other(value, None, hook)
    key = id(value)
    if key in path or len(path) >= MAX_DEPTH:
        return _repr(value)
    path.add(key)
    try:
        return _other(value, path, None)
    finally:
        path.discard(key)


def _other(value: Any, path: set[int] | None, hook: AttrsHook | None) -> Any:
    """Convert anything but a plain scalar (and, in the fast pass, a plain dict or list)."""
    try:
        if isinstance(value, Mapping):
            return {k if type(k) is str else _key(k): _ready(v, path, hook)
                    for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [_ready(v, path, hook) for v in value]
        if isinstance(value, enum.Enum):
            return _ready(value.value, path, hook)
        if isinstance(value, str):
            return str.__str__(value)
        if isinstance(value, int):
            return int(value)
        if isinstance(value, float):
            return _ready(float(value), path, hook)
        if isinstance(value, set | frozenset):
            return [_ready(v, path, hook) for v in _ordered(value)]
        if isinstance(value, datetime.date | datetime.time):
            return value.isoformat()
        if isinstance(value, bytes | bytearray | memoryview):
            import base64

            return base64.b64encode(value).decode("ascii")
        kind = type(value)
        if attrs.has(kind):
            if hook is not None:
                try:
                    converted = hook(value)
                except RecursionError:
                    raise
                except Exception:  # e.g. an AgentTool, which the serializer refuses
                    converted = NotImplemented
                if converted is not NotImplemented:
                    return converted
            return {a.name: _field(value, a, path, hook)
                    for a in attrs.fields(kind) if a.repr and hasattr(value, a.name)}
        if hasattr(kind, "__dataclass_fields__"):
            import dataclasses

            return {f.name: _ready(getattr(value, f.name), path, hook)
                    for f in dataclasses.fields(value) if f.repr and hasattr(value, f.name)}
    except RecursionError:
        raise
    except Exception:  # a broken __iter__, items() or __lt__ of an application's class
        pass
    return _repr(value)


def _field(value: Any, field: attrs.Attribute[Any], path: set[int] | None,
           hook: AttrsHook | None) -> Any:
    """An attrs field's value, or the text its custom repr shows (e.g. redacted headers)."""
    shown = getattr(value, field.name)
    if callable(field.repr):
        return str(field.repr(shown))
    return _ready(shown, path, hook)


def _ordered(items: set[Any] | frozenset[Any]) -> list[Any]:
    try:
        return sorted(items)
    except Exception:  # mixed or unorderable items: keep the set's own order
        return list(items)


def _key(key: Any) -> str:
    """A dict key as text: numbers, booleans and `None` as `json.dumps` writes them."""
    if key is None or isinstance(key, bool | int | float):
        return json.dumps(key)  # 1 → "1", True → "true", as keys were written before
    ready = json_ready(key)
    return ready if type(ready) is str else _repr(key)


def _repr(value: object) -> str:
    try:
        return repr(value)
    except Exception:  # a broken or endlessly recursive __repr__
        return f"<{type(value).__qualname__} object>"
