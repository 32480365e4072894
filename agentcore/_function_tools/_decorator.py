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
import functools
import inspect
import json
import re
import sys
import typing
from collections.abc import Callable
from typing import Any, Generic, ParamSpec, TypeVar, overload

import attrs

from .._core import (
    AbortSignal,
    AgentTool,
    AgentToolResult,
    ImageContent,
    TextContent,
    ToolExecutionMode,
    ToolUpdate,
    is_callable,
    json_ready,
    key_of,
    tool_deps,
)
from ._docstring import humanise, parse_docstring
from ._schema import (
    Convert,
    UnsupportedError,
    add_default,
    object_schema,
    property_spec,
)

__all__ = ["NO_OUTPUT", "FunctionTool", "tool"]

P = ParamSpec("P")
R = TypeVar("R")

INJECTED = ("tool_call_id", "signal", "on_update", "deps", "idempotency_key")
"""Parameter names the loop fills in: the call id, the run's signal, the update callback, the
run's `deps` (`AgentLoopConfig(deps=...)`, `Agent(deps=...)`) and the call's idempotency key
(API §24)."""

NO_OUTPUT = "(no output)"
"""The text of the result when the function returns `None` (providers reject empty text)."""

_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")



@attrs.frozen(slots=False)
class FunctionTool(AgentTool, Generic[P, R]):
    """An `AgentTool` made by `tool` that is still the function it wraps.

    Calling it calls `fn` unchanged. As with `functools.update_wrapper`, `__wrapped__` is `fn`
    and `__name__`, `__qualname__`, `__module__`, `__doc__` and `__annotations__` are the
    function's, so `inspect.signature` and `help` see the function. Unlike other values it is
    not slotted: a slotted class cannot give each instance its own `__doc__`.

    It pickles by reference, as a function does, so that an executor running tools in another
    process can take it: `@tool` at module level leaves the tool under the function's name,
    which the other process imports; a tool made from a module-level function under another
    name (`lookup_tool = tool(lookup)`) is rebuilt there from that function. A tool made
    inside a function cannot be pickled, as a local function cannot (cloudpickle, which Dask
    uses, takes such a function by value).
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

    def __reduce__(self) -> str | tuple[Any, ...]:
        """Pickle by reference: the module-level name holding this tool, or its function."""
        if _module_level(self.fn) is self:
            return self.fn.__qualname__  # pickle looks it up in `__module__`, the function's
        return (_rebuild, (self.fn, self.name, self.description, self.label,
                           self.execution_mode, self.timeout, self.requires_approval))


def _module_level(fn: Callable[..., Any]) -> object:
    """What `fn`'s module holds under `fn`'s qualified name (None for a local function)."""
    found: object = sys.modules.get(fn.__module__)
    for part in fn.__qualname__.split("."):
        found = getattr(found, part, None)
    return found


def _rebuild(
    fn: Callable[P, R],
    name: str,
    description: str,
    label: str | None,
    execution_mode: ToolExecutionMode | None,
    timeout: float | None,
    requires_approval: bool | Callable[[Any], bool] = False,
) -> FunctionTool[P, R]:
    """Unpickle a `FunctionTool` made from a function importable by its own name."""
    return _build(fn, name, description, label, execution_mode, timeout, requires_approval)


def _execute_of(owner: Callable[..., Any]) -> _Invoke:
    """Unpickle an `_Invoke`: the `execute` of the tool `owner`, or of a tool made from it."""
    if isinstance(owner, FunctionTool):
        return typing.cast(_Invoke, owner.execute)
    return typing.cast(_Invoke, _build(owner, "tool", None, None, None, None).execute)


@overload
def tool(
    fn: Callable[P, R],
    *,
    name: str | None = None,
    description: str | None = None,
    label: str | None = None,
    execution_mode: ToolExecutionMode | str | None = None,
    timeout: float | None = None,
    requires_approval: bool | Callable[[Any], bool] = False,
) -> FunctionTool[P, R]: ...


@overload
def tool(
    fn: None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    label: str | None = None,
    execution_mode: ToolExecutionMode | str | None = None,
    timeout: float | None = None,
    requires_approval: bool | Callable[[Any], bool] = False,
) -> Callable[[Callable[P, R]], FunctionTool[P, R]]: ...


def tool(
    fn: Callable[P, R] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    label: str | None = None,
    execution_mode: ToolExecutionMode | str | None = None,
    timeout: float | None = None,
    requires_approval: bool | Callable[[Any], bool] = False,
) -> FunctionTool[P, R] | Callable[[Callable[P, R]], FunctionTool[P, R]]:
    """Build an `AgentTool` from a type-annotated function; usable as `@tool` or `@tool(...)`.

    The JSON Schema of the arguments comes from the type hints: `str`, `int`, `float`, `bool`,
    `list[T]` / `Sequence[T]`, `tuple[...]`, `dict[str, T]`, `T | None`, other unions,
    `Literal[...]`, `Enum` subclasses, attrs classes (nested, recursively) and `Any` (or no
    hint). `Annotated[T, "text"]` describes a parameter. Parameters with a default are optional
    and show the default when it has a JSON form. Parameters named `tool_call_id`, `signal`
    (the run's `AbortSignal`), `on_update` (a callback taking an `AgentToolResult`), `deps`
    (the run's `deps`, say a database handle: `Agent(deps=...)`) and `idempotency_key` (a str,
    the same for this call in every process: with a session it is derived from the session's
    identity and the call id, see `tool_idempotency_key`) are filled in by the loop and hidden
    from the model.

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
    content; anything else is made JSON-ready (attrs classes and dataclasses as objects of the
    fields their repr shows, enums as their values, sets and tuples as lists, datetimes as ISO
    strings, bytes as base64, NaN as null, other objects as their `repr()`), kept in `details`
    and shown to the model as JSON text, so the result can always be saved. Exceptions
    propagate, which the loop reports to the model as an error result.

    Args:
        fn: The function. Omitted when called with options only (`@tool(name=...)`).
        name: The tool's name; defaults to the function's `__name__`. Providers accept
            1 to 64 letters, digits, `_` and `-`.
        description: What the model reads about the tool; defaults to the docstring summary.
        label: A human-readable name for user interfaces.
        execution_mode: `ToolExecutionMode.SEQUENTIAL` makes any batch calling this tool run
            one call at a time.
        timeout: Seconds a call may take; past it the call's `signal` is aborted and the
            model gets the error `tool '<name>' timed out after <t> s`. `None` uses the
            run's `tool_timeout`.
        requires_approval: `True` makes every call wait for a person's approval (API §20);
            a function of the validated arguments (a dict) decides per call.

    Returns:
        A `FunctionTool` (an `AgentTool` that still calls like `fn`), or, without `fn`, a
        decorator that makes one.

    Raises:
        TypeError: `fn` is not a synchronous function, its hints cannot be resolved, or a
            parameter cannot be described (`*args`, `**kwargs`, positional-only, or an
            annotation such as `set[int]`, `Callable` or a plain class); the message names
            the function and the parameter.
        ValueError: The name is not a valid tool name, `execution_mode` is unknown, or
            `timeout` is not a positive number of seconds.
        TypeError: `requires_approval` is neither a bool nor a function of one argument.
    """
    for option, value in (("name", name), ("description", description), ("label", label)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"tool: {option!r} must be a str or None, got {value!r}")
    if fn is None:

        def decorate(function: Callable[P, R]) -> FunctionTool[P, R]:
            return _build(function, name, description, label, execution_mode, timeout,
                          requires_approval)

        return decorate
    return _build(fn, name, description, label, execution_mode, timeout, requires_approval)


def _build(
    fn: Callable[P, R],
    name: str | None,
    description: str | None,
    label: str | None,
    execution_mode: ToolExecutionMode | str | None,
    timeout: float | None,
    requires_approval: bool | Callable[[Any], bool] = False,
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
    doc = parse_docstring(fn.__doc__)
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
            hint, text = hints.get(param.name, Any), doc.params.get(param.name)
            prop, convert = property_spec(hint, text, ())
        except UnsupportedError as exc:
            raise TypeError(f"tool: cannot build a schema for {where}: {exc}") from None
        if param.default is param.empty:
            required.append(param.name)
        else:
            add_default(prop, param.default)
        properties[param.name] = prop
        params.append((param.name, convert))
    schema = object_schema(properties, required)
    run = _Invoke(fn, tuple(params), tuple(injected))
    return FunctionTool(
        name,
        (doc.summary or humanise(fn.__name__)) if description is None else description,
        schema,
        run,
        label=label,
        execution_mode=execution_mode,
        timeout=timeout,
        requires_approval=requires_approval,
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
        if self.injected:
            loop_values = {"tool_call_id": tool_call_id, "signal": signal,
                           "on_update": on_update, "deps": tool_deps()}
            if "idempotency_key" in self.injected:
                loop_values["idempotency_key"] = key_of(tool_call_id)
            kwargs.update((name, loop_values[name]) for name in self.injected)
        return _to_result(self.fn(**kwargs))

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle by reference to the tool, or the function, that the other process imports.

        The converters are closures and cannot travel; `@tool` rebinds the function's name to
        the tool, so the function cannot travel by reference either, but the tool can.
        """
        owner = _module_level(self.fn)
        if isinstance(owner, FunctionTool) and owner.execute is self:
            return (_execute_of, (owner,))
        return (_execute_of, (self.fn,))


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
    # Made JSON-ready once, here: the model reads the same value the transcript saves.
    ready = json_ready(value)
    return AgentToolResult([TextContent(json.dumps(ready, ensure_ascii=False))], details=ready)


