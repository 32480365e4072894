"""Shared fixtures: every test must leave no thread behind, and gets a fresh faux provider."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

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
