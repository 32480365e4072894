"""Hooks, listeners and sinks are checked when given: the wrong arity fails at once (API §11)."""

from __future__ import annotations

import functools
import inspect
import re
from typing import Any

import pytest
from _internals import cannot_take

import agentcore as ac
from agentcore.providers.faux import FauxProvider, faux_assistant_message

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


def _three(agent: Any, run: Any, event: Any) -> None:
    return None


def _keyword(agent: Any, *, run: Any) -> None:
    return None


@pytest.mark.parametrize(("fn", "count"), [
    (functools.partial(_three, 1, 2), 1), (functools.partial(_three, 1, 2), 2),
    (functools.partial(_three, 1), 1), (functools.partial(_three, 1), 2),
    (functools.partial(_three, 1, run=2), 1), (functools.partial(_keyword, run=1), 0),
    (functools.partial(_keyword, run=1), 1), (functools.partial(_keyword), 1),
    (functools.partial(functools.partial(_three, 1), 2), 1),
])
def test_signatures_partial_is_judged_as_inspect_judges_it(fn: Any, count: int) -> None:
    try:
        inspect.signature(fn).bind(*range(count))
    except TypeError:
        expected = True
    else:
        expected = False
    assert cannot_take(fn, count) is expected
    assert cannot_take(fn, count) is expected  # the second answer comes from the cache


def test_signatures_a_new_partial_per_run_is_checked_once(monkeypatch: pytest.MonkeyPatch,
                                                          faux: FauxProvider) -> None:
    # An agent's sink is a new functools.partial for every run: its check is cached by its
    # function and what it binds, so a run never asks inspect.signature again
    calls = []
    real = inspect.signature
    monkeypatch.setattr(inspect, "signature", lambda fn, **kw: calls.append(fn) or real(fn, **kw))

    def sink(events: list[Any], event: Any) -> None:
        events.append(event)

    context = ac.AgentContext("", [])
    config = ac.AgentLoopConfig(model=faux.get_model())
    faux.set_responses([faux_assistant_message("one"), faux_assistant_message("two")])
    ac.run_agent_loop([ac.UserMessage("hi")], context, config, functools.partial(sink, []))
    calls.clear()
    ac.run_agent_loop([ac.UserMessage("hi")], context, config, functools.partial(sink, []))
    assert calls == []
