"""Placeholder replaced by the serialization module."""

from __future__ import annotations

from typing import Any


def to_dict(obj: Any) -> dict[str, Any]:
    """Placeholder."""
    raise NotImplementedError


def from_dict(cls: Any, data: Any) -> Any:
    """Placeholder."""
    raise NotImplementedError


def to_json(obj: Any) -> str:
    """Placeholder."""
    raise NotImplementedError


def from_json(cls: Any, text: str) -> Any:
    """Placeholder."""
    raise NotImplementedError
