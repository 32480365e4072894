"""Abort: stop a run mid-stream; the agent keeps what it got and takes the next prompt.

`run.abort()` (or `agent.abort()`) cancels the model's stream at once, starts no further tool or
model call, and ends the run normally: its last message has `stop_reason` "aborted" and holds the
partial reply. The transcript stays valid, so the agent accepts a new prompt right away.
"""

import agentcore as ac
from agentcore.providers.faux import faux_assistant_message, register_faux_provider

LONG_STORY = "Once upon a time, in a thread pool far away, " + "a worker waited. " * 50


def main() -> ac.AgentMessage:
    # 50 tokens a second, like a real model: the whole story would take about 5 s.
    faux = register_faux_provider(tokens_per_second=50)
    try:
        faux.set_responses([faux_assistant_message(LONG_STORY),
                            faux_assistant_message("Yes, I'm still here.")])
        agent = ac.Agent(faux.get_model())
        run = agent.prompt("Tell me a long story.")
        for event in run:  # wait until the reply is streaming, then stop it
            if isinstance(event, ac.MessageUpdateEvent) and len(event.message.text) > 40:
                run.abort()
                break
        stopped = run.result(timeout=5)[-1]
        print(f"stop_reason: {stopped.stop_reason.value}")
        print(f"error_message: {stopped.error_message}")
        print(f"kept {len(stopped.text)} of {len(LONG_STORY)} characters: {stopped.text!r}")

        again = agent.prompt("Are you still there?").result(timeout=5)[-1]
        print(f"next prompt: {again.stop_reason.value}: {again.text}")
        print(f"transcript: {[m.role for m in agent.messages]}")
    finally:
        faux.unregister()
    return stopped


if __name__ == "__main__":
    main()
