"""What a `--session` names: a SQLite file, a JSON Lines file, or a PostgreSQL database."""

from __future__ import annotations

from typing import Any

__all__ = ["is_postgres_url", "open_session", "shown_store"]


def is_postgres_url(spec: str) -> bool:
    """Whether a `--session` names a PostgreSQL database (a libpq URL) rather than a file."""
    return spec.startswith(("postgresql://", "postgres://"))


def shown_store(spec: str) -> str:
    """A `--session` as it may be shown: a URL's password (and user) left out."""
    if not is_postgres_url(spec):
        return spec
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(spec)
    return urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], parts.path, "", ""))


def open_session(spec: str, session_id: str = "default") -> Any:
    """The session `--session` names: a PostgreSQL URL, a `.jsonl` file, else a SQLite file.

    `session_id` picks the conversation in a database (a JSON Lines file holds one).
    """
    from .. import sessions

    if is_postgres_url(spec):
        return sessions.PostgresSession(spec, session_id)
    return sessions.JsonlSession(spec) if spec.endswith(".jsonl") \
        else sessions.SqliteSession(spec, session_id)
