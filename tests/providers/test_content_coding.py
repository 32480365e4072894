"""A reply the server compressed (`Content-Encoding: gzip` or `deflate`) reads like a plain one.

Through the public `complete()` only, over real HTTP: the body is sized, chunked, or sent up to
the close. urllib3 undoes the coding; a sized or up-to-the-close body is read with
`HTTPResponse.read1`, which urllib3 has since 2.2, so these tests also hold the `urllib3` floor
in `setup.cfg` to what the code uses (`.ci/run`'s floors stage runs them at that floor).
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Callable
from typing import Any

import attrs
import paths
import pytest
from sse_server import SSEServer

from agentcore import AssistantMessage, Context, Model, StreamOptions, UserMessage, complete

TEXT = (paths.FIXTURES / "openai_completions/text.sse").read_bytes()

CODINGS: dict[str, Callable[[bytes], bytes]] = {"gzip": gzip.compress, "deflate": zlib.compress}


def ask(server: SSEServer) -> AssistantMessage:
    model = Model("gpt-4o-mini", "M", "openai-completions", "openai", f"{server.url}/v1")
    reply = complete(model, Context(None, [UserMessage("hi")]), StreamOptions(api_key="sk-test"))
    return attrs.evolve(reply, timestamp=0)


def plain_reply(server: SSEServer) -> AssistantMessage:
    server.sse(TEXT)
    return ask(server)


def up_to_the_close(body: bytes, coding: str) -> Callable[[Any], None]:
    """A response with neither a length nor chunks: its body ends where the connection does."""

    def run(handler: Any) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Content-Encoding", coding)
        handler.send_header("Connection", "close")
        handler.end_headers()
        handler.wfile.write(body)
        handler.close_connection = True

    return run


@pytest.mark.parametrize("coding", list(CODINGS))
@pytest.mark.parametrize("framing", ["sized", "chunked", "up-to-the-close"])
def test_content_coding_a_compressed_reply_reads_like_a_plain_one(
        sse_server: SSEServer, coding: str, framing: str) -> None:
    expected = plain_reply(sse_server)
    packed = CODINGS[coding](TEXT)
    if framing == "sized":
        sse_server.status(200, packed, {"Content-Type": "text/event-stream",
                                        "Content-Encoding": coding})
    elif framing == "chunked":
        sse_server.sse(packed, chunking="random", seed=5, headers={"Content-Encoding": coding})
    else:
        sse_server.custom(up_to_the_close(packed, coding))
    reply = ask(sse_server)
    assert reply.error_message is None
    assert reply == expected
