"""A wire API's JSON events, parsed once by the framework, its plain deltas read by template.

Most chunks of a long reply only add text: `{"id":"chatcmpl-1",...,"delta":{"content":"Hi"},
...}`, the same but for one string, chunk after chunk. A wire API says so as data,
`WireApi.deltas`: per kind of plain delta (`DeltaKind`), where the delta string sits, which
top-level members are padding the handler never reads, and a predicate on a parsed chunk that
says when it is a plain delta of that kind. `apply_deltas` sits between the body's items and
the handler and applies it: each Server-Sent Event is first offered to the templates learned
so far (`DeltaReader`); a match is handed over as a `Delta`; any other event's data is parsed
once, learned from when a kind's `plain` says it is a plain delta, and handed over as a
`Chunk`. So a handler has one parse path, and the rule for learning is each kind's predicate,
kept in one place beside the handler it describes, not prose each wire module keeps by hand.

The handler's part of the bargain: it handles a `Delta` exactly as it would handle the chunk
with that delta string (its kind's own code, reading anything else from the `Delta`'s chunk,
the one its template was learned from). The tests hold every handler to that, by comparing it on
every fixture and on generated streams with and without its kinds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import attrs

from ._delta_reader import DeltaReader, Path
from ._sse import ServerSentEvent
from ._text import decode_json

__all__ = ["Chunk", "Delta", "DeltaKind", "Deltas", "apply_deltas"]


@attrs.frozen
class DeltaKind:
    """One kind of plain delta a wire API streams: where its string is, and which chunks have one.

    Attributes:
        name: What `Delta.kind` says for a delta of this kind (`"text"`, `"arguments"`).
        path: Where the delta string is in a chunk, e.g. `("choices", 0, "delta", "content")`.
        plain: Whether a parsed chunk (a dict) is a plain delta of this kind: the handler
            handles it, and every chunk that differs from it only in the string at `path` and
            in the `ignored` strings, by this kind's own code, which reads nothing but that
            string and what those chunks have in common (no error, no usage, no finish reason,
            nothing that opens something new). True only for a string at `path`; and for a
            chunk worth learning, one whose form is likely to come again. Never raises.
        ignored: Top-level members the handler never reads whose strings may change from chunk
            to chunk (OpenAI's `obfuscation` padding).
    """

    name: str
    path: Path
    plain: Callable[[dict[str, Any]], bool]
    ignored: tuple[str, ...] = ()


@attrs.frozen
class Deltas:
    """How the framework reads a wire API whose events carry JSON (`WireApi.deltas`).

    Attributes:
        kinds: The kinds of plain delta, tried in this order (a chunk is a plain delta of at
            most one kind). Without any, every event is parsed: the handler reads the same.
        end: The data of the event that ends the reply (OpenAI's `[DONE]`): the handler's items
            stop there, and what the body still holds is drained, never parsed. None: every
            event's data is JSON.
    """

    kinds: tuple[DeltaKind, ...]
    end: str | None = None


Delta = tuple[str, str, dict[str, Any]]
"""A plain delta read by template, `(kind, text, chunk)`: handle it as `chunk` with `text` at
its kind's path.

`kind` is the `DeltaKind.name`; `text` the delta string, as parsing the event's data would give
it; `chunk` the parsed chunk the template was learned from, handed over as a `Chunk` before any
`Delta` of its form: the same as this event's JSON but for the strings at the kind's path and in
its ignored members (read it, never change it).

A plain tuple, the only one among a handler's items (a `Chunk` is a named tuple; the decoder's
other items, `UnframedLines`, are no tuples), so a handler tells it by `item.__class__ is
tuple` and unpacks it. One is made for every
text delta: a plain tuple takes one instruction, where a named tuple's constructor costs about as
much as the rest of the framework's hot path (the template's match aside).
"""


class Chunk(NamedTuple):
    """An event whose data was parsed: its name (None when unnamed) and its data's JSON.

    Attributes:
        event: The event's name, for the data that does not say its own kind.
        data: What `decode_json` gives for the data: a dict, or any other JSON value.
    """

    event: str | None
    data: Any


_new = tuple.__new__  # a `Chunk` without the Python-level `__new__` of a named tuple
_Learned = tuple[Callable[[str], "str | None"], str, dict[str, Any]]
"""A learned template's `read`, its kind's name and the chunk it was learned from."""


def _unread(data: str) -> None:
    """Read nothing: no template has matched yet."""


_NO_TEMPLATE: _Learned = (_unread, "", {})


def apply_deltas(items: Iterator[Any], deltas: Deltas) -> Iterator[Any]:
    """The items a handler of JSON events reads: `Delta`s, `Chunk`s, and the rest as they came.

    `items` are a body's (`iter_events`). A `ServerSentEvent` becomes a `Delta` when a learned
    template of one of `deltas.kinds` reads it, else a `Chunk` of its data parsed with
    `decode_json` (which raises for data that is no JSON, with the parser's own error: a data
    string that no template reads, a bad string say, always comes this way). An event without
    data is dropped (Server-Sent Events dispatch none), and one with the `deltas.end` data
    ends the items. Anything else, `UnframedLines` say, is handed over as it is.
    """
    kinds = deltas.kinds
    readers = [DeltaReader(kind.path, kind.ignored) for kind in kinds]
    learned: list[_Learned | None] = [None] * len(kinds)
    templates: tuple[_Learned, ...] = ()  # the kinds' latest templates, in the kinds' order
    read, name, chunk = _NO_TEMPLATE  # the template that read the last delta, tried first
    end = deltas.end
    for item in items:
        if item.__class__ is not ServerSentEvent:
            yield item
            continue
        data = item.data
        text = read(data)
        if text is not None:  # the hot path: one match per plain delta
            yield (name, text, chunk)
            continue
        for template in templates:
            text = template[0](data)
            if text is not None:
                read, name, chunk = template
                yield (name, text, chunk)
                break
        else:
            if not data:
                continue
            if data == end:
                return
            parsed = decode_json(data)
            if parsed.__class__ is dict:
                for n, kind in enumerate(kinds):
                    if kind.plain(parsed):
                        if readers[n].learn(data, parsed):
                            template = (readers[n].read, kind.name, parsed)
                            learned[n] = template
                            templates = tuple(entry for entry in learned if entry is not None)
                            read, name, chunk = template  # its kind is likely to come next
                        break
            yield _new(Chunk, (item.event, parsed))
