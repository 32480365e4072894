"""Every private agentcore name the tests use, imported in this one place.

Tests reach agentcore's private modules (`agentcore._core`, `agentcore.providers._sse`, ...)
only through this module: `from _internals import SSEDecoder, _ratelimit`. When a private
module moves or is split, this file is the only test file to change; test bodies name what they
test, not where it lives. Public names (`agentcore`, `agentcore.providers`, `agentcore.testing`,
the public modules such as `agentcore.providers.faux`) are imported from agentcore directly.
`tests/package/test_internals.py` fails when any other test file imports a private module or
names one in a string (a logger, a `monkeypatch.setattr` target, a subprocess's code): derive
such a name from an object here instead (`_ratelimit.__name__`, `WorkerPool.__module__`).

A module a test patches or reads attributes of is exported as the module object (under its own
name, or the name the tests know it by: `cli`, `drive_module`, `reply_module`, `web_app`).
"""

# Every import here is a re-export (F401), grouped by layer, bottom up, not sorted (I001).
# ruff: noqa: F401, I001

from __future__ import annotations

# --- agentcore._core: values, events, streams, serialization -------------------------------
from agentcore._core import (
    ABORTED_TEXT,
    DEFAULT_DENIAL,
    DEFAULT_MAX_EVENT_BYTES,
    FACTORY,
    INTERRUPTED_NOT_STARTED_TEXT,
    INTERRUPTED_RUNNING_TEXT,
    INTERRUPTED_TEXT,
    OPTION,
    CallLeftOpen,
    _serde,
    answer_interrupted,
    default_breaker,
    find_pause,
    flat_fields,
    idempotency_key,
    json_ready,
    needs_approval,
    run_error,
    session_scope,
    tool_result_message,
    unanswered_tool_calls,
    unchecked_constructor,
    unchecked_context,
)
from agentcore._core._content import AssistantContent, UserContent
from agentcore._core._enums import (
    to_queue_mode,
    to_stop_reason,
    to_thinking_level,
    to_tool_execution_mode,
)
from agentcore._core._fast_schema import compile_fast, json_copy
from agentcore._core._floors import FLOORS, check_floors, installed_versions
from agentcore._core._feeds import QueueFeed
from agentcore._core._json_ready import MAX_DEPTH
from agentcore._core._overflow import is_context_overflow
from agentcore._core._render import escape_markdown, message_markdown, run_markdown, usage_markdown
from agentcore._core._validators import cannot_take, count, instance_of, not_bool

# --- agentcore._function_tools: @tool --------------------------------------------------------
from agentcore._function_tools import output_tool
from agentcore._function_tools._decorator import NO_OUTPUT, FunctionTool

# --- agentcore._loop: the agent loop ---------------------------------------------------------
from agentcore._loop import RunStart, observe
from agentcore._loop import _reply as reply_module
from agentcore._loop._remote import run_tool
from agentcore._loop._workers import WorkerPool

# --- agentcore._agent: Agent, AgentRun -------------------------------------------------------
from agentcore._agent import _drive as drive_module
from agentcore._agent import prompt_here
from agentcore._agent._log import EventLog

# --- agentcore._http: the client, its policy and transports -----------------------------------
from agentcore._http import (
    HttpClient,
    HttpError,
    HttpRequest,
    Outgoing,
    ReadError,
    RequestAborted,
    RequestsTransport,
    Response,
    StreamedError,
    Transport,
    TransportBug,
    TransportError,
    Urllib3Transport,
    clear_pauses,
    default_client,
    redact,
)
from agentcore._http import MockTransport, _client, _policy, _urllib3
from agentcore._http import AdaptiveLimits, AdaptiveTransport
from agentcore._http._adaptive import key_of
from agentcore._http._bodies import MAX_LINE, BodyError, iter_dechunked, iter_sized
from agentcore._http._policy import MAX_HINT_S, PauseKey, RetryPolicy, RetryRefusal, server_delay

# --- agentcore.providers: the wire framework, the clouds, the wire APIs' helpers ---------------
from agentcore.providers import _keys, _registry
from agentcore.providers._clouds import _aws, _gcp
from agentcore.providers._clouds._azure import azure_base_url, filter_text, is_entra_token
from agentcore.providers._openai import is_openai, mistral_ids, resolve_compat
from agentcore.providers._wire import _api, _builder, _choice, _deltas, _partial_json
from agentcore.providers._wire import _delta_reader as _template
from agentcore.providers._wire._api import (
    WireApi,
    _header_problem,
    http_status_text,
    message_text,
    stream_http_reply,
)
from agentcore.providers._wire._builder import ReplyBuilder
from agentcore.providers._wire._choice import (
    Choice,
    anthropic_schema,
    check_native_output,
    json_schema_format,
    native_output_with_tools,
    strict_schema,
    supports_native_output,
    tool_choice,
)
from agentcore.providers._wire._compat import Compat, check_compat, resolve
from agentcore.providers._wire._delta_reader import DeltaReader
from agentcore.providers._wire._deltas import Chunk, DeltaKind, Deltas, apply_deltas
from agentcore.providers._wire._eventstream import (
    EventMessage,
    EventStreamDecoder,
    EventStreamError,
    decode_eventstream,
)
from agentcore.providers._wire._framing import FramingError
from agentcore.providers._wire._partial_json import (
    parse_arguments,
    parse_partial_json,
    parse_partial_json_python,
    partial_parser,
)
from agentcore.providers._wire._reading import finish_body, iter_events
from agentcore.providers._wire._sse import (
    UNFRAMED_LIMIT,
    ServerSentEvent,
    SSEDecoder,
    UnframedLines,
    iter_sse,
)
from agentcore.providers._wire._text import decode_json, dumps, fitted_id, sanitize, short_hash
from agentcore.providers._wire._transform import (
    NO_RESULT_TEXT,
    is_same_model,
    transform_messages,
)

# --- agentcore.batch: a batch's results, as they cross processes and fill the store ---------------
from agentcore.batch._result import from_wire, pause_of, to_wire
from agentcore.batch._settings import RunSettings
from agentcore.batch._work import run_group
from agentcore.batch._pg_store import PostgresStore

# --- agentcore._cli: python -m agentcore -------------------------------------------------------
from agentcore import _cli as cli
from agentcore._cli import build_parser
from agentcore._cli._chat import ChatOptions, history_line, run_chat
from agentcore._cli._console import (
    EventPrinter,
    failure_text,
    format_tokens,
    plural,
    public_url,
    resolve_model,
)
from agentcore._cli._demo import DEFAULT_TOKENS_PER_SECOND, QUESTION, run_demo
from agentcore._cli._demo_tools import (
    SYSTEM_PROMPT,
    calculate,
    calculator_tool,
    clock_tool,
    current_time,
)
from agentcore._cli._live import LiveLine, render, wants_live
from agentcore._cli._offline import _expression, offline_reply, register_offline

# --- agentcore.web: only with the `web` extra (its tests skip themselves without it) ------------
try:
    import ag_ui.core
    import starlette
except ImportError:
    pass
else:
    del ag_ui, starlette
    from agentcore.web import _app as web_app
    from agentcore.web import _sse as web_sse
    from agentcore.web._ai_sdk import (
        DONE as AI_SDK_DONE,
        FALLBACK_PART,
        GUARDRAIL_PART,
        HEADERS as AI_SDK_HEADERS,
        SUBAGENT_PART,
        ChatTranslator,
        encode_chunk,
    )
    from agentcore.web._ai_sdk_input import parse_chat_request
    from agentcore.web._events import Translator
    from agentcore.web._guard import Guard, origin_of
    from agentcore.web._input import parse_run_input
    from agentcore.web._threads import Thread, Threads
