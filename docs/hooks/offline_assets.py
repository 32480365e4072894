"""An MkDocs hook (mkdocs.yml `hooks:`): the built site loads nothing from another host.

Material's `offline` plugin adds one script from a CDN to every page, the `iframe-worker` shim
from unpkg.com, which lets search run in a page opened from `file://` (where a browser refuses
to start the search's web worker). A site that must work without a network cannot load it, so
this hook takes it out again: served over HTTP (`mkdocs serve`, `python -m http.server -d
site`, any web server) search works without it; opened from `file://` every page works but
search does not.

It then checks every built page: a script, stylesheet, image, font or preconnect naming
another host is logged as a warning, which fails a `--strict` build (links to other sites, in
`<a href>` or a canonical `<link>`, load nothing and are fine: following one is the reader's
choice).
"""

from __future__ import annotations

import logging
import re
from html.parser import HTMLParser
from typing import Any

from mkdocs.plugins import event_priority

log = logging.getLogger("mkdocs.hooks.offline_assets")

_CDN_SHIM = "iframe-worker"
_SOURCES = {"script", "img", "iframe", "source", "audio", "video", "embed", "track"}
_LOADING_RELS = {"stylesheet", "preconnect", "dns-prefetch", "preload", "prefetch",
                 "modulepreload", "icon", "apple-touch-icon", "manifest"}
_CSS_URL = re.compile(r"url\(\s*[\"']?((?:https?:)?//[^\"')\s]+)", re.IGNORECASE)


def _elsewhere(url: str) -> bool:
    return re.match(r"(?:https?:)?//", url.strip(), re.IGNORECASE) is not None


class _Assets(HTMLParser):
    """The URLs on other hosts that the tags of a page load (not those it merely links to)."""

    def __init__(self) -> None:
        super().__init__()
        self.found: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        named = dict(attrs)
        if tag in _SOURCES:
            url = named.get("src")
        elif tag == "link" and _LOADING_RELS & set((named.get("rel") or "").lower().split()):
            url = named.get("href")
        else:
            return
        if url is not None and _elsewhere(url):
            self.found.add(url.strip())


@event_priority(-100)  # after every plugin's own (the offline plugin's runs at 0)
def on_config(config: Any) -> Any:
    """Drop the offline plugin's CDN shim, once the plugin has added it."""
    polyfills = config.extra.get("polyfills", [])
    config.extra["polyfills"] = [url for url in polyfills if _CDN_SHIM not in str(url)]
    return config


def external_assets(html: str) -> list[str]:
    """The URLs on other hosts that a page's HTML would have the browser load.

    Scripts, images, frames and media by their `src`; stylesheets, fonts, icons and
    preconnections by their `<link>`; and `url(...)` in styles. A link to follow (`<a href>`,
    `<link rel="canonical">`, which `mkdocs serve` adds with its own address) loads nothing.
    """
    parser = _Assets()
    parser.feed(html)
    parser.close()
    return sorted(parser.found | set(_CSS_URL.findall(html)))


def on_post_page(output: str, page: Any, config: Any) -> str:
    """Warn (an error under `--strict`) about a page that would load an asset from elsewhere."""
    for url in external_assets(output):
        log.warning("%s loads %s from another host: the site must work offline",
                    page.file.src_uri, url)
    return output
