"""Google-style docstrings, read for tool descriptions: the summary and the `Args:` entries."""

from __future__ import annotations

import inspect
import re

import attrs

__all__ = ["Docstring", "humanise", "normalise", "parse_docstring"]


@attrs.frozen
class Docstring:
    """A docstring's summary line(s) and its parameter descriptions by name."""

    summary: str
    params: dict[str, str]


_PARAM_SECTIONS = frozenset({
    "args", "arguments", "parameters", "params", "keyword args", "keyword arguments",
    "other parameters", "attributes",
})
_OTHER_SECTIONS = frozenset({
    "returns", "return", "yields", "yield", "raises", "raise", "except", "exceptions",
    "example", "examples", "note", "notes", "warning", "warnings", "warns", "see also",
    "todo", "references", "methods",
})
_HEADER = re.compile(r"([A-Za-z][A-Za-z ]*?)\s*:\s*")
_ENTRY = re.compile(r"\*{0,2}(\w+)\s*(?:\(.*?\))?\s*:(.*)")


def normalise(text: str) -> str:
    """`text` with every run of whitespace made one space."""
    return " ".join(text.split())


def humanise(name: str) -> str:
    """A readable description from a function name: `get_weather` gives "Get weather"."""
    text = normalise(name.replace("_", " "))
    return text[:1].upper() + text[1:] if text else name


def parse_docstring(doc: str | None) -> Docstring:
    """Split a Google-style docstring into its summary and its `Args:` descriptions."""
    summary: list[str] = []
    entries: list[str] = []
    section: str | None = None
    for line in inspect.cleandoc(doc or "").splitlines():
        header = _HEADER.fullmatch(line)  # section headers are not indented
        if header and header[1].lower() in _PARAM_SECTIONS | _OTHER_SECTIONS:
            section = header[1].lower()
        elif section is None:
            summary.append(line)
        elif section in _PARAM_SECTIONS:
            entries.append(line)
    return Docstring(normalise(" ".join(summary)), _parse_entries(entries))


def _parse_entries(lines: list[str]) -> dict[str, str]:
    """`name (type): text` entries; deeper-indented lines continue the entry above."""
    texts: dict[str, list[str]] = {}
    indent: int | None = None
    current: list[str] | None = None
    for line in lines:
        if not line.strip():
            continue
        depth = len(line) - len(line.lstrip())
        indent = depth if indent is None else indent
        entry = _ENTRY.fullmatch(line.strip()) if depth <= indent else None
        if entry:
            current = texts[entry[1]] = [entry[2]]
        elif current is not None:
            current.append(line)
    return {name: normalise(" ".join(text)) for name, text in texts.items()}
