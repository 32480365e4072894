"""Reading a `POST /api/chat` body: a `useChat` request → what the agent is asked to do.

The AI SDK's `DefaultChatTransport` posts `{id, messages, trigger, messageId, ...}`: the chat id
and the whole conversation as UI messages (`{id, role, parts}`). The chat id is the thread id.
The server keeps each thread's transcript itself, so only the end of `messages` is read:

- trailing user messages are the prompt: their text parts, and image file parts given as base64
  `data:` URLs (`data-*` parts belong to the application and are skipped);
- a last assistant message whose last step holds tool parts in state `approval-responded`
  (`addToolApprovalResponse`, with `sendAutomaticallyWhen:
  lastAssistantMessageIsCompleteWithApprovalResponses`) resumes the run paused for them,
  approving or denying each call (the approval id is the call id; a denial's `reason` is kept).

Everything before is checked for shape only. `messageId` and an application's own fields are
ignored; `trigger: "regenerate-message"` is refused, since the server's transcript already holds
the reply it would replace (so is any other trigger but `submit-message`). Every problem is a
`BadInput` naming the field.
"""

from __future__ import annotations

import json
import uuid
from typing import Any, TypeGuard

import attrs

from .._core import ImageContent, TextContent, UserMessage
from ._body import BadInput, load_json
from ._input import MAX_ID_CHARS, RunRequest

__all__ = ["ChatRequest", "parse_chat_request"]

_ROLES = ("user", "assistant", "system")
_SUPPORTED = "text, and images given as base64 data: URLs, are"


@attrs.frozen
class ChatRequest:
    """What one `POST /api/chat` asks for, and the id of the assistant message it streams."""

    run: RunRequest
    message_id: str


def _invalid(problem: str) -> BadInput:
    return BadInput(422, f"invalid chat request: {problem}")


def _is_id(value: object) -> TypeGuard[str]:
    return (isinstance(value, str) and bool(value.strip()) and len(value) <= MAX_ID_CHARS
            and value.isprintable())


def parse_chat_request(body: bytes) -> ChatRequest:
    """Read a request body; raise `BadInput` (400 not JSON or too deep, 422 not runnable)."""
    data = load_json(body)
    if not isinstance(data, dict):
        raise _invalid(f"the body must be a JSON object, got {type(data).__name__}")
    chat_id = data.get("id")
    if not _is_id(chat_id):
        raise _invalid(f"id must be 1 to {MAX_ID_CHARS} printable characters, got "
                       f"{str(chat_id)[:40]!r}")
    trigger = data.get("trigger", "submit-message")
    if trigger == "regenerate-message":
        raise _invalid("trigger 'regenerate-message' is not supported: the server keeps the "
                       "conversation, and its reply stays in it; send a new message instead")
    if trigger != "submit-message":
        raise _invalid(f"trigger must be 'submit-message', got {trigger!r}")
    messages = data.get("messages")
    if not isinstance(messages, list) or not messages:
        raise _invalid("messages must be a non-empty list of UI messages")
    for i, message in enumerate(messages):
        _check_message(message, i)
    run_id = uuid.uuid4().hex
    last = len(messages) - 1
    if messages[last]["role"] == "assistant":
        approvals = _approvals(messages[last], last)
        return ChatRequest(RunRequest(chat_id, run_id, [], approvals), messages[last]["id"])
    if messages[last]["role"] != "user":
        raise BadInput(422, "nothing to run: the last of 'messages' must be a user message, or "
                       "an assistant message answering tool approvals")
    return ChatRequest(RunRequest(chat_id, run_id, _prompt(messages), None), run_id)


def _check_message(message: object, i: int) -> None:
    """The shape every UI message has: an id, a role, and parts that each have a type."""
    if not isinstance(message, dict):
        raise _invalid(f"messages[{i}] must be an object, got {type(message).__name__}")
    if not _is_id(message.get("id")):
        raise _invalid(f"messages[{i}].id must be 1 to {MAX_ID_CHARS} printable characters")
    if message.get("role") not in _ROLES:
        raise _invalid(f"messages[{i}].role must be 'user', 'assistant' or 'system', got "
                       f"{message.get('role')!r}")
    parts = message.get("parts")
    if not isinstance(parts, list):
        raise _invalid(f"messages[{i}].parts must be a list")
    for j, part in enumerate(parts):
        if not isinstance(part, dict) or not isinstance(part.get("type"), str):
            raise _invalid(f"messages[{i}].parts[{j}] must be an object with a string 'type'")


def _prompt(messages: list[Any]) -> list[UserMessage]:
    """The trailing user messages, as agentcore `UserMessage`s (empty ones left out)."""
    start = len(messages)
    while start and messages[start - 1]["role"] == "user":
        start -= 1
    prompt = []
    for i in range(start, len(messages)):
        blocks = [block for j, part in enumerate(messages[i]["parts"])
                  if (block := _block(part, f"messages[{i}].parts[{j}]")) is not None]
        if any(isinstance(b, ImageContent) or b.text.strip() for b in blocks):
            first = blocks[0]
            only_text = len(blocks) == 1 and isinstance(first, TextContent)
            prompt.append(UserMessage(first.text if isinstance(first, TextContent) and only_text
                                      else blocks))
    if not prompt:
        raise BadInput(422, f"nothing to run: messages[{len(messages) - 1}].parts hold no text "
                       "or image")
    return prompt


def _block(part: dict[str, Any], where: str) -> TextContent | ImageContent | None:
    """A user message part as a content block; None for the application's `data-*` parts."""
    kind = part["type"]
    if kind == "text":
        if not isinstance(part.get("text"), str):
            raise _invalid(f"{where}.text must be a string")
        return TextContent(part["text"])
    if kind.startswith("data-"):
        return None
    if kind != "file":
        raise BadInput(422, f"{where}: a {kind!r} part is not supported in a user message "
                       f"({_SUPPORTED})")
    media, url = part.get("mediaType"), part.get("url")
    if not isinstance(media, str) or not isinstance(url, str):
        raise _invalid(f"{where}: a file part needs a string 'mediaType' and 'url'")
    header, comma, data = url.partition(",")
    params = header.split(";")
    if not media.startswith("image/") or not url.startswith("data:") or not comma or (
            params[-1] != "base64"):
        what = "a file part" + (f" of type {media!r}" if not media.startswith("image/") else
                                " not given as a base64 data: URL")
        raise BadInput(422, f"{where}: {what} is not supported ({_SUPPORTED})")
    return ImageContent(data, media)


def _approvals(message: dict[str, Any], i: int) -> dict[str, bool | str]:
    """The approval answers in the last step of the assistant message `i`, by call id."""
    parts = message["parts"]
    step = max((j for j, part in enumerate(parts) if part["type"] == "step-start"), default=-1)
    approvals: dict[str, bool | str] = {}
    for j in range(step + 1, len(parts)):
        part = parts[j]
        kind = part["type"]
        if not (kind.startswith("tool-") or kind == "dynamic-tool") or (
                part.get("state") != "approval-responded"):
            continue
        call_id, approval = part.get("toolCallId"), part.get("approval")
        where = f"messages[{i}].parts[{j}]"
        if not isinstance(call_id, str):
            raise _invalid(f"{where}.toolCallId must be a string")
        reason = approval.get("reason") if isinstance(approval, dict) else None
        if not isinstance(approval, dict) or not isinstance(approval.get("approved"), bool) or (
                reason is not None and not isinstance(reason, str)):
            raise _invalid(f"{where}.approval: expected {{\"id\", \"approved\": bool, "
                           f"\"reason\"?: str}}, got {json.dumps(approval)[:80]}")
        if call_id in approvals:
            raise _invalid(f"{where}.toolCallId: {call_id!r} is answered twice")
        approvals[call_id] = True if approval["approved"] else (reason or False)
    if not approvals:
        raise BadInput(422, "nothing to run: the last of 'messages' must be a user message, or "
                       f"an assistant message answering tool approvals (messages[{i}] answers "
                       "none in its last step)")
    return approvals
