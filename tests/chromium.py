"""Debian's Chromium driven by Playwright, one browser for a test module (the web page's tests,
the docs site's).

`launched(tmp_path_factory, timeout_ms)` is the body of a module fixture: it starts Chromium
from `CHROMIUM` (`executable_path`: no browser download) and yields it, closing it at the end.
Playwright's event loop does blocking work (writing a screenshot, ...) on its default
executor, which starts threads as it needs them: here it is given one thread, started by a
first screenshot, so that no test sees a thread appear that outlives it. A module using it
skips itself when Playwright or Chromium is missing (`skip_without_chromium`).
"""

from __future__ import annotations

import concurrent.futures
import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

__all__ = ["CHROMIUM", "CHROMIUM_ARGS", "launched", "skip_without_chromium"]

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]


def skip_without_chromium(*modules: str) -> None:
    """Skip the calling test module when Playwright, Chromium or one of `modules` is missing.

    Checked with `find_spec`, not imported: collecting the suite stays cheap.
    """
    for module in ("playwright", *modules):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed", allow_module_level=True)
    if not CHROMIUM.exists():
        pytest.skip(f"Debian's chromium is not installed ({CHROMIUM} is missing)",
                    allow_module_level=True)


def launched(tmp_path_factory: pytest.TempPathFactory, timeout_ms: int) -> Iterator[Any]:
    """Chromium for a module's tests; Playwright's expectations wait up to `timeout_ms`."""
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=timeout_ms)
    manager = sync_playwright()
    with manager as playwright:
        manager._loop.set_default_executor(  # the sync API's own loop (no public way to it)
            concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="playwright-io"))
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            context = browser.new_context()
            context.new_page().screenshot(path=str(tmp_path_factory.mktemp("chromium") / "0.png"))
            context.close()
            yield browser
        finally:
            browser.close()
