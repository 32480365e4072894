"""Serialization is total (API §10): `json_ready`, and `to_json` of whatever tools returned."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import subprocess
import sys
from collections import OrderedDict
from typing import Any

import attrs
import pytest
from _internals import MAX_DEPTH, json_ready
from hypothesis import given, settings
from hypothesis import strategies as st

from agentcore import (
    AgentEndEvent,
    AgentEvent,
    AgentMessage,
    AgentToolResult,
    AssistantMessage,
    Cost,
    StreamOptions,
    TextContent,
    ToolCall,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolResultMessage,
    Usage,
    from_json,
    to_dict,
    to_json,
)


class Color(enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 2


@attrs.frozen
class Point:
    x: int
    y: int = 0
    secret: str = attrs.field(default="hunter2", repr=False)


@dataclasses.dataclass
class Box:
    items: tuple[int, ...]
    label: bytes
    hidden: str = dataclasses.field(default="hunter2", repr=False)


class Opaque:
    def __repr__(self) -> str:
        return "Opaque()"


class BrokenRepr:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


class Text(str):
    pass


WHEN = datetime.datetime(2024, 5, 6, 7, 8, 9, tzinfo=datetime.timezone.utc)

CONVERSIONS: list[tuple[Any, Any]] = [
    ({3, 1, 2}, [1, 2, 3]),
    (frozenset({"b", "a"}), ["a", "b"]),
    ((1, (2, 3)), [1, [2, 3]]),
    (WHEN, "2024-05-06T07:08:09+00:00"),
    (datetime.date(2024, 5, 6), "2024-05-06"),
    (datetime.time(7, 8), "07:08:00"),
    (b"hi\xff", "aGn/"),
    (bytearray(b"hi"), "aGk="),
    (float("nan"), None),
    (float("inf"), None),
    ([float("-inf"), 1.5], [None, 1.5]),
    (Color.RED, "red"),
    (Level.HIGH, 2),
    (Text("t"), "t"),
    (Point(1), {"x": 1, "y": 0}),
    (Box((1, 2), b"hi"), {"items": [1, 2], "label": "aGk="}),
    (Opaque(), "Opaque()"),
    (BrokenRepr(), "<BrokenRepr object>"),
    (Point, repr(Point)),
    (OrderedDict(a={1}), {"a": [1]}),
    ({1: "a", 2.5: "b", None: "d", Color.RED: "e", (1, 2): "f"},
     {"1": "a", "2.5": "b", "null": "d", "red": "e", "(1, 2)": "f"}),
    ({False: 0, float("nan"): 1}, {"false": 0, "NaN": 1}),
    ({"k": [Point(2, 3), {Level.HIGH}]}, {"k": [{"x": 2, "y": 3}, [2]]}),
]


def _type_name(value: object) -> str:
    return type(value).__name__


@pytest.mark.parametrize(("value", "expected"), CONVERSIONS, ids=_type_name)
def test_json_ready_converts_to_json_values(value: Any, expected: Any) -> None:
    ready = json_ready(value)
    assert ready == expected
    assert type(ready) is type(expected)
    json.dumps(ready, allow_nan=False)


def test_json_ready_keeps_the_order_of_an_unorderable_set() -> None:
    value = {1, "a"}
    assert json_ready(value) == list(value)


@pytest.mark.parametrize(
    "value",
    [None, True, 0, -3, 1.5, "", "héllo → 世界", [], {}, {"a": [1, {"b": None}], "c": 2.5}],
    ids=_type_name,
)
def test_json_ready_copies_plain_json_unchanged(value: Any) -> None:
    ready = json_ready(value)
    assert ready == value
    assert json.dumps(ready) == json.dumps(value)
    if isinstance(value, (list, dict)):
        assert ready is not value  # a copy: the caller's value is never shared


def test_json_ready_leaves_out_fields_the_repr_hides() -> None:
    options = StreamOptions(api_key="sk-very-secret", headers={"Authorization": "Bearer x"})
    text = json.dumps(json_ready({"options": options, "point": Point(1)}))
    assert "sk-very-secret" not in text
    assert "Bearer x" not in text
    assert "hunter2" not in text


def test_json_ready_writes_a_cycle_as_its_repr() -> None:
    loop: list[Any] = [1]
    loop.append(loop)
    loop.append(loop)  # two references: no exponential walk either
    assert json_ready(loop) == [1, repr(loop), repr(loop)]
    mapping: dict[str, Any] = {"n": 1}
    mapping["self"] = mapping
    assert json_ready(mapping) == {"n": 1, "self": repr(mapping)}


def test_json_ready_writes_a_cycle_through_objects_as_its_repr() -> None:
    @attrs.define
    class Node:
        child: Any = None

    node = Node()
    node.child = [node]
    ready = json_ready(node)
    assert ready == {"child": [repr(node)]}


def test_json_ready_cuts_very_deep_values_at_the_depth_limit() -> None:
    deep: list[Any] = []
    for _ in range(5000):
        deep = [deep]
    ready = json_ready(deep)
    depth = 0
    while isinstance(ready, list):
        ready, depth = ready[0], depth + 1
    assert depth == MAX_DEPTH
    assert isinstance(ready, str)


# --- to_json is total and strict --------------------------------------------------------------


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"non-standard JSON constant {name}")


def _strict_loads(text: str) -> Any:
    """Parse as RFC 8259 JSON: valid UTF-8, no NaN/Infinity."""
    return json.loads(text.encode("utf-8"), parse_constant=_refuse_constant)


ODD_DETAILS = {
    "set": {3, 1, 2},
    "when": WHEN,
    "raw": b"hi",
    "object": Opaque(),
    "nan": float("nan"),
    "tuple": (1, Color.RED),
    7: Point(1, 2),
}
ODD_READY = {
    "set": [1, 2, 3],
    "when": "2024-05-06T07:08:09+00:00",
    "raw": "aGk=",
    "object": "Opaque()",
    "nan": None,
    "tuple": [1, "red"],
    "7": {"x": 1, "y": 2},
}


def _call(arguments: dict[str, Any]) -> AssistantMessage:
    return AssistantMessage([ToolCall("c1", "t", arguments)], "api", "p", "m", timestamp=1)


@pytest.mark.parametrize(
    ("value", "path"),
    [
        (ToolResultMessage("c1", "t", details=ODD_DETAILS, timestamp=1), ["details"]),
        (AgentToolResult(details=ODD_DETAILS), ["details"]),
        (ToolExecutionEndEvent("c1", "t", AgentToolResult(details=ODD_DETAILS), False),
         ["result", "details"]),
        (ToolExecutionStartEvent("c1", "t", ODD_DETAILS), ["args"]),
        (_call(ODD_DETAILS), ["content", 0, "arguments"]),
        (AgentEndEvent([ToolResultMessage("c1", "t", details=ODD_DETAILS, timestamp=1)]),
         ["messages", 0, "details"]),
    ],
    ids=_type_name,
)
def test_to_json_writes_what_a_low_level_tool_returned(value: Any, path: list[Any]) -> None:
    data = _strict_loads(to_json(value))
    for step in path:
        data = data[step]
    assert data == ODD_READY
    assert to_dict(value) == json.loads(to_json(value))


def test_to_json_keeps_the_wire_form_of_agentcore_values_in_details() -> None:
    message = ToolResultMessage("c1", "t", details={"block": TextContent("x")}, timestamp=1)
    assert to_dict(message)["details"] == {"block": {"type": "text", "text": "x"}}


def test_to_json_writes_non_finite_floats_as_null() -> None:
    cost = Cost(float("nan"), float("inf"), 0, 0, float("-inf"))
    reply = AssistantMessage([], "api", "p", "m", Usage(cost=cost), timestamp=1)
    text = to_json(AgentEndEvent([reply]))
    assert _strict_loads(text)["messages"][0]["usage"]["cost"] == {
        "input": None, "output": None, "cacheRead": 0, "cacheWrite": 0, "total": None,
    }
    details = ToolResultMessage("c1", "t", details=[float("nan"), 1.5], timestamp=1)
    assert _strict_loads(to_json(details))["details"] == [None, 1.5]


@pytest.mark.parametrize("text", ["\ud83d", "a\udc00b", "\udfff\ud800", "x\ud83d😀"])
def test_to_json_escapes_lone_surrogates(text: str) -> None:
    message = ToolResultMessage("c1", "t", [TextContent(text)], details={text: [text]},
                                timestamp=1)
    written = to_json(message)
    written.encode("utf-8")
    assert "\\ud" in written or "\\udc" in written
    assert from_json(AgentMessage, written) == message
    assert from_json(AgentMessage, written.encode("utf-8")) == message


def test_to_json_keeps_other_text_as_is() -> None:
    text = "héllo → 世界 😀 \u2028 \x00"
    assert to_json(TextContent(text)) == json.dumps(
        {"type": "text", "text": text}, separators=(",", ":"), ensure_ascii=False
    )


def test_to_json_writes_cycles_and_deep_nesting_in_details() -> None:
    loop: list[Any] = [1]
    loop.append(loop)
    deep: list[Any] = []
    for _ in range(5000):
        deep = [deep]
    for details in (loop, deep, {"r": AgentToolResult(details=loop)}):
        message = ToolResultMessage("c1", "t", details=details, timestamp=1)
        assert _strict_loads(to_json(message))["toolCallId"] == "c1"


@pytest.mark.slow
def test_json_ready_does_not_import_cattrs() -> None:
    code = (
        f"import sys, agentcore; from {json_ready.__module__} import json_ready; "
        "json_ready({1}); "
        "print(sorted(m for m in ('cattrs', 'base64', 'dataclasses') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert out.stdout.strip() == "[]", out.stderr


surrogate_text = st.text(
    st.characters() | st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF,
                                    exclude_categories=()),
    max_size=8,
)
scalars = (
    st.none() | st.booleans() | st.integers() | st.floats() | surrogate_text
    | st.binary(max_size=8) | st.datetimes() | st.dates() | st.sampled_from(Color)
    | st.builds(Opaque)
)
hashables = st.none() | st.integers() | surrogate_text | st.floats() | st.sampled_from(Color)
odd_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.tuples(inner, inner)
        | st.frozensets(hashables, max_size=3)
        | st.sets(hashables, max_size=3)
        | st.dictionaries(hashables, inner, max_size=3)
        | st.builds(Point, st.integers(), st.integers())
    ),
    max_leaves=12,
)


@settings(deadline=None, database=None, max_examples=150)
@given(odd_values, surrogate_text)
def test_to_json_of_any_details_is_strict_json(details: Any, text: str) -> None:
    message = ToolResultMessage("c1", text, [TextContent(text)], details=details, timestamp=1)
    written = to_json(message)
    data = _strict_loads(written)
    assert data.get("details") == _strict_loads(json.dumps(json_ready(details), allow_nan=False))
    assert to_json(from_json(AgentMessage, written)) == written  # API §17


@settings(deadline=None, database=None, max_examples=100)
@given(st.lists(odd_values, max_size=3), surrogate_text)
def test_to_json_of_any_agent_end_is_strict_json(values: list[Any], text: str) -> None:
    messages = [
        ToolResultMessage("c1", "t", [TextContent(text)], details=value, timestamp=1)
        for value in values
    ]
    event = AgentEndEvent([*messages, _call({"a": values, text: text})])
    written = to_json(event)
    data = _strict_loads(written)
    assert len(data["messages"]) == len(values) + 1
    assert isinstance(from_json(AgentEvent, written), AgentEndEvent)
    assert to_json(from_json(AgentEvent, written)) == written  # API §17


def test_non_finite_cost_saves_and_loads_back_as_nan() -> None:
    import math

    import agentcore as ac

    message = ac.AssistantMessage([], "a", "p", "m", usage=ac.Usage(cost=ac.Cost(total=math.inf)))
    text = ac.to_json(message)
    assert '"total":null' in text
    back = ac.from_json(ac.AssistantMessage, text)
    assert math.isnan(back.usage.cost.total)
