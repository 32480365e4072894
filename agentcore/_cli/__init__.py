"""The command line: `python -m agentcore COMMAND`.

Each command is a subparser whose `handler(args) -> exit code` imports what it needs only when
it runs, so `--help` stays fast and commands stay independent (`demo`, `web`, and `chat`, whose
parser also takes its REPL's command list from `_chat` for the help text).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from .._core import __version__
from ..providers import get_apis

if TYPE_CHECKING:
    from .._core import Model

Handler = Callable[[argparse.Namespace], int]


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text!r}")
    return value


def _model_ref(text: str) -> tuple[str, str]:
    provider, slash, model_id = text.partition("/")
    if not (slash and provider.strip() and model_id.strip()):
        raise argparse.ArgumentTypeError(f"expected PROVIDER/ID, e.g. openai/gpt-4o-mini, got "
                                         f"{text!r}")
    return provider, model_id


def _http_url(text: str) -> str:
    if not text.startswith(("http://", "https://")):
        raise argparse.ArgumentTypeError(f"expected an http:// or https:// URL, got {text!r}")
    return text


def _fail(message: str, command: str = "demo") -> int:
    print(f"python -m agentcore {command}: error: {message}", file=sys.stderr)
    return 2


def _resolve_model(args: argparse.Namespace) -> Model | str:
    """The model `--model`, `--base-url` and `--api` describe, or why there is none."""
    from ._console import resolve_model

    provider, model_id = args.model
    model = resolve_model(provider, model_id, args.base_url, args.api)
    if isinstance(model, str):
        return f"{model}; to use a model the catalogue lacks, also pass --base-url URL"
    return model


def _missing_key(model: Model) -> str | None:
    """Why the demo cannot call `model`: no API key in the environment (None when it can)."""
    from ._console import missing_key_variable

    variable = missing_key_variable(model)
    if variable is None:
        return None
    return (f"no API key for provider {model.provider!r}: set {variable} in the "
            f"environment to run the demo on {model.provider}/{model.id}")


def _demo_command(args: argparse.Namespace) -> int:
    from .._core import AssistantMessage, StopReason
    from ._demo import run_demo, run_model_demo

    if args.model is not None:
        if args.no_delay or args.tokens_per_second is not None:
            return _fail("--tokens-per-second and --no-delay pace the offline demo only")
        model = _resolve_model(args)
        if isinstance(model, str):
            return _fail(model)
        missing = _missing_key(model)
        if missing is not None:
            return _fail(missing)
        messages = run_model_demo(model)
    elif args.base_url is not None or args.api is not None:
        return _fail("--base-url and --api need --model PROVIDER/ID")
    elif args.no_delay:
        messages = run_demo(tokens_per_second=None)
    elif args.tokens_per_second is not None:
        messages = run_demo(tokens_per_second=args.tokens_per_second)
    else:
        messages = run_demo()
    last = messages[-1] if messages else None
    ok = isinstance(last, AssistantMessage) and last.stop_reason is StopReason.STOP
    return 0 if ok else 1


def _model_or_offline(args: argparse.Namespace, command: str,
                      instead: str) -> tuple[Model | None, str | None]:
    """The real model `--model` asks for, or None to run offline; else a usage error.

    A model whose API key is missing is not an error for the interactive commands: they say
    so on stderr (`instead` says what happens then) and run offline.
    """
    from ._console import missing_key_variable

    if args.model is None:
        if args.base_url is not None or args.api is not None:
            return None, "--base-url and --api need --model PROVIDER/ID"
        return None, None
    resolved = _resolve_model(args)
    if isinstance(resolved, str):
        return None, resolved
    variable = missing_key_variable(resolved)
    if variable is None:
        return resolved, None
    print(f"agentcore {command}: no API key for provider {resolved.provider!r} (set "
          f"{variable}); {instead}", file=sys.stderr)
    return None, None


def _chat_command(args: argparse.Namespace) -> int:
    from .._core import ThinkingLevel
    from ._chat import ChatOptions, run_chat
    from ._demo_tools import SYSTEM_PROMPT
    from ._offline import DEFAULT_TOKENS_PER_SECOND

    model, error = _model_or_offline(args, "chat", "running offline on the faux model instead")
    if error is not None:
        return _fail(error, "chat")
    pace = args.tokens_per_second or DEFAULT_TOKENS_PER_SECOND
    options = ChatOptions(
        model=model, system_prompt=SYSTEM_PROMPT if args.system is None else args.system,
        thinking_level=ThinkingLevel(args.thinking),
        tokens_per_second=pace, base_url=args.base_url,
        api=args.api, base_url_provider=args.model[0] if args.model else None,
        session=args.session, mcp=tuple(args.mcp), confirm_tools=args.confirm_tools,
    )
    return run_chat(options)


def _eval_command(args: argparse.Namespace) -> int:
    from ._eval import run_eval

    model, error = _model_or_offline(args, "eval", "evaluating the offline faux model instead")
    if error is not None:
        return _fail(error, "eval")
    return run_eval(args.cases, model, args.repeat, args.html, args.json_path)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text!r}")
    return value


def _web_command(args: argparse.Namespace) -> int:
    from .._core import ThinkingLevel
    from ._demo_tools import SYSTEM_PROMPT
    from ._offline import DEFAULT_TOKENS_PER_SECOND
    from ._web import WebOptions, run_web

    model, error = _model_or_offline(args, "web", "serving the offline faux model instead")
    if error is not None:
        return _fail(error, "web")
    options = WebOptions(
        model=model, system_prompt=SYSTEM_PROMPT if args.system is None else args.system,
        thinking_level=ThinkingLevel(args.thinking),
        tokens_per_second=args.tokens_per_second or DEFAULT_TOKENS_PER_SECOND,
        session=args.session, mcp=tuple(args.mcp), confirm_tools=args.confirm_tools,
        host=args.host, port=args.port, token=args.token, no_auth=args.no_auth,
        allowed_origins=tuple(args.allow_origin),
    )
    return run_web(options)


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0 to 65535, got {text!r}")
    return value


def _add_model_arguments(parser: argparse.ArgumentParser, command: str) -> None:
    parser.add_argument(
        "--model", type=_model_ref, metavar="PROVIDER/ID",
        help=f"{command} a real model from the catalogue, e.g. openai/gpt-4o-mini or "
        "ollama/llama3.1:8b; its API key is read from the environment (e.g. OPENAI_API_KEY)",
    )
    parser.add_argument(
        "--base-url", type=_http_url, metavar="URL",
        help="send the requests to this server instead, e.g. http://localhost:11434/v1; a "
        "PROVIDER/ID the catalogue lacks is then spoken to as an openai-completions model "
        "(servers on this machine need no API key)",
    )
    apis = get_apis()  # the registry's: a new wire API needs no line here
    parser.add_argument(
        "--api", choices=apis, metavar="API",
        help=f"the wire protocol to speak: {', '.join(apis)} (default: the catalogue's, "
        "openai-completions for models it lacks)",
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser, one subparser per command.

    Returns:
        The parser; each command sets `handler` in the parsed namespace.
    """
    parser = argparse.ArgumentParser(
        prog="python -m agentcore",
        description="agentcore: a small, synchronous, thread-based library that runs LLM agents.",
    )
    parser.add_argument("--version", action="version", version=f"agentcore {__version__}")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")

    demo = commands.add_parser(
        "demo",
        help="run an agent with a calculator and a clock (offline unless --model is given)",
        description="Run an agent with a calculator and a clock, printing the streamed reply, "
        "every tool call and the token usage and cost. By default it runs offline on a "
        "scripted faux model (no network, no API key); --model asks a real model instead.",
    )
    _add_model_arguments(demo, "ask")
    demo.add_argument(
        "--tokens-per-second", type=_positive_float, metavar="N",
        help="how fast the scripted model streams (default: 150)",
    )
    demo.add_argument("--no-delay", action="store_true", help="stream without pauses")
    demo.set_defaults(handler=_demo_command)

    from .._core import ThinkingLevel
    from ._chat import HELP

    chat = commands.add_parser(
        "chat",
        help="chat with an agent in the terminal (offline unless --model is given)",
        description="Chat with an agent that has a calculator and a clock. Each line you type\n"
        "is a prompt; the reply streams as it arrives, with every tool call and the tokens\n"
        "and cost of each prompt. Without --model, or without the model's API key, it runs\n"
        "offline on a scripted faux model.",
        epilog=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_model_arguments(chat, "talk to")
    chat.add_argument("--system", metavar="TEXT", default=None,
                      help="the system prompt (default: a concise assistant that uses its tools)")
    chat.add_argument("--thinking", choices=[level.value for level in ThinkingLevel],
                      default=ThinkingLevel.OFF.value, metavar="LEVEL",
                      help="how hard a reasoning model thinks: "
                      f"{', '.join(level.value for level in ThinkingLevel)} (default: off)")
    chat.add_argument("--session", metavar="PATH", default=None,
                      help="keep the conversation in PATH (SQLite; a .jsonl name for an "
                      "append-only JSON Lines file; a postgresql:// URL for a PostgreSQL "
                      "database, needs the postgres extra) and resume it, history shown, "
                      "next time")
    chat.add_argument("--mcp", metavar="COMMAND", action="append", default=[],
                      help="also give the agent the tools of the MCP server COMMAND starts "
                      "(over stdio; split like a shell line; repeatable), e.g. "
                      "--mcp 'uvx mcp-server-time'; needs the mcp extra")
    chat.add_argument("--confirm-tools", action="store_true",
                      help="ask before every tool call runs, --mcp servers' included: "
                      "allow NAME(ARGS)? [y/N] (calls of tools that require approval are "
                      "always asked about)")
    chat.add_argument("--tokens-per-second", type=_positive_float, help=argparse.SUPPRESS)
    chat.set_defaults(handler=_chat_command)

    web = commands.add_parser(
        "web",
        help="serve a chat page and an AG-UI endpoint (offline unless --model is given)",
        description="Serve the chat page at http://HOST:PORT/ and the AG-UI endpoint at "
        "/ag-ui, with an agent per conversation that has a calculator and a clock. Without "
        "--model, or without the model's API key, it runs offline on a scripted faux model. "
        "Needs the web extra: pip install 'agentcore[web]'.",
    )
    _add_model_arguments(web, "serve")
    web.add_argument("--system", metavar="TEXT", default=None,
                     help="the system prompt (default: a concise assistant that uses its tools)")
    web.add_argument("--thinking", choices=[level.value for level in ThinkingLevel],
                     default=ThinkingLevel.OFF.value, metavar="LEVEL",
                     help="how hard a reasoning model thinks (default: off)")
    web.add_argument("--session", metavar="PATH", default=None,
                     help="keep every conversation in the SQLite file PATH, or the PostgreSQL "
                     "database of a postgresql:// URL (one session per conversation), so "
                     "reloads and restarts show the history")
    web.add_argument("--mcp", metavar="COMMAND", action="append", default=[],
                     help="also give the agents the tools of the MCP server COMMAND starts "
                     "(over stdio; repeatable); needs the mcp extra")
    web.add_argument("--confirm-tools", action="store_true",
                     help="ask on the page (Allow/Deny) before every tool call runs")
    web.add_argument("--host", default="127.0.0.1",
                     help="the address to listen on (default: 127.0.0.1, this machine only)")
    web.add_argument("--port", type=_port, default=8000,
                     help="the port to listen on (default: 8000; 0 picks a free one)")
    web.add_argument("--token", default=None,
                     help="ask every request for this token (default: a random one when "
                     "--host is not this machine only; the URL printed carries it)")
    web.add_argument("--allow-origin", metavar="ORIGIN", action="append", default=[],
                     help="also accept requests from pages of ORIGIN (scheme://host[:port], "
                     "e.g. a front end on http://localhost:3000; repeatable)")
    web.add_argument("--no-auth", action="store_true",
                     help="serve beyond this machine without a token (anyone who can reach "
                     "the address can run the agent's tools)")
    web.add_argument("--tokens-per-second", type=_positive_float, help=argparse.SUPPRESS)
    web.set_defaults(handler=_web_command)

    evals = commands.add_parser(
        "eval",
        help="measure an agent on a JSONL dataset (offline unless --model is given)",
        description="Run the chat's agent (a calculator and a clock) on every case of CASES (one "
        "JSON object a line: input, expected, name, metadata), score each answer (Contains "
        "against expected), print the report, and exit 0 when every case passes, 1 when "
        "some fail. Without --model, or without the model's API key, it runs offline on the "
        "faux model.",
    )
    evals.add_argument("cases", metavar="CASES", help="the dataset, a .jsonl file")
    _add_model_arguments(evals, "evaluate")
    evals.add_argument("--repeat", type=_positive_int, default=1,
                       help="run every case N times, for the spread of the pass rates")
    evals.add_argument("--html", metavar="PATH", default=None,
                       help="also write the report as one self-contained HTML page")
    evals.add_argument("--json", metavar="PATH", default=None, dest="json_path",
                       help="also write the report as JSON")
    evals.set_defaults(handler=_eval_command)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line.

    Args:
        argv: The arguments after the program name; `sys.argv[1:]` by default.

    Returns:
        The exit code: 0 on success, 2 for a usage error (help is printed when no command is
        given), 130 when interrupted.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Handler | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return handler(args)
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130

