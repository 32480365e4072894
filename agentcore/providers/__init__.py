"""Model providers (layer 1): the registry, the model catalogue, the faux model and the HTTP APIs.

The rest of agentcore imports providers through the names below, never from the private
modules. Public modules, importable by path:

- `models`: the built-in model catalogue (`models.json`) and API-key lookup.
- `faux`: a scripted, offline model for tests and demos.
- `openai_completions`, `openai_responses`, `anthropic`, `google`, `vertex`, `bedrock`: one
  module per wire API, each a `stream_<api>` function that the registry loads on first use.

Private modules, used only inside this package:

- `_registry`: which stream function serves which `Model.api` (`get_apis()` lists them).
- `_reply`: `WireApi`, the seam each wire module fills in (URL, headers, body, decoder,
  handler, error text, signer), and `stream_http_reply`, which streams any of them.
- `_builder`: `ReplyBuilder`, wire deltas into the event protocol.
- `_http`: the request policy (retries, rate-limit pauses, error text, redaction) and the
  reading loop of a reply's body; `_retry` (retry policy, server hints, a server error that
  says the request was invalid), `_ratelimit` (429 pauses shared by the process).
- `_transport`: the transport seam (`Transport`, `Response`, `Outgoing`), its two
  transports chosen once per session, and `new_http_session`; `_opener` (sockets an abort
  shuts down, threads it abandons), `_lean` (a POST straight to urllib3).
- `_framing` (the `Decoder` protocol a wire API's body is decoded with), `_sse` (Server-Sent
  Events, the default decoder), `_eventstream` (AWS event streams, Bedrock's replies).
- `_choice` (tool choice and native structured output, decided once for every wire API;
  the loop checks a run's settings with `check_tool_choice` and `check_native_output`),
  `_compat` (`Model.compat`: capabilities and server quirks as data, checked),
  `_openai` (what the two OpenAI APIs share), `_transform` (cross-provider handoff),
  `_partial_json` (streamed tool arguments), `_text` (text, ids and JSON on the wire),
  `_gcp` (Google Cloud credentials for Vertex AI: an express-mode key or Application Default
  Credentials, google-auth imported only then), `_azure` (Azure OpenAI's endpoint, key or
  token, and content-filter text), `_aws` (Bedrock's region, credentials and SigV4, botocore
  imported only then), `_bedrock_body` (the `ConverseStream` request body).

`new_http_session(pool_size=10)` makes the `requests.Session` an `Agent` owns and passes as
`http_session` to all its runs (keep-alive; abort cuts a connect or a wait for headers, on
the calling thread); `run_batch` shares one across its runs.

Importing this package loads neither the wire modules nor requests.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ._registry import (
    StreamFn,
    complete,
    get_apis,
    register_provider,
    speaks_http,
    stream,
    unregister_provider,
)
from .models import (
    env_var_for,
    get_env_api_key,
    get_model,
    get_models,
    get_providers,
    require_api_key,
)

if TYPE_CHECKING:
    import requests

    from .._core import Model

__all__ = [
    "StreamFn",
    "check_native_output",
    "check_tool_choice",
    "complete",
    "env_var_for",
    "get_apis",
    "get_env_api_key",
    "get_model",
    "get_models",
    "get_providers",
    "new_http_session",
    "register_provider",
    "require_api_key",
    "speaks_http",
    "stream",
    "unregister_provider",
]


def new_http_session(pool_size: int = 10) -> requests.Session:
    """A `requests.Session` configured for agentcore: keep-alive, and abort in every phase.

    Pass it as `http_session` to every request that should share connections; the caller owns
    it and closes it (`session.close()`). Requests through it can be aborted while connecting
    or waiting for response headers, not only while reading the body. It keeps up to
    `pool_size` idle connections per host: as many as the requests you run at once, so that
    each finds one to reuse. Importing requests and the HTTP module waits until this is first
    called.
    """
    from ._transport import new_http_session as new

    return new(pool_size)


def check_tool_choice(choice: str | None, names: Sequence[str]) -> None:
    """Raise `ValueError` naming `tool_choice` when it names none of the tools in `names`."""
    if choice is not None:  # the common case loads nothing
        from ._choice import check_tool_choice as check

        check(choice, names)


def check_native_output(model: Model, *, with_tools: bool = False) -> None:
    """Raise `ValueError` naming `output_mode` when `model` cannot give native output.

    `with_tools`: in a request that declares tools (which Gemini before 3 refuses with it).
    """
    from ._choice import check_native_output as check

    check(model, with_tools=with_tools)
