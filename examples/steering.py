"""Steering and follow-ups: talk to an agent while it works.

`agent.steer(text)` queues a message for the model to see before its next turn, in the middle of
a run; `agent.follow_up(text)` queues one to run once the agent would otherwise stop. Both can be
called from any thread. Here the main thread queues them while a slow tool keeps the run busy.
"""

import threading

import agentcore as ac
from agentcore.providers.faux import faux_assistant_message, faux_tool_call, register_faux_provider

STEER = "Keep it under ten words."
FOLLOW_UP = "Now say it in French."


def describe(message):
    if isinstance(message, ac.AssistantMessage) and message.tool_calls:
        return ", ".join(f"-> {call.name}()" for call in message.tool_calls)
    label = {STEER: " (steering)", FOLLOW_UP: " (follow-up)"}.get(message.text, "")
    return message.text + label


def main() -> list[str]:
    tool_started, messages_queued = threading.Event(), threading.Event()

    def read_report(tool_call_id, args, signal, on_update):
        tool_started.set()
        messages_queued.wait(timeout=10)  # a slow tool: the run stays busy until we have spoken
        return ac.AgentToolResult([ac.TextContent("Q3: revenue +12%, costs flat, 3 new clients.")])

    faux = register_faux_provider()
    try:
        faux.set_responses([
            faux_assistant_message([faux_tool_call("read_report", {})]),
            faux_assistant_message("Revenue up 12%, costs flat."),
            faux_assistant_message("Chiffre d'affaires +12 %, coûts stables."),
        ])
        report = ac.AgentTool("read_report", "Read the quarterly report.",
                              {"type": "object", "properties": {}}, read_report)
        agent = ac.Agent(faux.get_model(), tools=[report])
        run = agent.prompt("Summarize the quarterly report.")

        tool_started.wait(timeout=10)  # the run is busy in the tool: queue two messages
        agent.steer(STEER)
        agent.follow_up(FOLLOW_UP)
        messages_queued.set()

        turns = sum(isinstance(event, ac.TurnStartEvent) for event in run)
        lines = [f"{m.role:>10}: {describe(m)}" for m in run.result()]
    finally:
        faux.unregister()
    print(*lines, sep="\n")
    print(f"one run, {turns} turns")
    return lines


if __name__ == "__main__":
    main()
