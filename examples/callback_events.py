"""Events to a callback: print the reply as it streams in.

`agent.subscribe(listener)` calls `listener(event, signal)` for every event of every run, on the
run's thread, one event at a time. The lower-level `run_agent_loop` takes the same kind of
callback as `emit=` (it gets only the event).
"""

from collections import Counter

import agentcore as ac
from agentcore.providers.faux import (
    faux_assistant_message,
    faux_text,
    faux_thinking,
    register_faux_provider,
)

HAIKU = "Threads wake, one by one;\nevents arrive in order;\nno await in sight."


def print_as_it_streams(event, signal):
    if isinstance(event, ac.MessageUpdateEvent):
        part = event.assistant_message_event  # what the provider streamed
        if isinstance(part, ac.ThinkingStartEvent):
            print("(thinking) ", end="")
        elif isinstance(part, (ac.ThinkingDeltaEvent, ac.TextDeltaEvent)):
            print(part.delta, end="", flush=True)
        elif isinstance(part, (ac.ThinkingEndEvent, ac.TextEndEvent)):
            print()
    elif isinstance(event, (ac.AgentStartEvent, ac.AgentEndEvent)):
        print(f"[{event.type}]")


def main() -> str:
    # Paced like a real model, so that the reply visibly streams in.
    faux = register_faux_provider(tokens_per_second=200)
    try:
        faux.set_responses([
            faux_assistant_message([faux_thinking("A haiku: five, seven, five syllables."),
                                    faux_text(HAIKU)]),
            faux_assistant_message("Done."),
        ])
        agent = ac.Agent(faux.get_model())
        unsubscribe = agent.subscribe(print_as_it_streams)
        reply = agent.prompt("Write a haiku about threads.").result()[-1]
        unsubscribe()

        # The same with the loop itself: count the events of a run by type.
        counts: Counter[str] = Counter()
        ac.run_agent_loop([ac.UserMessage("Thanks!")], ac.AgentContext(),
                          ac.AgentLoopConfig(model=faux.get_model()),
                          emit=lambda event: counts.update([event.type]))
        print(f"run_agent_loop events: {dict(counts)}")
    finally:
        faux.unregister()
    return reply.text


if __name__ == "__main__":
    main()
