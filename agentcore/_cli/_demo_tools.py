"""The tools and prompt the demo and the chat share: a safe calculator and a clock.

`calculator_tool()` evaluates arithmetic by walking its `ast` (never `eval`), with limits that
keep every result printable; `clock_tool()` tells the time in an IANA time zone. Both are
plain `AgentTool`s, as a user would write them.
"""

from __future__ import annotations

import ast
import math
import operator
import threading
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .._core import AbortSignal, AgentTool, AgentToolResult, ModelCost, TextContent, ToolUpdate

__all__ = [
    "DEMO_COST",
    "SYSTEM_PROMPT",
    "calculate",
    "calculator_tool",
    "clock_tool",
    "current_time",
]

DEMO_COST = ModelCost(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)
"""Prices of the demo model (USD per million tokens), typical of a mid-sized hosted model."""

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


_PARSING = threading.Lock()
"""`ast.parse` one thread at a time: CPython 3.11's AST constructor keeps its recursion depth
in interpreter-wide state, and two threads parsing at once can fail with `SystemError: AST
constructor recursion depth mismatch` (seen with 200 web conversations at once)."""

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
        with _PARSING:
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
