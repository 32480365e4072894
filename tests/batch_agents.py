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
from agentcore.providers.faux import faux_assistant_message, faux_tool_call, register_faux_provider


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


def make_pid_agent(url: str) -> ac.Agent:
    """A new agent on the chat server at `url` whose system prompt is `pid <its process id>`:
    the server tells which worker process sent a request."""
    model = ac.Model("m-1", "M", "openai-completions", "openai", url)
    return ac.Agent(model, api_key="k", system_prompt=f"pid {os.getpid()}")


def make_nothing(url: str) -> ac.Agent:
    """A `make_agent` that raises before making anything."""
    raise ValueError("boom")


def make_not_an_agent(url: str) -> ac.Agent:
    """A `make_agent` that returns something else than an agent."""
    return "not an agent"  # type: ignore[return-value]


@ac.tool(requires_approval=True)
def delete_file(path: str) -> str:
    """Delete the file at `path`: a call that must be approved, and that fails if run twice."""
    os.remove(path)
    return f"deleted {os.path.basename(path)} (pid {os.getpid()})"


def _file_reply(context: ac.Context, options: ac.StreamOptions,
                model: ac.Model) -> ac.AssistantMessage:
    """`delete <path>`: a `delete_file` call; after a tool result: `done: <result>`;
    a request declaring `final_result`, after the deletion: its call; else `echo: <text>`."""
    last = context.messages[-1]
    if isinstance(last, ac.ToolResultMessage):
        if last.tool_name == "delete_file" and any(t.name == "final_result"
                                                     for t in context.tools or ()):
            return faux_assistant_message(faux_tool_call(
                "final_result", {"name": last.text, "population": len(last.text)}))
        return faux_assistant_message(f"done: {last.text}")
    text = last.text if isinstance(last, ac.UserMessage) else ""
    if text.startswith("delete "):
        path = text.removeprefix("delete ")
        return faux_assistant_message(faux_tool_call("delete_file", {"path": path},
                                                     id=f"call_{os.path.basename(path)}"))
    if any(t.name == "final_result" for t in context.tools or ()):
        return faux_assistant_message(faux_tool_call(
            "final_result", {"name": text, "population": len(text)}))
    return faux_assistant_message(f"echo: {text}")


def make_file_agent() -> ac.Agent:
    """A new offline agent (a faux model of its own) whose `delete_file` calls need approval."""
    faux = register_faux_provider()
    faux.unregister()  # the agent calls it directly (stream_fn): nothing stays registered
    faux.set_responses([_file_reply] * 4)
    return ac.Agent(faux.get_model(), tools=[delete_file], stream_fn=faux.stream)
