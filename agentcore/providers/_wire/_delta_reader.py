"""Reading the text of a streamed delta without parsing its JSON, when only the text changed.

A streaming API sends its text deltas as JSON objects that repeat, chunk after chunk, everything
but the text: `{"id":"chatcmpl-1","object":"chat.completion.chunk",...,"delta":{"content":"Hi"},
...}`. Parsing each one builds a dict and a string for every member, to read one string. A
`DeltaReader` learns the form of one such chunk: its text cut at the delta's string value, and at
the string values of the top-level members the provider ignores and that change from chunk to
chunk (OpenAI's `obfuscation` padding). A later chunk with the same text around those strings is
the same JSON object with other strings there, so its delta is read by scanning that one string
with the JSON scanner's own string reader.

The result is exactly what parsing gives. A template is learned from a chunk parsed already, and
kept only if parsing its text with a sentinel string in each cut gives that chunk with the
sentinels in place of the delta and of the ignored members: so each cut is a string value at
the place the handler reads, and any valid JSON string there parses to the same object but for
that value. A chunk of another form, or one whose string is not valid JSON, matches nothing and
is parsed as usual (its errors are the parser's own).

The framework owns the readers (`_deltas.apply_deltas`, one per kind of plain delta a wire API
names): handlers never call them.
"""

from __future__ import annotations

import json.decoder
from collections.abc import Callable, Sequence
from json.encoder import encode_basestring_ascii
from typing import Any

from ._text import decode_json

__all__ = ["DeltaReader"]

_scanstring: Callable[[str, int], tuple[str, int]] = vars(json.decoder)["scanstring"]
"""The JSON scanner's own string reader (C when built; typeshed does not declare it): the string
starting after an opening quote, and the index after its closing quote; `ValueError` for a
string that is not valid JSON (strict, as `json.loads` reads)."""
_SENTINEL = "\ue000agentcore cut {}\ue001"
_MIN_SEEN = 2
"""Deltas parsed before a template is learned: a reply of one delta gains nothing from one."""
_MAX_FAILURES = 3
_HITS_PER_RELEARN = 8
"""A template is learned again (its form changed, say `created` ticked a second) only after this
many reads per template learned so far: a stream whose every chunk has a new form stops
trying."""
_SPACE = (" ", "\t", "\n", "\r")

Path = Sequence[str | int]


class _Template:
    """The constant text of a form: `head` up to the first cut, then after each cut its text.

    `cuts` holds, per cut in order, whether it is the delta and the text that follows it (up to
    the next cut, or to the end); each piece of text ends with the next cut's opening quote.
    """

    __slots__ = ("cuts", "head", "hits", "match", "tail")

    def __init__(self, head: str, cuts: tuple[tuple[bool, str], ...]) -> None:
        self.head = head
        self.cuts = cuts
        self.tail = cuts[-1][1]
        self.hits = 0
        """How many texts matched."""
        self.match: Callable[[str], str | None] = self._one if len(cuts) == 1 else self._many
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
            for is_delta, after in self.cuts:
                value, pos = _scanstring(text, pos)
                if is_delta:
                    delta = value
                if not text.startswith(after, pos):
                    return None
                pos += len(after)
        except ValueError:
            return None
        if pos != len(text):
            return None
        self.hits += 1
        return delta


def _find(text: str, name: str, value: str, first: bool) -> tuple[int, int] | None:
    """Where the string value `value` of a member `name` is in `text`: a cut's start and end.

    The first such member, or only the last member of that name (`first` False). A cut starts
    after the string's opening quote and ends after its closing quote. The name written as a
    string value (no `:` after it) is no member, and is passed over.
    """
    written = encode_basestring_ascii(name)  # the name as `json.dumps` writes it
    at = text.find(written) if first else text.rfind(written)
    while at >= 0:
        i = at + len(written)
        while text[i : i + 1] in _SPACE:
            i += 1
        if text[i : i + 1] == ":":
            i += 1
            while text[i : i + 1] in _SPACE:
                i += 1
            if text[i : i + 1] == '"':
                try:
                    found, end = _scanstring(text, i + 1)
                except ValueError:
                    return None
                if found == value:
                    return i + 1, end
            if not first:  # the last member is not of that value
                return None
        at = text.find(written, at + 1) if first else text.rfind(written, 0, at)
    return None


def _copied(value: Any, path: Path) -> Any:
    """`value` with each container on `path` copied (the last step's value is not)."""
    top = copy = value.copy()
    for step in path[:-1]:
        copy[step] = copy[step].copy()
        copy = copy[step]
    return top


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
        if type(value) is str:
            where = _find(text, name, value, first=False)
            if where is None:
                return None
            cuts.append((*where, name))
    cuts.sort(key=lambda cut: cut[0])
    # The text with a sentinel in every cut must parse to `chunk` with the sentinels in place
    # (`chunk` copied along the path to the delta: the rest is compared, not changed).
    expected = _copied(chunk, path)
    pieces: list[str] = []
    last = 0
    for n, (start, end, member) in enumerate(cuts):
        sentinel = _SENTINEL.format(n)
        if start < last or (delta if member is None else chunk[member]) == sentinel:
            return None  # overlapping cuts; or a value that is the sentinel proves nothing
        if member is None:
            place = expected
            for step in path[:-1]:
                place = place[step]
            place[path[-1]] = sentinel
        else:
            expected[member] = sentinel
        pieces += [text[last:start], sentinel + '"']
        last = end
    pieces.append(text[last:])
    try:
        if decode_json("".join(pieces)) != expected:
            return None
    except ValueError:
        return None
    ends = [start for start, _, _ in cuts[1:]] + [len(text)]
    return _Template(text[: cuts[0][0]], tuple(
        (member is None, text[end:next_start])
        for (_, end, member), next_start in zip(cuts, ends, strict=True)))


def _no_template(text: str) -> None:
    """`DeltaReader.read` before a template is learned: nothing matches."""


class DeltaReader:
    """Reads the delta string of a stream's chunks by a learned template (one reply's reader).

    Attributes:
        path: Where the delta string is in a chunk, e.g. `("choices", 0, "delta", "content")`.
        ignored: Top-level members the provider never reads whose strings may change from chunk
            to chunk.
        read: The delta of a chunk's text if it has the learned form, else None (then parse it,
            and if it is a plain delta, `learn(text, chunk)`). The learned template's own
            `match`: a read is one call.

    One reader serves one reply on one thread (`apply_deltas` makes one per kind and reply).
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

    def learn(self, text: str, chunk: dict[str, Any]) -> bool:
        """Learn the form of `text`, a plain delta whose JSON is `chunk`, when it is worth it.

        Call it only for a chunk whose handling depends on nothing but its delta (whatever
        string that is), and whose delta is a string: the template stands for every chunk of
        its form. `apply_deltas` calls it for the chunks a `DeltaKind.plain` says are such.
        Returns whether it did: from then on `read` reads chunks of this one's form, which are
        handled as this chunk with their own delta (`Delta.chunk`).
        """
        self._seen += 1
        hits = 0 if self._template is None else self._template.hits
        if (self._seen < _MIN_SEEN or self._failures >= _MAX_FAILURES
                or hits < _HITS_PER_RELEARN * self._learned):
            return False
        template = _learn(text, chunk, self.path, self.ignored)
        if template is None:
            self._failures += 1
            return False
        self._template = template
        self.read = template.match
        self._learned += 1
        return True
