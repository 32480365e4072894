"""The per-request path's shortcuts give exactly the general answers (issue 26)."""

from __future__ import annotations

import re

import pytest
from _internals import _header_problem, _registry

import agentcore as ac
from agentcore.providers import openai_completions

_BAD_HEADER_CHAR = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


def general_header_problem(value: str) -> str | None:
    """The checks in order, none skipped: what `_header_problem` answered before its shortcut."""
    if "\n" in value or "\r" in value:
        return "it contains a line break (often a trailing newline copied with the key)"
    if _BAD_HEADER_CHAR.search(value):
        return "it contains a control character"
    if value[:1].isspace():
        return "it starts with whitespace"
    if not value.isascii() and any(ord(c) > 0xFF for c in value):
        return "it contains a character that is not Latin-1"
    return None


CHARS = [chr(i) for i in range(0x180)] + ["\u2028", "\u3000", "\ufeff", "\x85", "日", "\U0001f642"]


@pytest.mark.parametrize("first", CHARS, ids=lambda c: f"U+{ord(c):04X}")
def test_header_problem_is_the_general_check_for_any_first_two_characters(first: str) -> None:
    for value in [first, first + "x", *(first + c for c in CHARS), *(c + first for c in CHARS),
                  f"Bearer {first}", f"sk-{first}-key"]:
        assert _header_problem(value) == general_header_problem(value), repr(value)


def test_builtin_providers_are_imported_once_and_registered_ones_still_win() -> None:
    model = ac.Model("m", "m", "openai-completions", "openai", "http://x")
    assert _registry._lookup(model) is openai_completions.stream_openai_completions
    assert _registry._imported.cache_info().currsize >= 1

    def mine(*_: object) -> ac.AssistantMessageEventStream:
        raise AssertionError("not called")

    ac.register_provider("openai-completions", mine)
    try:
        assert _registry._lookup(model) is mine
        assert not _registry.speaks_http("openai-completions")
    finally:
        ac.unregister_provider("openai-completions")
    assert _registry._lookup(model) is openai_completions.stream_openai_completions
