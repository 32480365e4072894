"""The site's own pages and build hook, checked without building the site.

- `docs/benchmarks.md` quotes `benchmarks/README.md`: every figure on the page (outside its
  code blocks) is one that the full file holds, so the page cannot drift into figures nobody
  measured.
- `docs/hooks/offline_assets.py` (the build's hook) finds every asset a page would load from
  another host, and only those.
"""

from __future__ import annotations

import importlib.util
import re
from types import ModuleType, SimpleNamespace

import paths
import pytest

NUMBER = re.compile(r"(?<![\w.,])(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)*)(?![\w])")


def _figures(text: str) -> set[str]:
    return set(NUMBER.findall(re.sub(r"```.*?```", "", text, flags=re.S)))


def test_benchmarks_page_quotes_only_figures_of_the_full_file() -> None:
    page = _figures((paths.DOCS / "benchmarks.md").read_text())
    full = (paths.ROOT / "benchmarks" / "README.md").read_text()
    unknown = sorted(figure for figure in page if not re.search(
        rf"(?<![\d,.]){re.escape(figure)}(?![\d]|[.,]\d)", full))
    assert unknown == []
    assert {"63.6", "4,903", "9,015", "0.97", "410", "62.6"} <= page  # the peers' table


def test_figures_are_whole_numbers_as_written() -> None:
    assert _figures("9,015 µs, 0.987, pydantic-ai 2.68.0, issue 35, (5.4 MB)\n```\n7\n```") == {
        "9,015", "0.987", "2.68.0", "35", "5.4"}


@pytest.fixture(scope="module")
def hook() -> ModuleType:
    pytest.importorskip("mkdocs", reason="the hook runs in mkdocs (the docs extra)")
    path = paths.DOCS / "hooks" / "offline_assets.py"
    spec = importlib.util.spec_from_file_location("offline_assets", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_hook_finds_assets_on_other_hosts(hook: ModuleType) -> None:
    html = """
        <link rel="preconnect" href="https://fonts.gstatic.com" crossorigin>
        <link rel="stylesheet" href="https://fonts.googleapis.com/css?family=Roboto">
        <script src="https://unpkg.com/iframe-worker/shim"></script>
        <img alt="x" src='//cdn.example.org/logo.png'>
        <style>body { background: url("https://example.org/bg.png") }</style>
        <link rel="stylesheet" href="assets/stylesheets/main.css">
        <script src="assets/javascripts/bundle.js"></script>
        <a href="https://github.com/">a link is the reader's choice</a>
        <link rel="canonical" href="http://127.0.0.1:8000/index.html">
        <img src="../assets/site.png">
    """
    assert hook.external_assets(html) == [
        "//cdn.example.org/logo.png",
        "https://example.org/bg.png",
        "https://fonts.googleapis.com/css?family=Roboto",
        "https://fonts.gstatic.com",
        "https://unpkg.com/iframe-worker/shim",
    ]


def test_hook_drops_the_offline_plugins_cdn_shim(hook: ModuleType) -> None:
    config = SimpleNamespace(extra={"polyfills": ["https://unpkg.com/iframe-worker/shim",
                                                  "assets/mine.js"]})
    assert hook.on_config(config).extra["polyfills"] == ["assets/mine.js"]
