"""A message as a store keeps it: its role and its JSON, refused when it could not load again."""

from __future__ import annotations

import typing
from collections.abc import Sequence

from .._core import AgentMessage, SerializationError, to_json

__all__ = ["encode"]

_LOADABLE = frozenset(typing.get_args(AgentMessage))
"""The message classes `from_json(AgentMessage, ...)` decodes: agentcore's own kinds."""


def encode(messages: Sequence[AgentMessage]) -> list[tuple[str, str]]:
    """`(role, JSON)` for each message; `SerializationError` for one that would not load.

    An application's own message class serializes, but `from_json(AgentMessage, ...)` knows
    only agentcore's kinds: storing it would leave a session that never loads again.
    """
    for message in messages:
        if type(message) not in _LOADABLE:
            raise SerializationError(
                f"cannot store a {type(message).__name__} (role {message.role!r}) in a "
                "session: its stores load only agentcore's message kinds; keep your own "
                "messages in a Session of your own")
    return [(message.role, to_json(message)) for message in messages]
