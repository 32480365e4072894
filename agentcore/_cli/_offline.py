"""The chat's offline model: a faux provider whose replies `offline_reply` writes.

`python -m agentcore chat` without a model (or without its API key) talks to this model. It
needs no network and shows the whole event protocol: arithmetic in what the user says goes to
the calculator, a question about the time to the clock, and anything else is echoed back, so
that steering and follow-up messages are visible in the next reply. With thinking on, each
reply starts with a short thinking block.
"""

from __future__ import annotations

import re

from .._core import (
    AssistantContent,
    AssistantMessage,
    AssistantMessageEventStream,
    Context,
    Model,
    StreamOptions,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from ..providers import register_provider
from ..providers.faux import (
    FauxProvider,
    faux_assistant_message,
    faux_text,
    faux_thinking,
    faux_tool_call,
    register_faux_provider,
)
from ._demo_tools import DEMO_COST

__all__ = ["DEFAULT_TOKENS_PER_SECOND", "offline_reply", "register_offline"]

DEFAULT_TOKENS_PER_SECOND = 200.0
"""How fast the offline model streams: visibly, yet a short reply takes well under a second."""

_EXPRESSION = re.compile(r"[-+(]*\d[\d.\s()+\-*/%^]*")
_OPERATOR = re.compile(r"\d\s*\)*\s*(?:\*\*|//|[-+*/%^])\s*[-+(]*\s*\d")
_TIME = re.compile(r"\b(?:time|clock|date|what day|o'?clock)\b", re.IGNORECASE)
_ZONE = re.compile(r"\b(?:UTC|[A-Z][A-Za-z_]+/[A-Z][A-Za-z_]+(?:/[A-Z][A-Za-z_]+)?)\b")
_CITIES = {"tokyo": "Asia/Tokyo", "paris": "Europe/Paris", "london": "Europe/London",
           "berlin": "Europe/Berlin", "new york": "America/New_York",
           "sydney": "Australia/Sydney"}


def _expression(text: str) -> str | None:
    """The longest arithmetic-looking stretch of `text` (`^` read as `**`), if any."""
    found = []
    for match in _EXPRESSION.finditer(text):
        candidate = match[0].strip().rstrip(".").strip()
        while candidate.endswith(")") and candidate.count(")") > candidate.count("("):
            candidate = candidate[:-1].rstrip()
        while candidate.startswith("(") and candidate.count("(") > candidate.count(")"):
            candidate = candidate[1:].lstrip()
        if _OPERATOR.search(candidate):
            found.append(candidate)
    if not found:
        return None
    best = max(found, key=len)
    return best.replace("^", "**")


def _zone(text: str) -> str:
    match = _ZONE.search(text)
    if match:
        return match[0]
    lowered = text.lower()
    return next((zone for city, zone in _CITIES.items() if city in lowered), "UTC")


def _quote(texts: list[str]) -> str:
    quoted = [f'"{t}"' for t in texts]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} and {quoted[-1]}"


def _describe(result: ToolResultMessage, call: ToolCall | None) -> str:
    if result.is_error:
        return f"The {result.tool_name} failed: {result.text}"
    if result.tool_name == "calculator" and call is not None:
        return f"The calculator says {call.arguments.get('expression')} = {result.text}."
    if result.tool_name == "clock":
        return f"The clock says it is {result.text}."
    return f"The {result.tool_name} says: {result.text}"


def offline_reply(context: Context, options: StreamOptions, model: Model) -> AssistantMessage:
    """The offline model's reply to whatever arrived since its last message.

    Tool results are reported; user messages (a prompt and any steering or follow-ups with it)
    are quoted back, and arithmetic in them goes to the calculator, questions about the time to
    the clock. With thinking on, the reply starts with a short thinking block.
    """
    last = max((i for i, m in enumerate(context.messages) if isinstance(m, AssistantMessage)),
               default=-1)
    fresh = context.messages[last + 1 :]
    asked = context.messages[last] if last >= 0 else None
    calls = {c.id: c for c in asked.tool_calls} if isinstance(asked, AssistantMessage) else {}
    said = [m.text for m in fresh if isinstance(m, UserMessage)]
    parts = [_describe(m, calls.get(m.tool_call_id)) for m in fresh
             if isinstance(m, ToolResultMessage)]
    tools: list[AssistantContent] = []
    for text in said:
        expression = _expression(text)
        if expression is not None:
            tools.append(faux_tool_call("calculator", {"expression": expression}))
        if _TIME.search(text):
            tools.append(faux_tool_call("clock", {"timezone": _zone(text)}))
    if said:
        n = len(said)
        parts.append(f"You said {_quote(said)}." if n == 1
                     else f"You sent {n} messages: {_quote(said)}.")
    if tools:
        names = sorted({c.name for c in tools if isinstance(c, ToolCall)})
        parts.append(f"Let me ask the {' and the '.join(names)}.")
    elif said:
        parts.append("I'm the offline model: I echo what you send, work out arithmetic with "
                     "the calculator and tell the time with the clock. /model PROVIDER/ID "
                     "switches to a real model.")
    if not parts:
        parts.append("Nothing new to answer.")
    blocks: list[AssistantContent] = []
    if options.reasoning is not None:
        if tools:
            thought = "This needs a tool: I should look it up rather than guess."
        elif said:
            thought = "Nothing to compute or look up here, so I'll echo it back."
        else:
            thought = "The tools have answered; I'll report what they said."
        blocks.append(faux_thinking(thought))
    blocks += [faux_text(" ".join(parts)), *tools]
    return faux_assistant_message(blocks)


def register_offline(tokens_per_second: float | None) -> FauxProvider:
    """A faux provider whose one model answers every call with `offline_reply`.

    Each call queues its reply before taking one, so the queue never runs dry, however many
    agents call at once (the web app serves many conversations on this one model).
    """
    model = Model("faux-chat", "Faux Chat (offline)", "faux", "faux", "http://localhost:0",
                  reasoning=True, cost=DEMO_COST, context_window=200_000, max_tokens=8_192)
    faux = register_faux_provider([model], tokens_per_second=tokens_per_second,
                                  token_size=(1, 2))

    def stream(model: Model, context: Context,
               options: StreamOptions) -> AssistantMessageEventStream:
        faux.append_responses([offline_reply])
        return faux.stream(model, context, options)

    register_provider(faux.api, stream)
    return faux
