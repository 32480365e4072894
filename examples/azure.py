"""Azure OpenAI: a deployment at your resource's v1 endpoint, with a key or an Entra ID token.

    AZURE_OPENAI_ENDPOINT=https://<resource>.openai.azure.com AZURE_OPENAI_API_KEY=<key> \\
        python examples/azure.py --deployment gpt-4.1   # the key goes as the `api-key` header
    AZURE_OPENAI_ENDPOINT=https://<resource>.openai.azure.com python examples/azure.py --entra
    python examples/azure.py                            # offline: a stand-in endpoint

`ac.get_model("azure-openai", "gpt-4.1")` has no base_url of its own: the endpoint comes from
AZURE_OPENAI_ENDPOINT (or AZURE_OPENAI_RESOURCE_NAME) when a request is made, and `model.id` is
the name of your deployment. `--entra` signs in without a key (`pip install azure-identity`):
a `get_api_key` that returns a Microsoft Entra ID token sends it as `Authorization: Bearer`.
"""

import argparse
import json
import os

import attrs
from _stand_in import QuietHandler, stand_in  # a server on 127.0.0.1 for the offline run

import agentcore as ac


class StandIn(QuietHandler):
    """POST /openai/v1/chat/completions: says which deployment and which credential it got."""

    def do_POST(self):
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        how = "api-key header" if self.headers.get("api-key") else "Entra ID token"
        text = f"Hello from deployment {request['model']} ({how})."
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for delta, finish in (({"content": text}, None), ({}, "stop")):
            chunk = {"id": "chatcmpl-1", "object": "chat.completion.chunk",
                     "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")


def entra_token_provider():
    """A function returning a fresh Entra ID token (azure-identity caches and refreshes it)."""
    from azure.identity import DefaultAzureCredential, get_bearer_token_provider

    return get_bearer_token_provider(DefaultAzureCredential(),
                                     "https://cognitiveservices.azure.com/.default")


def ask(model, **credentials):
    with ac.Agent(model, system_prompt="Be brief.", **credentials) as agent:
        run = agent.prompt("Say hello.")
        print(f"assistant: {run.text}")
        run.raise_for_error()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deployment", default="gpt-4.1", help="your deployment's name")
    parser.add_argument("--entra", action="store_true", help="sign in with Entra ID, no key")
    args = parser.parse_args(argv)
    model = attrs.evolve(ac.get_model("azure-openai", "gpt-4.1"), id=args.deployment)
    if os.environ.get("AZURE_OPENAI_ENDPOINT") or os.environ.get("AZURE_OPENAI_RESOURCE_NAME"):
        if args.entra:
            token = entra_token_provider()
            ask(model, get_api_key=lambda provider: token())  # asked before every model call
        else:
            ask(model)  # the key from AZURE_OPENAI_API_KEY
        return

    with stand_in(StandIn) as url:
        local = attrs.evolve(model, base_url=f"{url}/openai/v1")
        print(f"endpoint: stand-in at {local.base_url}")
        ask(local, api_key="0123456789abcdef0123456789abcdef")  # a key: sent as `api-key`
        jwt = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJkZW1vIn0."  # what get_bearer_token_provider returns
        ask(local, get_api_key=lambda provider: jwt)  # a token: sent as `Authorization: Bearer`


if __name__ == "__main__":
    main()
