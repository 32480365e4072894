from __future__ import annotations

import io
import json
import os
import re
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
from _internals import ChatOptions, _expression, cli, offline_reply, resolve_model, run_chat
from sse_server import SSEServer, free_port

import agentcore as ac

FAST = ("--tokens-per-second", "5000")
USAGE = re.compile(r"^\[input (\d+) tokens, output (\d+) tokens, cost \$(\d+\.\d{6}) "
                   r"\(at \$3\.00 in / \$15\.00 out per million tokens\)\]$", re.M)
TOOL_END = r"  <- {name}: (?P<text>.*)  \[(?P<status>ok|error), \d+\.\d ms\]"
ECHO = ("I'm the offline model: I echo what you send, work out arithmetic with the calculator "
        "and tell the time with the clock. /model PROVIDER/ID switches to a real model.")


def _env(**changes: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in changes and not k.lower().endswith("_proxy")}
    env.update({k: v for k, v in changes.items() if v is not None})
    env["NO_PROXY"] = "127.0.0.1,localhost"
    return env


def _chat(stdin: str, *args: str, env: dict[str, str] | None = None,
          ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agentcore", "chat", *args], input=stdin,
                          capture_output=True, text=True, timeout=30, check=False,
                          env=env or _env())


def _exchanges(stdout: str) -> list[str]:
    """The output after each `you> ` prompt (the banner dropped)."""
    return stdout.split("you> ")[1:]


# --- the real program, through pipes ------------------------------------------------------------


@pytest.mark.slow
def test_chat_prompt_streams_a_reply_and_a_usage_line() -> None:
    done = _chat("hello\n", *FAST)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout.startswith("agentcore chat: faux/faux-chat (offline: scripted replies, "
                                  "no network), tools calculator and clock. /help lists")
    first, last = _exchanges(done.stdout)
    assert first.startswith(f'hello\nassistant: You said "hello". {ECHO}\n')
    assert USAGE.fullmatch(first.splitlines()[-1])
    assert last == "\n"  # end of input: a clean line, exit 0
    assert "\x1b[" not in done.stdout


@pytest.mark.slow
def test_chat_runs_the_tools_and_shows_their_results() -> None:
    done = _chat("what is 17 * 23 + 2 ** 10?\nand 1/0\nwhat time is it?\n", *FAST)
    assert done.returncode == 0, done.stderr
    calc, zero, clock, _ = _exchanges(done.stdout)
    assert '  -> calculator({"expression": "17 * 23 + 2 ** 10"})\n' in calc
    assert re.search(TOOL_END.format(name="calculator"), calc)["text"] == "1415"  # type: ignore[index]
    assert "assistant: The calculator says 17 * 23 + 2 ** 10 = 1415.\n" in calc
    assert len(USAGE.findall(calc)) == 1  # one usage line for the prompt's two model calls
    end = re.search(TOOL_END.format(name="calculator"), zero)
    assert end is not None
    assert (end["text"], end["status"]) == ("ValueError: division by zero in '1/0'", "error")
    assert "The calculator failed: ValueError: division by zero in '1/0'" in zero
    assert '  -> clock({"timezone": "UTC"})\n' in clock
    now = re.search(TOOL_END.format(name="clock"), clock)
    assert now is not None
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \(\w+day, UTC\+00:00\)", now["text"])
    assert f"The clock says it is {now['text']}." in clock


@pytest.mark.slow
def test_chat_steer_and_followup_when_idle_join_the_next_run() -> None:
    done = _chat("/steer be brief\n/followup and then?\nhi\n", *FAST)
    assert done.returncode == 0, done.stderr
    steer, follow, run, _ = _exchanges(done.stdout)
    assert steer == ("/steer be brief\nqueued a steering message; it goes out with your next "
                     "prompt\n")
    assert follow == ("/followup and then?\nqueued a follow-up; it goes out after the reply to "
                      "your next prompt\n")
    # the steering message goes out with the prompt; the follow-up gets a turn of its own
    assert run.startswith(f'hi\nyou (queued): be brief\nassistant: You sent 2 messages: "hi" and '
                          f'"be brief". {ECHO}\nyou (queued): and then?\n'
                          f'assistant: You said "and then?". {ECHO}\n')
    assert len(USAGE.findall(run)) == 1


@pytest.mark.slow
def test_chat_reset_clears_the_transcript() -> None:
    done = _chat("hello\nhello\n/reset\nhello\n", *FAST)
    assert done.returncode == 0, done.stderr
    assert "/reset\ntranscript cleared\n" in done.stdout
    inputs = [int(m[0]) for m in USAGE.findall(done.stdout)]
    assert len(inputs) == 3
    assert inputs[1] > inputs[0]  # the second prompt carries the first exchange
    assert inputs[2] == inputs[0]  # after /reset, the model sees the prompt alone again


@pytest.mark.slow
def test_chat_commands_help_unknown_and_quit() -> None:
    done = _chat("/help\n/nope\n/steer\n/quit\nhello\n", *FAST)
    assert done.returncode == 0, done.stderr
    helped, unknown, steer, quit_ = _exchanges(done.stdout)
    assert "/steer TEXT" in helped
    assert "Ctrl-C while a reply streams aborts that reply" in helped
    assert unknown == "/nope\nunknown command '/nope'; type /help for the list\n"
    assert steer == "/steer\nusage: /steer TEXT\n"
    assert quit_ == "/quit\n"  # and the line after it is never read


@pytest.mark.slow
def test_chat_model_command_switches_or_explains_and_keeps_the_old_model() -> None:
    script = ["/model openai/gpt-9-ultra", "/model anthropic/claude-sonnet-4-5", "/model gpt-4o",
              "/model openai/gpt-4o-mini", "/model", "/model offline", "hello"]
    env = _env(OPENAI_API_KEY="sk-test", ANTHROPIC_API_KEY=None, ANTHROPIC_OAUTH_TOKEN=None)
    done = _chat("\n".join(script) + "\n", *FAST, env=env)
    assert done.returncode == 0, done.stderr
    bad, no_key, usage, switched, shown, offline, hello, _ = _exchanges(done.stdout)
    assert bad.startswith("/model openai/gpt-9-ultra\nerror: no model 'gpt-9-ultra' for "
                          "provider 'openai'")
    assert bad.endswith("; keeping faux/faux-chat\n")
    assert no_key == ("/model anthropic/claude-sonnet-4-5\nerror: no API key for provider "
                      "'anthropic': set ANTHROPIC_API_KEY in the environment; keeping "
                      "faux/faux-chat\n")
    assert usage.startswith("/model gpt-4o\nusage: /model PROVIDER/ID")
    assert switched == ("/model openai/gpt-4o-mini\nmodel: openai/gpt-4o-mini (openai-responses "
                        "at https://api.openai.com/v1)\n")
    assert shown == switched.replace("/model openai/gpt-4o-mini", "/model")
    assert offline == ("/model offline\nmodel: faux/faux-chat (offline: scripted replies, no "
                       "network)\n")
    assert hello.startswith('hello\nassistant: You said "hello".')
    assert "sk-test" not in done.stdout


@pytest.mark.slow
def test_chat_without_the_models_key_runs_offline_with_a_notice() -> None:
    done = _chat("hi\n", "--model", "openai/gpt-4o-mini", *FAST, env=_env(OPENAI_API_KEY=None))
    assert done.returncode == 0, done.stderr
    assert done.stderr == ("agentcore chat: no API key for provider 'openai' (set "
                           "OPENAI_API_KEY); running offline on the faux model instead\n")
    assert done.stdout.startswith("agentcore chat: faux/faux-chat (offline")
    assert 'You said "hi".' in done.stdout


class _Session:
    """The chat as a live subprocess: write lines, read its output as it arrives."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "agentcore", "chat", *args], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(),
        )
        assert self.proc.stdout is not None
        self.fd = self.proc.stdout.fileno()
        self.seen = b""
        self.read = 0

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def until(self, marker: str, timeout: float = 10.0) -> str:
        """The output from the last marker up to and including this one."""
        wanted = marker.encode()
        deadline = time.monotonic() + timeout
        with selectors.DefaultSelector() as selector:
            selector.register(self.fd, selectors.EVENT_READ)
            while wanted not in self.seen[self.read :]:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"no {marker!r} within {timeout} s in {self.seen!r}")
                if selector.select(left):
                    chunk = os.read(self.fd, 65536)
                    if not chunk:
                        raise AssertionError(f"output ended before {marker!r}: {self.seen!r}")
                    self.seen += chunk
        end = self.seen.index(wanted, self.read) + len(wanted)
        text, self.read = self.seen[self.read : end].decode(), end
        return text

    def close(self) -> tuple[int, str]:
        try:
            _, err = self.proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.communicate(timeout=10)
            raise
        return self.proc.returncode, err.decode()


@pytest.fixture
def slow_chat() -> Iterator[_Session]:
    session = _Session("--tokens-per-second", "40")
    try:
        yield session
    finally:
        if session.proc.poll() is None:
            session.proc.kill()
        session.proc.communicate(timeout=10)


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT is a POSIX signal")
def test_chat_sigint_aborts_the_reply_and_the_chat_goes_on(slow_chat: _Session) -> None:
    slow_chat.until("you> ")
    slow_chat.send("tell me a story")
    slow_chat.until('assistant: You said "tell')  # streaming: about 1.5 s of reply to come
    slow_chat.proc.send_signal(signal.SIGINT)
    cut = slow_chat.until("[aborted]\n")
    assert ECHO not in cut  # the reply really was cut short
    assert slow_chat.until("you> ") == "you> "
    slow_chat.send("hi")
    reply = slow_chat.until(")]\n")
    assert reply.startswith(f'hi\nassistant: You said "hi". {ECHO}\n')
    assert USAGE.search(reply)
    slow_chat.until("you> ")
    slow_chat.proc.send_signal(signal.SIGINT)  # Ctrl-C at the prompt: a clean exit
    code, err = slow_chat.close()
    assert code == 0, err
    assert err == ""


def _completions_sse(deltas: list[dict[str, Any]], finish: str, usage: tuple[int, int]) -> bytes:
    def chunk(choices: list[Any], usage: Any = None) -> str:
        body = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1756400000,
                "model": "gpt-4o-mini", "choices": choices, "usage": usage}
        return f"data: {json.dumps(body)}\n\n"

    def choice(delta: dict[str, Any], reason: str | None = None) -> list[Any]:
        return [{"index": 0, "delta": delta, "finish_reason": reason}]

    prompt, completion = usage
    return "".join([
        chunk(choice({"role": "assistant", "content": ""})),
        *(chunk(choice(delta)) for delta in deltas),
        chunk(choice({}, finish)),
        chunk([], {"prompt_tokens": prompt, "completion_tokens": completion,
                   "total_tokens": prompt + completion}),
        "data: [DONE]\n\n",
    ]).encode()


@pytest.mark.slow
def test_chat_talks_to_a_completions_server(sse_server: SSEServer) -> None:
    call = {"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {
        "name": "calculator", "arguments": json.dumps({"expression": "6 * 7"})}}]}
    sse_server.sse(_completions_sse([call], "tool_calls", (100, 20)), chunking="random")
    sse_server.sse(_completions_sse([{"content": "6 * 7 "}, {"content": "= 42."}], "stop",
                                    (150, 10)), chunking="random")
    sse_server.sse(_completions_sse([{"content": "You're welcome."}], "stop", (200, 5)))
    done = _chat("what is 6 * 7?\n/model openai/gpt-4o\nthanks\n", "--model",
                 "openai/gpt-4o-mini", "--base-url", f"{sse_server.url}/v1", "--api",
                 "openai-completions", env=_env(OPENAI_API_KEY="sk-test"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stderr == ""
    url = f"{sse_server.url}/v1"
    assert done.stdout.startswith(f"agentcore chat: openai/gpt-4o-mini (openai-completions at "
                                  f"{url}), tools calculator and clock.")
    ask, switch, thanks, _ = _exchanges(done.stdout)
    assert '  -> calculator({"expression": "6 * 7"})\n' in ask
    assert re.search(TOOL_END.format(name="calculator"), ask)["text"] == "42"  # type: ignore[index]
    assert "assistant: 6 * 7 = 42.\n" in ask
    mini = ac.get_model("openai", "gpt-4o-mini")
    cost = sum(ac.calculate_cost(mini, ac.Usage(input=i, output=o)).cost.total
               for i, o in [(100, 20), (150, 10)])
    assert ask.endswith(f"[input 250 tokens, output 30 tokens, cost ${cost:.6f} (at "
                        f"${mini.cost.input:.2f} in / ${mini.cost.output:.2f} out per million "
                        "tokens)]\n")
    assert switch == f"/model openai/gpt-4o\nmodel: openai/gpt-4o (openai-completions at {url})\n"
    assert "assistant: You're welcome.\n" in thanks
    assert [r.path for r in sse_server.requests] == ["/v1/chat/completions"] * 3
    assert all(r.header("Authorization") == "Bearer sk-test" for r in sse_server.requests)
    assert [r.json["model"] for r in sse_server.requests] == ["gpt-4o-mini"] * 2 + ["gpt-4o"]
    last = sse_server.requests[2].json["messages"]
    assert [m["role"] for m in last] == ["system", "user", "assistant", "tool", "assistant",
                                         "user"]
    assert last[-1]["content"] == "thanks"
    assert [t["function"]["name"] for t in sse_server.requests[0].json["tools"]] == [
        "calculator", "clock"]
    assert "sk-test" not in done.stdout


# --- the command line, in process -------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--thinking", "lots"], "invalid choice: 'lots'"),
        (["--model", "openai"], "expected PROVIDER/ID"),
        (["--base-url", "localhost:1"], "expected an http:// or https:// URL"),
        (["--tokens-per-second", "0"], "must be positive"),
    ],
)
def test_chat_cli_rejects_bad_arguments(argv: list[str], message: str,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["chat", *argv])
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--model", "nowhere/model"], "also pass --base-url URL"),
        (["--base-url", "http://127.0.0.1:1/v1"], "--base-url and --api need --model"),
    ],
)
def test_chat_cli_usage_errors_exit_2(argv: list[str], message: str,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["chat", *argv]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("python -m agentcore chat: error: ")
    assert message in err


def test_chat_cli_help_explains_the_repl() -> None:
    text = cli.build_parser()._subparsers._group_actions[0].choices["chat"].format_help()  # type: ignore[union-attr]
    assert "/steer TEXT" in text
    assert "Input is read between replies" in text
    assert "--tokens-per-second" not in text  # hidden: it paces the offline model in tests


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def _lines(*lines: str) -> Any:
    pending = list(lines)

    def read_line(prompt: str) -> str:
        if not pending:
            raise EOFError
        return pending.pop(0)

    return read_line


def test_chat_dims_thinking_on_a_tty(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    out = _Tty()
    options = ChatOptions(thinking_level=ac.ThinkingLevel.LOW, tokens_per_second=None)
    assert run_chat(options, out, _lines("2+2")) == 0
    text = out.getvalue()
    assert "\x1b[2mthinking: \x1b[0m" in text
    assert "thinking: This needs a tool" in re.sub(r"\x1b\[\d+m", "", text)
    assert re.search(TOOL_END.format(name="calculator"), text)["text"] == "4"  # type: ignore[index]
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("TERM", "dumb")  # and no live line (a slow machine would draw one)
    out = _Tty()
    run_chat(options, out, _lines("2+2"))
    assert "\x1b[" not in out.getvalue()
    assert "thinking: This needs a tool" in out.getvalue()


def test_chat_names_a_server_it_cannot_connect_to_and_goes_on(backoffs: list[int]) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    model = resolve_model("ollama", "llama3.1:8b", url)
    assert isinstance(model, ac.Model)
    out = io.StringIO()
    assert run_chat(ChatOptions(model=model), out, _lines("hi", "/model")) == 0
    banner, error, usage, switch, bye = out.getvalue().split("\n")[:5]
    assert banner.startswith("agentcore chat: ollama/llama3.1:8b")
    assert error == f"error: cannot connect to {url}/chat/completions (connection refused)"
    assert usage.startswith("[input 0 tokens, output 0 tokens, cost $0.000000 ")
    assert switch == f"model: ollama/llama3.1:8b (openai-completions at {url})"  # the chat goes on
    assert bye == ""


@pytest.mark.parametrize(
    ("text", "expression"),
    [
        ("what is 17 * 23 + 2 ** 10?", "17 * 23 + 2 ** 10"),
        ("(2+3)*4", "(2+3)*4"),
        ("compute 2^8 please.", "2**8"),
        ("and (1/0)", "(1/0)"),
        ("(like 1/0)", "1/0"),
        ("1.5 * 4.", "1.5 * 4"),
        ("I have 3 apples", None),
        ("hello", None),
        ("-5", None),
    ],
)
def test_offline_reply_finds_arithmetic(text: str, expression: str | None) -> None:
    assert _expression(text) == expression


def test_offline_reply_asks_the_tools_then_reports_them() -> None:
    options = ac.StreamOptions()
    model = ac.Model("m", "m", "faux", "faux", "http://localhost:0")
    first = offline_reply(ac.Context(None, [ac.UserMessage("2*3 in Paris, what time?")]),
                          options, model)
    assert [(c.name, c.arguments) for c in first.tool_calls] == [
        ("calculator", {"expression": "2*3"}), ("clock", {"timezone": "Europe/Paris"})]
    assert first.stop_reason == ac.StopReason.TOOL_USE
    calc, clock = first.tool_calls
    results = [ac.ToolResultMessage(calc.id, "calculator", [ac.TextContent("6")]),
               ac.ToolResultMessage(clock.id, "clock", [ac.TextContent("unknown zone")],
                                    is_error=True)]
    context = ac.Context(None, [ac.UserMessage("2*3 in Paris, what time?"), first, *results])
    second = offline_reply(context, options, model)
    assert second.text == ("The calculator says 2*3 = 6. The clock failed: unknown zone")
    assert second.stop_reason == ac.StopReason.STOP
