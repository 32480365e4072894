"""Options for model requests, declared once.

`StreamOptions` is the one declaration of every provider option: its type, default, validator
and repr. `AgentLoopConfig` and `Agent` hold one nested `options: StreamOptions` (as httpx passes
one `Timeout` around) and keep the flat keyword arguments users write (`max_tokens=...`) as
aliases of its fields, made by `flat_options`: the aliases hold no state and have no validators
of their own, and an alias whose type differs from the field it stands for fails at import.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import attrs
from attrs.validators import and_, ge, optional

from ._abort import AbortSignal
from ._enums import ThinkingLevel, member_of, to_thinking_level
from ._model import Model
from ._validators import (
    count,
    got,
    one_of,
    optional_instance_of,
    secret_headers,
    secret_str,
    takes,
    type_error,
)

if TYPE_CHECKING:
    import requests

__all__ = ["DEFAULT_MAX_EVENT_BYTES", "OPTION", "StreamOptions", "flat_options"]

DEFAULT_MAX_EVENT_BYTES = 32 * 1024 * 1024
"""The largest server-sent event (or line of a non-SSE body) a reply may carry: 32 MiB."""

CacheRetention = Literal["none", "short", "long"]
Transport = Literal["sse"]
OnPayload = Callable[[Any, Model], Any]
OnResponse = Callable[[int, Mapping[str, str]], None]

_opt_count: Any = optional(count)
_opt_number = optional_instance_of(int, float, expected="a number")


def _redacted_headers(headers: dict[str, str] | None) -> str:
    return "None" if headers is None else "{" + ", ".join(f"{k!r}: '***'" for k in headers) + "}"


def _http_session(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is None:
        return
    import requests  # only when one is given: `import agentcore` stays light

    if not isinstance(value, requests.Session):
        raise type_error(attribute.name, "a requests.Session or None", value)


def _budgets(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is None:
        return
    if not isinstance(value, dict):
        raise type_error(attribute.name, "a dict of str to int or None", value)
    for name, tokens in value.items():
        if not isinstance(name, str):
            raise TypeError(f"'{attribute.name}' keys must be str, got {got(name)}")
        if type(tokens) is not int:
            raise TypeError(f"'{attribute.name}'[{name!r}] must be an int, got {got(tokens)}")
        if tokens < 0:
            raise ValueError(f"'{attribute.name}'[{name!r}] must be >= 0, got {tokens!r}")


def _transport(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value != "sse":
        raise ValueError(f"'{attribute.name}' must be 'sse' (the only transport agentcore "
                         f"speaks: HTTP with server-sent events), got {got(value)}")


@attrs.frozen(kw_only=True)
class StreamOptions:
    """Options for `stream`/`complete`; every field is optional.

    `api_key` and header values never appear in the repr. `on_payload(payload, model)` may
    return a replacement request body; `on_response(status, headers)` sees each response.
    `transport` is `"sse"`, the one transport there is; anything else is rejected.
    `http_session`, a `requests.Session` of the caller's (proxies, certificates, adapters), is
    used for the requests and never closed by agentcore. `max_event_bytes` bounds one
    server-sent event (or one line of a non-SSE body): a bigger one ends the reply as an error.
    """

    api_key: str | None = attrs.field(default=None, validator=secret_str, repr=False)
    signal: AbortSignal | None = attrs.field(default=None,
                                             validator=optional_instance_of(AbortSignal))
    reasoning: ThinkingLevel | None = attrs.field(
        default=None, converter=to_thinking_level, validator=member_of(ThinkingLevel, optional=True)
    )
    thinking_budgets: dict[str, int] | None = attrs.field(
        default=None, validator=_budgets
    )
    max_tokens: int | None = attrs.field(default=None, validator=_opt_count)
    temperature: float | None = attrs.field(default=None, validator=_opt_number)
    session_id: str | None = attrs.field(default=None, validator=optional_instance_of(str))
    cache_retention: CacheRetention | None = attrs.field(
        default=None, validator=optional(one_of("none", "short", "long"))
    )
    headers: dict[str, str] | None = attrs.field(default=None, validator=secret_headers,
                                                 repr=_redacted_headers)
    metadata: dict[str, Any] | None = attrs.field(default=None,
                                                  validator=optional_instance_of(dict))
    on_payload: OnPayload | None = attrs.field(
        default=None, validator=takes("payload", "model", optional=True))
    on_response: OnResponse | None = attrs.field(
        default=None, validator=takes("status", "headers", optional=True))
    max_retry_delay_ms: int | None = attrs.field(default=None, validator=_opt_count)
    max_retries: int | None = attrs.field(default=None, validator=_opt_count)
    transport: Transport = attrs.field(default="sse", validator=_transport)
    timeout: float | None = attrs.field(default=None, validator=_opt_number)
    http_session: requests.Session | None = attrs.field(default=None, validator=_http_session)
    max_event_bytes: int = attrs.field(default=DEFAULT_MAX_EVENT_BYTES,
                                       validator=and_(count, ge(1)))


class _Alias:
    """A flat attribute standing for the field of the same name in `obj.options`."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        return getattr(obj.options, self.name)

    def __set__(self, obj: Any, value: Any) -> None:
        obj.options = attrs.evolve(obj.options, **{self.name: value})


class _OptionMarker:
    def __repr__(self) -> str:
        return "OPTION"


OPTION: Any = _OptionMarker()
"""Marks a flat alias of a `StreamOptions` field in a class decorated by `flat_options`.

Written `max_tokens: int | None = OPTION`: the annotation is what type checkers see (they take
the alias for a keyword argument with a default); `flat_options` turns it into an alias.
"""


C = TypeVar("C", bound=type)
_FIELDS = {f.name: f for f in attrs.fields(StreamOptions)}


def flat_options(cls: C) -> C:
    """Give an attrs class with an `options: StreamOptions` field its flat option aliases.

    Apply it below `@attrs.define`/`@attrs.frozen`. It hides the `OPTION` attributes
    from attrs and adds an `__init__` that folds flat keyword arguments into `options` (they
    win over the fields of an `options` given too) before attrs' own `__attrs_init__` runs, so
    a bad option raises, naming its field, before the object exists. `attrs.evolve(obj,
    max_tokens=5)` works the same way. Raises `TypeError` at import when an alias names no
    option or declares another type than the option's.
    """
    # attrs reads the class's own annotation dict: the aliases must leave that very dict.
    annotations = cls.__dict__.get("__annotations__", {})  # noqa: RUF063
    names = tuple(name for name, value in vars(cls).items() if value is OPTION)
    for name in names:
        setattr(cls, name, _Alias(name))
        declared = annotations.pop(name, None)
        field = _FIELDS.get(name)
        if field is None or declared != field.type:
            raise TypeError(f"{cls.__name__}.{name}: an option alias must name a StreamOptions "
                            f"field and repeat its type {getattr(field, 'type', None)!r}, "
                            f"got {declared!r}")

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        flat = {name: kwargs.pop(name) for name in names if name in kwargs}
        if flat:
            options = kwargs.get("options", StreamOptions())
            if isinstance(options, StreamOptions):  # anything else: the field's validator says
                kwargs["options"] = attrs.evolve(options, **flat)
        self.__attrs_init__(*args, **kwargs)

    cls.__init__ = __init__  # type: ignore[misc]
    cls.__option_aliases__ = names  # type: ignore[attr-defined]
    return cls
