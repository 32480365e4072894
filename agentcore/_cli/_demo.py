"""The demo behind `python -m agentcore demo`.

Offline (`run_demo`), a scripted faux model answers one question in three turns: it calls a
calculator and a clock in parallel, then the calculator again with a value it read from the
clock, then writes its answer from the tools' actual results. With a real model
(`run_model_demo`, `demo --model provider/id`) the same question goes to that model with the
same tools, and whatever it does is shown. Everything a run emits is printed as it happens:
streamed text, each tool's start and end, and the run's token usage and cost.
"""

from __future__ import annotations

import ast
import math
import operator
import re
import sys
import time
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any, TextIO
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .._core import (
    AbortSignal,
    AgentContext,
    AgentEndEvent,
    AgentEvent,
    AgentMessage,
    AgentTool,
    AgentToolResult,
    AssistantMessage,
    Context,
    MessageEndEvent,
    Model,
    ModelCost,
    StreamOptions,
    TextContent,
    ToolExecutionStartEvent,
    ToolResultMessage,
    ToolUpdate,
    TurnStartEvent,
    Usage,
    UserMessage,
)
from .._loop import AgentLoopConfig, run_agent_loop
from ..providers.faux import (
    faux_assistant_message,
    faux_text,
    faux_thinking,
    faux_tool_call,
    register_faux_provider,
)
from ._console import EventPrinter, format_cost, format_tokens, wants_color
from ._console import public_url as _public_url

__all__ = [
    "DEFAULT_TOKENS_PER_SECOND",
    "calculate",
    "calculator_tool",
    "clock_tool",
    "run_demo",
    "run_model_demo",
]

DEFAULT_TOKENS_PER_SECOND = 150.0
"""How fast the faux model streams: slow enough to watch, fast enough to finish in ~1.5 s."""

DEMO_COST = ModelCost(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)
"""Prices of the demo model (USD per million tokens), typical of a mid-sized hosted model."""

QUESTION = "What is 17 * 23 + 2 ** 10, and what time is it in Tokyo right now?"
SYSTEM_PROMPT = (
    "You are a concise assistant. Use the calculator for arithmetic and the clock for the "
    "time; never guess either."
)

MAX_EXPRESSION_CHARS = 500
MAX_INT_BITS = 4096  # keeps every result printable (str() refuses ints above ~14,000 bits)

Number = int | float


def _power(base: Number, exponent: Number) -> Number:
    # (bits - 1) * exponent is a lower bound of the result's size: refuse before computing it
    if (isinstance(base, int) and isinstance(exponent, int) and abs(base) > 1
            and (base.bit_length() - 1) * exponent > MAX_INT_BITS):
        raise ValueError(f"result is too large: {base!r} ** {exponent!r}")
    result: Any = base**exponent
    if isinstance(result, complex):
        raise ValueError(f"result is not a real number: {base!r} ** {exponent!r}")
    return result  # type: ignore[no-any-return]


_BINARY: dict[type[ast.operator], Callable[[Number, Number], Number]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: _power,
}
_UNARY: dict[type[ast.unaryop], Callable[[Number], Number]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}


def calculate(expression: str) -> Number:
    """Evaluate an arithmetic expression safely, without `eval`.

    Only numbers, parentheses, unary `+`/`-` and the binary operators `+ - * / ** % //` are
    accepted; the expression is parsed with `ast` and walked node by node.

    Args:
        expression: The expression, e.g. `"17 * 23 + 2 ** 10"`.

    Returns:
        The value, an `int` or a finite `float`.

    Raises:
        ValueError: For anything but arithmetic (names, calls, attribute access, ...),
            division by zero, or a result too large to be useful.
    """
    if not isinstance(expression, str):
        raise TypeError(f"'expression' must be a str, got {expression!r}")
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise ValueError(f"expression is longer than {MAX_EXPRESSION_CHARS} characters")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError:
        raise ValueError(f"not an arithmetic expression: {expression!r}") from None
    try:
        value = _evaluate(tree.body)
    except ZeroDivisionError:
        raise ValueError(f"division by zero in {expression!r}") from None
    except OverflowError:
        raise ValueError(f"result is too large: {expression!r}") from None
    except RecursionError:
        raise ValueError(f"expression is nested too deeply: {expression!r}") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"result is not a finite number: {expression!r}")
    return value


def _evaluate(node: ast.expr) -> Number:
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return value
        raise ValueError(f"only numbers are allowed, got {value!r}")
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        result = _BINARY[type(node.op)](_evaluate(node.left), _evaluate(node.right))
        if isinstance(result, int) and result.bit_length() > MAX_INT_BITS:
            raise ValueError(f"result is too large: {ast.unparse(node)!r}")
        return result
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_evaluate(node.operand))
    if isinstance(node, ast.Name):
        raise ValueError(f"names are not allowed: {node.id!r}")
    if isinstance(node, ast.Call):
        raise ValueError(f"function calls are not allowed: {ast.unparse(node)!r}")
    if isinstance(node, ast.Attribute):
        raise ValueError(f"attribute access is not allowed: {ast.unparse(node)!r}")
    raise ValueError(f"not allowed in arithmetic: {ast.unparse(node)!r}")


def _run_calculator(
    tool_call_id: str, args: Any, signal: AbortSignal, on_update: ToolUpdate
) -> AgentToolResult:
    expression = args["expression"]
    value = calculate(expression)
    return AgentToolResult([TextContent(str(value))],
                           details={"expression": expression, "value": value})


def calculator_tool() -> AgentTool:
    """The demo's calculator: safe arithmetic on numbers (see `calculate`)."""
    return AgentTool(
        "calculator",
        "Evaluate an arithmetic expression exactly. Supports numbers, parentheses and "
        "+ - * / ** % //.",
        {
            "type": "object",
            "properties": {
                "expression": {"type": "string", "description": "e.g. '(2 + 3) * 4 ** 2'"},
            },
            "required": ["expression"],
            "additionalProperties": False,
        },
        _run_calculator,
        label="Calculator",
    )


def current_time(zone: str = "UTC") -> datetime:
    """The current time in the IANA time zone `zone`.

    Args:
        zone: An IANA name such as `"Europe/Paris"`; `"UTC"` works even without tz data.

    Returns:
        An aware `datetime`.

    Raises:
        ValueError: When the zone is unknown.
    """
    try:
        tz: Any = ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError):
        if zone.upper() != "UTC":  # the one zone we can serve without the tz database
            raise ValueError(
                f"unknown time zone {zone!r}; use an IANA name such as 'Europe/Paris'"
            ) from None
        tz = timezone.utc
    return datetime.now(tz)


def _describe_time(now: datetime) -> str:
    offset = now.strftime("%z")
    offset = f"{offset[:3]}:{offset[3:]}" if offset else ""
    return f"{now:%Y-%m-%d %H:%M:%S} {now.tzname()} ({now:%A}, UTC{offset})"


def _run_clock(
    tool_call_id: str, args: Any, signal: AbortSignal, on_update: ToolUpdate
) -> AgentToolResult:
    zone = args.get("timezone") or "UTC"
    now = current_time(zone)
    return AgentToolResult([TextContent(_describe_time(now))],
                           details={"timezone": zone, "iso": now.isoformat()})


def clock_tool() -> AgentTool:
    """The demo's clock: the current time in an IANA time zone (default UTC)."""
    return AgentTool(
        "clock",
        "Tell the current date and time in a time zone.",
        {
            "type": "object",
            "properties": {
                "timezone": {
                    "type": "string",
                    "description": "IANA time zone, e.g. 'Asia/Tokyo'; defaults to UTC",
                },
            },
            "additionalProperties": False,
        },
        _run_clock,
        label="Clock",
    )


def _results(context: Context, name: str) -> list[ToolResultMessage]:
    return [m for m in context.messages
            if isinstance(m, ToolResultMessage) and m.tool_name == name]


def _reply_after_tools(context: Context, options: StreamOptions, model: Model) -> AssistantMessage:
    """Second turn: read the clock's answer and ask how long until midnight there."""
    clock = _results(context, "clock")[-1]
    match = re.search(r"\b(\d{2}):(\d{2}):\d{2}\b", clock.text)
    if clock.is_error or match is None:
        return _final_answer(context, options, model)
    hours, minutes = int(match[1]), int(match[2])
    return faux_assistant_message([
        faux_text(f"It's {hours:02d}:{minutes:02d} in Tokyo. "
                  "Let me also work out how long it is until midnight there."),
        faux_tool_call("calculator", {"expression": f"24 * 60 - ({hours} * 60 + {minutes})"}),
    ])


def _final_answer(context: Context, options: StreamOptions, model: Model) -> AssistantMessage:
    """Last turn: answer from whatever the tools actually returned."""
    calculations = _results(context, "calculator")
    clock = _results(context, "clock")[-1]
    total = calculations[0]
    lines = ["Here is what I found:", ""]
    if total.is_error:
        lines.append(f"- The calculator could not work out 17 * 23 + 2 ** 10: {total.text}")
    else:
        lines.append(f"- 17 * 23 + 2 ** 10 = {total.text}.")
    if clock.is_error:
        lines.append(f"- The clock failed: {clock.text}")
    else:
        lines.append(f"- In Tokyo it is now {clock.text}.")
    if len(calculations) > 1 and not calculations[-1].is_error:
        left = int(calculations[-1].text)
        lines.append(f"- That leaves {left} minutes ({left // 60} h {left % 60:02d} min) "
                     "until midnight there.")
    lines += ["", "I asked the calculator and the clock at the same time, so both answers "
              "came back in a single round trip before I followed up."]
    return faux_assistant_message("\n".join(lines))


def _first_reply() -> AssistantMessage:
    return faux_assistant_message([
        faux_thinking("Two independent questions: arithmetic and the local time in Tokyo. "
                      "I can ask the calculator and the clock at once."),
        faux_text("Let me check both at once."),
        faux_tool_call("calculator", {"expression": "17 * 23 + 2 ** 10"}),
        faux_tool_call("clock", {"timezone": "Asia/Tokyo"}),
    ])


class _Printer(EventPrinter):
    """The demo's event sink: prints the run as it happens (called on the run's thread)."""

    def __init__(self, out: TextIO, color: bool, prices: ModelCost) -> None:
        super().__init__(out, color)
        self.prices = prices
        self.turns = 0
        self.tool_calls = 0
        self.t0 = time.perf_counter()

    def __call__(self, event: AgentEvent) -> None:
        if isinstance(event, TurnStartEvent):
            self.turns += 1
        elif isinstance(event, MessageEndEvent) and isinstance(event.message, UserMessage):
            self.line(f"you: {event.message.text}\n")
        elif isinstance(event, ToolExecutionStartEvent):
            self.tool_calls += 1
        elif isinstance(event, AgentEndEvent):
            self.summary(event.messages)
        self.show(event)

    def summary(self, messages: list[AgentMessage]) -> None:
        replies = [m for m in messages if isinstance(m, AssistantMessage)]
        usage = sum((m.usage for m in replies), Usage())
        self.line()
        self.line(f"run: {self.turns} turns, {len(replies)} model calls, {self.tool_calls} tool "
                  f"calls in {time.perf_counter() - self.t0:.2f} s")
        self.line(f"usage: {format_tokens(usage)}, total {usage.total_tokens} tokens")
        self.line(f"cost: {format_cost(usage, self.prices)}")


def run_demo(
    out: TextIO | None = None, *, tokens_per_second: float | None = DEFAULT_TOKENS_PER_SECOND
) -> list[AgentMessage]:
    """Run the demo agent offline and print what happens.

    Registers a faux provider for the run and unregisters it afterwards, whatever happens.

    Args:
        out: Where to print; `sys.stdout` by default. Thinking is dimmed when it is a tty.
        tokens_per_second: The faux model's streaming pace; None streams without pauses.

    Returns:
        The messages the run added (the question included).
    """
    stream = sys.stdout if out is None else out
    model = Model("faux-demo", "Faux Demo", "faux", "faux", "http://localhost:0",
                  cost=DEMO_COST, context_window=200_000, max_tokens=8_192)
    faux = register_faux_provider([model], tokens_per_second=tokens_per_second,
                                  token_size=(1, 2))
    try:
        faux.set_responses([_first_reply(), _reply_after_tools, _final_answer])
        printer = _Printer(stream, wants_color(stream), DEMO_COST)
        printer.line(f"agentcore demo: an offline agent on the faux provider "
                     f"(model {model.id}, tools calculator and clock)\n")
        context = AgentContext(SYSTEM_PROMPT, [], [calculator_tool(), clock_tool()])
        config = AgentLoopConfig(model=faux.get_model())
        return run_agent_loop([UserMessage(QUESTION)], context, config, printer)
    finally:
        faux.unregister()


def run_model_demo(model: Model, out: TextIO | None = None) -> list[AgentMessage]:
    """Ask a real model the demo's question with the demo's tools and print what happens.

    The API key is the one the provider finds in the environment (see `get_env_api_key`);
    it is never printed. Provider failures are printed as the run's error message.

    Args:
        model: The model to ask, e.g. `get_model("openai", "gpt-4o-mini")`.
        out: Where to print; `sys.stdout` by default. Thinking is dimmed when it is a tty.

    Returns:
        The messages the run added (the question included).
    """
    stream = sys.stdout if out is None else out
    printer = _Printer(stream, wants_color(stream), model.cost)
    printer.line(f"agentcore demo: {model.provider}/{model.id} ({model.api} at "
                 f"{_public_url(model.base_url)}), tools calculator and clock\n")
    context = AgentContext(SYSTEM_PROMPT, [], [calculator_tool(), clock_tool()])
    return run_agent_loop([UserMessage(QUESTION)], context, AgentLoopConfig(model=model), printer)
