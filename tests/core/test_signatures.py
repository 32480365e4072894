"""Hooks, listeners and sinks are checked when given: the wrong arity fails at once (API §11)."""

from __future__ import annotations

import re
from typing import Any

import pytest

import agentcore as ac
from agentcore.providers.faux import FauxProvider

HOOKS = {  # name -> a callable with one parameter too few, the signature the error names
    "convert_to_llm": (lambda: None, "convert_to_llm(messages)"),
    "transform_context": (lambda messages: messages, "transform_context(messages, signal)"),
    "get_api_key": (lambda: None, "get_api_key(provider)"),
    "before_tool_call": (lambda context: None, "before_tool_call(context, signal)"),
    "after_tool_call": (lambda context: None, "after_tool_call(context, signal)"),
    "prepare_next_turn": (lambda context: None, "prepare_next_turn(context, signal)"),
    "should_stop_after_turn": (lambda: False, "should_stop_after_turn(context)"),
}


@pytest.mark.parametrize("name", sorted(HOOKS))
def test_signatures_config_hook_with_wrong_arity_is_rejected(faux: FauxProvider,
                                                            name: str) -> None:
    fn, signature = HOOKS[name]
    with pytest.raises(TypeError, match=rf"'{name}' must accept .*{re.escape(signature)}"):
        ac.AgentLoopConfig(model=faux.get_model(), **{name: fn})


@pytest.mark.parametrize("name", sorted(HOOKS))
def test_signatures_agent_hook_is_checked_at_construction_and_assignment(
    faux: FauxProvider, name: str
) -> None:
    fn, signature = HOOKS[name]
    with pytest.raises(TypeError, match=rf"'{name}' must accept .*{re.escape(signature)}"):
        ac.Agent(faux.get_model(), **{name: fn})
    agent = ac.Agent(faux.get_model())
    with pytest.raises(TypeError, match=rf"'{name}' must accept"):
        setattr(agent, name, fn)


def test_signatures_flexible_callables_are_accepted(faux: FauxProvider) -> None:
    def anything(*args: Any, **kwargs: Any) -> None:
        return None

    def with_default(context: Any, signal: Any = None, extra: int = 0) -> None:
        return None

    class Hook:
        def __call__(self, context: Any, signal: Any) -> None:
            return None

    ac.AgentLoopConfig(model=faux.get_model(), before_tool_call=anything,
                       after_tool_call=with_default, prepare_next_turn=Hook(),
                       get_api_key=print)  # a builtin: trusted
    ac.Agent(faux.get_model(), before_tool_call=Hook())


def test_signatures_listener_sink_stream_fn_and_tool_are_checked(faux: FauxProvider) -> None:
    agent = ac.Agent(faux.get_model())
    with pytest.raises(TypeError, match=r"listener\(event, signal\)"):
        agent.subscribe(lambda event: None)
    context = ac.AgentContext("", [])
    config = ac.AgentLoopConfig(model=faux.get_model())
    with pytest.raises(TypeError, match=r"emit\(event\)"):
        ac.run_agent_loop([ac.UserMessage("hi")], context, config, lambda: None)
    with pytest.raises(TypeError, match=r"stream_fn\(model, context, options\)"):
        ac.run_agent_loop([ac.UserMessage("hi")], context, config, lambda e: None,
                          stream_fn=lambda model, context: None)
    with pytest.raises(TypeError, match=r"stream_fn\(model, context, options\)"):
        ac.Agent(faux.get_model(), stream_fn=lambda model: None)
    with pytest.raises(TypeError, match=r"'execute' must accept 4 argument"):
        ac.AgentTool("t", "d", {"type": "object"}, lambda call_id, args: None)
    with pytest.raises(TypeError, match=r"'on_payload' must accept"):
        ac.StreamOptions(on_payload=lambda payload: None)
