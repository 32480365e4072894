"""Azure OpenAI: where a deployment lives, how to authenticate, and its content filter in words.

Provider `"azure-openai"` speaks both OpenAI wire APIs against Azure's v1 endpoint,
`https://{resource}.openai.azure.com/openai/v1` (`/chat/completions`, `/responses`; no
`api-version`), with `model.id` the deployment's name. A model whose `base_url` is empty (the
catalogue's rows) finds its endpoint in the environment when a request is made:
`AZURE_OPENAI_ENDPOINT` (`https://x.openai.azure.com`, with or without `/openai/v1`, or a
`*.cognitiveservices.azure.com` / `*.services.ai.azure.com` endpoint), else
`AZURE_OPENAI_RESOURCE_NAME`. A `base_url` of one's own wins: on an Azure host it gets
`/openai/v1` when it has no path; any other (a gateway, a test server) is used as given.

The credential is an API key (`AZURE_OPENAI_API_KEY`), sent as `api-key`, or a Microsoft
Entra ID access token (what `get_api_key` may return, e.g. from azure-identity's bearer token
provider), sent as `Authorization: Bearer`. The two are told apart by their shape: an Entra
token is a JWT (three base64url segments joined by dots, the first starting `eyJ`); an Azure
key never is.

Azure's content filter reports categories (`hate`, `sexual`, `violence`, `self_harm` with a
severity; `jailbreak`, `protected_material_text`, ... detected or not); `filter_text` turns
them into `"content filtered by Azure (hate: high; jailbreak: detected)"`.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from ..._core import MissingApiKeyError, Model

__all__ = [
    "AZURE_PROVIDER",
    "azure_base_url",
    "azure_headers",
    "filter_results",
    "filter_text",
    "is_azure",
    "is_azure_host",
    "is_entra_token",
]

AZURE_PROVIDER = "azure-openai"
ENDPOINT_VAR = "AZURE_OPENAI_ENDPOINT"
RESOURCE_VAR = "AZURE_OPENAI_RESOURCE_NAME"
_V1_PATH = "/openai/v1"
_AZURE_HOSTS = (".openai.azure.com", ".cognitiveservices.azure.com", ".services.ai.azure.com")
_RESOURCE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,62}")
_JWT = re.compile(r"eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*")


@functools.lru_cache(maxsize=64)  # asked on every request of a model: no URL parse each time
def is_azure_host(url: str) -> bool:
    """Whether `url` is on a host of Azure's OpenAI service (any of its endpoint domains)."""
    try:
        host = (urlsplit(url).hostname or "").lower()
    except ValueError:
        return False
    return host.endswith(_AZURE_HOSTS)


def is_azure(model: Model) -> bool:
    """Whether `model` is served by Azure OpenAI: its provider, or its base URL's host, says so."""
    return model.provider == AZURE_PROVIDER or is_azure_host(model.base_url)


def is_entra_token(credential: str) -> bool:
    """Whether `credential` is a Microsoft Entra ID access token (a JWT) rather than an API key."""
    return _JWT.fullmatch(credential) is not None


def azure_headers(model: Model, credential: str) -> dict[str, str]:
    """The credential's header: `Authorization: Bearer` for an Entra token, else `api-key`."""
    if is_entra_token(credential):
        return {"Authorization": f"Bearer {credential}"}
    return {"api-key": credential}


def _v1(url: str, where: str) -> str:
    """An endpoint as the v1 API's base URL: scheme and host, then `/openai/v1`.

    A path under `/openai` (an older deployment URL, say) becomes `/openai/v1`; a path that
    holds `/openai/v1` ends there; the query is dropped.
    """
    try:
        parts = urlsplit(url.strip())
        host = parts.hostname
    except ValueError:
        parts, host = None, None
    if parts is None or parts.scheme not in ("https", "http") or not host:
        raise ValueError(f"{where} must be an endpoint URL such as "
                         f"'https://<resource>.openai.azure.com', got {url!r}")
    path = parts.path.rstrip("/")
    if _V1_PATH in path:
        path = path[: path.index(_V1_PATH) + len(_V1_PATH)]
    elif path in ("", "/openai") or path.startswith("/openai/"):
        path = _V1_PATH
    return f"{parts.scheme}://{parts.netloc}{path}"


def azure_base_url(model: Model) -> str:
    """The v1 base URL `model`'s requests go to, from its `base_url` or the environment.

    Raises:
        MissingApiKeyError: `base_url` is empty and neither variable is set; the message names
            both.
        ValueError: A variable (or an Azure `base_url`) that is no endpoint; the message names it.
    """
    if model.base_url:
        if is_azure_host(model.base_url):
            return _v1(model.base_url, f"the base_url of model {model.id!r}")
        return model.base_url.rstrip("/")
    endpoint = os.environ.get(ENDPOINT_VAR, "").strip()
    if endpoint:
        return _v1(endpoint, ENDPOINT_VAR)
    resource = os.environ.get(RESOURCE_VAR, "").strip()
    if resource:
        if not _RESOURCE_NAME.fullmatch(resource):
            raise ValueError(f"{RESOURCE_VAR} must be a resource name (the 'x' of "
                             f"https://x.openai.azure.com), got {resource!r}; set "
                             f"{ENDPOINT_VAR} for a full URL")
        return f"https://{resource}.openai.azure.com{_V1_PATH}"
    raise MissingApiKeyError(
        f"no endpoint for provider {model.provider!r} (model {model.id!r}): set {ENDPOINT_VAR} "
        f"(https://<resource>.openai.azure.com) or {RESOURCE_VAR}, or give the model a base_url"
    )


def _category(name: str, result: Any) -> str | None:
    """One category's words when it filtered (or, with `detected`, when it was detected)."""
    if not isinstance(result, dict) or not (result.get("filtered") or result.get("detected")):
        return None
    severity = result.get("severity")
    if isinstance(severity, str) and severity != "safe":
        return f"{name}: {severity}"
    if result.get("detected"):
        return f"{name}: detected"
    details = [str(d["id"]) for d in result.get("details") or () if isinstance(d, dict)
               and d.get("filtered") and isinstance(d.get("id"), str)]
    return f"{name}: {', '.join(details)}" if details else name


def _categories(results: Iterable[Any]) -> list[str]:
    """Every filtered category of some `content_filter_result(s)` dicts, each named once.

    Categories that filtered come first; those only detected follow when none filtered.
    """
    filtered: list[str] = []
    detected: list[str] = []
    for result in results:
        if not isinstance(result, dict):
            continue
        for name, value in result.items():
            words = _category(name, value)
            if words is None:
                continue
            target = filtered if value.get("filtered") else detected
            if words not in target:
                target.append(words)
    return filtered or detected


def filter_results(payload: Any) -> list[Any]:
    """The content filter results inside an error, a choice or a response, wherever Azure puts them.

    `innererror.content_filter_result` (an HTTP 400 from Chat Completions),
    `content_filter_results` (a choice), `content_filters[].content_filter_results` (Responses,
    preferring the entries that `blocked`).
    """
    if not isinstance(payload, dict):
        return []
    found: list[Any] = []
    inner = payload.get("innererror")
    if isinstance(inner, dict):
        found += [inner.get("content_filter_result"), inner.get("content_filter_results")]
    found.append(payload.get("content_filter_results"))
    filters = [f for f in payload.get("content_filters") or () if isinstance(f, dict)]
    blocked = [f for f in filters if f.get("blocked")] or filters
    found += [f.get("content_filter_results") for f in blocked]
    return [result for result in found if isinstance(result, dict)]


def filter_text(payload: Any) -> str | None:
    """`"content filtered by Azure (hate: high; jailbreak: detected)"` for what `payload` holds.

    None when it names no category (another server's `content_filter`, say).
    """
    categories = _categories(filter_results(payload))
    if not categories:
        return None
    return f"content filtered by Azure ({'; '.join(categories)})"
