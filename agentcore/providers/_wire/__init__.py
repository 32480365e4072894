"""The wire framework: what every HTTP wire API plugs into, and the parts they share.

A wire module (`openai_completions`, `anthropic`, ...) describes its API as a `WireApi` and
streams replies with `stream_http_reply`; everything here is for such modules.

- `_api`: `WireApi`, the seam (URL, headers, body, decoder, handler, error text, signer), and
  `stream_http_reply`, which sends the request through the `HttpClient` and streams any reply.
- `_reading`: a reply body's items as they arrive (`iter_events`), and its end.
- `_builder`: `ReplyBuilder`, wire deltas into the event protocol.
- `_deltas`: `WireApi.deltas` applied: JSON events parsed once (`Chunk`), plain deltas read
  by a learned template (`Delta`) of a kind the wire API names (`DeltaKind`); `_delta_reader`:
  `DeltaReader`, that template, which reads one kind of chunk's delta without parsing its JSON.
- `_framing` (the `Decoder` protocol), `_sse` (Server-Sent Events, the default decoder),
  `_eventstream` (AWS event streams, Bedrock's replies).
- `_choice` (tool choice and native structured output, decided once for every wire API),
  `_compat` (`Model.compat`: capabilities and server quirks as data), `_transform`
  (cross-provider handoff), `_partial_json` (streamed tool arguments), `_text` (text, ids
  and JSON on the wire).
"""

from ._api import (
    ProviderError,
    WireApi,
    api_key_for,
    client_for,
    default_max_tokens,
    http_status_text,
    message_text,
    stream_http_reply,
)
from ._builder import ReplyBuilder
from ._choice import (
    OUTPUT_NAME,
    Choice,
    anthropic_schema,
    check_native_output,
    check_tool_choice,
    json_schema_format,
    tool_choice,
)
from ._compat import Compat, cached, check_compat, frozen, resolve
from ._deltas import Chunk, Delta, DeltaKind, Deltas
from ._eventstream import EventMessage, EventStreamDecoder, decode_eventstream
from ._framing import FramingError
from ._sse import ServerSentEvent, SseItem, UnframedLines
from ._text import (
    decode_json,
    dumps,
    fitted_id,
    safe_id,
    sanitize,
    short_hash,
    tool_result_text,
)
from ._transform import NormalizeId, is_same_model, transform_messages

__all__ = [
    "OUTPUT_NAME",
    "Choice",
    "Chunk",
    "Compat",
    "Delta",
    "DeltaKind",
    "Deltas",
    "EventMessage",
    "EventStreamDecoder",
    "FramingError",
    "NormalizeId",
    "ProviderError",
    "ReplyBuilder",
    "ServerSentEvent",
    "SseItem",
    "UnframedLines",
    "WireApi",
    "anthropic_schema",
    "api_key_for",
    "cached",
    "check_compat",
    "check_native_output",
    "check_tool_choice",
    "client_for",
    "decode_eventstream",
    "decode_json",
    "default_max_tokens",
    "dumps",
    "fitted_id",
    "frozen",
    "http_status_text",
    "is_same_model",
    "json_schema_format",
    "message_text",
    "resolve",
    "safe_id",
    "sanitize",
    "short_hash",
    "stream_http_reply",
    "tool_choice",
    "tool_result_text",
    "transform_messages",
]
