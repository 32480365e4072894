"""The command line: `python -m agentcore COMMAND`.

Each command is a subparser whose `handler(args) -> exit code` imports what it needs only when
it runs, so `--help` stays fast and commands stay independent (`demo` today, `chat` later).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from . import __version__

if TYPE_CHECKING:
    from ._model import Model

Handler = Callable[[argparse.Namespace], int]

_APIS = ("openai-completions", "openai-responses", "anthropic-messages", "google-generative-ai")


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


def _fail(message: str) -> int:
    print(f"python -m agentcore demo: error: {message}", file=sys.stderr)
    return 2


def _resolve_model(args: argparse.Namespace) -> Model | str:
    """The model `--model`, `--base-url` and `--api` describe, or why there is none."""
    import attrs

    from ._errors import ModelNotFoundError
    from ._model import Model
    from .providers.models import get_model

    provider, model_id = args.model
    try:
        model = get_model(provider, model_id)
    except ModelNotFoundError as exc:
        if args.base_url is None:
            return f"{exc}; to use a model the catalogue lacks, also pass --base-url URL"
        model = Model(model_id, model_id, "openai-completions", provider, args.base_url)
    return attrs.evolve(model, base_url=args.base_url or model.base_url,
                        api=args.api or model.api)


def _missing_key(model: Model) -> str | None:
    """Why the demo cannot call `model`: no API key in the environment (None when it can)."""
    from ._errors import MissingApiKeyError
    from .providers.models import env_var_for, get_env_api_key, require_api_key

    if get_env_api_key(model.provider) is not None:
        return None
    try:
        require_api_key(model.provider, base_url=model.base_url)  # local servers need no key
    except MissingApiKeyError:
        variable = env_var_for(model.provider) or f"the API key of {model.provider!r}"
        return (f"no API key for provider {model.provider!r}: set {variable} in the "
                f"environment to run the demo on {model.provider}/{model.id}")
    return None


def _demo(args: argparse.Namespace) -> int:
    from ._demo import run_demo, run_model_demo
    from ._enums import StopReason
    from ._messages import AssistantMessage

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
    demo.add_argument(
        "--model", type=_model_ref, metavar="PROVIDER/ID",
        help="ask a real model from the catalogue, e.g. openai/gpt-4o-mini or "
        "ollama/llama3.1:8b; its API key is read from the environment (e.g. OPENAI_API_KEY)",
    )
    demo.add_argument(
        "--base-url", type=_http_url, metavar="URL",
        help="send the requests to this server instead, e.g. http://localhost:11434/v1; a "
        "PROVIDER/ID the catalogue lacks is then spoken to as an openai-completions model "
        "(servers on this machine need no API key)",
    )
    demo.add_argument(
        "--api", choices=_APIS, metavar="API",
        help=f"the wire protocol to speak: {', '.join(_APIS)} (default: the catalogue's, "
        "openai-completions for models it lacks)",
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
