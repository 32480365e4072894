"""Options for model requests, declared once, and the flat aliases that reach them.

`StreamOptions` is the one declaration of every provider option: its type, default, validator
and repr. `AgentLoopConfig` holds one nested `options: StreamOptions` (as httpx passes one
`Timeout` around), and `Agent` one `AgentLoopConfig`; both keep the flat keyword arguments users
write (`max_tokens=...`, `before_tool_call=...`) as aliases of the held object's fields, made by
`flat_fields`: the aliases hold no state and have no validators of their own, and an alias
whose type differs from the field it stands for fails at import. The class's `__signature__`
lists the fields and the aliases together, as the constructor takes them, for `help()`,
notebooks and IDEs (the `__init__` that folds the aliases in takes `*args, **kwargs`).
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

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

__all__ = [
    "DEFAULT_MAX_EVENT_BYTES",
    "FACTORY",
    "OPTION",
    "FlatAlias",
    "HttpClientLike",
    "StreamOptions",
    "flat_fields",
]

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


class HttpClientLike(Protocol):
    """What `StreamOptions.http_client` holds: an `agentcore.providers.HttpClient`.

    Named structurally because the client lives in a higher layer than the options.
    """

    @property
    def transport(self) -> Any:
        """The transport every attempt goes through."""
        ...

    def open(self, request: Any) -> Any:
        """Send one request, with the client's retry policy; its open reply."""
        ...

    def close(self) -> None:
        """Close the client's connections."""
        ...


def _http_client(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is None:
        return
    if not all(callable(getattr(value, name, None)) for name in ("open", "close")) or \
            not hasattr(value, "transport"):
        hint = " (a transport goes inside one: HttpClient(transport))" if callable(
            getattr(value, "open", None)) else ""
        raise type_error(attribute.name, f"an agentcore.providers.HttpClient or None{hint}",
                         value)


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


def _tool_choice(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None and (not isinstance(value, str) or not value):
        raise type_error(attribute.name, "None, 'auto', 'none', 'required' or a tool's name",
                         value)


def _schema(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None and not isinstance(value, dict):
        raise type_error(attribute.name, "a JSON Schema dict or None", value)


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
    `http_client`, an `HttpClient`, sends the requests (by default one client, and its
    connection pools, serves the whole process); `http_session`, a `requests.Session` of the
    caller's (proxies, certificates, adapters, auth), is used through requests when no
    `http_client` is given, and never closed by agentcore. `max_event_bytes` bounds one
    server-sent event (or one line of a non-SSE body): a bigger one ends the reply as an error.
    `tool_choice` is None (the provider's default), `"auto"`, `"none"`, `"required"` or the name
    of one tool (API §18). `output_schema`, a JSON Schema, asks for a reply whose text is JSON
    of that schema (the provider's native structured output; `output_mode="native"` sets it).
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
    http_client: HttpClientLike | None = attrs.field(default=None, validator=_http_client)
    max_event_bytes: int = attrs.field(default=DEFAULT_MAX_EVENT_BYTES,
                                       validator=and_(count, ge(1)))
    tool_choice: str | None = attrs.field(default=None, validator=_tool_choice)
    output_schema: dict[str, Any] | None = attrs.field(default=None, validator=_schema)


class FlatAlias:
    """A flat attribute standing for the field `field` of the object its class holds in `via`.

    Reading it reads that field (`none` instead of None, if given); assigning it replaces the
    held object by an `attrs.evolve`d copy, so the field's own converter and validator run. An
    alias under another name than its field's checks values with its own `converter` and
    `validator` first, so that errors name the alias.
    """

    __slots__ = ("converter", "field", "lock", "name", "none", "validator", "via")

    def __init__(self, field: str = "", converter: Callable[[Any], Any] | None = None,
                 validator: Callable[[Any, Any, Any], Any] | None = None, none: Any = None,
                 ) -> None:
        self.field, self.converter, self.validator, self.none = field, converter, validator, none
        self.name = self.via = ""
        self.lock: Any = None

    def convert(self, value: Any) -> Any:
        """`value` converted and validated as the alias's own (the field's checks come later)."""
        value = value if self.converter is None else self.converter(value)
        if self.validator is not None:
            self.validator(None, self, value)  # an attrs validator: it names `self.name`
        return value

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        value = getattr(getattr(obj, self.via), self.field)
        return self.none if value is None else value

    def __set__(self, obj: Any, value: Any) -> None:
        value = self.convert(value)
        with self.lock:  # two assignments never lose one another's change
            setattr(obj, self.via, attrs.evolve(getattr(obj, self.via), **{self.field: value}))


class _OptionMarker:
    def __repr__(self) -> str:
        return "OPTION"


OPTION: Any = _OptionMarker()
"""Marks a flat alias of the same-named field in a class decorated by `flat_fields`.

Written `max_tokens: int | None = OPTION`: the annotation is what type checkers see (they take
the alias for a keyword argument with a default); `flat_fields` turns it into a `FlatAlias`.
"""

C = TypeVar("C", bound=type)
_UNSET: Any = object()


class _FactoryMarker:
    def __repr__(self) -> str:
        return "<factory>"


_ATTRS_FACTORY: Any = attrs.Factory  # a class, which attrs' stubs type as a function
FACTORY: Any = _FactoryMarker()
"""A signature's default for a field whose default is made afresh for each object (as
`dataclasses` shows `default_factory`): leave the argument out to get it."""


def _default(field: attrs.Attribute[Any]) -> Any:
    """What a signature shows as `field`'s default: `FACTORY` for a factory, empty if none."""
    default: Any = field.default
    if default is attrs.NOTHING:
        return inspect.Parameter.empty
    return FACTORY if isinstance(default, _ATTRS_FACTORY) else default


def _target_defaults(target: type[Any]) -> dict[str, Any]:
    """The default of each field (and flat alias) of `target`, by attribute name."""
    found = {field.name: _default(field) for field in attrs.fields(target)}
    if hasattr(target, "__flat_fields__"):  # its own aliases: its signature has their defaults
        parameters = inspect.signature(target).parameters
        found.update({name: parameters[name].default for name in target.__flat_fields__})
    return found


class _Signature:
    """The `__signature__` of a class decorated by `flat_fields`, built on first use.

    It cannot be built when `flat_fields` runs: attrs makes the class's fields after it (it is
    the decorator above). Only the class has it: `inspect.signature(instance)` is not the
    constructor's.
    """

    def __init__(self, build: Callable[[type[Any]], inspect.Signature]) -> None:
        self.build = build
        self.built: inspect.Signature | None = None

    def __get__(self, obj: object, owner: type[Any]) -> inspect.Signature:
        if obj is not None:
            raise AttributeError("__signature__")
        if self.built is None:  # two threads may both build it: the same value either way
            self.built = self.build(owner)
        return self.built


def _signature(cls: type[Any], order: list[str], positional: tuple[str, ...],
               aliases: Mapping[str, FlatAlias], declared: Mapping[str, Any],
               target: type[Any], defaults: Mapping[str, Any]) -> inspect.Signature:
    """What `cls(...)` takes: its attrs fields and its aliases, in declaration order.

    The names in `positional` come first and may be passed by position; everything else is
    keyword-only, as the `__init__` of `flat_fields` takes it. An alias shows the default
    of the field it stands for (or `defaults`' value), read through it (so `none` for None).
    """
    fields = {field.name: field for field in attrs.fields(cls) if field.init}
    held = _target_defaults(target)
    parameters: dict[str, inspect.Parameter] = {}
    for name in [*order, *fields]:
        if name in parameters:
            continue
        if name in aliases:
            alias = aliases[name]
            default = defaults[alias.field] if alias.field in defaults else held[alias.field]
            if default is None and alias.none is not None:
                default = alias.none
            if name in positional:
                default = inspect.Parameter.empty  # required, as type checkers see it
            annotation = declared.get(name, inspect.Parameter.empty)
        elif name in fields:
            field = fields[name]
            name, default = field.alias or name, _default(field)
            annotation = inspect.Parameter.empty if field.type is None else field.type
        else:  # an attribute attrs does not take (init=False)
            continue
        kind = inspect.Parameter.POSITIONAL_OR_KEYWORD if name in positional \
            else inspect.Parameter.KEYWORD_ONLY
        parameters[name] = inspect.Parameter(name, kind, default=default,
                                             annotation=annotation)
    ordered = sorted(parameters.values(), key=lambda p: (p.kind, positional.index(p.name)
                                                         if p.name in positional else 0))
    return inspect.Signature(ordered)


def flat_fields(target: type[Any], via: str, *, positional: tuple[str, ...] = (),
                defaults: Mapping[str, Any] | None = None) -> Callable[[C], C]:
    """Give an attrs class holding one `target` (attrs) object in `via` flat aliases of its fields.

    Apply it below `@attrs.define`/`@attrs.frozen`. It turns the `OPTION` attributes (and
    `FlatAlias` ones) into aliases hidden from attrs, and adds an `__init__` that folds their
    keyword arguments into the held object before attrs' own `__attrs_init__` runs, so that a
    bad value raises, naming its field, before the object exists. When `via` is an `__init__`
    parameter, the aliases win over the fields of the object given (or of `target()`), and
    `attrs.evolve(obj, max_tokens=5)` works too; when it is not (`init=False`), the object is
    built from the aliases and `defaults`. Names in `positional` are aliases written as bare
    annotations (required, as type checkers see them) that may also come first positionally;
    every other alias is keyword-only. The class's `__signature__` lists what that `__init__`
    takes (fields and aliases in declaration order, with their defaults and types), which
    `help()`, notebooks and IDEs show. Raises `TypeError` at import when an alias names no
    field of `target`, or an `OPTION` alias declares another type than its field's.
    """
    known = {f.name: f.type for f in attrs.fields(target)}
    known.update(getattr(target, "__flat_fields__", {}))

    def decorate(cls: C) -> C:
        # attrs reads the class's own annotation dict: the aliases must leave that very dict.
        annotations = cls.__dict__.get("__annotations__", {})  # noqa: RUF063
        order = list(annotations)  # the signature's order: fields and aliases as declared
        marked = [name for name, value in vars(cls).items()
                  if value is OPTION or isinstance(value, FlatAlias)]
        aliases: dict[str, FlatAlias] = {}
        types: dict[str, Any] = {}
        lock = threading.Lock()
        for name in (*positional, *marked):
            alias, declared = vars(cls).get(name), annotations.pop(name, None)
            if not isinstance(alias, FlatAlias):
                alias = FlatAlias(name)
            if alias.field not in known or (alias.field == name and declared != known[name]):
                raise TypeError(f"{cls.__name__}.{name}: an alias must name a field of "
                                f"{target.__name__} and repeat its type "
                                f"{known.get(alias.field)!r}, got {declared!r}")
            alias.name, alias.via, alias.lock = name, via, lock
            types[name] = known[alias.field] if declared is None else declared
            setattr(cls, name, alias)
            aliases[name] = alias
        held_by_init = getattr(vars(cls).get(via), "init", True)  # attrs.field(init=...)

        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            if not args and not positional and held_by_init \
                    and aliases.keys().isdisjoint(kwargs):
                self.__attrs_init__(**kwargs)  # no alias given (`attrs.evolve`, say)
                return
            if len(args) > len(positional):
                raise TypeError(f"{cls.__name__}() takes {len(positional)} positional "
                                f"argument(s) but {len(args)} were given; pass the others by "
                                "keyword (system_prompt=..., tools=...)")
            for name, value in zip(positional, args, strict=False):
                if name in kwargs:
                    raise TypeError(f"{cls.__name__}() got multiple values for {name!r}")
                kwargs[name] = value
            missing = [name for name in positional if name not in kwargs]
            if missing:
                raise TypeError(f"{cls.__name__}() missing a required argument: {missing[0]!r}")
            flat = {alias.field: alias.convert(kwargs.pop(name))
                    for name, alias in aliases.items() if name in kwargs}
            held: Any = kwargs.get(via, _UNSET)
            if not held_by_init:
                object.__setattr__(self, via, target(**{**(defaults or {}), **flat}))
            elif flat and held is _UNSET:
                kwargs[via] = target(**flat)
            elif flat and isinstance(held, target):  # anything else: the field's validator says
                kwargs[via] = attrs.evolve(held, **flat)
            self.__attrs_init__(**kwargs)

        cls.__init__ = __init__  # type: ignore[misc]
        cls.__flat_fields__ = {  # type: ignore[attr-defined]
            name: known[alias.field] for name, alias in aliases.items()}
        cls.__signature__ = _Signature(  # type: ignore[attr-defined]
            lambda final: _signature(final, order, positional, aliases, types, target,
                                     defaults or {}))
        return cls

    return decorate
