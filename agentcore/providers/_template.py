"""Reading the text of a streamed delta without parsing its JSON, when only the text changed.

A streaming API sends its text deltas as JSON objects that repeat, chunk after chunk, everything
but the text: `{"id":"chatcmpl-1","object":"chat.completion.chunk",...,"delta":{"content":"Hi"},
...}`. Parsing each one builds a dict and a string for every member, to read one string. A
`DeltaReader` learns the form of one such chunk, its text cut at the delta's string value and at
the values of the members the provider ignores and that change from chunk to chunk (OpenAI's
`obfuscation` padding, the Responses API's `sequence_number`): a later chunk that has the same
text around them is the same JSON object with other values there, so its delta is read by
scanning that one string with the JSON scanner's own string reader.

The result is exactly what parsing gives. A template is learned from a chunk parsed already, and
kept only if parsing its text with a sentinel value in each cut gives that chunk with the
sentinels in place of the delta and of the ignored members: so each cut is a JSON value at the
place a reader expects, and any valid string (or integer) there parses to the same object but
for that value. A chunk of another form, or one whose string is not valid JSON, matches nothing
and is parsed as usual (its errors are the parser's own).
"""

from __future__ import annotations

import json
import json.decoder
import re
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["DeltaReader"]

_scanstring: Callable[[str, int], tuple[str, int]] = vars(json.decoder)["scanstring"]
"""The JSON scanner's own string reader (C when built; typeshed does not declare it): the string
starting after an opening quote, and the index after its closing quote; `ValueError` for a
string that is not valid JSON (strict, as `json.loads` reads)."""
_INT = re.compile(r"-?(?:0|[1-9][0-9]*)")
_SENTINEL = "\ue000agentcore delta {}\ue001"
_SENTINEL_INT = 7_300_000_000_000_001
_MIN_SEEN = 2
"""Deltas parsed before a template is learned: a reply of one delta gains nothing from one."""
_MAX_FAILURES = 3
_HITS_PER_RELEARN = 8
"""A template is learned again (its form changed, say `created` ticked a second) only after this
many reads per template learned so far: a stream whose every chunk has a new form stops
trying."""

Path = Sequence[str | int]


def _token_end(text: str, start: int) -> tuple[Any, int] | None:
    """The string (from after its opening quote) or integer at `start`, and where it ends."""
    try:
        if text[start - 1 : start] == '"':
            return _scanstring(text, start)
    except ValueError:
        return None
    match = _INT.match(text, start)
    return None if match is None else (int(match.group()), match.end())


def _value_start(text: str, key_end: int) -> int:
    """Where the value of the member whose name ends at `key_end` starts (past a quote)."""
    i = key_end
    while text[i : i + 1] in (" ", "\t", "\n", "\r"):
        i += 1
    if text[i : i + 1] != ":":
        return -1
    i += 1
    while text[i : i + 1] in (" ", "\t", "\n", "\r"):
        i += 1
    return i + 1 if text[i : i + 1] == '"' else i


class _Template:
    """The constant text around a chunk's cuts: `head`, then per cut what follows it."""

    __slots__ = ("head", "hits", "holes", "match", "tail")

    def __init__(self, head: str, holes: tuple[tuple[bool, bool, str], ...]) -> None:
        self.head = head
        self.hits = 0
        """How many texts matched."""
        self.holes = holes
        """Per cut: whether it is the delta, whether it is an integer, the text after it."""
        self.tail = holes[-1][2]
        self.match: Callable[[str], str | None] = self._one if len(holes) == 1 else self._many
        """The delta of a text, or None when the text is not of this form."""

    def _one(self, text: str) -> str | None:
        """`match` for a form cut at the delta only (the commonest)."""
        head = self.head
        if not text.startswith(head):
            return None
        try:
            delta, end = _scanstring(text, len(head))
        except ValueError:  # not a valid JSON string: the parser will say so
            return None
        tail = self.tail
        if end + len(tail) != len(text) or not text.endswith(tail):
            return None
        self.hits += 1
        return delta

    def _many(self, text: str) -> str | None:
        """`match` for a form with other cuts too."""
        if not text.startswith(self.head):
            return None
        pos = len(self.head)
        delta = None
        try:
            for is_delta, is_int, after in self.holes:
                if is_int:
                    number = _INT.match(text, pos)
                    if number is None:
                        return None
                    pos = number.end()
                elif is_delta:
                    delta, pos = _scanstring(text, pos)
                else:
                    pos = _scanstring(text, pos)[1]
                if not text.startswith(after, pos):
                    return None
                pos += len(after)
        except ValueError:
            return None
        if pos != len(text):
            return None
        self.hits += 1
        return delta


def _find(text: str, name: str, value: Any, first: bool) -> tuple[int, int] | None:
    """Where the value of member `name` is `value` in `text`: the cut's start and end.

    The first such member, or only the last member of that name (`first` False); a string's cut
    starts after its opening quote.
    """
    written = json.dumps(name)
    at = text.find(written) if first else text.rfind(written)
    while at >= 0:
        start = _value_start(text, at + len(written))
        found = _token_end(text, start) if start > 0 else None
        if found is not None and found[0] == value and type(found[0]) is type(value):
            return start, found[1]
        if not first:
            return None
        at = text.find(written, at + 1)
    return None


def _learn(text: str, chunk: dict[str, Any], path: Path,
           ignored: Sequence[str]) -> _Template | None:
    """The template of `text`, whose JSON is `chunk`, cut at `path` and the `ignored` members."""
    delta: Any = chunk
    for step in path:
        delta = delta[step]
    where = _find(text, str(path[-1]), delta, first=True)
    if where is None:
        return None
    cuts: list[tuple[int, int, str | None]] = [(*where, None)]  # None: the delta
    for name in ignored:
        value = chunk.get(name)
        if type(value) is str or type(value) is int:
            where = _find(text, name, value, first=False)
            if where is None:
                return None
            cuts.append((*where, name))
    cuts.sort(key=lambda cut: cut[0])
    # The text with a sentinel in every cut must parse to `chunk` with the sentinels in place.
    expected = json.loads(text)
    pieces: list[str] = []
    holes: list[tuple[bool, bool, str]] = []
    last = 0
    for n, (start, end, member) in enumerate(cuts):
        if start < last:
            return None
        is_int = type(chunk[member]) is int if member is not None else False
        sentinel: Any = _SENTINEL_INT + n if is_int else _SENTINEL.format(n)
        if member is None:
            place = expected
            for step in path[:-1]:
                place = place[step]
            place[path[-1]] = sentinel
        else:
            expected[member] = sentinel
        pieces += [text[last:start], str(sentinel) if is_int else sentinel + '"']
        if holes:
            holes[-1] = (holes[-1][0], holes[-1][1], text[last:start])
        holes.append((member is None, is_int, ""))
        last = end
    pieces.append(text[last:])
    holes[-1] = (holes[-1][0], holes[-1][1], text[last:])
    try:
        if json.loads("".join(pieces)) != expected:
            return None
    except ValueError:
        return None
    return _Template(text[: cuts[0][0]], tuple(holes))


def _no_template(text: str) -> None:
    """`DeltaReader.read` before a template is learned."""
    return


class DeltaReader:
    """Reads the delta string of a stream's chunks by a learned template (one reply's reader).

    Attributes:
        path: Where the delta string is in a chunk, e.g. `("choices", 0, "delta", "content")`.
        ignored: Top-level members the provider never reads that may change from chunk to chunk.
        read: The delta of a chunk's text if it has the learned form, else None (then parse it,
            and if it is a plain delta, `learn(text, chunk)`). The learned template's own
            `match`: a read is one call.

    One reader serves one reply on one thread.
    """

    __slots__ = ("_failures", "_learned", "_seen", "_template", "ignored", "path", "read")

    def __init__(self, path: Path, ignored: Sequence[str] = ()) -> None:
        self.path = path
        self.ignored = ignored
        self.read: Callable[[str], str | None] = _no_template
        self._template: _Template | None = None
        self._seen = 0
        self._learned = 0
        self._failures = 0

    def learn(self, text: str, chunk: dict[str, Any]) -> None:
        """Learn the form of `text`, a plain delta whose JSON is `chunk`, when it is worth it.

        Call it only for a chunk whose handling depends on nothing but its delta: the template
        stands for every chunk of its form.
        """
        self._seen += 1
        hits = 0 if self._template is None else self._template.hits
        if (self._seen < _MIN_SEEN or self._failures >= _MAX_FAILURES
                or hits < _HITS_PER_RELEARN * self._learned):
            return
        template = _learn(text, chunk, self.path, self.ignored)
        if template is None:
            self._failures += 1
            return
        self._template = template
        self.read = template.match
        self._learned += 1
