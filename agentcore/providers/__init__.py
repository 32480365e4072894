"""Model providers (layer 1): the registry, the model catalogue, the faux model and the HTTP APIs.

The rest of agentcore imports providers through the names below, never from the private
modules. Public modules, importable by path:

- `models`: the built-in model catalogue (`models.json`) and API-key lookup.
- `faux`: a scripted, offline model for tests and demos.
- `openai_completions`, `openai_responses`, `anthropic`, `google`, `vertex`, `bedrock`: one
  module per wire API, each a `stream_<api>` function that the registry loads on first use.

Private parts, used only inside this package:

- `_registry`: which stream function serves which `Model.api` (`get_apis()` lists them).
- `_wire/`: the wire framework every HTTP wire API plugs into (`WireApi`, the reply builder,
  the framings, delta readers, tool choice, compat; see its docstring).
- `_clouds/`: AWS, Google Cloud and Azure credentials and endpoints.
- `_openai` (what the two OpenAI APIs share), `_bedrock_body` (the `ConverseStream` body).

HTTP goes through `agentcore._http`: `HttpClient`, `Transport`, `Urllib3Transport` and
`RequestsTransport` are exported here. By default every request of the process shares one
client and its connection pools; `StreamOptions(http_client=...)` chooses another, and
`http_session=` (a `requests.Session`) goes through requests.

Importing this package loads neither the wire modules nor requests.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .._http import HttpClient, RequestsTransport, Transport, Urllib3Transport
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
    "HttpClient",
    "RequestsTransport",
    "StreamFn",
    "Transport",
    "Urllib3Transport",
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
    """A `requests.Session` that keeps `pool_size` idle connections per host.

    Pass it as `http_session` where requests should go through requests (its proxies,
    certificates, adapters, auth or hooks); the caller owns it and closes it
    (`session.close()`). Without one, runs share the process's `HttpClient`, which needs no
    session. An abort of a request through a session returns at once; the abandoned connect
    or wait for headers ends at its timeout. Importing requests waits until this is called.
    """
    if isinstance(pool_size, bool) or not isinstance(pool_size, int) or pool_size < 1:
        raise ValueError(f"'pool_size' must be an int of at least 1, got {pool_size!r}")
    import requests

    session = requests.Session()
    for prefix in ("https://", "http://"):
        session.mount(prefix, requests.adapters.HTTPAdapter(pool_maxsize=pool_size))
    return session


def check_tool_choice(choice: str | None, names: Sequence[str]) -> None:
    """Raise `ValueError` naming `tool_choice` when it names none of the tools in `names`."""
    if choice is not None:  # the common case loads nothing
        from ._wire import check_tool_choice as check

        check(choice, names)


def check_native_output(model: Model, *, with_tools: bool = False) -> None:
    """Raise `ValueError` naming `output_mode` when `model` cannot give native output.

    `with_tools`: in a request that declares tools (which Gemini before 3 refuses with it).
    """
    from ._wire import check_native_output as check

    check(model, with_tools=with_tools)
