"""The cattrs Converter behind `to_dict`/`from_dict`: its hooks, strict and tag-aware.

See `_serde` for the wire format. Built once, on first use (cattrs is imported then).
"""

from __future__ import annotations

import math
import re
import types
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, Union, get_args, get_origin

import attrs

from ._content import AssistantContent, UserContent
from ._context import AgentContext
from ._enums import WireEnum
from ._errors import SerializationError
from ._events import AgentEvent, AssistantMessageEvent
from ._json_ready import json_ready_using
from ._limits import UsageLimits
from ._messages import AgentMessage, Message
from ._model import Model
from ._tools import AgentTool
from ._validators import redact_headers, show

if TYPE_CHECKING:
    from cattrs import Converter

__all__ = ["build_converter", "camel", "type_name"]

_TAG_KEYS = ("role", "type")
_NONE = type(None)
_UNION_NAMES = {
    AgentMessage: "AgentMessage",
    Message: "Message",
    AgentEvent: "AgentEvent",
    AssistantMessageEvent: "AssistantMessageEvent",
    UserContent: "UserContent",
    AssistantContent: "AssistantContent",
}
_OMITTED_FIELDS: dict[type, frozenset[str]] = {
    # An AgentTool's `execute` is code: a context is stored without its tools, which the
    # application attaches again after loading.
    AgentContext: frozenset({"tools"}),
    # A Budget is shared in memory by the runs of one process: limits are stored without it.
    UsageLimits: frozenset({"budget"}),
}


def build_converter() -> Converter:
    from cattrs import Converter

    converter = Converter()
    # Singledispatch picks the closest base class, so these exact registrations beat cattrs'
    # coercing defaults (`int("5")`, `str(5)`, `bool("no")`); `WireEnum` wins over `str`.
    converter.register_structure_hook(str, _structure_str)
    converter.register_structure_hook(int, _structure_int)
    converter.register_structure_hook(bool, _structure_bool)
    converter.register_structure_hook(float, _structure_float)
    converter.register_structure_hook(WireEnum, _structure_enum)
    converter.register_unstructure_hook(WireEnum, _unstructure_enum)
    converter.register_structure_hook_factory(_is_literal, _literal_structure_factory)
    converter.register_unstructure_hook_factory(_is_literal, lambda _: _unstructure_literal)
    converter.register_unstructure_hook_factory(_is_json_value, _json_value_unstructure_factory)
    converter.register_structure_hook_factory(_is_list, _list_structure_factory)
    converter.register_structure_hook_factory(_is_dict, _dict_structure_factory)
    converter.register_structure_hook_factory(_is_union, _union_structure_factory)
    converter.register_structure_hook_factory(attrs.has, _attrs_structure_factory)
    converter.register_unstructure_hook_factory(attrs.has, _attrs_unstructure_factory)
    # Registered last to win over the attrs factories (a predicate, because registering the
    # class itself would make cattrs resolve its TYPE_CHECKING-only annotations).
    converter.register_structure_hook_func(_is_agent_tool, _refuse_agent_tool)
    converter.register_unstructure_hook_func(_is_agent_tool, _refuse_agent_tool_value)
    return converter


def camel(name: str) -> str:
    """`tool_call_id` -> `toolCallId`: the wire key of an attribute."""
    return re.sub(r"_([a-z0-9])", lambda m: m.group(1).upper(), name)


def _tag(cls: Any) -> tuple[str, str] | None:
    """The `(key, value)` tag of a class: a class-level `role` or `type` string, if it has one."""
    if not isinstance(cls, type):
        return None
    for key in _TAG_KEYS:
        value = getattr(cls, key, None)
        if isinstance(value, str):
            return key, value
    return None


def _attrs_unstructure_factory(cls: type, converter: Converter) -> Callable[[Any], Any]:
    from cattrs.gen import make_dict_unstructure_fn, override

    omitted = _OMITTED_FIELDS.get(cls, frozenset())
    overrides: dict[str, Any] = {
        a.name: override(
            rename=camel(a.name),
            omit=True if a.name in omitted else None,
            # Only a `None` default is left out: `isError: false` and zero usage stay explicit.
            omit_if_default=a.default is None,
        )
        for a in attrs.fields(cls)
    }
    inner: Callable[[Any], dict[str, Any]] = make_dict_unstructure_fn(cls, converter, **overrides)
    if cls is Model:  # saved models must not carry the credentials of their headers
        plain = inner

        def inner(obj: Any) -> dict[str, Any]:
            out = plain(obj)
            if out.get("headers"):
                out["headers"] = redact_headers(out["headers"])
            return out

    nullable = tuple(camel(a.name) for a in attrs.fields(cls)
                     if a.default is None and a.name not in omitted)
    if nullable:  # written without the nulls that would read back as the field's default
        written = inner

        def inner(obj: Any) -> dict[str, Any]:
            out = written(obj)
            for name in nullable:
                if name in out and _writes_null(out[name]):
                    del out[name]
            return out

    tag = _tag(cls)
    if tag is None:
        return inner
    key, value = tag

    def unstructure(obj: Any) -> dict[str, Any]:
        return {key: value, **inner(obj)}

    return unstructure


def _writes_null(value: Any) -> bool:
    """Whether `to_json` writes `value` as `null`: None, a NaN or an infinity.

    A field whose default is None is left out while it holds None. One holding a value written
    as `null` (a `details` that is NaN: the `Any` fields are JSON-ready, so it is None already;
    a float field that is infinite) is left out too: it reads back as None, the default, and
    so writes the same text on the second pass (API §17).
    """
    return value is None or (type(value) is float and not math.isfinite(value))


def _attrs_structure_factory(cls: type, converter: Converter) -> Callable[[Any, Any], Any]:
    from cattrs.gen import make_dict_structure_fn, override

    omitted = _OMITTED_FIELDS.get(cls, frozenset())
    overrides: dict[str, Any] = {
        a.name: override(rename=camel(a.name), omit=True if a.name in omitted else None)
        for a in attrs.fields(cls)
    }
    inner: Callable[[Any, Any], Any] = make_dict_structure_fn(cls, converter, **overrides)
    tag = _tag(cls)

    def structure(data: Any, _: Any) -> Any:
        if not isinstance(data, Mapping):
            raise TypeError(f"expected an object for {cls.__name__}, got {show(data)}")
        if tag is not None and tag[0] in data and data[tag[0]] != tag[1]:
            raise ValueError(
                f"{tag[0]} {show(data[tag[0]])} does not match {cls.__name__} (expected {tag[1]!r})"
            )
        return inner(data, cls)

    return structure


def _union_structure_factory(union: Any, converter: Converter) -> Callable[[Any, Any], Any]:
    """Decode a union: tagged attrs members by their tag, the others by the JSON type."""
    members = get_args(union)
    tag_key: str | None = None
    tagged: dict[str, Any] = {}
    plain: list[tuple[tuple[type, ...] | None, Any]] = []
    for member in members:
        tag = _tag(member) if attrs.has(member) else None
        if tag is not None:
            tag_key, tagged[tag[1]] = tag[0], member
        elif member is not _NONE:
            plain.append((_json_types(member), member))
    plain.sort(key=lambda kinds_member: kinds_member[0] is None)  # catch-alls last
    hooks = {m: converter.get_structure_hook(m) for m in members if m is not _NONE}
    allows_none = _NONE in members
    if tagged and not plain:
        expected = f"an object with a {tag_key!r} tag" + (" or null" if allows_none else "")
    else:
        expected = " or ".join(type_name(m) for m in members)

    def structure(value: Any, _: Any) -> Any:
        if value is None and allows_none:
            return None
        if tagged and isinstance(value, Mapping):
            tag = value.get(tag_key)
            cls = tagged.get(tag) if isinstance(tag, str) else None
            if cls is None:
                known = ", ".join(repr(t) for t in tagged)
                if tag is None:
                    raise ValueError(f"missing {tag_key!r} tag (expected one of {known})")
                raise ValueError(f"unknown {tag_key} {show(tag)} (expected one of {known})")
            return hooks[cls](value, cls)
        for kinds, member in plain:
            if kinds is None or isinstance(value, kinds):
                return hooks[member](value, member)
        raise TypeError(f"expected {expected}, got {show(value)}")

    return structure


def _json_types(tp: Any) -> tuple[type, ...] | None:
    """The Python types of the JSON values that can decode to `tp`; None when unknown."""
    origin = get_origin(tp) or tp
    if origin is bool:
        return (bool,)
    if origin is float:
        return (int, float)
    if origin in (str, int):
        return (origin,)
    if origin in (list, tuple, Sequence):
        return (list, tuple)
    if origin in (dict, Mapping) or attrs.has(origin):
        return (Mapping,)
    return None


def _json_value_unstructure_factory(_: Any, converter: Converter) -> Callable[[Any], Any]:
    """Copy JSON values (`details`, `args`, tool arguments), making anything else JSON-ready.

    Plain JSON is copied as is. An agentcore value keeps the converter's wire form (its tag,
    camelCase keys, redacted headers); an application's attrs instance, anything the converter
    refuses (an `AgentTool`) and every other value go through `json_ready`, as `@tool` results
    do, so serialization never fails on what a tool put there and never shows a field that
    the value's repr hides.
    """
    unstructure = converter.unstructure

    def wire_form(value: Any) -> Any:
        if type(value).__module__.startswith("agentcore."):
            return unstructure(value)
        return NotImplemented

    return json_ready_using(wire_form)


def _list_structure_factory(tp: Any, converter: Converter) -> Callable[[Any, Any], Any]:
    from cattrs.cols import list_structure_factory

    inner = list_structure_factory(tp, converter)

    def structure(value: Any, _: Any) -> Any:
        # cattrs accepts any iterable, which would turn a string into a list of characters.
        if not isinstance(value, (list, tuple)):
            raise TypeError(f"expected a list, got {show(value)}")
        return inner(value, tp)

    return structure


def _dict_structure_factory(tp: Any, converter: Converter) -> Callable[[Any, Any], Any]:
    from cattrs.gen import mapping_structure_factory

    inner = mapping_structure_factory(tp, converter)

    def structure(value: Any, _: Any) -> Any:
        if not isinstance(value, Mapping):
            raise TypeError(f"expected an object, got {show(value)}")
        return inner(value, tp)

    return structure


def _literal_structure_factory(tp: Any) -> Callable[[Any, Any], Any]:
    options = get_args(tp)
    wire = [getattr(o, "value", o) for o in options]

    def structure(value: Any, _: Any) -> Any:
        for option, plain in zip(options, wire, strict=True):
            same_kind = isinstance(value, type(plain)) and (
                isinstance(value, bool) == isinstance(plain, bool)
            )
            if same_kind and value == plain:
                return option
        raise ValueError(f"expected one of {wire!r}, got {show(value)}")

    return structure


def _unstructure_literal(value: Any) -> Any:
    return value.value if isinstance(value, WireEnum) else value


def _structure_str(value: Any, _: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {show(value)}")
    return value


def _structure_int(value: Any, _: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"expected an integer, got {show(value)}")
    return value


def _structure_bool(value: Any, _: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"expected a boolean, got {show(value)}")
    return value


def _structure_float(value: Any, _: Any) -> float:
    if value is None:  # to_json writes a NaN or an infinity as null: it reads back as NaN
        return math.nan
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise TypeError(f"expected a number, got {show(value)}")
    return float(value)


def _structure_enum(value: Any, cls: type[WireEnum]) -> WireEnum:
    if isinstance(value, str):
        try:
            return cls(value)
        except ValueError:
            pass
    raise ValueError(f"expected one of {[m.value for m in cls]!r}, got {show(value)}")


def _unstructure_enum(value: WireEnum) -> str:
    return str(value.value)


def _refuse_agent_tool(_: Any, __: Any) -> Any:
    raise TypeError("an AgentTool cannot be decoded: its 'execute' is a function; decode a Tool")


def _refuse_agent_tool_value(tool: AgentTool) -> Any:
    raise SerializationError(
        f"cannot serialize AgentTool {tool.name!r}: its 'execute' is a function with no JSON "
        "form; serialize Tool(tool.name, tool.description, tool.parameters) instead"
    )


def _is_agent_tool(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, AgentTool)


def _is_json_value(tp: Any) -> bool:
    return tp is Any or (get_origin(tp) is dict and get_args(tp)[1:] == (Any,))


def _is_union(tp: Any) -> bool:
    return get_origin(tp) in (Union, types.UnionType)


def _is_literal(tp: Any) -> bool:
    return get_origin(tp) is Literal


def _is_list(tp: Any) -> bool:
    return get_origin(tp) is list


def _is_dict(tp: Any) -> bool:
    return get_origin(tp) is dict


def type_name(tp: Any) -> str:
    try:
        name = _UNION_NAMES.get(tp)
    except TypeError:  # an unhashable annotation
        name = None
    if name is not None:
        return name
    if tp is _NONE:
        return "null"
    if isinstance(tp, type):
        return tp.__name__
    if _is_union(tp):
        return " | ".join(type_name(m) for m in get_args(tp))
    origin, args = get_origin(tp), get_args(tp)
    if isinstance(origin, type) and args:
        return f"{origin.__name__}[{', '.join(type_name(a) for a in args)}]"
    return repr(tp)
