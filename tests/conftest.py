"""Shared fixtures: every test must leave no thread behind, and gets a fresh faux provider.

`sse_server` gives a test its own local HTTP server (see `tests/sse_server.py`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from sse_server import SSEServer

from agentcore.providers.faux import FauxProvider, register_faux_provider

THREAD_GRACE_S = 2.0


@pytest.fixture(autouse=True)
def no_thread_outlives_the_test() -> Iterator[None]:
    """Fail a test that leaves a thread running (after a short grace for threads ending)."""
    before = set(threading.enumerate())
    yield
    deadline = time.monotonic() + THREAD_GRACE_S
    while True:
        extra = [t for t in threading.enumerate() if t not in before and t.is_alive()]
        if not extra or time.monotonic() > deadline:
            break
        extra[0].join(0.05)
    assert not extra, f"threads outlived the test: {[t.name for t in extra]}"


@pytest.fixture
def faux() -> Iterator[FauxProvider]:
    """A faux provider registered for one test, with one-token chunks for exact event counts."""
    provider = register_faux_provider(token_size=(1, 1))
    yield provider
    provider.unregister()


@pytest.fixture
def sse_server() -> Iterator[SSEServer]:
    """A scripted HTTP server on 127.0.0.1 for one test; closed and joined on teardown."""
    server = SSEServer()
    try:
        yield server
    finally:
        server.close()
    assert not server.errors, f"sse server failed: {server.errors!r}"
