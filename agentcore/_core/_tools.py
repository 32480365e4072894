"""Tools: what the model sees (`Tool`), what runs (`AgentTool`), and argument validation."""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs

from ._abort import AbortSignal
from ._content import ImageContent, TextContent, ToolCall
from ._enums import ToolExecutionMode, member_of, to_tool_execution_mode
from ._errors import ToolArgumentsError
from ._fast_schema import compile_fast, json_copy
from ._usage import Usage
from ._validators import (
    instance_of,
    is_callable,
    list_of,
    optional_instance_of,
    seconds,
    string,
    takes,
    type_error,
)

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

__all__ = ["AgentTool", "AgentToolResult", "CallLeftOpen", "Tool", "tool_hint",
           "validate_tool_arguments"]

_str = string


def tool_hint(value: object) -> str | None:
    """What to do with a value given where an `AgentTool` is expected (for error messages)."""
    if isinstance(value, str):
        return "pass the tool itself (a function decorated with @agentcore.tool), not its name"
    if callable(value):
        return "make it a tool with agentcore.tool(...)"
    return None


_VALID_SCHEMAS: dict[str, None] = {}
"""The JSON text of schemas that passed `check_schema`, newest last (`_VALID_SCHEMAS_MAX` at most):
checking a schema against its meta-schema costs about a millisecond, and a service making an
agent per request builds the same tools over and over."""
_VALID_SCHEMAS_MAX = 512


def _check_schema(_: object, attribute: attrs.Attribute[Any], value: dict[str, Any]) -> None:
    try:
        key: str | None = json.dumps(value, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError):  # not JSON: checked every time (and likely refused)
        key = None
    if key is not None and key in _VALID_SCHEMAS:
        return
    from jsonschema import exceptions, validators

    cls = validators.validator_for(value, default=validators.Draft202012Validator)
    try:
        cls.check_schema(value)
    except exceptions.SchemaError as exc:
        raise ValueError(f"'{attribute.name}' is not a valid JSON Schema: {exc.message}") from None
    if key is not None:
        if len(_VALID_SCHEMAS) >= _VALID_SCHEMAS_MAX:
            _VALID_SCHEMAS.pop(next(iter(_VALID_SCHEMAS)), None)
        _VALID_SCHEMAS[key] = None


@attrs.frozen
class Tool:
    """A tool as the model sees it: a name, a description and a JSON Schema for its arguments."""

    name: str = attrs.field(validator=_str)
    description: str = attrs.field(validator=_str)
    parameters: dict[str, Any] = attrs.field(validator=[instance_of(dict), _check_schema])


@attrs.define
class AgentToolResult:
    """What a tool returns: content for the model, `details` for the application.

    `terminate=True` asks the loop not to call the model again after this batch (it applies
    only when every result of the batch says so). Mutable, so hooks can build it up.
    """

    content: list[TextContent | ImageContent] = attrs.field(
        factory=list,
        validator=list_of(TextContent, ImageContent),
    )
    details: Any = None
    usage: Usage | None = attrs.field(default=None, validator=optional_instance_of(Usage))
    added_tool_names: list[str] | None = attrs.field(
        default=None, validator=list_of(str, optional=True)
    )
    terminate: bool | None = attrs.field(default=None, validator=optional_instance_of(bool))


class CallLeftOpen(Exception):  # a signal to the tool's batch, not a failure
    """Raised by a tool whose call gets its result outside the run that made it.

    The batch gives the call no result (and no `tool_execution_end`); its other calls run as
    usual, and the run ends after the batch with the call open in the transcript, for a later
    run to answer (its `ToolResultMessage` comes as a prompt). A child agent waiting for
    approval (`ChildPaused`, API §25) is one such call; a web client's own tool
    (`agentcore.web`, API §28), answered by the client's next request, is another.
    """


ToolUpdate = Callable[[AgentToolResult], None]
ToolExecute = Callable[[str, Any, AbortSignal, ToolUpdate], AgentToolResult]


_takes_args = takes("args")


def _approval_rule(owner: object, attribute: attrs.Attribute[Any], value: object) -> None:
    """Attrs validator: a bool, or a function of the call's arguments returning one."""
    if isinstance(value, bool):
        return
    if not callable(value):
        raise type_error(attribute.name, "a bool or a function of the arguments", value)
    _takes_args(owner, attribute, value)


@attrs.frozen
class AgentTool(Tool):
    """A `Tool` that runs.

    `execute(tool_call_id, args, signal, on_update)` runs on a worker thread and reports
    failure by raising; `on_update(partial)` streams progress. `prepare_arguments(raw)` may
    reshape old-style arguments before validation. `execution_mode=SEQUENTIAL` makes any batch
    that calls this tool run one call at a time. `timeout` (seconds) bounds each call: past it
    the call's signal is aborted and the model gets an error result at once; `None` uses the
    run's `tool_timeout`. `requires_approval` (API §20) makes a person decide before a call
    runs: `True` for every call, or a function of the validated arguments saying whether this
    call needs it.
    """

    execute: ToolExecute = attrs.field(
        validator=takes("tool_call_id", "args", "signal", "on_update"))
    label: str | None = attrs.field(default=None, validator=optional_instance_of(str))
    execution_mode: ToolExecutionMode | None = attrs.field(
        default=None,
        converter=to_tool_execution_mode,
        validator=member_of(ToolExecutionMode, optional=True),
    )
    prepare_arguments: Callable[[Any], Any] | None = attrs.field(
        default=None, validator=is_callable(optional=True)
    )
    timeout: float | None = attrs.field(default=None, validator=seconds)
    requires_approval: bool | Callable[[Any], bool] = attrs.field(
        default=False, validator=_approval_rule)
    # Typed Any: jsonschema is imported lazily, and the annotation must resolve at runtime.
    _validator: Any = attrs.field(init=False, eq=False, repr=False)

    _fast_check: Any = attrs.field(init=False, eq=False, repr=False)

    @_validator.default
    def _make_validator(self) -> Validator:
        return _compile(self.parameters)

    @_fast_check.default
    def _make_fast_check(self) -> Any:
        return compile_fast(self.parameters)


def _compile(schema: dict[str, Any]) -> Validator:
    from jsonschema import validators

    cls = validators.validator_for(schema, default=validators.Draft202012Validator)
    return cls(schema)


_TRUE = {"true": True, "false": False}
# Only JSON's own number syntax counts: "nan", "1_000" or "1e999" are not unambiguous numbers.
_JSON_INT = re.compile(r"-?[0-9]+")
_JSON_NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")


def _coerce(value: Any, wanted: str | list[str]) -> Any:
    """Convert a scalar the way LLMs get it wrong, or return `_NO` when ambiguous."""
    kinds = [wanted] if isinstance(wanted, str) else list(wanted)
    for kind in kinds:
        if isinstance(value, str):
            text = value.strip()
            if kind == "integer" and _JSON_INT.fullmatch(text):
                return int(text)
            if kind == "number" and _JSON_NUMBER.fullmatch(text):
                number = float(text)
                if math.isfinite(number):
                    return int(number) if number.is_integer() and "." not in text else number
            elif kind == "boolean" and text.lower() in _TRUE:
                return _TRUE[text.lower()]
            elif kind == "null" and text in ("", "null"):
                return None
        elif isinstance(value, bool):
            if kind == "string":
                return "true" if value else "false"
        elif isinstance(value, (int, float)):
            if kind == "string":
                return json.dumps(value)
            if kind == "integer" and isinstance(value, float) and value.is_integer():
                return int(value)
        elif value is None and kind == "string":
            return ""
    return _NO


_NO = object()


def _set_path(root: dict[str, Any], path: list[Any], value: Any) -> None:
    target: Any = root
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value


def _path_text(path: list[Any]) -> str:
    return "/".join(str(p) for p in path) or "root"


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _copy_arguments(args: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of a JSON object, its scalar values (the most) taken as they are."""
    return {k: v if type(v) in _SCALARS else json_copy(v) for k, v in args.items()}


def validate_tool_arguments(tool: Tool, tool_call: ToolCall) -> dict[str, Any]:
    """Validate a copy of `tool_call.arguments` against `tool.parameters` and return it.

    Mis-typed scalars are coerced where unambiguous (`"42"` for an integer, `"true"` for a
    boolean, `3` for a string). Raises `ToolArgumentsError` listing every failing path and the
    arguments received.
    """
    if isinstance(tool, AgentTool) and isinstance(tool_call, ToolCall) \
            and tool_call.arguments_error is None:  # the loop's case, once a turn: the fast yes
        fast = tool._fast_check
        if fast is not None and fast(args := tool_call.arguments):
            return _copy_arguments(args) if type(args) is dict else json_copy(args)
    if not isinstance(tool, Tool):
        raise TypeError(f"validate_tool_arguments: 'tool' must be a Tool, got {tool!r}")
    if not isinstance(tool_call, ToolCall):
        raise TypeError(
            f"validate_tool_arguments: 'tool_call' must be a ToolCall, got {tool_call!r}"
        )
    if tool_call.arguments_error is not None:
        raise ToolArgumentsError(
            f"the arguments of tool {tool.name!r} could not be read: "
            f"{tool_call.arguments_error}. Re-issue the call with the arguments as one JSON "
            "object matching the tool's schema."
        )
    args = tool_call.arguments
    validator = tool._validator if isinstance(tool, AgentTool) else _compile(tool.parameters)
    if validator.is_valid(args):
        return copy.deepcopy(args)
    args = copy.deepcopy(args)
    for _ in range(100):  # each pass fixes at least one scalar, so this ends quickly
        fixed = False
        for error in validator.iter_errors(args):
            if error.validator == "type" and error.path:
                wanted: Any = error.validator_value
                new = _coerce(error.instance, wanted)
                if new is not _NO:
                    _set_path(args, list(error.path), new)
                    fixed = True
                    break
        if not fixed:
            break
    errors = sorted(validator.iter_errors(args), key=lambda e: list(map(str, e.path)))
    if not errors:
        return args
    lines = "\n".join(f"  - {_path_text(list(e.path))}: {e.message}" for e in errors)
    received = json.dumps(tool_call.arguments, indent=2, ensure_ascii=False, default=repr)
    raise ToolArgumentsError(
        f"validation failed for tool {tool.name!r}:\n{lines}\n\nReceived arguments:\n{received}"
    )
