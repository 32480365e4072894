"""parse_partial_json: the reference examples, complete JSON, and never raising on any prefix."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentcore.providers._partial_json import parse_partial_json


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
def test_partial_json_reference_examples(text: str, expected: dict) -> None:
    assert parse_partial_json(text) == expected


@pytest.mark.parametrize("text", ["", " ", "\n\t  "])
def test_partial_json_empty_or_blank_gives_empty_dict(text: str) -> None:
    assert parse_partial_json(text) == {}


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
def test_partial_json_tool_call_deltas(text: str, expected: dict) -> None:
    assert parse_partial_json(text) == expected


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
def test_partial_json_closes_and_trims(text: str, expected: dict) -> None:
    assert parse_partial_json(text) == expected


@pytest.mark.parametrize(
    "value",
    [{}, {"a": 1}, {"nested": {"list": [1, 2.5, None, True, "s"]}}, {"ü": "日本語 🙂"}],
)
def test_partial_json_complete_json_round_trips(value: dict) -> None:
    assert parse_partial_json(json.dumps(value)) == value
    assert parse_partial_json(json.dumps(value, separators=(",", ":"), ensure_ascii=False)) == value


@pytest.mark.parametrize("text", ["[1, 2]", "[1, 2", '"str"', "42", "true", "null", "[{}]"])
def test_partial_json_non_object_top_level_gives_empty_dict(text: str) -> None:
    assert parse_partial_json(text) == {}


@pytest.mark.parametrize("text", ["}", "]{", "not json", '{"a": 1}}', "{'a': 1}", "{,}"])
def test_partial_json_garbage_gives_empty_dict(text: str) -> None:
    assert parse_partial_json(text) == {}


def test_partial_json_raw_control_characters_inside_strings() -> None:
    assert parse_partial_json('{"a": "line1\nline2\ttab"}') == {"a": "line1\nline2\ttab"}
    assert parse_partial_json('{"a": "bell\x07"}') == {"a": "bell\x07"}
    assert parse_partial_json('{"path":"x","content":"line1\nli') == {
        "path": "x", "content": "line1\nli",
    }
    assert parse_partial_json('{"a": "x\x00y') == {"a": "x\x00y"}


def test_partial_json_whitespace_between_tokens_is_fine() -> None:
    assert parse_partial_json('\n{\n  "a" : 1 ,\n  "b" : [ 2 ,\n') == {"a": 1, "b": [2]}


def test_partial_json_deep_nesting_does_not_raise() -> None:
    assert isinstance(parse_partial_json('{"a":' * 5000), dict)
    assert isinstance(parse_partial_json("[" * 100_000), dict)


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


@settings(deadline=None)  # one example parses every prefix: hundreds of parses
@given(value=json_objects, compact=st.booleans())
def test_partial_json_every_prefix_parses_to_a_dict(value: dict, compact: bool) -> None:
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False) if compact else json.dumps(
        value
    )
    for end in range(len(text)):
        assert isinstance(parse_partial_json(text[:end]), dict)
    assert parse_partial_json(text) == value


@given(text=st.text())
def test_partial_json_never_raises_on_any_text(text: str) -> None:
    assert isinstance(parse_partial_json(text), dict)


@given(text=st.text(alphabet='{}[]":,\\ tfnrule0123456789.-+eEa\n'))
def test_partial_json_never_raises_on_json_like_text(text: str) -> None:
    assert isinstance(parse_partial_json(text), dict)
