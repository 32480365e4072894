"""An agent on AWS Bedrock (ConverseStream): your AWS credentials, or a Bedrock API key.

    python examples/bedrock.py                                         # offline, a stand-in
    AWS_REGION=us-east-1 python examples/bedrock.py --live --model amazon.nova-lite-v1:0

Live, requests are signed with the credentials botocore finds (AWS_PROFILE, AWS_ACCESS_KEY_ID
and AWS_SECRET_ACCESS_KEY, SSO, instance roles: `pip install 'agentcore[bedrock]'`), or carry
a Bedrock API key from AWS_BEARER_TOKEN_BEDROCK (no botocore needed). Offline, a tiny stand-in
on 127.0.0.1 answers in Bedrock's binary event-stream framing, byte for byte as the service
does, and the example sends it a made-up API key.
"""

import argparse
import json
import struct
import zlib

import attrs
from _stand_in import QuietHandler, stand_in  # a server on 127.0.0.1 for the offline run

import agentcore as ac


def frame(event_type, body):
    """One event-stream message: prelude, headers, JSON payload, and their CRC-32s."""
    headers = b""
    for name, value in ((":event-type", event_type), (":content-type", "application/json"),
                        (":message-type", "event")):
        headers += bytes([len(name)]) + name.encode() + b"\x07"
        headers += struct.pack(">H", len(value)) + value.encode()
    payload = json.dumps(body).encode()
    prelude = struct.pack(">II", 16 + len(headers) + len(payload), len(headers))
    message = prelude + struct.pack(">I", zlib.crc32(prelude)) + headers + payload
    return message + struct.pack(">I", zlib.crc32(message))


class StandIn(QuietHandler):
    """POST /model/{id}/converse-stream: a short reply, as Bedrock streams it."""

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Type", "application/vnd.amazon.eventstream")
        self.end_headers()
        pieces = ["Hello from ", "a stand-in ", "for Bedrock."]
        for event_type, body in [
            ("messageStart", {"role": "assistant"}),
            *(("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": piece}})
              for piece in pieces),
            ("contentBlockStop", {"contentBlockIndex": 0}),
            ("messageStop", {"stopReason": "end_turn"}),
            ("metadata", {"usage": {"inputTokens": 14, "outputTokens": 9, "totalTokens": 23},
                          "metrics": {"latencyMs": 120}}),
        ]:
            self.wfile.write(frame(event_type, body))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--live", action="store_true", help="call Bedrock itself")
    parser.add_argument("--model", default="us.anthropic.claude-haiku-4-5-20251001-v1:0",
                        help="a catalogue id of provider amazon-bedrock")
    args = parser.parse_args()
    model = ac.get_model("amazon-bedrock", args.model)
    if args.live:
        ask(model)
        return
    with stand_in(StandIn) as url:
        local = attrs.evolve(model, base_url=url)
        ask(local, api_key="offline-example-key")  # as a Bedrock API key would be sent


def ask(model, api_key=None):
    with ac.Agent(model, system_prompt="Answer in one sentence.", api_key=api_key) as agent:
        run = agent.prompt("What is Amazon Bedrock?")
        run.raise_for_error()
        print(run.text)
        usage = run.usage
        print(f"{usage.input} tokens in, {usage.output} out: ${usage.cost.total:.6f}")


if __name__ == "__main__":
    main()
