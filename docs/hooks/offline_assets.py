"""An MkDocs hook (mkdocs.yml `hooks:`): the built site loads nothing from another host.

Material's `offline` plugin adds one script from a CDN to every page, the `iframe-worker` shim
from unpkg.com, which lets search run in a page opened from `file://` (where a browser refuses
to start the search's web worker). A site that must work without a network cannot load it, so
this hook takes it out again: served over HTTP (`mkdocs serve`, `python -m http.server -d
site`, any web server) search works without it; opened from `file://` every page works but
search does not.

It then checks every built page: a script, stylesheet, image, font or preconnect naming
another host is logged as a warning, which fails a `--strict` build (links to other sites, in
`<a href>`, are fine: following one is the reader's choice).
"""

from __future__ import annotations

import logging
import re
from typing import Any

from mkdocs.plugins import event_priority

log = logging.getLogger("mkdocs.hooks.offline_assets")

_CDN_SHIM = "iframe-worker"
_ASSET = re.compile(
    r"<(?:script|img|iframe|source|audio|video)\b[^>]*\bsrc=[\"']?((?:https?:)?//[^\"'\s>]+)"
    r"|<link\b[^>]*\bhref=[\"']?((?:https?:)?//[^\"'\s>]+)"
    r"|url\(\s*[\"']?((?:https?:)?//[^\"')\s]+)",
    re.IGNORECASE,
)


@event_priority(-100)  # after every plugin's own (the offline plugin's runs at 0)
def on_config(config: Any) -> Any:
    """Drop the offline plugin's CDN shim, once the plugin has added it."""
    polyfills = config.extra.get("polyfills", [])
    config.extra["polyfills"] = [url for url in polyfills if _CDN_SHIM not in str(url)]
    return config


def external_assets(html: str) -> list[str]:
    """The URLs on other hosts that a page's HTML would have the browser load."""
    return sorted({next(url for url in match.groups() if url) for match in _ASSET.finditer(html)})


def on_post_page(output: str, page: Any, config: Any) -> str:
    """Warn (an error under `--strict`) about a page that would load an asset from elsewhere."""
    for url in external_assets(output):
        log.warning("%s loads %s from another host: the site must work offline",
                    page.file.src_uri, url)
    return output
