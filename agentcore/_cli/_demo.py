"""The demo behind `python -m agentcore demo`.

Offline (`run_demo`), a scripted faux model answers one question in three turns: it calls a
calculator and a clock in parallel, then the calculator again with a value it read from the
clock, then writes its answer from the tools' actual results. With a real model
(`run_model_demo`, `demo --model provider/id`) the same question goes to that model with the
same tools, and whatever it does is shown. Everything a run emits is printed as it happens:
streamed text, each tool's start and end, and the run's token usage and cost; on a terminal, a
live line says what the run is waiting for in between (the model's first token, a tool).
"""

from __future__ import annotations

import re
import sys
import time
from typing import TextIO

from .._core import (
    AgentContext,
    AgentEndEvent,
    AgentEvent,
    AgentMessage,
    AssistantMessage,
    Context,
    MessageEndEvent,
    Model,
    ModelCost,
    StreamOptions,
    ToolExecutionStartEvent,
    ToolResultMessage,
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
from ._console import EventPrinter, format_cost, format_tokens, plural, public_url, wants_color
from ._demo_tools import DEMO_COST, SYSTEM_PROMPT, calculator_tool, clock_tool
from ._live import wants_live

__all__ = [
    "DEFAULT_TOKENS_PER_SECOND",
    "QUESTION",
    "run_demo",
    "run_model_demo",
]

DEFAULT_TOKENS_PER_SECOND = 150.0
"""How fast the faux model streams: slow enough to watch, fast enough to finish in ~1.5 s."""

QUESTION = "What is 17 * 23 + 2 ** 10, and what time is it in Tokyo right now?"
"""The one question the demo asks, offline or of a real model."""


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

    def __init__(self, out: TextIO, prices: ModelCost) -> None:
        super().__init__(out, wants_color(out), live=wants_live(out))
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
        elapsed = time.perf_counter() - self.t0
        self.line(f"run: {plural(self.turns, 'turn')}, {plural(len(replies), 'model call')}, "
                  f"{plural(self.tool_calls, 'tool call')} in {elapsed:.2f} s")
        self.line(f"usage: {format_tokens(usage)}, total {plural(usage.total_tokens, 'token')}")
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
        printer = _Printer(stream, DEMO_COST)
        printer.line(f"agentcore demo: an offline agent on the faux provider "
                     f"(model {model.id}, tools calculator and clock)\n")
        context = AgentContext(SYSTEM_PROMPT, [], [calculator_tool(), clock_tool()])
        config = AgentLoopConfig(model=faux.get_model())
        with printer.running():
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
    printer = _Printer(stream, model.cost)
    printer.line(f"agentcore demo: {model.provider}/{model.id} ({model.api} at "
                 f"{public_url(model.base_url)}), tools calculator and clock\n")
    context = AgentContext(SYSTEM_PROMPT, [], [calculator_tool(), clock_tool()])
    with printer.running():
        return run_agent_loop([UserMessage(QUESTION)], context, AgentLoopConfig(model=model),
                              printer)
