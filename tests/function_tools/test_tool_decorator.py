"""`@tool`: schemas from type hints, docstrings, injection, conversions, errors, a full run."""

from __future__ import annotations

import datetime
import enum
import inspect
import json
import re
import threading
import typing
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal, NewType, Optional, Union

import attrs
import pytest
from _internals import NO_OUTPUT, FunctionTool
from jsonschema import Draft202012Validator

import agentcore as ac
from agentcore import (
    AbortController,
    AbortSignal,
    AgentTool,
    AgentToolResult,
    ImageContent,
    TextContent,
    ToolCall,
    ToolExecutionMode,
    tool,
    validate_tool_arguments,
)
from agentcore.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call


class Color(str, enum.Enum):
    RED = "red"
    BLUE = "blue"


class Priority(enum.Enum):
    LOW = 1
    HIGH = 2


class Mixed(enum.Enum):
    NAMED = "named"
    NUMBERED = 2


class Shape(enum.Enum):
    SQUARE = (1, 1)


@attrs.frozen
class Point:
    x: int
    y: int = 0


@attrs.frozen
class Place:
    """A named place on the map.

    Attributes:
        name: What the place is
            called.
        point: Where it is.
    """

    name: str
    point: Point
    tags: list[Color] = attrs.Factory(list)


@attrs.frozen
class Route:
    stops: list[Place]
    mode: Literal["walk", "drive"] = "walk"


@attrs.frozen
class Node:
    children: list[Node]


@attrs.frozen
class Bag:
    items: set[int]


class Plain:
    pass


UserId = NewType("UserId", int)

POINT_SCHEMA = {
    "type": "object",
    "properties": {"x": {"type": "integer"}, "y": {"type": "integer", "default": 0}},
    "required": ["x"],
    "additionalProperties": False,
}
PLACE_SCHEMA = {
    "type": "object",
    "description": "A named place on the map.",
    "properties": {
        "name": {"type": "string", "description": "What the place is called."},
        "point": {**POINT_SCHEMA, "description": "Where it is."},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["red", "blue"]}},
    },
    "required": ["name", "point"],
    "additionalProperties": False,
}


def _with_hint(hint: Any) -> Callable[..., Any]:
    """A function `f(x)` whose annotation is the object `hint` (not a string)."""

    def f(x):  # type: ignore[no-untyped-def]
        return x

    f.__annotations__ = {"x": hint}
    return f


def _schema_of(hint: Any) -> dict[str, Any]:
    return tool(_with_hint(hint)).parameters["properties"]["x"]  # type: ignore[no-any-return]


def _texts(result: AgentToolResult) -> list[str]:
    return [c.text for c in result.content if isinstance(c, TextContent)]


def _execute(t: AgentTool, args: dict[str, Any]) -> AgentToolResult:
    """Run `t` the way the loop does: validate (and coerce) the arguments, then execute."""
    checked = validate_tool_arguments(t, ToolCall("call_1", t.name, args))
    return t.execute("call_1", checked, AbortController().signal, lambda _: None)


# --- schemas from type hints -----------------------------------------------------------------

HINT_SCHEMAS: list[tuple[Any, dict[str, Any]]] = [
    (str, {"type": "string"}),
    (int, {"type": "integer"}),
    (float, {"type": "number"}),
    (bool, {"type": "boolean"}),
    (Any, {}),
    (object, {}),
    (None, {"type": "null"}),
    (list[int], {"type": "array", "items": {"type": "integer"}}),
    (typing.List[str], {"type": "array", "items": {"type": "string"}}),  # noqa: UP006
    (Sequence[float], {"type": "array", "items": {"type": "number"}}),
    (list, {"type": "array"}),
    (list[Any], {"type": "array"}),
    (list[list[bool]], {"type": "array", "items": {"type": "array", "items": {"type": "boolean"}}}),
    (tuple[int, ...], {"type": "array", "items": {"type": "integer"}}),
    (tuple[int, int], {"type": "array", "items": {"type": "integer"}, "minItems": 2,
                       "maxItems": 2}),
    (tuple[int, str], {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}],
                       "minItems": 2, "maxItems": 2}),
    (dict[str, int], {"type": "object", "additionalProperties": {"type": "integer"}}),
    (typing.Dict[str, float], {"type": "object", "additionalProperties": {"type": "number"}}),  # noqa: UP006
    (dict[str, Any], {"type": "object"}),
    (dict, {"type": "object"}),
    (int | None, {"type": ["integer", "null"]}),
    (Optional[str], {"type": ["string", "null"]}),  # noqa: UP045
    (Optional[list[int]], {"type": ["array", "null"], "items": {"type": "integer"}}),  # noqa: UP045
    (Any | None, {}),
    (Union[int, str], {"type": ["integer", "string"]}),  # noqa: UP007
    (int | str | None, {"type": ["integer", "string", "null"]}),
    (Literal["a", "b"], {"type": "string", "enum": ["a", "b"]}),
    (Literal[1, 2], {"type": "integer", "enum": [1, 2]}),
    (Literal[True], {"type": "boolean", "enum": [True]}),
    (Literal["a", 1], {"type": ["string", "integer"], "enum": ["a", 1]}),
    (Literal["a"] | None, {"type": ["string", "null"], "enum": ["a", None]}),
    (Color, {"type": "string", "enum": ["red", "blue"]}),
    (Priority, {"type": "integer", "enum": [1, 2]}),
    (Mixed, {"type": ["string", "integer"], "enum": ["named", 2]}),
    (Color | None, {"type": ["string", "null"], "enum": ["red", "blue", None]}),
    (list[Color], {"type": "array", "items": {"type": "string", "enum": ["red", "blue"]}}),
    (dict[str, Priority], {"type": "object",
                           "additionalProperties": {"type": "integer", "enum": [1, 2]}}),
    (Point, POINT_SCHEMA),
    (Place, PLACE_SCHEMA),
    (Point | None, {**POINT_SCHEMA, "type": ["object", "null"]}),
    (Point | Place, {"anyOf": [POINT_SCHEMA, PLACE_SCHEMA]}),
    (Point | int | None, {"anyOf": [POINT_SCHEMA, {"type": "integer"}, {"type": "null"}]}),
    (Route, {
        "type": "object",
        "properties": {
            "stops": {"type": "array", "items": PLACE_SCHEMA},
            "mode": {"type": "string", "enum": ["walk", "drive"], "default": "walk"},
        },
        "required": ["stops"],
        "additionalProperties": False,
    }),
    (Annotated[int, "How many."], {"type": "integer", "description": "How many."}),
    (list[Annotated[int, "An id."]], {"type": "array",
                                      "items": {"type": "integer", "description": "An id."}}),
    (UserId, {"type": "integer"}),
]


@pytest.mark.parametrize(("hint", "expected"), HINT_SCHEMAS)
def test_tool_schema_for_each_supported_hint(hint: Any, expected: dict[str, Any]) -> None:
    assert _schema_of(hint) == expected


@pytest.mark.parametrize(("hint", "expected"), HINT_SCHEMAS)
def test_tool_schemas_are_valid_json_schema(hint: Any, expected: dict[str, Any]) -> None:
    schema = tool(_with_hint(hint)).parameters
    Draft202012Validator.check_schema(schema)
    assert schema["properties"]["x"] == expected


def test_tool_unannotated_parameter_accepts_anything() -> None:
    def f(x, y: int):  # type: ignore[no-untyped-def]
        return x

    assert tool(f).parameters["properties"] == {"x": {}, "y": {"type": "integer"}}


def test_tool_whole_schema_with_defaults_descriptions_and_required() -> None:
    @tool
    def book(
        place: Place,
        nights: int,
        guests: Annotated[int, "Adults and children."] = 2,
        color: Color = Color.BLUE,
        note: str | None = None,
        when: tuple[int, int] = (1, 2),
        hidden: object = object(),  # not JSON: no "default" in the schema
    ) -> str:
        """Book a stay.

        Args:
            place: Where to stay.
            nights (int): How many
                nights.
            guests: Ignored: the annotation wins.
        """
        return "booked"

    assert book.parameters == {
        "type": "object",
        "properties": {
            "place": {**PLACE_SCHEMA, "description": "Where to stay."},
            "nights": {"type": "integer", "description": "How many nights."},
            "guests": {"type": "integer", "description": "Adults and children.", "default": 2},
            "color": {"type": "string", "enum": ["red", "blue"], "default": "blue"},
            "note": {"type": ["string", "null"], "default": None},
            "when": {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2,
                     "default": [1, 2]},
            "hidden": {},
        },
        "required": ["place", "nights"],
        "additionalProperties": False,
    }
    Draft202012Validator.check_schema(book.parameters)


def test_tool_attrs_default_is_shown_as_an_object() -> None:
    @tool
    def move(to: Point = Point(1, 2)) -> None:
        """Move."""

    assert move.parameters["properties"]["to"] == {**POINT_SCHEMA, "default": {"x": 1, "y": 2}}


def test_tool_injected_parameters_are_hidden_from_the_schema() -> None:
    @tool
    def work(
        path: str, tool_call_id: str, signal: AbortSignal, on_update: Callable[..., None]
    ) -> str:
        """Work."""
        return path

    assert work.parameters == {
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "required": ["path"],
        "additionalProperties": False,
    }


# --- docstrings, names and options -----------------------------------------------------------


def test_tool_docstring_summary_and_args() -> None:
    @tool
    def search(query: str, limit: int = 10, kind: str = "any") -> str:
        """Search   the index
        for documents.

        Results are ranked by relevance.

        Args:
            query (str): What to look for;
                any words.
            limit (int, optional): At most this many (see note (1)).
            kind: One of (dict(str, int)): the
                kinds.
            missing: Documented, but not a parameter.

        Returns:
            str: The hits, one per line.

        Raises:
            ValueError: Never.
        """
        return query

    assert search.description == (
        "Search the index for documents. Results are ranked by relevance."
    )
    properties = search.parameters["properties"]
    assert properties["query"]["description"] == "What to look for; any words."
    assert properties["limit"]["description"] == "At most this many (see note (1))."
    assert properties["kind"]["description"] == "One of (dict(str, int)): the kinds."
    assert "missing" not in properties


def test_tool_docstring_type_with_nested_parentheses() -> None:
    @tool
    def f(counts: dict[str, int]) -> str:
        """Count.

        Arguments:
            counts (dict(str, int)): Counts by word.
        """
        return ""

    assert f.parameters["properties"]["counts"]["description"] == "Counts by word."


def test_tool_without_docstring_uses_the_humanised_name() -> None:
    def get_weather(city: str) -> str:
        return city

    t = tool(get_weather)
    assert (t.name, t.description) == ("get_weather", "Get weather")
    assert t.parameters["properties"] == {"city": {"type": "string"}}


def test_tool_docstring_with_only_sections_falls_back_to_the_name() -> None:
    def ping(host: str) -> str:
        """Args:
        host: The host.
        """
        return host

    t = tool(ping)
    assert t.description == "Ping"
    assert t.parameters["properties"]["host"] == {"type": "string", "description": "The host."}


def test_tool_options_override_the_function() -> None:
    @tool(name="lookup", description="Look something up.", label="Lookup",
          execution_mode=ToolExecutionMode.SEQUENTIAL)
    def find(key: str) -> str:
        """Find a key."""
        return key

    assert (find.name, find.description, find.label, find.execution_mode) == (
        "lookup", "Look something up.", "Lookup", ToolExecutionMode.SEQUENTIAL
    )
    assert find("k") == "k"


def test_tool_all_call_forms_build_the_same_tool() -> None:
    def echo(text: str) -> str:
        """Echo the text."""
        return text

    forms = [tool(echo), tool()(echo), tool(fn=echo), tool(execution_mode="parallel")(echo)]
    assert {(t.name, t.description, str(t.parameters)) for t in forms} == {
        ("echo", "Echo the text.", str(forms[0].parameters))
    }
    assert forms[3].execution_mode is ToolExecutionMode.PARALLEL
    assert all(isinstance(t, AgentTool) and t("x") == "x" for t in forms)


def test_tool_on_a_bound_method() -> None:
    class Counter:
        def __init__(self) -> None:
            self.total = 0

        def add(self, amount: int) -> int:
            """Add to the total."""
            self.total += amount
            return self.total

    counter = Counter()
    t = tool(counter.add)
    assert t.parameters["required"] == ["amount"]
    assert _texts(_execute(t, {"amount": "5"})) == ["5"]
    assert counter.total == 5


# --- the decorated function stays a function -------------------------------------------------


def _forecast(city: str, days: int = 1) -> str:
    """Forecast the weather.

    Args:
        city: The city.
        days: How many days.
    """
    return f"{city}: sunny for {days} day(s)"


def test_tool_decorated_function_is_still_callable_and_introspectable() -> None:
    t = tool(_forecast)
    assert isinstance(t, AgentTool)
    assert isinstance(t, FunctionTool)
    assert t("Paris") == _forecast("Paris")
    assert t(city="Rome", days=3) == _forecast("Rome", 3)
    assert t.fn is _forecast
    assert t.__wrapped__ is _forecast
    assert (t.__name__, t.__qualname__, t.__module__, t.__doc__) == (
        "_forecast", "_forecast", __name__, _forecast.__doc__
    )
    assert inspect.signature(t) == inspect.signature(_forecast)


def test_tool_evolve_keeps_the_wrapper_attributes() -> None:
    t = attrs.evolve(tool(_forecast), name="forecast")
    assert (t.name, t.__name__, t.__doc__, t("Oslo")) == (
        "forecast", "_forecast", _forecast.__doc__, _forecast("Oslo")
    )


def test_tool_function_tool_is_frozen() -> None:
    t = tool(_forecast)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        t.name = "other"  # type: ignore[misc]


# --- argument conversion ---------------------------------------------------------------------


def test_tool_converts_enum_values_to_members() -> None:
    seen: list[Any] = []

    @tool
    def paint(color: Color, priority: Priority, maybe: Color | None = None) -> str:
        """Paint."""
        seen.append((color, priority, maybe))
        return "ok"

    _execute(paint, {"color": "red", "priority": 2, "maybe": "blue"})
    _execute(paint, {"color": "blue", "priority": "1", "maybe": None})
    assert seen == [
        (Color.RED, Priority.HIGH, Color.BLUE),
        (Color.BLUE, Priority.LOW, None),
    ]
    assert all(type(c) is Color and type(p) is Priority for c, p, _ in seen)


def test_tool_converts_objects_to_attrs_instances_recursively() -> None:
    seen: list[Any] = []

    @tool
    def plan(
        route: Route,
        extra: list[Place] | None = None,
        by_name: dict[str, Point] | None = None,
        corner: tuple[Point, Color] | None = None,
    ) -> str:
        """Plan a route."""
        seen.extend([route, extra, by_name, corner])
        return "planned"

    _execute(plan, {
        "route": {
            "stops": [
                {"name": "home", "point": {"x": 0}},
                {"name": "work", "point": {"x": "3", "y": 4}, "tags": ["red", "blue"]},
            ],
            "mode": "drive",
        },
        "extra": [{"name": "gym", "point": {"x": 1, "y": 1}}],
        "by_name": {"a": {"x": 5}},
        "corner": [{"x": 9, "y": 9}, "red"],
    })
    assert seen == [
        Route([Place("home", Point(0)),
               Place("work", Point(3, 4), [Color.RED, Color.BLUE])], "drive"),
        [Place("gym", Point(1, 1))],
        {"a": Point(5)},
        (Point(9, 9), Color.RED),
    ]


def test_tool_union_of_enum_and_str_keeps_unknown_strings() -> None:
    @tool
    def pick(value: Color | str, shape: Point | Place) -> str:
        """Pick."""
        return f"{value!r} {shape!r}"

    assert _texts(_execute(pick, {"value": "red", "shape": {"x": 1}})) == [
        f"{Color.RED!r} {Point(1)!r}"
    ]
    place = {"name": "n", "point": {"x": 2}}
    assert _texts(_execute(pick, {"value": "green", "shape": place})) == [
        f"'green' {Place('n', Point(2))!r}"
    ]


def test_tool_missing_optional_arguments_use_the_function_defaults() -> None:
    sentinel = object()
    seen: list[Any] = []

    @tool
    def f(a: int, b: int = 7, c: Any = sentinel, d: list[int] | None = None) -> None:
        """F."""
        seen.append((a, b, c, d))

    _execute(f, {"a": 1})
    _execute(f, {"a": 1, "b": 2, "c": "x", "d": [3]})
    assert seen == [(1, 7, sentinel, None), (1, 2, "x", [3])]


def test_tool_unknown_arguments_fail_validation() -> None:
    t = tool(_forecast)
    with pytest.raises(ac.ToolArgumentsError, match="Additional properties"):
        _execute(t, {"city": "Paris", "dayz": 3})


def test_tool_attrs_validator_errors_propagate() -> None:
    @attrs.frozen
    class Positive:
        n: int = attrs.field(validator=attrs.validators.gt(0))

    def f(p):  # type: ignore[no-untyped-def]
        return p.n

    f.__annotations__ = {"p": Positive}
    with pytest.raises(ValueError, match="'n' must be > 0"):
        _execute(tool(f), {"p": {"n": -1}})


def test_tool_exceptions_propagate_from_execute() -> None:
    @tool
    def fail(reason: str) -> str:
        """Fail."""
        raise RuntimeError(reason)

    with pytest.raises(RuntimeError, match="disk full"):
        _execute(fail, {"reason": "disk full"})


# --- return values ---------------------------------------------------------------------------

IMAGE = ImageContent("aGk=", "image/png")


@attrs.frozen
class Reading:
    where: Place
    level: Priority


RETURNS: list[tuple[Any, list[Any], Any]] = [
    ("hello", [TextContent("hello")], None),
    ("", [TextContent("")], None),
    (None, [TextContent(NO_OUTPUT)], None),
    (TextContent("t"), [TextContent("t")], None),
    (IMAGE, [IMAGE], None),
    ([TextContent("a"), IMAGE], [TextContent("a"), IMAGE], None),
    (42, [TextContent("42")], 42),
    (True, [TextContent("true")], True),
    ([], [TextContent("[]")], []),
    ({"temp": 21.5, "city": "Zürich"}, [TextContent('{"temp": 21.5, "city": "Zürich"}')],
     {"temp": 21.5, "city": "Zürich"}),
    (Point(1, 2), [TextContent('{"x": 1, "y": 2}')], {"x": 1, "y": 2}),
    (Priority.HIGH, [TextContent("2")], 2),
    (Reading(Place("p", Point(0), [Color.RED]), Priority.LOW),
     [TextContent('{"where": {"name": "p", "point": {"x": 0, "y": 0}, "tags": ["red"]}, '
                  '"level": 1}')],
     {"where": {"name": "p", "point": {"x": 0, "y": 0}, "tags": ["red"]}, "level": 1}),
    ([Point(1, 1), Color.BLUE], [TextContent('[{"x": 1, "y": 1}, "blue"]')],
     [{"x": 1, "y": 1}, "blue"]),
    ({3, 1, 2}, [TextContent("[1, 2, 3]")], [1, 2, 3]),
    (Plain, [TextContent(f'"{Plain!r}"')], repr(Plain)),
]


@pytest.mark.parametrize(("value", "content", "details"), RETURNS)
def test_tool_return_value_conversion(value: Any, content: list[Any], details: Any) -> None:
    def f():  # type: ignore[no-untyped-def]
        return value

    assert tool(f).execute("c", {}, AbortController().signal, lambda _: None) == (
        AgentToolResult(content, details=details)
    )


class Opaque:
    def __repr__(self) -> str:
        return "Opaque()"


WHEN = datetime.datetime(2024, 5, 6, 7, 8, 9)


@pytest.mark.parametrize(
    ("value", "text", "details"),
    [
        ({"b", "a"}, '["a", "b"]', ["a", "b"]),
        (WHEN, '"2024-05-06T07:08:09"', "2024-05-06T07:08:09"),
        (b"hi", '"aGk="', "aGk="),
        (Opaque(), '"Opaque()"', "Opaque()"),
        (float("nan"), "null", None),
        ((1, "x"), '[1, "x"]', [1, "x"]),
        ({"when": WHEN, 3: {1.5}}, '{"when": "2024-05-06T07:08:09", "3": [1.5]}',
         {"when": "2024-05-06T07:08:09", "3": [1.5]}),
    ],
    ids=["set", "datetime", "bytes", "object", "nan", "tuple", "nested"],
)
def test_tool_return_value_is_made_json_ready(value: Any, text: str, details: Any) -> None:
    def f():  # type: ignore[no-untyped-def]
        return value

    result = tool(f).execute("c", {}, AbortController().signal, lambda _: None)
    assert result == AgentToolResult([TextContent(text)], details=details)
    assert json.loads(ac.to_json(result)) == {"content": [{"type": "text", "text": text}],
                                              **({"details": details} if details else {})}


def test_tool_agent_tool_result_is_returned_as_is() -> None:
    result = AgentToolResult([TextContent("done")], details={"n": 1}, terminate=True)

    @tool
    def f() -> AgentToolResult:
        """F."""
        return result

    assert f.execute("c", {}, AbortController().signal, lambda _: None) is result


# --- decoration-time errors ------------------------------------------------------------------

UNSUPPORTED: list[tuple[Any, str]] = [
    (set[int], r"set\[int\] is not supported \(JSON has no sets"),
    (frozenset[str], r"frozenset\[str\] is not supported"),
    (Callable[[int], int], "a model cannot pass code"),
    (Plain, "Plain is not supported"),
    (bytes, "bytes is not supported"),
    (dict[int, str], r"dict\[int, \.\.\.\] is not supported \(JSON object keys are strings"),
    (list[set[int]], r"set\[int\] is not supported"),
    (Optional[Plain], "Plain is not supported"),  # noqa: UP045
    (Literal[Color.RED], "Literal value .* is not a JSON"),
    (Shape, r"enum Shape value \(1, 1\) is not a JSON"),
    (Bag, r"field 'items' of Bag: set\[int\] is not supported"),
    (Node, "attrs class Node contains itself"),
]


@pytest.mark.parametrize(("hint", "reason"), UNSUPPORTED)
def test_tool_unsupported_annotation_is_a_type_error_naming_function_and_parameter(
    hint: Any, reason: str
) -> None:
    where = "parameter 'x' of function '_with_hint.<locals>.f'"
    with pytest.raises(TypeError, match=re.escape(where)) as info:
        tool(_with_hint(hint))
    assert info.match(reason)


def test_tool_variadic_and_positional_only_parameters_are_rejected() -> None:
    def star(*items: int) -> None:
        pass

    def kwargs(**options: int) -> None:
        pass

    def positional(a: int, /) -> None:
        pass

    with pytest.raises(TypeError, match=r"parameter 'items' of function '.*star' is variadic"):
        tool(star)
    with pytest.raises(TypeError, match=r"parameter 'options' of function '.*kwargs' is variadic"):
        tool(kwargs)
    with pytest.raises(TypeError, match=r"parameter 'a' of function '.*positional' is positional"):
        tool(positional)


def test_tool_unresolvable_hint_names_the_function() -> None:
    def f(x: NotDefinedAnywhere) -> None:  # type: ignore[name-defined]  # noqa: F821
        pass

    with pytest.raises(TypeError, match=r"cannot resolve the type hints of function '.*f'"):
        tool(f)


def test_tool_rejects_what_is_not_a_plain_function() -> None:
    async def fetch(url: str) -> str:
        return url

    def numbers(n: int) -> Any:
        yield n

    with pytest.raises(TypeError, match="is async"):
        tool(fetch)
    with pytest.raises(TypeError, match="is a generator"):
        tool(numbers)
    with pytest.raises(TypeError, match=r"pass a name as tool\(name=...\)"):
        tool("weather")  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="expected a function"):
        tool(42)  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="'_forecast' is already a tool"):
        tool(tool(_forecast))
    with pytest.raises(TypeError, match="'description' must be a str"):
        tool(description=3)  # type: ignore[call-overload]


def test_tool_rejects_invalid_names_and_modes() -> None:
    with pytest.raises(ValueError, match="'<lambda>' is not a valid tool name"):
        tool(lambda: None)
    with pytest.raises(ValueError, match="'has space' is not a valid tool name"):
        tool(name="has space")(_forecast)
    with pytest.raises(ValueError, match="'execution_mode' must be one of"):
        tool(execution_mode="sometimes")(_forecast)
    assert tool(lambda: None, name="noop").name == "noop"


# --- in the loop -----------------------------------------------------------------------------


def _run(faux: FauxProvider, tools: list[AgentTool], signal: AbortSignal | None = None) -> tuple[
    list[Any], list[Any]
]:
    events: list[Any] = []
    context = ac.AgentContext("You are a test.", [], list(tools))
    out = ac.run_agent_loop([ac.UserMessage("go")], context,
                            ac.AgentLoopConfig(model=faux.get_model()), events.append,
                            signal=signal)
    return out, events


def test_tool_gets_the_call_id_signal_and_update_callback_in_the_loop(faux: FauxProvider) -> None:
    seen: dict[str, Any] = {}
    other_thread = threading.Event()

    @tool
    def build(target: str, tool_call_id: str, signal: AbortSignal,
              on_update: Callable[[AgentToolResult], None]) -> str:
        """Build a target."""
        seen.update(target=target, tool_call_id=tool_call_id, signal=signal)
        on_update(AgentToolResult([TextContent("halfway")]))
        other_thread.set()
        return "built"

    faux.set_responses([
        faux_assistant_message([faux_tool_call("build", {"target": "app"}, id="call_7")]),
        faux_assistant_message("done"),
    ])
    controller = AbortController()
    out, events = _run(faux, [build], controller.signal)
    assert other_thread.is_set()
    tool_signal = seen.pop("signal")
    assert seen == {"target": "app", "tool_call_id": "call_7"}
    # The tool's signal follows the run's (it is the batch's own, so that an early end of the
    # loop can stop its tools without aborting the caller's signal).
    assert isinstance(tool_signal, AbortSignal)
    assert not tool_signal.aborted
    controller.abort()
    assert not tool_signal.aborted  # the batch is over: nothing left to stop
    updates = [e for e in events if isinstance(e, ac.ToolExecutionUpdateEvent)]
    assert updates == [ac.ToolExecutionUpdateEvent(
        "call_7", "build", {"target": "app"}, AgentToolResult([TextContent("halfway")])
    )]
    kinds = [e.type for e in events]
    assert kinds.index("tool_execution_update") < kinds.index("tool_execution_end")
    assert out[2] == ac.ToolResultMessage("call_7", "build", [TextContent("built")],
                                          timestamp=out[2].timestamp)


def test_tool_end_to_end_coerces_and_converts_model_arguments(faux: FauxProvider) -> None:
    calls: list[tuple[Any, ...]] = []

    @tool
    def forecast(city: str, days: int, unit: Color, where: Place, hourly: bool = False) -> dict[
        str, Any
    ]:
        """Forecast the weather.

        Args:
            city: The city.
            days: How many days ahead.
            unit: The colour scheme.
            where: The exact spot.
            hourly: Hour by hour.
        """
        calls.append((city, days, unit, where, hourly))
        return {"city": city, "days": days, "unit": unit, "where": where}

    arguments = {
        "city": "Paris",
        "days": "42",
        "unit": "blue",
        "where": {"name": "Louvre", "point": {"x": "2", "y": "48"}, "tags": ["red"]},
        "hourly": "true",
    }
    faux.set_responses([
        faux_assistant_message([faux_tool_call("forecast", arguments, id="c1")]),
        faux_assistant_message("It will be sunny."),
    ])
    out, events = _run(faux, [forecast])
    place = Place("Louvre", Point(2, 48), [Color.RED])
    assert calls == [("Paris", 42, Color.BLUE, place, True)]
    assert type(calls[0][1]) is int
    result = out[2]
    assert result == ac.ToolResultMessage(
        "c1",
        "forecast",
        [TextContent('{"city": "Paris", "days": 42, "unit": "blue", "where": {"name": "Louvre", '
                     '"point": {"x": 2, "y": 48}, "tags": ["red"]}}')],
        details={"city": "Paris", "days": 42, "unit": "blue",
                 "where": {"name": "Louvre", "point": {"x": 2, "y": 48}, "tags": ["red"]}},
        timestamp=result.timestamp,
    )
    assert out[3].text == "It will be sunny."
    [end] = [e for e in events if isinstance(e, ac.ToolExecutionEndEvent)]
    assert end.is_error is False


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"non-standard JSON constant {name}")


def test_tool_returning_odd_values_leaves_a_saveable_transcript(faux: FauxProvider) -> None:
    @tool
    def inspect_repo() -> Any:
        """Inspect the repository."""
        return {"tags": {"v2", "v1"}, "when": WHEN, "blob": b"\x00\xff", "head": Opaque(),
                "ratio": float("inf")}

    faux.set_responses([
        faux_assistant_message([faux_tool_call("inspect_repo", {}, id="c1")]),
        faux_assistant_message("done"),
    ])
    out, events = _run(faux, [inspect_repo])
    expected = {"tags": ["v1", "v2"], "when": "2024-05-06T07:08:09", "blob": "AP8=",
                "head": "Opaque()", "ratio": None}
    assert out[2].details == expected
    [end] = [e for e in events if isinstance(e, ac.ToolExecutionEndEvent)]
    assert end.result.details == expected
    for value in (end, events[-1], out[2]):
        text = ac.to_json(value)
        json.loads(text.encode("utf-8"), parse_constant=_refuse_constant)
    assert isinstance(events[-1], ac.AgentEndEvent)
    assert ac.from_json(list[ac.AgentMessage], json.dumps([ac.to_dict(m) for m in out])) == out


def test_tool_exception_becomes_an_error_result_in_the_loop(faux: FauxProvider) -> None:
    @tool
    def explode(after: int) -> str:
        """Explode."""
        raise RuntimeError(f"boom after {after}s")

    faux.set_responses([
        faux_assistant_message([faux_tool_call("explode", {"after": "3"}, id="c1")]),
        faux_assistant_message("sorry"),
    ])
    out, _ = _run(faux, [explode])
    assert out[2] == ac.ToolResultMessage("c1", "explode",
                                          [TextContent("RuntimeError: boom after 3s")],
                                          is_error=True, timestamp=out[2].timestamp)
