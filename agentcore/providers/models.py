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

API keys come from the environment, read at call time (`env_var_for`, `get_env_api_key`,
`require_api_key`: see `_keys`, whose public names this module exports).
"""

from __future__ import annotations

import copy
import difflib
import functools
import importlib.resources
import json
from collections.abc import Mapping
from typing import Any

import attrs

from .._core import Model, ModelCost, ModelNotFoundError, SerializationError
from ._keys import (
    check_str,
    env_var_for,
    get_env_api_key,
    is_placeholder_key,
    require_api_key,
)

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
    check_str("get_models", "provider", provider)
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
    check_str("get_model", "provider", provider)
    check_str("get_model", "model_id", model_id)
    models = _provider_models(provider, model_id)
    model = models.get(model_id)
    if model is None:
        raise ModelNotFoundError(_unknown_model_message(provider, model_id, models))
    return _fresh(model)


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
