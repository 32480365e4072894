"""`output_retries` defaults to 2 everywhere (API §17): at most 3 attempts at a valid answer."""

from __future__ import annotations

import asyncio
import inspect

import attrs
import pytest
from _internals import prompt_here

import agentcore as ac
from agentcore.testing import scripted_model, tool_call


@attrs.define
class City:
    name: str
    population: int


BAD = tool_call("final_result", {"name": "Rome", "population": "many"})
GOOD = tool_call("final_result", {"name": "Rome", "population": 3})


def test_output_retries_default_is_two_in_every_signature() -> None:
    defaults = [inspect.signature(entry).parameters["output_retries"].default
                for entry in (ac.Agent.prompt, ac.Agent.prompt_async)]
    assert [*defaults, attrs.fields(ac.AgentLoopConfig).output_retries.default] == [2, 2, 2]


def test_output_retries_default_allows_a_third_attempt_from_prompt() -> None:
    with scripted_model([BAD, BAD, GOOD]) as fake:
        run = ac.Agent(fake.model).prompt("c", output_type=City)
        assert run.output == City("Rome", 3)
        fake.assert_called(times=3)


def test_output_retries_default_allows_a_third_attempt_from_prompt_async() -> None:
    with scripted_model([BAD, BAD, GOOD]) as fake:
        run = asyncio.run(ac.Agent(fake.model).prompt_async("c", output_type=City))
        assert run.output == City("Rome", 3)


def test_output_retries_default_allows_a_third_attempt_from_prompt_here() -> None:
    with scripted_model([BAD, BAD, GOOD]) as fake:
        run = prompt_here(ac.Agent(fake.model), "c", output_type=City)
        assert run.output == City("Rome", 3)


def test_output_retries_default_allows_a_third_attempt_in_the_loop() -> None:
    with scripted_model([BAD, BAD, GOOD]) as fake:
        config = ac.AgentLoopConfig(model=fake.model, output_type=City)
        messages = ac.run_agent_loop([ac.UserMessage("c")], ac.AgentContext("", []), config,
                                     lambda event: None)
    result = messages[-1]
    assert isinstance(result, ac.ToolResultMessage)
    assert (result.tool_name, result.is_error, result.details) == (
        "final_result", False, City("Rome", 3))


def test_output_retries_default_gives_up_after_three_attempts() -> None:
    with scripted_model([BAD, BAD, BAD]) as fake:
        run = ac.Agent(fake.model).prompt("c", output_type=City)
        with pytest.raises(ac.OutputValidationError, match=r"in 3 attempts \(output_retries=2\)"):
            run.raise_for_error()
        fake.assert_called(times=3)
