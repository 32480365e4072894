"""Provider options are declared once, in StreamOptions; the Agent and the loop nest it."""

from __future__ import annotations

import inspect
import pydoc
import threading
from typing import Any

import attrs
import pytest
from _internals import FACTORY, OPTION, flat_fields
from mypy_report import MypyReport

import agentcore as ac
from agentcore.providers.faux import FauxProvider, faux_assistant_message, faux_text

OPTION_NAMES = {f.name for f in attrs.fields(ac.StreamOptions)}
STREAM_TYPES = {f.name: f.type for f in attrs.fields(ac.StreamOptions)}


def _aliases(cls: type) -> set[str]:
    return set(cls.__flat_fields__)  # type: ignore[attr-defined]


def test_options_every_stream_option_has_one_alias_on_config_and_agent() -> None:
    # Runs bring their own signal; output_mode="native" sets output_schema from output_type.
    assert _aliases(ac.AgentLoopConfig) == OPTION_NAMES - {"signal", "output_schema"}
    # The Agent's reasoning is its thinking_level.
    assert _aliases(ac.Agent) & OPTION_NAMES == OPTION_NAMES - {"signal", "reasoning",
                                                                 "output_schema"}


@pytest.mark.parametrize(("cls", "held"), [(ac.AgentLoopConfig, "options"), (ac.Agent, "_loop")])
def test_options_aliases_are_not_attrs_fields(cls: type, held: str) -> None:
    fields = {f.name for f in attrs.fields(cls)}
    assert held in fields
    assert not fields & _aliases(cls)


def test_options_an_alias_of_another_type_fails_at_import() -> None:
    with pytest.raises(TypeError, match=r"Bad\.max_tokens: .*'int \| None', got 'str'"):

        @attrs.frozen(kw_only=True)
        @flat_fields(ac.StreamOptions, via="options")
        class Bad:
            options: ac.StreamOptions = attrs.field(factory=ac.StreamOptions)
            max_tokens: str = OPTION


def test_options_an_alias_of_no_option_fails_at_import() -> None:
    with pytest.raises(TypeError, match=r"Bad\.max_tokenz: an alias must name a field of "):

        @attrs.frozen(kw_only=True)
        @flat_fields(ac.StreamOptions, via="options")
        class Bad:
            options: ac.StreamOptions = attrs.field(factory=ac.StreamOptions)
            max_tokenz: int | None = OPTION


def test_options_flat_keywords_fill_the_nested_options(faux: FauxProvider) -> None:
    model = faux.get_model()
    config = ac.AgentLoopConfig(model=model, max_tokens=5, session_id="s", reasoning="high")
    assert config.options == ac.StreamOptions(max_tokens=5, session_id="s", reasoning="high")
    assert (config.max_tokens, config.session_id) == (5, "s")
    assert config.reasoning is ac.ThinkingLevel.HIGH
    agent = ac.Agent(model, max_tokens=5, temperature=0.5)
    assert agent.options == ac.StreamOptions(max_tokens=5, temperature=0.5)


def test_options_flat_keywords_win_over_the_options_given(faux: FauxProvider) -> None:
    model = faux.get_model()
    given = ac.StreamOptions(max_tokens=5, temperature=0.1)
    config = ac.AgentLoopConfig(model=model, options=given, max_tokens=7)
    assert config.options == ac.StreamOptions(max_tokens=7, temperature=0.1)
    assert ac.Agent(model, options=given, max_tokens=7).options == config.options


def test_options_evolve_changes_one_option(faux: FauxProvider) -> None:
    config = ac.AgentLoopConfig(model=faux.get_model(), max_tokens=5, temperature=0.1)
    changed = attrs.evolve(config, max_tokens=9)
    assert changed.options == ac.StreamOptions(max_tokens=9, temperature=0.1)
    swapped = attrs.evolve(config, options=ac.StreamOptions(timeout=3.0))
    assert swapped.options == ac.StreamOptions(timeout=3.0)


def test_options_evolve_without_an_alias_checks_as_construction_does(faux: FauxProvider) -> None:
    # No alias given (the Agent's config per run): attrs' own __init__ at once, same value
    config = ac.AgentLoopConfig(model=faux.get_model(), max_tokens=5, deps="d")
    assert attrs.evolve(config, deps=1) == ac.AgentLoopConfig(
        model=faux.get_model(), options=ac.StreamOptions(max_tokens=5), deps=1)
    with pytest.raises(TypeError, match="'before_tool_call' must accept 2 argument"):
        attrs.evolve(config, before_tool_call=lambda context: None)
    with pytest.raises(ValueError, match=r"'options\.signal' must be None"):
        attrs.evolve(config, options=ac.StreamOptions(signal=ac.AbortController().signal))
    with pytest.raises(TypeError, match="takes 0 positional argument"):
        ac.AgentLoopConfig(faux.get_model())  # type: ignore[misc]


def test_options_config_is_frozen_through_its_aliases(faux: FauxProvider) -> None:
    config = ac.AgentLoopConfig(model=faux.get_model())
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        config.max_tokens = 5  # type: ignore[misc]


def test_options_agent_attributes_write_through_to_options(faux: FauxProvider) -> None:
    agent = ac.Agent(faux.get_model())
    agent.max_tokens = 64
    agent.headers = {"x-trace": "1"}
    assert agent.options == ac.StreamOptions(max_tokens=64, headers={"x-trace": "1"})
    agent.options = ac.StreamOptions(timeout=2.5)
    assert (agent.max_tokens, agent.timeout) == (None, 2.5)


BAD_OPTIONS = [
    ("max_tokens", -1, ValueError),
    ("max_retries", True, TypeError),
    ("max_retry_delay_ms", -5, ValueError),
    ("thinking_budgets", {"low": "x"}, TypeError),
    ("temperature", "hot", TypeError),
    ("cache_retention", "forever", ValueError),
    ("transport", "websocket", ValueError),
    ("headers", {"x": 1}, TypeError),
    ("timeout", "soon", TypeError),
    ("on_payload", "not callable", TypeError),
    ("api_key", b"bytes", TypeError),
]


@pytest.mark.parametrize(("name", "value", "error"), BAD_OPTIONS)
def test_options_bad_value_is_rejected_the_same_everywhere(
    faux: FauxProvider, name: str, value: Any, error: type[Exception]
) -> None:
    model = faux.get_model()
    with pytest.raises(error, match=f"'{name}'"):
        ac.StreamOptions(**{name: value})
    with pytest.raises(error, match=f"'{name}'"):
        ac.AgentLoopConfig(model=model, **{name: value})
    with pytest.raises(error, match=f"'{name}'"):
        ac.Agent(model, **{name: value})
    agent = ac.Agent(model)
    with pytest.raises(error, match=f"'{name}'"):
        setattr(agent, name, value)
    assert agent.options == ac.StreamOptions()


def test_options_bad_agent_option_leaves_the_agent_idle_and_usable(faux: FauxProvider) -> None:
    """The bug this layout fixed: Agent(model, max_tokens=-1).prompt() left it 'running'."""
    agent = ac.Agent(faux.get_model())
    with pytest.raises(ValueError, match="'max_tokens'"):
        agent.max_tokens = -1
    faux.set_responses([faux_assistant_message([faux_text("fine")])])
    run = agent.prompt("hi")
    assert run.result(timeout=5)[-1].text == "fine"  # type: ignore[union-attr]
    assert agent.wait_for_idle(timeout=5)
    assert not agent.state.is_streaming


def test_options_failing_start_leaves_the_agent_idle(
    faux: FauxProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = ac.Agent(faux.get_model())

    def no_thread(self: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")

    with monkeypatch.context() as patch:
        patch.setattr(threading.Thread, "start", no_thread)
        with pytest.raises(RuntimeError, match="can't start new thread"):
            agent.prompt("hi")
    assert agent.signal is None
    assert not agent.state.is_streaming
    assert agent.wait_for_idle(timeout=1)
    faux.set_responses([faux_assistant_message([faux_text("again")])])
    assert agent.prompt("hi").result(timeout=5)[-1].text == "again"  # type: ignore[union-attr]


def test_options_nested_signal_is_rejected(faux: FauxProvider) -> None:
    signal = ac.AbortController().signal
    with pytest.raises(ValueError, match=r"'options.signal' must be None"):
        ac.AgentLoopConfig(model=faux.get_model(), options=ac.StreamOptions(signal=signal))
    with pytest.raises(ValueError, match=r"'options.signal' must be None"):
        ac.Agent(faux.get_model(), options=ac.StreamOptions(signal=signal))


def test_options_agent_thinking_level_is_its_reasoning_option(faux: FauxProvider) -> None:
    agent = ac.Agent(faux.get_model(), options=ac.StreamOptions(reasoning="high"))
    assert agent.thinking_level is ac.ThinkingLevel.HIGH
    agent.thinking_level = "low"  # type: ignore[assignment]
    assert agent.options == ac.StreamOptions(reasoning="low")
    agent.options = ac.StreamOptions()  # no reasoning option: the level reads "off"
    assert agent.thinking_level is ac.ThinkingLevel.OFF
    with pytest.raises(ValueError, match="'thinking_level' must be one of 'off'"):
        agent.thinking_level = None  # type: ignore[assignment]


def test_options_reach_the_provider_with_the_run_signal(faux: FauxProvider) -> None:
    seen: list[ac.StreamOptions] = []

    def reply(context: ac.Context, options: ac.StreamOptions, model: ac.Model) -> Any:
        seen.append(options)
        return faux_assistant_message([faux_text("ok")])

    faux.set_responses([reply, reply])
    agent = ac.Agent(faux.get_model(), thinking_level="low", max_tokens=32, session_id="s1",
                     api_key="test-key")
    run = agent.prompt("hi")
    run.result(timeout=5)
    [options] = seen
    assert options.signal is run.signal
    assert options.reasoning is ac.ThinkingLevel.LOW
    assert (options.max_tokens, options.session_id, options.api_key) == (32, "s1", "test-key")
    config = ac.AgentLoopConfig(model=faux.get_model(), reasoning="off", temperature=0.2)
    ac.run_agent_loop([ac.UserMessage("hi")], ac.AgentContext("", []), config, lambda e: None)
    assert seen[1].reasoning is None  # "off" sends no reasoning option
    assert seen[1].temperature == 0.2


def test_options_keep_secrets_out_of_reprs(faux: FauxProvider) -> None:
    agent = ac.Agent(faux.get_model(), api_key="sk-test-SECRET", headers={"x-api-key": "HIDDEN"})
    config = ac.AgentLoopConfig(model=faux.get_model(), api_key="sk-test-SECRET",
                                headers={"Authorization": "Bearer HIDDEN"})
    for text in (repr(agent), repr(agent.options), repr(config)):
        assert "SECRET" not in text
        assert "HIDDEN" not in text


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_options_flat_keywords_type_check(mypy_report: MypyReport) -> None:
    """mypy --strict sees the aliases as typed keywords and attributes (and rejects bad ones):
    tests/typing/options_flat_keywords_{pass,fail}.py."""
    assert mypy_report.errors("tests/typing/options_flat_keywords_pass.py") == [], \
        mypy_report.output
    [error] = mypy_report.errors("tests/typing/options_flat_keywords_fail.py")
    assert 'Argument "max_tokens" to "Agent" has incompatible type "str"' in error


def test_options_a_bad_options_value_is_not_hidden_by_flat_keywords(faux: FauxProvider) -> None:
    with pytest.raises(TypeError, match="'options' must be a StreamOptions"):
        ac.AgentLoopConfig(model=faux.get_model(), options={"max_tokens": 5}, max_tokens=5)
    with pytest.raises(TypeError, match="'options' must be a StreamOptions"):
        ac.Agent(faux.get_model(), options="fast", timeout=1.0)


def test_options_agent_takes_only_the_model_by_position(faux: FauxProvider) -> None:
    """Everything after the model is a keyword; a second positional names the fix."""
    with pytest.raises(TypeError, match=r"^Agent\(\) takes 1 positional argument\(s\) but 2 "
                       r"were given; pass the others by keyword \(system_prompt=\.\.\., "):
        ac.Agent(faux.get_model(), "Be brief.")  # type: ignore[misc]
    agent = ac.Agent(faux.get_model(), system_prompt="Be brief.")
    assert agent.system_prompt == "Be brief."


Param = inspect.Parameter


def _init_names(cls: type) -> set[str]:
    """What attrs' own `__init__` takes, and the flat aliases: all a constructor takes."""
    return {f.alias for f in attrs.fields(cls) if f.init} | _aliases(cls)


def _kinds(signature: inspect.Signature) -> dict[str, Any]:
    return {name: p.kind for name, p in signature.parameters.items()}


def test_options_agent_signature_lists_what_the_constructor_takes() -> None:
    signature = inspect.signature(ac.Agent)
    parameters = signature.parameters
    assert set(parameters) == _init_names(ac.Agent) | {"model"}
    assert _kinds(signature) == {name: Param.POSITIONAL_OR_KEYWORD if name == "model"
                                 else Param.KEYWORD_ONLY for name in parameters}
    # Declaration order: the agent's own fields, then the loop's settings, then the options
    assert list(parameters)[:5] == ["model", "system_prompt", "thinking_level", "tools",
                                    "messages"]
    assert list(parameters).index("session") < list(parameters).index("convert_to_llm") \
        < list(parameters).index("options") < list(parameters).index("max_tokens")
    defaults = {name: p.default for name, p in parameters.items()}
    assert defaults["model"] is Param.empty
    assert (defaults["system_prompt"], defaults["thinking_level"], defaults["tools"],
            defaults["max_events"], defaults["limits"], defaults["transport"],
            defaults["max_tokens"], defaults["options"]) == (
        "", ac.ThinkingLevel.OFF, (), 100_000, ac.UsageLimits(max_model_calls=50), "sse",
        None, FACTORY)
    assert (parameters["system_prompt"].annotation, parameters["max_tokens"].annotation) == (
        "str", "int | None")
    assert signature.parameters["convert_to_llm"].default is ac.default_convert_to_llm


def test_options_agent_accepts_every_keyword_its_signature_lists(faux: FauxProvider) -> None:
    model = faux.get_model()
    plain = ac.Agent(model)
    for name, parameter in inspect.signature(ac.Agent).parameters.items():
        if parameter.default in (Param.empty, FACTORY):
            continue
        agent = ac.Agent(model, **{name: parameter.default})  # the default, given: accepted
        assert getattr(agent, name) == getattr(plain, name), name
    assert ac.Agent(model, options=ac.StreamOptions()).options == plain.options
    with pytest.raises(TypeError, match="max_tokenz"):
        ac.Agent(model, max_tokenz=5)  # type: ignore[call-arg]
    signature = inspect.signature(ac.Agent)
    with pytest.raises(TypeError):
        signature.bind(model, "Be brief.")  # as the constructor: one positional argument
    with pytest.raises(TypeError):
        ac.Agent(model, "Be brief.")  # type: ignore[misc]
    assert signature.bind(model=model, tools=[]).arguments == {"model": model, "tools": []}


def test_options_config_signature_lists_what_the_constructor_takes(faux: FauxProvider) -> None:
    signature = inspect.signature(ac.AgentLoopConfig)
    parameters = signature.parameters
    assert set(parameters) == _init_names(ac.AgentLoopConfig)
    assert set(_kinds(signature).values()) == {Param.KEYWORD_ONLY}
    assert list(parameters)[:2] == ["model", "convert_to_llm"]
    assert list(parameters).index("options") < list(parameters).index("reasoning")
    assert parameters["model"].default is Param.empty
    assert (parameters["options"].default, parameters["output_retries"].default,
            parameters["max_event_bytes"].default, parameters["reasoning"].default) == (
        FACTORY, 2, ac.StreamOptions().max_event_bytes, None)
    model = faux.get_model()
    given = {name: p.default for name, p in parameters.items()
             if p.default not in (Param.empty, FACTORY)}
    for name, value in given.items():  # each keyword is accepted alone
        ac.AgentLoopConfig(model=model, **{name: value})
    # and the defaults the signature shows are the ones a config gets
    assert ac.AgentLoopConfig(model=model, **given) == ac.AgentLoopConfig(model=model)
    with pytest.raises(TypeError, match="max_tokenz"):
        ac.AgentLoopConfig(model=model, max_tokenz=5)  # type: ignore[call-arg]


def test_options_help_shows_the_constructor_parameters(faux: FauxProvider) -> None:
    for cls in (ac.Agent, ac.AgentLoopConfig):
        text = pydoc.render_doc(cls, renderer=pydoc.plaintext)
        header = next(line for line in text.splitlines() if f"{cls.__name__}(" in line
                      and "model" in line)
        for name in ("model", "max_tokens", "before_tool_call", "tool_timeout"):
            assert f"{name}: " in header, (cls, name)
        assert "**kwargs" not in header
    assert "thinking_level: 'ThinkingLevel' = <ThinkingLevel.OFF" in str(
        inspect.signature(ac.Agent))
    with pytest.raises(TypeError, match="not a callable object"):
        inspect.signature(ac.Agent(faux.get_model()))  # an instance: not the constructor's
