"""Content blocks, messages, usage and cost, models, the default LLM conversion and the enums."""

from __future__ import annotations

import json
import logging
import re
import time
from typing import ClassVar

import attrs
import pytest

from agentcore import (
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    Cost,
    ImageContent,
    Model,
    ModelCost,
    QueueMode,
    StopReason,
    TextContent,
    ThinkingContent,
    ThinkingLevel,
    ToolCall,
    ToolExecutionMode,
    ToolResultMessage,
    Usage,
    UserMessage,
    calculate_cost,
    default_convert_to_llm,
)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _assistant(
    content: list[TextContent | ThinkingContent | ToolCall], **kw: object
) -> AssistantMessage:
    return AssistantMessage(content, "faux", "faux", "faux-1", **kw)  # type: ignore[arg-type]


# --- content blocks --------------------------------------------------------------------------


def test_content_blocks_positional_construction_and_defaults() -> None:
    assert TextContent("x") == TextContent(text="x", text_signature=None)
    assert ThinkingContent("hmm") == ThinkingContent(
        thinking="hmm", thinking_signature=None, redacted=False
    )
    assert ImageContent("aGk=", "image/png") == ImageContent(data="aGk=", mime_type="image/png")
    assert ToolCall("call_1", "read", {"path": "a"}) == ToolCall(
        id="call_1", name="read", arguments={"path": "a"}, thought_signature=None
    )


def test_tool_call_arguments_default_to_empty_dict() -> None:
    first, second = ToolCall("1", "ls"), ToolCall("2", "ls")
    assert first.arguments == {}
    assert first.arguments is not second.arguments


def test_content_blocks_are_frozen() -> None:
    block = TextContent("x")
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        block.text = "y"  # type: ignore[misc]
    assert attrs.evolve(block, text="y") == TextContent("y")


def test_content_blocks_compare_by_value() -> None:
    assert TextContent("a") == TextContent("a")
    assert TextContent("a") != TextContent("a", text_signature="sig")
    assert hash(TextContent("a")) == hash(TextContent("a"))


# --- messages --------------------------------------------------------------------------------


def test_user_message_positional_construction() -> None:
    message = UserMessage("hi", 123)
    assert message == UserMessage(content="hi", timestamp=123)
    assert message.role == "user"


def test_user_message_accepts_text_and_image_blocks() -> None:
    blocks = [TextContent("look: "), ImageContent("aGk=", "image/png"), TextContent("ok")]
    message = UserMessage(blocks, 1)
    assert message.content == blocks
    assert message.text == "look: ok"


@pytest.mark.parametrize(
    "make",
    [
        lambda: UserMessage("hi"),
        lambda: _assistant([]),
        lambda: ToolResultMessage("call_1", "read", [TextContent("x")]),
        lambda: BashExecutionMessage("ls", "a\n", 0),
        lambda: CompactionSummaryMessage("summary", 1000),
        lambda: BranchSummaryMessage("summary", "entry-1"),
    ],
    ids=["user", "assistant", "toolResult", "bashExecution", "compactionSummary", "branchSummary"],
)
def test_message_timestamp_defaults_to_now_in_ms(make: object) -> None:
    before = _now_ms()
    message = make()  # type: ignore[operator]
    after = _now_ms()
    assert isinstance(message.timestamp, int)
    assert before <= message.timestamp <= after


def test_assistant_message_defaults() -> None:
    message = AssistantMessage([], "api", "prov", "model-1", timestamp=5)
    assert message == AssistantMessage(
        content=[],
        api="api",
        provider="prov",
        model="model-1",
        usage=Usage(),
        stop_reason=StopReason.STOP,
        error_message=None,
        response_id=None,
        timestamp=5,
    )
    assert message.role == "assistant"


def test_assistant_message_text_joins_text_blocks_only() -> None:
    message = _assistant(
        [
            ThinkingContent("let me think"),
            TextContent("Hello, "),
            ToolCall("c1", "ls", {}),
            TextContent("world"),
        ]
    )
    assert message.text == "Hello, world"


def test_assistant_message_text_is_empty_without_text_blocks() -> None:
    assert _assistant([ToolCall("c1", "ls")]).text == ""


def test_assistant_message_tool_calls_in_order() -> None:
    first, second = ToolCall("c1", "ls", {"path": "."}), ToolCall("c2", "cat", {"path": "a"})
    message = _assistant([TextContent("running"), first, ThinkingContent("t"), second])
    assert message.tool_calls == [first, second]
    assert _assistant([TextContent("no tools")]).tool_calls == []


def test_assistant_message_accepts_stop_reason_as_plain_string() -> None:
    message = _assistant([], stop_reason="toolUse")
    assert message.stop_reason is StopReason.TOOL_USE
    assert message.stop_reason == "toolUse"
    assert message == _assistant([], stop_reason=StopReason.TOOL_USE, timestamp=message.timestamp)


def test_tool_result_message_defaults() -> None:
    message = ToolResultMessage("call_1", "read", timestamp=7)
    assert message == ToolResultMessage(
        tool_call_id="call_1",
        tool_name="read",
        content=[],
        details=None,
        is_error=False,
        usage=None,
        added_tool_names=None,
        timestamp=7,
    )
    assert message.role == "toolResult"


def test_custom_message_defaults() -> None:
    assert BashExecutionMessage("ls", "out", None, timestamp=1) == BashExecutionMessage(
        command="ls",
        output="out",
        exit_code=None,
        cancelled=False,
        truncated=False,
        full_output_path=None,
        timestamp=1,
    )
    assert CompactionSummaryMessage("s", 10, 2) == CompactionSummaryMessage(
        summary="s", tokens_before=10, timestamp=2
    )
    assert BranchSummaryMessage("s", "id-1", 3) == BranchSummaryMessage(
        summary="s", from_id="id-1", timestamp=3
    )


@pytest.mark.parametrize(
    ("message", "field", "value"),
    [
        (UserMessage("hi"), "content", "bye"),
        (_assistant([]), "stop_reason", StopReason.ERROR),
        (ToolResultMessage("c", "t"), "is_error", True),
        (BashExecutionMessage("ls", "", 0), "output", "x"),
        (CompactionSummaryMessage("s", 1), "summary", "x"),
        (BranchSummaryMessage("s", "id"), "from_id", "x"),
    ],
)
def test_messages_are_frozen(message: object, field: str, value: object) -> None:
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        setattr(message, field, value)


# --- StopReason and the other enums ----------------------------------------------------------


def test_stop_reason_compares_equal_to_plain_strings() -> None:
    assert StopReason.STOP == "stop"
    assert StopReason.TOOL_USE == "toolUse"
    assert StopReason("aborted") is StopReason.ABORTED
    assert "error" in {StopReason.ERROR}
    assert str(StopReason.LENGTH) == "length"
    assert f"{StopReason.LENGTH}" == "length"
    assert json.dumps(StopReason.TOOL_USE) == '"toolUse"'


@pytest.mark.parametrize(
    ("enum", "values"),
    [
        (
            StopReason,
            {
                "STOP": "stop",
                "LENGTH": "length",
                "TOOL_USE": "toolUse",
                "ERROR": "error",
                "ABORTED": "aborted",
            },
        ),
        (
            ThinkingLevel,
            {
                "OFF": "off",
                "MINIMAL": "minimal",
                "LOW": "low",
                "MEDIUM": "medium",
                "HIGH": "high",
                "XHIGH": "xhigh",
            },
        ),
        (ToolExecutionMode, {"SEQUENTIAL": "sequential", "PARALLEL": "parallel"}),
        (QueueMode, {"ALL": "all", "ONE_AT_A_TIME": "one-at-a-time"}),
    ],
)
def test_enum_string_values(enum: type, values: dict[str, str]) -> None:
    assert {m.name: m.value for m in enum} == values  # type: ignore[attr-defined]
    for name, value in values.items():
        member = getattr(enum, name)
        assert isinstance(member, str)
        assert member == value
        assert str(member) == value
        assert enum(value) is member


# --- Usage and Cost --------------------------------------------------------------------------


def test_usage_and_cost_defaults() -> None:
    assert Usage() == Usage(0, 0, 0, 0, 0, Cost(0.0, 0.0, 0.0, 0.0, 0.0))
    assert Cost() == Cost(input=0.0, output=0.0, cache_read=0.0, cache_write=0.0, total=0.0)


def test_usage_add_is_field_by_field() -> None:
    a = Usage(1, 2, 3, 4, 10, Cost(0.5, 1.0, 0.25, 0.125, 1.875))
    b = Usage(10, 20, 30, 40, 100, Cost(1.0, 2.0, 0.5, 0.25, 3.75))
    assert a + b == Usage(11, 22, 33, 44, 110, Cost(1.5, 3.0, 0.75, 0.375, 5.625))
    assert a + Usage() == a


def test_cost_add_is_field_by_field() -> None:
    assert Cost(1.0, 2.0, 3.0, 4.0, 10.0) + Cost(0.5, 0.5, 0.5, 0.5, 2.0) == Cost(
        1.5, 2.5, 3.5, 4.5, 12.0
    )


def test_usage_add_rejects_other_types() -> None:
    with pytest.raises(TypeError):
        Usage() + 1  # type: ignore[operator]
    with pytest.raises(TypeError):
        Cost() + 1.0  # type: ignore[operator]


def test_usage_sum_with_and_without_start_value() -> None:
    usages = [Usage(1, 1, 0, 0, 2), Usage(2, 3, 4, 5, 14), Usage(0, 0, 1, 0, 1)]
    expected = Usage(3, 4, 5, 5, 17)
    assert sum(usages, Usage()) == expected
    assert sum(usages) == expected
    assert sum([], Usage()) == Usage()


def test_usage_add_keeps_operands_unchanged() -> None:
    a, b = Usage(1, 1, 1, 1, 4), Usage(2, 2, 2, 2, 8)
    total = a + b
    assert total == Usage(3, 3, 3, 3, 12)
    assert (a, b) == (Usage(1, 1, 1, 1, 4), Usage(2, 2, 2, 2, 8))


# --- Model and calculate_cost ----------------------------------------------------------------


def test_model_defaults() -> None:
    model = Model("m-1", "Model One", "openai-completions", "openai", "https://api.example")
    assert model == Model(
        id="m-1",
        name="Model One",
        api="openai-completions",
        provider="openai",
        base_url="https://api.example",
        reasoning=False,
        input=["text"],
        cost=ModelCost(0.0, 0.0, 0.0, 0.0),
        context_window=128_000,
        max_tokens=16_384,
        headers=None,
        compat=None,
    )


def test_model_input_kinds_are_independent_per_instance() -> None:
    a = Model("a", "A", "api", "p", "http://x")
    b = Model("b", "B", "api", "p", "http://x")
    assert a.input is not b.input


def test_model_accepts_text_and_image_input() -> None:
    model = Model("m", "M", "api", "p", "http://x", input=["text", "image"])
    assert model.input == ["text", "image"]


def test_model_repr_hides_headers() -> None:
    model = Model("m", "M", "api", "p", "http://x", headers={"Authorization": "Bearer sk-secret"})
    assert "sk-secret" not in repr(model)


def test_calculate_cost_prices_usage_per_million_tokens() -> None:
    price = ModelCost(input=2, output=8, cache_read=0.5, cache_write=4)
    model = Model("m", "M", "api", "p", "http://x", cost=price)
    usage = Usage(input=1_000_000, output=500_000, cache_read=500_000, cache_write=250_000,
                  total_tokens=2_250_000)
    assert calculate_cost(model, usage) == Usage(
        input=1_000_000,
        output=500_000,
        cache_read=500_000,
        cache_write=250_000,
        total_tokens=2_250_000,
        cost=Cost(input=2.0, output=4.0, cache_read=0.25, cache_write=1.0, total=7.25),
    )


def test_calculate_cost_realistic_prices() -> None:
    model = Model(
        "m", "M", "api", "p", "http://x",
        cost=ModelCost(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75),
    )
    priced = calculate_cost(model, Usage(1200, 350, 8000, 0, 9550))
    assert attrs.astuple(priced.cost) == pytest.approx((0.0036, 0.00525, 0.0024, 0.0, 0.01125))
    assert priced.cost.total == pytest.approx(
        priced.cost.input + priced.cost.output + priced.cost.cache_read + priced.cost.cache_write
    )


def test_calculate_cost_replaces_an_existing_cost_and_keeps_the_input() -> None:
    model = Model("m", "M", "api", "p", "http://x", cost=ModelCost(input=1.0))
    usage = Usage(input=1_000_000, total_tokens=1_000_000, cost=Cost(total=99.0))
    assert calculate_cost(model, usage).cost == Cost(input=1.0, total=1.0)
    assert usage.cost == Cost(total=99.0)


def test_calculate_cost_free_model_costs_nothing() -> None:
    model = Model("m", "M", "api", "p", "http://x")
    assert calculate_cost(model, Usage(5, 5, 5, 5, 20)).cost == Cost()


# --- default_convert_to_llm ------------------------------------------------------------------


def test_default_convert_to_llm_passes_llm_messages_through_as_same_objects() -> None:
    user = UserMessage("hi")
    assistant = _assistant([ToolCall("c1", "ls")], stop_reason="toolUse")
    result = ToolResultMessage("c1", "ls", [TextContent("a b")])
    converted = default_convert_to_llm([user, assistant, result])
    assert converted == [user, assistant, result]
    assert all(a is b for a, b in zip(converted, [user, assistant, result], strict=True))


def test_default_convert_to_llm_describes_bash_execution() -> None:
    bash = BashExecutionMessage("ls -la /tmp", "file-a\nfile-b", 2, timestamp=42)
    [converted] = default_convert_to_llm([bash])
    assert isinstance(converted, UserMessage)
    assert converted.timestamp == 42
    assert isinstance(converted.content, str)
    assert "ls -la /tmp" in converted.content
    assert "file-a\nfile-b" in converted.content
    assert re.search(r"exit code\D*2\b", converted.content)


def test_default_convert_to_llm_bash_execution_cancelled_and_truncated() -> None:
    bash = BashExecutionMessage(
        "sleep 100", "partial", None, cancelled=True, truncated=True, full_output_path="/tmp/o.txt"
    )
    [converted] = default_convert_to_llm([bash])
    assert isinstance(converted, UserMessage)
    assert "sleep 100" in converted.text
    assert "partial" in converted.text
    assert "cancelled" in converted.text
    assert "/tmp/o.txt" in converted.text


@pytest.mark.parametrize(
    "message",
    [
        CompactionSummaryMessage("We fixed the bug in parser.py.", 12_000, timestamp=9),
        BranchSummaryMessage("We fixed the bug in parser.py.", "entry-7", timestamp=9),
    ],
    ids=["compaction", "branch"],
)
def test_default_convert_to_llm_wraps_summaries_in_a_tag(message: AgentMessage) -> None:
    [converted] = default_convert_to_llm([message])
    assert isinstance(converted, UserMessage)
    assert converted.timestamp == 9
    assert isinstance(converted.content, str)
    assert re.search(r"<(\w+)>\s*We fixed the bug in parser\.py\.\s*</\1>", converted.content)


@attrs.frozen
class _Note:
    role: ClassVar[str] = "note"
    text: str


def test_default_convert_to_llm_drops_unknown_roles_with_a_debug_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    user = UserMessage("hi")
    caplog.set_level(logging.DEBUG, logger="agentcore")
    converted = default_convert_to_llm([_Note("private"), user])  # type: ignore[list-item]
    assert converted == [user]
    dropped = [r for r in caplog.records if "note" in r.getMessage()]
    assert [r.levelno for r in dropped] == [logging.DEBUG]
    assert dropped[0].name.startswith("agentcore")


def test_default_convert_to_llm_keeps_order_and_accepts_any_iterable() -> None:
    a, b = UserMessage("a"), UserMessage("b")
    bash = BashExecutionMessage("pwd", "/", 0)
    converted = default_convert_to_llm(iter([a, bash, b]))
    assert [m.role for m in converted] == ["user", "user", "user"]
    assert converted[0] is a
    assert converted[2] is b
    assert "pwd" in converted[1].text  # type: ignore[union-attr]
