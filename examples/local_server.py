"""An agent on an OpenAI-compatible server: Ollama, vLLM, llama.cpp, LM Studio.

    python examples/local_server.py                                  # offline, a stand-in server
    OLLAMA_BASE_URL=http://localhost:11434/v1 python examples/local_server.py --model qwen2.5:7b

Any server that speaks the Chat Completions API is a `Model` with `api="openai-completions"`
and its `base_url`; servers on this machine need no API key. Without `OLLAMA_BASE_URL` (or
`--base-url`), the example starts a tiny stand-in on 127.0.0.1 that streams scripted replies in
the same format, and shuts it down at the end.
"""

import argparse
import json
import os
import re
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from urllib.parse import urlparse

import agentcore as ac


class StandIn(BaseHTTPRequestHandler):
    """POST /v1/chat/completions: call `add` on the numbers asked about, then give the answer."""

    def do_POST(self):
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        last = request["messages"][-1]
        if last["role"] == "tool":
            deltas = [{"content": piece} for piece in ("The answer ", f"is {last['content']}.")]
            finish = "stop"
        else:
            a, b = map(int, re.findall(r"\d+", last["content"])[:2])
            call = {"index": 0, "id": "call_1", "type": "function",
                    "function": {"name": "add", "arguments": json.dumps({"a": a, "b": b})}}
            deltas, finish = [{"tool_calls": [call]}], "tool_calls"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for delta in [{"role": "assistant"}, *deltas, {}]:
            self.send_event({"choices": [{"index": 0, "delta": delta,
                                          "finish_reason": None if delta else finish}]})
        self.send_event({"choices": [], "usage": {"prompt_tokens": 50, "completion_tokens": 10,
                                                  "total_tokens": 60}})
        self.wfile.write(b"data: [DONE]\n\n")

    def send_event(self, data):
        self.wfile.write(f"data: {json.dumps(data)}\n\n".encode())

    def log_message(self, format, *args):  # keep the output to the agent's
        pass


def add(tool_call_id, args, signal, on_update):
    return ac.AgentToolResult([ac.TextContent(str(args["a"] + args["b"]))])


def show_tools(event, signal):
    if isinstance(event, ac.ToolExecutionStartEvent):
        print(f"  -> {event.tool_name}({json.dumps(event.args)})")
    elif isinstance(event, ac.ToolExecutionEndEvent):
        print(f"  <- {event.result.content[0].text}")


def ask(base_url, model_id, question):
    model = ac.Model(model_id, model_id, "openai-completions", "ollama", base_url=base_url)
    adder = ac.AgentTool("add", "Add two integers.",
                         {"type": "object", "required": ["a", "b"],
                          "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}},
                         add)
    agent = ac.Agent(model, system_prompt="Use the add tool for arithmetic.", tools=[adder])
    agent.subscribe(show_tools)
    print(f"you: {question}")
    reply = agent.prompt(question).result(timeout=120)[-1]
    if reply.stop_reason == "error":
        print(f"error: {reply.error_message}")
    else:
        print(f"assistant: {reply.text}")
    return reply


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", default=os.environ.get("OLLAMA_BASE_URL"),
                        help="the server's OpenAI-compatible URL, e.g. http://localhost:11434/v1")
    parser.add_argument("--model", default=os.environ.get("OLLAMA_MODEL", "llama3.1:8b"))
    args = parser.parse_args(argv)
    question = "What is 19 + 23?"
    if args.base_url:
        url = args.base_url.rstrip("/")
        if urlparse(url).path == "":  # Ollama's own URL: its OpenAI API lives under /v1
            url += "/v1"
        print(f"server: {url}")
        return ask(url, args.model, question)

    server = HTTPServer(("127.0.0.1", 0), StandIn)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        print(f"server: stand-in at {url}")
        return ask(url, args.model, question)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
        print("server: stopped")


if __name__ == "__main__":
    main()
