"""Agents and values at module level, for `tests/integrations/test_batch.py`:
worker processes import them.

A process pool or a Dask worker gets `make_agent` (a `functools.partial` of it, bound to the
chat server's URL) and `City` by reference, so they live here rather than in the test module,
which workers need not import. The `get_weather` tool says which process ran it, so that a test
can tell that runs were spread over several workers.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import attrs

import agentcore as ac


@attrs.frozen
class City:
    """A city, the structured output of the batch tests.

    Attributes:
        name: The city's name.
        population: How many people live there.
    """

    name: str
    population: int


@ac.tool
def get_weather(city: str) -> str:
    """The weather in a city, and the process that looked it up."""
    return f"sunny in {city} (pid {os.getpid()})"


@ac.tool(name="get_weather")
def broken_weather(city: str) -> str:
    """A weather tool that always raises: the model sees the error, the run goes on."""
    raise RuntimeError(f"no weather station in {city}")


def make_agent(url: str, tools: Sequence[ac.AgentTool] = (get_weather,)) -> ac.Agent:
    """A new agent on the chat server at `url` (`tests/chat_server.py`) with a weather tool."""
    model = ac.Model("m-1", "M", "openai-completions", "openai", url)
    return ac.Agent(model, api_key="k", tools=list(tools))


def make_nothing(url: str) -> ac.Agent:
    """A `make_agent` that raises before making anything."""
    raise ValueError("boom")


def make_not_an_agent(url: str) -> ac.Agent:
    """A `make_agent` that returns something else than an agent."""
    return "not an agent"  # type: ignore[return-value]
