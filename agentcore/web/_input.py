"""Reading a `POST /ag-ui` body: JSON → `RunAgentInput` → what the agent is asked to do.

The server keeps each thread's transcript itself, so of the input's messages it reads only the
trailing user messages (the new prompt; a client may send the whole conversation, as AG-UI
clients do); `resume` answers interrupts, i.e. decides the calls waiting for approval, and then
the messages are not read at all. Every problem is a `BadInput` carrying the HTTP status and a
message that names the field.
"""

from __future__ import annotations

import json
from typing import Any

import ag_ui.core as ag
import attrs
from pydantic import ValidationError

from .._core import ImageContent, TextContent, UserMessage
from ._body import BadInput, load_json

__all__ = ["MAX_ID_CHARS", "BadInput", "RunRequest", "parse_run_input"]

MAX_ID_CHARS = 200
"""The longest `threadId` or `runId` accepted (a thread id also names its session)."""


@attrs.frozen
class RunRequest:
    """What one `POST /ag-ui` asks for: a prompt to run, or approvals to resume with."""

    thread_id: str
    run_id: str
    prompt: list[UserMessage]
    approvals: dict[str, bool | str] | None


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
    if run_input.resume:
        return RunRequest(run_input.thread_id, run_input.run_id, [],
                          _approvals(run_input.resume))
    return RunRequest(run_input.thread_id, run_input.run_id, _prompt(run_input.messages), None)


def _describe(exc: ValidationError) -> str:
    """`field.path: problem` for each error (at most five), with the input's camelCase names."""
    problems = []
    for error in exc.errors()[:5]:
        where = ".".join(str(part) for part in error["loc"]) or "body"
        problems.append(f"{where}: {error['msg']}")
    more = len(exc.errors()) - len(problems)
    return "; ".join(problems) + (f" (and {more} more)" if more > 0 else "")


def _prompt(messages: list[Any]) -> list[UserMessage]:
    """The trailing user messages, as agentcore `UserMessage`s."""
    start = len(messages)
    while start and isinstance(messages[start - 1], ag.UserMessage):
        start -= 1
    if start == len(messages):
        raise BadInput(422, "nothing to run: the last of 'messages' must be a user message "
                       "(or 'resume' must answer the interrupts of the previous run)")
    prompt = [_user_message(messages[i], i) for i in range(start, len(messages))]
    if not any(_has_content(message) for message in prompt):
        raise BadInput(422, f"nothing to run: messages[{len(messages) - 1}].content is empty")
    return prompt


def _user_message(message: ag.UserMessage, index: int) -> UserMessage:
    content = message.content
    if isinstance(content, str):
        return UserMessage(content)
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
    return UserMessage(blocks)


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
