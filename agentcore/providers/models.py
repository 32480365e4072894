"""The built-in model catalogue and API-key lookup.

The catalogue is data: `models.json`, shipped next to this module, lists each model's provider,
wire API, base URL, prices (USD per million tokens), context window, output limit and its
`compat` keys: what the model can do (adaptive thinking, its lowest reasoning effort, ...) where
that differs from the defaults (see `_compat`). It is read and validated on the first call that
needs it and then cached (two threads racing on the first call may both read it, harmlessly);
importing agentcore never touches it. Its top-level `_source` field says when and how the prices
were gathered: they drift, so treat them as estimates.

The `azure-openai` rows have an empty `base_url`: the endpoint comes from the environment when a
request is made (`AZURE_OPENAI_ENDPOINT` or `AZURE_OPENAI_RESOURCE_NAME`, see `_clouds`), and
their ids are deployment names (a deployment named after its model).

Every call returns fresh `Model` values and fresh lists, so callers may change what they get (the
`input` list, the `compat` and `headers` dicts) without affecting later calls.

API keys come from the environment, read at call time. `get_env_api_key` knows each provider's
variable (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, `GEMINI_API_KEY`, ...) and falls back to
`<PROVIDER>_API_KEY` for providers it does not know. Local servers (Ollama, vLLM, llama.cpp,
LM Studio, or any base URL on a loopback host) need no key: `require_api_key` hands back the
placeholder `"none"` for them, which such servers accept. Key values never appear in messages.
"""

from __future__ import annotations

import copy
import difflib
import functools
import importlib.resources
import ipaddress
import json
import os
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import attrs

from .._core import MissingApiKeyError, Model, ModelCost, ModelNotFoundError, SerializationError

__all__ = [
    "env_var_for",
    "get_env_api_key",
    "get_model",
    "get_models",
    "get_providers",
    "is_placeholder_key",
    "require_api_key",
]

_PACKAGE = __name__.rpartition(".")[0]
_CATALOGUE_FILE = "models.json"

_Catalogue = Mapping[str, Mapping[str, Model]]
"""Provider -> model id -> Model, in file order."""


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


def get_providers() -> list[str]:
    """Return the providers in the built-in catalogue, sorted.

    Returns:
        A new sorted list of provider names, e.g. `["anthropic", "deepseek", "google", ...]`.
    """
    return sorted(_catalogue())


def get_models(provider: str) -> list[Model]:
    """Return every catalogued model of one provider, in catalogue order.

    Args:
        provider: A provider name from `get_providers()`, e.g. `"openai"`.

    Returns:
        A new list of new `Model` values.

    Raises:
        ModelNotFoundError: The catalogue has no such provider; the message lists the known ones.
    """
    _check_str("get_models", "provider", provider)
    return [_fresh(model) for model in _provider_models(provider, None).values()]


def get_model(provider: str, model_id: str) -> Model:
    """Return one catalogued model.

    Args:
        provider: A provider name from `get_providers()`, e.g. `"anthropic"`.
        model_id: The provider's id for the model, e.g. `"claude-sonnet-4-5"`.

    Returns:
        A new `Model` value; change it freely, or build your own `Model(...)` for models the
        catalogue lacks.

    Raises:
        ModelNotFoundError: No such provider or model; the message names both and suggests
            close ids.
    """
    _check_str("get_model", "provider", provider)
    _check_str("get_model", "model_id", model_id)
    models = _provider_models(provider, model_id)
    model = models.get(model_id)
    if model is None:
        raise ModelNotFoundError(_unknown_model_message(provider, model_id, models))
    return _fresh(model)


def env_var_for(provider: str) -> str | None:
    """Return the environment variable that holds `provider`'s API key, to tell users.

    Args:
        provider: Any provider name; unknown ones follow the `<PROVIDER>_API_KEY` rule
            (upper-cased, every non-alphanumeric character replaced by `_`).

    Returns:
        The variable name, or None for local providers such as `"ollama"` that need no key.
    """
    _check_str("env_var_for", "provider", provider)
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
    _check_str("get_env_api_key", "provider", provider)
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
    _check_str("require_api_key", "provider", provider)
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


def _check_str(func: str, name: str, value: object) -> None:
    if not isinstance(value, str):
        raise TypeError(f"{func}: {name!r} must be a str, got {value!r}")
    if not value:
        raise ValueError(f"{func}: {name!r} must not be empty")


def _provider_models(provider: str, model_id: str | None) -> Mapping[str, Model]:
    catalogue = _catalogue()
    models = catalogue.get(provider)
    if models is None:
        looking_for = f" (looking up model {model_id!r})" if model_id is not None else ""
        known = ", ".join(repr(name) for name in sorted(catalogue))
        raise ModelNotFoundError(
            f"unknown provider {provider!r}{looking_for}: the catalogue knows {known}"
            + _did_you_mean(provider, catalogue)
        )
    return models


def _unknown_model_message(provider: str, model_id: str, models: Mapping[str, Model]) -> str:
    message = f"no model {model_id!r} for provider {provider!r} in the catalogue"
    elsewhere = [name for name, ids in sorted(_catalogue().items()) if model_id in ids]
    if elsewhere:
        message += f" (that id is catalogued for {', '.join(repr(p) for p in elsewhere)})"
    suggestion = _did_you_mean(model_id, models)
    return message + (suggestion or f"; get_models({provider!r}) lists its models")


def _did_you_mean(word: str, choices: Mapping[str, Any]) -> str:
    close = [repr(choice) for choice in difflib.get_close_matches(word, list(choices), n=3)]
    if not close:
        return ""
    options = close[0] if len(close) == 1 else f"{', '.join(close[:-1])} or {close[-1]}"
    return f"; did you mean {options}?"


def _fresh(model: Model) -> Model:
    # Model is frozen, but its list and dicts are not: hand out copies so callers cannot
    # change the cached catalogue.
    return attrs.evolve(
        model,
        input=list(model.input),
        headers=None if model.headers is None else dict(model.headers),
        compat=copy.deepcopy(model.compat),
    )


@functools.cache
def _catalogue() -> _Catalogue:
    return _load()


def _load() -> _Catalogue:
    resource = importlib.resources.files(_PACKAGE).joinpath(_CATALOGUE_FILE)
    try:
        document = json.loads(resource.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SerializationError(f"cannot read the model catalogue {_CATALOGUE_FILE!r}") from exc
    entries = document.get("models") if isinstance(document, dict) else None
    if not isinstance(entries, list):
        raise SerializationError(f"{_CATALOGUE_FILE}: expected an object with a 'models' list")
    catalogue: dict[str, dict[str, Model]] = {}
    for index, entry in enumerate(entries):
        model = _parse_entry(index, entry)
        models = catalogue.setdefault(model.provider, {})
        if model.id in models:
            raise SerializationError(
                f"{_CATALOGUE_FILE}: models[{index}] repeats {model.provider!r}/{model.id!r}"
            )
        models[model.id] = model
    return catalogue


_OPTIONAL = frozenset({"headers", "compat"})
_REQUIRED = frozenset(field.name for field in attrs.fields(Model)) - _OPTIONAL
_COST_KEYS = ("input", "output", "cache_read", "cache_write")


def _parse_entry(index: int, entry: object) -> Model:
    from ._wire import check_compat  # here: `import agentcore` need not build `Compat`

    where = f"{_CATALOGUE_FILE}: models[{index}]"
    if not isinstance(entry, dict):
        raise SerializationError(f"{where}: expected an object, got {entry!r}")
    missing, unknown = _REQUIRED - entry.keys(), entry.keys() - _REQUIRED - _OPTIONAL
    if missing or unknown:
        raise SerializationError(
            f"{where}: missing keys {sorted(missing)!r}, unknown keys {sorted(unknown)!r}"
        )
    cost = entry["cost"]
    if not isinstance(cost, dict) or set(cost) != set(_COST_KEYS):
        raise SerializationError(f"{where}: 'cost' must hold exactly {list(_COST_KEYS)!r}")
    try:
        model = Model(
            id=entry["id"],
            name=entry["name"],
            api=entry["api"],
            provider=entry["provider"],
            base_url=entry["base_url"],
            reasoning=entry["reasoning"],
            input=entry["input"],
            cost=ModelCost(**{key: _price(cost[key]) for key in _COST_KEYS}),
            context_window=entry["context_window"],
            max_tokens=entry["max_tokens"],
            headers=entry.get("headers"),
            compat=entry.get("compat"),
        )
        check_compat(model.compat, f"model {model.id!r}")
    except (TypeError, ValueError) as exc:
        raise SerializationError(f"{where}: {exc}") from exc
    return model


def _price(value: Any) -> Any:
    # JSON writes 10.0 as 10; keep prices floats. Anything else is left for ModelCost to reject.
    return float(value) if type(value) is int else value
