"""Secrets out of text: API keys and credentials removed from every message that may show them.

A server may echo a key back in an error body, a URL may carry one in its query, and a
signer's credentials may be quoted by the server; `redact` removes them in every encoding they
can take, and the key shapes of the major providers even when no secret was named.
"""

from __future__ import annotations

import json
import re

__all__ = ["redact"]

_KEY_PATTERNS = re.compile(
    r"(sk-ant-[A-Za-z0-9_\-]{6,}|sk-[A-Za-z0-9_\-*]{6,}|AIza[0-9A-Za-z_\-]{10,}"
    r"|gsk_[A-Za-z0-9]{10,}|xai-[A-Za-z0-9]{10,})"
)
_MIN_SECRET = 4
_MIN_BASE64_BYTES = 6  # shorter pieces of a key in base64 would match ordinary words
_PERCENT = re.compile(r"%[0-9A-F]{2}")


def _forms(secret: str) -> set[str]:
    """The ways `secret` can be written into text.

    Raw, stripped, escaped, percent-encoded, and the base64 of it at each of the three
    alignments it can have inside Basic credentials.
    """
    import base64  # only on an error path: kept out of the import of the wire modules
    from urllib.parse import quote, quote_plus

    forms: set[str] = set()
    for raw in {secret, secret.strip()}:
        if len(raw) < _MIN_SECRET:
            continue
        percent = {quote(raw, safe=""), quote(raw), quote_plus(raw)}
        forms |= percent | {_PERCENT.sub(lambda m: m.group().lower(), p) for p in percent}
        forms |= {raw, repr(raw)[1:-1], ascii(raw)[1:-1], json.dumps(raw)[1:-1],
                  json.dumps(raw, ensure_ascii=False)[1:-1]}
        data = raw.encode("utf-8", "surrogatepass")
        for shift in range(3):
            piece = data[shift: shift + (len(data) - shift) // 3 * 3]
            if len(piece) >= _MIN_BASE64_BYTES:
                forms.add(base64.b64encode(piece).decode("ascii"))
                forms.add(base64.urlsafe_b64encode(piece).decode("ascii"))
    return {form for form in forms if len(form) >= _MIN_SECRET}


def redact(text: str, secrets: tuple[str, ...] = ()) -> str:
    """Remove API keys from `text`: the given secrets in any encoding, and known key shapes.

    Every secret of at least four characters is replaced by `***` wherever it appears raw,
    without surrounding whitespace, repr-, ascii- or JSON-escaped, percent-encoded (either case
    of hex digit) or base64-encoded as inside HTTP Basic credentials (`user:key`).
    """
    forms: set[str] = set()
    for secret in secrets:
        if secret:
            forms |= _forms(secret)
    if forms:
        pattern = "|".join(re.escape(form) for form in sorted(forms, key=len, reverse=True))
        text = re.sub(pattern, "***", text)
    return _KEY_PATTERNS.sub(lambda m: m.group()[:3] + "***", text)
