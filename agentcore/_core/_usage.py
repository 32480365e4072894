"""Token usage and its price."""

from __future__ import annotations

from typing import Any

import attrs
from attrs.validators import and_

from ._validators import count, instance_of, not_bool

__all__ = ["Cost", "Usage"]

_checked_money: Any = and_(not_bool, instance_of(int, float, expected="a number"))


def _money(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """Attrs validator: an `int` or `float`, not a bool.

    A plain int or float passes at once (every usage a reply records builds one `Cost` and one
    `Usage`, and attrs' composed validators cost a call each per field); anything else is
    checked, and refused, by the composed validators with their own errors.
    """
    kind = type(value)
    if kind is not float and kind is not int:
        _checked_money(instance, attribute, value)


def _count(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """Attrs validator `count` (a non-negative int, not a bool), the common case at once."""
    if type(value) is not int or value < 0:
        count(instance, attribute, value)


@attrs.frozen
class Cost:
    """What a request cost in USD, split like `Usage`."""

    input: float = attrs.field(default=0.0, validator=_money)
    output: float = attrs.field(default=0.0, validator=_money)
    cache_read: float = attrs.field(default=0.0, validator=_money)
    cache_write: float = attrs.field(default=0.0, validator=_money)
    total: float = attrs.field(default=0.0, validator=_money)

    def __add__(self, other: Cost) -> Cost:
        if not isinstance(other, Cost):
            return NotImplemented
        return Cost(
            self.input + other.input,
            self.output + other.output,
            self.cache_read + other.cache_read,
            self.cache_write + other.cache_write,
            self.total + other.total,
        )


@attrs.frozen
class Usage:
    """Tokens one request used; `input` excludes cached prompt tokens.

    `total_tokens` is `input + output + cache_read + cache_write`. Adding two `Usage` values
    adds them field by field, so `sum(usages, Usage())` totals a run.
    """

    input: int = attrs.field(default=0, validator=_count)
    output: int = attrs.field(default=0, validator=_count)
    cache_read: int = attrs.field(default=0, validator=_count)
    cache_write: int = attrs.field(default=0, validator=_count)
    total_tokens: int = attrs.field(default=0, validator=_count)
    cost: Cost = attrs.field(default=Cost(), validator=instance_of(Cost))  # frozen: shareable

    def __add__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage(
            self.input + other.input,
            self.output + other.output,
            self.cache_read + other.cache_read,
            self.cache_write + other.cache_write,
            self.total_tokens + other.total_tokens,
            self.cost + other.cost,
        )

    def __radd__(self, other: object) -> Usage:
        if other == 0:  # so that the builtin sum() works without a start value
            return self
        return NotImplemented
