"""The chat's `--session PATH` (resume, history shown) and `/compact` (issue 15), through the
real program over pipes, with real session files."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

FAST = ("--tokens-per-second", "20000")
USAGE = re.compile(r"^\[input (\d+) tokens", re.M)


def _chat(stdin: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    return subprocess.run([sys.executable, "-m", "agentcore", "chat", *FAST, *args],
                          input=stdin, capture_output=True, text=True, timeout=60, check=False,
                          env=env)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["chat.db", "chat.jsonl", "postgres"])
def test_a_session_is_resumed_with_its_history_shown(tmp_path: Path, name: str,
                                                     request: pytest.FixtureRequest) -> None:
    path = str(request.getfixturevalue("postgres_dsn") if name == "postgres"
               else tmp_path / name)
    first = _chat("hello there\n", "--session", path)
    assert first.returncode == 0, first.stderr
    assert "resumed" not in first.stdout
    second = _chat("and again\n", "--session", path)
    assert second.returncode == 0, second.stderr
    lines = second.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("resumed"))
    shown = path.replace("postgres@", "")  # a URL is shown without its user and password
    assert lines[at] == f"resumed 2 messages from {shown}"
    assert lines[at + 1] == "you: hello there"
    assert lines[at + 2].startswith('assistant: You said "hello there".')
    [first_input] = (int(n) for n in USAGE.findall(first.stdout))
    [second_input] = (int(n) for n in USAGE.findall(second.stdout))
    assert second_input > first_input  # the model saw the resumed history
    third = _chat("/reset\n", "--session", path)
    assert "transcript cleared" in third.stdout
    assert "resumed" not in _chat("", "--session", path).stdout  # /reset emptied the file


@pytest.mark.slow
def test_compact_summarises_the_older_messages(tmp_path: Path) -> None:
    long = " ".join(["word"] * 1500)  # about 1,900 tokens a prompt, echoed back
    path = str(tmp_path / "chat.db")
    done = _chat(f"{long} one\n{long} two\n{long} three\n/compact\nafter\n", "--session", path)
    assert done.returncode == 0, done.stderr
    [line] = [x for x in done.stdout.splitlines() if "compacted" in x]
    assert re.fullmatch(r"(you> )?compacted 6 messages \(~\d+ tokens\) into a summary and "
                        r"\d+ recent \(~\d+ tokens\)", line)
    # (the offline model echoes, so its "summary" is no shorter: no token count is checked)
    resumed = _chat("", "--session", path).stdout  # the session holds the compacted transcript
    history = resumed.splitlines()
    at = next(i for i, x in enumerate(history) if x.startswith("resumed"))
    assert history[at + 1].startswith("summary of earlier messages: ")
    assert history[-1].startswith('you> assistant: You said "after".') or any(
        x.startswith('assistant: You said "after".') for x in history)


@pytest.mark.slow
def test_compact_with_nothing_to_compact_says_so(tmp_path: Path) -> None:
    done = _chat("/compact\nhi\n/compact\n")
    assert "nothing to compact\n" in done.stdout
    assert "nothing to compact: the conversation is all recent" in done.stdout


def test_the_printer_shows_automatic_compaction() -> None:
    import io

    from _internals import EventPrinter

    import agentcore as ac

    out = io.StringIO()
    printer = EventPrinter(out, color=False)
    printer.show(ac.CompactionStartEvent("threshold"))
    printer.show(ac.CompactionEndEvent(ac.CompactionSummaryMessage("s", 9000), 9000, 1200))
    printer.show(ac.CompactionStartEvent("overflow"))
    assert out.getvalue().splitlines() == [
        "[compacting the conversation: near the context window]",
        "[compacted: ~9000 -> ~1200 tokens]",
        "[compacting the conversation: the model said the context was too long]",
    ]


def test_the_printer_shows_a_fallback_and_that_the_partial_text_is_dropped() -> None:
    import io

    from _internals import EventPrinter

    import agentcore as ac

    out = io.StringIO()
    printer = EventPrinter(out, color=False)
    backup = ac.Model("b", "b", "openai-completions", "openai", "http://127.0.0.1:9")
    failed = ac.AssistantMessage([ac.TextContent("Once")], "openai-completions", "openai", "a",
                                 stop_reason="error", error_message="503 down")
    printer.show(ac.ModelFallbackEvent(failed, backup, "openai/a failed: 503 down"))
    printer.show(ac.ModelFallbackEvent(None, backup, "circuit open for openai/a"))
    assert out.getvalue().splitlines() == [
        "[openai/a failed: 503 down; trying openai/b (the text above is dropped)]",
        "[circuit open for openai/a; trying openai/b]",
    ]


def test_the_printer_shows_a_child_agent_s_work_under_its_tool_line() -> None:
    import io

    from _internals import EventPrinter

    import agentcore as ac

    out = io.StringIO()
    printer = EventPrinter(out, color=False)
    reply = ac.AssistantMessage([ac.TextContent("Paris.")], "x", "x", "m")

    def sub(event: ac.AgentEvent, *names: str) -> ac.AgentEvent:
        for depth in range(len(names), 0, -1):
            event = ac.SubagentEvent("c1", names[depth - 1], list(names[:depth]), event)
        return event

    printer.show(ac.ToolExecutionStartEvent("c1", "researcher", {"input": "capital?"}))
    printer.show(sub(ac.ToolExecutionStartEvent("c2", "search", {"q": "France"}),
                     "researcher"))
    printer.show(sub(ac.ToolExecutionEndEvent(
        "c2", "search", ac.AgentToolResult([ac.TextContent("Paris")]), False), "researcher"))
    printer.show(sub(ac.MessageEndEvent(reply), "researcher", "checker"))
    printer.show(sub(ac.MessageEndEvent(reply), "researcher"))
    assert out.getvalue().splitlines() == [
        '  -> researcher({"input": "capital?"})',
        '    -> search({"q": "France"})',
        "    <- search: Paris  [ok]",
        "      checker: Paris.",
        "    researcher: Paris.",
    ]


@pytest.mark.slow
def test_a_postgres_session_that_cannot_be_reached_exits_2_without_its_password() -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    done = _chat("hi\n", "--session", f"postgresql://alice:s3cret@127.0.0.1:{port}/chat")
    assert done.returncode == 2
    assert "python -m agentcore chat: error: --session: " in done.stderr
    assert f"127.0.0.1:{port}" in done.stderr
    assert "s3cret" not in done.stderr + done.stdout
