"""Everyday ergonomics (API §12): tool failures the developer can see, plain functions as
tools, `deps` for tools, and a missing API key raised before the run."""

from __future__ import annotations

import logging
from typing import Any

import pytest

import agentcore as ac
from agentcore.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call

WAIT = 5.0


def one_call(name: str, args: dict[str, Any] | None = None) -> ac.AssistantMessage:
    return faux_assistant_message([faux_tool_call(name, args or {}, id="c1")],
                                  stop_reason="toolUse")


def tool_results(messages: list[ac.AgentMessage]) -> list[tuple[str, bool]]:
    return [(m.text, m.is_error) for m in messages if isinstance(m, ac.ToolResultMessage)]


# --- a tool that raises: `Type: message` for the model, the traceback in the log ----------------


def test_a_tool_bug_reaches_the_model_with_its_type_and_the_log_with_its_traceback(
    faux: FauxProvider, caplog: pytest.LogCaptureFixture,
) -> None:
    @ac.tool
    def lookup(city: str) -> str:
        """Look a city up."""
        return {"paris": "x"}[city]

    faux.set_responses([one_call("lookup", {"city": "Rome"}), faux_assistant_message("sorry")])
    with caplog.at_level(logging.INFO, logger="agentcore.tools"):
        out = ac.Agent(faux.get_model(), tools=[lookup]).prompt("go").result(WAIT)
    assert tool_results(out) == [("KeyError: 'Rome'", True)]
    [record] = [r for r in caplog.records if r.name == "agentcore.tools"]
    assert record.levelno == logging.INFO
    assert record.getMessage() == "tool 'lookup' raised KeyError"
    assert record.exc_info is not None
    assert record.exc_info[0] is KeyError


def test_an_exception_without_a_message_is_its_type_name(faux: FauxProvider) -> None:
    @ac.tool
    def fails() -> str:
        """Fail."""
        raise ValueError

    faux.set_responses([one_call("fails"), faux_assistant_message("ok")])
    out = ac.Agent(faux.get_model(), tools=[fails]).prompt("go").result(WAIT)
    assert tool_results(out) == [("ValueError", True)]


# --- plain functions as tools ---------------------------------------------------------------


def test_plain_functions_are_tools(faux: FauxProvider) -> None:
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    faux.set_responses([one_call("add", {"a": 2, "b": 40}), faux_assistant_message("42")])
    agent = ac.Agent(faux.get_model(), tools=[add])
    assert isinstance(agent.tools[0], ac.AgentTool)
    assert agent.tools[0].name == "add"
    assert agent.tools[0].parameters["required"] == ["a", "b"]
    assert tool_results(agent.prompt("go").result(WAIT)) == [("42", False)]
    agent.tools = [add]  # assignment too
    assert isinstance(agent.tools[0], ac.AgentTool)


def test_a_plain_function_that_cannot_be_a_tool_says_why(faux: FauxProvider) -> None:
    async def fetch(url: str) -> str:
        """Fetch."""
        return url

    with pytest.raises(TypeError, match="is async; agentcore runs tools synchronously"):
        ac.Agent(faux.get_model(), tools=[fetch])


# --- deps --------------------------------------------------------------------------------------


class Db:
    def __init__(self) -> None:
        self.rows = {"u1": "Ada"}


def test_deps_reach_tools_with_a_deps_parameter(faux: FauxProvider) -> None:
    @ac.tool
    def user_name(user_id: str, deps: Db) -> str:
        """Look a user up."""
        return deps.rows[user_id]

    assert "deps" not in user_name.parameters["properties"]
    faux.set_responses([one_call("user_name", {"user_id": "u1"}), faux_assistant_message("ok")])
    agent = ac.Agent(faux.get_model(), tools=[user_name], deps=Db())
    assert tool_results(agent.prompt("go").result(WAIT)) == [("Ada", False)]


def test_deps_in_the_low_level_loop_and_in_parallel_runs(faux: FauxProvider) -> None:
    seen: list[object] = []

    @ac.tool
    def who(deps: str) -> str:
        """Say whose run this is."""
        seen.append(deps)
        return deps

    reply = faux_assistant_message([faux_tool_call("who", {}, id="a"),
                                    faux_tool_call("who", {}, id="b")], stop_reason="toolUse")
    faux.set_responses([reply, faux_assistant_message("done")])
    ac.run_agent_loop([ac.UserMessage("go")], ac.AgentContext("", [], [who]),
                      ac.AgentLoopConfig(model=faux.get_model(), deps="alice"), lambda e: None)
    assert seen == ["alice", "alice"]
    assert ac.AgentLoopConfig(model=faux.get_model()).deps is None


def test_a_tool_without_deps_gets_none(faux: FauxProvider) -> None:
    @ac.tool
    def show(deps: object = "unset") -> str:
        """Show the deps."""
        return repr(deps)

    faux.set_responses([one_call("show"), faux_assistant_message("done")])
    out = ac.Agent(faux.get_model(), tools=[show]).prompt("go").result(WAIT)
    assert tool_results(out) == [("None", False)]


# --- a missing API key raises before the run ------------------------------------------------


def test_prompt_raises_missing_api_key_before_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    agent = ac.Agent(ac.get_model("openai", "gpt-4o-mini"))
    with pytest.raises(ac.MissingApiKeyError, match="OPENAI_API_KEY"):
        agent.prompt("hi")
    assert not agent.state.is_streaming  # still idle and usable
    assert agent.state.messages == []
    agent.close()
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_OAUTH_TOKEN", raising=False)
    other = ac.Agent(ac.get_model("anthropic", "claude-sonnet-4-5"),
                     messages=[ac.UserMessage("hi")])
    with pytest.raises(ac.MissingApiKeyError, match="ANTHROPIC"):
        other.continue_()


def test_no_key_check_with_a_key_hook_a_custom_stream_fn_or_a_local_server(
    monkeypatch: pytest.MonkeyPatch, faux: FauxProvider,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    model = ac.get_model("openai", "gpt-4o-mini")
    faux.set_responses([faux_assistant_message("hi"), faux_assistant_message("hi")])

    def via_faux(m: ac.Model, context: ac.Context, options: ac.StreamOptions) -> Any:
        return ac.stream(faux.get_model(), context, options)

    run = ac.Agent(model, stream_fn=via_faux).prompt("hi")
    assert run.result(WAIT)[-1].role == "assistant"
    # A key hook may find a key the environment does not have: no check before the run.
    hooked = ac.Agent(model, get_api_key=lambda provider: None)
    run = hooked.prompt("hi")  # does not raise; the run ends with the provider's error
    assert run.result(WAIT)[-1].error_message is not None
