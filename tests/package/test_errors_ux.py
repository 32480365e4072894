"""Everyday mistakes get one-line errors (API §12, ux review §6/B2/B4/B5), and lists serialize.

Each constructor error names the field (a list's item by its index), what it must be and the
value given with its type, shortened; where there is an obvious fix, it says it: a model's
name gets `get_model`, a tool's name the tool itself, dicts for messages `from_dict`.
"""

from __future__ import annotations

import ast
from typing import Any

import attrs
import paths
import pytest
from mypy_report import MypyReport

import agentcore as ac
from agentcore.providers.faux import FauxProvider
from agentcore.testing import scripted_model, tool_call

WAIT = 5.0
ROOT = paths.ROOT
MODEL = ac.Model("m", "M", "faux", "faux", "http://localhost:0")
DICT = {"role": "user", "content": "hi"}
LOAD_DICTS = "to load dicts, use agentcore.from_dict(list[AgentMessage], data)"


def _message(call: Any) -> str:
    with pytest.raises((TypeError, ValueError)) as info:
        call()
    assert len(info.value.args) == 1, info.value.args  # never attrs' (message, Attribute, ...)
    text = str(info.value)
    assert "\n" not in text
    return text


def test_errors_ux_model_given_by_name_says_get_model() -> None:
    assert _message(lambda: ac.Agent("openai/gpt-4o-mini")) == (
        "'model' must be a Model, got 'openai/gpt-4o-mini' (str); "
        "use agentcore.get_model('openai', 'gpt-4o-mini')"
    )


def test_errors_ux_model_given_by_bare_id_says_get_model_with_a_provider() -> None:
    assert _message(lambda: ac.AgentLoopConfig(model="gpt-4o-mini")) == (
        "'model' must be a Model, got 'gpt-4o-mini' (str); use "
        "agentcore.get_model(provider, 'gpt-4o-mini') (agentcore.get_providers() lists them)"
    )


def test_errors_ux_scripted_model_itself_says_pass_its_model() -> None:
    with scripted_model() as fake:
        assert _message(lambda: ac.Agent(fake)).endswith(  # type: ignore[arg-type]
            "(ScriptedModel); pass its .model attribute"
        )


def test_errors_ux_tool_given_by_name_says_pass_the_tool() -> None:
    assert _message(lambda: ac.Agent(MODEL, tools=["name"])) == (  # type: ignore[list-item]
        "'tools[0]' must be an AgentTool or a function, got 'name' (str); "
        "pass the tool itself (a function, or one made with @agentcore.tool), not its name"
    )


def test_errors_ux_tools_not_a_list() -> None:
    def lookup(city: str) -> str:
        return city

    assert _message(lambda: ac.Agent(MODEL, tools=lookup)) == (  # type: ignore[arg-type]
        f"'tools' must be a list of AgentTool or functions, got {lookup!r} (function); "
        "give a list, tools=[...]"
    )


def test_errors_ux_messages_as_dicts_say_from_dict() -> None:
    assert _message(lambda: ac.Agent(MODEL, messages=[DICT])) == (  # type: ignore[list-item]
        "'messages[0]' must be a message such as UserMessage, got "
        f"{{'role': 'user', 'content': 'hi'}} (dict); {LOAD_DICTS}"
    )
    assert _message(lambda: ac.AgentContext(messages=[DICT])) == (  # type: ignore[list-item]
        "'messages[0]' must be a message such as UserMessage, got "
        f"{{'role': 'user', 'content': 'hi'}} (dict); {LOAD_DICTS}"
    )
    agent = ac.Agent(MODEL)
    with pytest.raises(TypeError) as info:
        agent.messages = [ac.UserMessage("ok"), DICT]  # type: ignore[list-item]
    assert str(info.value).startswith("'messages[1]' must be a message such as UserMessage")
    assert agent.messages == []


def test_errors_ux_prompt_dicts_say_from_dict(faux: FauxProvider) -> None:
    agent = ac.Agent(faux.get_model())
    assert _message(lambda: agent.prompt(DICT)) == (  # type: ignore[arg-type]
        "'input' must be a str, a message or a list of messages, got "
        "{'role': 'user', 'content': 'hi'} (dict); "
        "to load a dict, use agentcore.from_dict(AgentMessage, data)"
    )
    assert _message(lambda: agent.prompt([DICT])) == (  # type: ignore[list-item]
        "'input[0]' must be a message such as UserMessage, got "
        f"{{'role': 'user', 'content': 'hi'}} (dict); {LOAD_DICTS}"
    )
    assert not agent.state.is_streaming


def test_errors_ux_context_messages_name_the_item() -> None:
    assert _message(lambda: ac.Context(None, [ac.UserMessage("a"), DICT])) == (  # type: ignore[list-item]
        "'messages[1]' must be a UserMessage, an AssistantMessage or a ToolResultMessage, got "
        f"{{'role': 'user', 'content': 'hi'}} (dict); {LOAD_DICTS}"
    )


@pytest.mark.parametrize(
    ("call", "text"),
    [
        (lambda: ac.UserMessage(5),
         "'content' must be a str or a list of TextContent or ImageContent, got 5 (int)"),
        (lambda: ac.TextContent(None), "'text' must be a str, got None"),
        (lambda: ac.UserMessage([ac.TextContent("a"), "b"]),
         "'content[1]' must be a TextContent or an ImageContent, got 'b' (str)"),
        (lambda: ac.AssistantMessage([ac.TextContent("a"), {"type": "text"}], "a", "p", "m"),
         "'content[1]' must be a TextContent, a ThinkingContent or a ToolCall, "
         "got {'type': 'text'} (dict)"),
        (lambda: ac.ToolResultMessage("c", "t", added_tool_names=["a", 7]),
         "'added_tool_names[1]' must be a str, got 7 (int)"),
        (lambda: ac.AgentToolResult("done"),
         "'content' must be a list of TextContent or ImageContent, got 'done' (str)"),
        (lambda: ac.Usage(cost=5), "'cost' must be a Cost, got 5 (int)"),
        (lambda: ac.Cost(input="1"), "'input' must be a number, got '1' (str)"),
        (lambda: ac.Cost(input=True), "'input' must be a number, not a bool, got True (bool)"),
        (lambda: ac.AssistantMessage([], "a", "p", "m", timestamp=1.5),
         "'timestamp' must be an int, got 1.5 (float)"),
        (lambda: ac.StreamOptions(cache_retention="forever"),
         "'cache_retention' must be 'none', 'short' or 'long', got 'forever' (str)"),
        (lambda: ac.StreamOptions(thinking_budgets={"low": "x"}),
         "'thinking_budgets'['low'] must be an int, got 'x' (str)"),
        (lambda: ac.StreamOptions(temperature="hot"),
         "'temperature' must be a number or None, got 'hot' (str)"),
        (lambda: ac.AgentTool("t", "d", {}, lambda a, b, c, d: None, prepare_arguments=5),
         "'prepare_arguments' must be callable or None, got 5 (int)"),
        (lambda: ac.AgentContext(tools=["lookup"]),
         "'tools[0]' must be an AgentTool, got 'lookup' (str); "
         "pass the tool itself (a function decorated with @agentcore.tool), not its name"),
    ],
)
def test_errors_ux_value_class_errors_are_one_line(call: Any, text: str) -> None:
    assert _message(call) == text


def test_errors_ux_shown_value_is_shortened() -> None:
    huge = ["x" * 10_000] * 1_000
    text = _message(lambda: ac.TextContent(huge))  # type: ignore[arg-type]
    assert text.startswith("'text' must be a str, got ['xxx")
    assert text.endswith("... (list)")
    assert len(text) < 300


class _Bad:
    def __repr__(self) -> str:
        return "<bad>"


def _attrs_classes() -> list[type]:
    return [obj for name in ac.__all__
            if isinstance(obj := getattr(ac, name), type) and attrs.has(obj)]


def test_errors_ux_every_validator_of_a_public_class_raises_one_line_naming_its_field() -> None:
    checked = 0
    for cls in _attrs_classes():
        for field in attrs.fields(cls):
            if field.validator is None:
                continue
            with pytest.raises((TypeError, ValueError)) as info:
                field.validator(None, field, _Bad())
            assert len(info.value.args) == 1, (cls, field.name, info.value.args)
            assert str(info.value).startswith(f"'{field.name}"), (cls, field.name, info.value)
            checked += 1
    assert checked > 100


def test_errors_ux_no_module_uses_attrs_tuple_raising_validators() -> None:
    """attrs' instance_of & co. raise with a tuple of internals: use `_core._validators`."""
    tuple_raising = {"instance_of", "deep_iterable", "deep_mapping", "in_", "is_callable",
                     "matches_re", "min_len", "max_len", "not_", "or_"}
    found = []
    for path in sorted((ROOT / "agentcore").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "attrs.validators":
                found += [f"{path.relative_to(ROOT)}: {a.name}" for a in node.names
                          if a.name in tuple_raising]
    assert found == []


# Serialization of lists (B2)

def _transcript_and_events() -> tuple[list[ac.AgentMessage], list[ac.AgentEvent]]:
    @ac.tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    with scripted_model([tool_call("add", {"a": 1, "b": 2}), "The answer is 3"]) as fake:
        agent = ac.Agent(fake.model, tools=[add])
        run = agent.prompt("What is 1 + 2?")
        run.result(WAIT)
        events = list(run)
    return agent.state.messages, events


def test_errors_ux_list_of_messages_round_trips() -> None:
    messages, _ = _transcript_and_events()
    assert [m.role for m in messages] == ["user", "assistant", "toolResult", "assistant"]
    text = ac.to_json(messages)
    assert text.startswith('[{"role":"user"')
    assert ac.from_json(list[ac.AgentMessage], text) == messages
    data = ac.to_dict(messages)
    assert data == [ac.to_dict(m) for m in messages]
    assert ac.from_dict(list[ac.AgentMessage], data) == messages
    assert ac.to_dict(tuple(messages)) == data


def test_errors_ux_list_of_events_round_trips() -> None:
    _, events = _transcript_and_events()
    assert (events[0].type, events[-1].type) == ("agent_start", "agent_end")
    assert ac.from_json(list[ac.AgentEvent], ac.to_json(events)) == events


def test_errors_ux_empty_list_serializes_as_an_empty_array() -> None:
    assert (ac.to_json([]), ac.to_dict([])) == ("[]", [])
    assert ac.from_json(list[ac.AgentMessage], "[]") == []


def test_errors_ux_serialization_error_of_a_big_list_is_short() -> None:
    messages: list[Any] = [ac.UserMessage("x" * 2_400) for _ in range(50)]
    with pytest.raises(ac.SerializationError) as info:
        ac.to_json({"messages": messages})
    assert len(str(info.value)) < 400
    assert str(info.value).endswith(
        "(dict): expected an attrs value (a message, an event...) or a list of them")
    with pytest.raises(ac.SerializationError) as info:
        ac.to_json([*messages, DICT])
    assert str(info.value) == (
        "cannot serialize item [50] of the list, {'role': 'user', 'content': 'hi'} (dict): "
        "expected an attrs value (a message, an event...) or a list of them"
    )


def test_errors_ux_decoding_errors_are_short() -> None:
    text = "[" + ",".join(['{"role":"user","content":5}'] * 1_000) + "]"
    with pytest.raises(ac.SerializationError) as info:
        ac.from_json(list[ac.AgentMessage], text)
    message = str(info.value)
    assert message.startswith("cannot decode list[AgentMessage]: [0].content: expected ")
    assert message.endswith("; and 995 more")
    with pytest.raises(ac.SerializationError) as info:
        ac.from_dict(ac.UserMessage, {"content": "hi", "timestamp": "y" * 100_000})
    assert len(str(info.value)) < 300


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_errors_ux_serde_of_lists_type_checks(mypy_report: MypyReport) -> None:
    """mypy --strict infers `from_json(list[AgentMessage], ...)` and `to_dict(list)` types:
    tests/typing/serde_of_lists_{pass,fail}.py."""
    assert mypy_report.errors("tests/typing/serde_of_lists_pass.py") == [], mypy_report.output
    [error] = mypy_report.errors("tests/typing/serde_of_lists_fail.py")
    assert 'Incompatible return value type (got "list[UserMessage | ' in error
