"""What the CLI commands (`demo`, `chat`) share: printing a run, and finding the model to run.

`EventPrinter` writes an agent's events to a terminal as they happen: streamed text and
thinking (dimmed on a colour tty), each tool call's start and end, and error replies. The
commands add their own framing (the demo's run summary, the chat's per-prompt usage line).
"""

from __future__ import annotations

import json
import os
import time
from typing import Any, TextIO

import attrs

from .._core import (
    AgentEvent,
    AssistantMessage,
    MessageEndEvent,
    MessageUpdateEvent,
    Model,
    ModelCost,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    Usage,
)

__all__ = [
    "EventPrinter",
    "format_cost",
    "format_tokens",
    "missing_key_variable",
    "public_url",
    "resolve_model",
    "wants_color",
]

_DIM, _RESET = "\x1b[2m", "\x1b[0m"


def wants_color(out: TextIO) -> bool:
    """Whether to dim text on `out`: it is a tty and `NO_COLOR` is unset (or empty)."""
    if os.environ.get("NO_COLOR"):
        return False
    try:
        return out.isatty()
    except (AttributeError, ValueError):
        return False


def _shorten(text: str, limit: int | None) -> str:
    """`text` on one line and at most about `limit` characters (unchanged when None)."""
    if limit is None:
        return text
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit} more chars)"


class EventPrinter:
    """Prints a run's events to `out` as they arrive, flushing every write.

    Not thread-safe: feed it from one thread (the run's listener, or the thread iterating an
    `AgentRun`). `max_chars` shortens tool arguments and results to one line of about that
    many characters; None prints them whole.
    """

    def __init__(self, out: TextIO, color: bool, max_chars: int | None = None) -> None:
        self.out = out
        self.color = color
        self.max_chars = max_chars
        self.at_line_start = True
        self._started: dict[str, float] = {}

    def write(self, text: str, dim: bool = False) -> None:
        """Write `text` at once, dimmed if asked and colour is on."""
        if not text:
            return
        self.at_line_start = text.endswith("\n")
        if dim and self.color:
            text = f"{_DIM}{text}{_RESET}"
        self.out.write(text)
        self.out.flush()

    def line(self, text: str = "", dim: bool = False) -> None:
        """Write `text` and a newline."""
        self.write(text, dim)
        self.write("\n")

    def end_line(self) -> None:
        """Finish a partly written line, if any (e.g. a reply cut off by an abort)."""
        if not self.at_line_start:
            self.write("\n")

    def show(self, event: AgentEvent) -> None:
        """Print what `event` adds: streamed text, a tool's start or end, an error reply."""
        if isinstance(event, MessageUpdateEvent):
            self.stream(event.assistant_message_event)
        elif isinstance(event, MessageEndEvent):
            message = event.message
            if isinstance(message, AssistantMessage) and message.error_message:
                self.end_line()
                self.line(f"error ({message.stop_reason.value}): {message.error_message}")
        elif isinstance(event, ToolExecutionStartEvent):
            self._started[event.tool_call_id] = time.perf_counter()
            self.line(f"  -> {event.tool_name}({_shorten(json.dumps(event.args), self.max_chars)})")
        elif isinstance(event, ToolExecutionEndEvent):
            now = time.perf_counter()
            elapsed = now - self._started.pop(event.tool_call_id, now)
            text = " ".join(getattr(b, "text", "[image]") for b in event.result.content)
            status = "error" if event.is_error else "ok"
            self.line(f"  <- {event.tool_name}: {_shorten(text, self.max_chars)}  "
                      f"[{status}, {elapsed * 1000:.1f} ms]")

    def stream(self, event: object) -> None:
        """Print one assistant-message event: labels, text and (dimmed) thinking deltas."""
        if isinstance(event, ThinkingStartEvent):
            self.write("thinking: ", dim=True)
        elif isinstance(event, ThinkingDeltaEvent):
            self.write(event.delta, dim=True)
        elif isinstance(event, TextStartEvent):
            self.write("assistant: ")
        elif isinstance(event, TextDeltaEvent):
            self.write(event.delta)
        elif isinstance(event, (TextEndEvent, ThinkingEndEvent)):
            self.line()


def format_tokens(usage: Usage) -> str:
    """`"input N tokens, output N tokens"`, plus the cache counts when there are any."""
    cached = ""
    if usage.cache_read or usage.cache_write:
        cached = f", cache read {usage.cache_read}, cache write {usage.cache_write}"
    return f"input {usage.input} tokens, output {usage.output} tokens{cached}"


def format_cost(usage: Usage, prices: ModelCost) -> str:
    """`"$0.000123 (at $3.00 in / $15.00 out per million tokens)"`, or that there are no prices."""
    if prices == ModelCost():
        return f"${usage.cost.total:.6f} (the model has no prices)"
    return (f"${usage.cost.total:.6f} (at ${prices.input:.2f} in / ${prices.output:.2f} out "
            "per million tokens)")


def public_url(url: str) -> str:
    """`url` without any `user:password@` part, which may hold a credential."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port is not None else host
    return urlunsplit(parts._replace(netloc=netloc))


def resolve_model(
    provider: str, model_id: str, base_url: str | None = None, api: str | None = None
) -> Model | str:
    """The catalogue's model, sent to `base_url` over `api` when given; or why there is none.

    The reason, for a model the catalogue lacks and no `base_url`, is the catalogue's message.

    With a `base_url`, a model the catalogue lacks is spoken to as an openai-completions model
    (Ollama, vLLM, llama.cpp, LM Studio and most local servers).
    """
    from .._core import ModelNotFoundError
    from ..providers import get_model

    try:
        model = get_model(provider, model_id)
    except ModelNotFoundError as exc:
        if base_url is None:
            return str(exc)
        model = Model(model_id, model_id, "openai-completions", provider, base_url)
    changes: dict[str, Any] = {"base_url": base_url or model.base_url, "api": api or model.api}
    return attrs.evolve(model, **changes)


def missing_key_variable(model: Model) -> str | None:
    """The variable to set for `model`'s API key when the environment has none, else None.

    Local servers (a local provider, or a base URL on this machine) need no key.
    """
    from .._core import MissingApiKeyError
    from ..providers import env_var_for, get_env_api_key, require_api_key

    if get_env_api_key(model.provider) is not None:
        return None
    try:
        require_api_key(model.provider, base_url=model.base_url)
    except MissingApiKeyError:
        return env_var_for(model.provider) or f"the API key of {model.provider!r}"
    return None
