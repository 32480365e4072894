"""JSON Schemas from Python type hints, each with a converter back to the hinted type.

Used by `@tool`; see `_tool_decorator` for the choices made for what providers accept.
"""

from __future__ import annotations

import collections.abc
import contextlib
import enum
import json
import sys
import types
import typing
from collections.abc import Callable
from typing import Annotated, Any, Literal, Union

import attrs

from ._docstring import normalise, parse_docstring

__all__ = ["Convert", "Spec", "UnsupportedError", "add_default", "is_dataclass",
           "object_schema", "property_spec"]

Convert = Callable[[Any], Any]
"""Turns a validated JSON value back into the annotated type; `None` stands for "as is"."""
Spec = tuple[dict[str, Any], Convert | None]
"""A JSON Schema and the `Convert` for values it accepts."""


class UnsupportedError(Exception):
    """An annotation with no JSON Schema; the caller adds which parameter it belongs to."""


_SCALARS: tuple[tuple[type, str], ...] = (
    (bool, "boolean"),
    (int, "integer"),
    (float, "number"),
    (str, "string"),
)
_SEQUENCES = (list, collections.abc.Sequence, collections.abc.MutableSequence)
_MAPPINGS = (dict, collections.abc.Mapping, collections.abc.MutableMapping)
_SETS = (set, frozenset, collections.abc.Set, collections.abc.MutableSet)
_SUPPORTED = (
    "supported: str, int, float, bool, list[T], tuple[...], dict[str, T], unions, "
    "Literal[...], Enum subclasses, attrs classes, dataclasses, TypedDicts and Any"
)


def object_schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """A closed JSON Schema object: no properties beyond `properties`, as strict modes want."""
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def property_spec(hint: Any, doc: str | None, seen: tuple[type, ...]) -> Spec:
    """The schema of a parameter or field: its type's, with the most specific description.

    `Annotated[T, "text"]` wins over the docstring entry, which wins over a class's own
    description.
    """
    if typing.get_origin(hint) is Annotated:
        described = next((m for m in hint.__metadata__ if isinstance(m, str)), None)
        doc = normalise(described) if described is not None else doc
        hint = hint.__origin__
    schema, convert = _spec(hint, seen)
    return ({**schema, "description": doc} if doc else dict(schema)), convert


def _spec(hint: Any, seen: tuple[type, ...]) -> Spec:
    """The JSON Schema of `hint` and how to turn a valid JSON value into it."""
    if hint is Any or hint is object:
        return {}, None
    if hint is None or hint is type(None):
        return {"type": "null"}, None
    for scalar, kind in _SCALARS:
        if hint is scalar:
            return {"type": kind}, None
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Annotated:
        return property_spec(hint, None, seen)
    if origin is Literal:
        return _literal(args), None
    if origin is Union or origin is types.UnionType:
        return _union(args, seen)
    if hint in _SEQUENCES or origin in _SEQUENCES:
        return _array(args[0] if args else Any, seen, to_tuple=False)
    if hint is tuple or origin is tuple:
        return _tuple(args, seen)
    if hint in _MAPPINGS or origin in _MAPPINGS:
        return _mapping(args, seen)
    if hint in _SETS or origin in _SETS:
        raise UnsupportedError(f"{_type_name(hint)} is not supported (JSON has no sets: use "
                                "list[...])")
    if origin is None and isinstance(hint, type):
        if issubclass(hint, enum.Enum):
            return _enum(hint), hint
        fields = _record_fields(hint)
        if fields is not None:
            return _record(hint, fields, seen)
    if origin is None and hasattr(hint, "__supertype__"):  # typing.NewType
        return _spec(hint.__supertype__, seen)
    if origin is collections.abc.Callable or hint is collections.abc.Callable:
        raise UnsupportedError(f"{_type_name(hint)} is not supported (a model cannot pass code)")
    raise UnsupportedError(f"{_type_name(hint)} is not supported ({_SUPPORTED})")


def _json_kind(value: object) -> str | None:
    if isinstance(value, enum.Enum):
        return None
    if value is None:
        return "null"
    for scalar, kind in _SCALARS:
        if isinstance(value, scalar):
            return kind
    return None


def _enum_schema(values: list[Any], what: str) -> dict[str, Any]:
    kinds: list[str] = []
    for value in values:
        kind = _json_kind(value)
        if kind is None:
            raise UnsupportedError(f"{what} value {value!r} is not a JSON string, number, "
                                    "boolean or null")
        if kind not in kinds:
            kinds.append(kind)
    if not kinds:
        raise UnsupportedError(f"{what} has no values")
    return {"type": kinds[0] if len(kinds) == 1 else kinds, "enum": values}


def _literal(values: tuple[Any, ...]) -> dict[str, Any]:
    return _enum_schema(list(values), "Literal")


def _enum(cls: type[enum.Enum]) -> dict[str, Any]:
    return _enum_schema([member.value for member in cls], f"enum {cls.__qualname__}")


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    if not schema:
        return {}  # already accepts null
    kind = schema.get("type")
    if kind is None or "anyOf" in schema:
        return {"anyOf": [schema, {"type": "null"}]}
    kinds = [kind] if isinstance(kind, str) else list(kind)
    schema = {**schema, "type": kinds if "null" in kinds else [*kinds, "null"]}
    if "enum" in schema and None not in schema["enum"]:
        schema["enum"] = [*schema["enum"], None]
    return schema


def _union(members: tuple[Any, ...], seen: tuple[type, ...]) -> Spec:
    nullable = any(m is None or m is type(None) for m in members)
    specs = [_spec(m, seen) for m in members if m is not None and m is not type(None)]
    schemas = [schema for schema, _ in specs]
    if len(schemas) == 1:
        schema = _nullable(schemas[0]) if nullable else schemas[0]
    elif all(set(s) == {"type"} and isinstance(s["type"], str) for s in schemas):
        kinds = list(dict.fromkeys(s["type"] for s in schemas))
        schema = {"type": [*kinds, "null"] if nullable else kinds}
    else:
        schema = {"anyOf": [*schemas, {"type": "null"}] if nullable else schemas}
    converters = [convert for _, convert in specs if convert is not None]
    if not converters:
        return schema, None
    # Plain members (str, int...) take a value no converter accepts, as it came.
    strict = len(converters) == len(specs)

    def convert(value: Any) -> Any:
        if value is None and nullable:
            return None
        for i, member in enumerate(converters):
            try:
                return member(value)
            except (TypeError, ValueError):
                if strict and i == len(converters) - 1:
                    raise
        return value

    return schema, convert


def _array(item: Any, seen: tuple[type, ...], *, to_tuple: bool) -> Spec:
    items, convert_item = _spec(item, seen)
    schema: dict[str, Any] = {"type": "array", "items": items} if items else {"type": "array"}
    if convert_item is None and not to_tuple:
        return schema, None
    container: Callable[[Any], Any] = tuple if to_tuple else list

    def convert(value: Any) -> Any:
        if not isinstance(value, list):
            raise TypeError(f"expected an array, got {value!r}")
        return container(value if convert_item is None else map(convert_item, value))

    return schema, convert


def _tuple(args: tuple[Any, ...], seen: tuple[type, ...]) -> Spec:
    if len(args) == 2 and args[1] is Ellipsis:
        return _array(args[0], seen, to_tuple=True)
    if not args or args == ((),):  # bare `tuple`, or `tuple[()]` (spelt `((),)` before 3.11)
        return _array(Any, seen, to_tuple=True)
    specs = [_spec(arg, seen) for arg in args]
    schemas = [schema for schema, _ in specs]
    schema: dict[str, Any]
    if any(other != schemas[0] for other in schemas):
        schema = {"type": "array", "prefixItems": schemas}
    else:
        schema = {"type": "array", "items": schemas[0]} if schemas[0] else {"type": "array"}
    schema.update(minItems=len(args), maxItems=len(args))
    converters = [convert for _, convert in specs]

    def convert(value: Any) -> Any:
        if not isinstance(value, list):
            raise TypeError(f"expected an array, got {value!r}")
        return tuple(v if c is None else c(v) for c, v in zip(converters, value, strict=True))

    return schema, convert


def _mapping(args: tuple[Any, ...], seen: tuple[type, ...]) -> Spec:
    key, value = args if args else (str, Any)
    if key is not str:
        raise UnsupportedError(
            f"dict[{_type_name(key)}, ...] is not supported (JSON object keys are strings: use "
            "dict[str, ...])"
        )
    values, convert_value = _spec(value, seen)
    schema: dict[str, Any] = {"type": "object"}
    if values:
        schema["additionalProperties"] = values
    if convert_value is None:
        return schema, None

    def convert(data: Any) -> Any:
        if not isinstance(data, dict):
            raise TypeError(f"expected an object, got {data!r}")
        return {k: convert_value(v) for k, v in data.items()}

    return schema, convert


_NO_DEFAULT = object()
"""A record field without a default: required."""
_FACTORY = object()
"""A record field whose default comes from a factory: optional, with nothing to show."""


def _record_fields(cls: type) -> list[tuple[str, str, object]] | None:
    """The init fields of a record type as (name, JSON key, default); None for other types.

    Record types are attrs classes, dataclasses and `TypedDict`s; the default is `_NO_DEFAULT`
    for a required field and `_FACTORY` for one whose default has no JSON form to show.
    """
    if attrs.has(cls):
        return [(f.name, f.alias or f.name,
                 _NO_DEFAULT if f.default is attrs.NOTHING else
                 _FACTORY if isinstance(f.default, attrs.Factory) else  # type: ignore[arg-type]
                 f.default)
                for f in attrs.fields(cls) if f.init]
    if is_dataclass(cls):
        import dataclasses

        return [(f.name, f.name,
                 f.default if f.default is not dataclasses.MISSING else
                 _FACTORY if f.default_factory is not dataclasses.MISSING else _NO_DEFAULT)
                for f in dataclasses.fields(cls) if f.init]
    if typing.is_typeddict(cls):
        required = cls.__required_keys__  # type: ignore[attr-defined]
        return [(name, name, _NO_DEFAULT if name in required else _FACTORY)
                for name in typing.get_type_hints(cls)]
    return None


def is_dataclass(cls: type) -> bool:
    """Whether `cls` is a dataclass (without importing `dataclasses`: none exists without it)."""
    module = sys.modules.get("dataclasses")
    return module is not None and bool(module.is_dataclass(cls))


def _record(cls: type, fields: list[tuple[str, str, object]], seen: tuple[type, ...]) -> Spec:
    """A record type as a closed object schema, converted back to an instance.

    The class docstring's summary describes the object and its `Attributes:` the fields; a
    `TypedDict` converts back to a dict.
    """
    what = ("TypedDict" if typing.is_typeddict(cls) else "attrs class" if attrs.has(cls)
            else "dataclass")
    if cls in seen:
        raise UnsupportedError(f"{what} {cls.__qualname__} contains itself (recursive types "
                                "are not supported)")
    try:
        hints = typing.get_type_hints(cls, include_extras=True)
    except Exception as exc:
        raise UnsupportedError(f"cannot resolve the type hints of {cls.__qualname__}: {exc}"
                                ) from exc
    doc = parse_docstring(_own_doc(cls))
    properties: dict[str, Any] = {}
    required: list[str] = []
    converts: list[tuple[str, str, Convert | None]] = []
    for name, key, default in fields:
        try:
            prop, field_convert = property_spec(hints.get(name, Any),
                                                doc.params.get(key) or doc.params.get(name),
                                                (*seen, cls))
        except UnsupportedError as exc:
            raise UnsupportedError(f"field {name!r} of {cls.__qualname__}: {exc}") from None
        if default is _NO_DEFAULT:
            required.append(key)
        elif default is not _FACTORY and not typing.is_typeddict(cls):
            add_default(prop, default)
        properties[key] = prop
        converts.append((name, key, field_convert))
    schema = object_schema(properties, required)
    if doc.summary:
        schema["description"] = doc.summary
    build: Callable[..., Any] = dict if typing.is_typeddict(cls) else cls
    by_name = typing.is_typeddict(cls) or is_dataclass(cls)

    def convert(data: Any) -> Any:
        if not isinstance(data, dict):
            raise TypeError(f"expected an object for {cls.__qualname__}, got {data!r}")
        return build(**{
            (name if by_name else key): data[key] if conv is None else conv(data[key])
            for name, key, conv in converts
            if key in data
        })

    return schema, convert


def _own_doc(cls: type) -> str | None:
    """The class's docstring, but not the one a dataclass is given (`C(a: int)`)."""
    doc = cls.__doc__
    if doc and is_dataclass(cls):
        import inspect

        try:
            generated = cls.__name__ + str(inspect.signature(cls)).replace(" -> None", "")
        except (TypeError, ValueError):
            return doc
        return None if doc == generated else doc
    return doc


def _type_name(hint: Any) -> str:
    if isinstance(hint, type) and typing.get_origin(hint) is None:
        return hint.__qualname__
    return repr(hint).replace("typing.", "")


def add_default(schema: dict[str, Any], default: object) -> None:
    """Show `default` in the schema when it has a JSON form."""
    with contextlib.suppress(TypeError, ValueError):
        schema["default"] = json.loads(json.dumps(default, default=_strict_json, allow_nan=False))


def _strict_json(value: object) -> Any:
    if attrs.has(type(value)):
        return attrs.asdict(value, recurse=False)  # type: ignore[arg-type]
    if isinstance(value, enum.Enum):
        return value.value
    raise TypeError(f"{value!r} has no JSON form")


