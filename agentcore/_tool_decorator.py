"""`@tool`: an `AgentTool` built from a plain, type-annotated function.

The parameters' JSON Schema comes from the type hints, the descriptions from the Google-style
docstring. When the model calls the tool, its validated arguments are converted back to the
annotated types (enum members, attrs instances), the function runs, and its return value
becomes an `AgentToolResult`.

Schema choices, made for what LLM providers accept:

- `T | None` is `{"type": [T, "null"]}` (with `None` added to an `enum`), not `anyOf`: it is
  shorter, it is how OpenAI's strict mode spells optional values, Gemini's older schema
  dialect has no `anyOf`, and `validate_tool_arguments` coerces mis-typed scalars only through
  `type` (a `"42"` inside `anyOf` would not become `42`). `anyOf` is left for unions whose
  members are not plain single types (e.g. two attrs classes).
- Objects (the parameters, nested attrs classes) have `"additionalProperties": false`, so an
  argument the function does not take is a validation error the model can correct, not a
  silently dropped value.
- `tuple[A, B]` with different types needs `prefixItems`, which some providers do not know;
  `tuple[T, ...]` and `tuple[T, T]` use plain `items`.
"""

from __future__ import annotations

import collections.abc
import contextlib
import datetime
import enum
import functools
import inspect
import json
import re
import types
import typing
from collections.abc import Callable
from typing import Annotated, Any, Generic, Literal, ParamSpec, TypeVar, Union, overload

import attrs
from attrs.validators import is_callable

from ._abort import AbortSignal
from ._content import ImageContent, TextContent
from ._enums import ToolExecutionMode
from ._tools import AgentTool, AgentToolResult, ToolUpdate

__all__ = ["NO_OUTPUT", "FunctionTool", "tool"]

P = ParamSpec("P")
R = TypeVar("R")

INJECTED = ("tool_call_id", "signal", "on_update")
"""Parameter names the loop fills in (the call id, the run's signal, the update callback)."""

NO_OUTPUT = "(no output)"
"""The text of the result when the function returns `None` (providers reject empty text)."""

_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")

Convert = Callable[[Any], Any]
"""Turns a validated JSON value back into the annotated type; `None` stands for "as is"."""
Spec = tuple[dict[str, Any], Convert | None]
"""A JSON Schema and the `Convert` for values it accepts."""


@attrs.frozen(slots=False)
class FunctionTool(AgentTool, Generic[P, R]):
    """An `AgentTool` made by `tool` that is still the function it wraps.

    Calling it calls `fn` unchanged. As with `functools.update_wrapper`, `__wrapped__` is `fn`
    and `__name__`, `__qualname__`, `__module__`, `__doc__` and `__annotations__` are the
    function's, so `inspect.signature` and `help` see the function. Unlike other values it is
    not slotted: a slotted class cannot give each instance its own `__doc__`.
    """

    fn: Callable[P, R] = attrs.field(kw_only=True, validator=is_callable())

    def __attrs_post_init__(self) -> None:
        for name in functools.WRAPPER_ASSIGNMENTS:
            if name != "__name__" and hasattr(self.fn, name):  # __name__ is a property
                object.__setattr__(self, name, getattr(self.fn, name))  # frozen: bypass attrs

    @property
    def __name__(self) -> str:
        """The wrapped function's name."""
        return self.fn.__name__

    @property
    def __wrapped__(self) -> Callable[P, R]:
        """The wrapped function, as `functools.wraps` would set it."""
        return self.fn

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        """Call the wrapped function directly, as if it were not a tool."""
        return self.fn(*args, **kwargs)


@overload
def tool(
    fn: Callable[P, R],
    *,
    name: str | None = None,
    description: str | None = None,
    label: str | None = None,
    execution_mode: ToolExecutionMode | str | None = None,
) -> FunctionTool[P, R]: ...


@overload
def tool(
    fn: None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    label: str | None = None,
    execution_mode: ToolExecutionMode | str | None = None,
) -> Callable[[Callable[P, R]], FunctionTool[P, R]]: ...


def tool(
    fn: Callable[P, R] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    label: str | None = None,
    execution_mode: ToolExecutionMode | str | None = None,
) -> FunctionTool[P, R] | Callable[[Callable[P, R]], FunctionTool[P, R]]:
    """Build an `AgentTool` from a type-annotated function; usable as `@tool` or `@tool(...)`.

    The JSON Schema of the arguments comes from the type hints: `str`, `int`, `float`, `bool`,
    `list[T]` / `Sequence[T]`, `tuple[...]`, `dict[str, T]`, `T | None`, other unions,
    `Literal[...]`, `Enum` subclasses, attrs classes (nested, recursively) and `Any` (or no
    hint). `Annotated[T, "text"]` describes a parameter. Parameters with a default are optional
    and show the default when it has a JSON form. Parameters named `tool_call_id`, `signal`
    (the run's `AbortSignal`) and `on_update` (a callback taking an `AgentToolResult`) are
    filled in by the loop and hidden from the model.

    The docstring's summary (the text before its first section, whitespace-normalised) is the
    description, or the humanised function name (`get_weather` → `"Get weather"`) without one;
    the entries of `Args:` (`name (type): text` or `name: text`, continuation lines indented)
    describe the parameters; other sections are ignored. For attrs classes, the class
    docstring's summary and `Attributes:` section play the same roles.

    When the model calls the tool, the validated arguments are converted back to the annotated
    types (enum members from values, attrs instances from objects, tuples from arrays) and an
    omitted optional argument takes the function's default. The return value becomes the
    result: an `AgentToolResult` as is; a `str` as one `TextContent`; `None` as the text
    `"(no output)"`; a `TextContent`, an `ImageContent` or a non-empty list of them as the
    content; anything else as JSON text (attrs instances as objects, enums as their values,
    other unknown objects as `str`), with the value itself in `details`. Exceptions propagate,
    which the loop reports to the model as an error result.

    Args:
        fn: The function. Omitted when called with options only (`@tool(name=...)`).
        name: The tool's name; defaults to the function's `__name__`. Providers accept
            1 to 64 letters, digits, `_` and `-`.
        description: What the model reads about the tool; defaults to the docstring summary.
        label: A human-readable name for user interfaces.
        execution_mode: `ToolExecutionMode.SEQUENTIAL` makes any batch calling this tool run
            one call at a time.

    Returns:
        A `FunctionTool` (an `AgentTool` that still calls like `fn`), or, without `fn`, a
        decorator that makes one.

    Raises:
        TypeError: `fn` is not a synchronous function, its hints cannot be resolved, or a
            parameter cannot be described (`*args`, `**kwargs`, positional-only, or an
            annotation such as `set[int]`, `Callable` or a plain class); the message names
            the function and the parameter.
        ValueError: The name is not a valid tool name, or `execution_mode` is unknown.
    """
    for option, value in (("name", name), ("description", description), ("label", label)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"tool: {option!r} must be a str or None, got {value!r}")
    if fn is None:

        def decorate(function: Callable[P, R]) -> FunctionTool[P, R]:
            return _build(function, name, description, label, execution_mode)

        return decorate
    return _build(fn, name, description, label, execution_mode)


def _build(
    fn: Callable[P, R],
    name: str | None,
    description: str | None,
    label: str | None,
    execution_mode: ToolExecutionMode | str | None,
) -> FunctionTool[P, R]:
    if isinstance(fn, FunctionTool):
        raise TypeError(f"tool: {fn.name!r} is already a tool")
    if isinstance(fn, str):
        raise TypeError(f"tool: expected a function, got {fn!r}; pass a name as tool(name=...)")
    if not (inspect.isfunction(fn) or inspect.ismethod(fn)):
        raise TypeError(f"tool: expected a function, got {fn!r}")
    what = f"function {fn.__qualname__!r}"
    if inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn):
        raise TypeError(f"tool: {what} is async; agentcore runs tools synchronously")
    if inspect.isgeneratorfunction(fn):
        raise TypeError(f"tool: {what} is a generator; return the result instead")
    name = fn.__name__ if name is None else name
    if not _NAME.fullmatch(name):
        raise ValueError(
            f"tool: {name!r} is not a valid tool name (1 to 64 letters, digits, '_' or '-'); "
            "pass name=..."
        )
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception as exc:
        raise TypeError(f"tool: cannot resolve the type hints of {what}: {exc}") from exc
    doc = _parse_docstring(fn.__doc__)
    properties: dict[str, Any] = {}
    required: list[str] = []
    params: list[tuple[str, Convert | None]] = []
    injected: list[str] = []
    for param in inspect.signature(fn).parameters.values():
        where = f"parameter {param.name!r} of {what}"
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"tool: {where} is variadic; the model passes named arguments only")
        if param.kind is param.POSITIONAL_ONLY:
            raise TypeError(f"tool: {where} is positional-only; arguments are passed by name")
        if param.name in INJECTED:
            injected.append(param.name)
            continue
        try:
            prop, convert = _property(hints.get(param.name, Any), doc.params.get(param.name), ())
        except _UnsupportedError as exc:
            raise TypeError(f"tool: cannot build a schema for {where}: {exc}") from None
        if param.default is param.empty:
            required.append(param.name)
        else:
            _add_default(prop, param.default)
        properties[param.name] = prop
        params.append((param.name, convert))
    schema = _object(properties, required)
    run = _Invoke(fn, tuple(params), tuple(injected))
    return FunctionTool(
        name,
        (doc.summary or _humanise(fn.__name__)) if description is None else description,
        schema,
        run,
        label=label,
        execution_mode=execution_mode,
        fn=fn,
    )


@attrs.frozen(eq=False)  # its converters are closures: compare by identity, like functions
class _Invoke:
    """The `execute` of a `FunctionTool`: convert the arguments, call, convert the result."""

    fn: Callable[..., Any]
    params: tuple[tuple[str, Convert | None], ...]
    injected: tuple[str, ...]

    def __call__(
        self, tool_call_id: str, args: Any, signal: AbortSignal, on_update: ToolUpdate
    ) -> AgentToolResult:
        if not isinstance(args, collections.abc.Mapping):
            raise TypeError(f"tool arguments must be an object, got {args!r}")
        kwargs = {
            name: args[name] if convert is None else convert(args[name])
            for name, convert in self.params
            if name in args  # an omitted optional argument takes the function's default
        }
        loop_values = {"tool_call_id": tool_call_id, "signal": signal, "on_update": on_update}
        kwargs.update((name, loop_values[name]) for name in self.injected)
        return _to_result(self.fn(**kwargs))


class _UnsupportedError(Exception):
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
    "Literal[...], Enum subclasses, attrs classes and Any"
)


def _object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def _property(hint: Any, doc: str | None, seen: tuple[type, ...]) -> Spec:
    """The schema of a parameter or field: its type's, with the most specific description.

    `Annotated[T, "text"]` wins over the docstring entry, which wins over a class's own
    description.
    """
    if typing.get_origin(hint) is Annotated:
        described = next((m for m in hint.__metadata__ if isinstance(m, str)), None)
        doc = _normalise(described) if described is not None else doc
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
        return _property(hint, None, seen)
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
        raise _UnsupportedError(f"{_type_name(hint)} is not supported (JSON has no sets: use "
                                "list[...])")
    if origin is None and isinstance(hint, type):
        if issubclass(hint, enum.Enum):
            return _enum(hint), hint
        if attrs.has(hint):
            return _attrs_class(hint, seen)
    if origin is None and hasattr(hint, "__supertype__"):  # typing.NewType
        return _spec(hint.__supertype__, seen)
    if origin is collections.abc.Callable or hint is collections.abc.Callable:
        raise _UnsupportedError(f"{_type_name(hint)} is not supported (a model cannot pass code)")
    raise _UnsupportedError(f"{_type_name(hint)} is not supported ({_SUPPORTED})")


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
            raise _UnsupportedError(f"{what} value {value!r} is not a JSON string, number, "
                                    "boolean or null")
        if kind not in kinds:
            kinds.append(kind)
    if not kinds:
        raise _UnsupportedError(f"{what} has no values")
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
        raise _UnsupportedError(
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


def _attrs_class(cls: type, seen: tuple[type, ...]) -> Spec:
    if cls in seen:
        raise _UnsupportedError(f"attrs class {cls.__qualname__} contains itself (recursive "
                                "types are not supported)")
    try:
        hints = typing.get_type_hints(cls, include_extras=True)
    except Exception as exc:
        raise _UnsupportedError(f"cannot resolve the type hints of {cls.__qualname__}: {exc}"
                                ) from exc
    doc = _parse_docstring(cls.__doc__)
    properties: dict[str, Any] = {}
    required: list[str] = []
    fields: list[tuple[str, Convert | None]] = []
    for field in attrs.fields(cls):
        if not field.init:
            continue
        alias = field.alias or field.name
        try:
            prop, field_convert = _property(hints.get(field.name, Any),
                                            doc.params.get(alias) or doc.params.get(field.name),
                                            (*seen, cls))
        except _UnsupportedError as exc:
            raise _UnsupportedError(f"field {field.name!r} of {cls.__qualname__}: {exc}"
                                    ) from None
        if field.default is attrs.NOTHING:
            required.append(alias)
        elif not isinstance(field.default, attrs.Factory):  # type: ignore[arg-type]
            _add_default(prop, field.default)
        properties[alias] = prop
        fields.append((alias, field_convert))
    schema = _object(properties, required)
    if doc.summary:
        schema["description"] = doc.summary

    def convert(data: Any) -> Any:
        if not isinstance(data, dict):
            raise TypeError(f"expected an object for {cls.__qualname__}, got {data!r}")
        return cls(**{
            alias: data[alias] if field_convert is None else field_convert(data[alias])
            for alias, field_convert in fields
            if alias in data
        })

    return schema, convert


def _type_name(hint: Any) -> str:
    if isinstance(hint, type) and typing.get_origin(hint) is None:
        return hint.__qualname__
    return repr(hint).replace("typing.", "")


def _add_default(schema: dict[str, Any], default: object) -> None:
    """Show `default` in the schema when it has a JSON form."""
    with contextlib.suppress(TypeError, ValueError):
        schema["default"] = json.loads(json.dumps(default, default=_strict_json, allow_nan=False))


def _strict_json(value: object) -> Any:
    if attrs.has(type(value)):
        return attrs.asdict(value, recurse=False)  # type: ignore[arg-type]
    if isinstance(value, enum.Enum):
        return value.value
    raise TypeError(f"{value!r} has no JSON form")


def _loose_json(value: object) -> Any:
    try:
        return _strict_json(value)
    except TypeError:
        pass
    if isinstance(value, (set, frozenset)):
        try:
            return sorted(value)  # a stable text for the model
        except TypeError:
            return list(value)
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    return str(value)


def _to_result(value: object) -> AgentToolResult:
    """Turn what the function returned into the tool's result (see `tool`)."""
    if isinstance(value, AgentToolResult):
        return value
    if isinstance(value, str):
        return AgentToolResult([TextContent(value)])
    if value is None:
        return AgentToolResult([TextContent(NO_OUTPUT)])
    if isinstance(value, (TextContent, ImageContent)):
        return AgentToolResult([value])
    if (isinstance(value, list) and value
            and all(isinstance(block, (TextContent, ImageContent)) for block in value)):
        return AgentToolResult(list(value))
    text = json.dumps(value, ensure_ascii=False, default=_loose_json)
    return AgentToolResult([TextContent(text)], details=value)


@attrs.frozen
class _Docstring:
    summary: str
    params: dict[str, str]


_PARAM_SECTIONS = frozenset({
    "args", "arguments", "parameters", "params", "keyword args", "keyword arguments",
    "other parameters", "attributes",
})
_OTHER_SECTIONS = frozenset({
    "returns", "return", "yields", "yield", "raises", "raise", "except", "exceptions",
    "example", "examples", "note", "notes", "warning", "warnings", "warns", "see also",
    "todo", "references", "methods",
})
_HEADER = re.compile(r"([A-Za-z][A-Za-z ]*?)\s*:\s*")
_ENTRY = re.compile(r"\*{0,2}(\w+)\s*(?:\(.*?\))?\s*:(.*)")


def _normalise(text: str) -> str:
    return " ".join(text.split())


def _humanise(name: str) -> str:
    text = _normalise(name.replace("_", " "))
    return text[:1].upper() + text[1:] if text else name


def _parse_docstring(doc: str | None) -> _Docstring:
    """Split a Google-style docstring into its summary and its `Args:` descriptions."""
    summary: list[str] = []
    entries: list[str] = []
    section: str | None = None
    for line in inspect.cleandoc(doc or "").splitlines():
        header = _HEADER.fullmatch(line)  # section headers are not indented
        if header and header[1].lower() in _PARAM_SECTIONS | _OTHER_SECTIONS:
            section = header[1].lower()
        elif section is None:
            summary.append(line)
        elif section in _PARAM_SECTIONS:
            entries.append(line)
    return _Docstring(_normalise(" ".join(summary)), _parse_entries(entries))


def _parse_entries(lines: list[str]) -> dict[str, str]:
    """`name (type): text` entries; deeper-indented lines continue the entry above."""
    texts: dict[str, list[str]] = {}
    indent: int | None = None
    current: list[str] | None = None
    for line in lines:
        if not line.strip():
            continue
        depth = len(line) - len(line.lstrip())
        indent = depth if indent is None else indent
        entry = _ENTRY.fullmatch(line.strip()) if depth <= indent else None
        if entry:
            current = texts[entry[1]] = [entry[2]]
        elif current is not None:
            current.append(line)
    return {name: _normalise(" ".join(text)) for name, text in texts.items()}
