"""Serialization is total (API §10): `json_ready`, and `to_json` of whatever tools returned."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
from collections import OrderedDict
from typing import Any

import attrs
import pytest

from agentcore import StreamOptions
from agentcore._core import json_ready
from agentcore._core._json_ready import MAX_DEPTH


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
