"""The documentation site, built and looked at: built with `--strict`, served on 127.0.0.1, read in
headless Chromium (Debian's, through Playwright, as `tests/web/test_browser.py` does).

**Build.** In this process, with MkDocs' own `load_config` and `build` (the CLI's `mkdocs build
--strict`, minus the CLI), into `tmp_path`; every warning MkDocs logs, from loading the config
on, fails the build, and the test names them. The configuration is `mkdocs.yml` with one
change: its nav leaves out the pages that are not in the tree. The guides (`docs/guides/`) are
written on other branches, and a branch without some of them must still build and be looked
at; once every page the nav names exists, the nav is `mkdocs.yml`'s own, unchanged. (A page
missing from the tree is not let through in CI: `.ci/run` builds `mkdocs.yml` itself, strictly.)

**Serve.** The built site from the standard library's `http.server`, on a thread of its own,
on 127.0.0.1 and a free port; shut down and joined at the end of the module.

**Look.** One Chromium for the module, a fresh context (no cache, no storage) for each test.
Every request for anything but the local server is aborted and recorded, and each test
fails if there was one: the site must work offline. A script error on a page fails the test too.

`AGENTCORE_SCREENSHOTS=1` writes `docs/assets/site.png`, the home page with a search for
`run_batch` open (the screenshot the README shows).
"""

from __future__ import annotations

import functools
import http.server
import inspect
import logging
import os
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import paths
import pytest
from chromium import launched, skip_without_chromium

skip_without_chromium("mkdocs", "material", "mkdocstrings")  # the docs extra

import yaml  # noqa: E402  (mkdocs' own dependency)

from agentcore.batch import run_batch  # noqa: E402

pytestmark = pytest.mark.slow  # a browser, and mkdocstrings asks git about the checkout

VIEWPORT = {"width": 1280, "height": 800}
WAIT_MS = 10_000
SCREENSHOT = paths.DOCS / "assets" / "site.png"


# --- build ---------------------------------------------------------------------------------------


def nav_in_tree(nav: list[Any], docs: Path) -> list[Any]:
    """`nav` without the pages that are not under `docs` (and the sections left empty)."""
    kept: list[Any] = []
    for entry in nav:
        title, target = next(iter(entry.items())) if isinstance(entry, dict) else (None, entry)
        if isinstance(target, list):
            target = nav_in_tree(target, docs)
            if target:
                kept.append({title: target})
        elif "://" in target or (docs / target).is_file():
            kept.append(entry)
    return kept


class _Warnings(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(f"{record.levelname}: {record.getMessage()}")


def build_site(site_dir: Path) -> list[str]:
    """Build the site strictly into `site_dir`; the warnings MkDocs logged (none, if it built)."""
    from mkdocs.commands.build import build
    from mkdocs.config import load_config
    from mkdocs.exceptions import Abort

    config_file = paths.ROOT / "mkdocs.yml"
    nav = nav_in_tree(yaml.safe_load(config_file.read_text())["nav"], paths.DOCS)
    warnings = _Warnings()
    logger = logging.getLogger("mkdocs")
    logger.addHandler(warnings)
    try:
        build(load_config(str(config_file), nav=nav, site_dir=str(site_dir), strict=True))
    except Abort as exc:
        warnings.messages.append(f"aborted: {exc}")
    finally:
        logger.removeHandler(warnings)
    return warnings.messages


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    site_dir = tmp_path_factory.mktemp("site")
    problems = build_site(site_dir)
    assert problems == [], "mkdocs build --strict failed:\n" + "\n".join(problems)
    return site_dir


# --- serve ---------------------------------------------------------------------------------------


class _Quiet(http.server.SimpleHTTPRequestHandler):
    """The site's files, without a line on stderr per request."""

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def served(site: Path) -> Iterator[str]:
    """The site's URL on a local `http.server` thread, joined at the end of the module."""
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_Quiet, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, name="docs-site-server")
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)
        assert not thread.is_alive()


# --- look ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def chromium(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One Chromium for the module (`tests/chromium.py`)."""
    yield from launched(tmp_path_factory, WAIT_MS)


class Browser:
    """What one test sees of Chromium: `open(path)` a page of the site; every request for
    anything but the site is aborted and kept in `elsewhere`, every script error in `errors`."""

    def __init__(self, chromium: Any, base: str) -> None:
        self.base = base
        self.elsewhere: list[str] = []
        self.errors: list[str] = []
        self.context = chromium.new_context(viewport=VIEWPORT)
        self.context.route("**/*", self._route)

    def _route(self, route: Any) -> None:
        url = route.request.url
        if url.startswith(self.base):
            route.continue_()
        else:
            self.elsewhere.append(url)
            route.abort()

    def open(self, path: str) -> Any:
        page = self.context.new_page()
        page.set_default_timeout(WAIT_MS)
        page.on("pageerror", lambda exc: self.errors.append(f"script error: {exc}"))
        page.goto(self.base + path)
        return page


@pytest.fixture
def browser(chromium: Any, served: str) -> Iterator[Browser]:
    """A fresh context for one test; nothing may be asked of another host, no script may fail."""
    wrapper = Browser(chromium, served)
    try:
        yield wrapper
    finally:
        wrapper.context.close()
    assert wrapper.elsewhere == [], f"the site asked another host: {wrapper.elsewhere}"
    assert wrapper.errors == [], f"a page failed: {wrapper.errors}"


def expect(target: Any) -> Any:
    from playwright.sync_api import expect as playwright_expect

    return playwright_expect(target)


def heading(text: str) -> re.Pattern[str]:
    """A heading's text: `text`, then the permalink's pilcrow."""
    return re.compile(rf"^{re.escape(text)}¶?$")


INDEX_WAIT_MS = 60_000
"""How long the search may take to build its index: a worker indexing about 700 KB of text,
seconds on a 2-core VM whose every core the rest of the suite keeps busy."""


def search(page: Any, query: str) -> Any:
    """Type `query` into the site's search once its index is built; the result links.

    Until its worker has built the index, the search says "Initializing search" and answers
    nothing; typed then, a query is not answered.
    """
    page.locator("label.md-search__icon, .md-search__input").first.click()
    expect(page.locator(".md-search-result__meta")).to_have_text(
        "Type to start searching", timeout=INDEX_WAIT_MS)
    page.locator("input.md-search__input").press_sequentially(query)  # key by key, as typed
    results = page.locator(".md-search-result__list a")
    expect(results.first).to_be_visible()
    return results


# --- the tests -----------------------------------------------------------------------------------


def test_nav_in_tree_leaves_out_pages_not_in_the_tree(tmp_path: Path) -> None:
    (tmp_path / "guides").mkdir()
    for name in ("index.md", "guides/agents.md"):
        (tmp_path / name).write_text("# x\n")
    nav = [{"Home": "index.md"}, {"Guides": ["guides/agents.md", "guides/tools.md"]},
           {"Later": ["later.md"]}, {"Elsewhere": "https://example.org/"}]
    assert nav_in_tree(nav, tmp_path) == [{"Home": "index.md"}, {"Guides": ["guides/agents.md"]},
                                          {"Elsewhere": "https://example.org/"}]


def test_home_page(browser: Browser) -> None:
    page = browser.open("index.html")
    expect(page.locator("article h1")).to_have_text(heading("agentcore"))
    nav = page.locator("nav.md-nav--primary")
    for title in ("Getting started", "Design", "Benchmarks", "API reference"):
        expect(nav.get_by_text(title, exact=True).first).to_be_attached()
    expect(page.locator("article pre").nth(1)).to_contain_text("scripted_model")
    # the two set-up commands, as README.md has them
    expect(page.locator("article pre").first).to_contain_text("python -m agentcore demo")


def test_design_page_links_into_the_reference(browser: Browser) -> None:
    page = browser.open("design.html")
    expect(page.locator("article h1")).to_have_text(heading("Design"))
    layers = page.locator("article table").nth(0).locator("tbody tr")
    expect(layers).to_have_count(9)
    expect(layers.first).to_contain_text("__init__.py")
    page.locator("article a[href$='reference/agentcore.html#agentcore.Agent']").first.click()
    expect(page).to_have_url(re.compile(r"reference/agentcore\.html#agentcore\.Agent$"))
    expect(page.locator("[id='agentcore.Agent']")).to_be_visible()


def test_api_page_shows_run_batch_signature_and_docstring(browser: Browser) -> None:
    page = browser.open("reference/agentcore.batch.html")
    expect(page.locator("article h1")).to_have_id("agentcore.batch")
    function = page.locator(".doc-function", has=page.locator("[id='agentcore.batch.run_batch']"))
    signature = function.locator(".doc-signature").first
    for parameter in inspect.signature(run_batch).parameters:
        expect(signature).to_contain_text(parameter)
    summary = inspect.getdoc(run_batch).splitlines()[0].replace("`", "")  # type: ignore[union-attr]
    expect(function.locator(".doc-contents").first).to_contain_text(summary)


def test_search_finds_run_batch(browser: Browser) -> None:
    page = browser.open("index.html")
    results = search(page, "run_batch")
    # a result's link carries the query for highlighting: batch.html?h=run_batch#...
    hrefs = [urlsplit(results.nth(i).get_attribute("href") or "")
             for i in range(results.count())]
    assert any(href.path.endswith("/reference/agentcore.batch.html")
               and href.fragment == "agentcore.batch.run_batch" for href in hrefs), hrefs
    results.filter(has_text="run_batch").first.click()
    expect(page).to_have_url(re.compile(r"reference/agentcore\.batch\.html"))
    if os.environ.get("AGENTCORE_SCREENSHOTS") == "1":
        home = browser.open("index.html")
        search(home, "run_batch")
        SCREENSHOT.parent.mkdir(exist_ok=True)
        home.screenshot(path=str(SCREENSHOT))
