"""What the CLI commands (`demo`, `chat`) share: printing a run, and finding the model to run.

`EventPrinter` writes an agent's events to a terminal as they happen: streamed text and
thinking (dimmed on a colour tty), each tool call's start, progress and end, calls waiting for
approval and the decisions on them (API §20), and error replies;
on a terminal, a live line (see `_live`) says what the run is waiting for in between. The
commands add their own framing (the demo's run summary, the chat's per-prompt usage line).
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Iterator
from typing import Any, TextIO

import attrs

from .._core import (
    ABORTED_TEXT,
    AgentEvent,
    AssistantMessage,
    CompactionEndEvent,
    CompactionStartEvent,
    MessageEndEvent,
    MessageUpdateEvent,
    Model,
    ModelCost,
    ModelFallbackEvent,
    SubagentEvent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    ToolApprovalMessage,
    ToolApprovalRequestEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    Usage,
)
from ._live import LiveLine, progress_text

__all__ = [
    "EventPrinter",
    "failure_text",
    "format_args",
    "format_cost",
    "format_tokens",
    "missing_key_variable",
    "plural",
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


def plural(count: int, word: str, words: str | None = None) -> str:
    """`"1 turn"`, `"2 turns"`: `count` and the word, plural unless 1 (`words`, or `word + "s"`)."""
    return f"{count} {word if count == 1 else words or word + 's'}"


def _shorten(text: str, limit: int | None) -> str:
    """`text` on one line and at most about `limit` characters (unchanged when None)."""
    if limit is None:
        return text
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({plural(len(text) - limit, 'more char')})"


def format_args(args: Any, limit: int | None) -> str:
    """A tool call's arguments as compact JSON on one line, shortened beyond about `limit`."""
    try:
        text = json.dumps(args)
    except (TypeError, ValueError):  # not JSON (a tool's own types): say what it is anyway
        text = repr(args)
    return _shorten(text, limit)


def failure_text(message: AssistantMessage) -> str:
    """How a reply that failed reads: `error: <why>`, `[aborted]`, `[aborted: <why>]`."""
    reason, why = message.stop_reason.value, message.error_message
    if reason == "aborted":
        return "[aborted]" if why in (None, "", ABORTED_TEXT) else f"[aborted: {why}]"
    return f"{reason}: {why}"


class EventPrinter:
    """Prints a run's events to `out` as they arrive, flushing every write.

    Feed it from one thread (the run's listener, or the thread iterating an `AgentRun`); with
    `live`, a `LiveLine` draws between writes from its own thread, from `running()` to the end
    of that block, and a lock keeps the two apart. `max_chars` shortens tool arguments, results
    and progress to one line of about that many characters; None prints them whole.
    """

    def __init__(self, out: TextIO, color: bool, max_chars: int | None = None, *,
                 live: bool = False) -> None:
        self.out = out
        self.color = color
        self.max_chars = max_chars
        self.at_line_start = True
        self._started: dict[str, float] = {}
        self._waiting: dict[str, str] = {}  # call id -> tool name, of calls awaiting approval
        self._lock = threading.Lock()
        self.live = LiveLine(out, self._lock, dim=color) if live else None

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        """Draw the live line (if any) for the duration of the block: around one run."""
        if self.live is None:
            yield
            return
        self.live.start()
        try:
            yield
        finally:
            self.live.stop()

    def write(self, text: str, dim: bool = False) -> None:
        """Write `text` at once (erasing the live line first), dimmed if asked and colour is on."""
        if not text:
            return
        if dim and self.color:
            text = f"{_DIM}{text}{_RESET}"
        with self._lock:
            if self.live is not None:
                self.live.erase()
            self.at_line_start = text.endswith("\n")
            self.out.write(text)
            self.out.flush()
            if self.live is not None:
                self.live.wrote(self.at_line_start)

    def line(self, text: str = "", dim: bool = False) -> None:
        """Write `text` and a newline."""
        self.write(text, dim)
        self.write("\n")

    def end_line(self) -> None:
        """Finish a partly written line, if any (e.g. a reply cut off by an abort)."""
        if not self.at_line_start:
            self.write("\n")

    def show(self, event: AgentEvent) -> None:
        """Print what `event` adds: streamed text, a tool's start, progress or end, an error.

        A call waiting for approval reads `  ?? name(args): waiting for approval`, and the
        decisions (a `ToolApprovalMessage`) one dimmed line: `  [allowed a; denied b: why]`.

        A tool's progress goes to the live line when there is one, else on a line of its own.
        """
        if isinstance(event, SubagentEvent):  # a child agent at work, under its tool's line
            self.child(event)
            return
        if self.live is not None:
            with self._lock:
                self.live.update(event)
        if isinstance(event, MessageUpdateEvent):
            self.stream(event.assistant_message_event)
        elif isinstance(event, MessageEndEvent):
            message = event.message
            if isinstance(message, AssistantMessage) and message.error_message:
                self.end_line()
                self.line(failure_text(message))
            elif isinstance(message, ToolApprovalMessage):
                self.end_line()
                self.line(f"  [{self.decisions_text(message)}]", dim=True)
        elif isinstance(event, ToolApprovalRequestEvent):
            self.asked(event)
            self.end_line()
            self.line(f"  ?? {event.tool_name}({format_args(event.args, self.max_chars)}): "
                      "waiting for approval")
        elif isinstance(event, ToolExecutionUpdateEvent):
            if self.live is None:
                self.end_line()
                self.line(f"  .. {event.tool_name}: "
                          f"{_shorten(progress_text(event), self.max_chars)}")
        elif isinstance(event, ToolExecutionStartEvent):
            self._started[event.tool_call_id] = time.perf_counter()
            self.line(f"  -> {event.tool_name}({format_args(event.args, self.max_chars)})")
        elif isinstance(event, ToolExecutionEndEvent):
            now = time.perf_counter()
            elapsed = now - self._started.pop(event.tool_call_id, now)
            text = " ".join(getattr(b, "text", "[image]") for b in event.result.content)
            status = "error" if event.is_error else "ok"
            self.line(f"  <- {event.tool_name}: {_shorten(text, self.max_chars)}  "
                      f"[{status}, {elapsed * 1000:.1f} ms]")
        elif isinstance(event, CompactionStartEvent):  # auto_compact at work (API §13)
            self.end_line()
            why = ("near the context window" if event.reason == "threshold"
                   else "the model said the context was too long")
            self.line(f"[compacting the conversation: {why}]", dim=True)
        elif isinstance(event, CompactionEndEvent):
            self.line(f"[compacted: ~{event.tokens_before} -> ~{event.tokens_after} tokens]",
                      dim=True)
        elif isinstance(event, ModelFallbackEvent):  # what streamed above is dropped (§24)
            self.end_line()
            dropped = " (the text above is dropped)" if event.failed is not None and \
                event.failed.content else ""
            self.line(f"[{_shorten(event.reason, self.max_chars)}; trying "
                      f"{event.model.provider}/{event.model.id}{dropped}]", dim=True)

    def child(self, event: SubagentEvent) -> None:
        """A child agent's tool calls and replies (API §25), indented one step per level."""
        child = event.innermost()  # each level adds a name to the path: its depth
        name, inner = child.agent_name, child.event
        pad = "  " * (len(child.path) - len(event.path) + 2)
        if isinstance(inner, ToolExecutionStartEvent):
            self.end_line()
            self.line(f"{pad}-> {inner.tool_name}({format_args(inner.args, self.max_chars)})")
        elif isinstance(inner, ToolExecutionEndEvent):
            text = " ".join(getattr(b, "text", "[image]") for b in inner.result.content)
            status = "error" if inner.is_error else "ok"
            self.line(f"{pad}<- {inner.tool_name}: {_shorten(text, self.max_chars)}  [{status}]")
        elif isinstance(inner, MessageEndEvent) and isinstance(inner.message, AssistantMessage):
            message = inner.message
            said = failure_text(message) if message.error_message else message.text
            if said:
                self.end_line()
                self.line(f"{pad}{name}: {_shorten(said.strip(), self.max_chars)}", dim=True)

    def asked(self, event: ToolApprovalRequestEvent) -> None:
        """Note the tool a waiting call is of, for the line its decision gets."""
        self._waiting[event.tool_call_id] = event.tool_name

    def decisions_text(self, message: ToolApprovalMessage) -> str:
        """`allowed a, b; denied c: why`: the decisions, by tool name where this printer knows."""
        def name(call_id: str) -> str:
            return self._waiting.pop(call_id, call_id)

        parts = []
        if message.approved:
            parts.append("allowed " + ", ".join(name(i) for i in message.approved))
        parts += [f"denied {name(i)}: {_shorten(why, self.max_chars)}"
                  for i, why in message.denied.items()]
        return "; ".join(parts) or "no decisions"

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
    return f"input {plural(usage.input, 'token')}, output {plural(usage.output, 'token')}{cached}"


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
