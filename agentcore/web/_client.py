"""A request's own tools and context (API §28): client-side tools, and a note for the model.

An AG-UI client may offer tools of its own (`RunAgentInput.tools`, as CopilotKit sends its
frontend actions). They are offered to the model for that run, beside the agent's tools; a
client tool may not take the name of one of the agent's (422). The server never runs their
calls: each one's `execute` raises `CallLeftOpen`, so its batch leaves it without a result
while the agent's own calls of the same reply run as usual, and the run ends after the batch
(`RUN_FINISHED` names the open calls in its outcome's `pendingToolCallIds`). The client's next
request answers them with `ToolMessage`s, which enter the transcript as the calls'
`ToolResultMessage`s ahead of the model's next turn; an open call the request does not answer
(it brings a new prompt instead) gets the error result `NO_RESULT_TEXT`, so no call is ever
left without one (API §0). The open calls are read from the transcript itself: the calls of
its last reply that have no result and are not the agent's own tools'.

`context` entries reach the model as a note after the system prompt (`with_context`), for
that run only: the transcript never holds them. Both are given to the run by setting the
agent's `tools` and `system_prompt` as it starts and restoring them at once (`offered`): a
run keeps its own copies of both (API §6: settings apply from the next run).

An open call waits in the agent's transcript, in memory. A conversation opened again from
its session (after a restart, an eviction, or in another worker) repairs it as any call left
without a result (an "interrupted" error result), and the client's late result is then
refused (409), as for any call that has its result.
"""

from __future__ import annotations

import contextlib
import html
from collections.abc import Iterator, Sequence

from .._agent import Agent
from .._core import (
    AgentBusyError,
    AgentMessage,
    AgentTool,
    TextContent,
    ToolCall,
    ToolResultMessage,
    unanswered_tool_calls,
)
from ._body import BadInput
from ._input import RunRequest

__all__ = ["NO_RESULT_TEXT", "answers", "offered", "open_client_calls", "with_context"]

NO_RESULT_TEXT = "no result: the client's next request did not answer this tool call"
"""The error result of a client tool's call that the client's next request left unanswered."""


def open_client_calls(agent: Agent) -> list[ToolCall]:
    """The calls of the last reply in `agent`'s transcript that wait for the client's result.

    Those without a result whose tool is none of the agent's: the agent's own calls are left
    open only to wait for approval (API §20, §25), which has its own way to answer them.
    """
    return _open(agent.messages, agent)


def _open(messages: Sequence[AgentMessage], agent: Agent) -> list[ToolCall]:
    calls = unanswered_tool_calls(messages)  # from the end back to the last reply: O(1) mostly
    if not calls:
        return calls
    own = {tool.name for tool in agent.active_agent.tools}
    return [call for call in calls if call.name not in own]


def answers(agent: Agent, request: RunRequest) -> list[ToolResultMessage]:
    """The results a run on `request` starts with: one per open client call, in call order.

    The client's result when the request brings one, else the error `NO_RESULT_TEXT`. With a
    new prompt, the request's other results are history (clients send the whole
    conversation) and are ignored. Without one, results are all it brings: one for a call
    that has its result already is ignored, one that no call waits for is refused (409), and
    so is a request whose results all have theirs already. Raises `AgentBusyError` while the
    agent runs (its transcript is still changing).
    """
    if agent.signal is not None:
        raise AgentBusyError("the agent is running")
    messages = agent.messages  # an idle agent's: nothing changes it while this reads
    waiting = {call.id: call for call in _open(messages, agent)}
    given = {r.tool_call_id: r for r in request.results if r.tool_call_id in waiting}
    if not request.prompt and len(given) < len(request.results):
        answered = {m.tool_call_id for m in messages if isinstance(m, ToolResultMessage)}
        own = {call.id for call in unanswered_tool_calls(messages)}  # waiting for approval
        for result in request.results:
            call_id = result.tool_call_id
            if call_id in given or call_id in answered:
                continue
            why = (": it is the agent's own and waits for approval; answer its interrupt with "
                   "'resume'" if call_id in own else "")
            raise BadInput(409, f"messages[{result.index}].toolCallId: no tool call "
                           f"{call_id!r} on thread {request.thread_id!r} waits for a client's "
                           f"result{why}")
        if not given:
            ids = ", ".join(repr(r.tool_call_id) for r in request.results)
            raise BadInput(409, f"nothing to run: the tool call(s) {ids} on thread "
                           f"{request.thread_id!r} have their results already")
    out = []
    for call in waiting.values():
        answer = given.get(call.id)
        if answer is None:
            out.append(ToolResultMessage(call.id, call.name, [TextContent(NO_RESULT_TEXT)],
                                         is_error=True))
        else:
            out.append(ToolResultMessage(call.id, call.name, list(answer.content),
                                         is_error=answer.is_error))
    return out


def with_context(system_prompt: str, context: Sequence[tuple[str, str]]) -> str:
    """`system_prompt` with the request's `context` after it, in a block of its own."""
    if not context:
        return system_prompt
    items = "\n".join(f'<item description="{_attribute(description)}">\n{value}\n</item>'
                      for description, value in context)
    note = ("<context>\nThe application gives this context with the current request:\n"
            f"{items}\n</context>")
    return f"{system_prompt}\n\n{note}" if system_prompt else note


def _attribute(text: str) -> str:
    """`text` fit to quote as an XML attribute (apostrophes kept: a model reads it)."""
    return html.escape(text, quote=False).replace('"', "&quot;")


@contextlib.contextmanager
def offered(agent: Agent, request: RunRequest) -> Iterator[None]:
    """The request's tools and context given to the run started in the block (see above).

    Raises `BadInput` (422) for a client tool named as one of the agent's own.
    """
    if not request.tools and not request.context:
        yield
        return
    active = agent.active_agent  # the agent answering the next prompt (API §25: handoffs)
    tools: list[AgentTool] = active.tools
    own = {tool.name for tool in tools}
    for i, tool in enumerate(request.tools):
        if tool.name in own:
            raise BadInput(422, f"tools[{i}].name: {tool.name!r} is the name of one of the "
                           "agent's own tools; a client tool needs a name of its own")
    system_prompt = active.system_prompt
    active.tools = [*tools, *request.tools]
    active.system_prompt = with_context(system_prompt, request.context)
    try:
        yield
    finally:
        active.tools = tools
        active.system_prompt = system_prompt
