"""AWS Bedrock ConverseStream against the scripted server, which speaks the binary event stream.

Every reply is built frame by frame (`bedrock_replies`, over `eventstream_frames`) and sent whole,
one byte at a time and in random chunks: text, tool calls, reasoning with signatures and
redacted, usage with cache reads and writes, every stop reason, exceptions in the stream before
and after output (throttling retried), HTTP errors, malformed frames and abort in every phase.
Requests are signed with the static test credentials of `aws_env`. Translation is tested on
`mock_server` (no socket); a text reply, the signature of what arrived (the transport adds the
signed `Host`), connection reuse and the aborts go over real HTTP (`sse_server`).
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from bedrock_replies import (
    API,
    MODEL_ID,
    REDACTED,
    SECRET_KEY,
    bedrock_model,
    reasoning_block,
    redacted_block,
    reply,
    serve,
    text_block,
    text_deltas,
    throttled,
    tool_block,
)
from eventstream_frames import event, exception, frame
from http_phases import (
    CountingServer,
    consume_with_abort,
    never_accepts,
    wait_until,
)
from mock_server import MockServer, ScriptedServer
from sigv4 import check_sigv4
from sse_server import HOLD, SSEServer

import agentcore as ac
from agentcore import (
    Cost,
    ErrorEvent,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    Usage,
)
from agentcore.providers import HttpClient, Urllib3Transport

pytestmark = pytest.mark.usefixtures("aws_env")

WAIT_S = 5.0
CONTEXT = ac.Context("Be brief.", [ac.UserMessage("hi")])
SIGNATURE = "EqQBCkgIAxABGAIiQLongSignatureOfTheThinkingBlock0123456789abcdefABCDEF=="
CHUNKINGS = [("whole", 0), ("bytewise", 0), ("random", 1), ("random", 2)]


def options(**changes: Any) -> ac.StreamOptions:
    return ac.StreamOptions(**{"timeout": WAIT_S, **changes})


def complete(server: ScriptedServer, **changes: Any) -> ac.AssistantMessage:
    return ac.complete(bedrock_model(server.url), CONTEXT, options(**changes))


def priced(inp: int, out: int, cache_read: int = 0, cache_write: int = 0) -> Usage:
    parts = (3 * inp / 1e6, 15 * out / 1e6, 0.3 * cache_read / 1e6, 3.75 * cache_write / 1e6)
    return Usage(inp, out, cache_read, cache_write, inp + out + cache_read + cache_write,
                 Cost(*parts, total=sum(parts)))


def kinds(events: list[Any]) -> list[str]:
    return [e.type for e in events]


# --- replies -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("chunking", "seed"), CHUNKINGS)
def test_bedrock_text_reply_streams_with_usage_and_cache(sse_server: SSEServer, chunking: str,
                                                         seed: int) -> None:
    usage = {"inputTokens": 20, "outputTokens": 5, "cacheReadInputTokens": 1000,
             "cacheWriteInputTokens": 300}
    serve(sse_server, reply(text_block(0, "Hello", ", ", "world"), usage=usage), chunking, seed)
    events = list(ac.stream(bedrock_model(sse_server.url), CONTEXT, options()))
    assert kinds(events) == ["start", "text_start", "text_delta", "text_delta", "text_delta",
                             "text_end", "done"]
    assert [e.delta for e in events if e.type == "text_delta"] == ["Hello", ", ", "world"]
    final = events[-1].message
    assert final.content == [TextContent("Hello, world")]
    assert (final.stop_reason, final.usage, final.error_message) == (
        StopReason.STOP, priced(20, 5, 1000, 300), None)
    assert (final.api, final.provider, final.model) == (API, "amazon-bedrock", MODEL_ID)
    assert check_sigv4(sse_server.requests[0], SECRET_KEY) == []


@pytest.mark.parametrize(("chunking", "seed"), CHUNKINGS)
def test_bedrock_tool_call_arguments_stream_as_partial_json(mock_server: MockServer,
                                                            chunking: str, seed: int) -> None:
    body = reply(text_block(0, "Checking."),
                 tool_block(1, "tooluse_Ab12-x", "get_weather", '{"ci', 'ty": "Par', 'is"}'),
                 tool_block(2, "tooluse_Cd34", "get_time", ""), stop="tool_use")
    serve(mock_server, body, chunking, seed)
    events = list(ac.stream(bedrock_model(mock_server.url), CONTEXT, options()))
    assert kinds(events)[4:] == ["toolcall_start", "toolcall_delta", "toolcall_delta",
                                 "toolcall_delta", "toolcall_end", "toolcall_start",
                                 "toolcall_delta", "toolcall_end", "done"]
    partial = [dict(e.partial.content[1].arguments) for e in events
               if e.type == "toolcall_delta" and e.content_index == 1]
    assert partial[-1] == {"city": "Paris"}
    final = events[-1].message
    assert final.content == [TextContent("Checking."),
                             ToolCall("tooluse_Ab12-x", "get_weather", {"city": "Paris"}),
                             ToolCall("tooluse_Cd34", "get_time", {})]
    assert final.stop_reason == StopReason.TOOL_USE


@pytest.mark.parametrize(("chunking", "seed"), CHUNKINGS)
def test_bedrock_reasoning_keeps_its_signature_and_redacted_reasoning(
        mock_server: MockServer, chunking: str, seed: int) -> None:
    body = reply(reasoning_block(0, SIGNATURE, "Let me ", "think."), redacted_block(1),
                 text_block(2, "Done."))
    serve(mock_server, body, chunking, seed)
    events = list(ac.stream(bedrock_model(mock_server.url), CONTEXT, options(reasoning="high")))
    assert kinds(events) == ["start", "thinking_start", "thinking_delta", "thinking_delta",
                             "thinking_end", "thinking_start", "thinking_delta", "thinking_end",
                             "text_start", "text_delta", "text_end", "done"]
    assert events[-1].message.content == [
        ThinkingContent("Let me think.", SIGNATURE),
        ThinkingContent("[Reasoning redacted]", REDACTED, redacted=True),
        TextContent("Done.")]


# --- stop reasons --------------------------------------------------------------------------------


@pytest.mark.parametrize(("stop", "reason"), [
    ("end_turn", StopReason.STOP), ("stop_sequence", StopReason.STOP),
    ("tool_use", StopReason.TOOL_USE), ("max_tokens", StopReason.LENGTH),
    ("model_context_window_exceeded", StopReason.LENGTH),
])
def test_bedrock_stop_reason_maps(mock_server: MockServer, stop: str, reason: StopReason) -> None:
    blocks = [text_block(0, "Hi")]
    if stop == "tool_use":
        blocks.append(tool_block(1, "t1", "get_time", "{}"))
    serve(mock_server, reply(*blocks, stop=stop))
    result = complete(mock_server)
    assert (result.stop_reason, result.error_message, result.usage) == (reason, None,
                                                                       priced(12, 7))


@pytest.mark.parametrize(("stop", "says"), [
    ("guardrail_intervened", "a guardrail intervened and blocked the reply"),
    ("content_filtered", "the reply was blocked by Bedrock's content filter"),
    ("malformed_model_output", "the model's output was malformed"),
    ("malformed_tool_use", "the model made a malformed tool call"),
    ("teleported", "the reply ended with an unknown stop reason"),
])
def test_bedrock_failed_stop_ends_as_a_readable_error_keeping_usage(
        mock_server: MockServer, stop: str, says: str) -> None:
    serve(mock_server, reply(text_block(0, "Partial"), stop=stop))
    result = complete(mock_server)
    assert result.stop_reason == StopReason.ERROR
    assert result.error_message == f"{says} (stop reason {stop!r})"
    assert (result.content, result.usage) == ([TextContent("Partial")], priced(12, 7))


def test_bedrock_stream_without_a_stop_reason_is_an_error(mock_server: MockServer) -> None:
    serve(mock_server, event("messageStart", {"role": "assistant"}) + text_block(0, "Hi"))
    result = complete(mock_server)
    assert (result.stop_reason, result.error_message) == (
        StopReason.ERROR, "Bedrock stream ended without a stop reason")


# --- exceptions in the stream --------------------------------------------------------------------


@pytest.mark.parametrize("after_start", [False, True], ids=["first", "after-messageStart"])
@pytest.mark.parametrize("kind", ["throttlingException", "serviceUnavailableException",
                                  "internalServerException"])
def test_bedrock_retryable_exception_before_output_is_retried(
        sse_server: SSEServer, backoffs: list[int], kind: str, after_start: bool) -> None:
    head = event("messageStart", {"role": "assistant"}) if after_start else b""
    serve(sse_server, head + exception(kind, "Try again."), "bytewise")
    serve(sse_server, reply(text_block(0, "Hello")), "random")
    result = complete(sse_server)
    assert (result.stop_reason, result.text, result.error_message) == (StopReason.STOP,
                                                                       "Hello", None)
    assert len(sse_server.requests) == 2
    assert backoffs == [0]
    # each attempt is signed anew, over its own exact body
    assert [check_sigv4(r, SECRET_KEY) for r in sse_server.requests] == [[], []]


def test_bedrock_throttling_retries_run_out_as_a_429(mock_server: MockServer,
                                                     backoffs: list[int]) -> None:
    for _ in range(3):
        serve(mock_server, throttled())
    result = complete(mock_server)
    assert result.stop_reason == StopReason.ERROR
    assert result.error_message == (
        "429 ThrottlingException: Too many tokens, please wait before trying again.")
    assert (len(mock_server.requests), backoffs) == (3, [0, 1])
    assert result.content == []


def test_bedrock_throttling_with_no_retries_fails_at_once(mock_server: MockServer) -> None:
    serve(mock_server, throttled("Rate exceeded"))
    result = complete(mock_server, max_retries=0)
    assert result.error_message == "429 ThrottlingException: Rate exceeded"
    assert len(mock_server.requests) == 1


def test_bedrock_validation_exception_before_output_is_not_retried(
        mock_server: MockServer) -> None:
    serve(mock_server, exception("validationException", "messages.0: blank text"))
    result = complete(mock_server)
    assert result.error_message == "400 ValidationException: messages.0: blank text"
    assert len(mock_server.requests) == 1


@pytest.mark.parametrize(("kind", "payload", "text"), [
    ("throttlingException", {"message": "Too many tokens"},
     "ThrottlingException: Too many tokens (not retried: part of the reply had already "
     "arrived)"),
    ("serviceUnavailableException", {"message": "Unavailable"},
     "ServiceUnavailableException: Unavailable (not retried: part of the reply had already "
     "arrived)"),
    ("modelStreamErrorException", {"message": "Model failed", "originalStatusCode": 500,
                                   "originalMessage": "overloaded"},
     "ModelStreamErrorException: Model failed (500: overloaded)"),
    ("validationException", {"message": "Bad input"}, "ValidationException: Bad input"),
])
def test_bedrock_exception_after_output_ends_the_reply_keeping_it(
        mock_server: MockServer, kind: str, payload: dict[str, Any], text: str) -> None:
    error = frame({":exception-type": kind, ":content-type": "application/json",
                   ":message-type": "exception"}, json.dumps(payload).encode())
    serve(mock_server, event("messageStart", {"role": "assistant"}) + text_deltas(0, ["Hel"])
          + error, "random")
    result = complete(mock_server)
    assert (result.stop_reason, result.error_message) == (StopReason.ERROR, text)
    assert result.content == [TextContent("Hel")]
    assert len(mock_server.requests) == 1


# --- HTTP errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("status", "kind", "message"), [
    (403, "AccessDeniedException", "You don't have access to the model with the specified "
                                   "model ID."),
    (400, "ValidationException", "The provided model identifier is invalid."),
    (404, "ResourceNotFoundException", "Model not found."),
])
def test_bedrock_http_error_reads_type_and_message(mock_server: MockServer, status: int,
                                                   kind: str, message: str) -> None:
    mock_server.status(status, json.dumps({"message": message}),
                       {"x-amzn-ErrorType": f"{kind}:http://internal.amazon.com/coral/"})
    result = complete(mock_server)
    assert (result.stop_reason, result.error_message) == (StopReason.ERROR,
                                                          f"{status} {kind}: {message}")


@pytest.mark.parametrize(("headers", "expected"), [
    ({"x-amzn-ErrorType": "InternalServerException:http://internal.amazon.com/coral/"},
     '500 InternalServerException: {"message":""}'),
    ({}, '500 {"message":""}'),
])
def test_bedrock_http_error_with_an_empty_message_says_what_it_holds(
        mock_server: MockServer, headers: dict[str, str], expected: str) -> None:
    mock_server.status(500, '{"message": ""}', headers)
    result = complete(mock_server, max_retries=0)
    assert (result.stop_reason, result.error_message) == (StopReason.ERROR, expected)


def test_bedrock_http_429_is_retried(mock_server: MockServer, backoffs: list[int]) -> None:
    mock_server.status(429, '{"message": "Too many requests"}',
                       {"x-amzn-ErrorType": "ThrottlingException"})
    serve(mock_server, reply(text_block(0, "ok")))
    result = complete(mock_server)
    assert (result.text, len(mock_server.requests), backoffs) == ("ok", 2, [0])


# --- malformed frames ----------------------------------------------------------------------------


def _corrupt(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1:]


@pytest.mark.parametrize(("body", "says"), [
    (reply(text_block(0, "Hi"))[:-3], "event stream ends inside a message"),
    (event("messageStart", {"role": "assistant"})[:7], "event stream ends inside a message"),
    (_corrupt(reply(text_block(0, "Hi")), 5), "event-stream prelude checksum does not match"),
    (_corrupt(reply(text_block(0, "Hi")), 40), "event-stream message checksum does not match"),
], ids=["truncated-frame", "truncated-prelude", "bad-prelude-crc", "bad-message-crc"])
def test_bedrock_malformed_frame_is_a_readable_error(mock_server: MockServer, body: bytes,
                                                     says: str) -> None:
    serve(mock_server, body, "random")
    result = complete(mock_server)
    assert result.stop_reason == StopReason.ERROR
    assert says in (result.error_message or "")


def test_bedrock_corrupt_frame_after_text_keeps_the_text(mock_server: MockServer) -> None:
    good = event("messageStart", {"role": "assistant"}) + text_deltas(0, ["Hi"])
    # byte by byte: the good frames are decoded before the corrupt one has arrived
    serve(mock_server, good + _corrupt(text_deltas(0, [" there"]), 30), "bytewise")
    result = complete(mock_server)
    assert result.content == [TextContent("Hi")]
    assert result.error_message == "event-stream message checksum does not match (corrupt frame)"


def test_bedrock_replies_through_one_client_reuse_one_connection() -> None:
    """A reply read through the retry check (`opening`) still gives its connection back."""
    server = CountingServer(reply(text_block(0, "Hi")))
    try:
        with HttpClient(Urllib3Transport(proxies={})) as client:
            for _ in range(10):
                controller = ac.AbortController()
                result = ac.complete(bedrock_model(server.url), CONTEXT, options(
                    http_client=client, signal=controller.signal))
                assert result.text == "Hi", result.error_message
            assert server.accepted == 1
        assert wait_until(lambda: server.closed == server.accepted)
    finally:
        server.close()


# --- abort in every phase ------------------------------------------------------------------------


# In each phase nothing but the abort can end the request: connecting and backing off take an
# hour (`hour_long_http_waits`), the server holds its answer open (`HOLD`) or streams without end,
# and the read timeout is the default ten minutes. How soon an abort ends each phase is
# benchmarks/http_edges.py's to measure.


@pytest.mark.usefixtures("hour_long_http_waits")
def test_bedrock_abort_while_connecting() -> None:
    with never_accepts() as url:
        started = time.monotonic()
        result, _ = consume_with_abort(bedrock_model(url),
                                       lambda: time.monotonic() - started > 0.2)
    assert result.stop_reason == StopReason.ABORTED


def test_bedrock_abort_while_waiting_for_headers(sse_server: SSEServer) -> None:
    gone = sse_server.hang_headers(HOLD)
    result, _ = consume_with_abort(bedrock_model(sse_server.url),
                                   lambda: bool(sse_server.requests))
    assert result.stop_reason == StopReason.ABORTED
    assert gone.seen.wait(WAIT_S)  # the client closed the connection the server held open


def test_bedrock_abort_while_reading_the_opening(sse_server: SSEServer) -> None:
    """The stream has started (messageStart) but no output has come: the retry check reads."""
    gone = sse_server.slow_sse([event("messageStart", {"role": "assistant"})], HOLD)
    result, _ = consume_with_abort(bedrock_model(sse_server.url),
                                   lambda: bool(sse_server.requests))
    assert (result.stop_reason, result.content) == (StopReason.ABORTED, [])
    assert gone.seen.wait(WAIT_S)


def test_bedrock_abort_mid_body_keeps_the_text(sse_server: SSEServer) -> None:
    gone = sse_server.slow_sse([text_deltas(0, ["word "])], 0.05)  # a body without end
    controller = ac.AbortController()
    stream = ac.stream(bedrock_model(sse_server.url), CONTEXT,
                       options(signal=controller.signal))
    aborted_at = 0.0
    for item in stream:
        if item.type == "text_delta" and aborted_at == 0.0:
            aborted_at = time.monotonic()
            controller.abort()
    result = stream.result()
    assert result.stop_reason == StopReason.ABORTED
    assert result.text.startswith("word ")
    assert gone.seen.wait(WAIT_S)
    assert gone.at is not None
    assert gone.at >= aborted_at  # the client closed the connection after the abort


@pytest.mark.usefixtures("hour_long_http_waits")
def test_bedrock_abort_while_sleeping_before_a_retry(sse_server: SSEServer) -> None:
    serve(sse_server, throttled())
    result, _ = consume_with_abort(bedrock_model(sse_server.url),
                                   lambda: bool(sse_server.requests), max_retries=5)
    assert result.stop_reason == StopReason.ABORTED
    assert len(sse_server.requests) == 1


def test_bedrock_abort_before_the_request_sends_nothing(sse_server: SSEServer) -> None:
    controller = ac.AbortController()
    controller.abort()
    result = ac.complete(bedrock_model(sse_server.url), CONTEXT,
                         options(signal=controller.signal))
    assert (result.stop_reason, result.content) == (StopReason.ABORTED, [])
    assert sse_server.requests == []


def test_bedrock_reply_throttled_before_output_has_no_start_event(
        mock_server: MockServer, backoffs: list[int]) -> None:
    for _ in range(3):
        serve(mock_server, throttled())
    events = list(ac.stream(bedrock_model(mock_server.url), CONTEXT, options()))
    assert [type(e) for e in events] == [ErrorEvent]
    assert events[0].error.error_message.startswith("429 ThrottlingException")
