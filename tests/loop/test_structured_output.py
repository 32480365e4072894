"""Structured output (API §14): `output_type`, the `final_result` tool, retries, and the same
tool through each of the four wire APIs over real HTTP."""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import json
from typing import Any, Literal, TypedDict

import attrs
import paths
import pytest
from _internals import output_tool, prompt_here
from mypy_report import MypyReport
from sse_server import SSEServer

import agentcore as ac
from agentcore.providers.faux import (
    FauxProvider,
    faux_assistant_message,
    faux_tool_call,
    register_faux_provider,
)
from agentcore.testing import scripted_model, tool_call

WAIT = 5.0
FIXTURES = paths.FIXTURES


@attrs.define
class City:
    """A city.

    Attributes:
        name: Its name.
        population: How many people live there.
    """

    name: str
    population: int


@dataclasses.dataclass
class Point:
    x: int
    y: int = 0


class Movie(TypedDict):
    title: str
    year: int


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


SHAPES: list[tuple[Any, dict[str, Any], Any]] = [
    (City, {"name": "Rome", "population": 2800000}, City("Rome", 2800000)),
    (Point, {"x": 3}, Point(3, 0)),
    (Movie, {"title": "Alien", "year": 1979}, {"title": "Alien", "year": 1979}),
    (int, {"response": 42}, 42),
    (float, {"response": 2.5}, 2.5),
    (str, {"response": "yes"}, "yes"),
    (bool, {"response": True}, True),
    (Color, {"response": "blue"}, Color.BLUE),
    (Literal["low", "high"], {"response": "high"}, "high"),
    (list[City], {"response": [{"name": "A", "population": 1}]}, [City("A", 1)]),
    (dict[str, int], {"response": {"a": 1}}, {"a": 1}),
    (int | None, {"response": None}, None),
    (list[Point] | None, {"response": [{"x": 1, "y": 2}]}, [Point(1, 2)]),
]


@pytest.mark.parametrize(("output_type", "args", "expected"), SHAPES,
                         ids=[str(i) for i in range(len(SHAPES))])
def test_every_supported_shape_comes_back_as_its_type(output_type: Any, args: dict[str, Any],
                                                      expected: Any) -> None:
    with scripted_model([tool_call("final_result", args)]) as fake:
        run = ac.Agent(fake.model).prompt("answer", output_type=output_type)
        assert run.output == expected
        assert type(run.output) is type(expected)
        tools = fake.call(0).tools
    assert [t.name for t in tools] == ["final_result"]
    with scripted_model([json.dumps(args)]) as fake:  # the same JSON as a native answer
        run = ac.Agent(fake.model).prompt("answer", output_type=output_type,
                                          output_mode="native")
        assert run.output == expected
        assert type(run.output) is type(expected)
        [call] = fake.calls
    assert call.options.output_schema == output_tool(output_type).parameters
    assert (call.tools, call.options.tool_choice) == ([], None)


def test_object_types_are_the_schema_and_others_are_wrapped_as_response() -> None:
    with scripted_model([tool_call("final_result", {"response": 1})]) as fake:
        ac.Agent(fake.model).prompt("n", output_type=int).result(WAIT)
        assert fake.call(0).tools[0].parameters == {
            "type": "object", "properties": {"response": {"type": "integer"}},
            "required": ["response"], "additionalProperties": False}
    with scripted_model([tool_call("final_result", {"name": "A", "population": 1})]) as fake:
        ac.Agent(fake.model).prompt("c", output_type=City).result(WAIT)
        schema = fake.call(0).tools[0].parameters
    assert schema["description"] == "A city."
    assert schema["properties"]["population"] == {
        "type": "integer", "description": "How many people live there."}
    assert schema["required"] == ["name", "population"]


def test_invalid_arguments_are_retried_within_the_budget() -> None:
    script = [tool_call("final_result", {"name": "Rome", "population": "many"}),
              tool_call("final_result", {"name": "Rome", "population": 3})]
    with scripted_model(script) as fake:
        run = ac.Agent(fake.model).prompt("c", output_type=City, output_retries=1)
        assert run.output == City("Rome", 3)
        first_result = fake.call(1).tool_results[0]
    assert first_result.is_error
    assert "population" in first_result.text


def test_past_the_budget_the_run_ends_in_output_validation_error() -> None:
    bad = tool_call("final_result", {"name": "Rome", "population": "many"})
    with scripted_model([bad, bad, bad]) as fake:
        run = ac.Agent(fake.model).prompt("c", output_type=City, output_retries=2)
        with pytest.raises(ac.OutputValidationError) as caught:
            run.raise_for_error()
        fake.assert_called(times=3)
    assert caught.value.message.startswith(
        "no valid output: final_result was not called with valid arguments in 3 attempts "
        "(output_retries=2); last: validation failed")
    assert isinstance(caught.value, ac.RunError)
    last = run.result()[-1]
    assert isinstance(last, ac.AssistantMessage)
    assert last.stop_reason == "error"
    with pytest.raises(ac.OutputValidationError):
        run.output  # noqa: B018


def test_a_model_that_never_calls_the_tool_is_asked_then_given_up_on() -> None:
    with scripted_model(["it is Rome", "Rome, really", "I said Rome"]) as fake:
        run = ac.Agent(fake.model).prompt("c", output_type=City, output_retries=2)
        with pytest.raises(ac.OutputValidationError, match="did not call final_result"):
            run.raise_for_error()
        fake.assert_called(times=3)
        nudge = fake.call(1).messages[-1]
    assert isinstance(nudge, ac.UserMessage)
    assert "final_result" in nudge.text


def test_text_first_then_the_tool_is_fine() -> None:
    with scripted_model(["Let me think.", tool_call("final_result", {"response": 7})]) as fake:
        assert ac.Agent(fake.model).prompt("n", output_type=int).output == 7


def test_other_tools_run_before_the_answer() -> None:
    def lookup(city: str) -> int:
        """Population of a city."""
        return {"Rome": 2800000}[city]

    script = [tool_call("lookup", {"city": "Rome"}),
              tool_call("final_result", {"name": "Rome", "population": 2800000})]
    with scripted_model(script) as fake:
        run = ac.Agent(fake.model, tools=[lookup]).prompt("c", output_type=City)
        assert run.output == City("Rome", 2800000)
        assert sorted(t.name for t in fake.call(0).tools) == ["final_result", "lookup"]


def test_low_level_loop_puts_the_value_in_the_result_details(faux: FauxProvider) -> None:
    faux.set_responses([faux_assistant_message(
        [faux_tool_call("final_result", {"response": "blue"})], stop_reason="toolUse")])
    out = ac.run_agent_loop([ac.UserMessage("color?")], ac.AgentContext("", [], []),
                            ac.AgentLoopConfig(model=faux.get_model(), output_type=Color),
                            lambda e: None)
    result = out[-1]
    assert isinstance(result, ac.ToolResultMessage)
    assert (result.tool_name, result.details, result.is_error) == ("final_result", Color.BLUE,
                                                                   False)


def test_the_transcript_with_the_answer_serializes() -> None:
    with scripted_model([tool_call("final_result", {"name": "Rome", "population": 3})]) as fake:
        run = ac.Agent(fake.model).prompt("c", output_type=City)
        messages = run.result(WAIT)
    back = ac.from_json(list[ac.AgentMessage], ac.to_json(messages))
    assert [m.role for m in back] == ["user", "assistant", "toolResult"]
    assert back[-1].details == {"name": "Rome", "population": 3}  # type: ignore[union-attr]


def test_abort_and_steering_and_follow_ups(faux: FauxProvider) -> None:
    faux.set_responses([faux_assistant_message("thinking"),
                        faux_assistant_message([faux_tool_call("final_result", {"response": 1})],
                                               stop_reason="toolUse")])
    agent = ac.Agent(faux.get_model())
    agent.steer("be quick")
    agent.follow_up("and then?")
    run = agent.prompt("n", output_type=int)
    assert run.output == 1
    roles = [m.role for m in run.result()]
    assert roles[:2] == ["user", "user"]  # the prompt and the steering message
    assert agent.has_queued_messages()  # the follow-up waits: the answer ended the run

    aborted = ac.Agent(faux.get_model())
    faux.set_responses([faux_assistant_message("never")])
    run = aborted.prompt("n", output_type=int)
    run.abort()
    run.wait(WAIT)
    with pytest.raises(ac.RunError):
        run.output  # noqa: B018


def test_a_model_switch_keeps_the_output_tool(faux: FauxProvider) -> None:
    register = register_faux_provider()
    try:
        register.set_responses([faux_assistant_message(
            [faux_tool_call("final_result", {"response": 5})], stop_reason="toolUse")])
        other = register.get_model()

        def switch(ctx: ac.PrepareNextTurnContext, signal: ac.AbortSignal) -> Any:
            return ac.AgentLoopTurnUpdate(model=other)

        faux.set_responses([faux_assistant_message("first")])
        run = ac.Agent(faux.get_model(), prepare_next_turn=switch).prompt("n", output_type=int)
        assert run.output == 5
    finally:
        register.unregister()


def test_bad_output_types_and_retries_are_refused(faux: FauxProvider) -> None:
    agent = ac.Agent(faux.get_model())
    with pytest.raises(TypeError, match=r"'output_type'.*set\[int\] is not supported"):
        agent.prompt("x", output_type=set[int])
    with pytest.raises(ValueError, match="'output_retries'"):
        agent.prompt("x", output_type=int, output_retries=-1)
    assert not agent.state.is_streaming

    @ac.tool
    def final_result() -> str:
        """Clash."""
        return "x"

    with pytest.raises(ValueError, match="a tool is named 'final_result'"):
        ac.run_agent_loop([ac.UserMessage("x")], ac.AgentContext("", [], [final_result]),
                          ac.AgentLoopConfig(model=faux.get_model(), output_type=int),
                          lambda e: None)


def test_a_run_without_output_type_has_no_output(faux: FauxProvider) -> None:
    faux.set_responses([faux_assistant_message("hi")])
    run = ac.Agent(faux.get_model()).prompt("x")
    with pytest.raises(ac.AgentcoreError, match="no structured output"):
        run.output  # noqa: B018


def test_tools_take_dataclasses_and_typed_dicts_too(faux: FauxProvider) -> None:
    @ac.tool
    def plot(point: Point, movie: Movie) -> str:
        """Plot."""
        assert isinstance(point, Point)
        return f"{point.x},{point.y} {movie['title']}"

    assert plot.parameters["properties"]["point"]["required"] == ["x"]
    assert plot.parameters["properties"]["movie"]["required"] == ["title", "year"]
    faux.set_responses([faux_assistant_message(
        [faux_tool_call("plot", {"point": {"x": 1}, "movie": {"title": "Alien", "year": 1979}})],
        stop_reason="toolUse"), faux_assistant_message("done")])
    out = ac.Agent(faux.get_model(), tools=[plot]).prompt("go").result(WAIT)
    assert out[2].text == "1,0 Alien"  # type: ignore[union-attr]


# --- output_mode="native" (API §18) -----------------------------------------------------------


def test_native_invalid_text_is_answered_with_what_was_wrong_within_the_budget() -> None:
    script = ["Rome, I think", '{"name": "Rome", "population": "many"}', "[1, 2]",
              '{"name": "Rome", "population": 3}']
    with scripted_model(script) as fake:
        run = ac.Agent(fake.model).prompt("c", output_type=City, output_mode="native",
                                          output_retries=3)
        assert run.output == City("Rome", 3)
        nudges = [fake.call(i).messages[-1] for i in (1, 2, 3)]
    assert all(isinstance(n, ac.UserMessage) for n in nudges)
    assert [n.text.split("\n")[0] for n in nudges] == [
        "Your reply is not a valid answer: the reply text is not JSON (Expecting value: line 1 "
        "column 1 (char 0))",
        "Your reply is not a valid answer: validation failed for tool 'final_result':",
        "Your reply is not a valid answer: the reply text is JSON but not an object, which the "
        "schema's root is: '[1, 2]'"]
    assert "population: 'many' is not of type 'integer'" in nudges[1].text
    assert nudges[0].text.endswith("Reply with only the JSON answer, as the response format's "
                                   "schema describes it.")


def test_native_past_the_budget_the_run_ends_in_output_validation_error() -> None:
    with scripted_model(["no", "still no", '{"response": "x"}']) as fake:
        run = ac.Agent(fake.model).prompt("n", output_type=int, output_mode="native")
        with pytest.raises(ac.OutputValidationError) as caught:
            run.output  # noqa: B018
        fake.assert_called(times=3)
    assert caught.value.message.startswith(
        "no valid output: the reply was not a valid JSON answer in 3 attempts "
        "(output_retries=2); last: validation failed for tool 'final_result'")
    last = run.result()[-1]
    assert isinstance(last, ac.AssistantMessage)
    assert last.stop_reason == "error"


def test_native_conversion_errors_and_cut_replies_use_the_retries() -> None:
    cut = faux_assistant_message('{"name": "Ro', stop_reason="length")
    with scripted_model([cut, '{"x": 1, "y": 2}']) as fake:
        run = ac.Agent(fake.model).prompt("p", output_type=Point, output_mode="native")
        assert run.output == Point(1, 2)
        assert fake.call(1).messages[-1].text.startswith(
            "Your reply is not a valid answer: the reply hit the output token limit")


def test_native_other_tools_run_and_every_call_carries_the_schema() -> None:
    def lookup(city: str) -> int:
        """Population of a city."""
        return {"Rome": 2800000}[city]

    script = [tool_call("lookup", {"city": "Rome"}), '{"name": "Rome", "population": 2800000}']
    with scripted_model(script) as fake:
        run = ac.Agent(fake.model, tools=[lookup]).prompt("c", output_type=City,
                                                          output_mode="native")
        assert run.output == City("Rome", 2800000)
        assert [c.tool_names for c in fake.calls] == [["lookup"], ["lookup"]]
        assert [c.options.output_schema for c in fake.calls] == [output_tool(City).parameters] * 2
        assert fake.call(1).tool_results[0].text == "2800000"


def test_native_from_the_low_level_loop_prompt_async_and_prompt_here() -> None:
    with scripted_model(['{"response": "blue"}', '{"response": "red"}',
                         '{"response": "blue"}']) as fake:
        config = ac.AgentLoopConfig(model=fake.model, output_type=Color, output_mode="native")
        out = ac.run_agent_loop([ac.UserMessage("color?")], ac.AgentContext("", []), config,
                                lambda e: None)
        assert [m.role for m in out] == ["user", "assistant"]  # the answer is the reply
        assert out[-1].text == '{"response": "blue"}'  # type: ignore[union-attr]
        run = asyncio.run(ac.Agent(fake.model).prompt_async("c", output_type=Color,
                                                            output_mode="native"))
        assert run.output is Color.RED
        run = prompt_here(ac.Agent(fake.model), "c", output_type=Color, output_mode="native")
        assert run.output is Color.BLUE


def test_native_refused_at_the_call_for_a_model_without_it(faux: FauxProvider) -> None:
    model = faux.get_model()  # a faux API: not one of the APIs that take a schema
    agent = ac.Agent(model)
    match = r"^'output_mode' 'native' is not supported by model 'faux-1' \(faux:"
    with pytest.raises(ValueError, match=match):
        agent.prompt("c", output_type=int, output_mode="native")
    assert not agent.state.is_streaming
    config = ac.AgentLoopConfig(model=model, output_type=int, output_mode="native")
    with pytest.raises(ValueError, match=match):
        ac.run_agent_loop([ac.UserMessage("c")], ac.AgentContext("", []), config, lambda e: None)
    with pytest.raises(ValueError, match=match):
        ac.agent_loop([ac.UserMessage("c")], ac.AgentContext("", []), config)
    assert faux.call_count == 0
    yes = attrs.evolve(model, compat={"supports_native_output": True})
    faux.set_responses([faux_assistant_message('{"response": 5}')])
    assert ac.Agent(yes).prompt("c", output_type=int, output_mode="native").output == 5


def test_native_a_model_switch_to_one_without_it_ends_the_run_in_error(
        faux: FauxProvider) -> None:
    def switch(ctx: ac.PrepareNextTurnContext, signal: ac.AbortSignal) -> Any:
        return ac.AgentLoopTurnUpdate(model=faux.get_model())

    with scripted_model(["not yet"]) as fake:
        run = ac.Agent(fake.model, prepare_next_turn=switch).prompt(
            "n", output_type=int, output_mode="native")
        assert run.error is not None
        assert run.error.startswith("'output_mode' 'native' is not supported by model 'faux-1'")
    assert faux.call_count == 0


def test_native_a_tool_may_be_named_final_result_and_is_an_ordinary_tool() -> None:
    @ac.tool
    def final_result() -> str:
        """Mine."""
        return "mine"

    with scripted_model([tool_call("final_result", {}), '{"response": 1}']) as fake:
        agent = ac.Agent(fake.model, tools=[final_result])
        assert agent.prompt("n", output_type=int, output_mode="native").output == 1
        assert fake.call(1).tool_results[0].text == "mine"
        fake.add_replies([tool_call("final_result", {})])
        agent.limits = ac.UsageLimits(max_tool_calls=0)  # and counts as a tool call
        run = agent.prompt("n", output_type=int, output_mode="native")
        assert run.error == "usage limit reached: max_tool_calls=0"


def test_native_a_run_ending_without_an_answer_has_no_output() -> None:
    with scripted_model(["not json"]) as fake:
        agent = ac.Agent(fake.model, should_stop_after_turn=lambda turn: True)
        run = agent.prompt("n", output_type=int, output_mode="native")
        run.raise_for_error()  # stopped by the hook, not failed
        with pytest.raises(ac.AgentcoreError, match="no structured output: it ended without"):
            run.output  # noqa: B018


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"output_type": int, "output_mode": "json"}, "^'output_mode' must be 'tool' or 'native', "
                                                  "got 'json'"),
    ({"output_mode": "native"}, "^'output_mode' 'native' needs an 'output_type'"),
])
def test_native_bad_output_modes_are_refused_naming_the_field(kwargs: dict[str, Any],
                                                              match: str) -> None:
    with scripted_model() as fake:
        with pytest.raises(ValueError, match=match):
            ac.AgentLoopConfig(model=fake.model, **kwargs)
        agent = ac.Agent(fake.model)
        with pytest.raises(ValueError, match=match):
            agent.prompt("x", **kwargs)
        assert not agent.state.is_streaming
        fake.assert_called(times=0)


def test_native_output_schema_is_not_an_option_of_its_own(faux: FauxProvider) -> None:
    options = ac.StreamOptions(output_schema={"type": "object"})
    match = r"^'options.output_schema' must be None: .* output_type=T, output_mode='native'"
    with pytest.raises(ValueError, match=match):
        ac.AgentLoopConfig(model=faux.get_model(), options=options)
    with pytest.raises(ValueError, match=match):
        ac.Agent(faux.get_model(), options=options)
    agent = ac.Agent(faux.get_model())
    with pytest.raises(ValueError, match=match):
        agent.options = options


# --- the four wire APIs over real HTTP ---------------------------------------------------------


@attrs.define
class Weather:
    """The city asked about."""

    city: str


def _as_final_result(path: str) -> bytes:
    """A recorded tool-call stream, its `get_weather` calls renamed `final_result`."""
    return (FIXTURES / path).read_bytes().replace(b"get_weather", b"final_result")


WIRES = [
    ("openai-completions", "openai", "/v1", "openai_completions/tool_calls.sse"),
    ("openai-responses", "openai", "/v1", "openai_responses/tool_calls.sse"),
    ("anthropic-messages", "anthropic", "", "anthropic/tool_calls.sse"),
    ("google-generative-ai", "google", "", "google/function_calls.sse"),
]


@pytest.mark.parametrize(("api", "provider", "prefix", "fixture"), WIRES,
                         ids=[w[0] for w in WIRES])
def test_each_wire_api_sends_the_final_result_tool(sse_server: SSEServer, api: str,
                                                   provider: str, prefix: str,
                                                   fixture: str) -> None:
    sse_server.sse(_as_final_result(fixture))
    model = ac.Model("m", "M", api, provider, sse_server.url + prefix)
    with ac.Agent(model, api_key="sk-test") as agent:
        run = agent.prompt("Weather in Paris and Tokyo?", output_type=Weather)
        assert run.output in (Weather("Paris"), Weather("Tokyo"))
    declared = _declared_tools(api, sse_server.requests[0].json)
    assert declared["final_result"]["properties"] == {"city": {"type": "string"}}
    assert declared["final_result"]["required"] == ["city"]


def _declared_tools(api: str, body: dict[str, Any]) -> dict[str, Any]:
    """Tool name -> parameters schema, as each wire API declares its tools."""
    if api == "openai-completions":
        return {t["function"]["name"]: t["function"]["parameters"] for t in body["tools"]}
    if api == "openai-responses":
        return {t["name"]: t["parameters"] for t in body["tools"]}
    if api == "anthropic-messages":
        return {t["name"]: t["input_schema"] for t in body["tools"]}
    return {d["name"]: d.get("parameters") or d.get("parametersJsonSchema")
            for t in body["tools"] for d in t["functionDeclarations"]}


def _native_answer(api: str) -> bytes:
    """The recorded text stream of `api`, its text `{"city": "Paris"}` in three deltas."""
    folder = {"openai-completions": "openai_completions", "openai-responses": "openai_responses",
              "anthropic-messages": "anthropic", "google-generative-ai": "google"}[api]
    body = (FIXTURES / folder / "text.sse").read_bytes()
    for old, new in ((b"Hello", b'{\\"city\\": '), (b" test", b'\\"Paris\\"'),
                     (b" successful", b"}")):
        body = body.replace(old, new)
    return body


@pytest.mark.parametrize(("api", "provider", "prefix"), [w[:3] for w in WIRES],
                         ids=[w[0] for w in WIRES])
def test_each_wire_api_gives_a_native_answer(sse_server: SSEServer, api: str, provider: str,
                                             prefix: str) -> None:
    sse_server.sse(_native_answer(api), chunking="random")
    model = ac.Model("m", "M", api, provider, sse_server.url + prefix,
                     compat={"supports_native_output": True})
    with ac.Agent(model, api_key="sk-test") as agent:
        run = agent.prompt("Where?", output_type=Weather, output_mode="native")
        assert run.output == Weather("Paris")
    assert "tools" not in sse_server.requests[0].json


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_output_mode_type_checks(mypy_report: MypyReport) -> None:
    """tests/typing/output_mode_{pass,fail}.py: `output_mode` is a `Literal` for mypy."""
    assert mypy_report.errors("tests/typing/output_mode_pass.py") == [], mypy_report.output
    [error] = mypy_report.errors("tests/typing/output_mode_fail.py")
    assert error == ('Argument "output_mode" to "prompt" of "Agent" has incompatible type '
                     '"Literal[\'json\']"; expected "Literal[\'tool\', \'native\']"')
