"""The integration tests' own fixture: `server`, a chat server (`tests/chat_server.py`).

The batch tests (`test_batch.py`, `test_batch_postgres.py`) send their runs to it.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from chat_server import ChatServer


@pytest.fixture
def server() -> Iterator[ChatServer]:
    """The chat server for one test, closed (and its threads joined) at teardown."""
    server = ChatServer()
    try:
        yield server
    finally:
        server.close()
