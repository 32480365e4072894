from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from datetime import timedelta
from typing import Any

import pytest
from _internals import (
    DEFAULT_TOKENS_PER_SECOND,
    QUESTION,
    _registry,
    calculate,
    calculator_tool,
    cli,
    clock_tool,
    current_time,
    public_url,
    run_demo,
)
from sse_server import SSEServer, free_port

import agentcore as ac
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


@pytest.mark.slow
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


BUILT_IN_APIS = ["openai-completions", "openai-responses", "anthropic-messages",
                 "google-generative-ai", "google-vertex", "bedrock-converse-stream"]


def _api_option(command: str) -> Any:
    parser = cli.build_parser()._subparsers._group_actions[0].choices[command]  # type: ignore[union-attr]
    return next(action for action in parser._actions if action.dest == "api")


@pytest.mark.parametrize("command", ["demo", "chat"])
def test_cli_api_choices_are_the_registry_apis(command: str) -> None:
    option = _api_option(command)
    apis = ac.providers.get_apis()  # other tests may have left faux providers registered
    assert list(option.choices) == apis
    assert apis[:len(BUILT_IN_APIS)] == BUILT_IN_APIS
    assert f"the wire protocol to speak: {', '.join(apis)} (default" in option.help


def test_cli_api_choices_include_a_registered_provider() -> None:
    def stream_fn(model: ac.Model, context: ac.Context,
                  options: ac.StreamOptions) -> ac.AssistantMessageEventStream:
        raise NotImplementedError

    before = ac.providers.get_apis()
    ac.register_provider("smoke-signals", stream_fn)
    try:
        assert list(_api_option("demo").choices) == [
            *BUILT_IN_APIS, *sorted([*before[len(BUILT_IN_APIS):], "smoke-signals"])]
        args = cli.build_parser().parse_args(["demo", "--model", "x/y", "--api", "smoke-signals"])
        assert args.api == "smoke-signals"
    finally:
        ac.unregister_provider("smoke-signals")


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
    monkeypatch.setenv("TERM", "dumb")  # and no live line (a slow machine would draw one)
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
        "c1", "calculator", [ac.TextContent("ValueError: division by zero in '1/0'")],
        is_error=True, timestamp=result.timestamp,
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


# --- demo --model: a real provider, here the local scripted server --------------------------------

CALC_ARGS = {"expression": "17 * 23 + 2 ** 10"}
CLOCK_ARGS = {"timezone": "Asia/Tokyo"}
ANSWER = ["17 * 23 + 2 ** 10 = ", "1415", ", and the clock ", "says what time it is in Tokyo."]


def _completions_sse(deltas: list[dict[str, Any]], finish: str, usage: tuple[int, int]) -> bytes:
    """A Chat Completions event stream: one chunk per delta, a finish chunk, usage, [DONE]."""
    head = {"id": "chatcmpl-demo", "object": "chat.completion.chunk", "created": 1756400000,
            "model": "gpt-4o-mini-2024-07-18", "system_fingerprint": "fp_560af6e559"}

    def chunk(choices: list[Any], usage: Any = None) -> str:
        data = json.dumps({**head, "choices": choices, "usage": usage}, separators=(",", ":"))
        return f"data: {data}\n\n"

    def choice(delta: dict[str, Any], reason: str | None = None) -> list[Any]:
        return [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": reason}]

    out = [chunk(choice({"role": "assistant", "content": None}))]
    out += [chunk(choice(delta)) for delta in deltas]
    out.append(chunk(choice({}, finish)))
    prompt, completion = usage
    out.append(chunk([], {"prompt_tokens": prompt, "completion_tokens": completion,
                          "total_tokens": prompt + completion}))
    out.append("data: [DONE]\n\n")
    return "".join(out).encode()


def _call_deltas(index: int, call_id: str, name: str, args: dict[str, Any]) -> list[
        dict[str, Any]]:
    text = json.dumps(args)
    opened = {"tool_calls": [{"index": index, "id": call_id, "type": "function",
                              "function": {"name": name, "arguments": ""}}]}
    pieces = [text[: len(text) // 2], text[len(text) // 2 :]]
    return [opened] + [{"tool_calls": [{"index": index, "function": {"arguments": piece}}]}
                       for piece in pieces]


def _completions_replies() -> tuple[bytes, bytes]:
    tools = _completions_sse(
        _call_deltas(0, "call_calc", "calculator", CALC_ARGS)
        + _call_deltas(1, "call_clock", "clock", CLOCK_ARGS),
        "tool_calls", (120, 40),
    )
    text = _completions_sse([{"content": piece} for piece in ANSWER], "stop", (200, 25))
    return tools, text


def _responses_sse(items: list[dict[str, Any]], usage: tuple[int, int]) -> bytes:
    """A Responses event stream with complete output items and `response.completed`."""
    events: list[dict[str, Any]] = [{"type": "response.created", "response": {
        "id": "resp_demo", "object": "response", "status": "in_progress", "output": []}}]
    for index, item in enumerate(items):
        added = {**item, "status": "in_progress"}
        if item["type"] == "function_call":
            added["arguments"] = ""
        else:
            added["content"] = []
        events.append({"type": "response.output_item.added", "output_index": index,
                       "item": added})
        if item["type"] == "function_call":
            events.append({"type": "response.function_call_arguments.delta",
                           "output_index": index, "item_id": item["id"],
                           "delta": item["arguments"]})
        else:
            events.append({"type": "response.output_text.delta", "output_index": index,
                           "item_id": item["id"], "content_index": 0,
                           "delta": item["content"][0]["text"]})
        events.append({"type": "response.output_item.done", "output_index": index,
                       "item": {**item, "status": "completed"}})
    prompt, completion = usage
    events.append({"type": "response.completed", "response": {
        "id": "resp_demo", "object": "response", "status": "completed", "output": items,
        "usage": {"input_tokens": prompt, "input_tokens_details": {"cached_tokens": 0},
                  "output_tokens": completion, "total_tokens": prompt + completion}}})
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e, separators=(',', ':'))}\n\n"
                   for e in events).encode()


def _responses_replies() -> tuple[bytes, bytes]:
    def call(n: int, name: str, args: dict[str, Any]) -> dict[str, Any]:
        return {"type": "function_call", "id": f"fc_{n}", "call_id": f"call_{name}",
                "name": name, "arguments": json.dumps(args)}

    tools = _responses_sse([call(1, "calculator", CALC_ARGS), call(2, "clock", CLOCK_ARGS)],
                           (120, 40))
    text = _responses_sse([{"type": "message", "id": "msg_3", "role": "assistant", "content": [
        {"type": "output_text", "text": "".join(ANSWER), "annotations": []}]}], (200, 25))
    return tools, text


def _env(**changes: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in changes and not k.endswith("_PROXY") and not k.endswith("_proxy")}
    env.update({k: v for k, v in changes.items() if v is not None})
    env["NO_PROXY"] = "127.0.0.1,localhost"
    return env


def _run_cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agentcore", "demo", *args],
                          capture_output=True, text=True, timeout=60, check=False, env=env)


def _assert_model_demo_output(text: str) -> None:
    assert text.startswith("agentcore demo: openai/gpt-4o-mini (")
    assert f"you: {QUESTION}" in text
    assert f"  -> calculator({json.dumps(CALC_ARGS)})" in text
    assert f"  -> clock({json.dumps(CLOCK_ARGS)})" in text
    assert re.search(TOOL_END.format(name="calculator"), text)["text"] == "1415"  # type: ignore[index]
    clock = re.search(TOOL_END.format(name="clock"), text)
    assert clock is not None
    assert clock["status"] == "ok"
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d JST \(\w+day, UTC\+09:00\)",
                        clock["text"])
    assert f"assistant: {''.join(ANSWER)}\n" in text
    assert "run: 2 turns, 2 model calls, 2 tool calls in " in text
    assert "usage: input 320 tokens, output 65 tokens, total 385 tokens\n" in text
    usage = ac.calculate_cost(ac.get_model("openai", "gpt-4o-mini"), ac.Usage(input=320, output=65))
    prices = ac.get_model("openai", "gpt-4o-mini").cost
    assert (f"cost: ${usage.cost.total:.6f} (at ${prices.input:.2f} in / "
            f"${prices.output:.2f} out per million tokens)") in text


def _assert_second_request_replays_the_tools(server: SSEServer, path: str) -> None:
    assert [r.path for r in server.requests] == [path, path]
    assert all(r.header("Authorization") == "Bearer sk-test" for r in server.requests)
    body = json.dumps(server.requests[1].json)
    assert '"1415"' in body
    assert "call_calc" in body
    assert "JST" in body


@pytest.mark.slow
def test_demo_cli_model_talks_to_a_completions_server_in_a_subprocess(
    sse_server: SSEServer,
) -> None:
    for body in _completions_replies():
        sse_server.sse(body, chunking="random")
    done = _run_cli("--model", "openai/gpt-4o-mini", "--base-url", f"{sse_server.url}/v1",
                    "--api", "openai-completions", env=_env(OPENAI_API_KEY="sk-test"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stderr == ""
    _assert_model_demo_output(done.stdout)
    assert f"(openai-completions at {sse_server.url}/v1)" in done.stdout
    assert "sk-test" not in done.stdout
    _assert_second_request_replays_the_tools(sse_server, "/v1/chat/completions")
    second = sse_server.requests[1].json
    assert second["model"] == "gpt-4o-mini"
    assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant", "tool",
                                                      "tool"]
    assert [(m["tool_call_id"], m["content"][:4]) for m in second["messages"][3:]] == [
        ("call_calc", "1415"), ("call_clock", second["messages"][4]["content"][:4])]


@pytest.mark.slow
def test_demo_cli_model_keeps_the_catalogue_api_without_api_flag(sse_server: SSEServer) -> None:
    # openai/gpt-4o-mini is an openai-responses model in the catalogue
    for body in _responses_replies():
        sse_server.sse(body)
    done = _run_cli("--model", "openai/gpt-4o-mini", "--base-url", f"{sse_server.url}/v1",
                    env=_env(OPENAI_API_KEY="sk-test"))
    assert done.returncode == 0, done.stdout + done.stderr
    _assert_model_demo_output(done.stdout)
    assert f"(openai-responses at {sse_server.url}/v1)" in done.stdout
    assert "sk-test" not in done.stdout + done.stderr
    _assert_second_request_replays_the_tools(sse_server, "/v1/responses")
    kinds = [item.get("type", item.get("role")) for item in sse_server.requests[1].json["input"]]
    assert kinds == ["system", "user", "function_call", "function_call",
                     "function_call_output", "function_call_output"]


@pytest.mark.slow
def test_demo_cli_model_without_its_key_exits_2_naming_the_variable() -> None:
    done = _run_cli("--model", "openai/gpt-4o-mini", env=_env(OPENAI_API_KEY=None))
    assert done.returncode == 2
    assert done.stdout == ""
    assert "OPENAI_API_KEY" in done.stderr
    assert done.stderr.startswith("python -m agentcore demo: error: no API key for provider "
                                  "'openai'")


def test_demo_cli_model_blank_key_counts_as_missing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "  ")
    monkeypatch.delenv("ANTHROPIC_OAUTH_TOKEN", raising=False)
    assert cli.main(["demo", "--model", "anthropic/claude-sonnet-4-5"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "set ANTHROPIC_API_KEY" in err


def test_demo_cli_custom_model_on_a_local_server_needs_no_key(
    sse_server: SSEServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("LMSTUDIO_API_KEY", raising=False)
    tools, text = _completions_replies()
    sse_server.sse(tools)
    sse_server.sse(text)
    code = cli.main(["demo", "--model", "lmstudio/qwen2.5-7b-instruct", "--base-url",
                     f"{sse_server.url}/v1"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert out.startswith(f"agentcore demo: lmstudio/qwen2.5-7b-instruct (openai-completions "
                          f"at {sse_server.url}/v1)")
    assert "cost: $0.000000 (the model has no prices)" in out
    first = sse_server.requests[0]
    assert first.path == "/v1/chat/completions"
    assert first.json["model"] == "qwen2.5-7b-instruct"
    assert [t["function"]["name"] for t in first.json["tools"]] == ["calculator", "clock"]


def test_demo_cli_model_reports_a_provider_error_and_exits_1(
    sse_server: SSEServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-live-SECRET0123456789abcdef")
    sse_server.status(401, json.dumps({"error": {
        "message": "Incorrect API key provided: sk-live-SECRET0123456789abcdef.",
        "type": "invalid_request_error", "code": "invalid_api_key"}}))
    code = cli.main(["demo", "--model", "openai/gpt-4o-mini", "--base-url",
                     f"{sse_server.url}/v1", "--api", "openai-completions"])
    out, err = capsys.readouterr()
    assert code == 1
    assert "\nerror: 401 Incorrect API key provided: " in out
    assert "SECRET0123456789abcdef" not in out + err


def test_demo_cli_names_a_server_it_cannot_connect_to(
    backoffs: list[int], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-live-SECRET0123456789abcdef")
    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    code = cli.main(["demo", "--model", "openai/gpt-4o-mini", "--base-url", url])
    out, err = capsys.readouterr()
    assert code == 1
    assert err == ""
    assert f"?\n\nerror: cannot connect to {url}/responses (connection refused)\n\nrun: " in out
    assert re.search(r"^run: 1 turn, 1 model call, 0 tool calls in \d+\.\d\d s$", out, re.M)
    assert "usage: input 0 tokens, output 0 tokens, total 0 tokens\n" in out
    assert "SECRET" not in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--model", "openai"], "expected PROVIDER/ID"),
        (["--model", "/gpt-4o"], "expected PROVIDER/ID"),
        (["--model", "openai/gpt-4o-mini", "--base-url", "localhost:11434"],
         "expected an http:// or https:// URL"),
        (["--model", "openai/gpt-4o-mini", "--api", "smoke-signals"], "invalid choice"),
    ],
)
def test_demo_cli_rejects_a_bad_model_argument(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["demo", *argv])
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--model", "openai/gpt-9-ultra"], "no model 'gpt-9-ultra' for provider 'openai'"),
        (["--model", "nowhere/model"], "also pass --base-url URL"),
        (["--base-url", "http://127.0.0.1:1/v1"], "--base-url and --api need --model"),
        (["--api", "openai-responses"], "--base-url and --api need --model"),
        (["--model", "ollama/llama3.1:8b", "--no-delay"], "pace the offline demo only"),
        (["--model", "ollama/llama3.1:8b", "--tokens-per-second", "5"],
         "pace the offline demo only"),
    ],
)
def test_demo_cli_model_usage_errors_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["demo", *argv]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert message in err


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://api.openai.com/v1", "https://api.openai.com/v1"),
        ("http://user:sk-secret@127.0.0.1:8080/v1", "http://127.0.0.1:8080/v1"),
        ("http://:pw@[::1]/v1", "http://[::1]/v1"),
    ],
)
def test_demo_public_url_drops_credentials(url: str, shown: str) -> None:
    assert public_url(url) == shown
