"""Helpers for testing code built on agentcore: scripted models and event recorders.

Everything here runs offline. `scripted_model` serves replies you script and records every
request, so a test can say what the model answers and then check what it was sent::

    from agentcore import Agent, ToolExecutionEndEvent, tool
    from agentcore.testing import record_events, scripted_model, tool_call

    @tool(description="Add two integers.")
    def add(a: int, b: int) -> int:
        return a + b

    def test_the_agent_adds() -> None:
        with scripted_model([tool_call("add", {"a": 1, "b": 2}), "The answer is 3"]) as fake:
            agent = Agent(fake.model, system_prompt="Be brief.", tools=[add])
            run = agent.prompt("What is 1 + 2?")
            events = record_events(run, timeout=5)
        assert run.result()[-1].text == "The answer is 3"
        fake.assert_called(times=2)
        assert fake.sent_system_prompt == "Be brief."
        assert fake.sent_tool_results()[0].text == "3"
        fake.assert_tool_called("add", {"a": 1, "b": 2})
        assert events.of(ToolExecutionEndEvent)[0].is_error is False

A reply is a string (one text block), a content block or a list of them (strings become text
blocks), an `AssistantMessage` (e.g. `faux_assistant_message([], "error", "boom")` for a
failing call), or a function `(context, options, model)` returning any of those, for replies
that depend on the request. A call with no reply left fails the way a real provider does: with
an `error` event, "No more faux responses queued" (`run.raise_for_error()` raises it; the
assertion helpers mark such calls). Wait for a run inside the `with` block (`run.result()`,
`run.text`): a run still going when the block ends fails with "the scripted model ... was
closed while a run used it".

`MockTransport(handler)` tests what goes over HTTP without a socket: a real wire API (OpenAI,
Anthropic, Gemini...) sends its request to `handler(request)`, which answers with `(status,
headers, body)` — the body as bytes or chunks, say a recorded SSE stream::

    from agentcore.providers import HttpClient
    from agentcore.testing import MockTransport

    def answer(request):  # request.url, request.headers, request.body (the exact bytes)
        return 200, {"Content-Type": "text/event-stream"}, Path("reply.sse").read_bytes()

    mock = MockTransport(answer)
    model = Model("gpt-4o-mini", "GPT-4o mini", "openai-completions", "openai",
                  "https://api.openai.com/v1")  # Chat Completions: its body has "messages"
    agent = Agent(model, api_key="sk-test", http_client=HttpClient(mock))
    agent.prompt("hi").result()
    assert json.loads(mock.requests[0].body)["messages"][0]["content"] == "hi"

The lower-level faux provider (`register_faux_provider` & co., see `agentcore.providers.faux`)
is re-exported here. The package has no pytest dependency: assertion helpers raise
`AssertionError` with a message describing what the model actually saw. A fixture is two lines::

    @pytest.fixture
    def fake() -> Iterator[ScriptedModel]:
        with scripted_model() as model:
            yield model
"""

from __future__ import annotations

from .._http import MockTransport
from ..providers.faux import (
    FauxProvider,
    faux_assistant_message,
    faux_text,
    faux_thinking,
    faux_tool_call,
    register_faux_provider,
)
from ._calls import ModelCall
from ._recorder import EventRecorder, record_events
from ._replies import Reply, tool_call
from ._scripted import ScriptedModel, scripted_model

__all__ = [
    "EventRecorder",
    "FauxProvider",
    "MockTransport",
    "ModelCall",
    "Reply",
    "ScriptedModel",
    "faux_assistant_message",
    "faux_text",
    "faux_thinking",
    "faux_tool_call",
    "record_events",
    "register_faux_provider",
    "scripted_model",
    "tool_call",
]
