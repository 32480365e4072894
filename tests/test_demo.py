from __future__ import annotations

import io
import re
import subprocess
import sys
from datetime import timedelta

import pytest

import agentcore as ac
from agentcore import __main__ as cli
from agentcore._demo import (
    DEFAULT_TOKENS_PER_SECOND,
    calculate,
    calculator_tool,
    clock_tool,
    current_time,
    run_demo,
)
from agentcore.providers import _registry
from agentcore.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call

TOOL_END = r"  <- {name}: (?P<text>.*)  \[(?P<status>ok|error), \d+\.\d ms\]"


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def _apis() -> set[str]:
    with _registry._lock:
        return set(_registry._providers)


def _assert_demo_output(text: str) -> None:
    assert '  -> calculator({"expression": "17 * 23 + 2 ** 10"})' in text
    assert '  -> clock({"timezone": "Asia/Tokyo"})' in text
    assert re.search(TOOL_END.format(name="calculator"), text)["text"] == "1415"  # type: ignore[index]
    clock = re.search(TOOL_END.format(name="clock"), text)
    assert clock is not None
    assert clock["status"] == "ok"
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d JST \(\w+day, UTC\+09:00\)", clock["text"])
    assert "- 17 * 23 + 2 ** 10 = 1415." in text
    assert re.search(r"^usage: input \d+ tokens, output \d+ tokens, total \d+ tokens$", text, re.M)
    assert re.search(r"^cost: \$\d+\.\d{6} ", text, re.M)


def test_demo_cli_runs_offline_in_a_subprocess() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agentcore", "demo"],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    _assert_demo_output(done.stdout)
    assert "\x1b[" not in done.stdout  # not a tty: no colour codes


def test_demo_cli_without_a_command_prints_help_and_exits_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli.main([]) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: python -m agentcore")
    assert "demo" in err


def test_demo_cli_rejects_a_bad_pace(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["demo", "--tokens-per-second", "0"])
    assert exited.value.code == 2
    assert "must be positive" in capsys.readouterr().err


def test_demo_cli_help_states_the_default_pace() -> None:
    demo_help = cli.build_parser()._subparsers._group_actions[0].choices["demo"]  # type: ignore[union-attr]
    assert f"(default: {DEFAULT_TOKENS_PER_SECOND:g})" in demo_help.format_help()


def test_demo_cli_in_process_prints_to_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["demo", "--no-delay"]) == 0
    _assert_demo_output(capsys.readouterr().out)


def test_demo_run_prints_the_run_and_returns_its_messages() -> None:
    before = _apis()
    out = io.StringIO()
    messages = run_demo(out, tokens_per_second=None)
    text = out.getvalue()
    _assert_demo_output(text)
    assert _apis() == before
    replies = [m for m in messages if isinstance(m, ac.AssistantMessage)]
    assert [len(m.tool_calls) for m in replies] == [2, 1, 0]
    assert replies[-1].stop_reason == ac.StopReason.STOP
    results = [m for m in messages if isinstance(m, ac.ToolResultMessage)]
    assert [(r.tool_name, r.is_error) for r in results] == [
        ("calculator", False), ("clock", False), ("calculator", False)
    ]
    minutes = int(results[2].text)
    assert f"That leaves {minutes} minutes" in replies[-1].text
    assert results[1].text in replies[-1].text
    usage = sum((m.usage for m in replies), ac.Usage())
    assert usage.cost.total > 0
    assert (f"usage: input {usage.input} tokens, output {usage.output} tokens, "
            f"total {usage.total_tokens} tokens") in text
    assert f"cost: ${usage.cost.total:.6f} " in text
    assert "run: 3 turns, 3 model calls, 3 tool calls" in text
    assert "\x1b[" not in text


def test_demo_run_streams_text_as_it_arrives() -> None:
    writes: list[str] = []

    class Recorder(io.StringIO):
        def write(self, s: str) -> int:
            writes.append(s)
            return super().write(s)

    run_demo(Recorder(), tokens_per_second=None)
    answer = writes.index("assistant: ", writes.index("assistant: ") + 1)
    assert len(writes) > answer + 10  # the reply came in many small deltas, not one block
    assert max(map(len, writes[answer + 1 : answer + 10])) <= 8


def test_demo_run_dims_thinking_on_a_tty(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    out = _Tty()
    run_demo(out, tokens_per_second=None)
    assert "\x1b[2mthinking: \x1b[0m" in out.getvalue()


def test_demo_run_no_color_disables_dimming(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    out = _Tty()
    run_demo(out, tokens_per_second=None)
    assert "\x1b[" not in out.getvalue()


def test_demo_run_paced_stays_quick() -> None:
    import time

    start = time.perf_counter()
    run_demo(io.StringIO(), tokens_per_second=2000)
    assert time.perf_counter() - start < 5


def test_demo_run_unregisters_its_provider_when_printing_fails() -> None:
    class Broken(io.StringIO):
        def write(self, s: str) -> int:
            if "->" in s:
                raise OSError("disk full")
            return super().write(s)

    before = _apis()
    with pytest.raises(OSError, match="disk full"):
        run_demo(Broken(), tokens_per_second=None)
    assert _apis() == before


@pytest.mark.parametrize(
    ("expression", "value"),
    [
        ("17 * 23 + 2 ** 10", 1415),
        ("(2 + 3) * 4", 20),
        ("-3 ** 2", -9),
        ("+-+4", -4),
        ("7 // 2", 3),
        ("-7 // 2", -4),
        ("7 % 3", 1),
        ("1 / 4", 0.25),
        ("2 ** -2", 0.25),
        ("1.5e3 - 500", 1000.0),
        ("  2*(3+(4-1))  ", 12),
        ("2 ** 2 ** 3", 256),
    ],
)
def test_calculate_evaluates_arithmetic(expression: str, value: float) -> None:
    result = calculate(expression)
    assert result == value
    assert type(result) is type(value)


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("x + 1", "names are not allowed: 'x'"),
        ("__import__('os').system('true')", "function calls are not allowed"),
        ("abs(-1)", "function calls are not allowed: 'abs(-1)'"),
        ("(1).real", "attribute access is not allowed"),
        ("().__class__", "attribute access is not allowed"),
        ("'a' * 3", "only numbers are allowed, got 'a'"),
        ("True + 1", "only numbers are allowed, got True"),
        ("1j", "only numbers are allowed, got 1j"),
        ("1 < 2", "not allowed in arithmetic: '1 < 2'"),
        ("[1, 2]", "not allowed in arithmetic"),
        ("lambda: 1", "not allowed in arithmetic"),
        ("1 +", "not an arithmetic expression: '1 +'"),
        ("", "not an arithmetic expression"),
        ("1; 2", "not an arithmetic expression"),
        ("1 / 0", "division by zero in '1 / 0'"),
        ("5 // 0", "division by zero"),
        ("5 % 0.0", "division by zero"),
        ("9 ** 9 ** 9", "result is too large"),
        ("10.0 ** 400", "result is too large"),
        ("1e308 * 10", "result is not a finite number"),
        ("(-8) ** 0.5", "result is not a real number"),
        ("1" + "+1" * 300, "longer than 500 characters"),
    ],
)
def test_calculate_rejects_everything_else(expression: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        calculate(expression)


def test_calculator_division_by_zero_is_an_error_result(faux: FauxProvider) -> None:
    faux.set_responses([
        faux_assistant_message([faux_tool_call("calculator", {"expression": "1/0"}, id="c1")]),
        faux_assistant_message("that cannot be computed"),
    ])
    ends: list[ac.ToolExecutionEndEvent] = []
    messages = ac.run_agent_loop(
        [ac.UserMessage("1/0?")],
        ac.AgentContext("", [], [calculator_tool()]),
        ac.AgentLoopConfig(model=faux.get_model()),
        lambda e: ends.append(e) if isinstance(e, ac.ToolExecutionEndEvent) else None,
    )
    result = next(m for m in messages if isinstance(m, ac.ToolResultMessage))
    assert result == ac.ToolResultMessage(
        "c1", "calculator", [ac.TextContent("division by zero in '1/0'")], is_error=True,
        timestamp=result.timestamp,
    )
    assert [e.is_error for e in ends] == [True]


def test_calculator_tool_returns_the_value_as_text() -> None:
    result = calculator_tool().execute("id", {"expression": "6 * 7"}, ac.AbortController().signal,
                                       lambda _: None)
    assert result == ac.AgentToolResult([ac.TextContent("42")],
                                        details={"expression": "6 * 7", "value": 42})


def test_current_time_uses_the_zone() -> None:
    assert current_time("Asia/Tokyo").utcoffset() == timedelta(hours=9)
    assert current_time().utcoffset() == timedelta(0)


@pytest.mark.parametrize("zone", ["Mars/Olympus_Mons", "", "../etc/passwd"])
def test_current_time_rejects_an_unknown_zone(zone: str) -> None:
    with pytest.raises(ValueError, match="unknown time zone"):
        current_time(zone)


def test_clock_tool_defaults_to_utc() -> None:
    result = clock_tool().execute("id", {}, ac.AbortController().signal, lambda _: None)
    text = result.content[0].text  # type: ignore[union-attr]
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \(\w+day, UTC\+00:00\)", text)
    assert result.details["timezone"] == "UTC"
