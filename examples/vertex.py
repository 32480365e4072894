"""An agent on Google Vertex AI: Application Default Credentials, or an express-mode API key.

    python examples/vertex.py                                          # offline, a stand-in
    GOOGLE_CLOUD_PROJECT=my-project python examples/vertex.py --live   # ADC, location global
    GOOGLE_CLOUD_API_KEY=... python examples/vertex.py --live          # express mode

Live, with a project set, requests carry an access token from Application Default Credentials
(`gcloud auth application-default login`, or GOOGLE_APPLICATION_CREDENTIALS naming a key file:
`pip install 'agentcore[vertex]'`), refreshed before it expires; GOOGLE_CLOUD_LOCATION picks a
region (default `global`). With only GOOGLE_CLOUD_API_KEY, express mode needs no google-auth.
Offline, a tiny stand-in on 127.0.0.1 answers in Gemini's event stream, as Vertex does, and the
example sends it a made-up express-mode key.
"""

import argparse
import json

import attrs
from _stand_in import QuietHandler, stand_in  # a server on 127.0.0.1 for the offline run

import agentcore as ac


class StandIn(QuietHandler):
    """POST /v1/publishers/google/models/{id}:streamGenerateContent: a short reply, streamed."""

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        pieces = ["Hello from ", "a stand-in ", "for Vertex AI."]
        for number, piece in enumerate(pieces, 1):
            candidate = {"content": {"role": "model", "parts": [{"text": piece}]}}
            chunk = {"candidates": [candidate], "modelVersion": "gemini-2.5-flash"}
            if number == len(pieces):
                candidate["finishReason"] = "STOP"
                chunk["usageMetadata"] = {"promptTokenCount": 12, "candidatesTokenCount": 9,
                                          "totalTokenCount": 21, "trafficType": "ON_DEMAND"}
            self.wfile.write(f"data: {json.dumps(chunk)}\r\n\r\n".encode())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--live", action="store_true", help="call Vertex AI itself")
    parser.add_argument("--model", default="gemini-2.5-flash",
                        help="a catalogue id of provider google-vertex")
    args = parser.parse_args()
    model = ac.get_model("google-vertex", args.model)
    if args.live:
        ask(model)
        return
    with stand_in(StandIn) as url:
        local = attrs.evolve(model, base_url=f"{url}/v1")
        ask(local, api_key="offline-example-key")  # as an express-mode key would be sent


def ask(model, api_key=None):
    with ac.Agent(model, system_prompt="Answer in one sentence.", api_key=api_key) as agent:
        run = agent.prompt("What is Vertex AI?")
        run.raise_for_error()
        print(run.text)
        usage = run.usage
        print(f"{usage.input} tokens in, {usage.output} out: ${usage.cost.total:.6f}")


if __name__ == "__main__":
    main()
