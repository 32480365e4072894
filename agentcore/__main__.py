"""The command line: `python -m agentcore COMMAND`.

Each command is a subparser whose `handler(args) -> exit code` imports what it needs only when
it runs, so `--help` stays fast and commands stay independent (`demo` today, `chat` later).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from . import __version__

Handler = Callable[[argparse.Namespace], int]


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text!r}")
    return value


def _demo(args: argparse.Namespace) -> int:
    from ._demo import run_demo
    from ._enums import StopReason
    from ._messages import AssistantMessage

    if args.no_delay:
        messages = run_demo(tokens_per_second=None)
    elif args.tokens_per_second is not None:
        messages = run_demo(tokens_per_second=args.tokens_per_second)
    else:
        messages = run_demo()
    last = messages[-1] if messages else None
    ok = isinstance(last, AssistantMessage) and last.stop_reason is StopReason.STOP
    return 0 if ok else 1


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
        help="run an offline agent on a scripted model (no network, no API key)",
        description="Run an agent with a calculator and a clock on the offline faux provider, "
        "printing the streamed reply, every tool call and the token usage and cost.",
    )
    demo.add_argument(
        "--tokens-per-second", type=_positive_float, metavar="N",
        help="how fast the scripted model streams (default: 150)",
    )
    demo.add_argument("--no-delay", action="store_true", help="stream without pauses")
    demo.set_defaults(handler=_demo)
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


if __name__ == "__main__":
    sys.exit(main())
