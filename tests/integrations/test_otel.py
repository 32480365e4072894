"""`agentcore.otel`: spans of runs, model calls and tool calls, on the real OpenTelemetry SDK."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import attrs
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

import agentcore as ac
from agentcore.otel import instrument
from agentcore.providers.faux import (
    FauxProvider,
    faux_assistant_message,
    faux_tool_call,
    register_faux_provider,
)

MODEL = ac.Model("bench-1", "Bench", "bench", "openai", "http://localhost:0")
SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
CONTENT_KEYS = {"gen_ai.system_instructions", "gen_ai.input.messages", "gen_ai.output.messages",
                "gen_ai.tool.call.arguments", "gen_ai.tool.call.result"}


class Traced:
    """A tracer provider exporting to memory, instrumented for one test."""

    def __init__(self, capture_content: bool = False) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.uninstrument = instrument(self.provider, capture_content=capture_content)

    def close(self) -> None:
        self.uninstrument()
        self.provider.shutdown()

    @property
    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def named(self, prefix: str) -> list[ReadableSpan]:
        return [s for s in self.spans if s.name.startswith(prefix)]

    def one(self, prefix: str) -> ReadableSpan:
        (span,) = self.named(prefix)
        return span


@pytest.fixture
def traced() -> Iterator[Traced]:
    t = Traced()
    yield t
    t.close()


@pytest.fixture
def traced_content() -> Iterator[Traced]:
    t = Traced(capture_content=True)
    yield t
    t.close()


def reply(*content: ac.TextContent | ac.ToolCall | str, stop: str = "stop",
          error: str | None = None, usage: ac.Usage | None = None,
          response_id: str | None = None) -> ac.AssistantMessage:
    blocks: list[ac.TextContent | ac.ThinkingContent | ac.ToolCall] = [
        ac.TextContent(c) if isinstance(c, str) else c for c in content]
    return ac.AssistantMessage(blocks, "bench", "openai", "bench-1-2025", usage=usage or ac.Usage(),
                               stop_reason=ac.StopReason(stop), error_message=error,
                               response_id=response_id)


def serve(*replies: ac.AssistantMessage,
          during: Callable[[], None] | None = None) -> ac.StreamFn:
    """A stream_fn answering each call with the next reply, all events ready at once."""
    queue = list(replies)

    def stream_fn(model: ac.Model, context: ac.Context,
                  options: ac.StreamOptions) -> ac.AssistantMessageEventStream:
        if during is not None:
            during()
        message = queue.pop(0)
        out = ac.AssistantMessageEventStream()
        if message.stop_reason in (ac.StopReason.ERROR, ac.StopReason.ABORTED):
            out.push(ac.ErrorEvent(message.stop_reason, message))
        else:
            out.push(ac.StartEvent(message))
            out.push(ac.DoneEvent(message.stop_reason, message))
        return out

    return stream_fn


def call(name: str, n: int, id: str | None = None) -> ac.ToolCall:
    return ac.ToolCall(id or f"call_{n}", name, {"n": n})


def make_tool(name: str, fn: Callable[[Any], str]) -> ac.AgentTool:
    def execute(tool_call_id: str, args: Any, signal: ac.AbortSignal,
                on_update: Any) -> ac.AgentToolResult:
        return ac.AgentToolResult([ac.TextContent(fn(args))])

    return ac.AgentTool(name, f"The {name} tool.", SCHEMA, execute)


def run(tools: Sequence[ac.AgentTool], *replies: ac.AssistantMessage, system_prompt: str = "",
        signal: ac.AbortSignal | None = None, during: Callable[[], None] | None = None,
        model: ac.Model = MODEL) -> list[ac.AgentMessage]:
    context = ac.AgentContext(system_prompt, [], list(tools))
    return ac.run_agent_loop([ac.UserMessage("go")], context, ac.AgentLoopConfig(model=model),
                             lambda _: None, signal, serve(*replies, during=during))


def parent_id(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def span_id(span: ReadableSpan) -> int:
    assert span.context is not None
    value: int = span.context.span_id
    return value


def test_otel_run_gives_a_run_span_with_model_and_tool_spans_under_it(traced: Traced) -> None:
    usage = ac.Usage(input=10, output=5, cache_read=3, cache_write=2, total_tokens=20)
    run([make_tool("double", lambda a: str(2 * a["n"]))],
        reply(call("double", 21), stop="toolUse", usage=usage, response_id="resp_1"),
        reply("42", usage=ac.Usage(input=30, output=1, total_tokens=31), response_id="resp_2"))
    assert [s.name for s in traced.spans] == [
        "chat bench-1", "execute_tool double", "chat bench-1", "invoke_agent"]
    root = traced.one("invoke_agent")
    assert root.parent is None
    assert root.kind is trace.SpanKind.INTERNAL
    assert dict(root.attributes or {}) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "bench-1",
        "gen_ai.usage.input_tokens": 45,
        "gen_ai.usage.cache_read.input_tokens": 3,
        "gen_ai.usage.cache_creation.input_tokens": 2,
        "gen_ai.usage.output_tokens": 6,
    }
    first, second = traced.named("chat ")
    assert [parent_id(s) for s in traced.spans if s is not root] == [span_id(root)] * 3
    assert first.kind is trace.SpanKind.CLIENT
    assert dict(first.attributes or {}) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "bench-1",
        "gen_ai.response.model": "bench-1-2025",
        "gen_ai.response.id": "resp_1",
        "gen_ai.usage.input_tokens": 15,
        "gen_ai.usage.cache_read.input_tokens": 3,
        "gen_ai.usage.cache_creation.input_tokens": 2,
        "gen_ai.usage.output_tokens": 5,
        "gen_ai.response.finish_reasons": ("tool_call",),
    }
    assert second.attributes is not None
    assert second.attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert second.attributes["gen_ai.usage.input_tokens"] == 30
    assert second.attributes["gen_ai.response.id"] == "resp_2"
    tool_span = traced.one("execute_tool")
    assert dict(tool_span.attributes or {}) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "double",
        "gen_ai.tool.call.id": "call_21",
        "gen_ai.tool.type": "function",
    }
    assert all(s.status.status_code is StatusCode.UNSET for s in traced.spans)
    assert first.end_time is not None
    assert tool_span.start_time is not None
    assert first.end_time <= tool_span.start_time  # each span covers its own step


@pytest.mark.parametrize(("provider", "name"), [
    ("openai", "openai"), ("anthropic", "anthropic"), ("google", "gcp.gemini"),
    ("google-vertex", "gcp.vertex_ai"), ("amazon-bedrock", "aws.bedrock"),
    ("azure-openai", "azure.ai.openai"), ("mistral", "mistral_ai"), ("xai", "x_ai"),
    ("my-gateway", "my-gateway"),
])
def test_otel_provider_name_is_the_conventions_well_known_value(
    traced: Traced, provider: str, name: str,
) -> None:
    run([], reply("hi"), model=attrs.evolve(MODEL, provider=provider))
    assert [(s.attributes or {}).get("gen_ai.provider.name") for s in traced.spans] == [name] * 2


def test_otel_chat_span_starts_before_the_request_and_is_current_while_it_streams(
    traced: Traced,
) -> None:
    seen: list[str] = []

    def during() -> None:
        span = trace.get_current_span()
        seen.append(span.name if isinstance(span, ReadableSpan) else repr(span))

    run([], reply("hi"), during=during)
    assert seen == ["chat bench-1"]
    assert trace.get_current_span() is trace.INVALID_SPAN  # the run detached its spans


def test_otel_parallel_batch_of_eight_tools_gives_eight_spans_under_the_run(
    traced: Traced,
) -> None:
    barrier = threading.Barrier(8, timeout=5)  # all eight at once: they do run in parallel
    current: dict[int, int] = {}
    lock = threading.Lock()

    def work(args: Any) -> str:
        barrier.wait()
        with lock:
            current[args["n"]] = trace.get_current_span().get_span_context().span_id
        return "ok"

    run([make_tool("wait", work)],
        reply(*[call("wait", n) for n in range(8)], stop="toolUse"), reply("done"))
    root = traced.one("invoke_agent")
    tools = traced.named("execute_tool wait")
    assert len(tools) == 8
    assert {parent_id(s) for s in tools} == {span_id(root)}
    by_call = {s.attributes["gen_ai.tool.call.id"]: span_id(s) for s in tools}  # type: ignore[index]
    assert by_call == {f"call_{n}": current[n] for n in range(8)}  # current on its worker
    assert [parent_id(s) for s in traced.named("chat ")] == [span_id(root)] * 2


def test_otel_failing_tool_sets_error_status_without_content(traced: Traced) -> None:
    def broken(args: Any) -> str:
        raise KeyError("secret key")

    run([make_tool("broken", broken)], reply(call("broken", 1), stop="toolUse"), reply("sorry"))
    span = traced.one("execute_tool")
    assert span.status.status_code is StatusCode.ERROR
    assert span.status.description == "the tool call failed"
    assert span.attributes is not None
    assert span.attributes["error.type"] == "tool_error"
    assert traced.one("invoke_agent").status.status_code is StatusCode.UNSET  # the run went on


def test_otel_failing_tool_with_content_describes_the_failure(traced_content: Traced) -> None:
    def broken(args: Any) -> str:
        raise KeyError("Rome")

    run([make_tool("broken", broken)], reply(call("broken", 1), stop="toolUse"), reply("sorry"))
    span = traced_content.one("execute_tool")
    assert span.status.description == "KeyError: 'Rome'"
    assert span.attributes is not None
    assert span.attributes["gen_ai.tool.call.result"] == "KeyError: 'Rome'"


def test_otel_error_reply_sets_error_on_the_model_call_and_the_run(traced: Traced) -> None:
    run([], reply(stop="error", error="rate limited"))
    chat, root = traced.one("chat "), traced.one("invoke_agent")
    assert (chat.status.status_code, chat.status.description) == (StatusCode.ERROR, "rate limited")
    assert chat.attributes is not None
    assert chat.attributes["error.type"] == "error"
    assert chat.attributes["gen_ai.response.finish_reasons"] == ("error",)
    assert (root.status.status_code, root.status.description) == (StatusCode.ERROR, "rate limited")


def test_otel_stream_fn_raising_ends_the_model_span_with_an_error(traced: Traced) -> None:
    def during() -> None:
        raise ConnectionError("no route")

    run([], reply("never"), during=during)
    chat, root = traced.one("chat "), traced.one("invoke_agent")
    assert chat.status.status_code is StatusCode.ERROR
    assert chat.status.description is not None
    assert "no route" in chat.status.description
    assert root.status.status_code is StatusCode.ERROR


def test_otel_aborted_run_sets_error_on_the_run(traced: Traced) -> None:
    controller = ac.AbortController()

    def stop(args: Any) -> str:
        controller.abort("enough")
        return "stopped"

    run([make_tool("stop", stop)], reply(call("stop", 1), stop="toolUse"), reply("never"),
        signal=controller.signal)
    root = traced.one("invoke_agent")
    assert (root.status.status_code, root.status.description) == (StatusCode.ERROR,
                                                                  "aborted: enough")
    assert root.attributes is not None
    assert root.attributes["error.type"] == "aborted"
    assert len(traced.named("chat ")) == 1  # no model call after the abort


def test_otel_agent_aborted_mid_reply_sets_error_on_chat_and_run(traced: Traced) -> None:
    provider = register_faux_provider(tokens_per_second=50, token_size=(1, 1))
    try:
        provider.set_responses([faux_assistant_message("word " * 200)])
        agent = ac.Agent(provider.get_model())
        streaming = threading.Event()
        agent.subscribe(lambda event, signal: streaming.set()
                        if event.type == "message_update" else None)
        agent_run = agent.prompt("go")
        assert streaming.wait(5)
        agent_run.abort()
        agent_run.result(timeout=5)
    finally:
        provider.unregister()
    chat, root = traced.one("chat "), traced.one("invoke_agent")
    assert chat.status.status_code is StatusCode.ERROR
    assert chat.attributes is not None
    assert chat.attributes["gen_ai.response.finish_reasons"] == ("aborted",)
    assert root.status.status_code is StatusCode.ERROR
    assert root.attributes is not None
    assert root.attributes["error.type"] == "aborted"


def test_otel_records_no_content_by_default(traced: Traced) -> None:
    run([make_tool("double", lambda a: str(2 * a["n"]))],
        reply(call("double", 21), stop="toolUse"), reply("42"), system_prompt="Be brief.")
    assert len(traced.spans) == 4
    for span in traced.spans:
        assert CONTENT_KEYS.isdisjoint(span.attributes or {}), span.name


def test_otel_records_content_with_capture_content(traced_content: Traced) -> None:
    run([make_tool("double", lambda a: str(2 * a["n"]))],
        reply(call("double", 21), stop="toolUse"), reply("42"), system_prompt="Be brief.")
    root = traced_content.one("invoke_agent")
    first, second = traced_content.named("chat ")
    tool_span = traced_content.one("execute_tool")

    def attribute(span: ReadableSpan, key: str) -> Any:
        assert span.attributes is not None
        value = span.attributes[key]
        assert isinstance(value, str)
        return json.loads(value) if key != "gen_ai.tool.call.result" else value

    system = [{"type": "text", "content": "Be brief."}]
    user = {"role": "user", "parts": [{"type": "text", "content": "go"}]}
    tool_call = {"type": "tool_call", "id": "call_21", "name": "double", "arguments": {"n": 21}}
    assert attribute(root, "gen_ai.system_instructions") == system
    assert attribute(root, "gen_ai.input.messages") == [user]
    assert attribute(root, "gen_ai.output.messages") == [
        {"role": "assistant", "parts": [{"type": "text", "content": "42"}],
         "finish_reason": "stop"}]
    assert attribute(first, "gen_ai.system_instructions") == system
    assert attribute(first, "gen_ai.input.messages") == [user]
    assert attribute(first, "gen_ai.output.messages") == [
        {"role": "assistant", "parts": [tool_call], "finish_reason": "tool_call"}]
    assert attribute(second, "gen_ai.input.messages") == [
        user,
        {"role": "assistant", "parts": [tool_call]},
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_21",
                                    "response": "42"}]},
    ]
    assert attribute(tool_span, "gen_ai.tool.call.arguments") == {"n": 21}
    assert attribute(tool_span, "gen_ai.tool.call.result") == "42"


def test_otel_nested_agent_in_a_tool_nests_under_the_tool_span(
    traced: Traced, faux: FauxProvider
) -> None:
    inner = ac.Agent(faux.get_model())

    def ask(args: Any) -> str:
        return inner.prompt("inner question").result(timeout=5)[-1].text  # type: ignore[union-attr]

    faux.set_responses([faux_assistant_message([faux_tool_call("ask", {"n": 1}, id="c1")]),
                        faux_assistant_message("inner answer"),
                        faux_assistant_message("outer answer")])
    outer = ac.Agent(faux.get_model(), tools=[make_tool("ask", ask)])
    assert outer.prompt("outer question").result(timeout=5)[-1].text == "outer answer"  # type: ignore[union-attr]
    runs = traced.named("invoke_agent")
    assert len(runs) == 2
    tool_span = traced.one("execute_tool ask")
    outer_run = next(s for s in runs if s.parent is None)
    inner_run = next(s for s in runs if s.parent is not None)
    assert parent_id(tool_span) == span_id(outer_run)
    assert parent_id(inner_run) == span_id(tool_span)
    chats = traced.named("chat ")
    assert sorted([parent_id(s) or 0 for s in chats]) == sorted(
        [span_id(outer_run), span_id(outer_run), span_id(inner_run)])
    assert len({s.context.trace_id for s in traced.spans if s.context}) == 1  # one trace


def test_otel_nested_loop_in_a_tool_nests_under_the_tool_span(traced: Traced) -> None:
    def nested(args: Any) -> str:
        run([], reply("inner"))
        return "done"

    run([make_tool("nested", nested)], reply(call("nested", 1), stop="toolUse"), reply("outer"))
    tool_span = traced.one("execute_tool")
    inner_run = next(s for s in traced.named("invoke_agent") if s.parent is not None)
    assert parent_id(inner_run) == span_id(tool_span)


def test_otel_run_started_under_a_span_is_its_child_also_in_the_background(
    traced: Traced,
) -> None:
    tracer = traced.provider.get_tracer("test")
    with tracer.start_as_current_span("request") as request:
        stream = ac.agent_loop([ac.UserMessage("go")], ac.AgentContext("", [], []),
                               ac.AgentLoopConfig(model=MODEL), stream_fn=serve(reply("hi")))
        list(stream)
        stream.result(timeout=5)
    assert parent_id(traced.one("invoke_agent")) == request.get_span_context().span_id


def test_otel_uninstrument_stops_the_spans(traced: Traced) -> None:
    run([], reply("one"))
    assert len(traced.spans) == 2
    traced.uninstrument()
    traced.uninstrument()  # twice is harmless
    run([], reply("two"))
    assert len(traced.spans) == 2


def test_otel_two_instrumentations_each_get_every_span(traced: Traced) -> None:
    other = Traced()
    try:
        run([], reply("one"))
    finally:
        other.close()
    assert [s.name for s in other.spans] == [s.name for s in traced.spans] == [
        "chat bench-1", "invoke_agent"]


def test_otel_observer_that_raises_never_breaks_a_run(
    traced: Traced, caplog: pytest.LogCaptureFixture
) -> None:
    from _internals import observe

    def broken(start: Any) -> Any:
        raise RuntimeError("observer bug")

    remove = observe(broken)
    try:
        messages = run([], reply("fine"))
    finally:
        remove()
    assert messages[-1].text == "fine"  # type: ignore[union-attr]
    assert [s.name for s in traced.spans] == ["chat bench-1", "invoke_agent"]
    assert "a run observer failed" in caplog.text


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=60, check=False)


@pytest.mark.slow
def test_otel_import_agentcore_does_not_import_opentelemetry() -> None:
    done = _python("""
        import sys
        import agentcore, agentcore.otel
        print(sorted(m for m in sys.modules if m.split(".")[0] == "opentelemetry"))
        """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.slow
def test_otel_without_the_extra_instrument_names_the_extra() -> None:
    done = _python("""
        import sys
        sys.modules["opentelemetry"] = None  # as if not installed
        from agentcore.otel import instrument
        try:
            instrument()
        except ImportError as exc:
            print(exc)
        """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        "agentcore.otel needs the 'otel' extra: pip install 'agentcore[otel]'")


def test_otel_sink_raising_ends_every_span_with_the_error(traced: Traced) -> None:
    def sink(event: ac.AgentEvent) -> None:
        if isinstance(event, ac.MessageStartEvent) and event.message.role == "assistant":
            raise RuntimeError("sink broke")

    context = ac.AgentContext("", [], [])
    with pytest.raises(RuntimeError, match="sink broke"):
        ac.run_agent_loop([ac.UserMessage("go")], context, ac.AgentLoopConfig(model=MODEL),
                          sink, stream_fn=serve(reply("hi")))
    chat, root = traced.one("chat "), traced.one("invoke_agent")
    assert chat.status.status_code is StatusCode.ERROR  # ended, not leaked
    assert (root.status.status_code, root.status.description) == (StatusCode.ERROR,
                                                                  "sink broke")
    assert root.attributes is not None
    assert root.attributes["error.type"] == "RuntimeError"
    assert [e.name for e in root.events] == ["exception"]
    assert trace.get_current_span() is trace.INVALID_SPAN


def test_otel_tool_past_its_timeout_ends_its_span_with_an_error(traced: Traced) -> None:
    def slow(tool_call_id: str, args: Any, signal: ac.AbortSignal,
             on_update: Any) -> ac.AgentToolResult:
        signal.wait(5)  # the timeout aborts it
        return ac.AgentToolResult([ac.TextContent("late")])

    tool = ac.AgentTool("slow", "A slow tool.", SCHEMA, slow, timeout=0.05)
    run([tool], reply(call("slow", 1), stop="toolUse"), reply("gave up"))
    span = traced.one("execute_tool slow")
    assert span.status.status_code is StatusCode.ERROR
    assert parent_id(span) == span_id(traced.one("invoke_agent"))


# --- approvals (API §20) -----------------------------------------------------------------------


def _approval_tools() -> list[ac.AgentTool]:
    """`pay` always needs approval, `delete` for n > 1, `read` never."""
    pay = attrs.evolve(make_tool("pay", lambda a: "paid"), requires_approval=True)
    delete = attrs.evolve(make_tool("delete", lambda a: "deleted"),
                          requires_approval=lambda args: args["n"] > 1)
    return [pay, delete, make_tool("read", lambda a: "read")]


def _asking_batch() -> ac.AssistantMessage:
    return reply(call("pay", 1, "p"), call("delete", 2, "d"), call("read", 3, "r"),
                 stop="toolUse")


def _run_approving(answers: dict[str, bool | str], *replies: ac.AssistantMessage,
                   signal: ac.AbortSignal | None = None) -> list[ac.AgentMessage]:
    config = ac.AgentLoopConfig(model=MODEL, approve=lambda tool_call, tool: answers[tool_call.id])
    context = ac.AgentContext("", [], _approval_tools())
    return ac.run_agent_loop([ac.UserMessage("go")], context, config, lambda _: None, signal,
                             serve(*replies))


def _tool_span(traced: Traced, call_id: str) -> ReadableSpan:
    (span,) = [s for s in traced.named("execute_tool")
               if s.attributes is not None and s.attributes["gen_ai.tool.call.id"] == call_id]
    return span


def test_otel_records_each_decision_on_the_tools_span(traced: Traced) -> None:
    _run_approving({"p": True, "d": "too risky"}, _asking_batch(), reply("ok"))
    paid, deleted, read = (_tool_span(traced, i) for i in "pdr")
    assert paid.attributes is not None
    assert paid.attributes["agentcore.tool.approval.decision"] == "approved"
    assert paid.status.status_code is StatusCode.UNSET
    assert deleted.attributes is not None
    assert deleted.attributes["agentcore.tool.approval.decision"] == "denied"
    assert deleted.status.status_code is StatusCode.ERROR
    assert deleted.status.description == "the call was denied"
    assert deleted.attributes["error.type"] == "denied"
    assert "agentcore.tool.approval.reason" not in deleted.attributes  # content: not captured
    assert read.attributes is not None
    assert "agentcore.tool.approval.decision" not in read.attributes  # it needed none
    run_span = traced.one("invoke_agent")
    assert [(e.name, dict(e.attributes or {})) for e in run_span.events] == [
        ("agentcore.tool.approval.request",
         {"gen_ai.tool.name": "pay", "gen_ai.tool.call.id": "p"}),
        ("agentcore.tool.approval.request",
         {"gen_ai.tool.name": "delete", "gen_ai.tool.call.id": "d"}),
    ]
    assert run_span.attributes is not None
    assert "agentcore.tool.approval.waiting_call_ids" not in run_span.attributes
    assert run_span.status.status_code is StatusCode.UNSET


def test_otel_records_a_denials_reason_with_capture_content(traced_content: Traced) -> None:
    _run_approving({"p": False, "d": "too risky"}, _asking_batch(), reply("ok"))
    paid, deleted = _tool_span(traced_content, "p"), _tool_span(traced_content, "d")
    assert deleted.attributes is not None
    assert deleted.attributes["agentcore.tool.approval.reason"] == "too risky"
    assert deleted.status.description == "denied: too risky"
    assert paid.attributes is not None
    assert paid.attributes["agentcore.tool.approval.reason"] == "the user did not allow this call"
    assert paid.attributes["error.type"] == "denied"


def test_otel_a_tool_that_fails_after_approval_is_a_tool_error(traced: Traced) -> None:
    def broken(args: Any) -> str:
        raise RuntimeError("boom")

    tool = attrs.evolve(make_tool("pay", broken), requires_approval=True)
    config = ac.AgentLoopConfig(model=MODEL, approve=lambda tool_call, tool: True)
    ac.run_agent_loop([ac.UserMessage("go")], ac.AgentContext("", [], [tool]), config,
                      lambda _: None, None,
                      serve(reply(call("pay", 1, "p"), stop="toolUse"), reply("ok")))
    span = _tool_span(traced, "p")
    assert span.attributes is not None
    assert span.attributes["agentcore.tool.approval.decision"] == "approved"
    assert span.attributes["error.type"] == "tool_error"


def test_otel_run_ending_with_calls_waiting_records_them_and_the_resume_decides(
        traced: Traced) -> None:
    tools = _approval_tools()
    context = ac.AgentContext("", [], tools)
    config = ac.AgentLoopConfig(model=MODEL)
    first = ac.run_agent_loop([ac.UserMessage("go")], context, config, lambda _: None, None,
                              serve(_asking_batch()))
    assert traced.named("execute_tool") == []  # nothing ran: the whole batch waits
    paused = traced.one("invoke_agent")
    assert paused.attributes is not None
    assert list(paused.attributes["agentcore.tool.approval.waiting_call_ids"]) == ["p", "d"]
    assert paused.status.status_code is StatusCode.UNSET  # waiting is no failure
    assert [e.name for e in paused.events] == ["agentcore.tool.approval.request"] * 2
    resumed_context = ac.AgentContext("", [ac.UserMessage("go"), *first], tools)
    ac.run_agent_loop_continue(resumed_context, config, lambda _: None, None, serve(reply("ok")),
                               approvals={"p": True, "d": False})
    resumed_span = traced.named("invoke_agent")[1]
    assert resumed_span.attributes is not None
    assert "agentcore.tool.approval.waiting_call_ids" not in resumed_span.attributes
    decisions = {i: (_tool_span(traced, i).attributes or {}).get("agentcore.tool.approval.decision")
                 for i in "pdr"}
    assert decisions == {"p": "approved", "d": "denied", "r": None}
    assert all(parent_id(s) == span_id(resumed_span) for s in traced.named("execute_tool"))


def test_otel_run_aborted_while_asking_leaves_no_call_waiting(traced: Traced) -> None:
    controller = ac.AbortController()

    def approve(tool_call: ac.ToolCall, tool: ac.AgentTool) -> bool:
        controller.abort("the person left")
        return True

    config = ac.AgentLoopConfig(model=MODEL, approve=approve)
    ac.run_agent_loop([ac.UserMessage("go")], ac.AgentContext("", [], _approval_tools()), config,
                      lambda _: None, controller.signal, serve(_asking_batch()))
    run_span = traced.one("invoke_agent")
    assert run_span.attributes is not None
    assert [e.name for e in run_span.events] == ["agentcore.tool.approval.request"] * 2
    assert "agentcore.tool.approval.waiting_call_ids" not in run_span.attributes  # all answered
    aborted = traced.named("execute_tool")
    assert len(aborted) == 3  # every call of the batch got an "aborted" result
    assert all("agentcore.tool.approval.decision" not in (s.attributes or {}) for s in aborted)


def test_otel_fallbacks_and_open_circuits_are_recorded_on_the_model_spans(
        traced: Traced) -> None:
    from replies import completions_reply
    from sse_server import SSEServer

    servers = [SSEServer() for _ in range(2)]
    try:
        first, second = (ac.Model(n, n, "openai-completions", "openai", f"{s.url}/v1")
                         for n, s in zip("ab", servers, strict=True))
        breaker = ac.CircuitBreaker(failure_threshold=1, cooldown=3600)
        config = ac.AgentLoopConfig(model=first, fallback_models=[second], max_retries=0,
                                    circuit_breaker=breaker)
        for _ in range(2):  # a failed call, then its circuit open: skipped without a call
            servers[0].status(503, "down")
            servers[1].sse(completions_reply(text="ok"))
            ac.run_agent_loop([ac.UserMessage("hi")], ac.AgentContext("", [], []), config,
                              lambda event: None)
    finally:
        for server in servers:
            server.close()
    failed, *fallbacks = sorted(traced.named("chat "), key=lambda s: s.start_time or 0)
    assert failed.name == "chat a"
    assert failed.status.status_code is StatusCode.ERROR
    assert failed.attributes is not None
    assert failed.attributes["agentcore.fallback.next_model"] == "openai/b"
    assert [s.name for s in fallbacks] == ["chat b", "chat b"]  # no span for the skipped call
    assert [dict(s.attributes or {}).get("agentcore.fallback.circuit_open_skipped")
            for s in fallbacks] == [0, 1]
    assert all((s.attributes or {})["agentcore.fallback.attempt"] == 1 for s in fallbacks)
    runs = sorted(traced.named("invoke_agent"), key=lambda s: s.start_time or 0)
    events = [[(e.name, dict(e.attributes or {})) for e in r.events] for r in runs]
    assert [[a["agentcore.fallback.circuit_open"] for _, a in run] for run in events] == [
        [False], [True]]
    assert events[0][0][1]["agentcore.fallback.reason"].startswith("openai/a failed: 503")
    assert all(r.status.status_code is not StatusCode.ERROR for r in runs)


def test_otel_a_child_agent_s_run_span_is_a_child_of_the_parent_s_tool_span(
        traced: Traced) -> None:
    from agentcore.testing import scripted_model, tool_call

    with scripted_model(["child answer"]) as child_model, scripted_model(
            [tool_call("child", {"input": "hi"}), "parent answer"]) as parent_model:
        child = ac.Agent(child_model.model, name="child")
        parent = ac.Agent(parent_model.model, name="parent", tools=[child.as_tool()])
        parent.prompt("go").raise_for_error()
    runs = traced.named("invoke_agent")
    tool_span = traced.one("execute_tool child")
    (inner,) = [s for s in runs if parent_id(s) == span_id(tool_span)]
    (outer,) = [s for s in runs if s is not inner]
    assert parent_id(tool_span) == span_id(outer)
    assert inner.context is not None
    assert outer.context is not None
    assert inner.context.trace_id == outer.context.trace_id  # one trace


def test_otel_a_guardrail_trip_is_an_event_on_the_run_span(traced: Traced) -> None:
    from agentcore.testing import scripted_model

    def strict(message: ac.AssistantMessage, output: object) -> str | None:
        return "too long"

    with scripted_model(["a long answer"]) as model:
        run = ac.Agent(model.model, output_guardrails=[strict]).prompt("go")
        run.wait()
    root = traced.one("invoke_agent")
    assert [(e.name, dict(e.attributes or {})) for e in root.events] == [
        ("agentcore.guardrail_tripped", {"agentcore.guardrail.kind": "output",
                                          "agentcore.guardrail.name": "strict"})]
    assert root.status.status_code is StatusCode.ERROR
    assert root.status.description == "guardrail tripped: strict: too long"
