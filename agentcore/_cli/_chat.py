"""The terminal chat behind `python -m agentcore chat`: a REPL over one `Agent`.

Each line typed is a prompt; the reply streams as it arrives, with every tool call and a usage
line per prompt. The REPL is single-threaded: it iterates the run on the main thread, so Ctrl-C
lands in that wait, where `AgentRun` aborts the run before re-raising; we catch it, print
`[aborted]` and prompt again. Lines starting with `/` are commands (see `HELP`).

Without a model (or without its API key) the chat runs on the offline model of `_offline`,
which needs no network; `/model` switches between it and real models.

Tool calls needing approval (API §20; every call with `--confirm-tools`) are asked about
inline, `allow <name>(<args>)? [y/N] `, by the main thread when the run announces them (see
`_approve`); a resumed session whose calls still wait is asked about before the first prompt.
"""

from __future__ import annotations

import contextlib
import shlex
import sys
from collections.abc import Callable, Collection, Sequence
from typing import TextIO

import attrs

from .._agent import Agent
from .._core import (
    AgentcoreError,
    AgentEvent,
    AgentMessage,
    AgentTool,
    AssistantMessage,
    CompactionSummaryMessage,
    MessageEndEvent,
    MessageStartEvent,
    Model,
    SessionBusyError,
    ThinkingLevel,
    ToolApprovalMessage,
    ToolApprovalRequestEvent,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from ..providers.faux import FauxProvider
from ._approve import Approvals, allowed, question
from ._console import (
    EventPrinter,
    format_cost,
    format_tokens,
    missing_key_variable,
    public_url,
    resolve_model,
    wants_color,
)
from ._demo_tools import SYSTEM_PROMPT, calculator_tool, clock_tool
from ._live import wants_live
from ._offline import DEFAULT_TOKENS_PER_SECOND, register_offline
from ._store import open_session, shown_store

__all__ = ["HELP", "ChatOptions", "run_chat"]

OFFLINE_NAMES = ("offline", "faux")
"""What `/model` accepts to go back to the offline model."""

MAX_TOOL_CHARS = 200
"""Tool arguments and results are shown on one line of about this many characters."""

COMPACT_KEEP_TOKENS = 2_000
"""What `/compact` keeps verbatim: the last messages up to about this many tokens."""

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
    confirm_tools: bool = False
    """Ask before every tool call runs (`--confirm-tools`), not only those that require it."""


class _Chat:
    """The REPL's state: one agent, the offline provider, where to print. Main thread only."""

    def __init__(self, agent: Agent, offline: FauxProvider, options: ChatOptions, out: TextIO,
                 echo: bool, approvals: Approvals) -> None:
        self.agent = agent
        self.offline = offline
        self.options = options
        self.echo = echo
        self.approvals = approvals
        self.read_line: Callable[[str], str] = input
        self.printer = EventPrinter(out, wants_color(out), max_chars=MAX_TOOL_CHARS,
                                    live=wants_live(out))

    def say(self, text: str) -> None:
        self.printer.end_line()
        self.printer.line(text)

    def loop(self, read_line: Callable[[str], str]) -> int:
        self.read_line = read_line
        if self.agent.state.pending_approvals:  # a resumed session stopped at the question
            self.drive(None)
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
        self.drive(UserMessage(text))

    def drive(self, prompt: UserMessage | None) -> None:
        """Run `prompt` (None: continue a transcript whose calls wait for approval), shown."""
        self.approvals.reset()
        try:
            with self.printer.running():
                run = self.agent.prompt(prompt) if prompt is not None else self.agent.continue_()
                for event in run:
                    self.show(event, prompt)
        except SessionBusyError:  # another process drives the --session (API §27)
            self.say("the session is busy: another process is running it; try again once its "
                     "reply is done")
            return
        except KeyboardInterrupt:
            self.abort()
            return
        finally:
            self.approvals.cancel()  # nothing is asked once we stop reading the run
        self.summary(run.result())

    def show(self, event: AgentEvent, prompt: UserMessage | None) -> None:
        if isinstance(event, ToolApprovalRequestEvent):
            self.confirm(event)
            return
        if isinstance(event, (MessageStartEvent, MessageEndEvent)) and isinstance(
                event.message, ToolApprovalMessage):
            return  # the answers to the questions above: already on the screen
        if isinstance(event, MessageEndEvent) and isinstance(event.message, UserMessage) and (
                event.message is not prompt):
            self.say(f"you (queued): {event.message.text}")
        self.printer.show(event)

    def confirm(self, event: ToolApprovalRequestEvent) -> None:
        """Ask `allow <name>(<args>)? [y/N] ` on a line of its own; give `approve` the answer."""
        self.printer.end_line()
        self.printer.at_line_start = False  # the question's line: Ctrl-C there ends it
        try:
            answer = self.read_line(question(event, MAX_TOOL_CHARS))
        except EOFError:
            answer = ""
            self.say("")
        else:
            if self.echo:
                self.printer.line(answer)
            self.printer.at_line_start = True  # the terminal echoed Enter, or we did
        self.approvals.answer(event.tool_call_id, allowed(answer))

    def abort(self) -> None:
        self.agent.abort()
        self.approvals.cancel()  # a worker waiting for an answer denies its call and returns
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
    if isinstance(message, ToolApprovalMessage):
        return (f"  [approvals: {len(message.approved)} allowed, {len(message.denied)} "
                "denied]")
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
    offline = register_offline(options.tokens_per_second)
    try:
        session = None if options.session is None else open_session(options.session)
    except (ImportError, OSError, ValueError, AgentcoreError) as exc:
        offline.unregister()
        print(f"python -m agentcore chat: error: --session: {exc}", file=sys.stderr)
        return 2
    try:
        tools = [calculator_tool(), clock_tool(), *mcp_tools]
        if options.confirm_tools:
            tools = [attrs.evolve(tool, requires_approval=True) for tool in tools]
        approvals = Approvals()
        # the tools are given here, not after, so that calls a stored session left waiting
        # for approval stay pending instead of being answered as interrupted
        agent = Agent(model=options.model or offline.get_model(),
                      system_prompt=options.system_prompt, tools=tools,
                      thinking_level=options.thinking_level, session=session,
                      approve=approvals.approve)
        chat = _Chat(agent, offline, options, stream, echo, approvals)
        names = [tool.name for tool in agent.tools]
        chat.say(f"agentcore chat: {describe(agent.model)}, tools {', '.join(names[:-1])} and "
                 f"{names[-1]}. /help lists the commands; Ctrl-C aborts a reply, Ctrl-D quits.")
        if options.session is not None and agent.messages:
            chat.history(shown_store(options.session))
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
