"""Model descriptions and pricing."""

from __future__ import annotations

from typing import Any

import attrs
from attrs.validators import and_, ge

from ._usage import Cost, Usage
from ._validators import (
    count,
    instance_of,
    list_of,
    not_bool,
    optional_instance_of,
    secret_headers,
    string,
)

__all__ = ["Model", "ModelCost", "calculate_cost", "is_model", "is_optional_model", "model_hint"]

_str = string
_price: Any = and_(not_bool, instance_of(int, float, expected="a number"), ge(0))


@attrs.frozen
class ModelCost:
    """Prices in USD per million tokens."""

    input: float = attrs.field(default=0.0, validator=_price)
    output: float = attrs.field(default=0.0, validator=_price)
    cache_read: float = attrs.field(default=0.0, validator=_price)
    cache_write: float = attrs.field(default=0.0, validator=_price)


def _input_kinds(_: object, attribute: attrs.Attribute[Any], value: list[str]) -> None:
    if not value or any(kind not in ("text", "image") for kind in value):
        raise ValueError(
            f"'{attribute.name}' must list 'text' and optionally 'image', got {value!r}"
        )


@attrs.frozen
class Model:
    """One model of one provider.

    `api` picks the wire protocol (the registered stream function), `provider` the API-key
    variable, `compat` what the model can do and how its server differs (the providers
    guide's table).
    """

    id: str = attrs.field(validator=_str)
    name: str = attrs.field(validator=_str)
    api: str = attrs.field(validator=_str)
    provider: str = attrs.field(validator=_str)
    base_url: str = attrs.field(validator=_str)
    reasoning: bool = attrs.field(default=False, validator=instance_of(bool))
    input: list[str] = attrs.field(
        factory=lambda: ["text"],
        validator=[list_of(str), _input_kinds],
    )
    cost: ModelCost = attrs.field(factory=ModelCost, validator=instance_of(ModelCost))
    context_window: int = attrs.field(default=128_000, validator=count)
    max_tokens: int = attrs.field(default=16_384, validator=count)
    headers: dict[str, str] | None = attrs.field(default=None, validator=secret_headers,
                                                 repr=False)
    compat: dict[str, Any] | None = attrs.field(default=None,
                                                validator=optional_instance_of(dict))


def model_hint(value: object) -> str | None:
    """For a model given by name (`"openai/gpt-4o-mini"`): how to get the `Model` instead."""
    if isinstance(getattr(value, "model", None), Model):  # a ScriptedModel, say
        return "pass its .model attribute"
    if not isinstance(value, str):
        return None
    for separator in "/:":
        provider, found, model_id = value.partition(separator)
        if found and provider and model_id:
            return f"use agentcore.get_model({provider!r}, {model_id!r})"
    return f"use agentcore.get_model(provider, {value!r}) (agentcore.get_providers() lists them)"


is_model = instance_of(Model, hint=model_hint)
"""Attrs validator: a `Model`; a model's name gets a hint to `get_model`."""
is_optional_model = optional_instance_of(Model, hint=model_hint)
"""Attrs validator: None or a `Model` (see `is_model`)."""


def calculate_cost(model: Model, usage: Usage) -> Usage:
    """Return `usage` with its `cost` priced from `model.cost` (USD per million tokens)."""
    if not isinstance(model, Model):
        raise TypeError(f"calculate_cost: 'model' must be a Model, got {model!r}")
    if not isinstance(usage, Usage):
        raise TypeError(f"calculate_cost: 'usage' must be a Usage, got {usage!r}")
    price = model.cost
    parts = (
        price.input * usage.input / 1e6,
        price.output * usage.output / 1e6,
        price.cache_read * usage.cache_read / 1e6,
        price.cache_write * usage.cache_write / 1e6,
    )
    cost = Cost(*parts, total=sum(parts))
    if usage.__class__ is not Usage:  # a subclass keeps its class
        return attrs.evolve(usage, cost=cost)
    # What `attrs.evolve` makes, without its walk over the fields: a reply prices its usage
    # every time the server reports it.
    return Usage(usage.input, usage.output, usage.cache_read, usage.cache_write,
                 usage.total_tokens, cost)
