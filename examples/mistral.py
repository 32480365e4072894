"""Mistral: a conversation started on another provider continues on Mistral's API.

    MISTRAL_API_KEY=<key> python examples/mistral.py --model mistral-small-latest
    python examples/mistral.py                # offline: a stand-in that checks Mistral's rules

Mistral takes tool-call ids of exactly 9 letters and digits and no field it does not know
(`store`, `stream_options`, `max_completion_tokens`): agentcore rewrites the other provider's
ids (a call and its result alike) and sends only what Mistral knows. The stand-in refuses a
request that breaks those rules, as Mistral does.
"""

import argparse
import json
import os
import re

import attrs
from _stand_in import QuietHandler, stand_in  # a server on 127.0.0.1 for the offline run

import agentcore as ac


class StandIn(QuietHandler):
    """POST /v1/chat/completions: checks the request as Mistral would, then answers."""

    def do_POST(self):
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        ids = [call["id"] for m in request["messages"] for call in m.get("tool_calls") or ()]
        ids += [m["tool_call_id"] for m in request["messages"] if m["role"] == "tool"]
        unknown = {"store", "stream_options", "max_completion_tokens"} & set(request)
        if unknown or not all(re.fullmatch(r"[A-Za-z0-9]{9}", i) for i in ids):
            self.send_response(422)
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        chunk = {"id": "cmpl-1", "object": "chat.completion.chunk", "model": request["model"],
                 "choices": [{"index": 0, "delta": {"content": f"It is 18°C. (ids I got: {ids})"},
                              "finish_reason": "stop"}],
                 "usage": {"prompt_tokens": 60, "completion_tokens": 12, "total_tokens": 72}}
        self.wfile.write(f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n".encode())


def started_elsewhere():
    """A transcript from OpenAI's Responses API: one weather call and its result."""
    call = ac.ToolCall("call_k3JH9aB2cD4eF6gH8iJ0lM1n|fc_68b0c1d2e3f4", "weather",
                       {"city": "Paris"})
    return [ac.UserMessage("Weather in Paris?"),
            ac.AssistantMessage([call], "openai-responses", "openai", "gpt-5",
                                stop_reason="toolUse"),
            ac.ToolResultMessage(call.id, "weather", [ac.TextContent("18°C, cloudy")])]


def ask(model):
    with ac.Agent(model, messages=started_elsewhere()) as agent:
        run = agent.continue_()  # the model answers the tool result
        print(f"assistant: {run.text}")
        run.raise_for_error()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="mistral-large-latest")
    args = parser.parse_args(argv)
    model = ac.get_model("mistral", args.model)  # https://api.mistral.ai/v1, MISTRAL_API_KEY
    if os.environ.get("MISTRAL_API_KEY"):
        ask(model)
        return

    with stand_in(StandIn) as url:
        local = attrs.evolve(model, base_url=f"{url}/v1")
        print(f"server: stand-in for Mistral at {local.base_url}")
        ask(local)  # provider "mistral": Mistral's rules, whatever the URL


if __name__ == "__main__":
    main()
