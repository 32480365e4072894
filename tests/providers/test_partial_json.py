"""parse_partial_json (with jiter and without): the reference examples, complete JSON, never
raising on any prefix; parse_arguments: exact final arguments, or why they could not be read."""

from __future__ import annotations

import json

import pytest
from _internals import (
    _partial_json,
    parse_arguments,
    parse_partial_json,
    parse_partial_json_python,
    partial_parser,
)
from hypothesis import given, settings
from hypothesis import strategies as st

HAS_JITER = _partial_json._jiter() is not None
PARSERS = [
    pytest.param(parse_partial_json, id="jiter",
                 marks=pytest.mark.skipif(not HAS_JITER, reason="jiter is not installed")),
    pytest.param(parse_partial_json_python, id="python"),
]
parsers = pytest.mark.parametrize("parse", PARSERS)


@pytest.mark.parametrize(
    ("text", "expected"),
    [  # pi-ai.md §3.2, verbatim
        ('{"a": "hel', {"a": "hel"}),
        ('{"a": 1, "b', {"a": 1}),
        ('{"a":', {}),
        ('{"a": [1, 2', {"a": [1, 2]}),
        ('{"path":"x","content":"line1\\nli', {"path": "x", "content": "line1\nli"}),
    ],
)
@parsers
def test_partial_json_reference_examples(parse, text: str, expected: dict) -> None:
    assert parse(text) == expected


@pytest.mark.parametrize("text", ["", " ", "\n\t  "])
@parsers
def test_partial_json_empty_or_blank_gives_empty_dict(parse, text: str) -> None:
    assert parse(text) == {}


@pytest.mark.parametrize(
    ("text", "expected"),
    [  # the argument deltas of pi-ai.md §5.6 (b), accumulated
        ('{"ci', {}),
        ('{"city": "P', {"city": "P"}),
        ('{"city": "Paris"}', {"city": "Paris"}),
        ('{"city":', {}),
        ('{"city":"Paris"', {"city": "Paris"}),
    ],
)
@parsers
def test_partial_json_tool_call_deltas(parse, text: str, expected: dict) -> None:
    assert parse(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": {"b": [1, {"c": "d', {"a": {"b": [1, {"c": "d"}]}}),
        ('{"a": [1, 2,', {"a": [1, 2]}),
        ('{"a": "x",', {"a": "x"}),
        ('{"a": "x", ', {"a": "x"}),
        ('{"a": tr', {}),
        ('{"a": true', {"a": True}),
        ('{"a": null, "b": fal', {"a": None}),
        ('{"a": "\\u00e', {"a": ""}),
        ('{"a": "x\\', {"a": "x"}),
        ('{"a": "say \\"hi', {"a": 'say "hi'}),
        ('{"a": "}{]["', {"a": "}{]["}),
        ('{"a": 12', {"a": 12}),
        ('{"a": -', {}),
    ],
)
@parsers
def test_partial_json_closes_and_trims(parse, text: str, expected: dict) -> None:
    assert parse(text) == expected


@pytest.mark.parametrize(
    "value",
    [{}, {"a": 1}, {"nested": {"list": [1, 2.5, None, True, "s"]}}, {"ü": "日本語 🙂"}],
)
@parsers
def test_partial_json_complete_json_round_trips(parse, value: dict) -> None:
    assert parse(json.dumps(value)) == value
    assert parse(json.dumps(value, separators=(",", ":"), ensure_ascii=False)) == value


@pytest.mark.parametrize("text", ["[1, 2]", "[1, 2", '"str"', "42", "true", "null", "[{}]"])
@parsers
def test_partial_json_non_object_top_level_gives_empty_dict(parse, text: str) -> None:
    assert parse(text) == {}


@pytest.mark.parametrize("text", ["}", "]{", "not json", "{'a': 1}", "{,}"])
@parsers
def test_partial_json_garbage_gives_empty_dict(parse, text: str) -> None:
    assert parse(text) == {}


@parsers
def test_partial_json_text_after_a_complete_object_gives_a_dict(parse) -> None:
    # no prefix of JSON looks like this; the fallback refuses it, jiter reads the object
    assert parse('{"a": 1}}') in ({}, {"a": 1})


@parsers
def test_partial_json_raw_control_characters_inside_strings(parse) -> None:
    assert parse('{"a": "line1\nline2\ttab"}') == {"a": "line1\nline2\ttab"}
    assert parse('{"a": "bell\x07"}') == {"a": "bell\x07"}
    assert parse('{"path":"x","content":"line1\nli') == {
        "path": "x", "content": "line1\nli",
    }
    assert parse('{"a": "x\x00y') == {"a": "x\x00y"}


@parsers
def test_partial_json_whitespace_between_tokens_is_fine(parse) -> None:
    assert parse('\n{\n  "a" : 1 ,\n  "b" : [ 2 ,\n') == {"a": 1, "b": [2]}


@parsers
def test_partial_json_deep_nesting_does_not_raise(parse) -> None:
    assert isinstance(parse('{"a":' * 5000), dict)
    assert isinstance(parse("[" * 100_000), dict)


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)
json_objects = st.dictionaries(st.text(max_size=8), json_values, max_size=5)


@pytest.mark.slow  # a stress test: over a second on an idle 2-core machine
@parsers
@settings(max_examples=50, deadline=None)  # one example parses every prefix: hundreds
@given(value=json_objects, compact=st.booleans())
def test_partial_json_every_prefix_parses_to_a_dict(parse, value: dict, compact: bool) -> None:
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False) if compact else json.dumps(
        value
    )
    for end in range(len(text)):
        assert isinstance(parse(text[:end]), dict)
    assert parse(text) == value


@parsers
@given(text=st.text())
def test_partial_json_never_raises_on_any_text(parse, text: str) -> None:
    assert isinstance(parse(text), dict)


@parsers
@given(text=st.text(alphabet='{}[]":,\\ tfnrule0123456789.-+eEa\n'))
def test_partial_json_never_raises_on_json_like_text(parse, text: str) -> None:
    assert isinstance(parse(text), dict)


@parsers
@pytest.mark.parametrize("text", ['{"a": "\\u', '{"a": "\\u0', '{"a": "\\u00e9', '{"a": "\\ud83d',
                                  '{"a": "\\ud83d\\u', '{"a": "\\ud83d\\ude0'])
def test_partial_json_cut_inside_a_unicode_escape_gives_a_dict(parse, text: str) -> None:
    assert isinstance(parse(text), dict)


@parsers
def test_partial_json_escaped_backslash_before_u_is_kept(parse) -> None:
    assert parse('{"a": "x\\\\u00') == {"a": "x\\u00"}


@parsers
def test_partial_json_long_text_cut_anywhere(parse) -> None:
    value = {"path": "a.py", "content": 'def f():\n    return "\\u00e9 \\\\ done"\n' * 200,
             "mode": [1, 2.5, None, True, {"k": "v"}]}
    text = json.dumps(value)
    for end in range(0, len(text), 97):
        partial = parse(text[:end])
        assert isinstance(partial, dict)
        if "content" in partial and end < len(text) - 60:
            assert value["content"].startswith(partial["content"][:-1])
    assert parse(text) == value


def test_partial_json_parser_is_jiter_when_installed(monkeypatch) -> None:
    assert partial_parser() == ("jiter" if HAS_JITER else "python")
    monkeypatch.setattr(_partial_json, "_jiter", lambda: None)
    assert partial_parser() == "python"
    assert parse_partial_json('{"a": "x\\u00') == {"a": "x"}


@pytest.mark.parametrize(
    "value", [{}, {"a": 1}, {"s": "日本語 🙂\n", "n": [1, 2.5e300, None]}, {"a": "\ud83d"}],
)
def test_arguments_complete_json_is_read_exactly(value: dict) -> None:
    assert parse_arguments(json.dumps(value)) == (value, None)
    assert parse_arguments(json.dumps(value, ensure_ascii=False)) == (value, None)


@pytest.mark.parametrize("text", ["", "  ", "\n"])
def test_arguments_empty_text_is_no_arguments_and_no_error(text: str) -> None:
    assert parse_arguments(text) == ({}, None)


def test_arguments_raw_control_characters_are_accepted() -> None:
    assert parse_arguments('{"a": "line1\nline2\ttab"}') == ({"a": "line1\nline2\ttab"}, None)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ('{"a": 1', "the arguments are not valid JSON (Expecting ',' delimiter: line 1 column 8 "
                    "(char 7)): '{\"a\": 1'"),
        ("{'a': 1}", "the arguments are not valid JSON (Expecting property name enclosed in "
                     "double quotes: line 1 column 2 (char 1)): \"{'a': 1}\""),
        ('{"a": 1}}', "the arguments are not valid JSON (Extra data: line 1 column 9 (char 8)): "
                      "'{\"a\": 1}}'"),
        ("not json", "the arguments are not valid JSON (Expecting value: line 1 column 1 "
                     "(char 0)): 'not json'"),
        ("[1, 2]", "the arguments are a JSON array, not an object: '[1, 2]'"),
        ('"a"', "the arguments are a JSON string, not an object: '\"a\"'"),
        ("42", "the arguments are a JSON number, not an object: '42'"),
        ("true", "the arguments are a JSON boolean, not an object: 'true'"),
        ("null", "the arguments are a JSON null, not an object: 'null'"),
    ],
)
def test_arguments_not_an_object_say_why(text: str, error: str) -> None:
    assert parse_arguments(text) == ({}, error)


def test_arguments_nested_too_deeply_say_so() -> None:
    arguments, error = parse_arguments('{"a":' * 100_000 + "1" + "}" * 100_000)
    assert arguments == {}
    assert error is not None
    assert error.startswith("the arguments are nested too deeply to read: '{\"a\":{\"a\":")
    assert error.endswith("(600001 characters)")
    assert len(error) < 300  # an excerpt, not the whole text


def test_arguments_error_excerpt_keeps_both_ends_of_long_text() -> None:
    text = '{"content": "' + "x" * 10_000 + '" oops}'
    _, error = parse_arguments(text)
    assert error is not None
    assert error.startswith("the arguments are not valid JSON (Expecting ',' delimiter: line 1 "
                            "column 10016 (char 10015)): '{\"content\": \"xxx")
    assert "oops}'" in error
    assert len(error) < 300
