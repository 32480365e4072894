"""A pytest plugin (loaded by the conftest) that keeps `pytest -m "not slow"` fast: a test that
starts a process must be marked `slow`.

A process is a subprocess, a Jupyter kernel, an MCP server over stdio, mypy, a CLI run...:
anything that raises one of `PROCESS_EVENTS` (Python's audit events) from the start of the
test's setup (its module and session fixtures included) to the end of its teardown. Such a
test fails at teardown with the command it ran, until it (or its module) is marked.

Process pools and Dask clusters start their processes through `multiprocessing`, which raises
none of these events: their tests are marked by hand (as are the long stress tests).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest

PROCESS_EVENTS = frozenset({"subprocess.Popen", "os.system", "os.posix_spawn",
                            "os.posix_spawnp", "os.spawn", "os.fork", "os.forkpty"})

_started: list[str] = []  # the processes the running test started, from its setup on


def _note_process(event: str, args: tuple[Any, ...]) -> None:
    """The audit hook: it stays for the whole process, and must never raise."""
    if event in PROCESS_EVENTS:
        _started.append(f"{event} {str(args[:2])[:200]}")


sys.addaudithook(_note_process)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Start recording before any fixture of the test."""
    _started.clear()


@pytest.fixture(autouse=True)
def slow_tests_are_marked(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail a test that started a process without being marked `slow`."""
    yield
    if _started and request.node.get_closest_marker("slow") is None:
        pytest.fail(f"this test starts a process ({_started[0]}): mark it "
                    "@pytest.mark.slow (or its module: pytestmark = pytest.mark.slow)",
                    pytrace=False)
