"""Staying up: a fallback model, a circuit breaker and a budget (API §24).

    python examples/fallback.py

Two stand-in servers on 127.0.0.1 play two providers, offline: the primary is down (every
request gets a 503), the backup is healthy. Each question is tried on the primary, fails, and
is answered by the backup in the same turn; after two failures the circuit breaker opens and
later questions skip the primary without sending it a request. A `Budget` shared by every run
stops the agent once its dollars are spent.
"""

import json

from _stand_in import QuietHandler, stand_in

import agentcore as ac


class Down(QuietHandler):
    """A provider in an outage: 503 to everything."""

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        body = b'{"error": {"message": "service unavailable"}}'
        self.send_response(503)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class Up(QuietHandler):
    """A healthy provider answering in the Chat Completions format, 1,000 tokens a reply."""

    def do_POST(self):
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        question = request["messages"][-1]["content"]
        answer = {"Capital of France?": "Paris.", "Capital of Japan?": "Tokyo.",
                  "Capital of Peru?": "Lima."}.get(question, "I don't know.")
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for chunk in ({"choices": [{"index": 0, "delta": {"content": answer}}]},
                      {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
                      {"choices": [], "usage": {"prompt_tokens": 900, "completion_tokens": 100}}):
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")


def show_fallback(event, signal):
    if isinstance(event, ac.ModelFallbackEvent):
        print(f"  [{event.reason.split(';')[0]} -> {event.model.id}]")


def main():
    with stand_in(Down) as down, stand_in(Up) as up:
        price = ac.ModelCost(input=1.0, output=5.0)  # dollars per million tokens
        primary = ac.Model("big-model", "Big", "openai-completions", "openai", f"{down}/v1",
                           cost=price)
        backup = ac.Model("small-model", "Small", "openai-completions", "openai", f"{up}/v1",
                          cost=price)
        breaker = ac.CircuitBreaker(failure_threshold=2, cooldown=60)
        budget = ac.Budget(max_cost=0.003)  # $0.0014 a reply: room for two, then one more
        with ac.Agent(primary, fallback_models=[backup], circuit_breaker=breaker,
                      max_retries=0, limits=ac.UsageLimits(budget=budget)) as agent:
            agent.subscribe(show_fallback)
            for question in ("Capital of France?", "Capital of Japan?", "Capital of Peru?",
                             "Capital of Chile?"):
                print(question)
                run = agent.prompt(question)
                reply = run.result()[-1]
                print(f"  {run.text or run.error} (by {reply.model}; primary's circuit: "
                      f"{breaker.state(primary)})")
        print(f"spent ${budget.spent.cost.total:.4f} of ${budget.max_cost}")


if __name__ == "__main__":
    main()
