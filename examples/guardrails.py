"""Guardrails: a check on the input beside the first model call, and one on the final answer.

    python examples/guardrails.py

Offline: a scripted model stands in for a real one. The input guardrail refuses prompts that
carry a card number (the model call is cut short and no tool runs); the output guardrail,
wrapped by `retry_guardrail`, sends an answer that shouts back to the model, which answers
again. A trip ends the run with `guardrail tripped: <name>: <reason>`, which
`raise_for_error()` raises as `GuardrailTripped`.
"""

import re

import agentcore as ac
from agentcore.testing import scripted_model


def no_card_numbers(messages):
    """Refuse a conversation that carries a card number."""
    text = " ".join(str(getattr(m, "content", "")) for m in messages)
    return "it contains a card number" if re.search(r"\b(?:\d[ -]?){13,16}\b", text) else None


def no_shouting(message, output):
    """Send back an answer written in capitals."""
    return "it shouts" if message.text.isupper() else None


def show(event, signal):
    if isinstance(event, ac.GuardrailTrippedEvent):
        then = "asks again" if event.retry else "ends the run"
        print(f"  [{event.kind} guardrail {event.name!r} tripped: {event.reason}; {then}]")


def main():
    with scripted_model(["HELLO THERE!", "Hello there."]) as model:
        agent = ac.Agent(model.model, input_guardrails=[no_card_numbers],
                         output_guardrails=[ac.retry_guardrail(no_shouting)])
        agent.subscribe(show)
        print("> greet me")
        print(f"  {agent.prompt('greet me').text}")
        print("> my card is 4111 1111 1111 1111")
        run = agent.prompt("my card is 4111 1111 1111 1111")
        try:
            run.raise_for_error()
        except ac.GuardrailTripped as exc:
            print(f"  {exc.message}")


if __name__ == "__main__":
    main()
