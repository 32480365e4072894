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
