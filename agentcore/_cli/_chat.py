"""The terminal chat behind `python -m agentcore chat`: a REPL over one `Agent`.

Each line typed is a prompt; the reply streams as it arrives, with every tool call and a usage
line per prompt. The REPL is single-threaded: it iterates the run on the main thread, so Ctrl-C
lands in that wait, where `AgentRun` aborts the run before re-raising; we catch it, print
`[aborted]` and prompt again. Lines starting with `/` are commands (see `HELP`).

Without a model (or without its API key) the chat runs offline on a faux model whose replies
are scripted by `offline_reply`: arithmetic goes to the calculator, a question about the time
to the clock, anything else is echoed back, so queued messages are visible in the next reply.
"""

from __future__ import annotations

import contextlib
import re
import shlex
import sys
from collections.abc import Callable, Collection, Sequence
from typing import Any, TextIO

import attrs

from .._agent import Agent
from .._core import (
    AgentcoreError,
    AgentEvent,
    AgentMessage,
    AgentTool,
    AssistantContent,
    AssistantMessage,
    CompactionSummaryMessage,
    Context,
    MessageEndEvent,
    Model,
    StreamOptions,
    ThinkingLevel,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from ..providers.faux import (
    FauxProvider,
    faux_assistant_message,
    faux_text,
    faux_thinking,
    faux_tool_call,
    register_faux_provider,
)
from ._console import (
    EventPrinter,
    format_cost,
    format_tokens,
    missing_key_variable,
    public_url,
    resolve_model,
    wants_color,
)
from ._demo_tools import DEMO_COST, SYSTEM_PROMPT, calculator_tool, clock_tool
from ._live import wants_live

__all__ = ["DEFAULT_TOKENS_PER_SECOND", "HELP", "ChatOptions", "offline_reply", "run_chat"]

DEFAULT_TOKENS_PER_SECOND = 200.0
"""How fast the offline model streams: visibly, yet a short reply takes well under a second."""

OFFLINE_NAMES = ("offline", "faux")
"""What `/model` accepts to go back to the offline model."""

MAX_TOOL_CHARS = 200
"""Tool arguments and results are shown on one line of about this many characters."""

HELP = """\
commands:
  /steer TEXT     queue a message the model sees before its next turn
  /followup TEXT  queue a message to send once the model would otherwise stop
  /model          show the model; /model PROVIDER/ID switches to another one for the next
                  prompt, /model offline back to the offline faux model
  /reset          clear the transcript (and the queues, and the --session file)
  /compact        summarise the older part of the conversation with the model, keeping the
                  recent messages: for long chats, before they outgrow the context window
  /help           show this help
  /quit           leave (so do Ctrl-D and Ctrl-C at the prompt)
Ctrl-C while a reply streams aborts that reply, not the chat. Input is read between replies
only: lines typed during a reply wait until it ends, so /steer and /followup queue onto the
next prompt's run."""


@attrs.frozen(kw_only=True)
class ChatOptions:
    """What `python -m agentcore chat` was started with.

    `model` None means offline. `base_url` and `api` (from the command line) also apply to
    models `/model` picks from `base_url_provider`, the provider they were given for.
    """

    model: Model | None = None
    system_prompt: str = SYSTEM_PROMPT
    thinking_level: ThinkingLevel = ThinkingLevel.OFF
    tokens_per_second: float | None = DEFAULT_TOKENS_PER_SECOND
    base_url: str | None = None
    api: str | None = None
    base_url_provider: str | None = None
    session: str | None = None
    mcp: tuple[str, ...] = ()
    """Command lines of MCP servers (`--mcp`) whose tools the agent gets too."""


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


def _register_offline(tokens_per_second: float | None) -> FauxProvider:
    """A faux provider whose one model always has `offline_reply` queued: it never runs dry."""
    model = Model("faux-chat", "Faux Chat (offline)", "faux", "faux", "http://localhost:0",
                  reasoning=True, cost=DEMO_COST, context_window=200_000, max_tokens=8_192)
    faux = register_faux_provider([model], tokens_per_second=tokens_per_second,
                                  token_size=(1, 2))

    def reply(context: Context, options: StreamOptions, model: Model) -> AssistantMessage:
        faux.append_responses([reply])
        return offline_reply(context, options, model)

    faux.set_responses([reply])
    return faux



class _Chat:
    """The REPL's state: one agent, the offline provider, where to print. Main thread only."""

    def __init__(self, agent: Agent, offline: FauxProvider, options: ChatOptions, out: TextIO,
                 echo: bool) -> None:
        self.agent = agent
        self.offline = offline
        self.options = options
        self.echo = echo
        self.printer = EventPrinter(out, wants_color(out), max_chars=MAX_TOOL_CHARS,
                                    live=wants_live(out))

    def say(self, text: str) -> None:
        self.printer.end_line()
        self.printer.line(text)

    def loop(self, read_line: Callable[[str], str]) -> int:
        while True:
            try:
                line = read_line("you> ")
            except (EOFError, KeyboardInterrupt):
                self.say("")
                return 0
            if self.echo:
                self.printer.line(line)
            line = line.strip()
            try:
                if line.startswith("/"):
                    if not self.command(line):
                        return 0
                elif line:
                    self.ask(line)
            except KeyboardInterrupt:  # landed outside `ask`'s wait: still, leave no run going
                self.abort()

    def ask(self, text: str) -> None:
        prompt = UserMessage(text)
        try:
            with self.printer.running():
                run = self.agent.prompt(prompt)
                for event in run:
                    self.show(event, prompt)
        except KeyboardInterrupt:
            self.abort()
            return
        self.summary(run.result())

    def show(self, event: AgentEvent, prompt: UserMessage) -> None:
        if isinstance(event, MessageEndEvent) and isinstance(event.message, UserMessage) and (
                event.message is not prompt):
            self.say(f"you (queued): {event.message.text}")
        self.printer.show(event)

    def abort(self) -> None:
        self.agent.abort()
        while True:  # let the run wind down (about a second at most); Ctrl-C again is no-op
            try:
                self.agent.wait_for_idle()
                break
            except KeyboardInterrupt:
                self.agent.abort()
        self.say("[aborted]")

    def summary(self, messages: list[AgentMessage]) -> None:
        replies = [m for m in messages if isinstance(m, AssistantMessage)]
        usage = sum((m.usage for m in replies), Usage())
        cost = format_cost(usage, self.agent.model.cost)
        self.printer.end_line()
        self.printer.line(f"[{format_tokens(usage)}, cost {cost}]", dim=True)

    def command(self, line: str) -> bool:
        """Run one `/command`; False means quit."""
        name, _, arg = line.partition(" ")
        arg = arg.strip()
        if name in ("/quit", "/exit"):
            return False
        if name == "/help":
            self.say(HELP)
        elif name in ("/steer", "/followup"):
            if not arg:
                self.say(f"usage: {name} TEXT")
            elif name == "/steer":
                self.agent.steer(arg)
                self.say("queued a steering message; it goes out with your next prompt")
            else:
                self.agent.follow_up(arg)
                self.say("queued a follow-up; it goes out after the reply to your next prompt")
        elif name == "/model":
            self.switch_model(arg)
        elif name == "/reset":
            self.agent.reset()
            self.say("transcript cleared")
        elif name == "/compact":
            self.compact()
        else:
            self.say(f"unknown command {name!r}; type /help for the list")
        return True

    def compact(self) -> None:
        """Replace the transcript (and the session's) by a summary and the recent messages."""
        from ..compaction import compact, estimate_tokens

        messages = self.agent.messages
        if not messages:
            self.say("nothing to compact")
            return
        try:
            compacted = compact(messages, self.agent.model, stream_fn=self.agent.stream_fn,
                                keep_recent_tokens=COMPACT_KEEP_TOKENS)
        except KeyboardInterrupt:
            self.say("[compaction aborted; the transcript is unchanged]")
            return
        except Exception as exc:  # the model failed: keep the transcript as it is
            self.say(f"error: compaction failed: {exc}; the transcript is unchanged")
            return
        if len(compacted) >= len(messages):
            self.say("nothing to compact: the conversation is all recent")
            return
        self.agent.messages = compacted
        self.say(f"compacted {len(messages)} messages (~{estimate_tokens(messages)} tokens) "
                 f"into a summary and {len(compacted) - 1} recent "
                 f"(~{estimate_tokens(compacted)} tokens)")

    def history(self, source: str) -> None:
        """Show a resumed conversation, one line per message."""
        messages = self.agent.messages
        self.say(f"resumed {len(messages)} message{'s' if len(messages) != 1 else ''} "
                 f"from {source}")
        for message in messages:
            self.say(history_line(message))

    def switch_model(self, ref: str) -> None:
        if not ref:
            self.say(f"model: {describe(self.agent.model)}")
            return
        if ref in OFFLINE_NAMES:
            self.agent.model = self.offline.get_model()
            self.say(f"model: {describe(self.agent.model)}")
            return
        provider, slash, model_id = ref.partition("/")
        if not (slash and provider.strip() and model_id.strip()):
            self.say(f"usage: /model PROVIDER/ID (e.g. openai/gpt-4o-mini) or /model offline; "
                     f"got {ref!r}")
            return
        same = provider == self.options.base_url_provider
        model = resolve_model(provider, model_id, self.options.base_url if same else None,
                              self.options.api if same else None)
        keeping = f"keeping {self.agent.model.provider}/{self.agent.model.id}"
        if isinstance(model, str):
            self.say(f"error: {model} (for a model the catalogue lacks, start the chat with "
                     f"--model PROVIDER/ID --base-url URL); {keeping}")
            return
        variable = missing_key_variable(model)
        if variable is not None:
            self.say(f"error: no API key for provider {provider!r}: set {variable} in the "
                     f"environment; {keeping}")
            return
        self.agent.model = model
        self.say(f"model: {describe(model)}")


COMPACT_KEEP_TOKENS = 2_000
"""What `/compact` keeps verbatim: the last messages up to about this many tokens."""


def history_line(message: AgentMessage) -> str:
    """One line for a message of a resumed conversation."""
    if isinstance(message, UserMessage):
        return f"you: {_clip(message.text)}"
    if isinstance(message, AssistantMessage):
        calls = ", ".join(call.name for call in message.tool_calls)
        text = _clip(message.text) if message.text else ""
        return f"assistant: {text}" + (f" [called {calls}]" if calls else "")
    if isinstance(message, ToolResultMessage):
        return f"  <- {message.tool_name}: {_clip(message.text)}"
    if isinstance(message, CompactionSummaryMessage):
        return f"summary of earlier messages: {_clip(message.summary)}"
    return f"[{message.role}]"


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_TOOL_CHARS else text[: MAX_TOOL_CHARS - 1] + "…"


def describe(model: Model) -> str:
    """`provider/id (api at url)`, or that it is the offline model."""
    if model.provider == "faux":
        return f"{model.provider}/{model.id} (offline: scripted replies, no network)"
    return f"{model.provider}/{model.id} ({model.api} at {public_url(model.base_url)})"


def run_chat(
    options: ChatOptions,
    out: TextIO | None = None,
    read_line: Callable[[str], str] | None = None,
) -> int:
    """Run the chat until `/quit`, end of input or Ctrl-C at the prompt.

    Args:
        options: The model (None: offline), system prompt, thinking level and pacing.
        out: Where to print; `sys.stdout` by default. Thinking is dimmed when it is a tty.
        read_line: Reads one line after showing its prompt; `input` by default (with readline's
            line editing and history when stdin is a terminal and readline is importable).

    Returns:
        The exit code: 0, or 2 when an `--mcp` server does not start.
    """
    stream = sys.stdout if out is None else out
    if read_line is None:
        read_line = input
        if sys.stdin.isatty():
            with contextlib.suppress(ImportError):
                import readline  # noqa: F401  # imported for its effect on input()
    echo = out is None and not sys.stdin.isatty()  # piped input: show it after its prompt
    with contextlib.ExitStack() as servers:
        try:
            mcp_tools = open_mcp_servers(options.mcp, servers, taken={"calculator", "clock"})
        except (ImportError, ValueError, AgentcoreError) as exc:
            print(f"python -m agentcore chat: error: --mcp: {exc}", file=sys.stderr)
            return 2
        return _run_chat(options, stream, read_line, echo, mcp_tools)


def _run_chat(options: ChatOptions, stream: TextIO, read_line: Callable[[str], str], echo: bool,
              mcp_tools: list[AgentTool]) -> int:
    offline = _register_offline(options.tokens_per_second)
    session = None if options.session is None else open_session(options.session)
    try:
        agent = Agent(model=options.model or offline.get_model(),
                      system_prompt=options.system_prompt,
                      thinking_level=options.thinking_level, session=session)
        # mypy cannot type `tools=` (converter)
        agent.tools = [calculator_tool(), clock_tool(), *mcp_tools]
        chat = _Chat(agent, offline, options, stream, echo)
        names = [tool.name for tool in agent.tools]
        chat.say(f"agentcore chat: {describe(agent.model)}, tools {', '.join(names[:-1])} and "
                 f"{names[-1]}. /help lists the commands; Ctrl-C aborts a reply, Ctrl-D quits.")
        if options.session is not None and agent.messages:
            chat.history(options.session)
        return chat.loop(read_line)
    finally:
        offline.unregister()
        close = getattr(session, "close", None)
        if close is not None:
            close()


def open_mcp_servers(commands: Sequence[str], stack: contextlib.ExitStack, *,
                     taken: Collection[str] = ()) -> list[AgentTool]:
    """The tools of one MCP server (over stdio) per `--mcp` command line, split like a shell.

    Each server is closed, its process ended, when `stack` closes. Raises `ValueError` for an
    empty command or a tool name already `taken` (or listed by an earlier server),
    `MCPServerError` for a server that does not start, `ImportError` without the `mcp` extra.
    """
    if not commands:
        return []
    from ..mcp import MCPServerStdio

    tools: list[AgentTool] = []
    names = set(taken)
    for command in commands:
        argv = shlex.split(command)
        if not argv:
            raise ValueError(f"an MCP server's command line is empty: {command!r}")
        for tool in stack.enter_context(MCPServerStdio(argv[0], argv[1:])).tools():
            if tool.name in names:
                raise ValueError(f"the MCP server {command!r} has a tool named {tool.name!r}, "
                                 "a name another tool already has")
            names.add(tool.name)
            tools.append(tool)
    return tools


def open_session(path: str) -> Any:
    """The session file at `path`: JSON Lines for a `.jsonl` name, else SQLite."""
    from ..sessions import JsonlSession, SqliteSession

    return JsonlSession(path) if path.endswith(".jsonl") else SqliteSession(path)
