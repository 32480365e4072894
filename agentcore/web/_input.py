"""Reading a `POST /ag-ui` body: JSON → `RunAgentInput` → what the agent is asked to do.

The server keeps each thread's transcript itself, so of the input's messages it reads only the
new ones at the end (a client may send the whole conversation, as AG-UI clients do): the
trailing user messages (the new prompt), and the tool messages just before them (a client's
results for its own tools' calls; API §28). `resume` answers interrupts, i.e. decides the calls
waiting for approval, and then the messages are not read at all. The input's `tools` (the
client's own, checked here and made `AgentTool`s whose calls are left open for the client) and
`context` are read either way. Every problem is a `BadInput` carrying the HTTP status and a
message that names the field.
"""

from __future__ import annotations

import json
import re
from typing import Any

import ag_ui.core as ag
import attrs
from pydantic import ValidationError

from .._core import (
    AbortSignal,
    AgentTool,
    AgentToolResult,
    CallLeftOpen,
    ImageContent,
    TextContent,
    ToolUpdate,
    UserMessage,
)
from ._body import BadInput, load_json

__all__ = ["MAX_ID_CHARS", "ClientResult", "RunRequest", "parse_run_input"]

MAX_ID_CHARS = 200
"""The longest `threadId` or `runId` accepted (a thread id also names its session)."""


_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")  # what every provider accepts


@attrs.frozen
class ClientResult:
    """A client's result for a call of one of its tools: a `ToolMessage` of the input."""

    tool_call_id: str
    content: list[TextContent | ImageContent]
    is_error: bool
    index: int  # its place in the input's `messages` (for error messages)


@attrs.frozen
class RunRequest:
    """What one `POST /ag-ui` asks for: a prompt and results to run, or approvals to resume.

    With either, the client's own tools and its context, for that run only.
    """

    thread_id: str
    run_id: str
    prompt: list[UserMessage]
    approvals: dict[str, bool | str] | None
    results: list[ClientResult] = attrs.field(factory=list)
    tools: list[AgentTool] = attrs.field(factory=list)
    context: list[tuple[str, str]] = attrs.field(factory=list)  # (description, value)


def parse_run_input(body: bytes) -> RunRequest:
    """Read a request body; raise `BadInput` (400 not JSON or too deep, 422 not runnable)."""
    data = load_json(body)
    try:
        run_input = ag.RunAgentInput.model_validate(data)
    except ValidationError as exc:
        raise BadInput(422, f"invalid RunAgentInput: {_describe(exc)}") from None
    for field, value in (("threadId", run_input.thread_id), ("runId", run_input.run_id)):
        if not value.strip() or len(value) > MAX_ID_CHARS or not value.isprintable():
            raise BadInput(422, f"invalid RunAgentInput: {field} must be 1 to {MAX_ID_CHARS} "
                           f"printable characters, got {value[:40]!r}")
    tools = _client_tools(run_input.tools or [])
    context = [(entry.description, entry.value) for entry in run_input.context or []]
    if run_input.resume:
        return RunRequest(run_input.thread_id, run_input.run_id, [],
                          _approvals(run_input.resume), tools=tools, context=context)
    prompt, results = _new_messages(run_input.messages)
    return RunRequest(run_input.thread_id, run_input.run_id, prompt, None, results=results,
                      tools=tools, context=context)


def _describe(exc: ValidationError) -> str:
    """`field.path: problem` for each error (at most five), with the input's camelCase names."""
    problems = []
    for error in exc.errors()[:5]:
        where = ".".join(str(part) for part in error["loc"]) or "body"
        problems.append(f"{where}: {error['msg']}")
    more = len(exc.errors()) - len(problems)
    return "; ".join(problems) + (f" (and {more} more)" if more > 0 else "")


def _new_messages(messages: list[Any]) -> tuple[list[UserMessage], list[ClientResult]]:
    """The trailing user messages, as `UserMessage`s, and the tool messages just before them.

    Either may be empty, not both: a client's results alone continue the run they ended.
    """
    end = len(messages)
    start = end
    while start and isinstance(messages[start - 1], ag.UserMessage):
        start -= 1
    first = start
    while first and isinstance(messages[first - 1], ag.ToolMessage):
        first -= 1
    if first == end:
        raise BadInput(422, "nothing to run: the last of 'messages' must be a user message, or "
                       "a tool message with a client tool's result (or 'resume' must answer "
                       "the interrupts of the previous run)")
    prompt = [_user_message(messages[i], i) for i in range(start, end)]
    if prompt and not any(_has_content(message) for message in prompt):
        raise BadInput(422, f"nothing to run: messages[{end - 1}].content is empty")
    results: list[ClientResult] = []
    for i in range(first, start):
        result = _client_result(messages[i], i)
        if any(r.tool_call_id == result.tool_call_id for r in results):
            raise BadInput(422, f"messages[{i}].toolCallId: {result.tool_call_id!r} is answered "
                           "twice")
        results.append(result)
    return prompt, results


def _client_result(message: ag.ToolMessage, index: int) -> ClientResult:
    """A tool message as a result: its content, then its `error` (which makes it an error)."""
    content = message.content
    blocks: list[TextContent | ImageContent] = (
        [TextContent(content)] if isinstance(content, str) else _blocks(content, index))
    error = message.error
    if error is not None:
        if not any(isinstance(b, ImageContent) or b.text for b in blocks):
            blocks = []
        blocks.append(TextContent(error))
    return ClientResult(message.tool_call_id, blocks, error is not None, index)


def _user_message(message: ag.UserMessage, index: int) -> UserMessage:
    content = message.content
    if isinstance(content, str):
        return UserMessage(content)
    return UserMessage(_blocks(content, index))


def _blocks(content: list[Any], index: int) -> list[TextContent | ImageContent]:
    """The parts of `messages[index].content` as blocks (text, and images given as data)."""
    blocks: list[TextContent | ImageContent] = []
    for j, part in enumerate(content):
        if isinstance(part, ag.TextPart):
            blocks.append(TextContent(part.text))
        elif isinstance(part, ag.ImagePart) and isinstance(part.source, ag.DataSource):
            blocks.append(ImageContent(part.source.value, part.source.mime_type))
        else:
            kind = getattr(part, "type", type(part).__name__)
            source = getattr(getattr(part, "source", None), "type", None)
            what = f"{kind} part" + (f" from a {source} source" if source else "")
            article = "an" if what[0] in "aeiou" else "a"
            raise BadInput(422, f"messages[{index}].content[{j}]: {article} {what} is not "
                           "supported (text, and images given as base64 data, are)")
    return blocks


def _has_content(message: UserMessage) -> bool:
    if isinstance(message.content, str):
        return bool(message.content.strip())
    return any(not isinstance(b, TextContent) or b.text.strip() for b in message.content)


def _approvals(entries: list[ag.ResumeEntry]) -> dict[str, bool | str]:
    """Resume entries as `continue_(approvals=...)` takes them (the interrupt id is the call's).

    `resolved` with payload `true`/`{"approved": true}` allows the call; `false`,
    `{"approved": false, "reason": "..."}` or a `cancelled` entry denies it.
    """
    approvals: dict[str, bool | str] = {}
    for i, entry in enumerate(entries):
        if entry.interrupt_id in approvals:
            raise BadInput(422, f"resume[{i}].interruptId: {entry.interrupt_id!r} is answered "
                           "twice")
        if entry.status == "cancelled":
            approvals[entry.interrupt_id] = "the user cancelled this call"
            continue
        payload = entry.payload
        if isinstance(payload, dict) and set(payload) <= {"approved", "reason"}:
            approved = payload.get("approved")
            reason = payload.get("reason")
        else:
            approved, reason = payload, None
        if not isinstance(approved, bool) or not (reason is None or isinstance(reason, str)):
            raise BadInput(422, f"resume[{i}].payload: expected true, false or "
                           f'{{"approved": bool, "reason"?: str}}, got {json.dumps(payload)}')
        approvals[entry.interrupt_id] = True if approved else (reason or False)
    return approvals


def _client_tools(tools: list[ag.Tool]) -> list[AgentTool]:
    """The client's own tools, as tools whose calls the server leaves open for the client.

    Each needs a name providers accept, given once, and `parameters` that is a JSON Schema of
    an object (absent: no arguments).
    """
    out: list[AgentTool] = []
    for i, tool in enumerate(tools):
        name = tool.name
        if not _TOOL_NAME.fullmatch(name):
            raise BadInput(422, f"tools[{i}].name must be 1 to 64 letters, digits, '_' or '-', "
                           f"got {name[:80]!r}")
        if any(t.name == name for t in out):
            raise BadInput(422, f"tools[{i}].name: {name!r} is given twice")
        parameters = tool.parameters
        if parameters is None:
            parameters = {"type": "object", "properties": {}}
        if not isinstance(parameters, dict) or parameters.get("type") != "object":
            got = json.dumps(parameters)
            raise BadInput(422, f"tools[{i}].parameters must be the JSON Schema of an object "
                           f'({{"type": "object", ...}}), got {got[:80]}')
        try:
            out.append(AgentTool(name, tool.description, parameters, _left_for_the_client))
        except ValueError as exc:  # not a valid JSON Schema (the message says why)
            reason = str(exc).removeprefix("'parameters' ")
            raise BadInput(422, f"tools[{i}].parameters {reason}") from None
    return out


def _left_for_the_client(tool_call_id: str, args: Any, signal: AbortSignal,
                         on_update: ToolUpdate) -> AgentToolResult:
    """A client tool's `execute`: the call is the client's to run, its result comes later."""
    raise CallLeftOpen(tool_call_id)
