"""The attrs validators the value classes share: numbers, roles, secrets.

Secrets (API keys, HTTP header values) get validators of their own: attrs' `instance_of` puts
the rejected value in its message, and a key of the wrong type (`bytes` read from a file, say)
would then reach tracebacks, logs and, through a run's error message, the transcript. Those
name the field and the type, never the value.
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable
from typing import Any

import attrs
from attrs.validators import and_, ge, instance_of

__all__ = [
    "cannot_take",
    "count",
    "has_role",
    "is_credential_header",
    "list_of",
    "not_bool",
    "redact_headers",
    "seconds",
    "secret_headers",
    "secret_str",
    "strict_int",
    "string",
    "takes",
]

string = instance_of(str)
"""Attrs validator: a `str`."""


def not_bool(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    """Attrs validator rejecting `True`/`False` where a number is meant."""
    if isinstance(value, bool):  # bool is an int subclass, but True is never a count or price
        raise TypeError(f"'{attribute.name}' must be a number, not a bool, got {value!r}")


def strict_int(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    """Attrs validator: an `int` that is not a `bool` (one function: it runs on every message)."""
    if type(value) is int:
        return
    if isinstance(value, bool):
        raise TypeError(f"'{attribute.name}' must be a number, not a bool, got {value!r}")
    if not isinstance(value, int):
        raise TypeError(f"'{attribute.name}' must be an int, got {value!r}")


def seconds(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    """Attrs validator: None, or a positive, finite number of seconds (a timeout)."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"'{attribute.name}' must be a number of seconds or None, got {value!r}")
    if not 0 < value < float("inf"):
        raise ValueError(f"'{attribute.name}' must be a positive, finite number of seconds, "
                         f"got {value!r}")


def list_of(*types: type) -> Callable[[object, attrs.Attribute[Any], object], None]:
    """Attrs validator: a `list` whose items are instances of `types`.

    The same check as `deep_iterable(instance_of(types), instance_of(list))`, in one function
    (it runs on every message the loop builds), and its errors name the item's index.
    """
    names = " or ".join(t.__name__ for t in types)

    def check(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if not isinstance(value, list):
            raise TypeError(f"'{attribute.name}' must be a list of {names}, got {value!r}")
        for index, item in enumerate(value):
            if not isinstance(item, types):
                raise TypeError(f"'{attribute.name}[{index}]' must be a {names}, got {item!r}")

    return check


count = and_(strict_int, ge(0))
"""Attrs validator: a non-negative `int` that is not a `bool`."""


def has_role(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    """Attrs validator: a message, that is an object with a str `role`."""
    if not isinstance(getattr(value, "role", None), str):
        raise TypeError(f"'{attribute.name}' must hold messages with a 'role', got {value!r}")

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


def cannot_take(fn: Callable[..., Any], count: int) -> bool:
    """Whether `fn` certainly cannot be called with `count` positional arguments."""
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
            raise TypeError(f"'{attribute.name}' must be callable as {attribute.name}{wanted}, "
                            f"got {value!r}")
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
