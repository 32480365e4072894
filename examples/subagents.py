"""Agents made of agents: a coordinator with a researcher and a writer as its tools (API §25).

    python examples/subagents.py

Offline: three scripted models stand in for real ones. The coordinator asks the researcher
(which calls its own `search` tool) and then the writer; each child runs as a tool of the
coordinator, on a fresh copy of its agent, and its events stream into the coordinator's run
as `SubagentEvent`s, shown here indented under the call that runs it. Swap the models for
real ones (`ac.get_model(...)`) and the same code runs against providers.
"""

import agentcore as ac
from agentcore.testing import scripted_model, tool_call


@ac.tool
def search(query: str) -> str:
    """Search the notes."""
    return {"tides": "Tides follow the moon: two highs a day, about 12 h 25 min apart."}.get(
        query, "nothing found")


def researcher_reply(context, options, model):
    if context.messages[-1].role == "toolResult":
        return f"Found: {context.messages[-1].content[0].text}"
    return tool_call("search", {"query": "tides"})


def writer_reply(context, options, model):
    facts = context.messages[-1].content
    return f"Twice a day the sea comes in. ({facts.split(': ', 1)[-1]})"


def coordinator_reply(context, options, model):
    results = [m for m in context.messages if m.role == "toolResult"]
    if not results:
        return tool_call("researcher", {"input": "What do we know about tides?"})
    if len(results) == 1:
        return tool_call("writer", {"input": results[0].content[0].text})
    return f"Done: {results[-1].content[0].text}"


def show(event, signal):
    depth = 0
    while isinstance(event, ac.SubagentEvent):
        depth, name, event = depth + 1, event.agent_name, event.event
    pad = "    " * depth
    if isinstance(event, ac.ToolExecutionStartEvent):
        print(f"{pad}-> {event.tool_name}({event.args})")
    elif isinstance(event, ac.MessageEndEvent) and event.message.role == "assistant" \
            and event.message.text:
        print(f"{pad}{name if depth else 'coordinator'}: {event.message.text}")


def main():
    with scripted_model([researcher_reply] * 2, model="researcher-model") as r, \
            scripted_model([writer_reply], model="writer-model") as w, \
            scripted_model([coordinator_reply] * 3, model="coordinator-model") as c:
        researcher = ac.Agent(r.model, name="researcher", tools=[search],
                              system_prompt="Find facts with search.")
        writer = ac.Agent(w.model, name="writer", system_prompt="Write one plain sentence.")
        coordinator = ac.Agent(c.model, name="coordinator",
                               tools=[researcher.as_tool(), writer.as_tool()])
        coordinator.subscribe(show)
        run = coordinator.prompt("Write a line about tides.")
        run.raise_for_error()
        print(f"tokens, all three agents: {run.usage.total_tokens}")


if __name__ == "__main__":
    main()
