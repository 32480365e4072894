"""Every example runs offline and does what it says.

Each example runs as a script in a subprocess (what a reader does), its output checked; each
`main()` also runs in-process, so that the thread-leak check of `conftest.py` applies and no
provider stays registered.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import paths
import pytest
from _internals import _registry
from sse_server import SSEServer

import agentcore as ac

EXAMPLES = paths.EXAMPLES
ALL_EXAMPLES = ["abort.py", "approvals.py", "assistant.py", "azure.py", "batch.py", "bedrock.py",
                "callback_events.py", "custom_stream_fn.py", "evals.py", "fallback.py",
                "fastapi_app.py",
                "guardrails.py", "local_server.py",
                "loop.py",
                "mcp_tools.py", "mistral.py", "postgres_session.py", "quickstart.py", "steering.py",
                "structured_output.py", "subagents.py", "tools.py", "vertex.py"]


def _env(**changes: str) -> dict[str, str]:
    """The environment without proxies or a real local server, plus `changes`."""
    env = {k: v for k, v in os.environ.items()
           if not k.lower().endswith("_proxy") and not k.startswith("OLLAMA_")}
    env["NO_PROXY"] = "127.0.0.1,localhost"
    env.update(changes)
    return env


def run_example(name: str, *args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run([sys.executable, str(EXAMPLES / name), *args], capture_output=True,
                          text=True, timeout=60, check=False, env=env or _env())
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    return done.stdout


def load_example(name: str) -> ModuleType:
    """The example `name` as a module, its directory on `sys.path` while it loads, as a script's
    is (the provider examples import `_stand_in` from there)."""
    spec = importlib.util.spec_from_file_location(f"example_{name[:-3]}", EXAMPLES / name)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(EXAMPLES))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(EXAMPLES))
    return module


def _apis() -> set[str]:
    with _registry._lock:
        return set(_registry._providers)


# --- all of them ----------------------------------------------------------------------------------


def test_every_example_is_listed_here() -> None:
    assert sorted(p.name for p in EXAMPLES.glob("[!_]*.py")) == ALL_EXAMPLES  # not `_stand_in`


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow)  # an MCP server process
                                  if n == "mcp_tools.py" else n for n in ALL_EXAMPLES])
def test_example_main_runs_in_process_and_cleans_up(
    name: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    monkeypatch.chdir(tmp_path)  # an example may write a file (assistant.py saves its chat)
    for key in [k for k in os.environ if k.lower().endswith("_proxy") or k.startswith("OLLAMA_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setattr(sys, "argv", [name])
    monkeypatch.delenv("AGENTCORE_POSTGRES_DSN", raising=False)  # its test is below
    module = load_example(name)
    assert module.__doc__
    before = _apis()
    module.main()
    assert _apis() == before  # every faux provider was unregistered
    assert capsys.readouterr().out.strip()
    # ... and the autouse fixture checks that no thread outlives the example


# --- one by one -----------------------------------------------------------------------------------


@pytest.mark.slow
def test_postgres_session_example_keeps_the_conversation(
        postgres_dsn: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    example = load_example("postgres_session.py")  # in this process: its main() twice
    monkeypatch.setenv("AGENTCORE_POSTGRES_DSN", postgres_dsn)
    for count in (2, 4):  # a second run carries the same conversation on
        example.main()
        assert capsys.readouterr().out.splitlines() == [
            "Noted: the sky is blue.", f"the session holds {count} messages"]
    monkeypatch.delenv("AGENTCORE_POSTGRES_DSN")
    example.main()
    assert capsys.readouterr().out.startswith("set AGENTCORE_POSTGRES_DSN")


@pytest.mark.slow
def test_quickstart_answers_with_the_tool_result() -> None:
    assert run_example("quickstart.py").splitlines() == ["2 + 40 = 42"]


@pytest.mark.slow
def test_fallback_example_falls_back_opens_the_circuit_and_stops_at_the_budget() -> None:
    assert run_example("fallback.py").splitlines() == [
        "Capital of France?",
        "  [openai/big-model failed: 503 service unavailable -> small-model]",
        "  Paris. (by small-model; primary's circuit: closed)",
        "Capital of Japan?",
        "  [openai/big-model failed: 503 service unavailable -> small-model]",
        "  Tokyo. (by small-model; primary's circuit: open)",
        "Capital of Peru?",
        "  [circuit open for openai/big-model after 2 failed calls in a row -> small-model]",
        "  Lima. (by small-model; primary's circuit: open)",
        "Capital of Chile?",
        "  usage limit reached: budget max_cost=0.003 (by big-model; primary's circuit: open)",
        "spent $0.0042 of $0.003",
    ]


@pytest.mark.slow
def test_subagents_example_shows_each_child_s_work_under_its_call() -> None:
    facts = "Tides follow the moon: two highs a day, about 12 h 25 min apart."
    assert run_example("subagents.py").splitlines() == [
        "-> researcher({'input': 'What do we know about tides?'})",
        "    -> search({'query': 'tides'})",
        f"    researcher: Found: {facts}",
        f"-> writer({{'input': 'Found: {facts}'}})",
        f"    writer: Twice a day the sea comes in. ({facts})",
        f"coordinator: Done: Twice a day the sea comes in. ({facts})",
        "tokens, all three agents: 886",
    ]


@pytest.mark.slow
def test_guardrails_example_asks_again_then_ends_a_run_at_its_input() -> None:
    assert run_example("guardrails.py").splitlines() == [
        "> greet me",
        "  [output guardrail 'no_shouting' tripped: it shouts; asks again]",
        "  Hello there.",
        "> my card is 4111 1111 1111 1111",
        "  [input guardrail 'no_card_numbers' tripped: it contains a card number; ends the run]",
        "  guardrail tripped: no_card_numbers: it contains a card number",
    ]


@pytest.mark.slow
def test_evals_example_scores_three_cases_and_writes_its_page(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(EXAMPLES / "evals.py")], capture_output=True,
                          text=True, timeout=60, check=False, env=_env(), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["Contains: 67% passed", "ToolCalled: 33% passed",
                                        "brief: 100% passed", "report: eval_report.html"]
    assert "<svg" in (tmp_path / "eval_report.html").read_text(encoding="utf-8")


@pytest.mark.slow
def test_structured_output_example_retries_once_then_answers() -> None:
    assert run_example("structured_output.py").splitlines() == [
        "City(name='Rome', population=2800000)", "5 messages; 2 model calls"]


def test_bedrock_example_streams_from_its_stand_in_without_aws_setup(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    for key in [k for k in os.environ if k.startswith("AWS_")]:
        monkeypatch.delenv(key)  # no region, no credentials: a Bedrock API key is enough
    monkeypatch.setattr(sys, "argv", ["bedrock.py"])
    load_example("bedrock.py").main()
    assert capsys.readouterr().out.splitlines() == [
        "Hello from a stand-in for Bedrock.", "14 tokens in, 9 out: $0.000065"]


def test_vertex_example_streams_from_its_stand_in_without_google_cloud_setup(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    for key in [k for k in os.environ if k.startswith(("GOOGLE_", "GCLOUD_"))]:
        monkeypatch.delenv(key)  # no project, no credentials: an express-mode key is enough
    monkeypatch.setitem(sys.modules, "google.auth", None)  # nor google-auth
    monkeypatch.setattr(sys, "argv", ["vertex.py"])
    load_example("vertex.py").main()
    assert capsys.readouterr().out.splitlines() == [
        "Hello from a stand-in for Vertex AI.", "12 tokens in, 9 out: $0.000026"]


def test_quickstart_example_is_the_readme_quickstart() -> None:
    readme = (EXAMPLES.parent / "README.md").read_text(encoding="utf-8")
    code = readme.split("## Quickstart", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    source = (EXAMPLES / "quickstart.py").read_text(encoding="utf-8")
    body = source.split("def main() -> None:\n", 1)[1].split("\n\n\nif __name__", 1)[0]
    imports = [line for line in code.splitlines() if line.startswith(("import", "from"))]
    assert all(line in source for line in imports)
    rest = [line for line in code.splitlines() if line and line not in imports]
    assert [line[4:] for line in body.splitlines() if line.strip()] == rest


@pytest.mark.slow
def test_loop_example_answers_with_the_tool_result() -> None:
    out = run_example("loop.py").splitlines()
    assert out[-1] == "2 + 40 = 42"
    assert out[0] == "agent_start"


@pytest.mark.slow
def test_tools_example_runs_a_parallel_then_a_sequential_batch() -> None:
    out = run_example("tools.py").splitlines()
    parallel = out[1 : out.index("sequential batch:")]
    sequential = out[out.index("sequential batch:") + 1 :]
    assert out[0] == "parallel batch:"
    # parallel: every call starts (in source order) before any ends; ends come as they finish
    assert parallel[:3] == [f"  start weather {{'city': '{city}'}}"
                            for city in ("Paris", "Tokyo", "Lima")]
    assert sorted(parallel[3:6]) == ["  end   weather -> Lima: 16°C, foggy",
                                     "  end   weather -> Paris: 18°C, cloudy",
                                     "  end   weather -> Tokyo: 24°C, sunny"]
    assert parallel[6] == "assistant: Tokyo is the warmest (24°C), Lima the coolest (16°C)."
    # sequential: each call ends before the next starts
    assert sequential == [
        "  start save_note {'text': 'Tokyo: 24°C'}",
        "  end   save_note -> saved note #1",
        "  start save_note {'text': 'Lima: 16°C'}",
        "  end   save_note -> saved note #2",
        "assistant: Both noted.",
        "notes: ['Tokyo: 24°C', 'Lima: 16°C']",
    ]


def test_azure_example_sends_a_key_then_an_entra_token(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("AZURE_OPENAI_ENDPOINT", "AZURE_OPENAI_RESOURCE_NAME", "AZURE_OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    load_example("azure.py").main(["--deployment", "my-gpt"])
    out = capsys.readouterr().out.splitlines()
    assert re.fullmatch(r"endpoint: stand-in at http://127\.0\.0\.1:\d+/openai/v1", out[0])
    assert out[1:] == ["assistant: Hello from deployment my-gpt (api-key header).",
                       "assistant: Hello from deployment my-gpt (Entra ID token)."]


def test_mistral_example_continues_another_provider_s_transcript(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("MISTRAL_API_KEY", raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    load_example("mistral.py").main([])
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("server: stand-in for Mistral at http://127.0.0.1:")
    ids = ast.literal_eval(out[1].split("(ids I got: ", 1)[1][:-1])
    assert len(ids) == 2
    assert ids[0] == ids[1]  # the call and its result: one id
    assert re.fullmatch(r"[A-Za-z0-9]{9}", ids[0])


def test_tools_example_builds_its_tools_with_the_decorator() -> None:
    tools = load_example("tools.py")
    assert isinstance(tools.weather, ac.AgentTool)
    assert tools.weather.parameters["properties"]["city"]["enum"] == ["Paris", "Tokyo", "Lima"]
    assert "signal" not in tools.weather.parameters["properties"]
    assert tools.save_note.execution_mode == ac.ToolExecutionMode.SEQUENTIAL


@pytest.mark.slow
def test_mcp_tools_example_lists_and_calls_its_own_servers_tools() -> None:
    out = run_example("mcp_tools.py").splitlines()
    assert out[:2] == ["notes_add_note(text): Save a note in the notebook.",
                       "notes_list_notes(): Every note in the notebook, one a line."]
    assert sorted(out[2:4]) == ["  notes_add_note -> 'saved note #1'",
                                "  notes_add_note -> 'saved note #2'"]
    assert out[4:] == ["  notes_list_notes -> 'buy milk\\ncall Ana'",
                       "assistant: Your notebook has two notes: buy milk, call Ana."]


@pytest.mark.slow
def test_callback_events_example_prints_the_stream_and_counts_loop_events() -> None:
    example = load_example("callback_events.py")
    out = run_example("callback_events.py").splitlines()
    assert out[:-1] == ["[agent_start]", "(thinking) A haiku: five, seven, five syllables.",
                        *example.HAIKU.splitlines(), "[agent_end]"]
    prefix = "run_agent_loop events: "
    assert out[-1].startswith(prefix)
    counts = ast.literal_eval(out[-1][len(prefix) :])
    assert counts == {"agent_start": 1, "turn_start": 1, "message_start": 2, "message_end": 2,
                      "message_update": 3, "turn_end": 1, "agent_end": 1}


def test_callback_events_example_prints_text_in_pieces_as_it_arrives(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    writes: list[str] = []

    class Recorder:
        def write(self, text: str) -> int:
            writes.append(text)
            return len(text)

        def flush(self) -> None:
            pass

    example = load_example("callback_events.py")
    monkeypatch.setattr(sys, "stdout", Recorder())
    assert example.main() == example.HAIKU
    streamed = writes[writes.index("(thinking) ") + 1 : writes.index("[agent_end]")]
    assert "".join(streamed).endswith(example.HAIKU + "\n")
    deltas = [piece for piece in streamed if piece.strip()]
    assert len(deltas) >= 6  # thinking and haiku came in small deltas (<= 5 tokens), not whole
    assert max(len(piece) for piece in deltas) <= 20


@pytest.mark.slow
def test_approvals_example_stops_resumes_after_a_restart_and_asks_approve() -> None:
    assert run_example("approvals.py").splitlines() == [
        "1. no approve callback: the run stops",
        "  asks: delete_file({'path': 'old.log'})",
        "  asks: transfer_money({'to': 'Bob', 'amount': 250})",
        "  waiting: ['call_1', 'call_2']; files: ['cache.tmp', 'notes.txt', 'old.log']",
        "2. later, a new agent on the same session: the calls still wait",
        "  pending: call_1 delete_file({'path': 'old.log'})",
        "  pending: call_2 transfer_money({'to': 'Bob', 'amount': 250})",
        "  prompt() meanwhile: ValueError: cannot prompt: 2 tool call(s) wait for approval: "
        "delete_file (call_1), transfer_money (call_2)",
        "  delete_file -> deleted old.log",
        "  transfer_money -> denied: over the daily limit",
        "assistant: deleted old.log; denied: over the daily limit",
        "3. approve= decides while the run waits",
        "  asks: delete_file({'path': 'cache.tmp'})",
        "  asks: delete_file({'path': 'notes.txt'})",
        "  approve delete_file({'path': 'cache.tmp'})? yes",
        "  approve delete_file({'path': 'notes.txt'})? no",
        "  delete_file -> deleted cache.tmp",
        "  delete_file -> denied: only temporary files may go",
        "  transfer_money -> sent 20 EUR to Ann",  # 20: needs no approval, nobody was asked
        "assistant: deleted cache.tmp; denied: only temporary files may go; sent 20 EUR to Ann",
        "files left: ['notes.txt']; paid: ['20 to Ann']",
    ]


@pytest.mark.slow
def test_fastapi_example_serves_the_page_and_a_run_under_its_mount() -> None:
    assert run_example("fastapi_app.py").splitlines() == [
        "page: 200 text/html; charset=utf-8", "tool call: add", "tool result: 42",
        "The sum is 42.", "RUN_FINISHED"]


@pytest.mark.slow
def test_steering_example_injects_the_steering_then_the_follow_up() -> None:
    assert run_example("steering.py").splitlines() == [
        "      user: Summarize the quarterly report.",
        " assistant: -> read_report()",
        "toolResult: Q3: revenue +12%, costs flat, 3 new clients.",
        "      user: Keep it under ten words. (steering)",
        " assistant: Revenue up 12%, costs flat.",
        "      user: Now say it in French. (follow-up)",
        " assistant: Chiffre d'affaires +12 %, coûts stables.",
        "one run, 3 turns",
    ]


@pytest.mark.slow
def test_abort_example_stops_mid_stream_then_takes_a_new_prompt() -> None:
    out = run_example("abort.py").splitlines()
    assert out[:2] == ["stop_reason: aborted", "error_message: Request was aborted"]
    kept = re.fullmatch(r"kept (\d+) of (\d+) characters: '(.*)'", out[2])
    assert kept is not None
    assert 40 < int(kept[1]) < int(kept[2])
    assert kept[3].startswith("Once upon a time, in a thread pool far away,")
    assert out[3:] == ["next prompt: stop: Yes, I'm still here.",
                       "transcript: ['user', 'assistant', 'user', 'assistant']"]


@pytest.mark.slow
def test_custom_stream_fn_example_answers_with_its_rules() -> None:
    assert run_example("custom_stream_fn.py").splitlines() == [
        "      user: What is 19 + 23 + 100?",
        " assistant: Let me add those. -> add({'numbers': [19, 23, 100]})",
        "toolResult: 142",
        " assistant: The sum is 142.",
        "      user: Hello!",
        " assistant: Give me some numbers and I will add them up.",
    ]


def test_custom_stream_fn_example_speaks_the_event_protocol() -> None:
    example = load_example("custom_stream_fn.py")
    model = ac.Model("adder-1", "Adder", "rules", "local", "none")
    context = ac.Context(None, [ac.UserMessage("add 1 and 2")])
    events = list(example.rule_based_model(model, context, ac.StreamOptions()))
    assert [e.type for e in events] == [
        "start", "text_start", "text_delta", "text_delta", "text_delta", "text_delta", "text_end",
        "toolcall_start", "toolcall_end", "done",
    ]
    final = events[-1].message
    assert final.stop_reason == ac.StopReason.TOOL_USE
    assert final.text == "Let me add those."
    assert [(c.name, c.arguments) for c in final.tool_calls] == [("add", {"numbers": [1, 2]})]
    assert events[4].partial.text == "Let me add "

    aborted = ac.AbortController()
    aborted.abort()
    events = list(example.rule_based_model(model, context, ac.StreamOptions(signal=aborted.signal)))
    assert [e.type for e in events] == ["start", "text_start", "error"]
    assert events[-1].error.stop_reason == ac.StopReason.ABORTED


@pytest.mark.slow
def test_local_server_example_runs_against_its_stand_in_server() -> None:
    out = run_example("local_server.py").splitlines()
    assert re.fullmatch(r"server: stand-in at http://127\.0\.0\.1:\d+/v1", out[0])
    assert out[1:] == ["you: What is 19 + 23?", '  -> add({"a": 19, "b": 23})', "  <- 42",
                       "assistant: The answer is 42.", "server: stopped"]


def _completions_sse(deltas: list[dict[str, Any]], finish: str) -> bytes:
    def chunk(delta: dict[str, Any], reason: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": reason}
        return f"data: {json.dumps({'id': 'chatcmpl-1', 'choices': [choice]})}\n\n"

    events = [chunk({"role": "assistant"}), *map(chunk, deltas), chunk({}, finish)]
    return "".join([*events, "data: [DONE]\n\n"]).encode()


@pytest.mark.slow
@pytest.mark.parametrize("how", ["env", "flag"])
def test_local_server_example_talks_to_a_real_server_when_given_one(
    sse_server: SSEServer, how: str
) -> None:
    call = {"index": 0, "id": "call_7", "type": "function",
            "function": {"name": "add", "arguments": '{"a": 19, "b": 23}'}}
    sse_server.sse(_completions_sse([{"tool_calls": [call]}], "tool_calls"), chunking="random")
    sse_server.sse(_completions_sse([{"content": "19 + 23 "}, {"content": "= 42"}], "stop"))
    if how == "env":  # Ollama's own URL, without /v1
        out = run_example("local_server.py",
                          env=_env(OLLAMA_BASE_URL=sse_server.url, OLLAMA_MODEL="qwen2.5:7b"))
    else:
        out = run_example("local_server.py", "--base-url", f"{sse_server.url}/v1",
                          "--model", "qwen2.5:7b")
    assert out.splitlines() == [f"server: {sse_server.url}/v1", "you: What is 19 + 23?",
                                '  -> add({"a": 19, "b": 23})', "  <- 42",
                                "assistant: 19 + 23 = 42"]
    assert [r.path for r in sse_server.requests] == ["/v1/chat/completions"] * 2
    first, second = (r.json for r in sse_server.requests)
    assert first["model"] == "qwen2.5:7b"
    assert [t["function"]["name"] for t in first["tools"]] == ["add"]
    assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant", "tool"]
    assert (second["messages"][3]["tool_call_id"], second["messages"][3]["content"]) == (
        "call_7", "42")


@pytest.mark.slow
def test_readme_quickstart_runs_as_written() -> None:
    readme = (EXAMPLES.parent / "README.md").read_text(encoding="utf-8")
    code = readme.split("## Quickstart", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    assert len(code.strip().splitlines()) <= 15  # the quickstart stays short
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "2 + 40 = 42"
