"""What the two OpenAI APIs share: server quirks, model abilities, error text, Azure's wire.

How OpenAI-compatible servers differ is detected here from the provider and the base URL, once
per server, and `Model.compat` overrides any of it (see `_compat`): `{"supports_developer_role":
False, "max_tokens_field": "max_tokens"}`, or camelCase as the reference writes the keys.

Errors follow the official SDK's messages, so that overflow and retry patterns written for it
keep matching: `"<status> <error.message>"` for an HTTP error, the bare message for an error
inside the stream. An Azure content-filter error names the categories that filtered first
(`"400 content filtered by Azure (hate: high; jailbreak: detected): <message>"`).

Mistral's API (and a Mistral model on vLLM) takes only tool-call ids of exactly 9 letters and
digits: `compat.tool_call_id_format == "mistral"` rewrites every other id in a request with
`mistral_ids`, the same id for a call and its result, and leaves ids of that form (Mistral's
own) as they are.
"""

from __future__ import annotations

import hashlib
import json
import re
import string
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

import attrs

from .._core import AssistantMessage, Message, Model, StreamOptions
from .._http import HttpError
from ._clouds import azure_base_url, azure_headers, filter_text, is_azure, is_azure_host
from ._wire import (
    Compat,
    NormalizeId,
    WireApi,
    api_key_for,
    cached,
    frozen,
    http_status_text,
    message_text,
    resolve,
)

__all__ = [
    "azure_wire",
    "error_text",
    "http_error_text",
    "is_openai",
    "loads_or_none",
    "mistral_ids",
    "resolve_compat",
]

_NON_STANDARD_PROVIDERS = {"cerebras", "xai", "opencode", "zai", "nvidia", "together", "moonshot"}
_NON_STANDARD_HOSTS = ("cerebras.ai", "api.x.ai", "chutes.ai", "deepseek.com", "api.z.ai",
                       "opencode.ai", "together.xyz", "moonshot", "nvidia.com")
_MISTRAL = {
    # Mistral answers a field it does not know with a 422, a user message right after tool
    # results with a 400, and a tool-call id that is not 9 letters and digits with a 400.
    "supports_store": False,
    "supports_developer_role": False,
    "supports_usage_in_streaming": False,  # usage comes in the last chunk anyway
    "requires_assistant_after_tool_result": True,
    "tool_call_id_format": "mistral",
}
_NO_REASONING_EFFORT = {"xai", "zai", "moonshot", "together", "ollama"}
_REQUIRED_PROVIDERS = {"openai", "openrouter", "groq", "xai", "deepseek", "mistral"}
_REQUIRED_HOSTS = ("openrouter.ai", "api.groq.com", "api.x.ai", "deepseek.com",
                   "api.mistral.ai")
"""Where `tool_choice: "required"` is known to be taken: the providers that document it (and
their hosts). Others may answer it badly (llama-cpp-python's chatml handler with an empty 200)
or ignore it (Ollama), and get what they do take instead (`_choice.tool_choice`)."""


def is_openai(base_url: str) -> bool:
    """Whether `base_url` is OpenAI's own API (or Azure's OpenAI service), not a look-alike."""
    try:
        host = urlsplit(base_url).hostname or ""
    except ValueError:
        return False
    return host == "api.openai.com" or is_azure_host(base_url)


def _detected(model: Model) -> dict[str, Any]:
    """What the server behind `model.base_url` is known to need, said once per server."""
    url = model.base_url.lower()
    provider = model.provider
    non_standard = provider in _NON_STANDARD_PROVIDERS or any(h in url for h in _NON_STANDARD_HOSTS)
    openai = is_openai(model.base_url) or is_azure(model)  # Azure's URL may come from the env
    detected: dict[str, Any] = {
        "supports_store": not non_standard,
        "supports_developer_role": not non_standard and provider != "ollama",
        "supports_reasoning_effort": provider not in _NO_REASONING_EFFORT
        and "api.x.ai" not in url and "api.z.ai" not in url,
        # Other servers (llama.cpp, vLLM, Ollama, LM Studio...) ignore max_completion_tokens,
        # and llama-cpp-python's answers an assistant `content: null` with a 500.
        "max_tokens_field": "max_completion_tokens" if openai else "max_tokens",
        "supports_null_content": openai,
        "supports_required_tool_choice": openai or provider in _REQUIRED_PROVIDERS
        or any(host in url for host in _REQUIRED_HOSTS),
    }
    if provider == "zai" or "api.z.ai" in url:
        detected["thinking_format"] = "zai"
    elif provider == "deepseek" or "deepseek.com" in url:
        detected["thinking_format"] = "deepseek"
    elif "openrouter.ai" in url:
        detected["thinking_format"] = "openrouter"
        # OpenRouter passes the developer role on to OpenAI's and Anthropic's models only:
        # their catalogue rows turn it back on.
        detected["supports_developer_role"] = False
    if provider == "mistral" or "api.mistral.ai" in url:  # also behind a gateway of one's own
        detected.update(_MISTRAL)
    return detected


def resolve_compat(model: Model) -> Compat:
    """An `openai-completions` model's `Compat`: detected from its server, then its `compat`.

    What is detected depends on the provider and the base URL only: the result is kept for
    them and the `compat` dict (`_compat.cached`), and each request reads it.
    """
    return cached(("openai", model.provider, model.base_url, frozen(model.compat)),
                  lambda: resolve(model, _detected(model)))


def loads_or_none(text: str) -> Any:
    """Parsed JSON, or None when `text` is not JSON."""
    try:
        return json.loads(text)
    except ValueError:
        return None


def error_text(error: Any) -> str:
    """`error.message`, or JSON when it is empty or not a string (`_reply.message_text`).

    OpenRouter's `metadata.raw` (the upstream provider's own text) is appended on a new line.
    """
    if not isinstance(error, dict):
        return str(error)
    text = message_text(error.get("message"), error)
    words = filter_text(error) if error.get("code") == "content_filter" else None
    if words:
        text = f"{words}: {text}"
    metadata = error.get("metadata")
    raw = metadata.get("raw") if isinstance(metadata, dict) else None
    return f"{text}\n{raw}" if raw else text


def _payload_text(payload: Any) -> str | None:
    if isinstance(payload, dict) and "error" in payload:
        return error_text(payload["error"])
    if isinstance(payload, dict) and isinstance(payload.get("message"), str):
        return message_text(payload["message"], payload)
    if isinstance(payload, dict) and isinstance(payload.get("message"), dict):
        return _detail_text(payload["message"].get("detail"))
    return None


def _detail_text(detail: Any) -> str | None:
    """Pydantic's validation errors as Mistral's 422 carries them, one `loc: msg` each.

    E.g. `body.store: Extra inputs are not permitted`.
    """
    if not isinstance(detail, list):
        return None
    parts = [f"{'.'.join(str(p) for p in d.get('loc') or ())}: {d.get('msg')}"
             for d in detail if isinstance(d, dict)]
    return "; ".join(parts) or None


def http_error_text(error: HttpError) -> str:
    """`"<status> <message>"` for a non-2xx answer."""
    return http_status_text(error, _payload_text)


_MISTRAL_ID = re.compile(r"[A-Za-z0-9]{9}")
_BASE62 = string.ascii_letters + string.digits


def _mistral_id(call_id: str, attempt: int) -> str:
    """9 letters and digits from a hash of `call_id` (and the attempt, after a collision)."""
    digest = hashlib.sha256(f"{call_id}\x00{attempt}".encode("utf-8", "surrogatepass")).digest()
    n = int.from_bytes(digest, "big")
    out = []
    for _ in range(9):
        n, r = divmod(n, 62)
        out.append(_BASE62[r])
    return "".join(out)


def mistral_ids(messages: Sequence[Message]) -> NormalizeId:
    """A `normalize_id` for `transform_messages`: every tool-call id as 9 letters and digits.

    An id of that form (Mistral's own) is kept; any other becomes a hash of it, so the same
    transcript always gives the same request. Within the conversation no two calls share an
    id: a hash that meets an id kept or given already is taken again with a counter, and an id
    repeated by another turn (some servers number calls per reply) gets a new one. The caller
    renames each call's result with its call.
    """
    taken = {call.id for message in messages if isinstance(message, AssistantMessage)
             for call in message.tool_calls if _MISTRAL_ID.fullmatch(call.id)}
    given: dict[tuple[int, str], str] = {}

    def normalize(call_id: str, message: AssistantMessage) -> str:
        if _MISTRAL_ID.fullmatch(call_id):
            return call_id
        key = (id(message), call_id)
        new_id = given.get(key)
        if new_id is None:
            attempt = 0
            new_id = _mistral_id(call_id, attempt)
            while new_id in taken:
                attempt += 1
                new_id = _mistral_id(call_id, attempt)
            taken.add(new_id)
            given[key] = new_id
        return new_id

    return normalize


def _azure_credential(model: Model, options: StreamOptions) -> str:
    """The key or token, then the endpoint checked: both missing pieces raise before a request."""
    credential = api_key_for(model, options)
    azure_base_url(model)
    return credential


def azure_wire(wire: WireApi, path: str) -> WireApi:
    """`wire` (an OpenAI API) sent to Azure: the v1 URL plus `path`, Azure's credential header."""

    def url(model: Model) -> str:
        return azure_base_url(model) + path

    return attrs.evolve(wire, url=url, headers=azure_headers, api_key=_azure_credential)
