"""Reading the JSON a model streams as tool-call arguments: the partial text, and the final one.

`parse_partial_json` is best effort on a prefix: with `jiter` installed (the `fast` extra) it
uses jiter's partial mode, in Rust; otherwise, or when jiter refuses the text, a pure-Python
repair that closes what is open and trims what is cut, then lets `json.loads` read it. Both
cost time linear in the text, so a caller that re-parses a growing buffer should do it only
when the buffer has grown by a factor (`ReplyBuilder` does). `parse_arguments` reads the
complete text exactly, and says what was wrong when it is no JSON object.
"""

from __future__ import annotations

import functools
import json
import re
from types import ModuleType
from typing import Any

__all__ = ["parse_arguments", "parse_partial_json", "partial_parser"]

# A string (closed, or cut at the end of the text) or a bracket. The unrolled loop inside the
# string is linear; a string can only stay open at the end of the text, or before a lone
# backslash that ends it.
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*("?)|[{}\[\]]', re.DOTALL)
_CUT_ESCAPE = re.compile(r"\\u[0-9a-fA-F]{0,3}\Z")
_TRAILING = re.compile(
    r"""(?:
        ,\s*                                   # a dangling comma
      | ^"(?:[^"\\]|\\.)*"\s*:\s*              # a key still waiting for its value
      | -?\d*\.?\d*(?:[eE][+-]?\d*)?           # a number cut short (kept when complete)
      | t(?:r(?:ue?)?)? | f(?:a(?:l(?:se?)?)?)? | n(?:u(?:ll?)?)?   # a literal cut short
    )\s*$""",
    re.VERBOSE,
)
_EXCERPT = 80


@functools.cache
def _jiter() -> ModuleType | None:
    """The `jiter` module, imported on first use; None when it is not installed."""
    try:
        import jiter
    except ImportError:
        return None
    return jiter


def partial_parser() -> str:
    """Which parser `parse_partial_json` uses: `"jiter"` or `"python"`."""
    return "python" if _jiter() is None else "jiter"


def parse_partial_json(text: str) -> dict[str, Any]:
    """Parse possibly incomplete JSON text into a dict; never raises.

    Unterminated strings, arrays and objects are closed, a dangling key or comma is dropped,
    and anything that is not an object, or cannot be read at all, gives `{}`.
    """
    if not text or text.isspace():
        return {}
    jiter = _jiter()
    if jiter is not None:
        try:
            value = jiter.from_json(text.encode(), partial_mode="trailing-strings",
                                    cache_mode="keys")
        except ValueError:  # raw control characters, lone surrogates, deep nesting, garbage
            pass
        else:
            return value if isinstance(value, dict) else {}
    return parse_partial_json_python(text)


def parse_partial_json_python(text: str) -> dict[str, Any]:
    """`parse_partial_json` without jiter."""
    if not text or text.isspace():
        return {}
    value = _loads(text)
    if value is _FAIL:
        value = _repair(text)
    return value if isinstance(value, dict) else {}


def parse_arguments(text: str) -> tuple[dict[str, Any], str | None]:
    """Read a tool call's complete argument text: `(arguments, None)`, or `({}, why not)`.

    Empty text is `{}` (models send nothing for a tool without parameters). Raw control
    characters inside strings are accepted, as `json.loads(strict=False)` does.
    """
    if not text or text.isspace():
        return {}, None
    try:
        value = json.loads(text, strict=False)
    except RecursionError:
        return {}, f"the arguments are nested too deeply to read: {_excerpt(text)}"
    except ValueError as exc:
        return {}, f"the arguments are not valid JSON ({exc}): {_excerpt(text)}"
    if not isinstance(value, dict):
        return {}, f"the arguments are a JSON {_json_type(value)}, not an object: {_excerpt(text)}"
    return value, None


def _excerpt(text: str) -> str:
    if len(text) <= 2 * _EXCERPT:
        return repr(text)
    return f"{text[:_EXCERPT]!r} ... {text[-_EXCERPT:]!r} ({len(text)} characters)"


def _json_type(value: Any) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    return "null" if value is None else "number"


_FAIL: Any = object()


def _loads(text: str) -> Any:
    try:
        return json.loads(text, strict=False)
    except (ValueError, RecursionError):
        return _FAIL


def _escaping(text: str, at: int) -> bool:
    """Whether the backslash at `at` starts an escape (it is not itself escaped)."""
    run = 0
    while at > run and text[at - 1 - run] == "\\":
        run += 1
    return run % 2 == 0


def _repair(text: str) -> Any:
    """Close what is open and trim what is cut, then parse; `_FAIL` if still unreadable.

    Linear: the strings are skipped by one regular expression, in C; only brackets and string
    boundaries are looked at in Python. Raw control characters in strings need no escaping:
    `json.loads(strict=False)` takes them.
    """
    closers: list[str] = []
    pieces: list[str] = []
    starts: list[int] = []  # where each string opens in `body`: trimming looks after the last
    size = pos = 0
    in_string = False
    for match in _TOKEN.finditer(text):
        start = match.start()
        if start > pos:
            pieces.append(text[pos:start])
            size += start - pos
        token = match.group()
        if token[0] == '"':
            in_string = not match.group(1)
            starts.append(size)
        elif token in "{[":
            closers.append("}" if token == "{" else "]")
        elif not closers:
            return _FAIL
        else:
            closers.pop()
        pieces.append(token)
        size += len(token)
        pos = match.end()
    body = "".join(pieces)
    if in_string:  # what is left is at most the lone backslash of a cut escape: drop it
        found = _CUT_ESCAPE.search(body, max(0, len(body) - 5))
        if found is not None and _escaping(body, found.start()):
            body = body[: found.start()]
        body += '"'
    else:
        body += text[pos:]
    for _ in range(4):
        candidate = body + "".join(reversed(closers))
        value = _loads(candidate)
        if value is not _FAIL:
            return value
        # Only the tail from the last string on can be cut, and a key can only start there:
        # trying the key pattern at every quote was quadratic (a quarter second at 12 kB).
        cut = next((start for start in reversed(starts) if start < len(body)), 0)
        trimmed = body[:cut] + _TRAILING.sub("", body[cut:])
        if trimmed == body:
            key = re.sub(r'^"(?:[^"\\]|\\.)*"\s*$', "", body[cut:])  # a key without its colon
            trimmed = body[:cut] + key
            trimmed = re.sub(r",\s*$", "", trimmed)
            if trimmed == body:
                break
        body = trimmed
    return _FAIL
