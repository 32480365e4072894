"""The value classes' fast paths give exactly what the general ones give (issue 26).

Enum converters look members up in the value map before calling the enum; usage and cost fields
accept plain ints and floats before running the composed validators; `calculate_cost` builds its
result without `attrs.evolve`; `unchecked_constructor` builds a value without its validators
(issue 34). Each is compared here with the general path, on every value that takes a different
branch.
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import pytest
from _internals import (
    count,
    instance_of,
    not_bool,
    to_queue_mode,
    to_stop_reason,
    to_thinking_level,
    to_tool_execution_mode,
    unchecked_constructor,
    unchecked_context,
)
from attrs.validators import and_
from hypothesis import given
from hypothesis import strategies as st

from agentcore import (
    AssistantMessage,
    Context,
    Cost,
    DoneEvent,
    ErrorEvent,
    Model,
    ModelCost,
    QueueMode,
    StopReason,
    ThinkingLevel,
    Usage,
    UserMessage,
    calculate_cost,
)
from agentcore import ToolExecutionMode as Mode


class Weird(str):
    """A str subclass equal to a member's value."""


ENUM_VALUES: list[Any] = [
    "stop", "toolUse", "length", "error", "aborted", "off", "xhigh", "all", "one-at-a-time",
    "parallel", "sequential", "STOP", "", "x", None, 1, 0, 1.5, True, b"stop", ["stop"], {"a": 1},
    Weird("stop"), Weird("nope"), *StopReason, *ThinkingLevel, *QueueMode, *Mode,
]


def general(cls: type, value: Any) -> Any:
    try:
        return cls(value)
    except (ValueError, TypeError):
        return value


@pytest.mark.parametrize(("convert", "cls"), [
    (to_stop_reason, StopReason), (to_thinking_level, ThinkingLevel),
    (to_queue_mode, QueueMode), (to_tool_execution_mode, Mode)])
@pytest.mark.parametrize("value", ENUM_VALUES, ids=repr)
def test_enum_converter_is_the_enum_call_or_the_value(convert: Any, cls: type,
                                                      value: Any) -> None:
    got, expected = convert(value), general(cls, value)
    assert got is expected or (got == expected and type(got) is type(expected))


COMPOSED_COUNT = count
COMPOSED_MONEY = and_(not_bool, instance_of(int, float, expected="a number"))
NUMBERS: list[Any] = [0, 1, 10**30, -1, -(10**30), 0.0, -0.0, 1.5, -2.5, math.inf, -math.inf,
                      math.nan, True, False, None, "1", b"1", [1], 1j, Weird("1")]


class IntSub(int):
    """An int subclass: not `type(value) is int`, so the composed validators decide."""


NUMBERS += [IntSub(3), IntSub(-3)]


def outcome(make: Any) -> Any:
    try:
        return ("ok", make())
    except (TypeError, ValueError) as exc:
        return (type(exc), str(exc))


@pytest.mark.parametrize("field", ["input", "output", "cache_read", "cache_write",
                                   "total_tokens"])
@pytest.mark.parametrize("value", NUMBERS, ids=repr)
def test_usage_fields_check_as_the_composed_validator(field: str, value: Any) -> None:
    attribute = attrs.fields_dict(Usage)[field]
    expected = outcome(lambda: COMPOSED_COUNT(None, attribute, value))
    got = outcome(lambda: Usage(**{field: value}))
    assert got[0] == expected[0]
    if expected[0] != "ok":
        assert got[1] == expected[1]


@pytest.mark.parametrize("field", ["input", "output", "cache_read", "cache_write", "total"])
@pytest.mark.parametrize("value", NUMBERS, ids=repr)
def test_cost_fields_check_as_the_composed_validator(field: str, value: Any) -> None:
    attribute = attrs.fields_dict(Cost)[field]
    expected = outcome(lambda: COMPOSED_MONEY(None, attribute, value))
    got = outcome(lambda: Cost(**{field: value}))
    assert got[0] == expected[0]
    if expected[0] != "ok":
        assert got[1] == expected[1]


def reference_cost(model: Model, usage: Usage) -> Usage:
    """`calculate_cost` as it was: the parts, their sum, and `attrs.evolve`."""
    price = model.cost
    parts = (price.input * usage.input / 1e6, price.output * usage.output / 1e6,
             price.cache_read * usage.cache_read / 1e6, price.cache_write * usage.cache_write / 1e6)
    return attrs.evolve(usage, cost=Cost(*parts, total=sum(parts)))


prices = st.one_of(st.integers(0, 1000), st.floats(0, 1e6, allow_nan=False),
                   st.just(math.inf))
counts = st.integers(0, 10**12)


@given(price=st.tuples(prices, prices, prices, prices),
       tokens=st.tuples(counts, counts, counts, counts, counts))
def test_calculate_cost_is_evolve_with_the_priced_parts(price: Any, tokens: Any) -> None:
    model = Model("m", "M", "api", "p", "http://x", cost=ModelCost(*price))
    usage = Usage(*tokens, cost=Cost(total=3.0))
    got, expected = calculate_cost(model, usage), reference_cost(model, usage)
    assert type(got) is Usage
    assert attrs.astuple(got, recurse=False)[:5] == attrs.astuple(expected, recurse=False)[:5]
    assert repr(got.cost) == repr(expected.cost)  # same floats, NaN included


@attrs.frozen
class MyUsage(Usage):
    note: str = "kept"


def test_calculate_cost_keeps_a_subclass_and_its_fields() -> None:
    model = Model("m", "M", "api", "p", "http://x", cost=ModelCost(input=2.0))
    priced = calculate_cost(model, MyUsage(input=1_000_000, note="mine"))
    assert priced == MyUsage(input=1_000_000, cost=Cost(input=2.0, total=2.0), note="mine")


@pytest.mark.parametrize("value", ENUM_VALUES, ids=repr)
def test_terminal_events_convert_their_reason_as_the_enum_call(value: Any) -> None:
    message = AssistantMessage([], "a", "p", "m")
    for event in (DoneEvent, ErrorEvent):
        expected = outcome(lambda: StopReason(value))
        got = outcome(lambda event=event: event(value, message).reason)  # type: ignore[misc]
        assert got == expected
        if got[0] == "ok":
            assert type(got[1]) is StopReason


@attrs.frozen
class Grown:
    """A class with every kind of field an unchecked constructor copes with."""

    first: str = attrs.field(validator=instance_of(str))
    plain: int = attrs.field(default=3, validator=instance_of(int))
    made: list[int] = attrs.field(factory=list)
    _hidden: str = attrs.field(default="h")
    keyword: str = attrs.field(default="k", kw_only=True)


def values_of(value: Any) -> list[Any]:
    return [type(value), *(getattr(value, f.name) for f in attrs.fields(type(value)))]


def test_unchecked_constructor_sets_every_field_as_init_does() -> None:
    make = unchecked_constructor(Grown)
    for args, kwargs in [(("a",), {}), (("a", 4), {}), (("a", 4, [1]), {"keyword": "x"}),
                         (("a",), {"hidden": "y", "made": [2]})]:
        assert values_of(make(*args, **kwargs)) == values_of(Grown(*args, **kwargs))
    assert make("a").made is not make("a").made  # a factory is called per instance
    assert values_of(make(1)) == [Grown, 1, 3, [], "h", "k"]  # no validator ran
    with pytest.raises(TypeError):
        make("a", 4, [1], "h", "k")  # keyword-only stays keyword-only


def test_unchecked_context_is_the_validated_context() -> None:
    messages: list[Any] = [UserMessage("hi")]
    for args in [("s", messages, None), (None, [], [])]:
        assert values_of(unchecked_context(*args)) == values_of(Context(*args))


@pytest.mark.parametrize("field", [
    attrs.field(converter=str),
    attrs.field(init=False, default="x"),
    attrs.field(default=attrs.Factory(lambda self: "x", takes_self=True)),
])
def test_unchecked_constructor_refuses_what_it_would_build_differently(field) -> None:
    cls = attrs.make_class("Odd", {"value": field}, frozen=True)
    with pytest.raises(TypeError, match="build it with its __init__"):
        unchecked_constructor(cls)


def test_unchecked_constructor_refuses_a_post_init() -> None:
    @attrs.frozen
    class Post:
        value: str

        def __attrs_post_init__(self) -> None:
            pass

    with pytest.raises(TypeError, match="build it with its __init__"):
        unchecked_constructor(Post)
