"""The attrs validators the value classes share: types, lists, numbers, messages, secrets.

Every error is one line naming the field, what it must be and what it got, as
`'content[1]' must be a TextContent or an ImageContent, got 'hi' (str)`, with the value's repr
shortened (`show`) so that a wrong transcript never prints megabytes. attrs' own `instance_of`
is not used: its `TypeError` carries a tuple (message, `Attribute`, type, value) that prints as
such. These validators are plain functions, as cheap as the check they make: they run on every
message the loop builds.

Secrets (API keys, HTTP header values) get validators of their own: a key of the wrong type
(`bytes` read from a file, say) must not reach tracebacks, logs and, through a run's error
message, the transcript. Those name the field and the type, never the value.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import re
import reprlib
import types
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs
from attrs.validators import and_, ge

__all__ = [
    "Hint",
    "Validator",
    "cannot_take",
    "check_messages",
    "count",
    "describe_types",
    "dict_message_hint",
    "got",
    "instance_of",
    "is_callable",
    "is_credential_header",
    "list_of",
    "list_of_messages",
    "not_bool",
    "one_of",
    "optional_instance_of",
    "redact_headers",
    "seconds",
    "secret_headers",
    "secret_str",
    "show",
    "strict_int",
    "string",
    "takes",
    "type_error",
]

Validator = Callable[[Any, "attrs.Attribute[Any]", Any], None]
Hint = Callable[[Any], "str | None"]
"""What to do instead, given the rejected value (or None when there is nothing to add)."""

SHOWN_CHARS = 200
"""The longest repr of a rejected value an error message shows."""


class _ShortRepr(reprlib.Repr):
    """`reprlib` limits, a little roomier, and dicts in their own order (reprlib sorts them)."""

    def __init__(self) -> None:
        super().__init__()
        self.maxlevel = 3
        self.maxstring = 80
        self.maxother = 80
        self.maxlist = self.maxtuple = 4
        self.maxdict = 6

    def repr_dict(self, x: dict[Any, Any], level: int) -> str:
        if not x:
            return "{}"
        if level <= 0:
            return "{...}"
        items = [f"{self.repr1(k, level - 1)}: {self.repr1(v, level - 1)}"
                 for k, v in itertools.islice(x.items(), self.maxdict)]
        if len(x) > self.maxdict:
            items.append("...")
        return "{" + ", ".join(items) + "}"


_short_repr = _ShortRepr()


def show(value: object) -> str:
    """The repr of `value` for an error message: nested containers and long text elided."""
    text = _short_repr.repr(value)
    if len(text) > SHOWN_CHARS:
        text = text[:SHOWN_CHARS - 3] + "..."
    return text


def got(value: object) -> str:
    """`<repr> (<type>)` of a rejected value, the repr shortened by `show`."""
    if value is None:
        return "None"
    return f"{show(value)} ({type(value).__name__})"


def _a(name: str) -> str:
    # Our class names that start with a 'U' (UserMessage, Usage) are read "you": "a".
    return ("an " if name[:1] in "aeioAEIO" else "a ") + name


def describe_types(types: tuple[type, ...]) -> str:
    """`a str`, `a TextContent, a ThinkingContent or a ToolCall`: what `isinstance` wants."""
    names = [_a(t.__name__) for t in types]
    return " or ".join(filter(None, (", ".join(names[:-1]), names[-1])))


def _names(types: tuple[type, ...]) -> str:
    names = [t.__name__ for t in types]
    return " or ".join(filter(None, (", ".join(names[:-1]), names[-1])))


def type_error(name: str, expected: str, value: object, hint: str | None = None) -> TypeError:
    """The one-line `TypeError` of field `name`: `'name' must be <expected>, got <value>`."""
    return TypeError(f"'{name}' must be {expected}, got {got(value)}"
                     + (f"; {hint}" if hint else ""))


def _hint(hint: Hint | None, value: object) -> str | None:
    return None if hint is None else hint(value)


def instance_of(*types: type, expected: str | None = None, hint: Hint | None = None,
                optional: bool = False) -> Validator:
    """Attrs validator: an instance of one of `types` (or None when `optional`).

    `expected` replaces the generated description (`a str or a list`), `hint(value)` may add
    what to do instead.
    """
    kinds: type | tuple[type, ...] = types[0] if len(types) == 1 else types
    wanted = expected or describe_types(types)
    if optional:
        wanted += " or None"

        def check_optional(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
            if value is not None and not isinstance(value, kinds):
                raise type_error(attribute.name, wanted, value, _hint(hint, value))

        return check_optional

    def check(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if not isinstance(value, kinds):
            raise type_error(attribute.name, wanted, value, _hint(hint, value))

    return check


def optional_instance_of(*types: type, expected: str | None = None,
                         hint: Hint | None = None) -> Validator:
    """Attrs validator: None or an instance of one of `types` (see `instance_of`)."""
    return instance_of(*types, expected=expected, hint=hint, optional=True)


string = instance_of(str)
"""Attrs validator: a `str`."""


def list_of(*types: type, expected: str | None = None, expected_list: str | None = None,
            hint: Hint | None = None, optional: bool = False) -> Validator:
    """Attrs validator: a `list` whose items are instances of `types` (or None if `optional`).

    The check `deep_iterable(instance_of(types), instance_of(list))` makes, in one function
    (it runs on every message the loop builds); an item's error names its index,
    `'content[2]'`. `expected` describes one item, `expected_list` the list, and `hint(value)`
    may add what to do instead.
    """
    kinds: type | tuple[type, ...] = types[0] if len(types) == 1 else types
    item = expected or describe_types(types)
    whole = expected_list or "a list of " + _names(types)
    if optional:
        whole += " or None"

    def check(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if type(value) is not list:
            if value is None and optional:
                return
            if not isinstance(value, list):
                raise type_error(attribute.name, whole, value, _hint(hint, value))
        for index, member in enumerate(value):
            if not isinstance(member, kinds):
                raise type_error(f"{attribute.name}[{index}]", item, member,
                                 _hint(hint, member))

    return check


def dict_message_hint(value: object, many: bool = True) -> str | None:
    """For a dict given where messages (or, not `many`, one message) are expected: `from_dict`."""
    if not isinstance(value, Mapping):
        return None
    if many:
        return "to load dicts, use agentcore.from_dict(list[AgentMessage], data)"
    return "to load a dict, use agentcore.from_dict(AgentMessage, data)"


def check_messages(name: str, value: object) -> list[Any]:
    """`value`, an iterable of messages (objects with a str `role`), as a new list.

    Anything else is the `TypeError` the `Agent` raises, naming `name` or `name[i]`: a dict,
    even one with a `"role"` key, is not a message, and the error says to load it with
    `from_dict`.
    """
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise type_error(name, "a list of messages", value, dict_message_hint(value, many=False))
    messages = list(value)
    for index, message in enumerate(messages):
        if not isinstance(getattr(message, "role", None), str):
            raise type_error(f"{name}[{index}]", "a message such as UserMessage", message,
                             dict_message_hint(message))
    return messages


def list_of_messages(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    """Attrs validator: a `list` of messages, objects with a str `role` (a class attribute).

    A dict with a `"role"` key is not a message: the error says to load it with `from_dict`.
    """
    if not isinstance(value, list):
        raise type_error(attribute.name, "a list of messages", value, dict_message_hint(value))
    check_messages(attribute.name, value)


def one_of(*values: object) -> Validator:
    """Attrs validator: one of `values` (compared with `==`); a `ValueError` otherwise."""
    shown = [repr(v) for v in values]
    wanted = " or ".join(filter(None, (", ".join(shown[:-1]), shown[-1])))

    def check(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if value not in values:
            raise ValueError(f"'{attribute.name}' must be {wanted}, got {got(value)}")

    return check


def is_callable(optional: bool = False) -> Validator:
    """Attrs validator: a callable (or None if `optional`)."""
    wanted = "callable" + (" or None" if optional else "")

    def check(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if not callable(value) and not (optional and value is None):
            raise type_error(attribute.name, wanted, value)

    return check


def not_bool(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    """Attrs validator rejecting `True`/`False` where a number is meant."""
    if isinstance(value, bool):  # bool is an int subclass, but True is never a count or price
        raise type_error(attribute.name, "a number, not a bool", value)


def strict_int(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    """Attrs validator: an `int` that is not a `bool` (one function: it runs on every message)."""
    if type(value) is int:
        return
    if isinstance(value, bool):
        raise type_error(attribute.name, "an int, not a bool", value)
    if not isinstance(value, int):
        raise type_error(attribute.name, "an int", value)


def seconds(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    """Attrs validator: None, or a positive, finite number of seconds (a timeout)."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise type_error(attribute.name, "a number of seconds or None", value)
    if not 0 < value < float("inf"):
        raise ValueError(f"'{attribute.name}' must be a positive, finite number of seconds, "
                         f"got {value!r}")


def wait_seconds(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    """Attrs validator: how long to wait, a finite number of seconds >= 0 (0: not at all)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise type_error(attribute.name, "a number of seconds", value)
    if not 0 <= value < float("inf"):
        raise ValueError(f"'{attribute.name}' must be a finite number of seconds >= 0, "
                         f"got {value!r}")


count = and_(strict_int, ge(0))
"""Attrs validator: a non-negative `int` that is not a `bool`."""

_CREDENTIAL_HEADER = re.compile(r"auth|key|token|secret|cookie", re.IGNORECASE)


def is_credential_header(name: str) -> bool:
    """Whether a header of this name carries a credential (`Authorization`, `x-api-key`...)."""
    return _CREDENTIAL_HEADER.search(name) is not None


def redact_headers(headers: dict[str, str] | None) -> dict[str, str] | None:
    """`headers` with every credential value replaced by `***` (for saving or showing)."""
    if headers is None:
        return None
    return {k: "***" if is_credential_header(k) else v for k, v in headers.items()}


def secret_str(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    """A `str` or None; the error names the type only."""
    if value is not None and not isinstance(value, str):
        raise TypeError(f"'{attribute.name}' must be a str or None, got a "
                        f"{type(value).__name__} (value not shown: it may be a secret)")


def secret_headers(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    """None or a dict of str to str; the error names a bad value's header and type only."""
    if value is None:
        return
    if not isinstance(value, dict):
        raise TypeError(f"'{attribute.name}' must be a dict of str to str or None, got a "
                        f"{type(value).__name__}")
    for name, header in value.items():
        if not isinstance(name, str):
            raise TypeError(f"'{attribute.name}' must have str keys, got {name!r}")
        if not isinstance(header, str):
            raise TypeError(f"'{attribute.name}'[{name!r}] must be a str, got a "
                            f"{type(header).__name__} (value not shown: it may be a secret)")


@functools.lru_cache(maxsize=512)
def _cannot_take(fn: Callable[..., Any], count: int) -> bool:
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin without a signature: trust it
        return False
    try:
        signature.bind(*range(count))
    except TypeError:
        return True
    return False


_BY_SHAPE: dict[tuple[Any, ...], bool] = {}
"""`_cannot_take` by what decides it: a function's code and defaults, a callable's class.

A new closure (an agent's hooks) or bound method per call would miss a cache keyed by the
callable itself, and such a cache would keep them, and whatever they hold, alive."""


def _shape(fn: Callable[..., Any], count: int) -> tuple[Any, ...] | None:
    """What `fn`'s signature depends on, when that is its code or its class; else None.

    A `functools.partial` (an agent's sink is one, new for every run) has its function's
    shape, with the arguments it binds.
    """
    if type(fn) is functools.partial:
        inner = _shape(fn.func, count + len(fn.args))
        if inner is None:
            return None
        return ("partial", inner, len(fn.args), tuple(sorted(fn.keywords)), count)
    target, bound = fn, False
    if isinstance(fn, types.MethodType):
        target, bound = fn.__func__, True
    if type(target) is types.FunctionType:
        if "__wrapped__" in target.__dict__ or "__signature__" in target.__dict__:
            return None
        return (target.__code__, len(target.__defaults__ or ()),
                tuple(sorted(target.__kwdefaults__ or ())), bound, count)
    call = vars(type(fn)).get("__call__")
    if type(call) is types.FunctionType and not isinstance(fn, type) \
            and "__signature__" not in getattr(fn, "__dict__", {}):
        return (type(fn), count)
    return None


def cannot_take(fn: Callable[..., Any], count: int) -> bool:
    """Whether `fn` certainly cannot be called with `count` positional arguments."""
    shape = _shape(fn, count)
    if shape is not None:
        known = _BY_SHAPE.get(shape)
        if known is None:
            if len(_BY_SHAPE) >= 4096:
                _BY_SHAPE.clear()
            known = _BY_SHAPE[shape] = _cannot_take.__wrapped__(fn, count)
        return known
    try:
        return _cannot_take(fn, count)
    except TypeError:  # unhashable: check without the cache
        return _cannot_take.__wrapped__(fn, count)


def takes(*params: str, optional: bool = False) -> Callable[[object, attrs.Attribute[Any],
                                                             object], None]:
    """Attrs validator: a callable that can be called as `fn(*params)` (or None if `optional`).

    A hook with the wrong number of parameters would otherwise fail on every call, far from
    where it was given; this names the hook and the signature it needs, when it is given.
    """
    wanted = f"({', '.join(params)})"

    def check(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if value is None and optional:
            return
        if not callable(value):
            raise type_error(attribute.name, f"callable as {attribute.name}{wanted}", value)
        if cannot_take(value, len(params)):
            raise TypeError(f"'{attribute.name}' must accept {len(params)} argument(s), "
                            f"{attribute.name}{wanted}; got {_describe_callable(value)}")

    return check


def _describe_callable(fn: Callable[..., Any]) -> str:
    name = getattr(fn, "__qualname__", None) or repr(fn)
    try:
        return f"{name}{inspect.signature(fn)}"
    except (TypeError, ValueError):
        return name

