"""API keys: which environment variable holds a provider's key, and the key a request sends.

Keys come from the environment, read at call time. `get_env_api_key` knows each provider's
variable (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, `GEMINI_API_KEY`, ...) and falls back to
`<PROVIDER>_API_KEY` for providers it does not know. Local servers (Ollama, vLLM, llama.cpp,
LM Studio, or any base URL on a loopback host) need no key: `require_api_key` hands back the
placeholder `"none"` for them, which such servers accept. Bedrock and Vertex AI without a key
fall back to their clouds' credentials (`_clouds`). Key values never appear in messages.
`models` re-exports the public names.
"""

from __future__ import annotations

import ipaddress
import os
import re
from urllib.parse import urlsplit

from .._core import MissingApiKeyError

__all__ = [
    "check_str",
    "env_var_for",
    "get_env_api_key",
    "is_placeholder_key",
    "require_api_key",
]

_ENV_VARS: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    # An OAuth token outranks the API key, as in the reference (§10).
    "anthropic": ("ANTHROPIC_OAUTH_TOKEN", "ANTHROPIC_API_KEY"),
    "google": ("GEMINI_API_KEY",),
    "google-vertex": ("GOOGLE_CLOUD_API_KEY",),
    "azure-openai": ("AZURE_OPENAI_API_KEY",),
    "azure-openai-responses": ("AZURE_OPENAI_API_KEY",),  # the reference's name for it
    "amazon-bedrock": ("AWS_BEARER_TOKEN_BEDROCK",),  # else AWS credentials (`_aws`)
    "github-copilot": ("COPILOT_GITHUB_TOKEN",),
    "huggingface": ("HF_TOKEN",),
    "vercel-ai-gateway": ("AI_GATEWAY_API_KEY",),
    "moonshotai": ("MOONSHOT_API_KEY",),
    "kimi-coding": ("KIMI_API_KEY",),
    "opencode-go": ("OPENCODE_API_KEY",),
}
"""Variables read for a provider, in order. Providers not listed use `<PROVIDER>_API_KEY`
(openrouter, groq, xai, deepseek, cerebras, mistral, zai, ... all fit that rule)."""

_PREFERRED_VAR = {"anthropic": "ANTHROPIC_API_KEY"}
"""The variable to tell users about, where it is not the first one read."""

_LOCAL_PROVIDERS = frozenset({"ollama", "vllm", "llama.cpp", "llamacpp", "lmstudio", "lm-studio"})
"""Providers that run on the user's machine and need no key (an optional variable may hold one)."""

_NO_KEY = "none"
"""The key `require_api_key` returns for local servers, which accept any bearer token."""


def env_var_for(provider: str) -> str | None:
    """Return the environment variable that holds `provider`'s API key, to tell users.

    Args:
        provider: Any provider name; unknown ones follow the `<PROVIDER>_API_KEY` rule
            (upper-cased, every non-alphanumeric character replaced by `_`).

    Returns:
        The variable name, or None for local providers such as `"ollama"` that need no key.
    """
    check_str("env_var_for", "provider", provider)
    if provider in _LOCAL_PROVIDERS:
        return None
    return _PREFERRED_VAR.get(provider) or _env_vars(provider)[0]


def get_env_api_key(provider: str) -> str | None:
    """Return `provider`'s API key from the environment, read now.

    Variables are tried in order (for `"anthropic"`: `ANTHROPIC_OAUTH_TOKEN`, then
    `ANTHROPIC_API_KEY`); a variable set to an empty or blank string counts as unset. Local
    providers such as `"ollama"` return `OLLAMA_API_KEY` when it is set, else None.

    Args:
        provider: Any provider name; unknown ones use `<PROVIDER>_API_KEY`.

    Returns:
        The key, or None when none of the provider's variables is set.
    """
    check_str("get_env_api_key", "provider", provider)
    for name in _env_vars(provider):
        value = os.environ.get(name, "")
        if value.strip():
            return value
    return None


def require_api_key(
    provider: str, api_key: str | None = None, *, base_url: str | None = None
) -> str:
    """Return the API key to send: the one given, else the environment's, else fail.

    Local servers need no key: for a local provider (`"ollama"`, `"vllm"`, `"llama.cpp"`,
    `"lmstudio"`) or a `base_url` on a loopback host (`localhost`, `127.0.0.1`, `[::1]`), the
    placeholder `"none"` is returned when no key was given or set. `"amazon-bedrock"` without
    a Bedrock API key (`AWS_BEARER_TOKEN_BEDROCK`) takes AWS credentials from botocore's chain
    (environment, profiles, SSO, roles): the access key id is returned (the secret stays with
    botocore), and a missing botocore raises `ImportError` naming the `bedrock` extra.
    `"google-vertex"` without an express-mode key (`GOOGLE_CLOUD_API_KEY`) takes Application
    Default Credentials: they and a project are looked up (no token is asked for) and
    `"<authenticated>"` is returned, the access token being fetched for each stream; a missing
    google-auth raises `ImportError` naming the `vertex` extra.

    Args:
        provider: The model's provider, which picks the environment variable.
        api_key: An explicit key; wins over the environment. An empty string counts as absent.
        base_url: The model's base URL, used only to recognise local servers (empty: one
            found in the environment at request time, as Azure's catalogue rows have).

    Returns:
        The key to send (never logged by agentcore).

    Raises:
        MissingApiKeyError: No key was given or found; the message names the variable to set
            and never contains a key.
        ImportError: `"amazon-bedrock"` without a key needs botocore, or `"google-vertex"`
            without a key needs google-auth, and it is missing.
    """
    check_str("require_api_key", "provider", provider)
    if api_key is not None and not isinstance(api_key, str):
        # Name the type only: the value may be a secret.
        raise TypeError(f"require_api_key: 'api_key' must be a str or None, got {type(api_key)!r}")
    if base_url is not None and not isinstance(base_url, str):
        raise TypeError(f"require_api_key: 'base_url' must be a str or None, got {base_url!r}")
    if api_key:
        return api_key
    found = get_env_api_key(provider)
    if found is not None:
        return found
    if provider == "amazon-bedrock":  # no Bedrock API key: AWS credentials will do
        from ._clouds import aws

        return aws.require_credentials()
    if provider == "google-vertex":  # no express-mode key: Application Default Credentials
        from ._clouds import gcp

        return gcp.require_credentials()
    if provider in _LOCAL_PROVIDERS or (base_url is not None and _is_loopback(base_url)):
        return _NO_KEY
    variables = _env_vars(provider)
    hint = env_var_for(provider) or variables[0]
    others = [name for name in variables if name != hint]
    also = f" (or {', '.join(others)})" if others else ""
    raise MissingApiKeyError(
        f"no API key for provider {provider!r}: set {hint}{also} or pass api_key"
    )


def is_placeholder_key(api_key: str) -> bool:
    """Whether `api_key` is the placeholder `require_api_key` gives local servers (no secret)."""
    return api_key == _NO_KEY


def _env_vars(provider: str) -> tuple[str, ...]:
    known = _ENV_VARS.get(provider)
    if known is not None:
        return known
    return (re.sub(r"[^A-Za-z0-9]", "_", provider).upper() + "_API_KEY",)


def _is_loopback(base_url: str) -> bool:
    try:
        host = urlsplit(base_url).hostname
    except ValueError:
        return False
    if not host:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified


def check_str(func: str, name: str, value: object) -> None:
    """Raise a `TypeError` or `ValueError` naming `func` and `name` unless `value` is a str."""
    if not isinstance(value, str):
        raise TypeError(f"{func}: {name!r} must be a str, got {value!r}")
    if not value:
        raise ValueError(f"{func}: {name!r} must not be empty")
