"""Serialization: every value to and from JSON-ready dicts, through one private cattrs Converter.

The wire format is the reference system's JSON: camelCase keys (derived from the attribute names
by `_camel`), a tag first in every tagged value (`"role"` for messages, `"type"` for content
blocks and events), enums as their plain strings, and optional fields left out while they hold
their `None` default. Unions are decoded by their tag, at the top level and in nested fields.

A list (or tuple) of values, such as a transcript, is written as a JSON array and read back
with a generic alias: `from_json(list[AgentMessage], text)`.

Decoding is strict: a value of the wrong JSON type is an error, never coerced (`"5"` is not an
int), unknown tags are errors, and unknown keys are ignored so newer producers stay readable.
Every failure is a `SerializationError` naming the offending path; the values it shows are
shortened (`show`), so that a bad transcript does not make a message of megabytes.

The converter and its per-class hooks are built on first use (cattrs is imported then too), so
importing agentcore pays nothing for serialization.
"""

from __future__ import annotations

import json
import re
import threading
from typing import TYPE_CHECKING, Any, TypeVar, overload

import attrs

from ._converter import build_converter, camel, type_name
from ._errors import SerializationError
from ._json_ready import json_ready_bounded
from ._validators import show

if TYPE_CHECKING:
    from cattrs import Converter

__all__ = ["from_dict", "from_json", "to_dict", "to_json"]

_SURROGATES = re.compile("[\ud800-\udbff][\udc00-\udfff]|[\ud800-\udfff]")
"""A surrogate pair (how UTF-16 spells one character beyond U+FFFF), or a lone surrogate."""

_converter: Converter | None = None
_converter_lock = threading.Lock()

T = TypeVar("T")


@overload
def to_dict(obj: list[Any] | tuple[Any, ...]) -> list[dict[str, Any]]: ...


@overload
def to_dict(obj: Any) -> dict[str, Any]: ...


def to_dict(obj: Any) -> dict[str, Any] | list[dict[str, Any]]:
    """Convert a value (message, content block, event, model, context...) to a JSON-ready dict.

    Keys are camelCase, the tag (`role` or `type`) comes first, enums become plain strings and
    optional fields holding `None` are left out. `Any`-typed fields (`details`, `args`) and tool
    arguments are copied as JSON values. An `AgentContext` is written without its tools (they
    are code): attach them again after `from_dict`. A `Context` writes its tools as `Tool`s.
    A list or tuple of values (a transcript, a run's events) becomes a list of dicts.

    Args:
        obj: An instance of an agentcore attrs class, or of an application's attrs class (such as
            a custom message with a class-level `role`), or a list or tuple of them.

    Returns:
        A new dict of JSON values, or a new list of them for a list.

    Raises:
        SerializationError: `obj` (or an item of the list) is not an attrs instance or holds
            something with no JSON form, such as an `AgentTool`.
    """
    if isinstance(obj, (list, tuple)):
        return [_to_dict(item, f"[{index}]") for index, item in enumerate(obj)]
    return _to_dict(obj, "")


def _to_dict(obj: Any, where: str) -> dict[str, Any]:
    if not attrs.has(type(obj)):
        what = f"item {where} of the list, " if where else ""
        raise SerializationError(
            f"cannot serialize {what}{show(obj)} ({type(obj).__name__}): expected an attrs "
            "value (a message, an event...) or a list of them"
        )
    try:
        result: dict[str, Any] = _get_converter().unstructure(obj)
    except SerializationError as exc:
        if not where:
            raise
        raise SerializationError(f"item {where}: {exc}") from exc
    except Exception as exc:
        at = f"item {where} ({type(obj).__name__})" if where else type(obj).__name__
        raise SerializationError(f"cannot serialize {at}: {exc}") from exc
    return result


@overload
def from_dict(cls_or_union: type[T], data: Any) -> T: ...


@overload
def from_dict(cls_or_union: Any, data: Any) -> Any: ...


def from_dict(cls_or_union: Any, data: Any) -> Any:
    """Build a value of `cls_or_union` from a dict produced by `to_dict` (or the reference JSON).

    Unions such as `AgentMessage`, `Message`, `AgentEvent` and `AssistantMessageEvent` pick the
    class by the `role` or `type` tag. For a concrete class the tag may be left out, but if
    present it must match. Unknown keys are ignored; a missing optional field takes its default.
    A list of dicts is read with a generic alias: `from_dict(list[AgentMessage], data)`.

    Args:
        cls_or_union: The class to build, a union alias, or a generic alias such as
            `list[AgentMessage]`. Type checkers infer the result from a class or a generic
            alias (`list[AgentMessage]` gives a list of messages); a bare union gives `Any`.
        data: The decoded JSON value.

    Returns:
        The new value; the classes' own validators have run on it.

    Raises:
        SerializationError: A tag is unknown or mismatched, a required field is missing, or a
            field has the wrong type; the message names the path of each problem.
    """
    try:
        return _get_converter().structure(data, cls_or_union)
    except Exception as exc:
        problem = _describe(exc)
        raise SerializationError(f"cannot decode {type_name(cls_or_union)}: {problem}") from exc


def to_json(obj: Any) -> str:
    r"""Serialize a value as compact, strict JSON (no spaces, non-ASCII kept as is).

    The text is RFC 8259 JSON that encodes to UTF-8: NaN and infinities are written as `null`
    (or left out, in a field whose default is None, such as a `details` that is NaN); lone
    surrogates (a `"\ud83d"` escape a provider sent, decoded) as `\uXXXX` escapes, which
    `from_json` reads back to the same string, and a surrogate pair as the one character it
    spells. So `to_json(from_json(T, to_json(x)))` is `to_json(x)`, character for character.
    A list of values (`agent.state.messages`) is written as a JSON array; read it back with
    `from_json(list[AgentMessage], text)`.

    Args:
        obj: What `to_dict` accepts: a value, or a list or tuple of values.

    Returns:
        The JSON text of `to_dict(obj)`.

    Raises:
        SerializationError: `to_dict` fails.
    """
    data = to_dict(obj)
    try:
        text = _dumps(data)
    except (TypeError, ValueError, RecursionError):
        # A non-finite number in a float field (the `Any` fields are JSON-ready already), a
        # value an application's own attrs class let through, or nesting too deep for `json`:
        # convert the whole, depth-bounded, then write it.
        try:
            text = _dumps(json_ready_bounded(data))
        except (TypeError, ValueError, RecursionError) as exc:
            raise SerializationError(
                f"cannot serialize {type(obj).__name__} as JSON: {exc}"
            ) from exc
    if not text.isascii():
        try:
            text.encode("utf-8")  # C speed; a regex search over the text costs five times more
        except UnicodeEncodeError:
            # Surrogates have no UTF-8 form. A lone one is written as a JSON escape (which
            # json.loads reads back); a pair as the character it spells, because json.loads
            # would read two escapes back as that one character, and the second pass would
            # then write the character. Every other character is written as it was.
            text = _SURROGATES.sub(_escape, text)
    return text


@overload
def from_json(cls_or_union: type[T], text: str | bytes) -> T: ...


@overload
def from_json(cls_or_union: Any, text: str | bytes) -> Any: ...


def from_json(cls_or_union: Any, text: str | bytes) -> Any:
    """Parse JSON text and build a value of `cls_or_union` from it, as `from_dict` does.

    Args:
        cls_or_union: What `from_dict` accepts, e.g. `list[AgentMessage]` for a saved
            transcript.
        text: JSON text.

    Returns:
        The new value.

    Raises:
        SerializationError: The text is not valid JSON, or `from_dict` fails.
    """
    try:
        data = json.loads(text)
    except (TypeError, ValueError) as exc:
        raise SerializationError(
            f"invalid JSON for {type_name(cls_or_union)}: {exc} in {_excerpt(text)!r}"
        ) from exc
    return from_dict(cls_or_union, data)


def _dumps(data: Any) -> str:
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _escape(match: re.Match[str]) -> str:
    found = match.group()
    if len(found) == 2:
        return found.encode("utf-16-le", "surrogatepass").decode("utf-16-le")
    return f"\\u{ord(found):04x}"


def _excerpt(text: object, limit: int = 200) -> object:
    """The first `limit` characters of `text`, for error messages."""
    return text[:limit] if isinstance(text, (str, bytes)) else text


def _get_converter() -> Converter:
    """The library's converter, built once by the first caller (thread-safe)."""
    global _converter
    converter = _converter
    if converter is None:
        with _converter_lock:
            if _converter is None:
                _converter = build_converter()
            converter = _converter
    return converter


_SHOWN_PROBLEMS = 5


def _describe(exc: BaseException) -> str:
    """Turn a (possibly nested) cattrs error into `path: problem; path: problem`.

    The first few problems are shown: a transcript of ten thousand bad items gives one line.
    """
    problems = [f"{path}: {problem}" if path else problem for path, problem in _problems(exc, "")]
    more = len(problems) - _SHOWN_PROBLEMS
    return "; ".join(problems[:_SHOWN_PROBLEMS]) + (f"; and {more} more" if more > 0 else "")


def _problems(exc: BaseException, path: str) -> list[tuple[str, str]]:
    from cattrs.errors import AttributeValidationNote, BaseValidationError, IterableValidationNote

    if isinstance(exc, BaseValidationError):
        found: list[tuple[str, str]] = []
        for sub in exc.exceptions:
            step = ""
            for note in reversed(getattr(sub, "__notes__", [])):
                if isinstance(note, AttributeValidationNote):
                    step = ("." if path else "") + camel(note.name)
                    break
                if isinstance(note, IterableValidationNote):
                    step = f"[{note.index!r}]"
                    break
            found += _problems(sub, path + step)
        return found
    if isinstance(exc, KeyError):  # the generated code reads required fields with o[key]
        return [(path, "required field is missing")]
    return [(path, str(exc))]
